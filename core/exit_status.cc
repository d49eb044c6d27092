#include "core/exit_status.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace monsoon {

int RoleExitStatus(const absl::Status& s, bool client) {
  if (s.ok()) return 0;
  if (absl::IsCancelled(s)) return kExitStopped;
  const bool server_unreachable = (absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s)) &&
                                  client && absl::StartsWith(s.message(), "server ");
  return server_unreachable ? kExitServerUnreachable : 1;
}

absl::Status AfterStop(absl::Status s, bool stopped, absl::string_view who) {
  if (s.ok() || absl::IsCancelled(s) || !stopped) return s;
  return absl::CancelledError(absl::StrCat(who, " stopped by signal; after it: ", s.message()));
}

}  // namespace monsoon
