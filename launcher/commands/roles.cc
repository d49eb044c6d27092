// The role commands `monsoon run` starts: `server --run-dir DIR --index J [--bind HOST]
// [--resume]`, `worker --run-dir DIR --index I [--gpu G]`, `evaluator --run-dir DIR [--gpu G]`.
#include <climits>
#include <memory>

#include "absl/strings/str_cat.h"
#include "launcher/cluster/network_address.h"
#include "launcher/commands/command.h"

namespace monsoon {
namespace {

struct RoleOptions {
  RunDirArg run_dir;
  int index = 0;
  int gpu = 0;
  std::string bind;  // empty: 127.0.0.1, or the emulated host's address
  bool resume = false;
};

int Role(RoleKind kind, const RoleOptions& o) {
  const char* name = kind == RoleKind::kServer   ? "server"
                     : kind == RoleKind::kWorker ? "worker"
                                                 : "evaluator";
  auto run = o.run_dir.Open(name);
  if (!run.ok()) return Fail(run.status(), 2);
  const JobConfig& config = run->config;
  if (kind != RoleKind::kEvaluator) {
    const int limit = kind == RoleKind::kServer ? config.cluster.servers : config.cluster.workers;
    if (o.index >= limit) {
      return Fail(absl::InvalidArgumentError(
                      absl::StrCat("--index ", o.index, ": this job has ", limit, " ", name, "s")),
                  2);
    }
  }
  std::string bind = o.bind;
  if (kind == RoleKind::kServer && bind.empty() && config.network.hosts == HostsKind::kNamespaces) {
    auto address = ServerBindAddress(config.network);
    if (!address.ok()) return Fail(address.status(), 2);
    bind = *address;
  }
  return RunRole(RoleId{kind, kind == RoleKind::kEvaluator ? 0 : o.index}, config, run->run_dir,
                 bind.empty() ? "127.0.0.1" : bind, o.gpu, o.resume);
}

Command AddRole(Command& program, int* exit_code, RoleKind kind, const char* name, const char* help,
                const std::shared_ptr<RoleOptions>& o) {
  Command cmd = program.Subcommand(name, help).InGroup("Role commands (started by monsoon run)");
  o->run_dir.AddTo(cmd, "the run directory (config.yaml and token)");
  if (kind != RoleKind::kEvaluator) {
    cmd.Option("--index", &o->index, "which one").Required().InRange(0, INT_MAX);
  }
  if (kind != RoleKind::kServer) {
    cmd.Option("--gpu", &o->gpu, "the CUDA device (compute.device)").InRange(0, INT_MAX);
  }
  cmd.OnRun([kind, o, exit_code] { *exit_code = Role(kind, *o); });
  return cmd;
}

}  // namespace

void AddRoleCommands(Command& program, int* exit_code) {
  auto server = std::make_shared<RoleOptions>();
  Command cmd =
      AddRole(program, exit_code, RoleKind::kServer, "server", "a parameter server", server);
  cmd.Option("--bind", &server->bind,
             "the address to listen on (default: 127.0.0.1, or on emulated hosts "
             "network.interface's)");
  cmd.Flag("--resume", &server->resume, "start from the newest checkpoint");
  AddRole(program, exit_code, RoleKind::kWorker, "worker", "a worker",
          std::make_shared<RoleOptions>());
  AddRole(program, exit_code, RoleKind::kEvaluator, "evaluator", "the evaluator",
          std::make_shared<RoleOptions>());
}

}  // namespace monsoon
