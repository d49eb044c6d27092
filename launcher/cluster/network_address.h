// The address a server binds and publishes when started by `monsoon launch`, or by `monsoon
// run` on emulated hosts.
#ifndef MONSOON_LAUNCHER_CLUSTER_NETWORK_ADDRESS_H_
#define MONSOON_LAUNCHER_CLUSTER_NETWORK_ADDRESS_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/config/job_config.h"

namespace monsoon {

// network.interface set, or emulated hosts (on their link, EmulatedHostLink): that
// interface's IPv4 address (NotFound lists the interfaces that have one). Otherwise the first
// IPv4 address this host's name resolves to.
absl::StatusOr<std::string> ServerBindAddress(const NetworkConfig& network);

// Each emulated host's link (network.hosts: namespaces): network.interface, or eth0.
std::string EmulatedHostLink(const NetworkConfig& network);

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_CLUSTER_NETWORK_ADDRESS_H_
