#include "launcher/simulation/simulated_job.h"

#include <glog/logging.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "core/compute/kernel_math.h"
#include "core/config/derived_values.h"
#include "core/exit_status.h"
#include "core/file_util.h"
#include "core/job/job_data.h"
#include "core/metrics/metrics.h"
#include "core/metrics/trace.h"
#include "core/process/out_of_memory.h"
#include "core/status_macros.h"
#include "launcher/local/run_summary.h"
#include "launcher/simulation/cost_estimate.h"
#include "launcher/simulation/event_loop.h"
#include "launcher/simulation/shared_link.h"
#include "launcher/simulation/simulated_ps_client.h"
#include "launcher/simulation/step_timed_model.h"
#include "launcher/simulation/turns.h"
#include "server/server_metrics.h"
#include "server/server_role.h"
#include "server/server_rules.h"
#include "worker/evaluator.h"
#include "worker/in_process_ps_client.h"
#include "worker/training_worker.h"
#include "worker/worker_role.h"
#include "worker/worker_rules.h"

namespace monsoon {
namespace {

// A server busier than this share of the simulated time sets the job's pace: the run says so.
constexpr double kBusyServerShare = 0.8;

// The workers' config: their time is the simulation's, so nothing of theirs watches the wall
// clock or overlaps transfers on a thread of its own.
JobConfig SimulatedWorkerConfig(const JobConfig& config) {
  JobConfig c = config;
  c.reliability.stall_seconds = kStallWatchOff;
  c.transport.overlap = Overlap::kNone;
  return c;
}

// A simulated role's trace, as a real one's (null under trace.steps: 0), in simulated time;
// its process is named "NAME (simulated)".
absl::StatusOr<std::unique_ptr<TraceWriter>> OpenSimulatedTrace(
    const JobConfig& config, const RunDir& run_dir, const std::string& file, int process_id,
    const std::string& name, const std::vector<std::string>& threads, const Clock& clock) {
  return OpenRoleTrace(config.trace.steps, run_dir.trace_dir(), file, process_id,
                       absl::StrCat(name, " (simulated)"), threads, clock);
}

// True when the workers can share one model object: they run one at a time, and each loads
// the weights it pulled into the model before every step and takes its gradient out right
// after, keeping nothing in the model between steps (no local steps, no weights kept across
// fetches, no elastic averaging).
bool WorkersShareModel(const JobConfig& config) {
  const WorkerRules rules = WorkerRules::FromConfig(config);
  return PushesGradients(rules.algorithm) && rules.n_fetch == 1 && rules.local_learning_rate == 0;
}

// One simulated worker: what RunWorkerRole builds for a real one.
struct SimulatedWorker {
  explicit SimulatedWorker(const EventLoop* loop) : clock(loop) {}
  SimulatedClock clock;
  std::unique_ptr<TraceWriter> trace;  // null under trace.steps: 0
  std::unique_ptr<DataShard> shard;
  std::unique_ptr<TrainableModel> own_model;  // unless the workers share one
  std::unique_ptr<TrainableModel> model;      // own_model's or the shared one, timed
  std::unique_ptr<WorkerMetricsRecorder> metrics;
  std::unique_ptr<SimulatedPsClient> client;
  std::unique_ptr<TrainingWorker> trainer;
  absl::StatusOr<WorkerReport> report = absl::UnknownError("did not run");
};

// The evaluator: scores the servers' weights every evaluation.interval_seconds of simulated
// time, taking none of it (its pulls read the servers directly).
struct SimulatedEvaluator {
  Dataset test;
  std::unique_ptr<TrainableModel> model;
  std::unique_ptr<InProcessPsClient> client;
  std::unique_ptr<CsvMetricsWriter> metrics;
  std::unique_ptr<SimulatedClock> clock;
  std::unique_ptr<TraceWriter> trace;  // null under trace.steps: 0
  std::unique_ptr<Evaluator> evaluator;
};

class Simulation {
 public:
  Simulation(const JobConfig& config, const RunDir& run_dir, const ProgressOptions& progress,
             const std::atomic<bool>* stop)
      : config_(config),
        worker_config_(SimulatedWorkerConfig(config)),
        run_dir_(run_dir),
        progress_(progress),
        stop_(stop),
        started_(absl::Now()),
        loop_(absl::Now()) {}

  // Fails the pulls still waiting at the servers without answering them: the participants
  // still waiting are cancelled (Turns) as the members go.
  ~Simulation() {
    network_.closed = true;
    for (const auto& server : servers_) server->CancelWaiters();
  }

  absl::Status Build();
  absl::StatusOr<JobProgress> Run();

 private:
  absl::Status BuildServers();
  absl::Status BuildWorker(int index, SimulatedWorker* w);
  absl::Status BuildEvaluator();
  // Evaluates now, and again an interval later until every worker has finished (or none can
  // go on).
  void Evaluate();
  // Between events (every kWatchEvents): shows the progress every progress_.interval of real
  // time, and halts the workers on a stop signal or past training.timeout_seconds.
  void Watch();
  static constexpr uint64_t kWatchEvents = 256;
  // The progress so far: the slowest worker's epochs, samples per simulated second, the real
  // seconds since the start (for the time left), the last evaluation.
  JobProgress Progress() const;
  absl::StatusOr<EvalResult> EvaluateOnce();
  // The servers' metrics rows at the current simulated time.
  absl::Status RecordServers();
  // RUN_DIR/params.bin: the servers' weights now.
  absl::Status WriteFinalWeights();
  // The final evaluation, weights, servers' rows and tables.
  absl::Status Finish();
  absl::Status WorkersStatus() const;
  // The share of the simulated time the busiest server spent applying updates.
  double BusiestServerShare() const;

  const JobConfig& config_;
  const JobConfig worker_config_;
  const RunDir& run_dir_;
  const ProgressOptions progress_;
  const std::atomic<bool>* const stop_;  // a stop signal: Watch halts the workers
  std::atomic<bool> halt_{false};        // the workers' stop flag
  bool timed_out_ = false;
  const absl::Time started_;             // in real time: training.timeout_seconds counts from it
  absl::Time training_started_;          // in real time, once the cluster is built
  absl::Time next_progress_;
  std::optional<EvalResult> last_evaluation_;
  EventLoop loop_;
  SimulatedClock server_clock_{&loop_};  // the servers': the loop's time (they never sleep)
  double step_seconds_ = 0;  // simulation.step_seconds, or measured here
  double apply_bytes_per_second_ = 0;  // simulation.apply_gbyte_per_s, or measured here
  std::vector<std::unique_ptr<ParameterServer>> servers_;
  std::vector<std::unique_ptr<CsvMetricsWriter>> server_metrics_;
  std::vector<SharedLink> to_servers_, from_servers_;
  std::vector<SerialProcessor> processors_;
  SimulatedNetwork network_;
  std::unique_ptr<DataSource> train_;             // read once for every worker's rows
  std::unique_ptr<TrainableModel> shared_model_;  // when WorkersShareModel
  std::vector<SimulatedWorker> workers_;
  std::optional<SimulatedEvaluator> evaluator_;
  absl::Status evaluation_ = absl::OkStatus();
  int finished_ = 0;
  Turns turns_;  // last: its threads, joined first, use everything above
};

absl::Status Simulation::BuildServers() {
  MONSOON_ASSIGN_OR_RETURN(ShardingPlan plan, JobShardingPlan(config_));
  ServerRules rules = ServerRules::FromConfig(config_);
  MONSOON_ASSIGN_OR_RETURN(rules.run_id, ReadRunId(run_dir_));
  const InitialValuesFn initial = ModelInitialValues(config_.model, config_.seed);
  const double bytes_per_second = config_.simulation.link_gbit * 1e9 / 8;
  const double latency = config_.simulation.latency_ms / 1e3;
  for (int j = 0; j < config_.cluster.servers; ++j) {
    servers_.push_back(std::make_unique<ParameterServer>(
        j, plan, initial, rules, config_.cluster.workers, config_.cluster.evaluator,
        server_clock_, ServerTicks::kByOwner));
    MONSOON_ASSIGN_OR_RETURN(
        server_metrics_.emplace_back(),
        CsvMetricsWriter::Create(run_dir_.server_metrics_path(j), ColumnNames<ServerMetricsRow>()));
    to_servers_.emplace_back(&loop_, bytes_per_second, latency);
    from_servers_.emplace_back(&loop_, bytes_per_second, latency);
    processors_.emplace_back(&loop_, apply_bytes_per_second_);
    network_.servers.push_back(servers_.back().get());
  }
  network_.loop = &loop_;
  network_.turns = &turns_;
  network_.to_servers = &to_servers_;
  network_.from_servers = &from_servers_;
  network_.processors = &processors_;
  return absl::OkStatus();
}

absl::Status Simulation::BuildWorker(int index, SimulatedWorker* w) {
  MONSOON_ASSIGN_OR_RETURN(const std::vector<uint64_t> rows, WorkerRows(config_, index, *train_));
  MONSOON_ASSIGN_OR_RETURN(w->shard, ReadShard(config_, index, rows, train_.get()));
  TrainableModel* model = shared_model_.get();
  if (model == nullptr) {
    MONSOON_ASSIGN_OR_RETURN(w->own_model, NativeModel(worker_config_, -1));
    model = w->own_model.get();
  }
  w->model = std::make_unique<StepTimedModel>(model, config_, step_seconds_, index, &w->clock);
  MONSOON_ASSIGN_OR_RETURN(w->metrics,
                           WorkerMetricsRecorder::Open(run_dir_, index, std::nullopt, w->clock));
  w->client = std::make_unique<SimulatedPsClient>(&network_, index, &w->clock);
  MONSOON_ASSIGN_OR_RETURN(
      w->trace,
      OpenSimulatedTrace(config_, run_dir_, absl::StrCat("worker-", index), kTraceWorkerPid + index,
                         absl::StrCat("worker ", index), WorkerTraceThreads(), w->clock));
  w->trainer =
      std::make_unique<TrainingWorker>(worker_config_, index, w->model.get(), w->shard.get(),
                                       w->client.get(), w->metrics.get(), w->trace.get(), w->clock);
  return absl::OkStatus();
}

absl::Status Simulation::BuildEvaluator() {
  if (!config_.cluster.evaluator) return absl::OkStatus();
  SimulatedEvaluator& e = evaluator_.emplace();
  MONSOON_ASSIGN_OR_RETURN(e.test, LoadSplit(config_, /*train=*/false));
  MONSOON_ASSIGN_OR_RETURN(e.model, NativeModel(config_, -1));
  e.client = std::make_unique<InProcessPsClient>(network_.servers,
                                                 ClientIdentity{RoleKind::kEvaluator, 0});
  MONSOON_RETURN_IF_ERROR(e.client->Resume().status());
  MONSOON_ASSIGN_OR_RETURN(e.metrics, CsvMetricsWriter::Create(run_dir_.evaluator_metrics_path(),
                                                               ColumnNames<EvaluatorMetricsRow>()));
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<EventFileWriter> events,
                           EventFileWriter::Create(run_dir_.tensorboard_dir("evaluator")));
  e.metrics->MirrorTo(std::move(events), "global_step");
  e.clock = std::make_unique<SimulatedClock>(&loop_);
  MONSOON_ASSIGN_OR_RETURN(
      e.trace, OpenSimulatedTrace(config_, run_dir_, "evaluator", kTraceEvaluatorPid, "evaluator",
                                  {"evaluator"}, *e.clock));
  e.evaluator = std::make_unique<Evaluator>(e.model.get(), &e.test, e.client.get(),
                                            config_.evaluation.batch_size, e.metrics.get(),
                                            e.trace.get(), 0, *e.clock);
  return absl::OkStatus();
}

absl::Status Simulation::Build() {
  apply_bytes_per_second_ = config_.simulation.apply_gbyte_per_s * 1e9;
  if (apply_bytes_per_second_ <= 0) {
    MONSOON_ASSIGN_OR_RETURN(apply_bytes_per_second_, MeasureApplyBytesPerSecond(config_));
  }
  MONSOON_RETURN_IF_ERROR(BuildServers());
  step_seconds_ = config_.simulation.step_seconds;
  if (step_seconds_ <= 0) {
    MONSOON_ASSIGN_OR_RETURN(step_seconds_, MeasureStepSeconds(config_));
  }
  MONSOON_ASSIGN_OR_RETURN(train_, OpenSplit(config_, /*train=*/true));
  if (WorkersShareModel(config_)) {
    MONSOON_ASSIGN_OR_RETURN(shared_model_, NativeModel(worker_config_, -1));
  }
  workers_.reserve(config_.cluster.workers);
  for (int i = 0; i < config_.cluster.workers; ++i) {
    workers_.emplace_back(&loop_);
    MONSOON_RETURN_IF_ERROR(BuildWorker(i, &workers_[i]));
  }
  train_.reset();
  return BuildEvaluator();
}

absl::Status Simulation::RecordServers() {
  for (size_t j = 0; j < servers_.size(); ++j) {
    MONSOON_RETURN_IF_ERROR(server_metrics_[j]->Append(
        RowValues(ServerMetricsRowOf(*servers_[j], servers_[j]->Stats(), loop_.seconds()))));
  }
  return absl::OkStatus();
}

void Simulation::Evaluate() {
  if (finished_ == config_.cluster.workers || !evaluation_.ok()) return;
  evaluation_ = RecordServers();
  if (evaluator_.has_value() && evaluation_.ok()) {
    absl::StatusOr<EvalResult> evaluated = EvaluateOnce();
    evaluation_ = evaluated.status();
    if (evaluated.ok()) last_evaluation_ = *std::move(evaluated);
  }
  // With no other event left the workers can never move again: let the loop end, and say so.
  if (loop_.pending() > 0) loop_.After(config_.evaluation.interval_seconds, [this] { Evaluate(); });
}

void Simulation::Watch() {
  const absl::Time now = absl::Now();
  if (stop_ != nullptr && stop_->load()) halt_ = true;
  if (now - started_ > absl::Seconds(config_.training.timeout_seconds)) {
    timed_out_ = true;
    halt_ = true;
  }
  if (now >= next_progress_) {
    ShowProgress(TimedLine(progress_, absl::ToDoubleSeconds(now - started_),
                           absl::StrFormat("simulated %.4g s | %s", loop_.seconds(),
                                           ProgressLine(config_, Progress()))),
                 isatty(STDERR_FILENO));
    next_progress_ = now + progress_.interval;
  }
}

JobProgress Simulation::Progress() const {
  JobProgress p;
  p.min_epoch = std::numeric_limits<double>::max();
  double samples = 0;
  for (const SimulatedWorker& w : workers_) {
    p.min_epoch = std::min(p.min_epoch, w.shard->progress());
    samples += w.shard->progress() * w.shard->size();
  }
  if (workers_.empty()) p.min_epoch = 0;
  p.samples_per_second = loop_.seconds() > 0 ? samples / loop_.seconds() : 0;
  p.worker_seconds = absl::ToDoubleSeconds(absl::Now() - started_);
  if (last_evaluation_.has_value()) {
    p.has_eval = true;
    p.test_accuracy = last_evaluation_->test_accuracy;
    p.test_loss = last_evaluation_->test_loss;
  }
  return p;
}

absl::StatusOr<EvalResult> Simulation::EvaluateOnce() {
  MONSOON_ASSIGN_OR_RETURN(const std::vector<ServerStats> stats, evaluator_->client->AllStats());
  return evaluator_->evaluator->Evaluate(stats);
}

absl::Status Simulation::WriteFinalWeights() {
  std::vector<float> weights(servers_.front()->plan().num_params());
  for (const Chunk& c : servers_.front()->plan().chunks()) {
    MONSOON_ASSIGN_OR_RETURN(const ChunkSnapshot s,
                             servers_[c.server]->Snapshot(c.id, kNotAWorker));
    std::copy(s.values->begin(), s.values->end(), weights.begin() + c.offset);
  }
  return WriteFileAtomically(
      run_dir_.params_path(),
      std::string(reinterpret_cast<const char*>(weights.data()), weights.size() * sizeof(float)));
}

absl::Status Simulation::Finish() {
  if (evaluator_.has_value()) {
    MONSOON_RETURN_IF_ERROR(EvaluateOnce().status());
    if (evaluator_->trace != nullptr) MONSOON_RETURN_IF_ERROR(evaluator_->trace->status());
  }
  for (const SimulatedWorker& w : workers_) {
    if (w.trace != nullptr) MONSOON_RETURN_IF_ERROR(w.trace->status());
  }
  MONSOON_RETURN_IF_ERROR(WriteFinalWeights());
  MONSOON_RETURN_IF_ERROR(RecordServers());
  for (const auto& server : servers_) {
    MONSOON_RETURN_IF_ERROR(WriteServerTables(run_dir_, *server, server->Stats()));
  }
  return absl::OkStatus();
}

// Why the simulation cannot finish: the first worker that failed, or those still waiting
// when no event was left.
absl::Status Simulation::WorkersStatus() const {
  std::vector<int> waiting;
  for (size_t i = 0; i < workers_.size(); ++i) {
    const absl::Status& s = workers_[i].report.status();
    if (s.ok()) continue;
    if (!absl::IsUnknown(s)) return Reworded(s, absl::StrCat("worker ", i, ": ", s.message()));
    waiting.push_back(static_cast<int>(i));
  }
  if (waiting.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("the simulation ran out of events at ", loop_.seconds(), " simulated s with ",
                   waiting.size(), " worker(s) still waiting, worker ", waiting.front(),
                   " first (a sync round or SSP bound no pushes can complete?)"));
}

double Simulation::BusiestServerShare() const {
  double busiest = 0;
  for (const SerialProcessor& p : processors_) busiest = std::max(busiest, p.busy_seconds());
  return loop_.seconds() > 0 ? busiest / loop_.seconds() : 0;
}

absl::StatusOr<JobProgress> Simulation::Run() {
  training_started_ = absl::Now();
  for (int i = 0; i < config_.cluster.workers; ++i) {
    turns_.Spawn([this, i] {
      workers_[i].report = workers_[i].trainer->Run(&halt_);
      // The job ends with its last worker, not at the evaluation due after it.
      if (++finished_ == config_.cluster.workers) loop_.Stop();
    });
    loop_.At(0, [this, i] { turns_.Resume(i); });
  }
  loop_.At(0, [this] { Evaluate(); });
  next_progress_ = absl::Now() + progress_.interval;
  loop_.Run(kWatchEvents, [this] { Watch(); });
  if (isatty(STDERR_FILENO)) std::cerr << std::endl;  // after the progress line in place
  if (timed_out_) {
    return absl::DeadlineExceededError(absl::StrCat(
        "simulated job still running after ", config_.training.timeout_seconds,
        " s of real time (training.timeout_seconds), at simulated ",
        absl::StrFormat("%.4g", loop_.seconds()), " s, epoch ",
        absl::StrFormat("%.2f", Progress().min_epoch), " of ", config_.training.epochs,
        ": stopped (fewer epochs or workers, or a higher training.timeout_seconds)"));
  }
  SimulationFacts facts{step_seconds_,
                        loop_.events_run(),
                        absl::ToDoubleSeconds(absl::Now() - started_),
                        absl::ToDoubleSeconds(training_started_ - started_),
                        apply_bytes_per_second_ / 1e9,
                        BusiestServerShare()};
  LOG(INFO) << "simulation: " << facts.events << " events, " << loop_.seconds()
            << " simulated s in " << facts.real_seconds << " s (steps of " << step_seconds_
            << " s; servers apply " << facts.apply_gbyte_per_s
            << " GB/s, the busiest for a share of " << facts.busiest_server_share << ")";
  if (facts.busiest_server_share > kBusyServerShare) {
    std::cerr << absl::StrFormat(
                     "monsoon: warning: the busiest simulated server spent %.0f %% of the "
                     "simulated time applying updates: the servers, not the workers, set this "
                     "job's pace (more servers would help, or check "
                     "simulation.apply_gbyte_per_s)",
                     100 * facts.busiest_server_share)
              << std::endl;
  }
  MONSOON_RETURN_IF_ERROR(WorkersStatus());
  MONSOON_RETURN_IF_ERROR(evaluation_);
  MONSOON_RETURN_IF_ERROR(Finish());
  return WriteSummary(config_, run_dir_, loop_.seconds(), &facts);
}

}  // namespace

absl::StatusOr<JobProgress> RunSimulatedJob(const JobConfig& config, const RunDir& run_dir,
                                            const ProgressOptions& progress,
                                            const std::atomic<bool>* stop) {
  absl::StatusOr<JobProgress> result = absl::UnknownError("the simulation did not run");
  MONSOON_RETURN_IF_ERROR(CatchOutOfMemory([&] {
    Simulation simulation(config, run_dir, progress, stop);
    MONSOON_RETURN_IF_ERROR(simulation.Build());
    result = simulation.Run();
    return result.status();
  }));
  return result;
}

}  // namespace monsoon
