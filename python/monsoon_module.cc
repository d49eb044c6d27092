// monsoon._monsoon: the C++ side of the `monsoon` Python package. A worker program started by
// the launcher (cluster.worker_program) hands its model to run_role(), which runs the same
// worker or evaluator role as Monsoon's own binary (data shard, algorithm, gRPC client,
// metrics, trace, restarts), calling back into the model for every batch. Errors come back as
// monsoon.Error carrying the C++ status message; an exception the model's own code raised comes
// back as itself.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/exit_status.h"
#include "core/file_util.h"
#include "core/finite.h"
#include "core/config/job_config.h"
#include "core/compute/kernel_math.h"
#include "core/process_setup.h"
#include "core/run_dir.h"
#include "core/status_macros.h"
#include "core/model/trainable_model.h"
#include "worker/grpc_ps_client.h"
#include "worker/worker_metrics.h"
#include "worker/worker_role.h"

namespace py = pybind11;

namespace monsoon {
namespace {

// What the launcher tells a worker program through its environment.
struct ProgramEnvironment {
  std::string role;  // "worker", "evaluator" or "init"
  std::string run_dir;
  int index = 0;
  int gpu = -1;
};

// The environment variable `name`, or InvalidArgument saying the program was not started by
// the launcher.
absl::StatusOr<std::string> Env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') {
    return absl::FailedPreconditionError(absl::StrCat(
        name,
        " is not set: this program is a Monsoon worker program; start it with `monsoon run "
        "JOB.yaml` (cluster.worker_program), not by itself"));
  }
  return std::string(value);
}

absl::StatusOr<ProgramEnvironment> ReadEnvironment() {
  ProgramEnvironment env;
  absl::StatusOr<std::string> role = Env("MONSOON_ROLE");
  if (!role.ok()) return role.status();
  absl::StatusOr<std::string> run_dir = Env("MONSOON_RUN_DIR");
  if (!run_dir.ok()) return run_dir.status();
  env.role = *role;
  env.run_dir = *run_dir;
  if (const char* index = std::getenv("MONSOON_INDEX")) env.index = std::atoi(index);
  if (const char* gpu = std::getenv("MONSOON_GPU")) env.gpu = std::atoi(gpu);
  return env;
}

// The Python exception for a failed status: monsoon.Error(message), with `code` (the status
// code's name) and `exit_status` (what the process should exit with) attributes.
py::handle g_error_type;  // owned by the module (its `Error` attribute)

[[noreturn]] void Raise(const absl::Status& status, bool client) {
  py::object error = g_error_type(std::string(status.message()));
  error.attr("code") = absl::StatusCodeToString(status.code());
  error.attr("exit_status") = RoleExitStatus(status, client);
  PyErr_SetObject(g_error_type.ptr(), error.ptr());
  throw py::error_already_set();
}

template <class T>
T ValueOrRaise(absl::StatusOr<T> value) {
  if (!value.ok()) Raise(value.status(), /*client=*/false);
  return *std::move(value);
}

// A writeable, C-contiguous float32 array's data; ValueError naming `what` otherwise.
float* FloatData(py::handle array, const char* what, size_t* size) {
  if (!py::isinstance<py::array_t<float>>(array)) {
    throw py::value_error(absl::StrCat(what, " must be a float32 NumPy array"));
  }
  py::array a = py::reinterpret_borrow<py::array>(array);
  if (a.ndim() != 1 || !(a.flags() & py::array::c_style) || !a.writeable()) {
    throw py::value_error(absl::StrCat(what, " must be a writeable, contiguous 1-D array"));
  }
  *size = static_cast<size_t>(a.shape(0));
  return static_cast<float*>(a.mutable_data());
}

// InvalidArgument when `values` holds a NaN or an infinity, naming `what` and the first.
absl::Status CheckFinite(const char* what, absl::Span<const float> values) {
  const size_t i = FirstNonFinite(values);
  if (i == values.size()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(what, " is not finite at element ", i, " (",
                                                 values[i], "); nothing was pushed"));
}

// A model written in Python: an object with `params` and `grads` (float32 NumPy arrays of one
// length, which stay the same arrays) and the methods compute_gradients(x, y, seed) -> the
// batch's summed loss, after writing the batch-mean loss gradient into `grads`; and
// evaluate(x, y) -> (summed loss, correct predictions). x is [rows, features] and y [rows] or
// [rows, targets], both float32 and valid only during the call. Borrows the object, which its
// caller keeps alive. A Python exception ends the role: it goes to *raised (which the caller
// owns and clears with the GIL held), and the model's status says what was raised.
class PythonModel : public TrainableModel {
 public:
  PythonModel(py::handle model, std::string where, std::optional<py::error_already_set>* raised)
      : model_(model), where_(std::move(where)), raised_(raised) {
    size_t grads_size = 0;
    params_ = FloatData(model.attr("params"), "model.params", &n_);
    grads_ = FloatData(model.attr("grads"), "model.grads", &grads_size);
    if (grads_size != n_) {
      throw py::value_error(
          absl::StrCat("model.grads has ", grads_size, " values but model.params ", n_));
    }
  }

  size_t num_params() const override { return n_; }
  std::string where() const override { return where_; }
  void SetParams(const float* host) override { Copy(host, params_); }
  void GetParams(float* host) override { Copy(params_, host); }
  void GetGrads(float* host) override { Copy(grads_, host); }
  void AddWeightDecay(float weight_decay) override {
    if (weight_decay > 0) Axpy(weight_decay, params_, grads_);
  }
  void ApplyLocalSgd(float learning_rate) override { Axpy(-learning_rate, grads_, params_); }
  void ApplyLocalNesterov(float learning_rate, float momentum) override {
    velocity_.resize(n_);
    for (size_t i = 0; i < n_; ++i) {
      NesterovElement(learning_rate, momentum, grads_[i], &velocity_[i], &params_[i]);
    }
  }
  void GetVelocity(float* host) override {
    velocity_.resize(n_);
    Copy(velocity_.data(), host);
  }
  void AddToParams(const float* delta_host, float scale) override {
    Axpy(scale, delta_host, params_);
  }
  absl::Status Synchronize() override { return status_; }
  void set_batch_seed(uint64_t seed) override { seed_ = seed; }

  BatchResult ComputeGradients(const float* x, const float* y, int rows) override {
    BatchResult result{0, 0, rows};
    Call([&] {
      result.loss_sum =
          model_.attr("compute_gradients")(View(x, rows, true), View(y, rows, false), seed_)
              .cast<double>();
    });
    if (status_.ok()) status_ = CheckFinite("the model's gradient", {grads_, n_});
    return result;
  }
  BatchResult Evaluate(const float* x, const float* y, int rows) override {
    BatchResult result{0, 0, rows};
    Call([&] {
      auto [loss_sum, correct] = model_.attr("evaluate")(View(x, rows, true), View(y, rows, false))
                                     .cast<std::pair<double, int>>();
      result.loss_sum = loss_sum;
      result.correct = correct;
    });
    return result;
  }

  // The batch's shape per example: features, and targets (0: one class id per example).
  void set_widths(int features, int targets) {
    features_ = features;
    targets_ = targets;
  }

 private:
  void Copy(const float* from, float* to) const {
    if (status_.ok()) std::memcpy(to, from, n_ * sizeof(float));
  }
  void Axpy(float alpha, const float* x, float* y) const {
    if (!status_.ok()) return;
    for (size_t i = 0; i < n_; ++i) y[i] += alpha * x[i];
  }
  // A NumPy view of the batch's features or targets (no copy).
  py::array View(const float* data, int rows, bool features) const {
    std::vector<py::ssize_t> shape = {rows};
    const int width = features ? features_ : targets_;
    if (features || width > 0) shape.push_back(width);
    return py::array(py::dtype::of<float>(), shape, data, py::none());
  }
  // Runs `body` with the GIL held, unless an earlier call failed; keeps what it raises.
  template <class Body>
  void Call(Body body) {
    if (!status_.ok()) return;
    py::gil_scoped_acquire gil;
    try {
      body();
    } catch (py::error_already_set& e) {
      status_ = absl::InternalError(absl::StrCat("the model raised ", e.what()));
      *raised_ = std::move(e);
    } catch (const std::exception& e) {
      status_ = absl::InternalError(absl::StrCat("the model's result: ", e.what()));
    }
  }

  const py::handle model_;  // borrowed
  const std::string where_;
  float* params_ = nullptr;  // the model's arrays
  float* grads_ = nullptr;
  size_t n_ = 0;
  std::vector<float> velocity_;
  uint64_t seed_ = 0;
  int features_ = 0, targets_ = 0;
  absl::Status status_;
  std::optional<py::error_already_set>* const raised_;
};

std::atomic<bool> g_stop{false};

void OnStopSignal(int) { g_stop.store(true); }

// Stop signals set g_stop while this object lives, as in Monsoon's own roles; then Python's
// handlers come back.
class StopSignals {
 public:
  StopSignals() {
    for (const int s : kSignals) previous_.push_back(std::signal(s, OnStopSignal));
  }
  ~StopSignals() {
    for (size_t i = 0; i < previous_.size(); ++i) std::signal(kSignals[i], previous_[i]);
  }

 private:
  static constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1};
  std::vector<void (*)(int)> previous_;
};

// The job as the program needs it (see monsoon.job()).
py::dict JobInfo() {
  const ProgramEnvironment env = ValueOrRaise(ReadEnvironment());
  py::dict info;
  info["role"] = env.role;
  info["index"] = env.index;
  info["run_dir"] = env.run_dir;
  if (env.role == "init") {
    const char* seed = std::getenv("MONSOON_SEED");
    info["seed"] = seed == nullptr ? 0ull : std::strtoull(seed, nullptr, 10);
    return info;
  }
  const JobConfig config = ValueOrRaise(LoadJobConfig(RunDir{env.run_dir}.config_path()));
  const ModelSpec& m = config.model;
  info["job"] = config.job;
  info["seed"] = config.seed;
  info["workers"] = config.cluster.workers;
  info["input_shape"] = m.input_shape.empty() ? std::vector<int>{m.input_dim} : m.input_shape;
  info["output_dim"] = m.output_dim;
  info["loss"] = std::string(kLossNames.Name(m.loss));
  info["classification"] = m.loss == LossType::kSoftmaxCrossEntropy;
  info["num_params"] = m.num_params;
  info["algorithm"] = std::string(kAlgorithmNames.Name(config.training.algorithm));
  return info;
}

// Runs the role the environment names with `model`.
void RunRole(py::handle model) {
  const ProgramEnvironment env = ValueOrRaise(ReadEnvironment());
  const RunDir run_dir{env.run_dir};
  const JobConfig config = ValueOrRaise(LoadJobConfig(run_dir.config_path()));
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
  absl::Status status;
  {
    const StopSignals signals;
    py::gil_scoped_release release;
    if (env.role == "worker") {
      status = RunWorkerRole(config, run_dir, env.index, env.gpu, &g_stop, make_model);
    } else if (env.role == "evaluator") {
      status = RunEvaluatorRole(config, run_dir, env.gpu, &g_stop, make_model);
    } else {
      status = absl::InvalidArgumentError(
          absl::StrCat("MONSOON_ROLE is '", env.role, "': expected worker or evaluator"));
    }
  }
  if (raised.has_value()) {
    raised->restore();
    raised.reset();
    throw py::error_already_set();
  }
  status = AfterStop(std::move(status), g_stop.load(), absl::StrCat(env.role, " ", env.index));
  if (!status.ok()) Raise(status, /*client=*/true);
}

// monsoon.Client: Monsoon's gRPC client (GrpcPsClient) for push and pull by hand, speaking for
// one worker. Arrays cross without copies: a pull writes into the caller's array, a push reads
// from it. Pushes and exchanges are numbered (exactly-once), continuing after the last one the
// servers have from this worker; a push is computed on the weights of the last pull.
class Client {
 public:
  explicit Client(std::unique_ptr<GrpcPsClient> client) : client_(std::move(client)) {
    const absl::StatusOr<ResumePoint> resume = client_->Resume();
    if (resume.ok()) origin_.sequence = resume->sequence;
  }

  // To the servers at `servers` ("host:port", server j holding the plan's chunks of j).
  static std::unique_ptr<Client> Connect(const std::vector<std::string>& servers, size_t num_params,
                                         const std::string& token, size_t chunk_floats,
                                         int max_in_flight, int index) {
    ShardingPlan plan = ValueOrRaise(
        ShardingPlan::Create(num_params, static_cast<int>(servers.size()), chunk_floats));
    GrpcPsClientOptions options;
    options.secrets = JobSecrets::TokenOnly(token);
    options.max_in_flight = max_in_flight;
    absl::StatusOr<std::unique_ptr<GrpcPsClient>> client;
    {
      py::gil_scoped_release release;
      client = GrpcPsClient::Connect(servers, plan, {ClientRole::kWorker, index, NewIncarnation()},
                                     options);
    }
    if (!client.ok()) Raise(client.status(), /*client=*/true);
    return std::make_unique<Client>(*std::move(client));
  }

  // To the servers of the job that started this program, as its worker (MONSOON_INDEX), with
  // the job's secrets and transport settings.
  static std::unique_ptr<Client> FromJob() {
    const ProgramEnvironment env = ValueOrRaise(ReadEnvironment());
    const RunDir run_dir{env.run_dir};
    const JobConfig config = ValueOrRaise(LoadJobConfig(run_dir.config_path()));
    absl::StatusOr<std::unique_ptr<GrpcPsClient>> client;
    {
      py::gil_scoped_release release;
      client = ConnectToServers(config, run_dir, {ClientRole::kWorker, env.index, NewIncarnation()},
                                &g_stop);
    }
    if (!client.ok()) Raise(client.status(), /*client=*/true);
    auto by_hand = std::make_unique<Client>(*std::move(client));
    by_hand->metrics_ = ValueOrRaise(CsvMetricsWriter::Create(
        run_dir.worker_metrics_path(env.index), ColumnNames<WorkerMetricsRow>()));
    by_hand->base_learning_rate_ = BaseLearningRate(config);
    by_hand->plan_ = LearningRatePlanOf(config);
    by_hand->metrics_->MirrorTo(ValueOrRaise(EventFileWriter::Create(
                                    run_dir.tensorboard_dir(absl::StrCat("worker-", env.index)))),
                                "step");
    return by_hand;
  }

  // A row of the worker's metrics CSV (and TensorBoard scalars), as Monsoon's own workers
  // write after every step: the caller's step, loss, samples in this step and epoch, with the
  // client's counters (bytes, pushes, the last pull's versions, time in calls).
  void Report(int64_t step, double loss, int64_t samples, double epoch) {
    if (metrics_ == nullptr) {
      Raise(absl::FailedPreconditionError(
                "report needs a client from Client.from_job(): it writes the job's metrics"),
            /*client=*/false);
    }
    samples_ += samples;
    WorkerMetricsRow row;
    row.step = static_cast<double>(step);
    row.wall_seconds = absl::ToDoubleSeconds(absl::Now() - start_);
    row.epoch = epoch;
    row.loss = loss;
    row.samples_per_second = static_cast<double>(samples_) / std::max(row.wall_seconds, 1e-9);
    const TransferCounters io = client_->counters();
    row.bytes_sent = static_cast<double>(io.bytes_sent);
    row.bytes_received = static_cast<double>(io.bytes_received);
    row.version = static_cast<double>(last_pull_.min_version);
    row.clock = static_cast<double>(origin_.sequence);
    row.slowest_clock = static_cast<double>(last_pull_.slowest_clock);
    row.staleness = last_staleness_;
    row.comm_seconds = comm_seconds_;
    row.comm_share = comm_seconds_ / std::max(row.wall_seconds, 1e-9);
    row.learning_rate = base_learning_rate_ * plan_.Scale(epoch);
    const absl::Status appended = metrics_->Append(RowValues(row));
    if (!appended.ok()) Raise(appended, /*client=*/false);
  }

  size_t num_params() const { return client_->plan().num_params(); }

  // Overwrites `params` with the servers' weights, each chunk once its version reaches
  // min_version and every live worker has pushed it min_clock times (sync and SSP wait so);
  // returns the smallest chunk version.
  uint64_t Pull(py::handle params, uint64_t min_version, uint64_t min_clock) {
    float* data = Array(params, "params");
    PullWait wait;
    if (min_version > 0) wait.min_versions.assign(client_->plan().num_chunks(), min_version);
    wait.min_clock = min_clock;
    const absl::StatusOr<PullResult> pulled = Unlocked(
        [&] { return client_->PullAll(absl::MakeSpan(data, num_params()), wait, &versions_); });
    if (!pulled.ok()) Raise(pulled.status(), /*client=*/true);
    last_pull_ = *pulled;
    return pulled->min_version;
  }

  // The elastic exchange (easgd, eamsgd): sends `weights`, writes the elastic differences
  // alpha (x - centre) into `difference`; returns the mean staleness.
  double Exchange(py::handle weights, py::handle difference) {
    const float* x = Array(weights, "weights");
    float* d = Array(difference, "difference");
    const absl::Status finite = CheckFinite("the weights", {x, num_params()});
    if (!finite.ok()) Raise(finite, /*client=*/false);
    if (exchange_versions_.empty()) exchange_versions_.assign(client_->plan().num_chunks(), 0);
    ++origin_.sequence;
    const absl::StatusOr<PushSummary> exchanged = Unlocked([&] {
      return client_->ExchangeAll(absl::MakeConstSpan(x, num_params()),
                                  absl::MakeSpan(d, num_params()), &exchange_versions_, origin_);
    });
    if (!exchanged.ok()) Raise(exchanged.status(), /*client=*/true);
    last_pull_.min_version =
        exchange_versions_.empty()
            ? 0
            : *std::min_element(exchange_versions_.begin(), exchange_versions_.end());
    last_staleness_ = exchanged->mean_staleness;
    return exchanged->mean_staleness;
  }

  // Pushes `gradient`, computed on the weights of the last pull; returns the mean staleness.
  double Push(py::handle gradient) {
    const float* data = Array(gradient, "gradient");
    const absl::Status finite = CheckFinite("the gradient", {data, num_params()});
    if (!finite.ok()) Raise(finite, /*client=*/false);
    if (versions_.empty()) versions_.assign(client_->plan().num_chunks(), 0);
    ++origin_.sequence;
    const absl::StatusOr<PushSummary> pushed = Unlocked([&] {
      return client_->PushAll(absl::MakeConstSpan(data, num_params()), versions_, origin_);
    });
    if (!pushed.ok()) Raise(pushed.status(), /*client=*/true);
    last_staleness_ = pushed->mean_staleness;
    return pushed->mean_staleness;
  }

  // Tells the servers this worker has finished; the client takes no call after it.
  void Finish() {
    CheckLive();
    const absl::Status finished = Unlocked([&] { return client_->Finish(); });
    finished_ = true;
    if (!finished.ok()) Raise(finished, /*client=*/true);
  }

 private:
  // `what`, a float32 array of num_params() values; ValueError naming it otherwise, and
  // monsoon.Error after Finish.
  void CheckLive() const {
    if (finished_) {
      Raise(absl::FailedPreconditionError("the client has finished"), /*client=*/false);
    }
  }
  float* Array(py::handle array, const char* what) {
    CheckLive();
    size_t n = 0;
    float* data = FloatData(array, what, &n);
    if (n != num_params()) {
      throw py::value_error(absl::StrCat(what, " has ", n, " values; the servers hold ",
                                         num_params(), " parameters"));
    }
    return data;
  }
  // Runs a call to the servers without the GIL, counting its time.
  template <class Call>
  auto Unlocked(Call call) -> decltype(call()) {
    py::gil_scoped_release release;
    const absl::Time start = absl::Now();
    auto result = call();
    comm_seconds_ += absl::ToDoubleSeconds(absl::Now() - start);
    return result;
  }

  std::unique_ptr<GrpcPsClient> client_;
  std::unique_ptr<CsvMetricsWriter> metrics_;  // from_job's: the worker's metrics CSV
  double base_learning_rate_ = 0;              // from_job's: the job's, for report's rows
  LearningRatePlan plan_;
  const absl::Time start_ = absl::Now();
  double comm_seconds_ = 0;  // in calls to the servers
  PullResult last_pull_;
  double last_staleness_ = 0;
  int64_t samples_ = 0;
  ChunkVersions versions_;           // what the last pull saw
  ChunkVersions exchange_versions_;  // each chunk's version at the last exchange
  PushOrigin origin_;
  bool finished_ = false;
};

// Writes the program's initial weights where the launcher reads them (MONSOON_ROLE=init).
void WriteInitialParams(py::handle params) {
  const ProgramEnvironment env = ValueOrRaise(ReadEnvironment());
  size_t n = 0;
  const float* data = FloatData(params, "params", &n);
  const absl::Status written =
      WriteFileAtomically(RunDir{env.run_dir}.initial_params_path(),
                          std::string(reinterpret_cast<const char*>(data), n * sizeof(float)));
  if (!written.ok()) Raise(written, /*client=*/false);
}

}  // namespace
}  // namespace monsoon

PYBIND11_MODULE(_monsoon, m) {
  m.doc() = "Monsoon's C++ worker and evaluator roles for models written in Python";
  // What every Monsoon process applies before its first thread (core/process_setup.h): malloc
  // keeps the client's message buffers, among others.
  monsoon::ApplyProcessSettings();
  m.attr("Error") = py::reinterpret_steal<py::object>(PyErr_NewExceptionWithDoc(
      "monsoon.Error", "A Monsoon call failed; the message is the C++ status's.",
      PyExc_RuntimeError, nullptr));
  monsoon::g_error_type = m.attr("Error");
  m.def("job", &monsoon::JobInfo, "The job this program serves, from the launcher's environment.");
  m.def("run_role", &monsoon::RunRole, py::arg("model"),
        "Runs this program's worker or evaluator role with `model` until the job ends.");
  m.def("write_initial_params", &monsoon::WriteInitialParams, py::arg("params"),
        "Writes the model's initial flat weights for the servers (the launcher's init run).");
  m.attr("EXIT_STOPPED") = monsoon::kExitStopped;
  py::class_<monsoon::Client>(m, "Client",
                              "Monsoon's gRPC client, for push and pull by hand (one worker).")
      .def(py::init(&monsoon::Client::Connect), py::arg("servers"), py::arg("num_params"),
           py::arg("token"), py::arg("chunk_floats") = size_t{1} << 18,
           py::arg("max_in_flight") = 16, py::arg("index") = 0,
           "Connects to the servers (\"host:port\", server j holding the sharding plan's chunks "
           "of j) as worker `index`, with the job's token.")
      .def_static("from_job", &monsoon::Client::FromJob,
                  "Connects to the servers of the job that started this program, as its worker.")
      .def_property_readonly("num_params", &monsoon::Client::num_params)
      .def("pull", &monsoon::Client::Pull, py::arg("params"), py::arg("min_version") = 0,
           py::arg("min_clock") = 0,
           "Overwrites params (float32, num_params) with the servers' weights, each chunk once "
           "its version reaches min_version and every live worker has pushed it min_clock "
           "times; returns the smallest chunk version.")
      .def("exchange", &monsoon::Client::Exchange, py::arg("weights"), py::arg("difference"),
           "The elastic exchange: sends weights, writes alpha (weights - centre) into "
           "difference (both float32, num_params); returns the mean staleness.")
      .def("push", &monsoon::Client::Push, py::arg("gradient"),
           "Pushes a gradient (float32, num_params) computed on the last pull's weights; returns "
           "the mean staleness.")
      .def("report", &monsoon::Client::Report, py::arg("step"), py::arg("loss"), py::arg("samples"),
           py::arg("epoch") = 0.0,
           "Appends a row to this worker's metrics CSV (and TensorBoard), as Monsoon's workers do "
           "after every step (Client.from_job only).")
      .def("finish", &monsoon::Client::Finish, "Tells the servers this worker has finished.");
}
