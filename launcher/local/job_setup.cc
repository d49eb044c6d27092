#include "launcher/local/job_setup.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "core/config/config_writer.h"
#include "core/job/job_data.h"
#include "core/process/process_setup.h"
#include "core/run/job_secrets.h"
#include "core/status_macros.h"
#include "launcher/local/worker_program.h"
#include "worker/worker_role.h"

namespace monsoon {
namespace {

std::string StartedAtPath(const RunDir& run_dir) { return run_dir.root + "/started_at"; }
std::string WallSecondsPath(const RunDir& run_dir) { return run_dir.root + "/wall_seconds"; }

}  // namespace

absl::StatusOr<std::unique_ptr<RunDirLock>> RunDirLock::Acquire(const RunDir& run_dir) {
  const std::string path = run_dir.root + "/lock";
  // Not O_CLOEXEC: the roles `monsoon run` starts share the lock (see the header).
  const int fd = open(path.c_str(), O_RDWR | O_CREAT, 0600);
  if (fd < 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return absl::AlreadyExistsError(
        absl::StrCat("run directory ", run_dir.root,
                     " is in use by another monsoon process; wait for it to "
                     "end, or choose another --run-dir"));
  }
  return std::unique_ptr<RunDirLock>(new RunDirLock(fd));
}

RunDirLock::~RunDirLock() { close(fd_); }

absl::Status CheckRolesFit(const MemoryEstimate& estimate, HostRoles roles,
                           const MemoryLimit& limit) {
  return roles == HostRoles::kAll
             ? CheckMemoryFits(estimate, estimate.all_roles(), "the job's roles on this host",
                               limit)
             : CheckMemoryFits(estimate, estimate.largest_role(), "the job's largest role", limit);
}

absl::Status CheckJobFits(const JobConfig& config, HostRoles roles) {
  MONSOON_ASSIGN_OR_RETURN(const DataSizes data, CheckData(config));
  return CheckRolesFit(EstimateMemory(config, data), roles, HostMemoryLimit());
}

absl::StatusOr<std::unique_ptr<RunDirLock>> PrepareRunDir(JobConfig* config, const RunDir& run_dir,
                                                          HostRoles roles) {
  // The data against the model, and the memory they need, before anything is written: a
  // misfit is the job's error, not a role's.
  MONSOON_RETURN_IF_ERROR(CheckJobFits(*config, roles));
  std::error_code ec;
  std::filesystem::create_directories(run_dir.root, ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create ", run_dir.root, ": ", ec.message()));
  }
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<RunDirLock> lock, RunDirLock::Acquire(run_dir));
  if (access(run_dir.config_path().c_str(), F_OK) == 0) {
    return absl::AlreadyExistsError(absl::StrCat("run directory ", run_dir.root,
                                                 " already holds a run (config.yaml exists); "
                                                 "choose a new --run-dir"));
  }
  for (const auto& entry : std::filesystem::directory_iterator(run_dir.root, ec)) {
    if (entry.path().filename() == "lock") continue;
    return absl::AlreadyExistsError(absl::StrCat(
        "run directory ", run_dir.root, " is not empty (", entry.path().filename().string(),
        ") and holds no Monsoon run; choose a new or empty --run-dir"));
  }
  MONSOON_RETURN_IF_ERROR(run_dir.Create());
  MONSOON_RETURN_IF_ERROR(CreateRunId(run_dir));
  MONSOON_RETURN_IF_ERROR(CreateJobToken(run_dir).status());
  MONSOON_RETURN_IF_ERROR(WriteFileAtomically(StartedAtPath(run_dir),
                                              absl::StrCat(absl::ToUnixMicros(absl::Now()), "\n")));
  if (config->model.type == ModelType::kProgram) {
    MONSOON_RETURN_IF_ERROR(RunWorkerProgramInit(config, run_dir, /*stop=*/nullptr));
  }
  MONSOON_RETURN_IF_ERROR(WriteFileAtomically(run_dir.config_path(), JobConfigToYaml(*config)));
  return lock;
}

absl::StatusOr<std::unique_ptr<RunDirLock>> PrepareResume(const RunDir& run_dir) {
  if (access(run_dir.config_path().c_str(), F_OK) != 0) {
    return absl::NotFoundError(
        absl::StrCat("cannot resume ", run_dir.root, ": it holds no run (no config.yaml)"));
  }
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<RunDirLock> lock, RunDirLock::Acquire(run_dir));
  MONSOON_RETURN_IF_ERROR(ResetRendezvous(run_dir));
  return lock;
}

absl::Status ResetRendezvous(const RunDir& run_dir) {
  std::error_code ec;
  std::filesystem::remove_all(run_dir.rendezvous_dir(), ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot clear ", run_dir.rendezvous_dir(), ": ", ec.message()));
  }
  return run_dir.Create();
}

absl::StatusOr<std::string> CreateUniqueDir(const std::string& parent, const std::string& name) {
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  if (ec)
    return absl::PermissionDeniedError(absl::StrCat("cannot create ", parent, ": ", ec.message()));
  for (int n = 1; n <= 1000; ++n) {
    const std::string dir = absl::StrCat(parent, "/", name, n == 1 ? "" : absl::StrCat("-", n));
    if (mkdir(dir.c_str(), 0755) == 0) return dir;
    if (errno != EEXIST) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot create ", dir, ": ", std::strerror(errno)));
    }
  }
  return absl::ResourceExhaustedError(
      absl::StrCat("1000 directories ", parent, "/", name, "-N exist already"));
}

absl::StatusOr<double> EarlierWallSeconds(const RunDir& run_dir) {
  const std::string path = WallSecondsPath(run_dir);
  absl::StatusOr<std::string> text = ReadFile(path);
  if (absl::IsNotFound(text.status())) return 0.0;
  MONSOON_RETURN_IF_ERROR(text.status());
  double seconds = 0;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(*text), &seconds) || !(seconds >= 0)) {
    return absl::DataLossError(absl::StrCat(path, " is malformed"));
  }
  return seconds;
}

absl::Status RecordWallSeconds(const RunDir& run_dir, double total_seconds) {
  return WriteFileAtomically(WallSecondsPath(run_dir), absl::StrFormat("%.3f\n", total_seconds));
}

absl::StatusOr<double> SecondsSincePrepared(const RunDir& run_dir) {
  MONSOON_ASSIGN_OR_RETURN(std::string text, ReadFile(StartedAtPath(run_dir)));
  int64_t micros;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &micros)) {
    return absl::DataLossError(absl::StrCat(StartedAtPath(run_dir), " is malformed"));
  }
  return absl::ToDoubleSeconds(absl::Now() - absl::FromUnixMicros(micros));
}

}  // namespace monsoon
