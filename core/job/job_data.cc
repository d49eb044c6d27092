#include "core/job/job_data.h"

#include <glog/logging.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/job/memory_plan.h"
#include "core/process/out_of_memory.h"
#include "core/process/process_setup.h"
#include "core/status_macros.h"

namespace monsoon {

namespace {

// `shape` without its dimensions of size 1: [1, 28, 28] -> [28, 28].
Shape WithoutUnitDims(const Shape& shape) {
  Shape out;
  for (const int d : shape) {
    if (d != 1) out.push_back(d);
  }
  return out;
}

// `data`, read from the split `name`, checked against the model's classes or targets.
absl::StatusOr<Dataset> CheckTargets(const JobConfig& config, const std::string& name,
                                     Dataset data) {
  const ModelSpec& m = config.model;
  if (m.loss == LossType::kSoftmaxCrossEntropy && data.num_classes > m.output_dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.output_dim is ", m.output_dim, " but ", name, " has ", data.num_classes,
                     " classes (labels 0 to ", data.num_classes - 1, ")"));
  }
  if (m.loss != LossType::kSoftmaxCrossEntropy && data.target_dim != m.output_dim) {
    return absl::InvalidArgumentError(absl::StrCat("model.output_dim is ", m.output_dim, " but ",
                                                   name, " has ", data.target_dim,
                                                   " targets per example"));
  }
  return data;
}

// The targets a split holds for `m`: class ids, or output_dim regression values.
TargetSpec TargetsOf(const ModelSpec& m) {
  const bool classify = m.loss == LossType::kSoftmaxCrossEntropy;
  return TargetSpec{classify ? 1 : m.output_dim, classify};
}

// OK when a split's examples, of `shape`, fit model `m`; else InvalidArgument naming the split.
absl::Status CheckExampleShape(const ModelSpec& m, const std::string& name, const Shape& shape) {
  const int features = ShapeSize(shape);
  if (features != m.input_dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.input_dim is ", m.input_dim, " but ", name, " has ", features,
                     " features per example (shape ", ShapeText(shape), ")"));
  }
  const Shape data_shape = WithoutUnitDims(shape);
  const Shape model_shape = WithoutUnitDims(m.input_shape);
  if (data_shape.size() > 1 && model_shape.size() > 1 && data_shape != model_shape) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.input_shape is ", ShapeText(m.input_shape), " but ", name,
        " holds examples of shape ", ShapeText(shape), " (channels first: [C, H, W])"));
  }
  return absl::OkStatus();
}

// InvalidArgument when one role's rows of a split (`rows` of `features` and `targets` floats
// each, held as float32) need more memory than this host gives the job.
absl::Status CheckRowsFitHost(const std::string& name, const char* whose, uint64_t rows,
                              int features, int targets) {
  const uint64_t bytes = RowBytes(rows, features, targets);
  const MemoryLimit memory = HostMemoryLimit();
  if (bytes <= memory.bytes) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrFormat("%s: %s %d rows of %d features need %.1f GB of memory, more than %s %.1f GB",
                      name, whose, rows, features, bytes / 1e9, memory.source, memory.bytes / 1e9));
}

}  // namespace

absl::StatusOr<std::unique_ptr<DataSource>> OpenSplit(const JobConfig& config, bool train) {
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<DataSource> source,
                           OpenDataSource(config.data, train, TargetsOf(config.model)));
  MONSOON_RETURN_IF_ERROR(CheckExampleShape(config.model, source->name(), source->example_shape()));
  return source;
}

absl::StatusOr<DataSizes> CheckData(const JobConfig& config) {
  DataSizes sizes;
  for (const bool train : {true, false}) {
    if (!train && !config.data.HasTestSet()) continue;
    MONSOON_ASSIGN_OR_RETURN(SplitTargets split,
                             ReadSplitTargets(config.data, train, TargetsOf(config.model)));
    const Dataset& t = split.targets;
    MONSOON_RETURN_IF_ERROR(CheckExampleShape(config.model, split.name, t.example_shape));
    const uint64_t rows = t.targets.size() / std::max(t.target_dim, 1);
    // The largest worker's shard (unless streamed), or the evaluator's whole test set.
    const uint64_t shard = (rows + config.cluster.workers - 1) / config.cluster.workers;
    if (!train || !StreamsShard(config, shard, t.feature_dim, t.target_dim)) {
      MONSOON_RETURN_IF_ERROR(CheckRowsFitHost(split.name,
                                               train ? "each worker's shard of" : "the evaluator's",
                                               train ? shard : rows, t.feature_dim, t.target_dim));
    }
    (train ? sizes.train_rows : sizes.test_rows) = rows;
    sizes.feature_dim = t.feature_dim;
    sizes.target_dim = t.target_dim;
    MONSOON_RETURN_IF_ERROR(CheckTargets(config, split.name, std::move(split.targets)).status());
  }
  return sizes;
}

absl::StatusOr<Dataset> LoadSplit(const JobConfig& config, bool train) {
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<DataSource> source, OpenSplit(config, train));
  const Allocating allocating(absl::StrCat(source->rows(), " rows of ", source->name()));
  MONSOON_ASSIGN_OR_RETURN(Dataset data, source->ReadAll());
  return CheckTargets(config, source->name(), std::move(data));
}

absl::StatusOr<std::vector<uint64_t>> WorkerRows(const JobConfig& config, int index,
                                                 const DataSource& source) {
  std::vector<uint64_t> rows = ShardRows(source.rows(), index, config.cluster.workers, config.seed);
  if (rows.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("worker ", index,
                                                   " has no data: fewer examples than the ",
                                                   config.cluster.workers, " workers"));
  }
  return rows;
}

absl::StatusOr<std::unique_ptr<DataShard>> ReadShard(const JobConfig& config, int index,
                                                     const std::vector<uint64_t>& rows,
                                                     DataSource* source) {
  LOG(INFO) << "worker " << index << ": reading " << rows.size() << " of " << source->rows()
            << " rows of " << source->name();
  const Allocating allocating(
      absl::StrCat("worker ", index, "'s ", rows.size(), " rows of ", source->name()));
  MONSOON_ASSIGN_OR_RETURN(Dataset read, source->Read(rows));
  MONSOON_ASSIGN_OR_RETURN(Dataset held, CheckTargets(config, source->name(), std::move(read)));
  return std::make_unique<DataShard>(std::move(held), index, config.seed);
}

absl::StatusOr<std::unique_ptr<DataShard>> OpenShard(const JobConfig& config, int index) {
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<DataSource> source, OpenSplit(config, /*train=*/true));
  MONSOON_ASSIGN_OR_RETURN(std::vector<uint64_t> rows, WorkerRows(config, index, *source));
  const int features = ShapeSize(source->example_shape());
  const int target_dim = TargetsOf(config.model).columns;
  if (!StreamsShard(config, rows.size(), features, target_dim)) {
    return ReadShard(config, index, rows, source.get());
  }
  // The targets alone are read now, to check them against the model.
  MONSOON_ASSIGN_OR_RETURN(Dataset targets, source->ReadTargets());
  MONSOON_RETURN_IF_ERROR(CheckTargets(config, source->name(), std::move(targets)).status());
  LOG(INFO) << "worker " << index << ": streaming " << rows.size() << " of " << source->rows()
            << " rows of " << source->name() << " batch by batch (they need "
            << RowBytes(rows.size(), features, target_dim) / (1 << 20)
            << " MiB, more than data.memory_budget_mib's " << (ShardMemoryBudget(config.data) >> 20)
            << ")";
  return std::make_unique<DataShard>(std::move(source), std::move(rows), index, config.seed);
}

}  // namespace monsoon
