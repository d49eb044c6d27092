#include "launcher/local/process_tree.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/exit_status.h"
#include "core/file_util.h"

namespace monsoon {
namespace {

// /proc/PID/stat's state, parent and process group, after the command name, which may hold
// spaces and parentheses: "PID (COMM) STATE PPID PGRP SESSION ...".
bool ReadStat(pid_t pid, pid_t* parent, pid_t* group, bool* zombie) {
  const absl::StatusOr<std::string> stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  if (!stat.ok()) return false;
  const size_t comm_end = stat->rfind(')');
  if (comm_end == std::string::npos) return false;
  const std::vector<absl::string_view> fields =
      absl::StrSplit(absl::string_view(*stat).substr(comm_end + 1), ' ', absl::SkipEmpty());
  if (fields.size() < 4 || !absl::SimpleAtoi(fields[1], parent) ||
      !absl::SimpleAtoi(fields[2], group)) {
    return false;
  }
  *zombie = fields[0] == "Z" || fields[0] == "X";
  return true;
}

// `pid`'s kProcessTreeVariable, or "". Another user's process is unreadable, and not the
// launcher's.
std::string TreeTagOf(pid_t pid) {
  const absl::StatusOr<std::string> environ = ReadFile(absl::StrCat("/proc/", pid, "/environ"));
  if (!environ.ok()) return "";
  const std::string prefix = absl::StrCat(kProcessTreeVariable, "=");
  for (absl::string_view entry : absl::StrSplit(*environ, '\0')) {
    if (absl::ConsumePrefix(&entry, prefix)) return std::string(entry);
  }
  return "";
}

}  // namespace

ProcessTable ProcessTable::Read() {
  ProcessTable table;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return table;
  while (const dirent* entry = readdir(proc)) {
    int pid = 0;
    Process p;
    if (!absl::SimpleAtoi(entry->d_name, &pid) || pid == getpid() ||
        !ReadStat(pid, &p.parent, &p.group, &p.zombie)) {
      continue;
    }
    if (!p.zombie) p.tree_tag = TreeTagOf(pid);
    table.processes_[pid] = std::move(p);
  }
  closedir(proc);
  return table;
}

std::vector<pid_t> ProcessTable::TreeMembers(const ProcessTree& tree) const {
  std::set<pid_t> members;
  for (const auto& [pid, p] : processes_) {
    if (pid == tree.root || p.group == tree.root || (!tree.tag.empty() && p.tree_tag == tree.tag)) {
      members.insert(pid);
    }
  }
  // Children of members that cleared their environment, and their children.
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [pid, p] : processes_) {
      if (members.count(p.parent) > 0 && members.insert(pid).second) grew = true;
    }
  }
  std::vector<pid_t> live;
  for (const pid_t pid : members) {
    if (!processes_.at(pid).zombie) live.push_back(pid);
  }
  return live;
}

std::vector<pid_t> ProcessTable::LiveChildrenOf(pid_t parent) const {
  std::vector<pid_t> children;
  for (const auto& [pid, p] : processes_) {
    if (p.parent == parent && !p.zombie) children.push_back(pid);
  }
  return children;
}

void SignalAll(const std::vector<pid_t>& pids, int signal) {
  for (const pid_t pid : pids) kill(pid, signal);
}

}  // namespace monsoon
