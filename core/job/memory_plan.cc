#include "core/job/memory_plan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/config/derived_values.h"
#include "core/model/model.h"
#include "core/process/chunk_window.h"
#include "core/process/segment_layout.h"

namespace monsoon {
namespace {

// The copies of the flat vector each role keeps: a worker its weights, gradients, the weights
// it fetched and the gradients it sums and pushes (with transport.overlap also the push in
// flight and the weights its reply brings: PushPipeline); a server its shard's weights, a
// gradient being applied and its checkpoint snapshot, plus the optimizer's slots and the
// shared segments of its clients (SegmentBytes); the evaluator its weights and the pull.
uint64_t WorkerCopies(const JobConfig& config) {
  return config.transport.overlap == Overlap::kNone ? 4 : 6;
}
constexpr uint64_t kServerCopies = 3;
constexpr uint64_t kEvaluatorCopies = 2;

uint64_t OptimizerSlots(OptimizerType type) {
  switch (type) {
    case OptimizerType::kSgd:
      return 0;
    case OptimizerType::kMomentum:
    case OptimizerType::kAdagrad:
      return 1;
    case OptimizerType::kAdam:
      return 2;
  }
  return 2;
}

// Bytes of the layers' values at `batch` rows: the input, every layer's output and the
// model's two scratch buffers of the widest; `backward` doubles them for their gradients.
uint64_t ActivationBytes(const ModelSpec& spec, const std::vector<Model::LayerFootprint>& layers,
                         int batch, bool backward) {
  uint64_t values = spec.input_dim;
  uint64_t widest = spec.input_dim;
  for (const Model::LayerFootprint& layer : layers) {
    values += layer.values;
    widest = std::max<uint64_t>(widest, layer.values);
  }
  return (values + 2 * widest) * batch * sizeof(float) * (backward ? 2 : 1);
}

// The server that holds the most of the flat vector: its floats.
uint64_t LargestServerShare(const JobConfig& config, uint64_t params) {
  const absl::StatusOr<ShardingPlan> plan = JobShardingPlan(config);
  if (!plan.ok()) return (params + config.cluster.servers - 1) / config.cluster.servers;
  uint64_t largest = 0;
  for (int s = 0; s < config.cluster.servers; ++s)
    largest = std::max<uint64_t>(largest, plan->FloatsOf(s));
  return largest;
}

// The shared memory server 0 makes for its clients when they share its host, counted on the
// server (its clients map the same pages): a segment per client and the chunk window (none
// with DC-ASGD); nothing with transport.local grpc.
uint64_t SegmentBytes(const JobConfig& config) {
  const absl::StatusOr<ShardingPlan> plan = JobShardingPlan(config);
  if (!plan.ok() || config.transport.local == LocalTransport::kGrpc) return 0;
  const SegmentLayout layout = SegmentLayout::For(
      *plan, SegmentLayout::SlotsWanted(*plan, 0, config.transport.max_in_flight));
  const int clients = config.cluster.pushing_clients() + (config.cluster.evaluator ? 1 : 0);
  const uint64_t window = OffersChunkWindow(config.staleness) ? ChunkWindow::BytesFor(*plan, 0) : 0;
  return layout.bytes() * static_cast<uint64_t>(clients) + window;
}

// A worker's share of its node's segment and its pusher's sum (worker/node_aggregation.h):
// per node, a gradient slot for each worker, the published weights and the sum.
uint64_t NodeBytesPerWorker(const JobConfig& config, uint64_t params) {
  const int per_node = config.cluster.workers_per_node;
  if (!config.cluster.aggregate_per_node) return 0;
  return (params * sizeof(float) * (per_node + 2) + per_node - 1) / per_node;
}

// "812.3 MB", "27.08 GB".
std::string SizeText(uint64_t bytes) {
  return bytes < 1e9 ? absl::StrFormat("%.1f MB", bytes / 1e6)
                     : absl::StrFormat("%.2f GB", bytes / 1e9);
}

// "conv0 (conv2d): 10000000 parameters and 6760000 values per example, 346.27 GB per worker
// at batch 64".
std::string LargestLayer(const MemoryEstimate& estimate) {
  return absl::StrCat(estimate.largest_layer, ": ", estimate.largest_layer_params,
                      " parameters and ", estimate.largest_layer_values, " values per example, ",
                      SizeText(estimate.largest_layer_bytes), " per worker at batch ", estimate.batch);
}

// What one role's part of the plan is, in words: "each worker's shard of the training data
// held in memory" and what would shrink it.
std::string PartName(const RoleMemory& role, uint64_t RoleMemory::*part,
                     const MemoryEstimate& estimate) {
  const std::string each = role.count > 1 ? absl::StrCat("each ", role.kind, "'s")
                                          : absl::StrCat("the ", role.kind, "'s");
  if (part == &RoleMemory::data) {
    if (role.kind != "worker") return absl::StrCat(each, " test set, held in memory");
    return absl::StrCat(each, " shard of the training data", role.streamed ? ", streamed" :
                        ", held in memory (a lower data.memory_budget_mib streams an npy or "
                        "hdf5 shard from its files)");
  }
  if (part == &RoleMemory::activations) {
    return absl::StrCat(each, " activations at batch ", estimate.batch,
                        estimate.largest_layer.empty()
                            ? ""
                            : absl::StrCat(" (the largest layer is ", LargestLayer(estimate), ")"));
  }
  return role.kind == "server" ? absl::StrCat(each, " share of the weights and optimizer state")
                               : absl::StrCat(each, " copies of the weights, gradients and "
                                              "optimizer state");
}

// The largest part of the plan, counted over its roles: "each worker's shard of the training
// data, held in memory ...: 20.50 GB (x 2)".
std::string LargestPart(const MemoryEstimate& estimate) {
  const RoleMemory* largest_role = nullptr;
  uint64_t RoleMemory::*largest = nullptr;
  uint64_t most = 0;
  for (const RoleMemory& role : estimate.roles) {
    for (uint64_t RoleMemory::*part :
         {&RoleMemory::weights, &RoleMemory::activations, &RoleMemory::data}) {
      if (role.*part * role.count > most) {
        most = role.*part * role.count;
        largest_role = &role;
        largest = part;
      }
    }
  }
  if (largest_role == nullptr) return "";
  return absl::StrCat(PartName(*largest_role, largest, estimate), ": ",
                      SizeText(largest_role->*largest),
                      largest_role->count > 1 ? absl::StrCat(" (x ", largest_role->count, ")")
                                              : "");
}

}  // namespace

uint64_t ShardMemoryBudget(const DataConfig& data) {
  return data.memory_budget_mib > 0 ? static_cast<uint64_t>(data.memory_budget_mib) << 20
                                    : HostMemoryLimit().bytes / 4;
}

uint64_t RowBytes(uint64_t rows, int features, int targets) {
  return rows * (static_cast<uint64_t>(features) + targets) * sizeof(float);
}

bool StreamsShard(const JobConfig& config, uint64_t rows, int features, int targets) {
  const DataFormat format = config.data.format;
  return (format == DataFormat::kNpy || format == DataFormat::kHdf5) &&
         RowBytes(rows, features, targets) > ShardMemoryBudget(config.data);
}

uint64_t MemoryEstimate::all_roles() const {
  uint64_t sum = 0;
  for (const RoleMemory& role : roles) sum += role.total() * role.count;
  return sum;
}

int MemoryEstimate::role_count() const {
  int count = 0;
  for (const RoleMemory& role : roles) count += role.count;
  return count;
}

uint64_t MemoryEstimate::largest_role() const {
  uint64_t largest = 0;
  for (const RoleMemory& role : roles) largest = std::max(largest, role.total());
  return largest;
}

MemoryEstimate EstimateMemory(const JobConfig& config, const DataSizes& data) {
  const ModelSpec& spec = config.model;
  const uint64_t params = Model::NumParams(spec);
  const std::vector<Model::LayerFootprint> layers = spec.type == ModelType::kProgram
                                                        ? std::vector<Model::LayerFootprint>{}
                                                        : Model::Footprints(spec);
  const int batch = config.training.batch_size;
  MemoryEstimate estimate;
  estimate.batch = batch;
  const uint64_t server_floats = LargestServerShare(config, params);
  estimate.roles.push_back(
      {"server", config.cluster.servers,
       server_floats * sizeof(float) * (kServerCopies + OptimizerSlots(config.optimizer.type)) +
           SegmentBytes(config)});
  const int workers = config.cluster.workers;
  const uint64_t shard = (data.train_rows + workers - 1) / workers;
  RoleMemory worker{
      "worker", workers,
      params * sizeof(float) * WorkerCopies(config) + NodeBytesPerWorker(config, params),
      ActivationBytes(spec, layers, batch, /*backward=*/true)};
  worker.streamed = StreamsShard(config, shard, data.feature_dim, data.target_dim);
  worker.data = RowBytes(worker.streamed ? 2 * batch : shard, data.feature_dim, data.target_dim);
  estimate.roles.push_back(worker);
  if (config.cluster.evaluator) {
    estimate.roles.push_back(
        {"evaluator", 1, params * sizeof(float) * kEvaluatorCopies,
         ActivationBytes(spec, layers, config.evaluation.batch_size, /*backward=*/false),
         config.evaluation.by_program
             ? 0
             : RowBytes(data.test_rows, data.feature_dim, data.target_dim)});
  }
  for (const Model::LayerFootprint& layer : layers) {
    const uint64_t bytes =
        (layer.params * WorkerCopies(config) + layer.values * batch * 2) * sizeof(float);
    if (bytes > estimate.largest_layer_bytes) {
      estimate.largest_layer = layer.name;
      estimate.largest_layer_params = layer.params;
      estimate.largest_layer_values = layer.values;
      estimate.largest_layer_bytes = bytes;
    }
  }
  return estimate;
}

std::string MemoryTable(const MemoryEstimate& estimate, const MemoryLimit& limit) {
  std::string table = absl::StrFormat("%-13s %11s %11s %11s %11s\n", "role", "weights",
                                      "activations", "data", "total");
  for (const RoleMemory& role : estimate.roles) {
    const std::string name = absl::StrCat(role.kind, " x ", role.count);
    absl::StrAppendFormat(&table, "%-13s %11s %11s %11s %11s%s\n", name, SizeText(role.weights),
                          SizeText(role.activations), SizeText(role.data), SizeText(role.total()),
                          role.streamed ? "  (shard streamed from its files)" : "");
  }
  absl::StrAppendFormat(&table, "all %d roles on one host (monsoon run): %s of %s %s\n",
                        estimate.role_count(), SizeText(estimate.all_roles()), limit.source,
                        SizeText(limit.bytes));
  if (!estimate.largest_layer.empty()) {
    absl::StrAppend(&table, "largest layer: ", LargestLayer(estimate), "\n");
  }
  return table;
}

absl::Status CheckMemoryFits(const MemoryEstimate& estimate, uint64_t needed,
                             const std::string& what, const MemoryLimit& limit) {
  if (needed <= limit.bytes) return absl::OkStatus();
  std::string message = absl::StrCat(what, " need ", SizeText(needed), " of memory, more than ",
                                     limit.source, " ", SizeText(limit.bytes));
  const std::string largest = LargestPart(estimate);
  if (!largest.empty()) absl::StrAppend(&message, "; the largest part is ", largest);
  absl::StrAppend(&message, " (`monsoon validate` prints what each role needs)");
  return absl::InvalidArgumentError(message);
}

}  // namespace monsoon
