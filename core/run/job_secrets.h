// The job's secrets: the token every RPC carries (RUN_DIR/token, mode 0600, or
// $MONSOON_JOB_TOKEN) and the TLS material security.tls_* names. Random bytes, the
// constant-time comparison and file digests come from OpenSSL.
#ifndef MONSOON_CORE_RUN_JOB_SECRETS_H_
#define MONSOON_CORE_RUN_JOB_SECRETS_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/config/job_config.h"
#include "core/run/run_dir.h"

namespace monsoon {

// The job token can also come from the environment (for schedulers that hand out secrets);
// it then wins over RUN_DIR/token.
constexpr char kJobTokenEnv[] = "MONSOON_JOB_TOKEN";

// With $MONSOON_JOB_TOKEN set (at least 16 characters), returns it and writes no file;
// otherwise creates a fresh token of 32 random bytes (OpenSSL's RAND_bytes, as hex) in
// RUN_DIR/token with mode 0600 and returns it.
absl::StatusOr<std::string> CreateJobToken(const RunDir& dir);
// $MONSOON_JOB_TOKEN, or RUN_DIR/token (PermissionDenied unless its mode is 0600).
absl::StatusOr<std::string> ReadJobToken(const RunDir& dir);

// What every role needs to talk to the others: the job token and, when security.tls is set,
// the PEM contents of the certificate, key and CA.
struct JobSecrets {
  std::string token;
  std::string tls_cert, tls_key, tls_ca;  // empty: plaintext
  std::string tls_server_name;
  bool tls() const { return !tls_cert.empty(); }
  // Plaintext with this token (tests, benchmarks).
  static JobSecrets TokenOnly(std::string token) {
    JobSecrets s;
    s.token = std::move(token);
    return s;
  }
};
absl::StatusOr<JobSecrets> ReadJobSecrets(const RunDir& dir, const SecurityConfig& security);

// Equality in time that depends only on the lengths (token checks; OpenSSL's CRYPTO_memcmp).
bool ConstantTimeEquals(const std::string& a, const std::string& b);

// The SHA-256 of a file's contents, as hex (OpenSSL's EVP digest); NotFound when it cannot be
// read.
absl::StatusOr<std::string> FileSha256(const std::string& path);

}  // namespace monsoon

#endif  // MONSOON_CORE_RUN_JOB_SECRETS_H_
