// What a job asks of its data, in one place for every role and command that asks: the splits
// opened and checked against the model (`validate`, `run`, `compare`, setup, summaries, the
// simulator), read whole (the evaluator), and cut into each worker's shard.
#ifndef MONSOON_CORE_JOB_JOB_DATA_H_
#define MONSOON_CORE_JOB_JOB_DATA_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "core/config/job_config.h"
#include "core/data/data_shard.h"
#include "core/data/data_source.h"
#include "core/data/dataset.h"
#include "core/job/memory_plan.h"

namespace monsoon {

// Opens the training or test split the config names, checking its example shape against the
// model (the rows are read later).
absl::StatusOr<std::unique_ptr<DataSource>> OpenSplit(const JobConfig& config, bool train);
// Checks every split the config names (training, and test where there is one) against the
// model as the roles do: its example shape, whether one role's rows of it (a worker's shard,
// the evaluator's test set) fit in this machine's memory, and its targets
// (classes against model.output_dim, or the regression targets' count), reading no feature
// rows where the format keeps them apart (ReadSplitTargets; CSV is read whole). The check
// `monsoon run`, `prepare`, `launch` and `validate` make before any role starts. Returns the
// splits' sizes.
absl::StatusOr<DataSizes> CheckData(const JobConfig& config);
// The whole split, read and checked.
absl::StatusOr<Dataset> LoadSplit(const JobConfig& config, bool train);
// Worker `index`'s shard of the training split (ShardRows), its targets checked against the
// model: its rows read and held when they fit ShardMemoryBudget, else (.npy and HDF5) read
// from the files batch by batch. InvalidArgument for a worker with no rows.
absl::StatusOr<std::unique_ptr<DataShard>> OpenShard(const JobConfig& config, int index);
// Worker `index`'s rows of the training split `source` (ShardRows); InvalidArgument for a
// worker with none.
absl::StatusOr<std::vector<uint64_t>> WorkerRows(const JobConfig& config, int index,
                                                 const DataSource& source);
// Worker `index`'s `rows` of `source` read and held by the shard, their targets checked
// against the model.
absl::StatusOr<std::unique_ptr<DataShard>> ReadShard(const JobConfig& config, int index,
                                                     const std::vector<uint64_t>& rows,
                                                     DataSource* source);

}  // namespace monsoon

#endif  // MONSOON_CORE_JOB_JOB_DATA_H_
