#include "core/run/run_dir.h"

#include <filesystem>
#include <random>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/status_macros.h"

namespace monsoon {
namespace fs = std::filesystem;

absl::Status RunDir::Create() const {
  std::error_code ec;
  for (const std::string& d : {root, rendezvous_dir(), metrics_dir(), logs_dir(), trace_dir()}) {
    fs::create_directories(d, ec);
    if (ec)
      return absl::PermissionDeniedError(absl::StrCat("cannot create ", d, ": ", ec.message()));
  }
  return absl::OkStatus();
}

absl::Status CreateRunId(const RunDir& dir) {
  std::random_device entropy;  // the kernel's random source
  const uint64_t id = (static_cast<uint64_t>(entropy()) << 32) | entropy();
  return WriteFileAtomically(dir.run_id_path(), absl::StrFormat("%016x\n", id));
}

std::vector<std::string> ReadInitialManifest(const RunDir& dir) {
  const absl::StatusOr<std::string> text = ReadFile(dir.initial_manifest_path());
  if (!text.ok() || text->empty()) return {};
  return absl::StrSplit(absl::StripSuffix(*text, "\n"), '\n');
}

absl::StatusOr<uint64_t> ReadRunId(const RunDir& dir) {
  auto text = ReadFile(dir.run_id_path());
  if (absl::IsNotFound(text.status())) {
    return absl::NotFoundError(
        absl::StrCat(dir.run_id_path(), " is missing: the run was not prepared by this monsoon"));
  }
  MONSOON_RETURN_IF_ERROR(text.status());
  uint64_t id = 0;
  if (!absl::SimpleHexAtoi(absl::StripAsciiWhitespace(*text), &id)) {
    return absl::DataLossError(absl::StrCat(dir.run_id_path(), " is malformed"));
  }
  return id;
}

absl::Status MarkServerFinished(const RunDir& dir, int index) {
  return WriteFileAtomically(dir.finished_path(index), "");
}

bool ServersFinished(const RunDir& dir, int servers) {
  for (int j = 0; j < servers; ++j) {
    std::error_code ec;
    if (!fs::exists(dir.finished_path(j), ec)) return false;
  }
  return true;
}

absl::Status PublishServerAddress(const RunDir& dir, int index, const std::string& address) {
  return WriteFileAtomically(dir.rendezvous_path(index), address + "\n");
}

absl::StatusOr<std::string> ReadServerAddress(const RunDir& dir, int index) {
  auto text = ReadFile(dir.rendezvous_path(index));
  if (!text.ok() || absl::StripAsciiWhitespace(*text).empty()) {
    return absl::NotFoundError(absl::StrCat("server ", index, " has not published an address"));
  }
  return std::string(absl::StripAsciiWhitespace(*text));
}

absl::StatusOr<std::vector<std::string>> WaitForServerAddresses(const RunDir& dir, int count,
                                                                absl::Duration timeout,
                                                                const std::atomic<bool>* stop) {
  const absl::Time deadline = absl::Now() + timeout;
  std::vector<std::string> addresses(count);
  while (true) {
    std::vector<int> missing;
    for (int i = 0; i < count; ++i) {
      if (!addresses[i].empty()) continue;
      auto address = ReadServerAddress(dir, i);
      if (address.ok()) {
        addresses[i] = *std::move(address);
      } else {
        missing.push_back(i);
      }
    }
    if (missing.empty()) return addresses;
    if (stop != nullptr && stop->load())
      return absl::CancelledError("stopped by signal while waiting for servers");
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("rendezvous: after ", absl::FormatDuration(timeout), " server(s) ",
                       absl::StrJoin(missing, ", "), " have not published an address in ",
                       dir.rendezvous_dir()));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
}

}  // namespace monsoon
