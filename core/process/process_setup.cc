#include "core/process/process_setup.h"

#include <fcntl.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <pmmintrin.h>
#include <xmmintrin.h>
#endif

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/synchronization/mutex.h"

namespace monsoon {

void ApplyProcessSettings() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's maximum on 64-bit
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  // Per-thread arenas return freed pages to the kernel whatever the trim threshold, so gRPC's
  // threads would refault their receive buffers; one arena keeps them.
  mallopt(M_ARENA_MAX, 1);
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  RaiseDescriptorLimit();
}

void FlushDenormalsToZero() {
#if defined(__x86_64__)
  _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
  _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
#endif
}

std::optional<StartupVariable> HugePagesVariable() {
  constexpr char kTunable[] = "glibc.malloc.hugetlb";
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  const std::string current = tunables == nullptr ? "" : tunables;
  if (current.find(kTunable) != std::string::npos) return std::nullopt;
  const std::string wanted = std::string(kTunable) + "=1";
  return StartupVariable{"GLIBC_TUNABLES", current.empty() ? wanted : current + ":" + wanted};
}

void RestartWith(std::initializer_list<std::optional<StartupVariable>> variables, char** argv) {
  bool restart = false;
  for (const std::optional<StartupVariable>& variable : variables) {
    if (!variable.has_value()) continue;
    setenv(variable->name.c_str(), variable->value.c_str(), 1);
    restart = true;
  }
  if (!restart) return;
  // By its path, so that the process keeps its name (/proc/PID/comm, what ps and top show).
  const std::string self = SelfExePath();
  if (!self.empty()) execv(self.c_str(), argv);
  execv("/proc/self/exe", argv);
}

void RaiseDescriptorLimit() {
  struct rlimit limit {};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == limit.rlim_max) return;
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
}

DescriptorUse CountDescriptors() {
  DescriptorUse use;
  struct rlimit limit {};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) use.limit = static_cast<int64_t>(limit.rlim_cur);
  const int probe = open("/dev/null", O_RDONLY | O_CLOEXEC);
  use.exhausted = probe < 0 && (errno == EMFILE || errno == ENFILE);
  if (probe >= 0) close(probe);
  if (use.exhausted) {
    use.open = use.limit;
    return use;
  }
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++use.open;
  }
  return use;
}

std::string SelfExePath() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, n) : "";
}

namespace {

// This process's cgroup v2 memory.max in bytes; 0 when there is none or it is "max".
uint64_t CgroupMemoryMax() {
  std::ifstream cgroup("/proc/self/cgroup");
  std::string line;
  while (std::getline(cgroup, line)) {
    if (line.rfind("0::", 0) != 0) continue;
    std::ifstream limit("/sys/fs/cgroup" + line.substr(3) + "/memory.max");
    std::string value;
    if (limit >> value && value != "max") return std::strtoull(value.c_str(), nullptr, 10);
  }
  return 0;
}

}  // namespace

MemoryLimit HostMemoryLimit() {
  MemoryLimit limit{
      static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)),
      "this machine's"};
  const auto lower = [&limit](uint64_t bytes, const char* source) {
    if (bytes > 0 && bytes < limit.bytes) limit = {bytes, source};
  };
  lower(CgroupMemoryMax(), "this cgroup's");
  if (const char* slurm = std::getenv("SLURM_MEM_PER_NODE")) {
    lower(std::strtoull(slurm, nullptr, 10) << 20, "the SLURM allocation's");
  }
  struct rlimit address_space {};
  if (getrlimit(RLIMIT_AS, &address_space) == 0 && address_space.rlim_cur != RLIM_INFINITY) {
    lower(address_space.rlim_cur, "the address-space limit's");
  }
  return limit;
}

}  // namespace monsoon
