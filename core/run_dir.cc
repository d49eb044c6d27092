#include "core/run_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "core/status_macros.h"

namespace monsoon {
namespace fs = std::filesystem;

absl::Status RunDir::Create() const {
  std::error_code ec;
  for (const std::string& d : {root, rendezvous_dir(), metrics_dir(), logs_dir(), trace_dir()}) {
    fs::create_directories(d, ec);
    if (ec)
      return absl::PermissionDeniedError(absl::StrCat("cannot create ", d, ": ", ec.message()));
  }
  return absl::OkStatus();
}

absl::Status WriteFileAtomically(const std::string& path, const std::string& contents, int mode) {
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, mode);
  if (fd < 0)
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create ", tmp, ": ", std::strerror(errno)));
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string err = std::strerror(errno);
      close(fd);
      unlink(tmp.c_str());
      return absl::DataLossError(absl::StrCat("cannot write ", tmp, ": ", err));
    }
    done += static_cast<size_t>(n);
  }
  fsync(fd);
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string err = std::strerror(errno);
    unlink(tmp.c_str());
    return absl::DataLossError(absl::StrCat("cannot rename ", tmp, " to ", path, ": ", err));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

namespace {

// $MONSOON_JOB_TOKEN when set; InvalidArgument when it is too short to be a secret.
absl::StatusOr<std::string> TokenFromEnvironment() {
  const char* env = std::getenv(kJobTokenEnv);
  if (env == nullptr || *env == '\0') return std::string();
  std::string token(absl::StripAsciiWhitespace(env));
  if (token.size() < 16) {
    return absl::InvalidArgumentError(absl::StrCat(kJobTokenEnv, " is set but has only ",
                                                   token.size(),
                                                   " characters; a job token needs at least 16"));
  }
  return token;
}

}  // namespace

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

absl::StatusOr<std::string> CreateJobToken(const RunDir& dir) {
  MONSOON_ASSIGN_OR_RETURN(std::string from_env, TokenFromEnvironment());
  if (!from_env.empty()) return from_env;
  std::random_device rd;
  std::string token;
  for (int i = 0; i < 4; ++i) {
    const uint64_t v = (static_cast<uint64_t>(rd()) << 32) | rd();
    absl::StrAppend(&token, absl::Hex(v, absl::kZeroPad16));
  }
  MONSOON_RETURN_IF_ERROR(WriteFileAtomically(dir.token_path(), token + "\n", 0600));
  return token;
}

absl::StatusOr<std::string> ReadJobToken(const RunDir& dir) {
  MONSOON_ASSIGN_OR_RETURN(std::string from_env, TokenFromEnvironment());
  if (!from_env.empty()) return from_env;
  struct stat st;
  if (stat(dir.token_path().c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat("job token missing: ", dir.token_path()));
  }
  if ((st.st_mode & 077) != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat(dir.token_path(), " is readable by others (mode ",
                     absl::Hex(st.st_mode & 0777), "); it must be 0600"));
  }
  MONSOON_ASSIGN_OR_RETURN(std::string token, ReadFile(dir.token_path()));
  return std::string(absl::StripAsciiWhitespace(token));
}

absl::StatusOr<JobSecrets> ReadJobSecrets(const RunDir& dir, const SecurityConfig& security) {
  JobSecrets secrets;
  MONSOON_ASSIGN_OR_RETURN(secrets.token, ReadJobToken(dir));
  if (security.tls()) {
    MONSOON_ASSIGN_OR_RETURN(secrets.tls_cert, ReadFile(security.tls_cert));
    MONSOON_ASSIGN_OR_RETURN(secrets.tls_key, ReadFile(security.tls_key));
    MONSOON_ASSIGN_OR_RETURN(secrets.tls_ca, ReadFile(security.tls_ca));
    secrets.tls_server_name = security.tls_server_name;
  }
  return secrets;
}

absl::Status PublishServerAddress(const RunDir& dir, int index, const std::string& address) {
  return WriteFileAtomically(dir.rendezvous_path(index), address + "\n");
}

absl::StatusOr<std::string> ReadServerAddress(const RunDir& dir, int index) {
  auto text = ReadFile(dir.rendezvous_path(index));
  if (!text.ok() || absl::StripAsciiWhitespace(*text).empty()) {
    return absl::NotFoundError(absl::StrCat("server ", index, " has not published an address"));
  }
  return std::string(absl::StripAsciiWhitespace(*text));
}

absl::StatusOr<std::vector<std::string>> WaitForServerAddresses(const RunDir& dir, int count,
                                                                absl::Duration timeout,
                                                                const std::atomic<bool>* stop) {
  const absl::Time deadline = absl::Now() + timeout;
  std::vector<std::string> addresses(count);
  while (true) {
    std::vector<int> missing;
    for (int i = 0; i < count; ++i) {
      if (!addresses[i].empty()) continue;
      auto address = ReadServerAddress(dir, i);
      if (address.ok()) {
        addresses[i] = *std::move(address);
      } else {
        missing.push_back(i);
      }
    }
    if (missing.empty()) return addresses;
    if (stop != nullptr && stop->load())
      return absl::CancelledError("stopped while waiting for servers");
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("rendezvous: after ", absl::FormatDuration(timeout), " server(s) ",
                       absl::StrJoin(missing, ", "), " have not published an address in ",
                       dir.rendezvous_dir()));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
}

}  // namespace monsoon
