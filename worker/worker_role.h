// Entry points of the worker and evaluator roles: load data (core/job/job_data.h), build the
// model, find the servers through the run directory, and run the training loop or the
// evaluator.
#ifndef MONSOON_WORKER_WORKER_ROLE_H_
#define MONSOON_WORKER_WORKER_ROLE_H_

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/config/job_config.h"
#include "core/data/data_shard.h"
#include "core/data/data_source.h"
#include "core/data/dataset.h"
#include "core/model/trainable_model.h"
#include "core/run/run_dir.h"
#include "worker/grpc_ps_client.h"

namespace monsoon {

// Builds the model a worker or evaluator role trains or scores; `gpu` is the CUDA device the
// launcher gave the task (< 0: none).
using ModelFactory =
    std::function<absl::StatusOr<std::unique_ptr<TrainableModel>>(const JobConfig&, int gpu)>;
// Monsoon's own model of config.model, on the backend compute.device asks for (see
// compute_backends.h; an `auto` fallback is logged).
absl::StatusOr<std::unique_ptr<TrainableModel>> NativeModel(const JobConfig& config, int gpu);

// The job's client for `identity`: waits for the servers' addresses in the run directory
// (within transport.rendezvous_timeout_seconds; Cancelled when *stop becomes true) and connects
// with the job's secrets and transport settings. With cluster.aggregate_per_node a worker
// pushes through its node (worker/node_aggregation.h): the node's first worker connects as
// the node's client and serves the others, which reach only it.
absl::StatusOr<std::unique_ptr<PsClient>> ConnectToServers(const JobConfig& config,
                                                           const RunDir& run_dir,
                                                           ClientIdentity identity,
                                                           const std::atomic<bool>* stop);

// Trains worker `index`'s shard; writes RUN_DIR/metrics/worker-INDEX.csv.
absl::Status RunWorkerRole(const JobConfig& config, const RunDir& run_dir, int index, int gpu,
                           const std::atomic<bool>* stop,
                           const ModelFactory& make_model = NativeModel);

// Scores the server weights on the test set until the workers finish; writes
// RUN_DIR/metrics/evaluator.csv (its last row is the final result) and RUN_DIR/params.bin
// (the final weights as raw little-endian float32 in the model's flat layout).
absl::Status RunEvaluatorRole(const JobConfig& config, const RunDir& run_dir, int gpu,
                              const std::atomic<bool>* stop,
                              const ModelFactory& make_model = NativeModel);

}  // namespace monsoon

#endif  // MONSOON_WORKER_WORKER_ROLE_H_
