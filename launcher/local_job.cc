#include "launcher/local_job.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "core/status_macros.h"
#include "launcher/job_setup.h"
#include "launcher/process_group.h"
#include "launcher/summary.h"

namespace monsoon {
namespace {

// "[  12.3s] " and the job's ProgressLine.
std::string TimedProgressLine(const JobConfig& config, const RunDir& run_dir, double elapsed) {
  return absl::StrFormat("[%6.1fs] %s", elapsed,
                         ProgressLine(config, ReadProgress(config, run_dir)));
}

bool IsServer(const ChildExit& e) { return e.name.rfind("server-", 0) == 0; }

}  // namespace

absl::StatusOr<JobProgress> RunLocalJob(const JobConfig& config, const RunDir& run_dir,
                                        const LocalJobOptions& options,
                                        const std::atomic<bool>* stop) {
  ProcessGroup children;
  auto start_role = [&](const std::string& name, const std::string& role, int index,
                        const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {options.self_exe, role, "--run-dir", run_dir.root};
    if (index >= 0) {
      argv.push_back("--index");
      argv.push_back(std::to_string(index));
    }
    argv.insert(argv.end(), extra.begin(), extra.end());
    return children.Start(name, argv, absl::StrCat(run_dir.logs_dir(), "/", name, ".log"));
  };
  // Worker i gets GPU i (modulo the visible devices, when compute.device uses CUDA).
  std::map<std::string, int> worker_index;  // child name -> worker index
  auto start_worker = [&](int i) {
    const std::string name = absl::StrCat("worker-", i);
    worker_index[name] = i;
    return start_role(name, "worker", i, {"--gpu", std::to_string(i)});
  };
  auto start_evaluator = [&]() { return start_role("evaluator", "evaluator", -1); };
  // Every role; with `resume`, servers start from their newest checkpoints.
  auto start_job = [&](bool resume) -> absl::Status {
    for (int j = 0; j < config.cluster.servers; ++j) {
      MONSOON_RETURN_IF_ERROR(
          start_role(absl::StrCat("server-", j), "server", j,
                     resume ? std::vector<std::string>{"--resume"} : std::vector<std::string>{}));
    }
    for (int i = 0; i < config.cluster.workers; ++i) MONSOON_RETURN_IF_ERROR(start_worker(i));
    if (config.cluster.evaluator) MONSOON_RETURN_IF_ERROR(start_evaluator());
    return absl::OkStatus();
  };
  MONSOON_RETURN_IF_ERROR(start_job(options.resume));
  // Restarts left for each role restarted when killed by a signal (child name -> count).
  std::map<std::string, int> restarts_left;
  for (const auto& worker : worker_index) {
    restarts_left[worker.first] = config.reliability.worker_restarts;
  }
  restarts_left["evaluator"] = config.reliability.evaluator_restarts;
  int resumes_left = config.reliability.server_restarts;

  const bool tty = isatty(STDERR_FILENO);
  const absl::Time start = absl::Now();
  // Children enforce training.timeout_seconds themselves; this margin catches a stuck one.
  const absl::Time deadline = start + absl::Seconds(config.training.timeout_seconds + 30);
  absl::Time next_progress = start + options.progress_interval;
  while (children.running() > 0) {
    std::vector<ChildExit> exits = children.Reap();
    // Servers first: a server's death makes its workers fail moments later.
    std::stable_partition(exits.begin(), exits.end(), IsServer);
    for (const ChildExit& e : exits) {
      if (e.ok()) continue;
      const bool server = IsServer(e);
      // A server killed by a signal: the whole job goes back to the servers' checkpoints.
      if (server && e.signal != 0 && resumes_left > 0) {
        --resumes_left;
        std::fprintf(stderr,
                     "%smonsoon: %s; resuming the job from the servers' checkpoints "
                     "(reliability.server_restarts: %d left)\n",
                     tty ? "\n" : "", e.Describe().c_str(), resumes_left);
        children.StopAll(absl::Seconds(5));  // the other servers checkpoint on the way out
        MONSOON_RETURN_IF_ERROR(PrepareResume(run_dir));
        MONSOON_RETURN_IF_ERROR(start_job(/*resume=*/true));
        break;  // the other exits were the stopped roles'
      }
      // A worker or the evaluator killed by a signal is lost, not wrong: restart it; a worker
      // with no restarts left may be gone on without.
      const auto found = worker_index.find(e.name);
      const int worker = found == worker_index.end() ? -1 : found->second;
      const auto restarts = restarts_left.find(e.name);  // none for servers
      if (restarts != restarts_left.end() && e.signal != 0 && restarts->second > 0) {
        --restarts->second;
        std::fprintf(stderr, "%smonsoon: %s; restarting it (%s)\n", tty ? "\n" : "",
                     e.Describe().c_str(),
                     worker >= 0 ? "it rejoins where the servers last heard from it"
                                 : "it goes on evaluating the servers' weights");
        MONSOON_RETURN_IF_ERROR(worker >= 0 ? start_worker(worker) : start_evaluator());
        continue;
      }
      if (worker >= 0 && e.signal != 0 && !StopsOnWorkerLoss(config)) {
        std::fprintf(stderr,
                     "%smonsoon: %s; the job carries on without it (its shard is not "
                     "trained further; reliability.worker_loss)\n",
                     tty ? "\n" : "", e.Describe().c_str());
        continue;
      }
      if (tty) std::fprintf(stderr, "\n");
      children.StopAll(absl::Seconds(5));
      return absl::AbortedError(absl::StrCat(
          e.Describe(), "; the job was stopped",
          server ? absl::StrCat(" (continue it with: monsoon run --resume ", run_dir.root, ")")
                 : "",
          ". Last lines of ", e.log_path, ":\n", TailOfFile(e.log_path, 8)));
    }
    if (stop != nullptr && stop->load()) {
      if (tty) std::fprintf(stderr, "\n");
      children.StopAll(absl::Seconds(5));
      return absl::CancelledError("interrupted: all roles stopped");
    }
    if (absl::Now() > deadline) {
      children.StopAll(absl::Seconds(5));
      return absl::DeadlineExceededError(absl::StrCat(
          "job still running after ", config.training.timeout_seconds,
          " s (training.timeout_seconds): all roles stopped; see ", run_dir.logs_dir()));
    }
    if (absl::Now() >= next_progress) {
      const std::string line =
          TimedProgressLine(config, run_dir, absl::ToDoubleSeconds(absl::Now() - start));
      std::fprintf(stderr, tty ? "\r%s\033[K" : "%s\n", line.c_str());
      next_progress += options.progress_interval;
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  const double wall = absl::ToDoubleSeconds(absl::Now() - start);
  std::fprintf(stderr, tty ? "\r%s\033[K\n" : "%s\n",
               TimedProgressLine(config, run_dir, wall).c_str());
  return WriteSummary(config, run_dir, wall);
}

}  // namespace monsoon
