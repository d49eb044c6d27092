#include "core/exit_status.h"

#include "absl/strings/match.h"

namespace monsoon {

int RoleExitStatus(const absl::Status& s, bool client) {
  if (s.ok()) return 0;
  if (absl::IsCancelled(s)) return kExitStopped;
  const bool server_unreachable = (absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s)) &&
                                  client && absl::StartsWith(s.message(), "server ");
  return server_unreachable ? kExitServerUnreachable : 1;
}

}  // namespace monsoon
