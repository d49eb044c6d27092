#include "core/run_dir.h"

#include <filesystem>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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
      return absl::CancelledError("stopped while waiting for servers");
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
