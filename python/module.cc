// monsoon._monsoon: the C++ side of the `monsoon` Python package. A worker program started by
// the launcher (cluster.worker_program) hands its model to run_role(), which runs the same
// worker or evaluator role as Monsoon's own binary (data shard, algorithm, gRPC client,
// metrics, trace, restarts), calling back into the model for every batch (python_model.h).
// monsoon.Client (client.h) pushes and pulls by hand. Errors come back as monsoon.Error
// carrying the C++ status message (errors.h); an exception the model's own code raised comes
// back as itself.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/config/config_reader.h"
#include "core/config/job_config.h"
#include "core/exit_status.h"
#include "core/file_util.h"
#include "core/process/out_of_memory.h"
#include "core/process/process_setup.h"
#include "core/run/run_dir.h"
#include "core/stop_signals.h"
#include "python/client.h"
#include "python/errors.h"
#include "python/python_model.h"
#include "worker/program_environment.h"
#include "worker/worker_role.h"

namespace py = pybind11;

namespace monsoon {
namespace {

std::atomic<bool> g_stop{false};

// As in Monsoon's own client roles: the first stop signal asks the role to stop, and SIGALRM
// ends the process if it has not within kClientStopDeadline.
extern "C" void OnStopSignal(int) {
  if (!g_stop.exchange(true)) {
    alarm(static_cast<unsigned>(absl::ToInt64Seconds(kClientStopDeadline)));
  }
}

// Stop signals go to OnStopSignal while this object lives; then Python's handlers come back.
class StopSignals {
 public:
  StopSignals() {
    for (const int s : kStopSignals) previous_.push_back(std::signal(s, OnStopSignal));
  }
  ~StopSignals() {
    for (size_t i = 0; i < previous_.size(); ++i) std::signal(kStopSignals[i], previous_[i]);
  }

 private:
  std::vector<void (*)(int)> previous_;
};

// The job as the program needs it (see monsoon.job()).
py::dict JobInfo() {
  const ProgramEnvironment env = ValueOrRaise(ProgramEnvironment::FromEnv());
  py::dict info;
  info["role"] = std::string(kProgramRoleNames.Name(env.role));
  info["index"] = env.index;
  info["run_dir"] = env.run_dir;
  info["seed"] = env.seed;
  if (env.role == ProgramRole::kInit) return info;
  const JobConfig config = ValueOrRaise(LoadJobConfig(RunDir{env.run_dir}.config_path()));
  const ModelSpec& m = config.model;
  info["job"] = config.job;
  info["workers"] = config.cluster.workers;
  info["threads"] = config.compute.threads;
  info["input_shape"] = m.input_shape.empty() ? std::vector<int>{m.input_dim} : m.input_shape;
  info["output_dim"] = m.output_dim;
  info["loss"] = std::string(kLossNames.Name(m.loss));
  info["classification"] = m.loss == LossType::kSoftmaxCrossEntropy;
  info["num_params"] = m.num_params;
  info["num_state"] = m.num_state;
  info["algorithm"] = std::string(kAlgorithmNames.Name(config.training.algorithm));
  info["batch_size"] = config.training.batch_size;
  info["evaluation_by_program"] = config.evaluation.by_program;
  // The init run's manifest (write_initial_params), where it wrote one.
  info["manifest"] = ReadInitialManifest(RunDir{env.run_dir});
  return info;
}

// The role `env` names, with `make_model`, without the GIL.
absl::Status RunRoleUnlocked(const ProgramEnvironment& env, const JobConfig& config,
                             const ModelFactory& make_model) {
  const StopSignals signals;
  py::gil_scoped_release release;
  const RunDir run_dir{env.run_dir};
  if (env.role == ProgramRole::kInit) {
    return absl::InvalidArgumentError(
        "run_role: this is the program's init run; write the initial weights "
        "(write_initial_params) instead");
  }
  return CatchOutOfMemory([&] {
    return env.role == ProgramRole::kWorker
               ? RunWorkerRole(config, run_dir, env.index, env.gpu, &g_stop, make_model)
               : RunEvaluatorRole(config, run_dir, env.gpu, &g_stop, make_model);
  });
}

// Runs the role the environment names with `model`.
void RunRole(py::handle model) {
  const ProgramEnvironment env = ValueOrRaise(ProgramEnvironment::FromEnv());
  const JobConfig config = ValueOrRaise(LoadJobConfig(RunDir{env.run_dir}.config_path()));
  const bool classify = config.model.loss == LossType::kSoftmaxCrossEntropy;
  std::optional<py::error_already_set> raised;  // what the model raised
  const ModelFactory make_model = [&](const JobConfig&,
                                      int) -> absl::StatusOr<std::unique_ptr<TrainableModel>> {
    py::gil_scoped_acquire gil;
    try {
      auto m = std::make_unique<PythonModel>(model, "python", &raised);
      m->set_widths(config.model.input_dim, classify ? 0 : config.model.output_dim);
      return m;
    } catch (const std::exception& e) {  // the model's arrays are not what run_role needs
      return absl::InvalidArgumentError(e.what());
    }
  };
  absl::Status status = RunRoleUnlocked(env, config, make_model);
  if (raised.has_value()) {  // the model's own exception: the role failed, however it ends
    RecordExit({0, 1, RecordedExitCause::kFailed, std::string(status.message()), ""});
    raised->restore();
    raised.reset();
    throw py::error_already_set();
  }
  status = AfterStop(std::move(status), g_stop.load(),
                     absl::StrCat(kProgramRoleNames.Name(env.role), " ", env.index));
  // The exit status the program gives it (monsoon.torch exits with it; a program that exits
  // otherwise exits with its own).
  RecordExit(ExitRecordOf(status, /*client=*/true));
  if (!status.ok()) Raise(status, /*client=*/true);
}

// Writes the program's initial weights, the last num_state of them its state, where the
// launcher reads them (its init run).
void WriteInitialParams(py::handle params, size_t num_state,
                        const std::vector<std::string>& manifest) {
  const ProgramEnvironment env = ValueOrRaise(ProgramEnvironment::FromEnv());
  size_t n = 0;
  const float* data = FloatData(params, "params", &n);
  if (num_state >= n) {
    throw py::value_error(absl::StrCat("num_state is ", num_state, " of ", n,
                                       " values: no trained parameters left"));
  }
  const RunDir run_dir{env.run_dir};
  absl::Status written = WriteFileAtomically(run_dir.initial_state_size_path(),
                                             absl::StrCat(num_state, "\n"));
  if (written.ok() && !manifest.empty()) {
    written = WriteFileAtomically(run_dir.initial_manifest_path(),
                                  absl::StrCat(absl::StrJoin(manifest, "\n"), "\n"));
  }
  if (written.ok()) {
    written =
        WriteFileAtomically(run_dir.initial_params_path(),
                            std::string(reinterpret_cast<const char*>(data), n * sizeof(float)));
  }
  if (!written.ok()) Raise(written, /*client=*/false);
}

void DefineClient(py::module_& m) {
  py::class_<Client>(m, "Client",
                     "Monsoon's gRPC client, for push and pull by hand (one worker). Thread-safe: "
                     "calls from several threads take turns, one call to the servers at a time; "
                     "a call releases the GIL while it waits, and the arrays it was given must "
                     "stay unchanged until it returns.")
      .def(py::init(&Client::Connect), py::arg("servers"), py::arg("num_params"),
           py::arg("token"), py::arg("chunk_floats") = size_t{1} << 18,
           py::arg("max_in_flight") = 16, py::arg("index") = 0, py::arg("num_state") = 0,
           "Connects to the servers (\"host:port\", server j holding the sharding plan's chunks "
           "of j) as worker `index`, with the job's token, for a model whose last num_state "
           "values are state (pushed as values).")
      .def_static(
          "from_job", [] { return Client::FromJob(&g_stop); },
          "Connects to the servers of the job that started this program, as its worker.")
      .def_property_readonly("num_params", &Client::num_params)
      .def("pull", &Client::Pull, py::arg("params"), py::arg("min_version") = 0,
           py::arg("min_clock") = 0,
           "Overwrites params (float32, num_params) with the servers' weights, each chunk once "
           "its version reaches min_version and every live worker has pushed it min_clock "
           "times; returns the smallest chunk version.")
      .def("exchange", &Client::Exchange, py::arg("weights"), py::arg("difference"),
           "The elastic exchange: sends weights, writes alpha (weights - centre) into "
           "difference (both float32, num_params); returns the mean staleness.")
      .def("push", &Client::Push, py::arg("gradient"),
           "Pushes a gradient (float32, num_params) computed on the last pull's weights; returns "
           "the mean staleness.")
      .def("report", &Client::Report, py::arg("step"), py::arg("loss"), py::arg("samples"),
           py::arg("epoch") = 0.0,
           "Appends a row to this worker's metrics CSV (and TensorBoard), as Monsoon's workers do "
           "after every step, carrying on a restarted worker's totals (Client.from_job only).")
      .def("finish", &Client::Finish, "Tells the servers this worker has finished.");
}

}  // namespace
}  // namespace monsoon

PYBIND11_MODULE(_monsoon, m) {
  m.doc() = "Monsoon's C++ worker and evaluator roles for models written in Python";
  // What every Monsoon process applies before its first thread (core/process/process_setup.h): malloc
  // keeps the client's message buffers, among others.
  monsoon::ApplyProcessSettings();
  monsoon::DefineErrorType(m);
  m.def("job", &monsoon::JobInfo, "The job this program serves, from the launcher's environment.");
  m.def("run_role", &monsoon::RunRole, py::arg("model"),
        "Runs this program's worker or evaluator role with `model` until the job ends.");
  m.def("write_initial_params", &monsoon::WriteInitialParams, py::arg("params"),
        py::arg("num_state") = 0, py::arg("manifest") = std::vector<std::string>(),
        "Writes the model's initial flat weights for the servers (the launcher's init run); the "
        "last num_state values are its state (buffers), which workers send as values. "
        "`manifest`: the tensors in the flat layout's order, one string each, which monsoon.job() "
        "then gives every worker and the evaluator to check their model against.");
  m.attr("EXIT_STOPPED") = monsoon::kExitStopped;
  monsoon::DefineClient(m);
}
