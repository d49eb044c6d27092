#include "launcher/local/local_job.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "core/metrics/metrics.h"
#include "core/run/job_secrets.h"
#include "core/status_macros.h"
#include "launcher/cluster/network_address.h"
#include "launcher/emulation/emulated_hosts.h"
#include "launcher/local/job_setup.h"
#include "launcher/local/process_group.h"
#include "launcher/local/run_summary.h"
#include "launcher/local/supervision.h"
#include "worker/grpc_ps_client.h"
#include "worker/worker_metrics.h"

namespace monsoon {
namespace {

// The label, "[  12.3s] " and the job's ProgressLine.
std::string TimedProgressLine(const JobConfig& config, const RunDir& run_dir,
                              const LocalJobOptions& options, double elapsed) {
  return TimedLine(options.progress, elapsed, ProgressLine(config, ReadProgress(config, run_dir)));
}

// Every role of a job: servers, workers, the evaluator.
std::vector<RoleId> Roles(const ClusterConfig& cluster) {
  std::vector<RoleId> roles;
  for (int j = 0; j < cluster.servers; ++j) roles.push_back({RoleKind::kServer, j});
  for (int i = 0; i < cluster.workers; ++i) roles.push_back({RoleKind::kWorker, i});
  if (cluster.evaluator) roles.push_back({RoleKind::kEvaluator, 0});
  return roles;
}

// The emulated host of `role`: its own, named by its Name, or with cluster.workers_per_node > 1
// a worker's node's ("node-K"), which the node's workers share.
std::string HostOf(const ClusterConfig& cluster, const RoleId& role) {
  if (role.kind == RoleKind::kWorker && cluster.workers_per_node > 1) {
    return absl::StrCat("node-", cluster.node_of(role.index));
  }
  return role.Name();
}

// With network.hosts: namespaces, the emulated hosts of the roles (HostOf); otherwise null.
absl::StatusOr<std::unique_ptr<EmulatedHosts>> HostsFor(const JobConfig& config) {
  if (config.network.hosts != HostsKind::kNamespaces) return nullptr;
  EmulatedHostsOptions options;
  for (const RoleId& role : Roles(config.cluster)) {
    const std::string host = HostOf(config.cluster, role);
    if (options.names.empty() || options.names.back() != host) options.names.push_back(host);
  }
  options.interface = EmulatedHostLink(config.network);
  options.link_mbit = config.network.link_mbit;
  return EmulatedHosts::Create(options);
}

// The roles of a local job as child processes of the launcher, each on its emulated host
// (HostOf) where `hosts` is not null.
class LocalJob {
 public:
  LocalJob(const JobConfig& config, const RunDir& run_dir, const LocalJobOptions& options,
           const EmulatedHosts* hosts)
      : config_(config), run_dir_(run_dir), options_(options), hosts_(hosts) {}

  // Every role; with `resume`, servers start from their newest checkpoints.
  absl::Status StartAll(bool resume) {
    servers_finished_ = 0;
    workers_finished_ = 0;
    workers_lost_.clear();
    for (const RoleId& role : Roles(config_.cluster)) {
      MONSOON_RETURN_IF_ERROR(Start(role, resume));
    }
    return absl::OkStatus();
  }

  // Starts one role. Worker i gets GPU i (modulo the visible devices, when compute.device
  // uses CUDA).
  absl::Status Start(const RoleId& role, bool resume) {
    const std::string name = role.Name();
    roles_[name] = role;
    std::vector<std::string> argv = {options_.self_exe, RoleCommand(role.kind), "--run-dir",
                                     run_dir_.root};
    if (role.kind != RoleKind::kEvaluator) {
      argv.insert(argv.end(), {"--index", std::to_string(role.index)});
    }
    if (role.kind == RoleKind::kWorker)
      argv.insert(argv.end(), {"--gpu", std::to_string(role.index)});
    if (role.kind == RoleKind::kServer && resume) argv.push_back("--resume");
    if (hosts_ != nullptr) argv = hosts_->On(HostOf(config_.cluster, role), argv);
    return children_.Start(name, argv, absl::StrCat(run_dir_.logs_dir(), "/", name, ".log"));
  }

  // Carries out what Decide says for each child that exited; an error ends the job.
  absl::Status Supervise(RestartBudget* budget, bool tty) {
    std::vector<ChildExit> exits = children_.Reap();
    // Servers first: a server's death makes its workers fail moments later; so does a node's
    // pusher's the node's other workers.
    std::stable_sort(exits.begin(), exits.end(), [&](const ChildExit& a, const ChildExit& b) {
      return Precedence(roles_[a.name]) < Precedence(roles_[b.name]);
    });
    const char* newline = tty ? "\n" : "";
    for (const ChildExit& e : exits) {
      const RoleId role = roles_[e.name];
      if (EndedWithNode(role, e)) {
        const int pusher = config_.cluster.node_of(role.index) * config_.cluster.workers_per_node;
        MONSOON_RETURN_IF_ERROR(LoseWorker(role,
                                           absl::StrCat(e.name, " ended with its node (worker-",
                                                        pusher, ", which pushed for it, was lost)"),
                                           newline));
        continue;
      }
      switch (Decide(role, e, config_, budget)) {
        case Action::kNone:
          if (role.kind == RoleKind::kWorker && config_.cluster.pushes_to_servers(role.index)) {
            const absl::Status heard = ServersHeardFinish(config_.cluster.client_of(role.index));
            if (!heard.ok()) {
              std::fprintf(stderr, "%s", newline);
              StopAll();
              return absl::AbortedError(absl::StrCat(e.name, " exited 0 with an exit record "
                                                     "saying it finished, but ", heard.message(),
                                                     ": the program's own claim", StepsDone(role),
                                                     "; the job was stopped"));
            }
          }
          servers_finished_ += role.kind == RoleKind::kServer ? 1 : 0;
          workers_finished_ += role.kind == RoleKind::kWorker ? 1 : 0;
          break;
        case Action::kResumeJob:
          std::fprintf(stderr,
                       "%smonsoon: %s; resuming the job from the servers' checkpoints "
                       "(reliability.server_restarts: %d left)\n",
                       newline, e.Describe().c_str(), budget->job_resumes);
          StopAll();  // the other servers checkpoint on the way out
          MONSOON_RETURN_IF_ERROR(ResetRendezvous(run_dir_));  // this launcher holds the lock
          return StartAll(/*resume=*/true);  // the other exits were the stopped roles'
        case Action::kRestart:
          std::fprintf(stderr, "%smonsoon: %s; restarting it (%s)\n", newline, e.Describe().c_str(),
                       role.kind == RoleKind::kWorker
                           ? "it rejoins where the servers last heard from it"
                           : "it goes on evaluating the servers' weights");
          MONSOON_RETURN_IF_ERROR(Start(role, /*resume=*/false));
          break;
        case Action::kContinueWithout:
          MONSOON_RETURN_IF_ERROR(LoseWorker(role, e.Describe(), newline));
          break;
        case Action::kAbort:
          std::fprintf(stderr, "%s", newline);
          StopAll();
          // Only a server lost from outside left checkpoints a resume can carry on from; a
          // server's own error would meet the resumed job again.
          const absl::Status aborted = absl::AbortedError(absl::StrCat(
              e.Describe(), StepsDone(role), "; the job was stopped",
              role.kind == RoleKind::kServer && e.kind() == ObservedExitKind::kStopped
                  ? absl::StrCat(" (continue it with: monsoon run --resume ", run_dir_.root, ")")
                  : "",
              ". ", LogExcerpt(e.log_path)));
          return e.diverged() ? MarkDiverged(aborted) : aborted;
      }
    }
    return absl::OkStatus();
  }

  int running() const { return children_.running(); }
  // Whether every server has finished training (exited 0).
  bool ServersFinished() const { return servers_finished_ == config_.cluster.servers; }
  // Stops the roles still running after the servers finished, naming each: clients the servers
  // gave up (a worker that never connected, or stopped answering), whose loss the servers'
  // metrics already count.
  void StopLeftovers(bool tty) {
    for (const std::string& name : children_.RunningNames()) {
      std::fprintf(stderr,
                   "%smonsoon: %s was still running after the servers had finished (they gave it "
                   "up); stopping it\n",
                   tty ? "\n" : "", name.c_str());
    }
    children_.StopAll(kClientStopDeadline + absl::Seconds(2));
  }
  // Waits out the roles' own deadline, so that servers can write their final checkpoints.
  void StopAll() { children_.StopAll(kStopDeadline + absl::Seconds(5)); }

 private:
  // The order in which Supervise takes exits reaped together: servers, the workers that push
  // to them, the other workers (of a node that aggregates), the evaluator.
  int Precedence(const RoleId& role) const {
    if (role.kind != RoleKind::kWorker) return role.kind == RoleKind::kServer ? 0 : 3;
    return config_.cluster.pushes_to_servers(role.index) ? 1 : 2;
  }

  // True for a worker of a node whose pusher was lost earlier, ending for that reason (or any
  // other but finishing): it is lost with its node.
  bool EndedWithNode(const RoleId& role, const ChildExit& e) const {
    return role.kind == RoleKind::kWorker && e.kind() != ObservedExitKind::kFinished &&
           config_.cluster.aggregate_per_node &&
           nodes_lost_.count(config_.cluster.node_of(role.index)) > 0;
  }

  // Carries on without worker `role`, which ended as `how` says; Aborted once every worker is
  // lost.
  absl::Status LoseWorker(const RoleId& role, const std::string& how, const char* newline) {
    workers_lost_.push_back(how);
    if (config_.cluster.aggregate_per_node && config_.cluster.pushes_to_servers(role.index)) {
      nodes_lost_.insert(config_.cluster.node_of(role.index));
    }
    if (workers_finished_ == 0 &&
        static_cast<int>(workers_lost_.size()) == config_.cluster.workers) {
      std::fprintf(stderr, "%s", newline);
      StopAll();
      return absl::AbortedError(absl::StrCat(
          "every worker was lost: ", absl::StrJoin(workers_lost_, "; "), "; the job was stopped"));
    }
    std::fprintf(stderr,
                 "%smonsoon: %s; the job carries on without it (its shard is not trained "
                 "further; reliability.worker_loss)\n",
                 newline, how.c_str());
    return absl::OkStatus();
  }

  // OK when every server still running has heard client `index` (a worker, or a node that
  // pushes for its workers) finish (its Finish call), or cannot be asked (on emulated hosts,
  // none can); else FailedPrecondition "server 1 has not heard it finish".
  absl::Status ServersHeardFinish(int index) const {
    // Servers on emulated hosts cannot be asked: their addresses are not in this process's
    // network namespace (each query would wait out its deadline).
    if (hosts_ != nullptr) return absl::OkStatus();
    const absl::StatusOr<JobSecrets> secrets = ReadJobSecrets(run_dir_, config_.security);
    if (!secrets.ok()) return absl::OkStatus();
    for (int j = 0; j < config_.cluster.servers; ++j) {
      const absl::StatusOr<std::string> address = ReadServerAddress(run_dir_, j);
      const absl::StatusOr<ServerStats> stats =
          address.ok() ? QueryServerStats(*address, *secrets, absl::Seconds(2))
                       : absl::StatusOr<ServerStats>(address.status());
      if (!stats.ok()) continue;  // finished and gone, or not answering: nothing to ask
      const std::vector<int>& finished = stats->finished_workers;
      if (std::find(finished.begin(), finished.end(), index) == finished.end()) {
        return absl::FailedPreconditionError(
            absl::StrCat("server ", j, " has not heard it finish"));
      }
    }
    return absl::OkStatus();
  }

  // ", after 12 steps" for a worker whose metrics show its steps; "" for other roles.
  std::string StepsDone(const RoleId& role) const {
    if (role.kind != RoleKind::kWorker) return "";
    const absl::StatusOr<std::vector<WorkerMetricsRow>> rows =
        ReadRows<WorkerMetricsRow>(run_dir_.worker_metrics_path(role.index));
    const double steps = rows.ok() && !rows->empty() ? rows->back().step : 0;
    return absl::StrCat(", after ", steps, " steps");
  }

  static std::string RoleCommand(RoleKind kind) {
    return kind == RoleKind::kServer   ? "server"
           : kind == RoleKind::kWorker ? "worker"
                                       : "evaluator";
  }

  const JobConfig& config_;
  const RunDir& run_dir_;
  const LocalJobOptions& options_;
  const EmulatedHosts* const hosts_;
  ProcessGroup children_;
  std::map<std::string, RoleId> roles_;  // child name -> role
  int servers_finished_ = 0;             // since the last StartAll
  int workers_finished_ = 0;
  std::vector<std::string> workers_lost_;  // how each worker left behind ended
  std::set<int> nodes_lost_;               // aggregating nodes whose pusher was left behind
};

// How long clients may outlive the servers' finish (the evaluator writing params.bin).
constexpr absl::Duration kLeftoverGrace = absl::Seconds(10);

// Runs the job until every role has ended, showing its progress and recording the run's wall
// time as it goes (earlier_wall: the run's earlier invocations); an error ends it.
absl::Status RunToEnd(const JobConfig& config, const RunDir& run_dir,
                      const LocalJobOptions& options, const std::atomic<bool>* stop,
                      absl::Time start, double earlier_wall) {
  MONSOON_ASSIGN_OR_RETURN(const std::unique_ptr<EmulatedHosts> hosts, HostsFor(config));
  LocalJob job(config, run_dir, options, hosts.get());
  if (stop != nullptr && stop->load()) {
    return absl::CancelledError(absl::StrCat(
        "interrupted before any role started (continue it with: monsoon run --resume ",
        run_dir.root, ")"));
  }
  MONSOON_RETURN_IF_ERROR(job.StartAll(options.resume));
  RestartBudget budget = RestartBudget::FromConfig(config);
  const bool tty = isatty(STDERR_FILENO);
  // Children enforce training.timeout_seconds themselves; this margin catches a stuck one.
  const absl::Time deadline = start + absl::Seconds(config.training.timeout_seconds + 30);
  absl::Time next_progress = start + options.progress.interval;
  auto elapsed = [&] { return absl::ToDoubleSeconds(absl::Now() - start); };
  std::optional<absl::Time> servers_finished;
  while (job.running() > 0) {
    // Before the roles' exits: a stop signal sent to the whole process group ends them too.
    if (stop != nullptr && stop->load()) {
      if (tty) std::fprintf(stderr, "\n");
      job.StopAll();
      return absl::CancelledError(
          absl::StrCat("interrupted: all roles stopped (continue it with: monsoon run --resume ",
                       run_dir.root, ")"));
    }
    MONSOON_RETURN_IF_ERROR(job.Supervise(&budget, tty));
    if (job.ServersFinished() && !servers_finished.has_value()) servers_finished = absl::Now();
    if (servers_finished.has_value() && absl::Now() > *servers_finished + kLeftoverGrace) {
      job.StopLeftovers(tty);
      break;
    }
    if (absl::Now() > deadline) {
      job.StopAll();
      return absl::DeadlineExceededError(absl::StrCat(
          "job still running after ", config.training.timeout_seconds,
          " s (training.timeout_seconds): all roles stopped; see ", run_dir.logs_dir()));
    }
    if (absl::Now() >= next_progress) {
      ShowProgress(TimedProgressLine(config, run_dir, options, elapsed()), tty);
      MONSOON_RETURN_IF_ERROR(RecordWallSeconds(run_dir, earlier_wall + elapsed()));
      next_progress += options.progress.interval;
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  std::fprintf(stderr, tty ? "\r%s\033[K\n" : "%s\n",
               TimedProgressLine(config, run_dir, options, elapsed()).c_str());
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<JobProgress> RunLocalJob(const JobConfig& config, const RunDir& run_dir,
                                        const LocalJobOptions& options,
                                        const std::atomic<bool>* stop) {
  // wall_seconds in summary.json covers every invocation of a resumed run.
  MONSOON_ASSIGN_OR_RETURN(const double earlier, EarlierWallSeconds(run_dir));
  const absl::Time start = absl::Now();
  const absl::Status ended = RunToEnd(config, run_dir, options, stop, start, earlier);
  const double wall = earlier + absl::ToDoubleSeconds(absl::Now() - start);
  MONSOON_RETURN_IF_ERROR(RecordWallSeconds(run_dir, wall));
  MONSOON_RETURN_IF_ERROR(ended);
  return WriteSummary(config, run_dir, wall);
}

}  // namespace monsoon
