// The address a server binds and publishes when started by `monsoon launch`, and whether one
// published is still served.
#ifndef MONSOON_LAUNCHER_NETWORK_ADDRESS_H_
#define MONSOON_LAUNCHER_NETWORK_ADDRESS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/job_config.h"

namespace monsoon {

// network.interface set: that interface's IPv4 address (NotFound lists the interfaces that
// have one). Unset: the first IPv4 address this host's name resolves to.
absl::StatusOr<std::string> ServerBindAddress(const NetworkConfig& network);

// Whether a TCP connection to `address` ("host:port") opens within `timeout`: a live server
// accepts; a stopped one's port refuses, or its host does not answer.
bool AcceptsConnections(const std::string& address, absl::Duration timeout);

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_NETWORK_ADDRESS_H_
