#include "core/exit_status.h"

#include <unistd.h>

#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/file_util.h"

namespace monsoon {

int RoleExitStatus(const absl::Status& s, bool client) {
  if (s.ok()) return 0;
  if (absl::IsCancelled(s)) return kExitStopped;
  const bool server_unreachable = (absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s)) &&
                                  client && absl::StartsWith(s.message(), "server ");
  return server_unreachable ? kExitServerUnreachable : 1;
}

absl::Status AfterStop(absl::Status s, bool stopped, absl::string_view who) {
  if (s.ok() || !stopped || absl::StrContains(s.message(), "stopped by signal")) return s;
  return absl::CancelledError(absl::StrCat(who, " stopped by signal; after it: ", s.message()));
}

namespace {
constexpr absl::string_view kDivergedPayload = "monsoon/diverged";
}  // namespace

absl::Status Reworded(const absl::Status& s, absl::string_view message) {
  absl::Status reworded(s.code(), message);
  s.ForEachPayload([&](absl::string_view type_url, const absl::Cord& payload) {
    reworded.SetPayload(type_url, payload);
  });
  return reworded;
}

absl::Status MarkDiverged(const absl::Status& s) {
  absl::Status marked = s;
  marked.SetPayload(kDivergedPayload, absl::Cord());
  return marked;
}

bool IsDiverged(const absl::Status& s) { return s.GetPayload(kDivergedPayload).has_value(); }

ExitRecord ExitRecordOf(const absl::Status& s, bool client) {
  ExitRecord record;
  record.status = RoleExitStatus(s, client);
  record.message = std::string(s.message());
  switch (record.status) {
    case 0:
      record.cause = RecordedExitCause::kFinished;
      break;
    case kExitStopped:
      record.cause = RecordedExitCause::kStopped;
      break;
    case kExitServerUnreachable:
      record.cause = RecordedExitCause::kServerUnreachable;
      break;
    default:
      record.cause = IsDiverged(s) ? RecordedExitCause::kDiverged : RecordedExitCause::kFailed;
  }
  return record;
}

// The file: "PID STATUS CAUSE TREE" on its first line (TREE "-" for none), the message after it.
void RecordExit(ExitRecord record) {
  const char* path = std::getenv(kExitRecordVariable);
  if (path == nullptr || *path == '\0') return;
  record.pid = getpid();
  const char* tree = std::getenv(kProcessTreeVariable);
  record.tree = tree == nullptr || *tree == '\0' ? "-" : tree;
  WriteFileAtomically(path, absl::StrCat(record.pid, " ", record.status, " ",
                                         kRecordedExitCauseNames.Name(record.cause), " ", record.tree,
                                         "\n", record.message))
      .IgnoreError();
}

std::optional<ExitRecord> ReadExitRecord(const std::string& path) {
  const absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return std::nullopt;
  const std::pair<absl::string_view, absl::string_view> lines =
      absl::StrSplit(*text, absl::MaxSplits('\n', 1));
  const std::vector<absl::string_view> fields = absl::StrSplit(lines.first, ' ');
  ExitRecord record;
  if (fields.size() != 4 || !absl::SimpleAtoi(fields[0], &record.pid) ||
      !absl::SimpleAtoi(fields[1], &record.status)) {
    return std::nullopt;
  }
  const absl::StatusOr<RecordedExitCause> cause = kRecordedExitCauseNames.Parse(fields[2]);
  if (!cause.ok()) return std::nullopt;
  record.cause = *cause;
  record.tree = fields[3] == "-" ? "" : std::string(fields[3]);
  record.message = std::string(lines.second);
  return record;
}

}  // namespace monsoon
