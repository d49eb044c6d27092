// monsoon.Client: Monsoon's client (GrpcPsClient, or a node's NodePusher or NodeMember in a
// job) for push and pull by hand, speaking for one worker.
#ifndef MONSOON_PYTHON_CLIENT_H_
#define MONSOON_PYTHON_CLIENT_H_

#include <pybind11/pybind11.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "worker/grpc_ps_client.h"
#include "worker/worker_metrics_recorder.h"

namespace monsoon {

// Arrays cross without copies: a pull writes into the caller's array, a push reads from it.
// Pushes and exchanges are numbered (exactly-once), continuing after the last one the servers
// have from this worker; a push is computed on the weights of the last pull.
//
// Thread-safe: calls from several Python threads take turns, one call to the servers at a
// time per client. A call holds the client, not the GIL, while it talks to the servers, so
// other Python threads run meanwhile; the arrays a call was given must stay unchanged until
// it returns.
class Client {
 public:
  explicit Client(std::unique_ptr<PsClient> client);

  // To the servers at `servers` ("host:port", server j holding the plan's chunks of j), for a
  // model whose last num_state values are state.
  static std::unique_ptr<Client> Connect(const std::vector<std::string>& servers, size_t num_params,
                                         const std::string& token, size_t chunk_floats,
                                         int max_in_flight, int index, size_t num_state);
  // To the servers of the job that started this program, as its worker, with the job's
  // secrets and transport settings; `stop` (set by a stop signal) ends its wait for them.
  static std::unique_ptr<Client> FromJob(const std::atomic<bool>* stop);

  size_t num_params() const { return num_params_; }

  // Overwrites `params` with the servers' weights, each chunk once its version reaches
  // min_version and every live worker has pushed it min_clock times (sync and SSP wait so);
  // returns the smallest chunk version.
  uint64_t Pull(pybind11::handle params, uint64_t min_version, uint64_t min_clock);
  // The elastic exchange (easgd, eamsgd): sends `weights`, writes the elastic differences
  // alpha (x - centre) into `difference`; returns the mean staleness.
  double Exchange(pybind11::handle weights, pybind11::handle difference);
  // Pushes `gradient`, computed on the weights of the last pull; returns the mean staleness.
  double Push(pybind11::handle gradient);
  // A row of the worker's metrics CSV (and TensorBoard scalars), as Monsoon's own workers write
  // after every step (WorkerMetricsRecorder, carrying on a restarted worker's totals): the
  // caller's step, loss, samples in this step and epoch, with the client's counters.
  void Report(int64_t step, double loss, int64_t samples, double epoch);
  // Tells the servers this worker has finished; the client takes no call after it.
  void Finish();

 private:
  // `what`'s data: a float32 array of num_params() values; ValueError naming it otherwise.
  float* Array(pybind11::handle array, const char* what) const;
  // Runs `call` without the GIL, holding the client, unless it has finished; counts its time.
  template <class Call>
  auto Locked(Call call) -> decltype(call());
  // Runs `send` (a push or exchange) with the next sequence number, which it consumes unless
  // the client refused it before sending anything. Called under mu_.
  template <class Send>
  absl::StatusOr<PushSummary> Numbered(Send send) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::unique_ptr<PsClient> client_;
  const size_t num_params_;
  std::unique_ptr<WorkerMetricsRecorder> metrics_;  // from_job's
  double base_learning_rate_ = 0;                   // from_job's: the job's, for report's rows
  LearningRatePlan plan_;                           // from_job's

  absl::Mutex mu_;
  double comm_seconds_ ABSL_GUARDED_BY(mu_) = 0;  // in calls to the servers
  PullResult last_pull_ ABSL_GUARDED_BY(mu_);
  double last_staleness_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t samples_ ABSL_GUARDED_BY(mu_) = 0;            // reported by this process
  ChunkVersions versions_ ABSL_GUARDED_BY(mu_);           // what the last pull saw
  ChunkVersions exchange_versions_ ABSL_GUARDED_BY(mu_);  // each chunk's at the last exchange
  PushOrigin origin_ ABSL_GUARDED_BY(mu_);
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace monsoon

#endif  // MONSOON_PYTHON_CLIENT_H_
