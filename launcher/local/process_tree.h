// A role's processes: the one the launcher started and every process started from it, also
// those that left its process group (setsid, nohup, a daemon's double fork). Each inherits the
// role's tag in its environment (kProcessTreeVariable); a process that clears its environment
// is still found while its parent is one of the tree's.
#ifndef MONSOON_LAUNCHER_LOCAL_PROCESS_TREE_H_
#define MONSOON_LAUNCHER_LOCAL_PROCESS_TREE_H_

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace monsoon {

struct ProcessTree {
  pid_t root = 0;   // the process the launcher started: its process group's leader
  std::string tag;  // the value of kProcessTreeVariable its processes inherit
};

// The processes this one can see, read once from /proc. Processes that end or start after
// Read() are not in it.
class ProcessTable {
 public:
  static ProcessTable Read();

  // The live processes of `tree` (zombies left out: they are dead already).
  std::vector<pid_t> TreeMembers(const ProcessTree& tree) const;
  // The live processes whose parent is `parent`.
  std::vector<pid_t> LiveChildrenOf(pid_t parent) const;

 private:
  struct Process {
    pid_t parent = 0;
    pid_t group = 0;  // its process group
    bool zombie = false;
    std::string tree_tag;  // its kProcessTreeVariable, "" without one (or unreadable)
  };
  std::map<pid_t, Process> processes_;
};

// Sends `signal` to each of `pids`.
void SignalAll(const std::vector<pid_t>& pids, int signal);

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_LOCAL_PROCESS_TREE_H_
