#include "launcher/cluster/task_environment.h"

#include <numeric>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/status_macros.h"
#include "launcher/cluster/hostlist.h"

extern char** environ;

namespace monsoon {
namespace {

const std::string* Find(const EnvMap& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() ? nullptr : &it->second;
}

// A non-negative integer variable. Required ones must be present; optional ones give
// `fallback` when absent.
absl::StatusOr<int> IntVar(const EnvMap& env, const std::string& name, const std::string& context,
                           std::optional<int> fallback = std::nullopt) {
  const std::string* v = Find(env, name);
  if (v == nullptr) {
    if (fallback.has_value()) return *fallback;
    return absl::InvalidArgumentError(absl::StrCat(name, " is not set in this ", context));
  }
  int out;
  if (!absl::SimpleAtoi(*v, &out) || out < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, "='", *v, "' is not a non-negative integer (", context, ")"));
  }
  return out;
}

std::optional<int> GpuFor(const EnvMap& env, int local_rank) {
  const std::string* visible = Find(env, "CUDA_VISIBLE_DEVICES");
  if (visible == nullptr) return local_rank;
  std::vector<std::string> devices = absl::StrSplit(*visible, ',', absl::SkipEmpty());
  if (devices.empty() || devices[0] == "-1" || devices[0] == "NoDevFiles") return std::nullopt;
  return local_rank % static_cast<int>(devices.size());
}

absl::StatusOr<TaskEnvironment> FromSlurm(const EnvMap& env) {
  const std::string context = "srun task";
  TaskEnvironment t;
  t.source = LaunchSource::kSlurm;
  MONSOON_ASSIGN_OR_RETURN(t.rank, IntVar(env, "SLURM_PROCID", context));
  MONSOON_ASSIGN_OR_RETURN(t.size, IntVar(env, "SLURM_NTASKS", context));
  MONSOON_ASSIGN_OR_RETURN(t.local_rank, IntVar(env, "SLURM_LOCALID", context));
  MONSOON_ASSIGN_OR_RETURN(t.node_index, IntVar(env, "SLURM_NODEID", context));
  const std::string* nodelist = Find(env, "SLURM_STEP_NODELIST");
  const char* nodelist_name = "SLURM_STEP_NODELIST";
  if (nodelist == nullptr) {
    nodelist = Find(env, "SLURM_JOB_NODELIST");
    nodelist_name = "SLURM_JOB_NODELIST";
  }
  if (nodelist == nullptr) {
    return absl::InvalidArgumentError(
        "neither SLURM_STEP_NODELIST nor SLURM_JOB_NODELIST is set in this srun task");
  }
  auto nodes = ExpandHostlist(*nodelist);
  if (!nodes.ok())
    return absl::InvalidArgumentError(absl::StrCat(nodelist_name, ": ", nodes.status().message()));
  t.nodes = *nodes;
  const std::string* counts = Find(env, "SLURM_STEP_TASKS_PER_NODE");
  const char* counts_name = "SLURM_STEP_TASKS_PER_NODE";
  if (counts == nullptr) {
    counts = Find(env, "SLURM_TASKS_PER_NODE");
    counts_name = "SLURM_TASKS_PER_NODE";
  }
  if (counts != nullptr) {
    auto per_node = ExpandTaskCounts(*counts);
    if (!per_node.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(counts_name, ": ", per_node.status().message()));
    }
    t.tasks_per_node = *per_node;
    if (t.tasks_per_node.size() != t.nodes.size()) {
      return absl::InvalidArgumentError(absl::StrCat(counts_name, "='", *counts, "' lists ",
                                                     t.tasks_per_node.size(), " nodes but ",
                                                     nodelist_name, " has ", t.nodes.size()));
    }
  }
  if (t.rank >= t.size) {
    return absl::InvalidArgumentError(
        absl::StrCat("SLURM_PROCID=", t.rank, " is not below SLURM_NTASKS=", t.size));
  }
  if (t.node_index >= static_cast<int>(t.nodes.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SLURM_NODEID=", t.node_index, " but ", nodelist_name, " has ", t.nodes.size(), " nodes"));
  }
  const std::string* nodename = Find(env, "SLURMD_NODENAME");
  t.node_name = nodename != nullptr ? *nodename : t.nodes[t.node_index];
  for (int g = 0;; ++g) {
    const std::string name = absl::StrCat("SLURM_NTASKS_HET_GROUP_", g);
    if (Find(env, name) == nullptr) break;
    MONSOON_ASSIGN_OR_RETURN(int n, IntVar(env, name, context));
    t.het_group_sizes.push_back(n);
  }
  if (!t.het_group_sizes.empty()) {
    const int total = std::accumulate(t.het_group_sizes.begin(), t.het_group_sizes.end(), 0);
    if (total != t.size) {
      return absl::InvalidArgumentError(absl::StrCat("SLURM_NTASKS_HET_GROUP_* add up to ", total,
                                                     " tasks but SLURM_NTASKS=", t.size));
    }
  }
  t.gpu = GpuFor(env, t.local_rank);
  t.gpus_listed = Find(env, "CUDA_VISIBLE_DEVICES") != nullptr;
  return t;
}

}  // namespace

EnvMap CurrentEnvironment() {
  EnvMap env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const size_t eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return env;
}

std::string TaskEnvironment::Describe() const {
  const char* names[] = {"SLURM", "Open MPI", "PMI", "local"};
  std::string s = absl::StrCat(names[static_cast<int>(source)], " task ", rank, "/", size,
                               " (local ", local_rank, ")");
  if (!node_name.empty()) {
    absl::StrAppend(&s, " on node ", node_name, " [", node_index, "/", nodes.size(), "]");
  }
  if (gpus_listed) absl::StrAppend(&s, gpu.has_value() ? absl::StrCat(", GPU ", *gpu) : ", no GPU");
  return s;
}

absl::StatusOr<TaskEnvironment> DetectTaskEnvironment(const EnvMap& env) {
  if (Find(env, "SLURM_STEP_ID") != nullptr) return FromSlurm(env);
  if (Find(env, "SLURM_JOB_ID") != nullptr && Find(env, "OMPI_COMM_WORLD_RANK") == nullptr &&
      Find(env, "PMI_RANK") == nullptr) {
    return absl::FailedPreconditionError(
        "SLURM_JOB_ID is set but SLURM_STEP_ID is not: this is the batch script, not an srun "
        "task; start `monsoon launch` with srun");
  }
  TaskEnvironment t;
  if (Find(env, "OMPI_COMM_WORLD_RANK") != nullptr) {
    const std::string context = "Open MPI process";
    t.source = LaunchSource::kOpenMpi;
    MONSOON_ASSIGN_OR_RETURN(t.rank, IntVar(env, "OMPI_COMM_WORLD_RANK", context));
    MONSOON_ASSIGN_OR_RETURN(t.size, IntVar(env, "OMPI_COMM_WORLD_SIZE", context));
    MONSOON_ASSIGN_OR_RETURN(t.local_rank, IntVar(env, "OMPI_COMM_WORLD_LOCAL_RANK", context, 0));
  } else if (Find(env, "PMI_RANK") != nullptr) {
    const std::string context = "PMI process";
    t.source = LaunchSource::kPmi;
    MONSOON_ASSIGN_OR_RETURN(t.rank, IntVar(env, "PMI_RANK", context));
    MONSOON_ASSIGN_OR_RETURN(t.size, IntVar(env, "PMI_SIZE", context));
    MONSOON_ASSIGN_OR_RETURN(t.local_rank, IntVar(env, "MPI_LOCALRANKID", context, 0));
  } else {
    t.gpu = GpuFor(env, 0);
    t.gpus_listed = Find(env, "CUDA_VISIBLE_DEVICES") != nullptr;
    return t;  // plain local mode
  }
  if (t.rank >= t.size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", t.rank, " is not below the size ", t.size));
  }
  t.gpu = GpuFor(env, t.local_rank);
  t.gpus_listed = Find(env, "CUDA_VISIBLE_DEVICES") != nullptr;
  return t;
}

}  // namespace monsoon
