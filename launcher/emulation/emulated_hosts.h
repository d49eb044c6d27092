// Hosts emulated on this machine, for tests and studies of what crosses a network (root only).
// Each host is a network namespace "monsoon-OWNER-NAME" whose one link, named `interface`, is a
// veth pair to a bridge in the namespace "monsoon-OWNER-switch"; host i (in the order given)
// has the address 10.203.0.(i + 1)/24. Traffic between hosts leaves loopback and crosses the
// links; with link_mbit > 0 the kernel's token bucket filter (tc tbf) limits each link to that
// rate in both directions. Nothing is added outside these namespaces. They are named after
// their owner's PID, so that those of an owner that died can be found and removed.
#ifndef MONSOON_LAUNCHER_EMULATION_EMULATED_HOSTS_H_
#define MONSOON_LAUNCHER_EMULATION_EMULATED_HOSTS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace monsoon {

struct EmulatedHostsOptions {
  std::vector<std::string> names;  // letters, digits, '-' and '_'
  std::string interface = "eth0";  // each host's link
  double link_mbit = 0;            // each link's rate each way; 0: no limit
  pid_t owner = 0;                 // 0: this process
};

class EmulatedHosts {
 public:
  // Creates the hosts, first removing the namespaces of owners that no longer run. On an error
  // nothing of them is left.
  static absl::StatusOr<std::unique_ptr<EmulatedHosts>> Create(const EmulatedHostsOptions& options);
  // Removes the hosts (RemoveEmulatedHosts), unless Keep() was called.
  ~EmulatedHosts();
  // Leaves the hosts in place after this object: RemoveEmulatedHosts(owner) removes them, as
  // does any Create once their owner has ended.
  void Keep() { keep_ = true; }
  EmulatedHosts(const EmulatedHosts&) = delete;
  EmulatedHosts& operator=(const EmulatedHosts&) = delete;

  const std::vector<std::string>& names() const { return options_.names; }
  std::string Namespace(const std::string& name) const;
  // The host's IPv4 address; empty for a name that is not one of the hosts.
  std::string Address(const std::string& name) const;
  // `argv` run on host `name`: nsenter --net=/run/netns/NAMESPACE -- argv... (only the network
  // namespace changes: `ip netns exec` would also mount a /sys of its own).
  std::vector<std::string> On(const std::string& name, const std::vector<std::string>& argv) const;

 private:
  explicit EmulatedHosts(EmulatedHostsOptions options) : options_(std::move(options)) {}
  absl::Status Build();

  EmulatedHostsOptions options_;
  bool keep_ = false;
};

// Kills every process in `owner`'s namespaces (by PID, found through /proc) and deletes the
// namespaces, with their links and queueing disciplines.
absl::Status RemoveEmulatedHosts(pid_t owner);

// The namespaces of `owner` that exist (0: of every owner).
std::vector<std::string> EmulatedHostNamespaces(pid_t owner);

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_EMULATION_EMULATED_HOSTS_H_
