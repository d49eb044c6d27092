// The Downpour-SGD worker loop (Dean et al. 2012): fetch the server weights every n_fetch
// steps, compute minibatch gradients on this worker's shard, push their sum every n_push
// steps. With local_learning_rate > 0 the worker also steps its own copy between fetches.
#ifndef MONSOON_WORKER_DOWNPOUR_WORKER_H_
#define MONSOON_WORKER_DOWNPOUR_WORKER_H_

#include <atomic>

#include "absl/status/statusor.h"
#include "core/data_shard.h"
#include "core/job_config.h"
#include "core/metrics.h"
#include "core/model.h"
#include "worker/ps_client.h"

namespace monsoon {

struct WorkerReport {
  int64_t steps = 0;
  int64_t samples = 0;
  double wall_seconds = 0;
  double last_loss = 0;  // mean loss of the last batch
};

// Columns of the per-worker metrics CSV written by DownpourWorker.
const std::vector<std::string>& WorkerMetricsColumns();

// Borrows everything it is given; one Run per object.
class DownpourWorker {
 public:
  DownpourWorker(const TrainingConfig& training, const DownpourConfig& downpour, Model* model,
                 DataShard* shard, PsClient* client, CsvMetricsWriter* metrics /* nullable */)
      : training_(training),
        downpour_(downpour),
        model_(model),
        shard_(shard),
        client_(client),
        metrics_(metrics) {}

  // Trains for training.epochs passes over the shard, then tells the servers it has finished.
  // Returns early with Cancelled when *stop becomes true (also when an RPC fails after that,
  // as servers stop too), or with the first RPC or device error.
  absl::StatusOr<WorkerReport> Run(const std::atomic<bool>* stop);

 private:
  absl::StatusOr<WorkerReport> Train(const std::atomic<bool>* stop);

  const TrainingConfig training_;
  const DownpourConfig downpour_;
  Model* const model_;
  DataShard* const shard_;
  PsClient* const client_;
  CsvMetricsWriter* const metrics_;
};

}  // namespace monsoon

#endif  // MONSOON_WORKER_DOWNPOUR_WORKER_H_
