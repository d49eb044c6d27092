// `monsoon launch [CONFIG.yaml] --run-dir DIR [--set ...] [--resume]`: this task's role in a
// parallel launch (srun, mpirun), chosen from the launcher's environment; outside one, the
// whole job on this machine, as `run`.
#include <unistd.h>

#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/status_macros.h"
#include "launcher/cluster/network_address.h"
#include "launcher/cluster/task_environment.h"
#include "launcher/commands/command.h"
#include "launcher/local/job_setup.h"

namespace monsoon {
namespace {

struct LaunchOptions {
  std::string config, run_dir;
  std::vector<std::string> sets;
  bool resume = false;
};

int LaunchHere(const LaunchOptions& o) {
  if (o.resume) {
    if (o.run_dir.empty()) return Fail(absl::InvalidArgumentError("--run-dir is required"), 2);
    return ResumeJobHere(RunDir{o.run_dir});
  }
  if (o.config.empty()) {
    return Fail(absl::InvalidArgumentError(
                    "launch outside srun or mpirun runs the whole job on this machine, as `run`, "
                    "and needs a CONFIG.yaml"),
                2);
  }
  auto config = LoadUserConfig(o.config, o.sets);
  if (!config.ok()) return Fail(config.status(), 2);
  return RunNewJobHere(*config, o.run_dir);
}

// Every task validates the config; task 0 prepares the run directory, the others wait for it.
// An exit status, or nullopt to go on.
std::optional<int> PrepareTogether(const LaunchOptions& o, const TaskEnvironment& task,
                                   const RunDir& run_dir) {
  auto config = LoadUserConfig(o.config, o.sets);
  if (!config.ok()) return task.rank == 0 ? Fail(config.status(), 2) : 2;
  if (task.rank == 0) {
    const absl::Status s = PrepareRunDir(&*config, run_dir, HostRoles::kOne).status();
    if (!s.ok()) return Fail(s, 2);
    return std::nullopt;
  }
  const absl::Time deadline =
      absl::Now() + absl::Seconds(config->transport.rendezvous_timeout_seconds);
  while (access(run_dir.config_path().c_str(), F_OK) != 0) {
    if (StopFlag()->load()) return kExitStopped;
    if (absl::Now() > deadline) {
      return Fail(absl::DeadlineExceededError(
                      absl::StrCat("task 0 did not prepare ", run_dir.root, " within ",
                                   config->transport.rendezvous_timeout_seconds, " s")),
                  1);
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  return std::nullopt;
}

// The address a server of this task binds; warns when it is loopback in a multi-node job.
absl::StatusOr<std::string> BindHost(const JobConfig& config, const TaskEnvironment& task) {
  MONSOON_ASSIGN_OR_RETURN(std::string host, ServerBindAddress(config.network));
  if (host.rfind("127.", 0) == 0 && task.nodes.size() > 1) {
    // Debian maps the host name to 127.0.1.1 in /etc/hosts, for one.
    std::cerr << "monsoon: warning: this server binds " << host
              << ", a loopback address other nodes cannot reach; set network.interface "
                 "(e.g. eth0, ib0) for jobs across nodes"
              << std::endl;
  }
  return host;
}

int Launch(const LaunchOptions& o) {
  auto task = DetectTaskEnvironment(CurrentEnvironment());
  if (!task.ok()) return Fail(task.status(), 2);
  if (task->source == LaunchSource::kLocal) return LaunchHere(o);
  if (o.run_dir.empty()) return Fail(absl::InvalidArgumentError("--run-dir is required"), 2);
  const RunDir run_dir{o.run_dir};
  if (!o.config.empty()) {
    if (const std::optional<int> exit = PrepareTogether(o, *task, run_dir)) return *exit;
  }
  auto config = RoleConfig(run_dir);
  if (!config.ok()) return Fail(config.status(), 2);
  auto role = AssignRole(config->cluster, *task);
  // Every task reaches the same verdict; one line from task 0 is enough.
  if (!role.ok()) return task->rank == 0 ? Fail(role.status(), 2) : 2;
  std::string bind_host;
  if (role->has_value() && (*role)->kind == RoleKind::kServer) {
    auto host = BindHost(*config, *task);
    if (!host.ok()) return Fail(host.status(), 2);
    bind_host = *host;
  }
  std::cerr << "monsoon: " << task->Describe() << " -> "
            << DescribeAssignment(*role) << std::endl;
  return RunRole(*role, *config, run_dir, bind_host, task->gpu.value_or(-1), o.resume);
}

}  // namespace

void AddLaunchCommand(Command& program, int* exit_code) {
  auto o = std::make_shared<LaunchOptions>();
  Command cmd = program.Subcommand(
      "launch",
      "inside an srun task (or under mpirun): run this task's role, chosen from the launcher's "
      "environment; with CONFIG, task 0 prepares DIR. Outside any parallel launcher: the whole "
      "job on this machine, as `run`");
  CommandOption config = cmd.Option("CONFIG.yaml", &o->config, "the job");
  cmd.Option("--run-dir", &o->run_dir, "the run directory (shared by every task)");
  CommandOption sets = AddSetOption(cmd, &o->sets, config);
  CommandOption resume = cmd.Flag("--resume", &o->resume, "servers start from their checkpoints");
  config.Excludes(resume);
  sets.Excludes(resume);
  cmd.OnRun([o, exit_code] { *exit_code = Launch(*o); });
}

}  // namespace monsoon
