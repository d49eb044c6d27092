#include "worker/program_environment.h"

#include <catch2/catch.hpp>
#include <cstdlib>

namespace monsoon {
namespace {

// Sets `env`'s variables in this process, as the launcher sets them in the program's.
void Export(const ProgramEnvironment& env) {
  for (const auto& [name, value] : env.ToEnv()) setenv(name.c_str(), value.c_str(), 1);
}

TEST_CASE("ProgramEnvironment: what ToEnv says, FromEnv reads back", "[worker]") {
  for (const ProgramRole role :
       {ProgramRole::kInit, ProgramRole::kWorker, ProgramRole::kEvaluator}) {
    ProgramEnvironment env;
    env.role = role;
    env.run_dir = "/runs/job/20261128-101500";
    env.index = role == ProgramRole::kWorker ? 7 : 0;
    env.gpu = role == ProgramRole::kWorker ? 3 : -1;
    env.seed = 18446744073709551615ull;  // the whole uint64 range
    Export(env);
    const absl::StatusOr<ProgramEnvironment> read = ProgramEnvironment::FromEnv();
    REQUIRE(read.ok());
    CHECK(read->role == env.role);
    CHECK(read->run_dir == env.run_dir);
    CHECK(read->index == env.index);
    CHECK(read->gpu == env.gpu);
    CHECK(read->seed == env.seed);
  }
}

TEST_CASE(
    "ProgramEnvironment: a program not started by the launcher, or a malformed value, "
    "is named",
    "[worker]") {
  ProgramEnvironment env;
  env.run_dir = "/runs/job";
  Export(env);
  SECTION("a missing variable says how to start the program") {
    unsetenv("MONSOON_RUN_DIR");
    const absl::Status missing = ProgramEnvironment::FromEnv().status();
    CHECK(absl::IsFailedPrecondition(missing));
    CHECK(missing.message() ==
          "MONSOON_RUN_DIR is not set: this program is a Monsoon worker program; start it with "
          "`monsoon run JOB.yaml` (cluster.worker_program), not by itself");
  }
  SECTION("an empty variable counts as missing") {
    setenv("MONSOON_ROLE", "", 1);
    CHECK(absl::IsFailedPrecondition(ProgramEnvironment::FromEnv().status()));
  }
  SECTION("an unknown role") {
    setenv("MONSOON_ROLE", "server", 1);
    const absl::Status bad = ProgramEnvironment::FromEnv().status();
    CHECK(absl::IsInvalidArgument(bad));
    CHECK(bad.message().rfind("MONSOON_ROLE: ", 0) == 0);
  }
  SECTION("a number that is not one") {
    setenv("MONSOON_GPU", "cuda:0", 1);
    const absl::Status bad = ProgramEnvironment::FromEnv().status();
    CHECK(absl::IsInvalidArgument(bad));
    CHECK(bad.message() == "MONSOON_GPU is 'cuda:0', not an integer");
  }
}

}  // namespace
}  // namespace monsoon
