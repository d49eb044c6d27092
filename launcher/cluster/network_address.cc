#include "launcher/cluster/network_address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <climits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace monsoon {
namespace {

std::string Ipv4Text(const sockaddr* sa) {
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, text, sizeof(text));
  return text;
}

}  // namespace

std::string EmulatedHostLink(const NetworkConfig& network) {
  return network.interface.empty() ? "eth0" : network.interface;
}

absl::StatusOr<std::string> ServerBindAddress(const NetworkConfig& network) {
  const std::string interface =
      network.hosts == HostsKind::kNamespaces ? EmulatedHostLink(network) : network.interface;
  if (!interface.empty()) {
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) != 0) return absl::InternalError("getifaddrs failed");
    std::string found;
    std::vector<std::string> names;
    for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
      if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
      names.push_back(a->ifa_name);
      if (found.empty() && interface == a->ifa_name) found = Ipv4Text(a->ifa_addr);
    }
    freeifaddrs(list);
    if (found.empty()) {
      return absl::NotFoundError(
          absl::StrCat("network.interface: no IPv4 address on '", interface,
                       "' (interfaces with one: ", absl::StrJoin(names, ", "), ")"));
    }
    return found;
  }
  char host[HOST_NAME_MAX + 1] = {};
  gethostname(host, sizeof(host) - 1);
  addrinfo hints = {};
  hints.ai_family = AF_INET;
  addrinfo* result = nullptr;
  const int rc = getaddrinfo(host, nullptr, &hints, &result);
  if (rc != 0 || result == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot resolve this host's name '", host, "' (",
                                            gai_strerror(rc),
                                            "): set network.interface to choose an interface"));
  }
  const std::string address = Ipv4Text(result->ai_addr);
  freeaddrinfo(result);
  return address;
}

}  // namespace monsoon
