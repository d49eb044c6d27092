#include "core/exit_status.h"

#include <catch2/catch.hpp>

namespace monsoon {
namespace {

TEST_CASE("exit status: a failure after a stop signal is reported as the stop", "[core]") {
  const absl::Status peer_gone = absl::UnavailableError("server 0 (h:1): connection refused");
  const absl::Status shutting_down = absl::CancelledError("server 0 is shutting down");
  const absl::Status own_stop = absl::CancelledError("worker stopped by signal");
  for (const absl::Status& s : {peer_gone, shutting_down}) {
    const absl::Status after = AfterStop(s, /*stopped=*/true, "worker 1");
    CHECK(absl::IsCancelled(after));
    CHECK(after.message() == "worker 1 stopped by signal; after it: " + std::string(s.message()));
    CHECK(RoleExitStatus(after, /*client=*/true) == kExitStopped);
    CHECK(AfterStop(s, /*stopped=*/false, "worker 1") == s);
  }
  CHECK(AfterStop(own_stop, true, "worker 1") == own_stop);
  CHECK(AfterStop(absl::OkStatus(), true, "worker 1").ok());
  CHECK(RoleExitStatus(peer_gone, /*client=*/true) == kExitServerUnreachable);
  CHECK(RoleExitStatus(peer_gone, /*client=*/false) == 1);
}

}  // namespace
}  // namespace monsoon
