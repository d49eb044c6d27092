#include "worker/downpour_worker.h"

#include <algorithm>

#include "absl/time/clock.h"
#include "core/status_macros.h"

namespace monsoon {

const std::vector<std::string>& WorkerMetricsColumns() {
  static const auto* columns = new std::vector<std::string>{
      "step",       "wall_seconds",   "epoch",  "loss", "samples_per_second",
      "bytes_sent", "bytes_received", "version"};
  return *columns;
}

absl::StatusOr<WorkerReport> DownpourWorker::Run(const std::atomic<bool>* stop) {
  absl::StatusOr<WorkerReport> report = Train(stop);
  // Once a stop is requested, servers shut down too: an RPC failing now is the stop's doing.
  if (!report.ok() && stop != nullptr && stop->load()) {
    return absl::CancelledError("worker stopped by signal");
  }
  return report;
}

absl::StatusOr<WorkerReport> DownpourWorker::Train(const std::atomic<bool>* stop) {
  const size_t n = model_->num_params();
  std::vector<float> params(n), grads(n), accumulated(n, 0.0f);
  std::vector<float> x, y;
  const absl::Time start = absl::Now();
  WorkerReport report;
  uint64_t version = 0;
  int since_push = 0;
  while (shard_->progress() < training_.epochs) {
    if (stop != nullptr && stop->load()) return absl::CancelledError("worker stopped by signal");
    if (report.steps % downpour_.n_fetch == 0) {
      MONSOON_ASSIGN_OR_RETURN(version, client_->PullAll(absl::MakeSpan(params)));
      model_->SetParams(params.data());
    }
    const int rows = shard_->NextBatch(training_.batch_size, &x, &y);
    const BatchResult batch = model_->ComputeGradients(x.data(), y.data(), rows);
    model_->GetGrads(grads.data());
    MONSOON_RETURN_IF_ERROR(model_->Synchronize());
    for (size_t i = 0; i < n; ++i) accumulated[i] += grads[i];
    if (downpour_.local_learning_rate > 0) {
      model_->ApplyLocalSgd(static_cast<float>(downpour_.local_learning_rate));
    }
    ++report.steps;
    report.samples += rows;
    report.last_loss = batch.loss_sum / rows;
    if (++since_push == downpour_.n_push) {
      MONSOON_RETURN_IF_ERROR(client_->PushAll(accumulated, version));
      std::fill(accumulated.begin(), accumulated.end(), 0.0f);
      since_push = 0;
    }
    if (metrics_ != nullptr) {
      const double elapsed = absl::ToDoubleSeconds(absl::Now() - start);
      const TransferCounters io = client_->counters();
      MONSOON_RETURN_IF_ERROR(metrics_->Append(
          {static_cast<double>(report.steps), elapsed, shard_->progress(), report.last_loss,
           report.samples / std::max(elapsed, 1e-9), static_cast<double>(io.bytes_sent),
           static_cast<double>(io.bytes_received), static_cast<double>(version)}));
    }
  }
  if (since_push > 0) MONSOON_RETURN_IF_ERROR(client_->PushAll(accumulated, version));
  MONSOON_RETURN_IF_ERROR(client_->Finish());
  report.wall_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  return report;
}

}  // namespace monsoon
