#include "worker/training_worker.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <iostream>
#include <memory>

#include "absl/time/clock.h"
#include "core/compression.h"
#include "core/status_macros.h"

namespace monsoon {

const std::vector<std::string>& WorkerMetricsColumns() {
  static const auto* columns = new std::vector<std::string>{
      "step",       "wall_seconds",   "epoch",   "loss",  "samples_per_second",
      "bytes_sent", "bytes_received", "version", "clock", "slowest_clock",
      "staleness",  "comm_seconds"};
  return *columns;
}

WorkerTotals WorkerTotals::FromMetricsRow(const MetricsRow& row) {
  WorkerTotals t;
  t.wall_seconds = row.Get("wall_seconds");
  t.samples = std::llround(row.Get("samples_per_second") * t.wall_seconds);
  t.bytes_sent = row.Get("bytes_sent");
  t.bytes_received = row.Get("bytes_received");
  t.comm_seconds = row.Get("comm_seconds");
  return t;
}

const std::vector<std::string>& WorkerTraceThreads() {
  static const auto* threads =
      new std::vector<std::string>{"training loop", "overlapped transfers"};
  return *threads;
}

TrainingWorker::TrainingWorker(const JobConfig& config, int index, Model* model, DataShard* shard,
                               PsClient* client, CsvMetricsWriter* metrics, TraceWriter* trace,
                               const WorkerTotals& earlier)
    : config_(config),
      index_(index),
      model_(model),
      shard_(shard),
      client_(client),
      metrics_(metrics),
      trace_(trace),
      earlier_(earlier) {}

absl::StatusOr<WorkerReport> TrainingWorker::Run(const std::atomic<bool>* stop) {
  start_ = absl::Now() - absl::Seconds(earlier_.wall_seconds);
  absl::StatusOr<WorkerReport> report = PushesGradients(config_.training.algorithm)
                                            ? TrainPushingGradients(stop)
                                            : TrainElastic(stop);
  if (report.ok()) {
    const absl::Status finished = client_->Finish();
    if (!finished.ok()) report = finished;
  }
  if (report.ok()) report->wall_seconds = absl::ToDoubleSeconds(absl::Now() - start_);
  return report;
}

absl::Status TrainingWorker::ResumeFrom(const ResumePoint& resume, WorkerReport* report) {
  report->samples = earlier_.samples;
  report->comm_seconds = earlier_.comm_seconds;
  if (resume.sequence == 0) return absl::OkStatus();
  MONSOON_RETURN_IF_ERROR(shard_->Seek(resume.position));
  report->steps = resume.position.step;
  report->pushes = static_cast<int64_t>(resume.sequence);
  resumed_after_ = resume.sequence;
  first_step_ = report->steps;
  std::cout << "worker " << index_ << " resumes after push " << resume.sequence << ": step "
            << resume.position.step << ", epoch " << resume.position.epoch << ", example "
            << resume.position.cursor << " of its shard" << std::endl;
  return absl::OkStatus();
}

PushOrigin TrainingWorker::NextOrigin(const WorkerReport& report) const {
  PushOrigin origin;
  origin.sequence = static_cast<uint64_t>(report.pushes) + 1;
  origin.position = shard_->Position(report.steps);
  origin.epoch = shard_->progress();
  return origin;  // the client adds its incarnation
}

bool TrainingWorker::PullsBefore(int64_t step) const {
  if (config_.training.algorithm != Algorithm::kDownpour) return true;
  return step % config_.downpour.n_fetch == 0;
}

PullWait TrainingWorker::PullWaitFor(int64_t step, const ChunkVersions& pushed_on) const {
  PullWait wait;
  switch (config_.training.algorithm) {
    case Algorithm::kDownpour: {
      // Warm start: the others wait until worker 0's first warm_start_steps are applied.
      const int warm = config_.downpour.warm_start_steps;
      if (step == 0 && index_ > 0 && warm > 0) {
        const uint64_t pushes = (warm + config_.downpour.n_push - 1) / config_.downpour.n_push;
        wait.min_versions.assign(client_->plan().num_chunks(), pushes);
      }
      break;
    }
    case Algorithm::kSync:
      // Each chunk's round this worker last pushed into must be applied first. Right after a
      // resume (no push yet), wait until every live worker has made as many pushes: the round
      // holding this worker's last push is then closed.
      if (!pushed_on.empty()) {
        wait.min_versions = pushed_on;
        for (uint64_t& v : wait.min_versions) ++v;
      } else if (step > 0) {
        wait.min_clock = resumed_after_;
      }
      break;
    case Algorithm::kSsp: {
      // This worker has pushed `step` times; the slowest may be at most `bound` behind.
      const int64_t bound = config_.ssp.bound;
      if (step > bound) wait.min_clock = static_cast<uint64_t>(step - bound);
      break;
    }
    case Algorithm::kEasgd:
    case Algorithm::kEamsgd:
      break;
  }
  return wait;
}

void TrainingWorker::TraceStep(const WorkerReport& report) {
  step_trace_ = report.steps - first_step_ < config_.trace.steps ? trace_ : nullptr;
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
  const absl::Time start = absl::Now();
  auto result = call();
  report->comm_seconds += absl::ToDoubleSeconds(absl::Now() - start);
  return result;
}

float TrainingWorker::RateScale() const {
  return LearningRateScale(config_.training.learning_rate_schedule, config_.training.epochs,
                           shard_->progress());
}

bool TrainingWorker::Done(const WorkerReport& report) const {
  const int max_steps = config_.training.max_steps;
  return shard_->progress() >= config_.training.epochs ||
         (max_steps > 0 && report.steps >= max_steps);
}

void TrainingWorker::ComputeStep(WorkerReport* report) {
  const int rows = shard_->NextBatch(config_.training.batch_size, &x_, &y_);
  const BatchResult batch = model_->ComputeGradients(x_.data(), y_.data(), rows);
  ++report->steps;
  report->samples += rows;
  report->last_loss = batch.loss_sum / rows;
}

absl::Status TrainingWorker::AppendMetrics(const WorkerReport& report, const PullResult& pull,
                                           double staleness) {
  if (metrics_ == nullptr) return absl::OkStatus();
  const double elapsed = absl::ToDoubleSeconds(absl::Now() - start_);
  const TransferCounters io = client_->counters();
  return metrics_->Append(
      {static_cast<double>(report.steps), elapsed, shard_->progress(), report.last_loss,
       report.samples / std::max(elapsed, 1e-9), earlier_.bytes_sent + io.bytes_sent,
       earlier_.bytes_received + io.bytes_received, static_cast<double>(pull.min_version),
       static_cast<double>(report.pushes), static_cast<double>(pull.slowest_clock), staleness,
       report.comm_seconds});
}

absl::StatusOr<WorkerReport> TrainingWorker::TrainPushingGradients(const std::atomic<bool>* stop) {
  const bool downpour = config_.training.algorithm == Algorithm::kDownpour;
  const int n_push = downpour ? config_.downpour.n_push : 1;
  const float local_rate = downpour ? static_cast<float>(config_.downpour.local_learning_rate) : 0;
  const size_t n = model_->num_params();
  // Every step fetches its gradient: on a GPU each layer's starts for the host while backward
  // computes the layers below it.
  model_->set_stream_gradients(true);
  // `accumulated` sums the gradients since the last push; the first step after a push writes
  // straight into it, later ones (n_push > 1) go through `grads`.
  std::vector<float> params(n), grads(n_push > 1 ? n : 0), accumulated(n);
  // With transport.overlap, one push is in flight while the next step pulls and computes:
  // `sending` holds its gradient (the client borrows it), `in_flight` its result. The servers
  // order a push before any pull that must see it (sync rounds, SSP clocks); Downpour may see
  // it a step later.
  std::vector<float> sending(n);
  // Downpour's pushes may bring the weights for a later fetch step back in their replies
  // (PushPullAll): without overlap (transport.pull_with_push) for the next step, straight into
  // `params`; with overlap push_pull for the steps after the next push, into `incoming` while
  // the worker computes on. Either way they wait in `params`, `fetched_versions` and
  // `fetched_pull` for the fetch step (`pulled_with_push`), so that `versions` and `pull` stay
  // those of the weights the step computes with (each push's base versions, the metrics).
  const bool overlap_push = config_.transport.overlap != Overlap::kNone;
  const bool pull_in_flight = downpour && config_.transport.overlap == Overlap::kPushPull;
  std::vector<float> incoming(pull_in_flight ? n : 0);
  ChunkVersions versions, fetched_versions, incoming_versions;
  PullResult pull, fetched_pull, incoming_pull;
  PushSummary push;
  WorkerReport report;
  bool pulled_with_push = false, pulling_with_push = false;
  // Declared after every buffer the push borrows: an early return waits for it (~future) before
  // they are destroyed.
  std::future<absl::StatusOr<PushSummary>> in_flight;
  // Waits for the push in flight, if any (the wait counts as communication time).
  auto finish_push = [&]() -> absl::Status {
    if (!in_flight.valid()) return absl::OkStatus();
    MONSOON_ASSIGN_OR_RETURN(push,
                             Timed(&report, "wait for push", [&] { return in_flight.get(); }));
    if (pulling_with_push) {
      std::swap(params, incoming);
      std::swap(fetched_versions, incoming_versions);
      fetched_pull = incoming_pull;
      pulled_with_push = true;
      pulling_with_push = false;
    }
    return absl::OkStatus();
  };
  // Whether a step in [first, first + n_push) fetches: the steps that the weights coming back
  // with a push would serve, before the next push brings newer ones.
  auto fetches_within = [&](int64_t first) {
    for (int64_t step = first; step < first + n_push; ++step) {
      if (PullsBefore(step)) return true;
    }
    return false;
  };
  std::unique_ptr<TopKSparsifier> topk;
  if (config_.transport.compression == Compression::kTopk) {
    topk = std::make_unique<TopKSparsifier>(client_->plan(), config_.transport.topk_fraction);
  }
  auto start_push = [&]() -> absl::Status {
    MONSOON_RETURN_IF_ERROR(finish_push());
    std::swap(accumulated, sending);
    if (topk != nullptr) topk->Sparsify(absl::MakeSpan(sending));
    const PushOrigin origin = NextOrigin(report);
    ++report.pushes;
    if (overlap_push) {
      // The reply is waited for at the next push, n_push steps on.
      pulling_with_push = pull_in_flight && !Done(report) && fetches_within(report.steps + n_push);
      in_flight = std::async(std::launch::async, [this, &sending, &incoming, &incoming_versions,
                                                  &incoming_pull, base = versions, origin,
                                                  with_pull = pulling_with_push,
                                                  trace = step_trace_] {
        if (!with_pull) {
          TraceScope span(trace, kTraceOverlapped, "push");
          return client_->PushAll(sending, base, origin);
        }
        TraceScope span(trace, kTraceOverlapped, "push+pull");
        PullAfterPush after{absl::MakeSpan(incoming), &incoming_versions, {}};
        auto summary = client_->PushPullAll(sending, base, origin, &after);
        incoming_pull = after.result;
        return summary;
      });
      return absl::OkStatus();
    }
    if (downpour && config_.transport.pull_with_push && PullsBefore(report.steps) &&
        !Done(report)) {
      PullAfterPush after{absl::MakeSpan(params), &fetched_versions, {}};
      MONSOON_ASSIGN_OR_RETURN(push, Timed(&report, "push+pull", [&] {
                                 return client_->PushPullAll(sending, versions, origin, &after);
                               }));
      fetched_pull = after.result;
      pulled_with_push = true;
      return absl::OkStatus();
    }
    MONSOON_ASSIGN_OR_RETURN(
        push, Timed(&report, "push", [&] { return client_->PushAll(sending, versions, origin); }));
    return absl::OkStatus();
  };
  int since_push = 0;
  MONSOON_ASSIGN_OR_RETURN(const ResumePoint resume, client_->Resume());
  MONSOON_RETURN_IF_ERROR(ResumeFrom(resume, &report));
  while (!Done(report)) {
    if (stop != nullptr && stop->load()) return absl::CancelledError("worker stopped by signal");
    TraceStep(report);
    if (PullsBefore(report.steps)) {
      if (pulled_with_push) {
        pulled_with_push = false;  // the weights came back with a push
        std::swap(versions, fetched_versions);
        pull = fetched_pull;
      } else {
        MONSOON_ASSIGN_OR_RETURN(pull, Timed(&report, "pull", [&] {
                                   return client_->PullAll(absl::MakeSpan(params),
                                                           PullWaitFor(report.steps, versions),
                                                           &versions);
                                 }));
      }
      model_->SetParams(params.data());
    }
    {
      const TraceScope compute = ComputeSpan(report);
      ComputeStep(&report);
      model_->GetGrads(since_push == 0 ? accumulated.data() : grads.data());
      MONSOON_RETURN_IF_ERROR(model_->Synchronize());
    }
    if (since_push > 0) {
      for (size_t i = 0; i < n; ++i) accumulated[i] += grads[i];
    }
    if (local_rate > 0) model_->ApplyLocalSgd(local_rate * RateScale());
    if (++since_push == n_push) {
      MONSOON_RETURN_IF_ERROR(start_push());
      since_push = 0;
    }
    MONSOON_RETURN_IF_ERROR(AppendMetrics(report, pull, push.mean_staleness));
  }
  if (since_push > 0) MONSOON_RETURN_IF_ERROR(start_push());
  MONSOON_RETURN_IF_ERROR(finish_push());
  return report;
}

absl::StatusOr<WorkerReport> TrainingWorker::TrainElastic(const std::atomic<bool>* stop) {
  const bool nesterov = config_.training.algorithm == Algorithm::kEamsgd;
  const float eta = static_cast<float>(config_.easgd.learning_rate);
  const float delta = static_cast<float>(config_.easgd.momentum);
  const size_t n = model_->num_params();
  std::vector<float> weights(n), difference(n), velocity(nesterov ? n : 0);
  ChunkVersions versions;
  WorkerReport report;
  MONSOON_ASSIGN_OR_RETURN(const ResumePoint resume, client_->Resume());
  MONSOON_RETURN_IF_ERROR(ResumeFrom(resume, &report));
  // Start from the centre.
  MONSOON_ASSIGN_OR_RETURN(PullResult pull,
                           client_->PullAll(absl::MakeSpan(weights), {}, &versions));
  model_->SetParams(weights.data());
  PushSummary exchange;
  // The exchange in flight: it sends `weights` (x at its step) and receives d into
  // `difference`. Without transport.overlap it completes at once; with it, the worker goes on
  // computing and applies x -= d after the first step that ends with d arrived: the force is
  // at least one step late and at most tau (the next exchange waits for it first).
  const bool overlap = config_.transport.overlap != Overlap::kNone;
  std::future<absl::StatusOr<PushSummary>> exchanging;
  auto finish_exchange = [&]() -> absl::Status {
    if (!exchanging.valid()) return absl::OkStatus();
    MONSOON_ASSIGN_OR_RETURN(exchange, Timed(&report, overlap ? "wait for exchange" : "exchange",
                                             [&] { return exchanging.get(); }));
    model_->AddToParams(difference.data(), -1.0f);
    pull.min_version = *std::min_element(versions.begin(), versions.end());
    return absl::OkStatus();
  };
  // x -= alpha (x - centre); with EAMSGD the params hold x + delta v, so x = params - delta v.
  auto start_exchange = [&]() -> absl::Status {
    MONSOON_RETURN_IF_ERROR(finish_exchange());
    model_->GetParams(weights.data());
    if (nesterov) {
      model_->GetVelocity(velocity.data());
      for (size_t i = 0; i < n; ++i) weights[i] -= delta * velocity[i];
    }
    MONSOON_RETURN_IF_ERROR(model_->Synchronize());
    exchanging = std::async(overlap ? std::launch::async : std::launch::deferred,
                            [this, &weights, &difference, &versions, origin = NextOrigin(report),
                             trace = overlap ? step_trace_ : nullptr] {
                              TraceScope span(trace, kTraceOverlapped, "exchange");
                              return client_->ExchangeAll(weights, absl::MakeSpan(difference),
                                                          &versions, origin);
                            });
    ++report.pushes;
    return overlap ? absl::OkStatus() : finish_exchange();
  };
  int since_exchange = 0;
  while (!Done(report)) {
    if (stop != nullptr && stop->load()) return absl::CancelledError("worker stopped by signal");
    TraceStep(report);
    {
      const TraceScope compute = ComputeSpan(report);
      ComputeStep(&report);
      if (nesterov) {
        model_->ApplyLocalNesterov(eta * RateScale(), delta);
      } else {
        model_->ApplyLocalSgd(eta * RateScale());
      }
    }
    if (exchanging.valid() &&
        exchanging.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      MONSOON_RETURN_IF_ERROR(finish_exchange());
    }
    if (++since_exchange == config_.easgd.tau) {
      MONSOON_RETURN_IF_ERROR(start_exchange());
      since_exchange = 0;
    }
    MONSOON_RETURN_IF_ERROR(model_->Synchronize());
    MONSOON_RETURN_IF_ERROR(AppendMetrics(report, pull, exchange.mean_staleness));
  }
  // Hand the centre the local steps since the last exchange.
  if (since_exchange > 0) MONSOON_RETURN_IF_ERROR(start_exchange());
  MONSOON_RETURN_IF_ERROR(finish_exchange());
  return report;
}

}  // namespace monsoon
