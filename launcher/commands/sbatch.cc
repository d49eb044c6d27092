// `monsoon sbatch CONFIG.yaml [--set ...] [--script FILE] [--submit [--wait]]`.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/compute/compute_backends.h"
#include "core/process/process_setup.h"
#include "core/run/job_secrets.h"
#include "core/status_macros.h"
#include "launcher/cluster/sbatch_script.h"
#include "launcher/commands/command.h"
#include "launcher/local/process_group.h"
#include "launcher/local/worker_program.h"

namespace monsoon {
namespace {

struct SbatchOptions {
  std::string config, script;
  std::vector<std::string> sets;
  bool submit = false, wait = false;
};

// runs/JOB as an absolute path, created; InvalidArgument when an #SBATCH line cannot hold it.
absl::StatusOr<std::string> RunsDir(const JobConfig& config) {
  const std::string runs_dir =
      std::filesystem::absolute(absl::StrCat("runs/", config.job)).lexically_normal().string();
  if (runs_dir.find_first_of("\n\r") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("the runs directory ", absl::CEscape(runs_dir),
                     " holds a line break, which an #SBATCH line cannot; run from another one"));
  }
  std::error_code ec;
  std::filesystem::create_directories(runs_dir, ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat("cannot create ", runs_dir));
  return runs_dir;
}

// A copy of `file`, RUNS_ROOT/bin/STEM-HASH[SUFFIX] (the first 16 hex digits of its SHA-256):
// the path batch scripts use. It stays put when the build tree is rebuilt or cleaned, and lies
// on the file system the run directories share, where every node can reach it.
absl::StatusOr<std::string> StableCopy(const std::string& file, const std::string& runs_root,
                                       const std::string& stem, const std::string& suffix) {
  MONSOON_ASSIGN_OR_RETURN(const std::string digest, FileSha256(file));
  const std::string bin = runs_root + "/bin";
  const std::string path = absl::StrCat(bin, "/", stem, "-", digest.substr(0, 16), suffix);
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return path;
  std::filesystem::create_directories(bin, ec);
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  std::filesystem::copy_file(file, tmp, std::filesystem::copy_options::overwrite_existing, ec);
  if (!ec) std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp);
    return absl::PermissionDeniedError(
        absl::StrCat("cannot copy ", file, " to ", path, ": ", ec.message()));
  }
  return path;
}

// A copy of the `monsoon` Python package (MonsoonPythonPath()) as stable as StableCopy's:
// RUNS_ROOT/bin/python-HASH/monsoon/, HASH from its files' digests. Returns
// RUNS_ROOT/bin/python-HASH.
absl::StatusOr<std::string> StablePythonPackage(const std::string& runs_root) {
  namespace fs = std::filesystem;
  MONSOON_ASSIGN_OR_RETURN(const std::string source, MonsoonPythonPath());
  const fs::path package = fs::path(source) / "monsoon";
  std::vector<fs::path> files;  // relative to `package`, its subpackages' (monsoon.torch) too
  std::error_code ec;
  for (const auto& entry : fs::recursive_directory_iterator(package, ec)) {
    if (entry.is_regular_file(ec)) files.push_back(entry.path().lexically_relative(package));
  }
  std::sort(files.begin(), files.end());
  std::string digests;
  for (const fs::path& f : files) {
    MONSOON_ASSIGN_OR_RETURN(const std::string digest, FileSha256((package / f).string()));
    absl::StrAppend(&digests, digest.substr(0, 4));
  }
  const fs::path dir = fs::path(runs_root) / "bin" / absl::StrCat("python-", digests);
  if (fs::exists(dir, ec)) return dir.string();
  const fs::path tmp = absl::StrCat(dir.string(), ".tmp.", getpid());
  fs::create_directories(tmp / "monsoon", ec);
  for (const fs::path& f : files) {
    if (!ec) fs::create_directories((tmp / "monsoon" / f).parent_path(), ec);
    if (!ec) fs::copy_file(package / f, tmp / "monsoon" / f, ec);
  }
  if (!ec) fs::rename(tmp, dir, ec);
  if (ec) {
    fs::remove_all(tmp, ec);
    return absl::PermissionDeniedError(
        absl::StrCat("cannot copy the monsoon Python package to ", dir.string()));
  }
  return dir.string();
}

// What the batch script runs. A bundle's binary (tools/bundle.sh: BUNDLE beside its bin/) runs
// where it is, since its libraries lie beside it and a bundle is unpacked, not rebuilt in place;
// a build tree's binary and CUDA plugin run as stable copies.
absl::Status SetProgram(const JobConfig& config, const std::string& runs_root,
                        SbatchInputs* inputs) {
  const std::filesystem::path self = SelfExePath();
  std::error_code ec;
  if (std::filesystem::exists(self.parent_path().parent_path() / "BUNDLE", ec)) {
    inputs->monsoon_exe = self.string();
    return absl::OkStatus();
  }
  MONSOON_ASSIGN_OR_RETURN(inputs->monsoon_exe, StableCopy(self, runs_root, "monsoon", ""));
  if (!config.cluster.worker_program.empty()) {
    MONSOON_ASSIGN_OR_RETURN(inputs->python_path, StablePythonPackage(runs_root));
  }
  const std::string plugin = CudaPluginFile();
  if (plugin.empty()) return absl::OkStatus();
  MONSOON_ASSIGN_OR_RETURN(
      inputs->cuda_plugin,
      StableCopy(std::filesystem::absolute(plugin).string(), runs_root, "libmonsoon_cuda", ".so"));
  return absl::OkStatus();
}

int Submit(const std::string& path, bool wait) {
  std::vector<std::string> sbatch = {"sbatch"};
  if (wait) sbatch.push_back("--wait");
  sbatch.push_back(path);
  auto status = RunProgram(sbatch, StopFlag());
  if (!status.ok()) return Fail(status.status(), 1);
  if (*status != 0) std::cerr << "monsoon: sbatch exited with status " << *status << std::endl;
  return *status;
}

int Sbatch(const SbatchOptions& o) {
  auto config = LoadUserConfig(o.config, o.sets);
  if (!config.ok()) return Fail(config.status(), 2);
  auto runs_dir = RunsDir(*config);
  if (!runs_dir.ok())
    return Fail(runs_dir.status(), absl::IsInvalidArgument(runs_dir.status()) ? 2 : 1);
  SbatchInputs inputs;
  const absl::Status program =
      SetProgram(*config, std::filesystem::path(*runs_dir).parent_path().string(), &inputs);
  if (!program.ok()) return Fail(program, 1);
  inputs.config_path = std::filesystem::absolute(o.config).lexically_normal().string();
  inputs.overrides = o.sets;
  inputs.runs_dir = *runs_dir;
  const std::string script = SbatchScript(*config, inputs);
  const std::string path =
      !o.script.empty()
          ? o.script
          : absl::StrCat(*runs_dir, "/", config->job, "-",
                         absl::FormatTime("%Y%m%d-%H%M%S", absl::Now(), absl::LocalTimeZone()),
                         ".sbatch");
  const absl::Status written = WriteFileAtomically(path, script, 0755);
  if (!written.ok()) return Fail(written, 1);
  std::cout << script << std::flush;
  std::cerr << "monsoon: wrote " << path << std::endl;
  return o.submit ? Submit(path, o.wait) : 0;
}

}  // namespace

void AddSbatchCommand(Command& program, int* exit_code) {
  auto o = std::make_shared<SbatchOptions>();
  Command cmd = program.Subcommand(
      "sbatch",
      "write a SLURM batch script for the job (from its slurm: section) and print it; "
      "--submit submits it");
  CommandOption config = cmd.Option("CONFIG.yaml", &o->config, "the job").Required();
  AddSetOption(cmd, &o->sets, config);
  cmd.Option("--script", &o->script,
             "where to write the script (default runs/JOB/JOB-TIMESTAMP.sbatch)");
  CommandOption submit = cmd.Flag("--submit", &o->submit, "submit the script with sbatch");
  cmd.Flag("--wait", &o->wait, "wait for the job and return its exit status").Needs(submit);
  cmd.OnRun([o, exit_code] { *exit_code = Sbatch(*o); });
}

}  // namespace monsoon
