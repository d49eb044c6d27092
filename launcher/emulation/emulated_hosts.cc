#include "launcher/emulation/emulated_hosts.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "core/status_macros.h"
#include "launcher/local/process_group.h"

namespace monsoon {
namespace {

constexpr char kPrefix[] = "monsoon-";
constexpr char kNetnsDir[] = "/run/netns";
constexpr char kSwitch[] = "switch";

// iproute2's `ip` and `tc` by their usual paths (a test's PATH may lack /usr/sbin).
std::string Tool(const std::string& name) {
  for (const char* dir : {"/usr/sbin/", "/sbin/", "/usr/bin/", "/bin/"}) {
    const std::string path = dir + name;
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return name;
}

absl::Status Run(std::vector<std::string> argv) {
  argv[0] = Tool(argv[0]);
  MONSOON_ASSIGN_OR_RETURN(const int status, RunProgram(argv, nullptr));
  if (status != 0) {
    return absl::InternalError(
        absl::StrCat("`", absl::StrJoin(argv, " "), "` failed (exit status ", status, ")"));
  }
  return absl::OkStatus();
}

std::string NamespaceOf(pid_t owner, const std::string& name) {
  return absl::StrCat(kPrefix, owner, "-", name);
}

// Every namespace whose name starts with "monsoon-".
std::vector<std::string> MonsoonNamespaces() {
  std::vector<std::string> names;
  DIR* dir = opendir(kNetnsDir);
  if (dir == nullptr) return names;
  while (const dirent* e = readdir(dir)) {
    if (absl::StartsWith(e->d_name, kPrefix)) names.push_back(e->d_name);
  }
  closedir(dir);
  return names;
}

// The owner's PID in a namespace's name "monsoon-PID-NAME"; 0 when there is none.
pid_t OwnerOf(const std::string& name) {
  const std::string rest = name.substr(std::strlen(kPrefix));
  int pid = 0;
  return absl::SimpleAtoi(rest.substr(0, rest.find('-')), &pid) ? pid : 0;
}

// The processes in network namespace `name`, as `ip netns pids` finds them.
std::vector<pid_t> ProcessesIn(const std::string& name) {
  struct stat target;
  if (stat(absl::StrCat(kNetnsDir, "/", name).c_str(), &target) != 0) return {};
  std::vector<pid_t> pids;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return pids;
  while (const dirent* e = readdir(proc)) {
    int pid = 0;
    struct stat s;
    if (absl::SimpleAtoi(e->d_name, &pid) &&
        stat(absl::StrCat("/proc/", pid, "/ns/net").c_str(), &s) == 0 &&
        s.st_dev == target.st_dev && s.st_ino == target.st_ino) {
      pids.push_back(pid);
    }
  }
  closedir(proc);
  return pids;
}

// SIGKILL to every process in namespace `name`; waits (at most 5 s) until they are gone.
void KillProcessesIn(const std::string& name) {
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  for (std::vector<pid_t> pids = ProcessesIn(name); !pids.empty() && absl::Now() < deadline;
       pids = ProcessesIn(name)) {
    for (const pid_t pid : pids) kill(pid, SIGKILL);
    absl::SleepFor(absl::Milliseconds(20));
  }
}

// Removes the namespaces of owners that no longer run.
absl::Status RemoveOrphans() {
  std::set<pid_t> dead;
  for (const std::string& name : MonsoonNamespaces()) {
    const pid_t owner = OwnerOf(name);
    if (owner > 0 && kill(owner, 0) != 0 && errno == ESRCH) dead.insert(owner);
  }
  for (const pid_t owner : dead) MONSOON_RETURN_IF_ERROR(RemoveEmulatedHosts(owner));
  return absl::OkStatus();
}

absl::Status CheckOptions(const EmulatedHostsOptions& o) {
  if (o.names.empty() || o.names.size() > 250) {
    return absl::InvalidArgumentError(
        absl::StrCat("emulated hosts: between 1 and 250 of them, not ", o.names.size()));
  }
  const auto plain = [](const std::string& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
    });
  };
  std::set<std::string> seen;
  for (const std::string& name : o.names) {
    if (!plain(name) || name == kSwitch || !seen.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "emulated hosts: '", name,
          "' is not a usable host name (letters, digits, - and _; unique; not 'switch')"));
    }
  }
  if (!plain(o.interface) || o.interface.size() > 15 || o.interface == "lo") {
    return absl::InvalidArgumentError(
        absl::StrCat("emulated hosts: '", o.interface,
                     "' is not a usable interface name (up to 15 letters, "
                     "digits, - and _; not lo)"));
  }
  if (!(o.link_mbit >= 0) || o.link_mbit > 1e6) {
    return absl::InvalidArgumentError(
        absl::StrCat("emulated hosts: link rate ", o.link_mbit, " Mbit/s is out of [0, 1e6]"));
  }
  return absl::OkStatus();
}

// The token bucket on `device` in namespace `name`: `mbit` Mbit/s, bursts of 4 ms at that rate
// (at least 64 KiB, above the largest segment veth hands over), at most 20 ms queued.
std::vector<std::string> RateLimit(const std::string& name, const std::string& device,
                                   double mbit) {
  const double bytes_per_second = mbit * 1e6 / 8;
  const int64_t burst = std::max<int64_t>(64 << 10, std::llround(bytes_per_second * 0.004));
  return {"tc",
          "-n",
          name,
          "qdisc",
          "add",
          "dev",
          device,
          "root",
          "tbf",
          "rate",
          absl::StrCat(std::llround(mbit * 1000), "kbit"),
          "burst",
          absl::StrCat(burst),
          "latency",
          "20ms"};
}

}  // namespace

absl::StatusOr<std::unique_ptr<EmulatedHosts>> EmulatedHosts::Create(
    const EmulatedHostsOptions& options) {
  MONSOON_RETURN_IF_ERROR(CheckOptions(options));
  MONSOON_RETURN_IF_ERROR(RemoveOrphans());
  EmulatedHostsOptions o = options;
  if (o.owner == 0) o.owner = getpid();
  // A live owner's hosts stay as they are: a second set would clash with them (the switch,
  // the addresses), and failing half-way would remove them with it.
  if (const std::vector<std::string> existing = EmulatedHostNamespaces(o.owner);
      !existing.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "emulated hosts: owner ", o.owner, " already has hosts (", absl::StrJoin(existing, ", "),
        "); a second set for one owner is refused and the first left as it is: remove them "
        "first (monsoon hosts down --owner ",
        o.owner, ") or use another owner"));
  }
  std::unique_ptr<EmulatedHosts> hosts(new EmulatedHosts(std::move(o)));
  if (const absl::Status built = hosts->Build(); !built.ok()) {
    return absl::Status(built.code(), absl::StrCat("emulated hosts: ", built.message(),
                                                   " (they need root and iproute2)"));
  }
  return hosts;
}

absl::Status EmulatedHosts::Build() {
  const std::string hub = NamespaceOf(options_.owner, kSwitch);
  MONSOON_RETURN_IF_ERROR(Run({"ip", "netns", "add", hub}));
  MONSOON_RETURN_IF_ERROR(Run({"ip", "-n", hub, "link", "add", "br0", "type", "bridge"}));
  MONSOON_RETURN_IF_ERROR(Run({"ip", "-n", hub, "link", "set", "br0", "up"}));
  const std::string& link = options_.interface;
  for (size_t i = 0; i < options_.names.size(); ++i) {
    const std::string& name = options_.names[i];
    const std::string host = Namespace(name), port = absl::StrCat("h", i);
    MONSOON_RETURN_IF_ERROR(Run({"ip", "netns", "add", host}));
    MONSOON_RETURN_IF_ERROR(Run({"ip", "link", "add", port, "netns", hub, "type", "veth", "peer",
                                 "name", link, "netns", host}));
    MONSOON_RETURN_IF_ERROR(Run({"ip", "-n", hub, "link", "set", port, "master", "br0", "up"}));
    MONSOON_RETURN_IF_ERROR(
        Run({"ip", "-n", host, "addr", "add", Address(name) + "/24", "dev", link}));
    MONSOON_RETURN_IF_ERROR(Run({"ip", "-n", host, "link", "set", link, "up"}));
    MONSOON_RETURN_IF_ERROR(Run({"ip", "-n", host, "link", "set", "lo", "up"}));
    if (options_.link_mbit > 0) {
      MONSOON_RETURN_IF_ERROR(Run(RateLimit(host, link, options_.link_mbit)));
      MONSOON_RETURN_IF_ERROR(Run(RateLimit(hub, port, options_.link_mbit)));
    }
  }
  return absl::OkStatus();
}

EmulatedHosts::~EmulatedHosts() {
  if (!keep_) RemoveEmulatedHosts(options_.owner).IgnoreError();
}

std::string EmulatedHosts::Namespace(const std::string& name) const {
  return NamespaceOf(options_.owner, name);
}

std::string EmulatedHosts::Address(const std::string& name) const {
  const auto it = std::find(options_.names.begin(), options_.names.end(), name);
  if (it == options_.names.end()) return "";
  return absl::StrCat("10.203.0.", it - options_.names.begin() + 1);
}

std::vector<std::string> EmulatedHosts::On(const std::string& name,
                                           const std::vector<std::string>& argv) const {
  std::vector<std::string> on = {Tool("nsenter"),
                                 absl::StrCat("--net=", kNetnsDir, "/", Namespace(name)), "--"};
  on.insert(on.end(), argv.begin(), argv.end());
  return on;
}

std::vector<std::string> EmulatedHostNamespaces(pid_t owner) {
  std::vector<std::string> names = MonsoonNamespaces();
  names.erase(
      std::remove_if(names.begin(), names.end(),
                     [&](const std::string& n) { return owner != 0 && OwnerOf(n) != owner; }),
      names.end());
  return names;
}

absl::Status RemoveEmulatedHosts(pid_t owner) {
  for (const std::string& name : EmulatedHostNamespaces(owner)) {
    KillProcessesIn(name);
    MONSOON_RETURN_IF_ERROR(Run({"ip", "netns", "delete", name}));
  }
  return absl::OkStatus();
}

}  // namespace monsoon
