#include "python/client.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/config/config_reader.h"
#include "core/config/derived_values.h"
#include "core/config/job_config.h"
#include "core/exit_status.h"
#include "core/finite.h"
#include "core/run/run_dir.h"
#include "core/status_macros.h"
#include "python/errors.h"
#include "worker/program_environment.h"
#include "worker/worker_role.h"
#include "worker/worker_rules.h"

namespace py = pybind11;

namespace monsoon {

Client::Client(std::unique_ptr<PsClient> client)
    : client_(std::move(client)), num_params_(client_->plan().num_params()) {
  const absl::StatusOr<ResumePoint> resume = client_->Resume();
  absl::MutexLock lock(&mu_);
  if (resume.ok()) origin_.sequence = resume->sequence;
}

std::unique_ptr<Client> Client::Connect(const std::vector<std::string>& servers,
                                        size_t num_params, const std::string& token,
                                        size_t chunk_floats, int max_in_flight, int index,
                                        size_t num_state) {
  ShardingPlan plan = ValueOrRaise(ShardingPlan::Create(
      num_params, static_cast<int>(servers.size()), chunk_floats, num_state));
  GrpcPsClientOptions options;
  options.secrets = JobSecrets::TokenOnly(token);
  options.max_in_flight = max_in_flight;
  absl::StatusOr<std::unique_ptr<GrpcPsClient>> client;
  {
    py::gil_scoped_release release;
    client = GrpcPsClient::Connect(servers, plan, {RoleKind::kWorker, index, NewIncarnation()},
                                   options);
  }
  if (!client.ok()) Raise(client.status(), /*client=*/true);
  return std::make_unique<Client>(*std::move(client));
}

std::unique_ptr<Client> Client::FromJob(const std::atomic<bool>* stop) {
  const ProgramEnvironment env = ValueOrRaise(ProgramEnvironment::FromEnv());
  const RunDir run_dir{env.run_dir};
  const JobConfig config = ValueOrRaise(LoadJobConfig(run_dir.config_path()));
  absl::StatusOr<std::unique_ptr<PsClient>> client;
  {
    py::gil_scoped_release release;
    client = ConnectToServers(config, run_dir, {RoleKind::kWorker, env.index, NewIncarnation()},
                              stop);
  }
  if (!client.ok()) Raise(client.status(), /*client=*/true);
  auto by_hand = std::make_unique<Client>(*std::move(client));
  // The caller numbers its own steps: rows are kept, and totals carry on from the last one.
  by_hand->metrics_ = ValueOrRaise(WorkerMetricsRecorder::Open(run_dir, env.index));
  by_hand->base_learning_rate_ = BaseLearningRate(config);
  by_hand->plan_ = LearningRatePlanOf(config);
  return by_hand;
}

float* Client::Array(py::handle array, const char* what) const {
  size_t n = 0;
  float* data = FloatData(array, what, &n);
  if (n != num_params_) {
    throw py::value_error(absl::StrCat(what, " has ", n, " values; the servers hold ",
                                       num_params_, " parameters"));
  }
  return data;
}

template <class Call>
auto Client::Locked(Call call) -> decltype(call()) {
  py::gil_scoped_release release;  // first: a thread waiting for the client holds no GIL
  absl::MutexLock lock(&mu_);
  if (finished_) return absl::FailedPreconditionError("the client has finished");
  const absl::Time start = absl::Now();
  auto result = call();
  comm_seconds_ += absl::ToDoubleSeconds(absl::Now() - start);
  return result;
}

template <class Send>
absl::StatusOr<PushSummary> Client::Numbered(Send send) {
  PushOrigin next = origin_;
  ++next.sequence;
  absl::StatusOr<PushSummary> sent = send(next);
  if (sent.ok() || !IsNonFiniteRefusal(sent.status())) origin_ = next;
  return sent;
}

uint64_t Client::Pull(py::handle params, uint64_t min_version, uint64_t min_clock) {
  float* data = Array(params, "params");
  PullWait wait;
  if (min_version > 0) wait.min_versions.assign(client_->plan().num_chunks(), min_version);
  wait.min_clock = min_clock;
  const absl::StatusOr<PullResult> pulled =
      Locked([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::StatusOr<PullResult> {
        MONSOON_ASSIGN_OR_RETURN(last_pull_, client_->PullAll(absl::MakeSpan(data, num_params_),
                                                               wait, &versions_));
        return last_pull_;
      });
  if (!pulled.ok()) Raise(pulled.status(), /*client=*/true);
  return pulled->min_version;
}

double Client::Exchange(py::handle weights, py::handle difference) {
  const float* x = Array(weights, "weights");
  float* d = Array(difference, "difference");
  const absl::StatusOr<PushSummary> exchanged =
      Locked([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::StatusOr<PushSummary> {
        if (exchange_versions_.empty()) exchange_versions_.assign(client_->plan().num_chunks(), 0);
        MONSOON_ASSIGN_OR_RETURN(
            const PushSummary summary,
            Numbered([&](const PushOrigin& origin) {
              return client_->ExchangeAll(absl::MakeConstSpan(x, num_params_),
                                          absl::MakeSpan(d, num_params_), &exchange_versions_,
                                          origin);
            }));
        last_pull_.min_version =
            *std::min_element(exchange_versions_.begin(), exchange_versions_.end());
        last_staleness_ = summary.mean_staleness;
        return summary;
      });
  if (!exchanged.ok()) Raise(exchanged.status(), /*client=*/true);
  return exchanged->mean_staleness;
}

double Client::Push(py::handle gradient) {
  const float* data = Array(gradient, "gradient");
  const absl::StatusOr<PushSummary> pushed =
      Locked([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::StatusOr<PushSummary> {
        if (versions_.empty()) versions_.assign(client_->plan().num_chunks(), 0);
        MONSOON_ASSIGN_OR_RETURN(const FiniteGradient checked,
                                 FiniteGradient::Check(absl::MakeConstSpan(data, num_params_)));
        MONSOON_ASSIGN_OR_RETURN(const PushSummary summary, Numbered([&](const PushOrigin& origin) {
                                   return client_->PushAll(checked, versions_, origin);
                                 }));
        last_staleness_ = summary.mean_staleness;
        return summary;
      });
  if (!pushed.ok()) Raise(pushed.status(), /*client=*/true);
  return pushed->mean_staleness;
}

void Client::Report(int64_t step, double loss, int64_t samples, double epoch) {
  if (metrics_ == nullptr) {
    Raise(absl::FailedPreconditionError(
              "report needs a client from Client.from_job(): it writes the job's metrics"),
          /*client=*/false);
  }
  const absl::Status recorded = Locked([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const WorkerTotals& earlier = metrics_->earlier();
    samples_ += samples;
    WorkerMetricsRow row;
    row.step = static_cast<double>(step);
    row.epoch = epoch;
    row.loss = loss;
    row.version = static_cast<double>(last_pull_.min_version);
    row.clock = static_cast<double>(origin_.sequence);
    row.slowest_clock = static_cast<double>(last_pull_.slowest_clock);
    row.staleness = last_staleness_;
    row.comm_seconds = earlier.comm_seconds + comm_seconds_;
    row.learning_rate = base_learning_rate_ * plan_.Scale(epoch);
    return metrics_->Record(row, earlier.samples + samples_, client_->counters());
  });
  if (!recorded.ok()) Raise(recorded, /*client=*/false);
}

void Client::Finish() {
  const absl::Status finished = Locked([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    finished_ = true;
    return client_->Finish();
  });
  if (!finished.ok()) Raise(finished, /*client=*/true);
  // The program's role is done: exiting 0 from here on is finishing.
  RecordExit(ExitRecordOf(finished, /*client=*/true));
}

}  // namespace monsoon
