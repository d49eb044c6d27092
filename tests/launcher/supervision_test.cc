// Every promise README makes about roles that die in `monsoon run`, as a table: the role, how
// it ended, the config's reliability rules and the restarts left, and the action.
#include "launcher/local/supervision.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "launcher/local/summary.h"

namespace monsoon {
namespace {

ChildExit Killed() { return {"", "", 0, SIGKILL, std::nullopt}; }
ChildExit Terminated() { return {"", "", 0, SIGTERM, std::nullopt}; }
ChildExit StoppedOnSignal() {
  return {"", "", kExitStopped, 0, ExitRecord{0, kExitStopped, RecordedExitCause::kStopped, "", ""}};
}
ChildExit Crashed() { return {"", "", 0, SIGABRT, std::nullopt}; }
ChildExit Failed() { return {"", "", 1, 0, ExitRecord{0, 1, RecordedExitCause::kFailed, "oops", ""}}; }
ChildExit Stalled() {
  return {"worker-2", "", kExitStalled, 0,
          ExitRecord{0, kExitStalled, RecordedExitCause::kStalled,
                     "worker-2 made no progress for 3 s, stuck at step 1 in compute", ""}};
}
// Exits of a program's own, without a record: Monsoon's statuses, and Python's uncaught
// KeyboardInterrupt.
ChildExit OwnStopStatus() { return {"", "", kExitStopped, 0, std::nullopt}; }
ChildExit OwnInterrupt() { return {"", "", 0, SIGINT, std::nullopt}; }
ChildExit Finished() { return {"", "", 0, 0, ExitRecord{}}; }
ChildExit ReturnedEarly() { return {"", "", 0, 0, std::nullopt}; }

TEST_CASE("Decide: each role's end maps to README's action", "[launcher][supervision]") {
  struct Case {
    const char* what;
    RoleId role;
    ChildExit exit;
    Algorithm algorithm;
    int worker_restarts, evaluator_restarts, server_restarts;
    WorkerLoss worker_loss;
    Action action;
  };
  const RoleId server{RoleKind::kServer, 1}, worker{RoleKind::kWorker, 2},
      evaluator{RoleKind::kEvaluator, 0};
  const Algorithm async = Algorithm::kDownpour, sync = Algorithm::kSync;
  const WorkerLoss aut = WorkerLoss::kAuto;
  const Case cases[] = {
      {"any role that exits 0 having finished", worker, Finished(), async, 0, 0, 0, aut,
       Action::kNone},
      {"a program that exits 0 before its role finished fails it", worker, ReturnedEarly(), async,
       3, 0, 0, aut, Action::kAbort},
      {"a worker that fails (exit 1) stops the job", worker, Failed(), async, 3, 0, 0, aut,
       Action::kAbort},
      {"a worker killed with restarts left is restarted", worker, Killed(), async, 1, 0, 0, aut,
       Action::kRestart},
      {"a worker sent a plain kill (SIGTERM) is restarted", worker, Terminated(), async, 1, 0, 0,
       aut, Action::kRestart},
      {"... also when it caught the signal and exited 130", worker, StoppedOnSignal(), async, 1, 0,
       0, aut, Action::kRestart},
      {"a program's own exit status 130 is a failure, not a stop", worker, OwnStopStatus(), async,
       1, 0, 0, aut, Action::kAbort},
      {"so is its own KeyboardInterrupt (SIGINT, no record)", worker, OwnInterrupt(), async, 1,
       0, 0, aut, Action::kAbort},
      {"a stalled worker is lost: restarted while its restarts last", worker, Stalled(), async, 1,
       0, 0, aut, Action::kRestart},
      {"... then left behind, as the loss rules say", worker, Stalled(), async, 0, 0, 0, aut,
       Action::kContinueWithout},
      {"a worker that crashed (SIGABRT) stops the job, restarts or not", worker, Crashed(), async,
       3, 0, 0, aut, Action::kAbort},
      {"a server stopped by a plain kill resumes the job", server, StoppedOnSignal(), async, 0, 0,
       1, aut, Action::kResumeJob},
      {"a server that crashed stops the job", server, Crashed(), async, 0, 0, 3, aut,
       Action::kAbort},
      {"an evaluator that crashed stops the job", evaluator, Crashed(), async, 0, 3, 0, aut,
       Action::kAbort},
      {"a worker killed without restarts: async carries on", worker, Killed(), async, 0, 0, 0, aut,
       Action::kContinueWithout},
      {"... unless worker_loss is stop", worker, Killed(), async, 0, 0, 0, WorkerLoss::kStop,
       Action::kAbort},
      {"... and sync with every worker in the quorum stops", worker, Killed(), sync, 0, 0, 0, aut,
       Action::kAbort},
      {"... unless worker_loss is continue", worker, Killed(), sync, 0, 0, 0, WorkerLoss::kContinue,
       Action::kContinueWithout},
      {"the evaluator killed with restarts left is restarted", evaluator, Killed(), async, 0, 1, 0,
       aut, Action::kRestart},
      {"the evaluator killed without restarts stops the job", evaluator, Killed(), async, 0, 0, 0,
       aut, Action::kAbort},
      {"the evaluator that fails stops the job", evaluator, Failed(), async, 0, 5, 0, aut,
       Action::kAbort},
      {"a server killed with server_restarts left resumes the job", server, Killed(), async, 0, 0,
       1, aut, Action::kResumeJob},
      {"a server killed without them stops the job", server, Killed(), async, 5, 5, 0, aut,
       Action::kAbort},
      {"a server that fails stops the job", server, Failed(), async, 0, 0, 2, aut, Action::kAbort},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    JobConfig config;
    config.cluster.workers = 3;
    config.training.algorithm = c.algorithm;
    config.reliability.worker_restarts = c.worker_restarts;
    config.reliability.evaluator_restarts = c.evaluator_restarts;
    config.reliability.server_restarts = c.server_restarts;
    config.reliability.worker_loss = c.worker_loss;
    RestartBudget budget = RestartBudget::FromConfig(config);
    CHECK(Decide(c.role, c.exit, config, &budget) == c.action);
  }
}

TEST_CASE("Decide: restarts are spent per worker, resumes per job", "[launcher][supervision]") {
  JobConfig config;
  config.cluster.workers = 2;
  config.reliability.worker_restarts = 1;
  config.reliability.server_restarts = 1;
  config.reliability.worker_loss = WorkerLoss::kStop;
  RestartBudget budget = RestartBudget::FromConfig(config);
  CHECK(Decide({RoleKind::kWorker, 0}, Killed(), config, &budget) == Action::kRestart);
  CHECK(Decide({RoleKind::kWorker, 0}, Killed(), config, &budget) == Action::kAbort);
  CHECK(Decide({RoleKind::kWorker, 1}, Killed(), config, &budget) == Action::kRestart);
  CHECK(Decide({RoleKind::kServer, 0}, Killed(), config, &budget) == Action::kResumeJob);
  CHECK(Decide({RoleKind::kServer, 1}, Killed(), config, &budget) == Action::kAbort);
  CHECK(RoleId{RoleKind::kServer, 3}.Name() == "server-3");
  CHECK(RoleId{RoleKind::kEvaluator, 0}.Name() == "evaluator");
}

TEST_CASE("ChildExit says how a role ended", "[launcher][supervision]") {
  const auto record = [](int status, RecordedExitCause cause, std::string message = "") {
    return std::optional<ExitRecord>(ExitRecord{0, status, cause, std::move(message), ""});
  };
  CHECK(ChildExit{"worker-1", "", 0, SIGKILL, std::nullopt}.Describe() ==
        "worker-1 was killed by signal 9 (Killed)");
  CHECK(ChildExit{"worker-1", "", kExitStopped, 0, record(kExitStopped, RecordedExitCause::kStopped)}
            .Describe() == "worker-1 was stopped by a signal");
  CHECK(ChildExit{"server-0", "", 0, SIGSEGV, std::nullopt}.Describe() ==
        "server-0 crashed with signal 11 (Segmentation fault)");
  CHECK(ChildExit{"server-0", "", 1, 0, record(1, RecordedExitCause::kFailed, "oops\nmore")}.Describe() ==
        "server-0 failed: oops");
  CHECK(ChildExit{"server-0", "", 1, 0, record(1, RecordedExitCause::kFailed, "")}.Describe() ==
        "server-0 exited with status 1");
  const std::string report = "worker-1 made no progress for 60 s, stuck at step 10 in compute";
  CHECK(ChildExit{"worker-1", "", kExitStalled, 0, record(4, RecordedExitCause::kStalled, report)}
            .Describe() == report);
  // A stall in other words than a stall watch's is the program's own claim, and a failure.
  const ChildExit forged{"worker-1", "", kExitStalled, 0,
                         record(4, RecordedExitCause::kStalled, "server-0 corrupted my weights\n...")};
  CHECK(forged.kind() == ObservedExitKind::kFailed);
  CHECK(forged.Describe() ==
        "worker-1 exited with status 4 and an exit record of a stall in words of its own "
        "(\"server-0 corrupted my weights\"): the program's own claim");
  CHECK(ChildExit{"evaluator", "", kExitServerUnreachable, 0,
                  record(3, RecordedExitCause::kServerUnreachable)}
            .Describe() == "evaluator stopped because a server did not answer it (exit status 3)");
  // Without a record, Monsoon's statuses are the program's own.
  CHECK(ChildExit{"worker-1", "", 3, 0, std::nullopt}.Describe() ==
        "worker-1 exited with status 3 of its own (not Monsoon's)");
  CHECK(ChildExit{"worker-1", "", kExitStalled, 0, std::nullopt}.kind() == ObservedExitKind::kFailed);
  CHECK(ChildExit{"worker-1", "", 127, 0, std::nullopt}.Describe() ==
        "worker-1 exited with status 127 of its own (not Monsoon's): a command not found?");
  CHECK(ChildExit{"worker-1", "", 0, SIGINT, std::nullopt}.Describe() ==
        "worker-1 ended by signal 2 (Interrupt) of its own (an uncaught KeyboardInterrupt in "
        "Python ends so)");
  CHECK(ChildExit{"worker-1", "", 0, 0, std::nullopt}.Describe() ==
        "worker-1 exited with status 0 before its role had finished (its program returned "
        "without completing monsoon.torch.run, monsoon.run_role or Client.finish())");
  // A record of another status than the exit's is not this exit's.
  CHECK(ChildExit{"worker-1", "", 1, 0, record(130, RecordedExitCause::kStopped)}.kind() ==
        ObservedExitKind::kFailed);
}

TEST_CASE("RecordExit writes what ReadExitRecord reads, with the pid and the tree's tag",
          "[launcher][supervision]") {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/worker-0.exit";
  setenv(kExitRecordVariable, path.c_str(), 1);
  setenv(kProcessTreeVariable, "123-456-worker-0", 1);
  RecordExit({0, kExitStopped, RecordedExitCause::kStopped, "worker stopped by signal\nsecond line", ""});
  unsetenv(kExitRecordVariable);
  unsetenv(kProcessTreeVariable);
  const std::optional<ExitRecord> read = ReadExitRecord(path);
  REQUIRE(read.has_value());
  CHECK(read->pid == getpid());
  CHECK(read->status == kExitStopped);
  CHECK(read->cause == RecordedExitCause::kStopped);
  CHECK(read->message == "worker stopped by signal\nsecond line");
  CHECK(read->tree == "123-456-worker-0");
  CHECK(!ReadExitRecord(path + ".missing").has_value());
}

TEST_CASE("LogExcerpt: the log's last lines, or why there are none", "[launcher][supervision]") {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/logs";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/worker-0.log") << "one\ntwo\n";
  CHECK(LogExcerpt(dir + "/worker-0.log") == "Last lines of " + dir + "/worker-0.log:\none\ntwo");
  std::ofstream(dir + "/worker-1.log").flush();
  CHECK(LogExcerpt(dir + "/worker-1.log") == "Its log " + dir + "/worker-1.log is empty");
  std::filesystem::remove_all(dir);
  CHECK(LogExcerpt(dir + "/worker-0.log") ==
        "Its log " + dir + "/worker-0.log is gone (was the run directory deleted?)");
}

TEST_CASE("ProgressLine: epoch, samples/s, ETA at the slowest worker's pace, test figures",
          "[launcher][summary]") {
  JobConfig config;
  config.training.epochs = 4;
  JobProgress p;
  p.min_epoch = 1;
  p.worker_seconds = 30;
  p.samples_per_second = 2000;
  p.has_eval = true;
  p.test_accuracy = 0.85;
  p.test_loss = 0.42;
  CHECK(ProgressLine(config, p) ==
        "epoch 1.00/4 | 2000 samples/s | ETA 1m30s | test acc 0.8500 loss 0.4200");
  p.min_epoch = 4;  // done: no ETA
  CHECK(ProgressLine(config, p) == "epoch 4.00/4 | 2000 samples/s | test acc 0.8500 loss 0.4200");
  p.min_epoch = 0;  // not started
  CHECK(!SecondsLeft(config, p).has_value());
  CHECK(DurationText(42.4) == "42s");
  CHECK(DurationText(3725) == "1h02m");
}

}  // namespace
}  // namespace monsoon
