#include "worker/training_worker.h"

#include <glog/logging.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/compression.h"
#include "core/compute/kernel_math.h"
#include "core/config/derived_values.h"
#include "core/exit_status.h"
#include "core/finite.h"
#include "core/status_macros.h"

namespace monsoon {
namespace {

// A gradient or weights the model made non-finite (CheckFinite's refusal), with its usual
// causes, marked diverged; the refusal's payload is kept.
absl::Status WithDivergenceCauses(const absl::Status& refused) {
  return MarkDiverged(
      Reworded(refused, absl::StrCat(refused.message(), ": training diverged (",
                                     kDivergenceRemedies, "), or the data holds a NaN or an infinity")));
}

}  // namespace

const std::vector<std::string>& WorkerTraceThreads() {
  static const auto* threads =
      new std::vector<std::string>{"training loop", "overlapped transfers"};
  return *threads;
}

TrainingWorker::TrainingWorker(const JobConfig& config, int index, TrainableModel* model,
                               DataShard* shard, PsClient* client, WorkerMetricsRecorder* metrics,
                               TraceWriter* trace, const Clock& clock,
                               std::optional<StateLayout> state)
    : rules_(WorkerRules::FromConfig(config)),
      state_(state.has_value() ? *std::move(state)
                               : StateLayout::ForModel(config.model, config.model.state_bound)),
      index_(index),
      model_(model),
      shard_(shard),
      batches_(shard, model, rules_.batch_size),
      client_(client),
      metrics_(metrics),
      trace_(trace),
      clock_(clock),
      earlier_(metrics != nullptr ? metrics->earlier() : WorkerTotals{}),
      stall_watch_(absl::StrCat("worker-", index), rules_.stall_seconds,
                   rules_.first_step_seconds) {}

absl::StatusOr<WorkerReport> TrainingWorker::Run(const std::atomic<bool>* stop) {
  start_ = clock_.Now() - absl::Seconds(earlier_.wall_seconds);
  PlaceShard();
  absl::StatusOr<WorkerReport> report =
      PushesGradients(rules_.algorithm) ? TrainPushingGradients(stop) : TrainElastic(stop);
  if (report.ok() && model_->trained_by_own_loop()) {
    const absl::Status enough = CheckOwnLoopSteps(*report);
    if (!enough.ok()) report = enough;
  }
  if (report.ok()) {
    const absl::Status finished = client_->Finish();
    if (!finished.ok()) report = finished;
  }
  if (!report.ok() && IsNonFiniteRefusal(report.status())) {
    report = WithDivergenceCauses(report.status());
  }
  // The metrics' clock where there are metrics, so that the report's time follows their rows'.
  if (report.ok()) {
    report->wall_seconds = metrics_ != nullptr ? metrics_->wall_seconds()
                                               : absl::ToDoubleSeconds(clock_.Now() - start_);
  }
  return report;
}

void TrainingWorker::PlaceShard() {
  if (!shard_->streamed()) {
    const Dataset& rows = shard_->held();
    held_by_model_ = model_->HoldRows(rows.features, rows.targets, rules_.model_data_bytes);
  }
  if (!model_->prefetches_batches()) return;
  LOG(INFO) << "worker " << index_ << ": "
            << (held_by_model_ ? "its shard is held on the device, each batch gathered there"
                : shard_->streamed()
                    ? "its shard is streamed from its files, each batch uploaded a step ahead"
                    : "its shard is over compute.gpu_data_mib, each batch uploaded a step ahead");
}

absl::Status TrainingWorker::ResumeFrom(const ResumePoint& resume, WorkerReport* report) {
  report->samples = earlier_.samples;
  report->comm_seconds = earlier_.comm_seconds;
  report->emulated_delay_seconds = earlier_.emulated_delay_seconds;
  if (resume.sequence == 0) return absl::OkStatus();
  // A node's members resume at their pusher's position, within their own shards (which hold
  // as many examples as its, or one fewer).
  DataPosition position = resume.position;
  position.cursor = std::min<uint64_t>(position.cursor, shard_->size());
  MONSOON_RETURN_IF_ERROR(batches_.Seek(position));
  report->steps = resume.position.step;
  report->pushes = static_cast<int64_t>(resume.sequence);
  resumed_after_ = resume.sequence;
  first_step_ = report->steps;
  LOG(INFO) << "worker " << index_ << " resumes after push " << resume.sequence << ": step "
            << position.step << ", epoch " << position.epoch << ", example " << position.cursor
            << " of its shard";
  return absl::OkStatus();
}

PushOrigin TrainingWorker::NextOrigin(const WorkerReport& report) const {
  PushOrigin origin;
  origin.sequence = static_cast<uint64_t>(report.pushes) + 1;
  origin.position = batches_.Position(report.steps);
  origin.epoch = batches_.progress();
  return origin;  // the client adds its incarnation
}

void TrainingWorker::TraceStep(const WorkerReport& report) {
  step_trace_ = report.steps - first_step_ < rules_.trace_steps ? trace_ : nullptr;
}

TraceScope TrainingWorker::ComputeSpan(const WorkerReport& report) const {
  if (step_trace_ == nullptr) return TraceScope(nullptr, kTraceLoop, "compute");
  return TraceScope(step_trace_, kTraceLoop, "compute",
                    {{"step", static_cast<double>(report.steps)}});
}

template <typename Call>
auto TrainingWorker::Timed(WorkerReport* report, std::string_view name, Call call)
    -> decltype(call()) {
  TraceScope span(step_trace_, kTraceLoop, name);
  const absl::Time start = clock_.Now();
  auto result = call();
  report->comm_seconds += absl::ToDoubleSeconds(clock_.Now() - start);
  return result;
}

float TrainingWorker::RateScale() const { return rules_.learning_rate.Scale(batches_.progress()); }

absl::Status TrainingWorker::CheckOwnLoopSteps(const WorkerReport& report) const {
  if (report.steps == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "worker ", index_, " ended after 0 steps: the training loop never called "
        "DistributedOptimizer.step() (a step of the optimizer it wraps, such as "
        "opt.optimizer.step(), trains nothing on the servers)"));
  }
  const int64_t examples = report.steps * rules_.batch_size;
  if (rules_.max_steps > 0 || 2 * examples >= static_cast<int64_t>(shard_->size())) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "worker ", index_, " ended after ", report.steps, " steps (", examples,
      " examples), less than half of one pass over its shard of ", shard_->size(),
      ": the training loop ended early (a loop that breaks, or a DataLoader over fewer "
      "examples than the job's training data?); for a short run (a dry run), set "
      "training.max_steps"));
}

bool TrainingWorker::Done(const WorkerReport& report) const {
  const bool epochs_done =
      model_->trained_by_own_loop() ? model_->loop_ended() : batches_.progress() >= rules_.epochs;
  return epochs_done || (rules_.max_steps > 0 && report.steps >= rules_.max_steps);
}

absl::StatusOr<HostBatches::Batch> TrainingWorker::NextBatch() {
  if (!held_by_model_) return batches_.Next();
  shard_->NextBatchRows(rules_.batch_size, &batch_rows_);
  return HostBatches::Batch{nullptr, nullptr, static_cast<int>(batch_rows_.size())};
}

absl::Status TrainingWorker::ComputeStep(WorkerReport* report) {
  MONSOON_ASSIGN_OR_RETURN(const HostBatches::Batch next, NextBatch());
  const int rows = next.rows;
  // Dropout masks from (seed, worker, step): a replayed step draws the same ones.
  model_->set_batch_seed(SplitMix64(SplitMix64(rules_.seed, index_), report->steps));
  model_->set_steps_done(report->steps);
  const absl::Time start = clock_.Now();
  const BatchResult batch = held_by_model_ ? model_->ComputeGradientsOnHeld(batch_rows_)
                                           : model_->ComputeGradients(next.x, next.y, rows);
  if (model_->loop_ended()) return absl::OkStatus();
  const bool slow = rules_.stragglers.slow_factor > 1;
  // A slow worker's factor applies to the compute itself, not to its launch on a GPU.
  if (slow) model_->Synchronize().IgnoreError();  // a device error comes back at the next sync
  const double delay =
      StragglerDelaySeconds(rules_.stragglers, rules_.seed, index_, report->steps,
                            absl::ToDoubleSeconds(clock_.Now() - start));
  if (delay > 0) {
    const TraceScope span(step_trace_, kTraceLoop, "emulated delay");
    clock_.SleepFor(absl::Seconds(delay));
    report->emulated_delay_seconds += delay;
  }
  ++report->steps;
  report->samples += rows;
  report->last_loss = batch.loss_sum / rows;
  return absl::OkStatus();
}

absl::Status TrainingWorker::AppendMetrics(const WorkerReport& report, const PullResult& pull,
                                           double staleness) {
  if (metrics_ == nullptr) return absl::OkStatus();
  WorkerMetricsRow row;
  row.step = static_cast<double>(report.steps);
  row.epoch = batches_.progress();
  row.loss = report.last_loss;
  row.version = static_cast<double>(pull.min_version);
  row.clock = static_cast<double>(report.pushes);
  row.slowest_clock = static_cast<double>(pull.slowest_clock);
  row.staleness = staleness;
  row.comm_seconds = report.comm_seconds;
  row.emulated_delay_seconds = report.emulated_delay_seconds;
  row.learning_rate = rules_.base_learning_rate * RateScale();
  return metrics_->Record(row, report.samples, client_->counters());
}

absl::StatusOr<WorkerReport> TrainingWorker::TrainPushingGradients(const std::atomic<bool>* stop) {
  WorkerReport report;
  MONSOON_ASSIGN_OR_RETURN(const ResumePoint resume, client_->Resume());
  MONSOON_RETURN_IF_ERROR(ResumeFrom(resume, &report));
  const PullSchedule schedule(rules_, index_, client_->plan().num_chunks(), resumed_after_);
  const size_t n = model_->num_params();
  std::unique_ptr<TopKSparsifier> topk;
  if (rules_.compression == Compression::kTopk) {
    topk = std::make_unique<TopKSparsifier>(client_->plan(), rules_.topk_fraction);
  }
  PushPipeline pipeline(client_, n, rules_.overlap != Overlap::kNone, std::move(topk));
  PushingState state;
  state.fetched.params.resize(n);
  std::vector<float> scratch(rules_.n_push > 1 ? n : 0);
  std::vector<absl::Span<float>> buffers = pipeline.HostBuffers();
  buffers.push_back(absl::MakeSpan(state.fetched.params));
  buffers.push_back(absl::MakeSpan(scratch));
  const std::vector<HostPin> pins = PinAll(model_, buffers);
  int since_push = 0;
  while (!Done(report)) {
    if (stop != nullptr && stop->load()) return absl::CancelledError("worker stopped by signal");
    TraceStep(report);
    if (schedule.PullsBefore(report.steps)) {
      MONSOON_RETURN_IF_ERROR(Fetch(schedule, &state, &report));
    }
    MONSOON_RETURN_IF_ERROR(ComputeGradients(&pipeline, since_push > 0, &scratch, &report));
    if (model_->loop_ended()) break;
    if (rules_.local_learning_rate > 0) {
      model_->AddWeightDecay(rules_.weight_decay);
      model_->ApplyLocalSgd(rules_.local_learning_rate * RateScale());
    }
    if (++since_push == rules_.n_push) {
      MONSOON_RETURN_IF_ERROR(Push(schedule, &pipeline, &state, &report));
      since_push = 0;
    }
    MONSOON_RETURN_IF_ERROR(AppendMetrics(report, state.pull, state.pushed.mean_staleness));
  }
  if (since_push > 0) MONSOON_RETURN_IF_ERROR(Push(schedule, &pipeline, &state, &report));
  MONSOON_RETURN_IF_ERROR(FinishPush(&pipeline, &state, &report));
  return report;
}

absl::Status TrainingWorker::Fetch(const PullSchedule& schedule, PushingState* state,
                                   WorkerReport* report) {
  FetchedWeights& fetched = state->fetched;
  if (fetched.ready) {
    fetched.ready = false;  // the weights came back with a push
  } else {
    const PullWait wait = schedule.WaitFor(report->steps, state->versions);
    MONSOON_ASSIGN_OR_RETURN(fetched.pull, Timed(report, "pull", [&] {
                               return client_->PullAll(absl::MakeSpan(fetched.params), wait,
                                                       &fetched.versions);
                             }));
  }
  std::swap(state->versions, fetched.versions);
  state->pull = fetched.pull;
  model_->SetParams(fetched.params.data());
  return absl::OkStatus();
}

absl::Status TrainingWorker::ComputeGradients(PushPipeline* pipeline, bool add,
                                              std::vector<float>* scratch, WorkerReport* report) {
  const absl::Span<float> sum = pipeline->accumulator();
  size_t first_non_finite = 0;
  {
    const TraceScope compute = ComputeSpan(*report);
    const StallWatch::Computing computing(&stall_watch_, report->steps);
    // Every step fetches its gradient: on a GPU each layer's starts for the host while
    // backward computes the layers below it.
    float* const grads = add ? scratch->data() : sum.data();
    model_->StreamGradientsTo(grads);
    MONSOON_RETURN_IF_ERROR(ComputeStep(report));
    if (model_->loop_ended()) return absl::OkStatus();  // nothing computed
    first_non_finite = model_->GetGrads(grads);
    MONSOON_RETURN_IF_ERROR(model_->Synchronize());
  }
  if (add) {
    // Gradients add up over the n_push steps; the state pushed is its latest value.
    const size_t trained = sum.size() - model_->num_state();
    first_non_finite = AddFindingNonFinite(scratch->data(), sum.data(), trained);
    const size_t state_first =
        CopyFindingNonFinite(scratch->data() + trained, sum.data() + trained, sum.size() - trained);
    if (first_non_finite == trained) first_non_finite = trained + state_first;
  }
  pipeline->Written(first_non_finite);
  return CheckState(sum);
}

absl::Status TrainingWorker::CheckState(absl::Span<const float> pushed) const {
  const size_t state = model_->num_state();
  if (state == 0) return absl::OkStatus();
  const absl::Status checked = state_.Check(0, pushed.subspan(pushed.size() - state));
  if (checked.ok()) return checked;
  return Reworded(checked, absl::StrCat("worker ", index_, ": ", checked.message(),
                                        "; nothing was pushed"));
}

absl::Status TrainingWorker::Push(const PullSchedule& schedule, PushPipeline* pipeline,
                                  PushingState* state, WorkerReport* report) {
  MONSOON_RETURN_IF_ERROR(FinishPush(pipeline, state, report));
  const PushOrigin origin = NextOrigin(*report);
  ++report->pushes;
  if (rules_.overlap != Overlap::kNone) {
    // The reply is waited for at the next push, n_push steps on: with push_pull it brings the
    // weights for the fetches in the n_push steps after that (Downpour's pulls never wait).
    const bool bring = rules_.overlap == Overlap::kPushPull &&
                       rules_.algorithm == Algorithm::kDownpour && !Done(*report) &&
                       schedule.PullsWithin(report->steps + rules_.n_push, rules_.n_push);
    pipeline->Start(state->versions, origin, bring ? &state->fetched : nullptr, step_trace_);
    return absl::OkStatus();
  }
  // transport.pull_with_push: the reply brings the weights for the next step.
  const bool bring = rules_.pull_with_push && schedule.PullsBefore(report->steps) && !Done(*report);
  MONSOON_ASSIGN_OR_RETURN(state->pushed, Timed(report, bring ? "push+pull" : "push", [&] {
                             pipeline->Start(state->versions, origin,
                                             bring ? &state->fetched : nullptr, nullptr);
                             return pipeline->Wait();
                           }));
  return absl::OkStatus();
}

absl::Status TrainingWorker::FinishPush(PushPipeline* pipeline, PushingState* state,
                                        WorkerReport* report) {
  if (!pipeline->in_flight()) return absl::OkStatus();
  MONSOON_ASSIGN_OR_RETURN(state->pushed,
                           Timed(report, "wait for push", [&] { return pipeline->Wait(); }));
  return absl::OkStatus();
}

absl::StatusOr<WorkerReport> TrainingWorker::TrainElastic(const std::atomic<bool>* stop) {
  WorkerReport report;
  MONSOON_ASSIGN_OR_RETURN(const ResumePoint resume, client_->Resume());
  MONSOON_RETURN_IF_ERROR(ResumeFrom(resume, &report));
  ElasticExchanger exchanger(client_, model_->num_params(), rules_.overlap != Overlap::kNone);
  // Start from the centre.
  MONSOON_ASSIGN_OR_RETURN(PullResult pull, exchanger.PullCentre());
  model_->SetParams(exchanger.weights().data());
  PushSummary exchange;
  int since_exchange = 0;
  while (!Done(report)) {
    if (stop != nullptr && stop->load()) return absl::CancelledError("worker stopped by signal");
    TraceStep(report);
    MONSOON_RETURN_IF_ERROR(LocalStep(&report));
    if (model_->loop_ended()) break;
    // With overlap, the force lands after the first step that ends with its exchange arrived:
    // at least one step late and at most tau (the next exchange waits for it first).
    if (exchanger.in_flight() && exchanger.Arrived()) {
      MONSOON_RETURN_IF_ERROR(FinishExchange(&exchanger, &pull, &exchange, &report));
    }
    if (++since_exchange == rules_.easgd.tau) {
      MONSOON_RETURN_IF_ERROR(Exchange(&exchanger, &pull, &exchange, &report));
      since_exchange = 0;
    }
    MONSOON_RETURN_IF_ERROR(model_->Synchronize());
    MONSOON_RETURN_IF_ERROR(AppendMetrics(report, pull, exchange.mean_staleness));
  }
  // Hand the centre the local steps since the last exchange.
  if (since_exchange > 0) MONSOON_RETURN_IF_ERROR(Exchange(&exchanger, &pull, &exchange, &report));
  MONSOON_RETURN_IF_ERROR(FinishExchange(&exchanger, &pull, &exchange, &report));
  return report;
}

absl::Status TrainingWorker::LocalStep(WorkerReport* report) {
  const TraceScope compute = ComputeSpan(*report);
  const StallWatch::Computing computing(&stall_watch_, report->steps);
  MONSOON_RETURN_IF_ERROR(ComputeStep(report));
  if (model_->loop_ended()) return absl::OkStatus();
  const float eta = static_cast<float>(rules_.easgd.learning_rate) * RateScale();
  model_->AddWeightDecay(rules_.weight_decay);
  if (rules_.algorithm == Algorithm::kEamsgd) {
    model_->ApplyLocalNesterov(eta, static_cast<float>(rules_.easgd.momentum));
  } else {
    model_->ApplyLocalSgd(eta);
  }
  return absl::OkStatus();
}

absl::Status TrainingWorker::Exchange(ElasticExchanger* exchanger, PullResult* pull,
                                      PushSummary* exchange, WorkerReport* report) {
  MONSOON_RETURN_IF_ERROR(FinishExchange(exchanger, pull, exchange, report));
  // x -= alpha (x - centre); with EAMSGD the params hold x + delta v, so x = params - delta v.
  const absl::Span<float> x = exchanger->weights();
  model_->GetParams(x.data());
  if (rules_.algorithm == Algorithm::kEamsgd) {
    velocity_.resize(x.size());
    model_->GetVelocity(velocity_.data());
    const float delta = static_cast<float>(rules_.easgd.momentum);
    for (size_t i = 0; i < x.size(); ++i) x[i] -= delta * velocity_[i];
  }
  MONSOON_RETURN_IF_ERROR(model_->Synchronize());
  MONSOON_RETURN_IF_ERROR(CheckState(x));
  const PushOrigin origin = NextOrigin(*report);
  ++report->pushes;
  if (rules_.overlap != Overlap::kNone) {
    exchanger->Start(origin, step_trace_);
    return absl::OkStatus();
  }
  MONSOON_ASSIGN_OR_RETURN(*exchange, Timed(report, "exchange", [&] {
    exchanger->Start(origin, nullptr);
    return exchanger->Wait();
  }));
  ApplyForce(*exchanger, pull);
  return absl::OkStatus();
}

absl::Status TrainingWorker::FinishExchange(ElasticExchanger* exchanger, PullResult* pull,
                                            PushSummary* exchange, WorkerReport* report) {
  if (!exchanger->in_flight()) return absl::OkStatus();
  MONSOON_ASSIGN_OR_RETURN(*exchange,
                           Timed(report, "wait for exchange", [&] { return exchanger->Wait(); }));
  ApplyForce(*exchanger, pull);
  return absl::OkStatus();
}

void TrainingWorker::ApplyForce(const ElasticExchanger& exchanger, PullResult* pull) {
  model_->AddToParams(exchanger.difference().data(), -1.0f);
  pull->min_version = exchanger.min_version();
}

}  // namespace monsoon
