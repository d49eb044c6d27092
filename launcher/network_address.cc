#include "launcher/network_address.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
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

absl::StatusOr<std::string> ServerBindAddress(const NetworkConfig& network) {
  if (!network.interface.empty()) {
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) != 0) return absl::InternalError("getifaddrs failed");
    std::string found;
    std::vector<std::string> names;
    for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
      if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
      names.push_back(a->ifa_name);
      if (found.empty() && network.interface == a->ifa_name) found = Ipv4Text(a->ifa_addr);
    }
    freeifaddrs(list);
    if (found.empty()) {
      return absl::NotFoundError(
          absl::StrCat("network.interface: no IPv4 address on '", network.interface,
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

bool AcceptsConnections(const std::string& address, absl::Duration timeout) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return false;
  addrinfo hints = {};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(address.substr(0, colon).c_str(), address.substr(colon + 1).c_str(), &hints,
                  &found) != 0) {
    return false;
  }
  bool accepted = false;
  const int fd = socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    if (connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
      accepted = true;
    } else if (errno == EINPROGRESS) {
      pollfd p = {fd, POLLOUT, 0};
      int error = 0;
      socklen_t length = sizeof(error);
      accepted = poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout))) == 1 &&
                 getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0;
    }
    close(fd);
  }
  freeaddrinfo(found);
  return accepted;
}

}  // namespace monsoon
