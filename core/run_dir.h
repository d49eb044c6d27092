// The run directory's layout and the file-based services built on it: the job token and the
// servers' address rendezvous. On a cluster the run directory is on a shared file system.
//
//   RUN_DIR/config.yaml            resolved job config (every role reads it)
//   RUN_DIR/token                  per-job secret, mode 0600
//   RUN_DIR/rendezvous/server-J    "host:port" of server J, published atomically
//   RUN_DIR/metrics/*.csv          per-role metrics
//   RUN_DIR/logs/*.log             per-role logs
#ifndef MONSOON_CORE_RUN_DIR_H_
#define MONSOON_CORE_RUN_DIR_H_

#include <atomic>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace monsoon {

struct RunDir {
  std::string root;

  std::string config_path() const { return root + "/config.yaml"; }
  std::string token_path() const { return root + "/token"; }
  std::string rendezvous_dir() const { return root + "/rendezvous"; }
  std::string metrics_dir() const { return root + "/metrics"; }
  std::string logs_dir() const { return root + "/logs"; }
  std::string summary_path() const { return root + "/summary.json"; }
  std::string final_eval_path() const { return root + "/final_eval.json"; }
  std::string params_path() const { return root + "/params.bin"; }

  // Creates the directory tree (idempotent).
  absl::Status Create() const;
};

// Writes `contents` to `path` via a temporary file and rename, so readers never see a
// partial file.
absl::Status WriteFileAtomically(const std::string& path, const std::string& contents,
                                 int mode = 0644);
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Creates a fresh random token in RUN_DIR/token with mode 0600 and returns it.
absl::StatusOr<std::string> CreateJobToken(const RunDir& dir);
absl::StatusOr<std::string> ReadJobToken(const RunDir& dir);

// Publishes server `index`'s address.
absl::Status PublishServerAddress(const RunDir& dir, int index, const std::string& address);

// Waits until all `count` servers have published, polling; DeadlineExceeded after `timeout`
// names the servers still missing; Cancelled when *stop becomes true.
absl::StatusOr<std::vector<std::string>> WaitForServerAddresses(const RunDir& dir, int count,
                                                                absl::Duration timeout,
                                                                const std::atomic<bool>* stop);

}  // namespace monsoon

#endif  // MONSOON_CORE_RUN_DIR_H_
