// `monsoon hosts up|down|list`: emulated hosts in network namespaces (launcher/
// emulated_hosts.h) for tests and studies that run other programs on them, such as a SLURM
// cluster's daemons. Root only.
//   monsoon hosts up NAME... --owner PID [--interface eth0] [--link-mbit N]
//       creates them; prints "NAME NAMESPACE ADDRESS" per host
//   monsoon hosts down --owner PID    kills what runs on them and removes them
//   monsoon hosts list [--owner PID]  the namespaces that exist (of one owner)
#include <iostream>
#include <memory>

#include "launcher/commands/command.h"
#include "launcher/emulation/emulated_hosts.h"

namespace monsoon {
namespace {

struct HostsOptions {
  EmulatedHostsOptions hosts;
  int owner = 0;
};

int Up(const HostsOptions& o) {
  EmulatedHostsOptions options = o.hosts;
  options.owner = o.owner;
  auto hosts = EmulatedHosts::Create(options);
  if (!hosts.ok()) return Fail(hosts.status(), 1);
  (*hosts)->Keep();
  for (const std::string& name : (*hosts)->names()) {
    std::cout << name << " " << (*hosts)->Namespace(name) << " " << (*hosts)->Address(name) << "\n";
  }
  return 0;
}

}  // namespace

void AddHostsCommand(Command& program, int* exit_code) {
  Command cmd = program.Subcommand(
      "hosts", "emulated hosts in network namespaces, linked through a switch (root only)");
  cmd.RequireSubcommand();
  auto o = std::make_shared<HostsOptions>();
  Command up = cmd.Subcommand("up", "create hosts; prints NAME NAMESPACE ADDRESS each");
  up.Option("names", &o->hosts.names, "the hosts' names").Required();
  up.Option("--owner", &o->owner, "the PID whose end makes them removable")
      .Required()
      .InRange(1, 1 << 30);
  up.Option("--interface", &o->hosts.interface, "each host's link").ShowDefault();
  up.Option("--link-mbit", &o->hosts.link_mbit, "each link's rate each way; 0: no limit")
      .ShowDefault();
  up.OnRun([o, exit_code] { *exit_code = Up(*o); });
  Command down = cmd.Subcommand("down", "kill what runs on an owner's hosts; remove them");
  down.Option("--owner", &o->owner, "their owner's PID").Required();
  down.OnRun([o, exit_code] {
    const absl::Status removed = RemoveEmulatedHosts(o->owner);
    *exit_code = removed.ok() ? 0 : Fail(removed, 1);
  });
  Command list = cmd.Subcommand("list", "the hosts' namespaces (of one owner)");
  list.Option("--owner", &o->owner, "their owner's PID");
  list.OnRun([o, exit_code] {
    for (const std::string& name : EmulatedHostNamespaces(o->owner)) std::cout << name << "\n";
    *exit_code = 0;
  });
}

}  // namespace monsoon
