// `monsoon status --run-dir DIR`: where a run stands, from its run directory and a Stats call
// to each server that has published an address.
#include <sys/stat.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "core/run/job_secrets.h"
#include "launcher/commands/command.h"
#include "launcher/local/summary.h"
#include "worker/grpc_ps_client.h"

namespace monsoon {
namespace {

// Seconds since `path` was last written; nullopt when it does not exist.
std::optional<double> SecondsSinceWritten(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return std::nullopt;
  return absl::ToDoubleSeconds(absl::Now() - absl::TimeFromTimespec(st.st_mtim));
}

// "server J at ADDRESS: ..." for each of the job's servers that answers; a process of another
// job on a reused port refuses the token, so it does not count. *silent: seconds since the
// newest server metrics row.
std::vector<std::string> ServingServers(const JobConfig& config, const RunDir& run_dir,
                                        const JobSecrets& secrets, std::optional<double>* silent) {
  std::vector<std::string> serving;
  for (int j = 0; j < config.cluster.servers; ++j) {
    const auto address = ReadServerAddress(run_dir, j);
    if (address.ok()) {
      const auto stats = QueryServerStats(*address, secrets, absl::Seconds(1));
      if (stats.ok() && stats->server_index == j) {
        serving.push_back(absl::StrFormat(
            "server %d at %s: %d of %d workers finished, %d lost, %d pushes applied", j, *address,
            stats->workers_finished, stats->workers_expected, stats->workers_lost.size(),
            stats->pushes_applied));
      }
    }
    const auto age = SecondsSinceWritten(run_dir.server_metrics_path(j));
    if (age.has_value() && (!silent->has_value() || *age < **silent)) *silent = age;
  }
  return serving;
}

int Status(const RunDirArg& arg) {
  auto run = arg.Open("status");
  if (!run.ok()) return Fail(run.status(), 2);
  const JobConfig* config = &run->config;
  const RunDir* run_dir = &run->run_dir;
  auto secrets = ReadJobSecrets(*run_dir, config->security);
  if (!secrets.ok()) return Fail(secrets.status(), 2);
  std::cout << "job " << config->job << " (" << kAlgorithmNames.Name(config->training.algorithm)
            << ", " << config->cluster.servers << " server(s), " << config->cluster.workers
            << " worker(s)): " << ProgressLine(*config, ReadProgress(*config, *run_dir)) << "\n";
  std::optional<double> silent;
  const std::vector<std::string> serving = ServingServers(*config, *run_dir, *secrets, &silent);
  const absl::Status finished = TrainingFinished(*config, *run_dir);
  if (finished.ok()) {
    std::cout << "training finished\n";
  } else if (!serving.empty()) {
    std::cout << "training running (" << absl::StrJoin(serving, "; ") << ")\n";
  } else {
    std::cout << finished.message()
              << (silent.has_value()
                      ? absl::StrFormat(
                            " (no server is running; they last wrote metrics %.0f s ago)", *silent)
                      : "")
              << "\n";
  }
  const bool summarized = std::filesystem::exists(run_dir->summary_path());
  std::cout << (summarized
                    ? "summary: " + run_dir->summary_path()
                    : std::string("no summary yet") +
                          (finished.ok() ? ": monsoon summarize --run-dir " + run_dir->root : ""))
            << std::endl;
  return finished.ok() ? 0 : 1;
}

// The progress line every `every` seconds until training has finished, a stop signal or the
// job's training.timeout_seconds (and a minute) have passed: a SLURM job's output file.
int Follow(const RunDirArg& arg, int every) {
  auto run = arg.Open("status");
  if (!run.ok()) return Fail(run.status(), 2);
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + absl::Seconds(run->config.training.timeout_seconds + 60);
  while (absl::Now() < deadline) {
    for (int tick = 0; tick < every * 10; ++tick) {
      if (StopFlag()->load()) return 0;
      absl::SleepFor(absl::Milliseconds(100));
    }
    std::cout << absl::StrFormat("monsoon: [%6.0fs] %s", absl::ToDoubleSeconds(absl::Now() - start),
                                 ProgressLine(run->config, ReadProgress(run->config, run->run_dir)))
              << std::endl;
    if (TrainingFinished(run->config, run->run_dir).ok()) return 0;
  }
  return 1;
}

}  // namespace

void AddStatusCommand(Command& program, int* exit_code) {
  auto arg = std::make_shared<RunDirArg>();
  auto follow = std::make_shared<int>(0);
  Command cmd = program.Subcommand(
      "status",
      "where a run stands: progress, whether training has finished, is running or stopped, and "
      "its summary; exit 0 once training has finished, else 1");
  arg->AddTo(cmd);
  cmd.Option("--follow", follow.get(),
             "instead, print the progress line every SECONDS until training has finished")
      .InRange(1, 3600);
  cmd.OnRun([arg, follow, exit_code] {
    *exit_code = *follow > 0 ? Follow(*arg, *follow) : Status(*arg);
  });
}

}  // namespace monsoon
