// The address a server binds and publishes when started by `monsoon launch`.
#ifndef MONSOON_LAUNCHER_NETWORK_ADDRESS_H_
#define MONSOON_LAUNCHER_NETWORK_ADDRESS_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/job_config.h"

namespace monsoon {

// network.interface set: that interface's IPv4 address (NotFound lists the interfaces that
// have one). Unset: the first IPv4 address this host's name resolves to.
absl::StatusOr<std::string> ServerBindAddress(const NetworkConfig& network);

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_NETWORK_ADDRESS_H_
