// The worker's training loop for every algorithm (README "Comparing algorithms"):
// - downpour: pull the server weights every n_fetch steps, push the gradients' sum every
//   n_push steps (Dean et al. 2012); optional local SGD between fetches and a warm start in
//   which worker 0 trains alone for the first steps.
// - sync: every step, pull the weights once the previous round is applied, push one gradient.
// - ssp: every step, pull once every live worker is at most ssp.bound pushes behind, push.
// - easgd / eamsgd: local SGD (or Nesterov momentum) steps, and every tau steps the elastic
//   exchange with the centre held by the servers.
#ifndef MONSOON_WORKER_TRAINING_WORKER_H_
#define MONSOON_WORKER_TRAINING_WORKER_H_

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "core/config/job_config.h"
#include "core/data/data_shard.h"
#include "core/metrics/metrics.h"
#include "core/metrics/trace.h"
#include "core/model/state_layout.h"
#include "core/model/trainable_model.h"
#include "worker/elastic_exchanger.h"
#include "worker/host_batches.h"
#include "worker/ps_client.h"
#include "worker/pull_schedule.h"
#include "worker/push_pipeline.h"
#include "worker/stall_watch.h"
#include "worker/worker_metrics_recorder.h"
#include "worker/worker_rules.h"

namespace monsoon {

struct WorkerReport {
  int64_t steps = 0;
  int64_t samples = 0;
  int64_t pushes = 0;  // pushes or exchanges: the worker's clock
  double wall_seconds = 0;
  double comm_seconds = 0;  // spent in pulls, pushes and exchanges (waiting included)
  double last_loss = 0;     // mean loss of the last batch
  // Slept on purpose after steps' compute (stragglers emulation); within wall_seconds.
  double emulated_delay_seconds = 0;
};

// The names of a worker's trace threads, indexed by WorkerTraceThread (background_call.h).
const std::vector<std::string>& WorkerTraceThreads();

// Borrows every pointer it is given and keeps only its rules (WorkerRules) of the config.
// One Run per object, on one thread; the pushes or exchanges it overlaps with compute run on
// a thread of their own (PushPipeline, ElasticExchanger), joined before Run returns.
class TrainingWorker {
 public:
  // `metrics` gets a row after every step and carries on the totals this worker's earlier
  // processes in the run left; `trace` gets the first config.trace.steps steps: each one's
  // compute and communication. Times come from `clock` (borrowed).
  // `state`: what each value of the model's state can hold, checked before every push (a
  // push whose state breaks it is refused whole); by default the config's model's
  // (StateLayout::ForModel without a manifest).
  TrainingWorker(const JobConfig& config, int index, TrainableModel* model, DataShard* shard,
                 PsClient* client, WorkerMetricsRecorder* metrics /* nullable */,
                 TraceWriter* trace /* nullable */, const Clock& clock = Clock::System(),
                 std::optional<StateLayout> state = std::nullopt);

  // Continues where the servers last heard from this worker (Resume(): nowhere for a fresh
  // job; after a restart, right after its last push they all have), trains until
  // training.epochs passes over the shard (a model trained by its own loop: until that loop
  // ends) or training.max_steps steps, then tells the servers it has finished. Pushes are numbered 1, 2, ... across restarts.
  // Returns early with Cancelled when *stop becomes true, or with the first RPC or device
  // error (the process's role runner reports one after a stop as the stop's doing). A step
  // whose compute runs past reliability.stall_seconds ends the process (StallWatch).
  absl::StatusOr<WorkerReport> Run(const std::atomic<bool>* stop);

 private:
  // The pushing loop's view of the weights: those it computes with (their versions are each
  // push's base), those fetched for a later step, and the last push's summary.
  struct PushingState {
    ChunkVersions versions;
    PullResult pull;
    FetchedWeights fetched;
    PushSummary pushed;
  };

  absl::StatusOr<WorkerReport> TrainPushingGradients(const std::atomic<bool>* stop);
  absl::StatusOr<WorkerReport> TrainElastic(const std::atomic<bool>* stop);
  // Loads the weights for this step into the model: those a push brought back, else a pull.
  absl::Status Fetch(const PullSchedule& schedule, PushingState* state, WorkerReport* report);
  // One step's gradient into the pipeline's accumulator, or added to it (through `scratch`)
  // when `add`, telling the pipeline what the pass found (Written); nothing when the model's
  // own loop has ended.
  absl::Status ComputeGradients(PushPipeline* pipeline, bool add, std::vector<float>* scratch,
                                WorkerReport* report);
  // Pushes the summed gradients (after waiting for the push in flight).
  absl::Status Push(const PullSchedule& schedule, PushPipeline* pipeline, PushingState* state,
                    WorkerReport* report);
  // Waits for the push in flight, if any (the wait counts as communication time).
  absl::Status FinishPush(PushPipeline* pipeline, PushingState* state, WorkerReport* report);
  // One local SGD (or Nesterov) step of EASGD/EAMSGD.
  absl::Status LocalStep(WorkerReport* report);
  // Sends x (after applying the force in flight, if any); without overlap, applies its force.
  absl::Status Exchange(ElasticExchanger* exchanger, PullResult* pull, PushSummary* exchange,
                        WorkerReport* report);
  // Waits for the exchange in flight, if any, and applies its force: x -= d.
  absl::Status FinishExchange(ElasticExchanger* exchanger, PullResult* pull, PushSummary* exchange,
                              WorkerReport* report);
  void ApplyForce(const ElasticExchanger& exchanger, PullResult* pull);
  // Has the model hold the shard where it can (TrainableModel::HoldRows) and, for a model on a
  // device, logs where the batches come from.
  void PlaceShard();
  // Moves the shard and the report to the servers' resume point, and carries the earlier
  // processes' totals into the report.
  absl::Status ResumeFrom(const ResumePoint& resume, WorkerReport* report);
  // The origin of the push (or exchange) that follows report.pushes earlier ones.
  PushOrigin NextOrigin(const WorkerReport& report) const;
  // True once the worker has trained training.epochs (or training.max_steps).
  bool Done(const WorkerReport& report) const;
  // OK when the model state at the end of `pushed` (its last num_state values) is what its
  // tensors can hold (state_); else state_'s refusal, naming the tensor.
  absl::Status CheckState(absl::Span<const float> pushed) const;
  // For a model trained by its user's loop, once the loop has ended: FailedPrecondition when
  // the worker made no step, or (without training.max_steps) trained fewer examples than half
  // its shard.
  absl::Status CheckOwnLoopSteps(const WorkerReport& report) const;
  // The learning-rate schedule's factor for a local step at the shard's current progress.
  float RateScale() const;
  // The next batch: its row numbers in batch_rows_ where the model holds the shard (no
  // values), else batches_' next.
  absl::StatusOr<HostBatches::Batch> NextBatch();
  // Computes one batch's gradient into the model, then sleeps what the stragglers emulation
  // adds to the step (StragglerDelaySeconds); updates the report.
  absl::Status ComputeStep(WorkerReport* report);
  // Called as each step begins: its pull, compute and push are traced while it is among the
  // first trace_steps of this process.
  void TraceStep(const WorkerReport& report);
  // The span of this step's compute on the loop's thread, with the step number; nothing (and
  // no allocation) when the step is not traced.
  TraceScope ComputeSpan(const WorkerReport& report) const;
  // Runs one call to the servers, adding its duration to report->comm_seconds; traced as
  // `name` (a literal) on the loop's thread.
  template <typename Call>
  auto Timed(WorkerReport* report, std::string_view name, Call call) -> decltype(call());
  absl::Status AppendMetrics(const WorkerReport& report, const PullResult& pull, double staleness);

  const WorkerRules rules_;
  const StateLayout state_;
  const int index_;
  TrainableModel* const model_;
  DataShard* const shard_;
  HostBatches batches_;  // shard_'s batches, and its position as of them
  PsClient* const client_;
  WorkerMetricsRecorder* const metrics_;
  TraceWriter* const trace_;
  const Clock& clock_;
  const WorkerTotals earlier_;  // metrics_'s, or none
  absl::Time start_;  // Run's start, moved back by earlier_.wall_seconds (the clock without metrics)
  int64_t first_step_ = 0;             // the step this process started at
  TraceWriter* step_trace_ = nullptr;  // trace_ while the current step is traced
  uint64_t resumed_after_ = 0;         // pushes already processed when this process started
  bool held_by_model_ = false;         // the model holds the shard's rows (HoldRows)
  std::vector<uint32_t> batch_rows_;   // then: the current batch's row numbers
  std::vector<float> velocity_;        // EAMSGD: the model's velocity at an exchange
  StallWatch stall_watch_;             // over each step's compute
};

}  // namespace monsoon

#endif  // MONSOON_WORKER_TRAINING_WORKER_H_
