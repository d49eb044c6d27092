// What each role of a job needs in memory, estimated from the config and the data's sizes
// before anything is allocated, and the check that a host can hold the roles it runs.
#ifndef MONSOON_CORE_JOB_MEMORY_PLAN_H_
#define MONSOON_CORE_JOB_MEMORY_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/config/job_config.h"
#include "core/data/data_source.h"
#include "core/process/process_setup.h"

namespace monsoon {

// A job's data as CheckData finds it: rows of the training and test split (0: no test set)
// and the floats per row.
struct DataSizes {
  uint64_t train_rows = 0;
  uint64_t test_rows = 0;
  int feature_dim = 0;
  int target_dim = 0;
};

// One kind of role (every server, worker or the evaluator alike, the largest of them) in bytes.
struct RoleMemory {
  std::string kind;  // "server", "worker", "evaluator"
  int count = 0;
  uint64_t weights = 0;      // its copies of the weights, gradients and optimizer state
  uint64_t activations = 0;  // the layers' values (and their gradients) at its batch size
  uint64_t data = 0;         // its rows held in memory (a streamed shard: two batches)
  bool streamed = false;     // a worker's shard is read from its files batch by batch
  uint64_t total() const { return weights + activations + data; }
};

// The most bytes a worker's shard may take held whole: data.memory_budget_mib, or by default
// a quarter of what this host gives the job (HostMemoryLimit).
uint64_t ShardMemoryBudget(const DataConfig& data);
// The bytes `rows` rows of `features` and `targets` floats take held as float32.
uint64_t RowBytes(uint64_t rows, int features, int targets);
// Whether a worker's shard of `rows` rows is read from its files batch by batch: a .npy or
// HDF5 shard larger than ShardMemoryBudget.
bool StreamsShard(const JobConfig& config, uint64_t rows, int features, int targets);

struct MemoryEstimate {
  std::vector<RoleMemory> roles;  // servers, workers, then the evaluator when there is one
  // The layer a worker needs the most for (its weights' copies and its values at the batch
  // size), and those bytes; empty for a worker program's model, whose layers are its own.
  std::string largest_layer;
  uint64_t largest_layer_params = 0;
  uint64_t largest_layer_values = 0;  // per example
  uint64_t largest_layer_bytes = 0;
  int batch = 0;  // training.batch_size
  // Every role on one host, as `monsoon run` starts them, and how many that is; the largest
  // role alone.
  uint64_t all_roles() const;
  int role_count() const;
  uint64_t largest_role() const;
};

MemoryEstimate EstimateMemory(const JobConfig& config, const DataSizes& data);

// The estimate as `monsoon validate` prints it: a row per kind of role, then what one host
// needs for all of them against `limit`.
std::string MemoryTable(const MemoryEstimate& estimate, const MemoryLimit& limit);

// InvalidArgument when `needed` bytes (`what`: "the job's 4 roles on this host") exceed
// `limit`, naming the largest part of the plan (a role's shard, weights and optimizer state,
// or activations: the largest layer's then) and its bytes (a job that cannot run here).
absl::Status CheckMemoryFits(const MemoryEstimate& estimate, uint64_t needed,
                             const std::string& what, const MemoryLimit& limit);

}  // namespace monsoon

#endif  // MONSOON_CORE_JOB_MEMORY_PLAN_H_
