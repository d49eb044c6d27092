// A feed-forward model (a layer list, or a shorthand for one: linear or softmax regression, an
// MLP) over one flat parameter vector, computed on a ComputeBackend. The flat layout is what
// the sharding plan cuts.
#ifndef MONSOON_CORE_MODEL_MODEL_H_
#define MONSOON_CORE_MODEL_MODEL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/compute/compute_backend.h"
#include "core/enum_names.h"
#include "core/model/layer_kinds.h"
#include "core/model/layers.h"
#include "core/model/trainable_model.h"

namespace monsoon {

// kLayers: the model is `layers`; kProgram: the model is the worker program's
// (cluster.worker_program); the others are shorthands that expand to a layer list.
enum class ModelType { kLinearRegression, kSoftmaxRegression, kMlp, kLayers, kProgram };
enum class LossType { kSoftmaxCrossEntropy, kMeanSquaredError };

struct ModelSpec {
  ModelType type = ModelType::kMlp;
  // The input's shape per example; [input_dim] when not given.
  Shape input_shape;
  // The input shape is to be read from the training data (core/config: ResolveInputShape);
  // until then input_shape, input_dim and a layer list's output_dim are unset.
  bool input_shape_from_data = false;
  int input_dim = 0;  // the input_shape's product
  // Number of classes (classification) or of regression targets: the last layer's output.
  int output_dim = 0;
  std::vector<int> hidden;  // MLP only
  Activation activation = Activation::kRelu;
  std::vector<LayerSpec> layers;  // kLayers only
  LossType loss = LossType::kSoftmaxCrossEntropy;
  // kProgram: the length of the program's flat vector, which the launcher learns from its
  // initial weights (RUN_DIR/initial_params.bin), and how many of its last values are state.
  int num_params = 0;
  int num_state = 0;
  // The largest magnitude a state mean or variance may hold (StateLayout).
  double state_bound = 1e6;
};

// The model's layers: `layers` for kLayers, none for kProgram, else what the shorthand stands
// for (linear and softmax regression: one dense layer; mlp: dense and activation per hidden
// width, then dense; after a flatten when the input is not flat).
std::vector<LayerSpec> ModelLayers(const ModelSpec& spec);
// The output shape of each of ModelLayers(spec) in turn. InvalidArgument naming the layer
// ("model.layers[2] (dense): ..."), its input shape and what it needs when one does not fit
// its input, or when the last output is not flat.
absl::StatusOr<std::vector<Shape>> LayerShapes(const ModelSpec& spec);
// For a layer list whose shapes fit, the size of its output (its classes or targets);
// otherwise spec.output_dim.
int LayersOutputSize(const ModelSpec& spec);

// A tensor's place in the flat vector; `state`: a layer's state, not trained (Layer).
struct ParamTensor {
  ParamShape shape;
  size_t offset = 0;
  bool state = false;
};

// Owns its layers, its flat parameter and gradient buffers and its activation workspace.
// Not thread-safe; the backend it borrows must outlive it. Its errors are the backend's.
class Model : public TrainableModel {
 public:
  static absl::StatusOr<std::unique_ptr<Model>> Create(const ModelSpec& spec,
                                                       ComputeBackend* backend);
  // The same on a backend the model owns.
  static absl::StatusOr<std::unique_ptr<Model>> Create(const ModelSpec& spec,
                                                       std::unique_ptr<ComputeBackend> backend);
  ~Model() override { DropGraphs(); }

  // The flat layout, computed from the spec alone (same on every role): every layer's trained
  // tensors in layer order, then every layer's state. A program's model is "params", then
  // "state" where it has some.
  static std::vector<ParamTensor> Layout(const ModelSpec& spec);
  // Length of the flat vector, and of the state at its end.
  static size_t NumParams(const ModelSpec& spec);
  static size_t NumState(const ModelSpec& spec);
  // Each top-level layer's size: its name ("conv0 (conv2d)"), parameters (state included) and
  // the values it computes per example (a residual block's inner layers' too). Not for
  // kProgram.
  struct LayerFootprint {
    std::string name;
    size_t params = 0;
    size_t values = 0;
  };
  static std::vector<LayerFootprint> Footprints(const ModelSpec& spec);
  // The model as a table, as Keras' summary() prints it: a row per layer (its name, its
  // output's shape and its parameter count), then the total.
  static std::string Summary(const ModelSpec& spec);

  const ModelSpec& spec() const { return spec_; }
  // Training steps replayed as a graph so far (see TrainStep), and whether to try (on by
  // default; off: every step call by call, for comparison).
  int64_t graphed_steps() const { return graphed_steps_; }
  void set_graphs(bool on);
  // Batches ComputeGradients took from where PrefetchBatch had them uploaded, so far.
  int64_t prefetched_batches() const { return prefetched_batches_; }
  const std::vector<ParamTensor>& tensors() const { return tensors_; }
  size_t num_params() const override { return num_params_; }
  size_t num_state() const override { return num_state_; }
  std::string where() const override { return backend_->name(); }

  // Initial values of the flat range [offset, offset + out.size()): each tensor's ParamInit
  // (all zero for linear regression). Each value depends only on (spec, seed, its index), so
  // a server can initialise just its own chunks.
  static void InitialValues(const ModelSpec& spec, uint64_t seed, size_t offset,
                            absl::Span<float> out);
  // TrainableModel, on the backend.
  void SetParams(const float* host) override;
  void GetParams(float* host) override;
  size_t GetGrads(float* host) override;
  // With `host`, backward starts each layer's gradient on its way there as soon as that layer
  // is done, overlapping the layers still to go (StartCopyToHost); GetGrads(host) then waits
  // for those copies.
  void StreamGradientsTo(float* host) override { stream_gradients_to_ = host; }
  HostPin PinHostMemory(absl::Span<float> host) override {
    return backend_->PinHostMemory(host.data(), host.size());
  }
  void AddWeightDecay(float weight_decay) override;
  void ApplyLocalSgd(float learning_rate) override;
  void ApplyLocalNesterov(float learning_rate, float momentum) override;
  void GetVelocity(float* host) override;
  void AddToParams(const float* delta_host, float scale) override;
  absl::Status Synchronize() override { return backend_->Synchronize(); }
  BatchResult ComputeGradients(const float* x_host, const float* targets_host, int rows) override;
  // On a backend with separate memory: the batch goes up on the backend's copy stream during
  // the next ComputeGradients (StartCopyToDevice), into buffers of its own that the
  // ComputeGradients taking it copies from on the device.
  bool prefetches_batches() const override { return backend_->separate_memory(); }
  void PrefetchBatch(const float* x_host, const float* targets_host, int rows) override {
    to_prefetch_ = {x_host, targets_host, rows};
  }
  // Holds the rows on a backend with separate memory (there is room for fewer than
  // kMaxGatherRows rows); gathers each batch there.
  bool HoldRows(absl::Span<const float> features, absl::Span<const float> targets,
                size_t budget_bytes) override;
  BatchResult ComputeGradientsOnHeld(absl::Span<const uint32_t> rows) override;
  BatchResult Evaluate(const float* x_host, const float* targets_host, int rows) override;
  void set_batch_seed(uint64_t seed) override { batch_seed_ = seed; }

 private:
  Model(const ModelSpec& spec, ComputeBackend* backend);
  void EnsureWorkspace(int rows);
  // A batch in host memory, as PrefetchBatch names it.
  struct HostBatch {
    const float* x = nullptr;
    const float* targets = nullptr;
    int rows = 0;
    bool operator==(const HostBatch& o) const {
      return x == o.x && targets == o.targets && rows == o.rows;
    }
  };
  // The batch into activations_[0] and targets_: uploaded, copied from where it was
  // prefetched, or gathered from the held rows.
  void UploadBatch(const float* x_host, const float* targets_host, int rows);
  void TakeBatch(const HostBatch& batch);
  void GatherBatch(absl::Span<const uint32_t> rows);
  // Starts uploading the batch PrefetchBatch named, if any, into prefetched_x_ and _targets_.
  void StartPrefetch();
  // Queues the forward pass and the loss over the batch in activations_[0] and targets_.
  void Forward(int rows, bool training);
  // The loss Forward queued, once the work queued before has run (after backward, so that
  // nothing waits mid-step).
  BatchResult ReadLoss(int rows);
  // Backward after Forward; with `stream`, each layer's gradient starts for where
  // StreamGradientsTo said.
  void Backward(int rows, bool stream);
  // A training step's forward and backward over the batch already in place: replayed as the
  // graph the backend recorded for this batch size (ComputeBackend::BeginGraph) at the second
  // step of that size (the first allocates what the step needs), without streaming the
  // gradient; or, where the backend has no graphs or the model draws random numbers per batch
  // (dropout), run call by call.
  void TrainStep(int rows);
  bool RunAsGraph(int rows);
  // Forgets every graph (the buffers they use are about to change).
  void DropGraphs();
  int target_cols() const;

  std::unique_ptr<ComputeBackend> owned_backend_;  // first: it outlives the buffers
  const ModelSpec spec_;
  ComputeBackend* const backend_;  // owned_backend_ or borrowed
  // layer_spec_index_[i]: layers_[i]'s index in ModelLayers(spec_), which seeds its dropout.
  // Before layers_: BuildLayers fills it.
  std::vector<size_t> layer_spec_index_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<ParamTensor> tensors_;
  // layer_params_[i]: where layer i's parameters (and gradients) lie in the flat vector.
  struct Range {
    size_t offset = 0;
    size_t size = 0;
  };
  std::vector<Range> layer_params_;
  float* stream_gradients_to_ = nullptr;
  bool graphs_possible_ = false;  // no dropout, and the backend has not refused a graph
  std::set<int> stepped_rows_;    // batch sizes trained once since the last DropGraphs
  std::map<int, int> graphs_;     // batch size -> the backend's graph
  int64_t graphed_steps_ = 0;
  int64_t prefetched_batches_ = 0;
  uint64_t batch_seed_ = 0;
  size_t num_params_ = 0;
  size_t num_state_ = 0;
  DeviceBuffer params_;  // the flat vector: trained tensors, then state
  DeviceBuffer grads_;
  DeviceBuffer velocity_;  // allocated by the first ApplyLocalNesterov / GetVelocity
  DeviceBuffer delta_;     // staging for AddToParams
  // activations_[0] is the input batch, activations_[i + 1] the output of layer i.
  std::vector<DeviceBuffer> activations_;
  DeviceBuffer targets_;
  DeviceBuffer loss_grad_;
  DeviceBuffer loss_;  // kLossFloats: what the loss method writes
  // HoldRows': the shard's features and targets; a batch's row numbers (as floats) and their
  // host copy.
  DeviceBuffer held_features_, held_targets_, batch_rows_;
  std::vector<float> batch_rows_host_;
  DeviceBuffer scratch_[2];  // ping-pong dL/d(activation) buffers for Backward
  HostBatch to_prefetch_;    // PrefetchBatch's, not started yet
  HostBatch prefetched_;     // started into these:
  DeviceBuffer prefetched_x_, prefetched_targets_;
  int workspace_rows_ = 0;
};

inline constexpr NamedValue<ModelType> kModelTypeValues[] = {
    {ModelType::kLinearRegression, "linear_regression"},
    {ModelType::kSoftmaxRegression, "softmax_regression"},
    {ModelType::kMlp, "mlp"},
    {ModelType::kLayers, "layers"},
    {ModelType::kProgram, "program"}};
inline constexpr EnumNames<ModelType> kModelTypeNames{"model type", kModelTypeValues};

inline constexpr NamedValue<Activation> kActivationValues[] = {
#define MONSOON_ACTIVATION_NAME(kind, name, meaning) {Activation::kind, name},
    MONSOON_ACTIVATIONS(MONSOON_ACTIVATION_NAME)
#undef MONSOON_ACTIVATION_NAME
};
inline constexpr EnumNames<Activation> kActivationNames{"activation", kActivationValues};

inline constexpr NamedValue<LossType> kLossValues[] = {
    {LossType::kSoftmaxCrossEntropy, "softmax_cross_entropy"},
    {LossType::kMeanSquaredError, "mean_squared_error"}};
inline constexpr EnumNames<LossType> kLossNames{"loss", kLossValues};

}  // namespace monsoon

#endif  // MONSOON_CORE_MODEL_MODEL_H_
