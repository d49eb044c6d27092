// The run directory's layout and the servers' address rendezvous built on it (the job token:
// core/run/job_secrets.h). On a cluster the run directory is on a shared file system.
//
//   RUN_DIR/config.yaml            resolved job config (every role reads it)
//   RUN_DIR/token                  per-job secret, mode 0600 (or $MONSOON_JOB_TOKEN)
//   RUN_DIR/run_id                 the run's random identity (16 hex digits), stamped into
//                                  its checkpoints so that no other run's are taken
//   RUN_DIR/initial_params.bin     a worker program's initial weights (model.type: program),
//                                  raw little-endian float32 in its flat layout
//   RUN_DIR/initial_state_size     how many of them are its state (a decimal count)
//   RUN_DIR/initial_manifest       their tensors, one line each in the flat layout's order
//                                  ("0.weight (10, 784)"), where the program names them
//   RUN_DIR/checkpoints/server-J/  server J's checkpoints (core/run/checkpoint_file.h)
//   RUN_DIR/rendezvous/server-J    "host:port" of server J, published atomically
//   RUN_DIR/rendezvous/finished-server-J   server J has finished training (cleared on resume)
//   RUN_DIR/metrics/*.csv          per-role metrics (worker-I, server-J, evaluator) and each
//                                  server's staleness-server-J and ledger-server-J tables
//   RUN_DIR/logs/*.log             per-role logs
//   RUN_DIR/logs/*.exit            per-role exit records (core/exit_status.h)
//   RUN_DIR/tensorboard/ROLE/      per-role TensorBoard event files (worker-I, server-J,
//                                  evaluator): the metrics CSVs' rows as scalars
//   RUN_DIR/trace/*.jsonl          per-role trace events, merged into RUN_DIR/trace.json
#ifndef MONSOON_CORE_RUN_RUN_DIR_H_
#define MONSOON_CORE_RUN_RUN_DIR_H_

#include <atomic>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/file_util.h"

namespace monsoon {

struct RunDir {
  std::string root;

  std::string config_path() const { return root + "/config.yaml"; }
  std::string token_path() const { return root + "/token"; }
  std::string run_id_path() const { return root + "/run_id"; }
  std::string rendezvous_dir() const { return root + "/rendezvous"; }
  std::string rendezvous_path(int server) const {
    return rendezvous_dir() + "/server-" + std::to_string(server);
  }
  std::string finished_path(int server) const {
    return rendezvous_dir() + "/finished-server-" + std::to_string(server);
  }
  // Where node `node`'s pusher says where its shared segment is (worker/node_aggregation.h).
  std::string node_path(int node) const {
    return rendezvous_dir() + "/node-" + std::to_string(node);
  }
  std::string metrics_dir() const { return root + "/metrics"; }
  std::string worker_metrics_path(int worker) const { return MetricsFile("worker-", worker); }
  std::string server_metrics_path(int server) const { return MetricsFile("server-", server); }
  std::string evaluator_metrics_path() const { return metrics_dir() + "/evaluator.csv"; }
  std::string staleness_path(int server) const { return MetricsFile("staleness-server-", server); }
  std::string ledger_path(int server) const { return MetricsFile("ledger-server-", server); }
  std::string logs_dir() const { return root + "/logs"; }
  std::string trace_dir() const { return root + "/trace"; }
  std::string trace_path() const { return root + "/trace.json"; }
  std::string summary_path() const { return root + "/summary.json"; }
  std::string params_path() const { return root + "/params.bin"; }
  // Where role `role` ("worker-0", "server-1", "evaluator") writes its event files.
  std::string tensorboard_dir(const std::string& role) const {
    return root + "/tensorboard/" + role;
  }
  std::string initial_params_path() const { return root + "/initial_params.bin"; }
  std::string initial_state_size_path() const { return root + "/initial_state_size"; }
  std::string initial_manifest_path() const { return root + "/initial_manifest"; }
  std::string checkpoint_dir(int server) const {
    return root + "/checkpoints/server-" + std::to_string(server);
  }

  // Creates the directory tree (idempotent).
  absl::Status Create() const;

 private:
  std::string MetricsFile(const char* prefix, int index) const {
    return metrics_dir() + "/" + prefix + std::to_string(index) + ".csv";
  }
};

// Gives a new run its random identity (RUN_DIR/run_id).
absl::Status CreateRunId(const RunDir& dir);
// The run's identity; NotFound (naming the file) for a run without one.
absl::StatusOr<uint64_t> ReadRunId(const RunDir& dir);

// The tensors of a worker program's model as its init run listed them (initial_manifest), one
// string each; empty when it listed none.
std::vector<std::string> ReadInitialManifest(const RunDir& dir);

// Marks server `index` as finished: training ended and its final checkpoint is written.
absl::Status MarkServerFinished(const RunDir& dir, int index);
// Whether all `servers` servers of the run have finished.
bool ServersFinished(const RunDir& dir, int servers);

// Publishes server `index`'s address.
absl::Status PublishServerAddress(const RunDir& dir, int index, const std::string& address);

// The address server `index` published; NotFound until it has.
absl::StatusOr<std::string> ReadServerAddress(const RunDir& dir, int index);

// Waits until all `count` servers have published, polling; DeadlineExceeded after `timeout`
// names the servers still missing; Cancelled when *stop becomes true.
absl::StatusOr<std::vector<std::string>> WaitForServerAddresses(const RunDir& dir, int count,
                                                                absl::Duration timeout,
                                                                const std::atomic<bool>* stop);

}  // namespace monsoon

#endif  // MONSOON_CORE_RUN_RUN_DIR_H_
