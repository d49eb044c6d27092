// The training loops of every algorithm and the evaluator against in-process servers
// (no network): each fits y = 2.5 x - 1.25, and the loop-specific contracts hold.
#include "worker/training_worker.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <map>
#include <numeric>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "core/clock.h"
#include "core/compute/cpu/cpu_backend.h"
#include "core/data/data_source.h"
#include "tests/test_util.h"
#include "tests/worker/fault_injecting_ps_client.h"
#include "worker/evaluator.h"
#include "worker/host_batches.h"
#include "worker/in_process_ps_client.h"

namespace monsoon {
namespace {

// The system's time, plus every SleepFor, which returns at once: a worker's emulated delays
// count as they would without being waited out.
class FastForwardClock final : public Clock {
 public:
  absl::Time Now() const override {
    absl::MutexLock lock(&mu_);
    return absl::Now() + slept_;
  }
  void SleepFor(absl::Duration d) const override {
    absl::MutexLock lock(&mu_);
    slept_ += d;
  }

 private:
  mutable absl::Mutex mu_;
  mutable absl::Duration slept_ ABSL_GUARDED_BY(mu_);
};

// A linear-regression job over `servers` in-process servers (one chunk each) and `workers`
// workers; config.optimizer is the servers' SGD at rate `lr`.
struct LinearSetup {
  explicit LinearSetup(int servers, float lr = 0.1f, int workers = 1,
                       Algorithm algorithm = Algorithm::kDownpour) {
    LinearDataSpec data_spec;
    data_spec.slope = 2.5;
    data_spec.intercept = -1.25;
    data_spec.noise = 0.0;
    data_spec.rows = 400;
    data = GenerateLinearDataset(data_spec);
    config.model.type = ModelType::kLinearRegression;
    config.model.input_dim = 1;
    config.model.output_dim = 1;
    config.model.loss = LossType::kMeanSquaredError;
    config.cluster.servers = servers;
    config.cluster.workers = workers;
    config.training.algorithm = algorithm;
    config.optimizer.learning_rate = lr;
    plan = *ShardingPlan::Create(2, servers, 2);  // one chunk per server
  }
  // Builds the servers from `config` (call after adjusting it).
  void Start() {
    for (int j = 0; j < config.cluster.servers; ++j) {
      servers_.push_back(std::make_unique<ParameterServer>(
          j, plan, ModelInitialValues(config.model, 1), ServerRules::FromConfig(config),
          config.cluster.workers, false));
      raw.push_back(servers_.back().get());
    }
  }
  // RunWorkers with the run directory TEST_TMPDIR/name; returns each worker's metrics table.
  std::vector<CsvTable> RunWorkersReadingMetrics(const std::string& name) {
    const RunDir dir{absl::StrCat(std::getenv("TEST_TMPDIR"), "/", name)};
    std::filesystem::create_directories(dir.metrics_dir());
    RunWorkers(dir.root);
    std::vector<CsvTable> tables;
    for (int i = 0; i < config.cluster.workers; ++i) {
      auto table = ReadCsvTable(dir.worker_metrics_path(i));
      REQUIRE(table.ok());
      tables.push_back(*std::move(table));
    }
    return tables;
  }
  std::vector<float> Weights() {
    InProcessPsClient reader(raw, {RoleKind::kEvaluator, 0});
    std::vector<float> w(2);
    REQUIRE(reader.PullAll(absl::MakeSpan(w), {}, nullptr).ok());
    return w;
  }
  // Runs every worker in its own thread to the end; returns their reports. With a run_dir,
  // worker i records its metrics in RUN_DIR/metrics/worker-i.csv, carrying on the totals of
  // the rows already there.
  std::vector<WorkerReport> RunWorkers(const std::string& run_dir = "") {
    const int n = config.cluster.workers;
    std::vector<absl::StatusOr<WorkerReport>> results(n, absl::UnknownError("not run"));
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) {
      threads.emplace_back([&, i] {
        CpuBackend backend;
        auto model = Model::Create(config.model, &backend);
        const Dataset part = *InMemorySource(data).Read(ShardRows(data.size(), i, n, 3));
        DataShard shard(part, i, 3);
        InProcessPsClient client(raw, {RoleKind::kWorker, i});
        const FastForwardClock fast_forward;
        const Clock& clock = fast_forward_sleeps ? fast_forward : Clock::System();
        std::unique_ptr<WorkerMetricsRecorder> metrics;
        if (!run_dir.empty())
          metrics = *WorkerMetricsRecorder::Open(RunDir{run_dir}, i, std::nullopt, clock);
        TrainingWorker worker(config, i, model->get(), &shard, &client, metrics.get(), nullptr,
                              clock);
        results[i] = worker.Run(nullptr);
      });
    }
    for (auto& t : threads) t.join();
    std::vector<WorkerReport> reports;
    for (auto& r : results) {
      REQUIRE(r.ok());
      reports.push_back(*r);
    }
    return reports;
  }
  Dataset data;
  JobConfig config;
  bool fast_forward_sleeps = false;  // the workers' clocks: FastForwardClock, else the system's
  ShardingPlan plan;
  std::vector<std::unique_ptr<ParameterServer>> servers_;
  std::vector<ParameterServer*> raw;
};

TEST_CASE("TrainingWorker (downpour): fits y = 2.5 x - 1.25 through two sharded servers",
          "[worker][downpour]") {
  LinearSetup setup(2);
  setup.config.training.epochs = 30;
  setup.config.training.batch_size = 20;
  setup.Start();
  const auto reports = setup.RunWorkers();
  CHECK(reports[0].steps == 30 * 20);
  CHECK(reports[0].samples == 30 * 400);
  const auto w = setup.Weights();
  CHECK(w[0] == Approx(2.5).margin(1e-3));
  CHECK(w[1] == Approx(-1.25).margin(1e-3));
  CHECK(setup.raw[0]->Stats().workers_finished == 1);
}

TEST_CASE("TrainingWorker (downpour): pulling with each push trains exactly as separate pulls",
          "[worker][downpour]") {
  std::vector<float> weights[2];
  for (const bool pull_with_push : {true, false}) {
    LinearSetup setup(2);
    setup.config.training.epochs = 5;
    setup.config.training.batch_size = 20;
    setup.config.transport.pull_with_push = pull_with_push;
    setup.Start();
    const auto reports = setup.RunWorkers();
    CHECK(reports[0].pushes == 5 * 20);
    // One pull before the first step, then one after every push but the last.
    CHECK(setup.raw[0]->Stats().pulls_served == 5 * 20);
    weights[pull_with_push ? 0 : 1] = setup.Weights();
  }
  CHECK(weights[0] == weights[1]);  // one worker: the same weights at every step
}

TEST_CASE("TrainingWorker (downpour): n_push accumulates gradients and pushes every n_push steps",
          "[worker][downpour]") {
  LinearSetup setup(1);
  setup.config.training.epochs = 1;
  setup.config.training.batch_size = 40;  // 10 steps per epoch
  setup.config.downpour.n_push = 4;
  setup.config.downpour.n_fetch = 4;
  setup.Start();
  setup.RunWorkers();
  // 10 steps: pushes after steps 4 and 8, and the remainder (2 steps) at the end.
  CHECK(setup.raw[0]->Stats().pushes_applied == 3);
  CHECK(setup.raw[0]->Stats().pulls_served == 3);  // fetches before steps 1, 5, 9
}

TEST_CASE("TrainingWorker (downpour): the sum pushed after n_push steps equals the gradients' sum",
          "[worker][downpour]") {
  // With every fetch skipped after the first, n_push = 2 steps from identical weights must move
  // the server exactly as two single pushes of the same gradients would, under SGD.
  auto run = [](int n_push) {
    LinearSetup s(1, 0.05f);
    s.config.training.epochs = 1;
    s.config.training.batch_size = 200;  // 2 steps
    s.config.downpour.n_fetch = 2;
    s.config.downpour.n_push = n_push;
    s.Start();
    s.RunWorkers();
    CHECK(s.raw[0]->Stats().pushes_applied == static_cast<uint64_t>(2 / n_push));
    return s.Weights();
  };
  const auto a = run(2), b = run(1);
  CHECK(a[0] == Approx(b[0]));
  CHECK(a[1] == Approx(b[1]));
}

TEST_CASE("TrainingWorker (downpour): warm start lets worker 0 train alone first",
          "[worker][downpour]") {
  LinearSetup setup(1, 0.1f, 2);
  setup.config.training.epochs = 10;
  setup.config.training.batch_size = 20;  // 10 steps per epoch per worker
  setup.config.downpour.warm_start_steps = 15;
  setup.Start();
  const CsvTable table = setup.RunWorkersReadingMetrics("warm_start")[1];
  // Worker 1's first pull waited for version 15: worker 0's first 15 pushes.
  REQUIRE(table.rows.size() == 100);
  CHECK(table.rows[0][table.Column("version")] >= 15);
  CHECK(setup.raw[0]->Stats().pushes_applied == 200);
  const auto w = setup.Weights();
  CHECK(w[0] == Approx(2.5).margin(0.05));
}

TEST_CASE("TrainingWorker: a metrics row's version is that of the weights its step used",
          "[worker][downpour]") {
  // One worker, a pull before every step: step k computes with the weights after k - 1
  // pushes, whether the pull is its own call or came back with the previous push.
  for (const bool pull_with_push : {true, false}) {
    LinearSetup setup(1);
    setup.config.training.epochs = 1;
    setup.config.training.batch_size = 40;  // 10 steps
    setup.config.transport.pull_with_push = pull_with_push;
    setup.Start();
    const CsvTable table =
        setup.RunWorkersReadingMetrics(pull_with_push ? "versions_with_push" : "versions_alone")[0];
    REQUIRE(table.rows.size() == 10);
    for (size_t k = 0; k < table.rows.size(); ++k) {
      CHECK(table.rows[k][table.Column("version")] == static_cast<double>(k));
    }
  }
}

TEST_CASE("TrainingWorker: a restarted worker's metrics and report carry on its earlier totals",
          "[worker]") {
  LinearSetup setup(1);
  setup.config.training.epochs = 1;
  setup.config.training.batch_size = 40;  // 10 steps of 40 samples
  setup.Start();
  // The earlier process's last row: 100 s, 4000 samples, 5 MB out, 6 MB in, 7 s in calls.
  const RunDir dir{absl::StrCat(std::getenv("TEST_TMPDIR"), "/carried")};
  std::filesystem::create_directories(dir.metrics_dir());
  {
    auto earlier =
        CsvMetricsWriter::Create(dir.worker_metrics_path(0), ColumnNames<WorkerMetricsRow>());
    REQUIRE(earlier.ok());
    WorkerMetricsRow row;
    row.wall_seconds = 100;
    row.samples_per_second = 40;
    row.bytes_sent = 5e6;
    row.bytes_received = 6e6;
    row.comm_seconds = 7;
    REQUIRE((*earlier)->Append(RowValues(row)).ok());
  }
  const WorkerReport report = setup.RunWorkers(dir.root)[0];
  CHECK(report.samples == 4000 + 400);
  CHECK(report.wall_seconds >= 100);
  CHECK(report.comm_seconds >= 7);
  auto table = ReadCsvTable(dir.worker_metrics_path(0));
  REQUIRE(table.ok());
  REQUIRE(table->rows.size() == 1 + 10);
  const std::vector<double>& first = table->rows[1];
  CHECK(first[table->Column("wall_seconds")] >= 100);
  CHECK(first[table->Column("bytes_sent")] == 5e6 + 2 * sizeof(float));  // one push of 2 floats
  // The first pull, and the next step's weights back with the push (transport.pull_with_push).
  CHECK(first[table->Column("bytes_received")] == 6e6 + 2 * 2 * sizeof(float));
  CHECK(first[table->Column("comm_seconds")] >= 7);
  // What the next process of this worker reads back from the last row.
  const auto last = ReadLastRow<WorkerMetricsRow>(dir.worker_metrics_path(0));
  REQUIRE(last.ok());
  REQUIRE(last->has_value());
  const WorkerTotals next = WorkerTotals::FromMetricsRow(**last);
  CHECK(next.samples == 4400);
  CHECK(next.bytes_sent == 5e6 + 10 * 2 * sizeof(float));
  CHECK(next.bytes_received == 6e6 + 10 * 2 * sizeof(float));
  CHECK(next.wall_seconds < report.wall_seconds);  // the last row comes before Finish
  CHECK(next.wall_seconds >= 100);
  const WorkerTotals none = WorkerTotals::FromMetricsRow(WorkerMetricsRow{});
  CHECK(none.wall_seconds == 0);
  CHECK(none.samples == 0);
}

TEST_CASE("TrainingWorker: emulated stragglers are delayed as configured, recorded in the metrics",
          "[worker]") {
  // Fixed 20 ms delays with probability 0.25 over 40 steps of each of 2 workers; worker 1 is
  // also 3x slow. The draws depend on (seed, worker, step) alone: the same in every run.
  LinearSetup setup(1, 0.1f, 2);
  setup.config.training.epochs = 2;
  setup.config.training.batch_size = 10;  // 20 steps an epoch on 200 rows
  setup.config.stragglers.probability = 0.25;
  setup.config.stragglers.delay_ms = 20;
  setup.config.stragglers.distribution = DelayDistribution::kFixed;
  setup.config.stragglers.slow_workers = {1};
  setup.config.stragglers.slow_factor = 3;
  setup.fast_forward_sleeps = true;
  setup.Start();
  const std::vector<CsvTable> tables = setup.RunWorkersReadingMetrics("stragglers");
  std::vector<double> delays;
  for (const CsvTable& t : tables) {
    REQUIRE(t.rows.size() == 40);
    delays.push_back(t.rows.back()[t.Column("emulated_delay_seconds")]);
    // Cumulative, within the wall time.
    CHECK(delays.back() <= t.rows.back()[t.Column("wall_seconds")]);
  }
  // Worker 0: a whole number of 20 ms delays, about a quarter of its 40 steps.
  const double delayed = delays[0] / 0.020;
  CHECK(std::abs(delayed - std::round(delayed)) < 1e-6);
  CHECK(delayed >= 4);
  CHECK(delayed <= 18);
  // Worker 1 adds twice its compute time to its own share of delays.
  CHECK(delays[1] > 0);
  LinearSetup again(1, 0.1f, 2);
  again.config = setup.config;
  again.fast_forward_sleeps = true;
  again.Start();
  const std::vector<CsvTable> rerun = again.RunWorkersReadingMetrics("stragglers_again");
  CHECK(rerun[0].rows.back()[rerun[0].Column("emulated_delay_seconds")] == delays[0]);
}

TEST_CASE("TrainingWorker (sync): uneven shards and backup workers train, and all exit",
          "[worker][sync]") {
  // 400 examples over 3 workers: shards of 133, 133 and 134; over 7 workers, batches of 19
  // give 3 steps per epoch to some and 4 to others. quorum 2 of 3 leaves one backup worker
  // whose late gradients are dropped, chunk by chunk.
  struct Case {
    int workers, quorum, batch;
  };
  for (const Case& c : {Case{3, 0, 50}, Case{7, 0, 19}, Case{3, 2, 50}}) {
    LinearSetup setup(2, 0.25f, c.workers, Algorithm::kSync);
    setup.config.training.epochs = 40;
    setup.config.training.batch_size = c.batch;
    setup.config.sync.quorum = c.quorum;
    setup.Start();
    const auto reports = setup.RunWorkers();
    int64_t most = 0;
    for (const auto& r : reports) most = std::max(most, r.steps);
    ChunkVersions versions;
    std::vector<float> w(2);
    InProcessPsClient reader(setup.raw, {RoleKind::kEvaluator, 0});
    REQUIRE(reader.PullAll(absl::MakeSpan(w), {}, &versions).ok());
    if (c.quorum == 0) {
      // Every round averages one gradient per live worker: as many rounds as the most steps.
      CHECK(setup.raw[0]->Stats().pushes_dropped == 0);
      CHECK(versions[0] == static_cast<uint64_t>(most));
    }
    CHECK(w[0] == Approx(2.5).margin(0.02));
    CHECK(w[1] == Approx(-1.25).margin(0.02));
  }
}

TEST_CASE("TrainingWorker (ssp): no worker starts a step more than `bound` pushes ahead",
          "[worker][ssp]") {
  // bound 0 is lock-step (BSP's synchronisation without its averaging).
  for (int bound : {1, 0}) {
    LinearSetup setup(1, 0.1f, 3, Algorithm::kSsp);
    setup.config.training.epochs = 20;
    setup.config.training.batch_size = 10;
    setup.config.ssp.bound = bound;
    setup.Start();
    int64_t rows = 0;
    for (const CsvTable& table : setup.RunWorkersReadingMetrics(absl::StrCat("ssp", bound))) {
      const int step = table.Column("step"), slowest = table.Column("slowest_clock");
      for (const auto& row : table.rows) {
        // Row k describes step k (1-based), which started at clock k - 1 after a pull that saw
        // the slowest live worker's clock.
        const double lead = row[step] - 1 - row[slowest];
        REQUIRE(lead <= bound);
        ++rows;
      }
    }
    CHECK(rows == 3 * 20 * 14);  // 133-134 examples: 14 steps of 10 per epoch
    CHECK(setup.Weights()[0] == Approx(2.5).margin(0.02));
  }
}

TEST_CASE("TrainingWorker: overlapping pushes and pulls with compute keeps each contract",
          "[worker][overlap]") {
  SECTION("downpour, push_pull: each push brings back the weights for the step after next") {
    for (int workers : {1, 2}) {
      LinearSetup setup(2, 0.1f, workers);
      setup.config.training.epochs = 30;
      setup.config.training.batch_size = 20;
      setup.config.transport.overlap = Overlap::kPushPull;
      setup.Start();
      const auto tables = setup.RunWorkersReadingMetrics(absl::StrCat("push_pull_", workers));
      CHECK(setup.raw[0]->Stats().pushes_applied == 600);  // 30 epochs of 400 examples
      const auto w = setup.Weights();
      CHECK(w[0] == Approx(2.5).margin(0.02));
      CHECK(w[1] == Approx(-1.25).margin(0.02));
      if (workers > 1) continue;
      // One worker: step k (0-based) from the third on computes with the weights after every
      // push but the one in flight, that of step k - 1.
      const CsvTable& table = tables[0];
      REQUIRE(table.rows.size() == 600);
      const int version = table.Column("version");
      CHECK(table.rows[0][version] == 0);
      CHECK(table.rows[1][version] <= 1);  // pulled while the first push may be in flight
      for (size_t k = 2; k < table.rows.size(); ++k) {
        INFO("step " << k);
        CHECK(table.rows[k][version] == k - 1);
      }
    }
  }
  SECTION("downpour, push_pull, n_push 2, n_fetch 3: only pushes before a fetch bring weights") {
    // Pushes after steps 1, 3, 5, ...; fetches before steps 0, 3, 6, .... A push's reply is
    // waited for at the next push, so the weights it brings serve the fetches in the two steps
    // after that: the push after step 3 serves step 6, the one after step 5 step 9, the one
    // after step 7 none (the push after step 9 serves step 12). Step 3 pulls.
    LinearSetup setup(1, 0.05f, 1);
    setup.config.training.epochs = 5;
    setup.config.training.batch_size = 20;
    setup.config.downpour.n_push = 2;
    setup.config.downpour.n_fetch = 3;
    setup.config.transport.overlap = Overlap::kPushPull;
    setup.Start();
    const CsvTable table = setup.RunWorkersReadingMetrics("push_pull_n")[0];
    REQUIRE(table.rows.size() == 100);
    const int version = table.Column("version");
    for (int k = 6; k < 100; ++k) {
      // Every push started before the last fetch step but the one still in flight.
      const int fetch = k / 3 * 3;
      INFO("step " << k);
      CHECK(table.rows[k][version] == fetch / 2 - 1);
    }
    CHECK(setup.raw[0]->Stats().pushes_applied == 50);
  }
  SECTION("sync, push: one round per step, none dropped") {
    LinearSetup setup(2, 0.25f, 3, Algorithm::kSync);
    setup.config.training.epochs = 20;
    setup.config.training.batch_size = 50;
    setup.config.transport.overlap = Overlap::kPush;
    setup.Start();
    const auto reports = setup.RunWorkers();
    ChunkVersions versions;
    std::vector<float> w(2);
    InProcessPsClient reader(setup.raw, {RoleKind::kEvaluator, 0});
    REQUIRE(reader.PullAll(absl::MakeSpan(w), {}, &versions).ok());
    CHECK(versions[0] == static_cast<uint64_t>(reports[0].steps));
    CHECK(setup.raw[0]->Stats().pushes_dropped == 0);
    CHECK(w[0] == Approx(2.5).margin(0.02));
  }
  SECTION("ssp, push: the bound still holds") {
    LinearSetup setup(1, 0.1f, 3, Algorithm::kSsp);
    setup.config.training.epochs = 10;
    setup.config.training.batch_size = 10;
    setup.config.ssp.bound = 1;
    setup.config.transport.overlap = Overlap::kPush;
    setup.Start();
    for (const CsvTable& table : setup.RunWorkersReadingMetrics("ssp_overlap")) {
      for (const auto& row : table.rows) {
        REQUIRE(row[table.Column("step")] - 1 - row[table.Column("slowest_clock")] <= 1);
      }
    }
  }
}

// A CPU backend that pins nothing but keeps the books of a GPU's: which host ranges are pinned,
// and whether every copy during training touches pinned memory only.
class PinCountingBackend : public CpuBackend {
 public:
  bool separate_memory() const override { return separate; }
  HostPin PinHostMemory(float* host, size_t n) override {
    pinned_.emplace(host, n);
    return HostPin([this, host] { pinned_.erase(host); });
  }
  void CopyToDevice(const float* host, float* device, size_t n) override {
    Touch(host, n);
    CpuBackend::CopyToDevice(host, device, n);
  }
  size_t CopyToHostFindingNonFinite(const float* device, float* host, size_t n) override {
    Touch(host, n);
    return CpuBackend::CopyToHostFindingNonFinite(device, host, n);
  }
  void StartCopyToHost(const float* device, float* host, size_t n) override {
    Touch(host, n);
    ++started;
  }
  void StartCopyToDevice(const float* host, float* device, size_t n) override {
    Touch(host, n);
    ++started_uploads;
    CpuBackend::CopyToDevice(host, device, n);
  }
  bool separate = false;  // as a GPU's memory: batches prefetched
  bool training = false;  // count copies from now on
  int copies = 0, unpinned_copies = 0, started = 0, started_uploads = 0;
  size_t pins() const { return pinned_.size(); }

 private:
  void Touch(const float* host, size_t n) {
    if (!training) return;
    ++copies;
    auto it = pinned_.upper_bound(host);
    const bool inside =
        it != pinned_.begin() && host + n <= std::prev(it)->first + std::prev(it)->second;
    if (!inside) ++unpinned_copies;
  }
  std::map<const float*, size_t> pinned_;
};

// With memory apart from the host's (and no room to hold the shard there), each batch is
// prefetched from the other of two pinned buffers.
TEST_CASE("TrainingWorker: every copy of a training step goes through pinned buffers",
          "[worker][pinned]") {
  const bool separate = GENERATE(false, true);
  for (const Overlap overlap : {Overlap::kNone, Overlap::kPushPull}) {
    for (const int n_push : {1, 2}) {
      INFO("overlap " << kOverlapNames.Name(overlap) << ", n_push " << n_push << ", separate "
                      << separate);
      LinearSetup setup(2, 0.1f, 1);
      setup.config.training.epochs = 2;
      setup.config.training.batch_size = 30;  // 400 rows: a last batch of 10 in each epoch
      setup.config.downpour.n_push = n_push;
      setup.config.transport.overlap = overlap;
      setup.config.compute.gpu_data_mib = 0;
      setup.Start();
      PinCountingBackend backend;
      backend.separate = separate;
      auto model = Model::Create(setup.config.model, &backend);
      REQUIRE(model.ok());
      DataShard shard(setup.data, 0, 3);
      InProcessPsClient client(setup.raw, {RoleKind::kWorker, 0});
      {
        TrainingWorker worker(setup.config, 0, model->get(), &shard, &client, nullptr, nullptr);
        backend.training = true;
        const auto report = worker.Run(nullptr);
        REQUIRE(report.ok());
        CHECK(report->steps == 28);
        // Weights in and the batch each step, the gradient out, started layer by layer.
        CHECK(backend.copies >= 3 * 28);
        CHECK(backend.started == 28);
        // Each step starts the next batch, the 29th too (the next epoch's first).
        CHECK(backend.started_uploads == (separate ? 2 * 28 : 0));
        CHECK((*model)->prefetched_batches() == (separate ? 27 : 0));
        CHECK(backend.unpinned_copies == 0);
        CHECK(backend.pins() == (separate ? 4 : 2));  // the batches', which live with the worker
      }
      CHECK(backend.pins() == 0);
    }
  }
}

// A CPU backend whose memory counts as apart from the host's, as a GPU's does, counting the
// batches gathered there.
class SeparateMemoryBackend : public CpuBackend {
 public:
  bool separate_memory() const override { return true; }
  void GatherRows(const float* table, int cols, const float* index, int rows, float* out) override {
    ++gathers;
    CpuBackend::GatherRows(table, cols, index, rows, out);
  }
  int gathers = 0;
};

// For a model that prefetches, each batch is drawn a step ahead; the batches and the position
// and progress reported are those of the shard without it, across epochs and a Seek, whether
// the shard is held or streamed.
TEST_CASE("HostBatches: batches drawn ahead are the shard's, at the shard's position",
          "[worker][prefetch]") {
  Dataset rows;
  rows.feature_dim = 3;
  for (int r = 0; r < 25; ++r) {
    rows.features.insert(rows.features.end(), {1.0f * r, 2.0f * r, 3.0f * r});
    rows.targets.push_back(static_cast<float>(r % 4));
  }
  // Held in memory, or read from its source batch by batch (a read of its own ahead too).
  const bool streamed = GENERATE(false, true);
  INFO("streamed " << streamed);
  std::vector<uint64_t> all(25);
  std::iota(all.begin(), all.end(), 0);
  DataShard held(rows, 0, 7), plain(rows, 0, 7);
  DataShard from_source(std::make_unique<InMemorySource>(rows), all, 0, 7);
  DataShard& shard = streamed ? from_source : held;
  REQUIRE(shard.streamed() == streamed);
  SeparateMemoryBackend backend;
  ModelSpec spec;
  spec.type = ModelType::kSoftmaxRegression;
  spec.input_dim = 3;
  spec.output_dim = 4;
  auto model = Model::Create(spec, &backend);
  REQUIRE(model.ok());
  REQUIRE((*model)->prefetches_batches());
  HostBatches batches(&shard, model->get(), 10);
  std::vector<float> x, y;
  for (int step = 0; step < 12; ++step) {
    INFO("step " << step);
    if (step == 8) {  // back to the middle of epoch 1
      const DataPosition at{5, 1, 10};
      REQUIRE(batches.Seek(at).ok());
      REQUIRE(plain.Seek(at).ok());
    }
    const auto batch = batches.Next();
    REQUIRE(batch.ok());
    const auto want = plain.NextBatch(10, &x, &y);
    REQUIRE(want.ok());
    REQUIRE(batch->rows == *want);  // 10, 10, 5 each epoch
    CHECK(std::vector<float>(batch->x, batch->x + 3 * batch->rows) == x);
    CHECK(std::vector<float>(batch->y, batch->y + batch->rows) == y);
    CHECK(batches.progress() == plain.progress());
    const DataPosition got = batches.Position(step), expected = plain.Position(step);
    CHECK(got.epoch == expected.epoch);
    CHECK(got.cursor == expected.cursor);
  }
}

TEST_CASE("TrainingWorker: a model holding the shard trains exactly as one uploading batches",
          "[worker][held]") {
  std::map<std::string, std::vector<float>> weights;
  for (const std::string way : {"uploaded", "held", "over budget"}) {
    LinearSetup setup(1, 0.1f, 1);
    setup.config.training.epochs = 10;
    setup.config.training.batch_size = 30;
    setup.config.compute.gpu_data_mib = way == "over budget" ? 0 : 1;
    setup.Start();
    std::unique_ptr<CpuBackend> backend = way == "uploaded"
                                              ? std::make_unique<CpuBackend>()
                                              : std::make_unique<SeparateMemoryBackend>();
    auto model = Model::Create(setup.config.model, backend.get());
    REQUIRE(model.ok());
    DataShard shard(setup.data, 0, 3);
    InProcessPsClient client(setup.raw, {RoleKind::kWorker, 0});
    TrainingWorker worker(setup.config, 0, model->get(), &shard, &client, nullptr, nullptr);
    REQUIRE(worker.Run(nullptr).ok());
    weights[way] = setup.Weights();
    if (way != "uploaded") {
      // Features and targets of each of 10 x 14 batches, where the shard fits the budget.
      CHECK(static_cast<SeparateMemoryBackend*>(backend.get())->gathers ==
            (way == "held" ? 2 * 140 : 0));
      // Over budget, every batch but the first was prefetched during the step before it.
      CHECK((*model)->prefetched_batches() == (way == "held" ? 0 : 139));
    }
  }
  CHECK(weights["held"] == weights["uploaded"]);
  CHECK(weights["over budget"] == weights["uploaded"]);
  CHECK(weights["held"][0] == Approx(2.5).margin(0.05));
}

TEST_CASE("TrainingWorker (easgd, eamsgd): elastic averaging fits the line at the centre",
          "[worker][easgd]") {
  // With overlap the exchange runs during the next steps and its force lands after the first
  // step that ends with it arrived: up to tau steps late, and how late depends on the threads'
  // timing. That slows the centre's convergence, so the overlapped runs train three times as
  // long (at 30 epochs, 5 runs in 100 under load missed the margin; at 60, one full CI run).
  for (const Overlap overlap : {Overlap::kNone, Overlap::kPush}) {
    for (Algorithm algorithm : {Algorithm::kEasgd, Algorithm::kEamsgd}) {
      LinearSetup setup(2, 0.1f, 2, algorithm);
      setup.config.training.epochs = overlap == Overlap::kNone ? 30 : 90;
      setup.config.training.batch_size = 20;
      setup.config.easgd.tau = 4;
      setup.config.easgd.learning_rate = algorithm == Algorithm::kEasgd ? 0.1 : 0.02;
      setup.config.easgd.momentum = 0.9;
      setup.config.transport.overlap = overlap;
      setup.Start();
      const auto reports = setup.RunWorkers();
      // 300 steps each (900 with overlap): 75 (225) exchanges per worker per chunk.
      const uint64_t exchanges = overlap == Overlap::kNone ? 75 : 225;
      CHECK(reports[0].pushes == static_cast<int64_t>(exchanges));
      CHECK(setup.raw[0]->Stats().pushes_applied == 2 * exchanges);
      const auto w = setup.Weights();
      INFO(kAlgorithmNames.Name(algorithm) << ", overlap " << kOverlapNames.Name(overlap));
      CHECK(w[0] == Approx(2.5).margin(0.02));
      CHECK(w[1] == Approx(-1.25).margin(0.02));
    }
  }
}

// Runs worker 0 of `setup` through `client` to the end, with its metrics in the run directory
// TEST_TMPDIR/name.
absl::StatusOr<WorkerReport> RunWorkerZero(LinearSetup& setup, PsClient* client,
                                           const std::string& name,
                                           const std::atomic<bool>* stop = nullptr) {
  CpuBackend backend;
  auto model = Model::Create(setup.config.model, &backend);
  DataShard shard(setup.data, 0, 3);
  const RunDir run_dir{absl::StrCat(std::getenv("TEST_TMPDIR"), "/", name)};
  std::filesystem::create_directories(run_dir.metrics_dir());
  auto metrics = WorkerMetricsRecorder::Open(run_dir, 0);
  REQUIRE(metrics.ok());
  TrainingWorker worker(setup.config, 0, model->get(), &shard, client, metrics->get(), nullptr);
  return worker.Run(stop);
}

TEST_CASE(
    "TrainingWorker (easgd): an overlapped exchange slower than tau steps lands before the "
    "next one starts",
    "[worker][easgd][overlap]") {
  // Exchange k starts after step 4k and is held until the worker has written the rows of two
  // more steps: the worker computes on, and must apply each force before sending the next
  // exchange, never drop it.
  LinearSetup setup(1, 0.1f, 1, Algorithm::kEasgd);
  setup.config.training.epochs = 30;
  setup.config.training.batch_size = 40;  // 10 steps per epoch, 300 in all: 75 exchanges
  setup.config.easgd.tau = 4;
  setup.config.easgd.learning_rate = 0.1;
  setup.config.transport.overlap = Overlap::kPush;
  setup.Start();
  FaultInjectingPsClient client(setup.raw, {RoleKind::kWorker, 0});
  client.OnCall(FaultInjectingPsClient::kExchange, [&](int k) {
    client.AwaitCounterReads(std::min(4 * k + 2, 300));  // one read per metrics row
    return absl::OkStatus();
  });
  auto report = RunWorkerZero(setup, &client, "slow_exchanges");
  REQUIRE(report.ok());
  CHECK(report->pushes == 75);
  CHECK(setup.raw[0]->Stats().pushes_applied == 75);
  auto table = ReadCsvTable(
      RunDir{absl::StrCat(std::getenv("TEST_TMPDIR"), "/slow_exchanges")}.worker_metrics_path(0));
  REQUIRE(table.ok());
  REQUIRE(table->rows.size() == 300);
  const int step = table->Column("step"), version = table->Column("version");
  int computed_on = 0;  // steps 4k + 1 that ended with exchange k still in flight
  for (const auto& row : table->rows) {
    // Exchange k starts after step 4k; by the row of step 4(k + 1) its force has landed (the
    // row's version counts the exchanges applied), and it cannot land before it started.
    const int s = static_cast<int>(row[step]);
    INFO("step " << s);
    CHECK(row[version] >= std::max(0, s / 4 - 1));
    CHECK(row[version] <= s / 4);
    if (s % 4 == 1 && row[version] < s / 4) ++computed_on;
  }
  CHECK(computed_on == 74);  // every exchange but the last, which ends the run
  // Still a fit, if a looser one: every force lands up to tau steps late.
  const auto w = setup.Weights();
  CHECK(w[0] == Approx(2.5).margin(0.05));
  CHECK(w[1] == Approx(-1.25).margin(0.05));
}

TEST_CASE("TrainingWorker: a failed call ends the loop with its status; nothing in flight is lost",
          "[worker][faults]") {
  // One worker of 10 steps, its pushes overlapped with the next step; each section adjusts the
  // config, then starts the servers and the client whose calls it fails.
  LinearSetup setup(1);
  setup.config.training.batch_size = 40;
  setup.config.transport.overlap = Overlap::kPush;
  std::unique_ptr<FaultInjectingPsClient> client;
  const auto start = [&] {
    setup.Start();
    client =
        std::make_unique<FaultInjectingPsClient>(setup.raw, ClientIdentity{RoleKind::kWorker, 0});
  };
  SECTION("a push that fails while the next step computes") {
    start();
    client->OnCall(FaultInjectingPsClient::kPush, [](int n) {
      return n == 3 ? absl::UnavailableError("server 0: connection reset") : absl::OkStatus();
    });
    const absl::Status status = RunWorkerZero(setup, client.get(), "failed_push").status();
    CHECK(absl::IsUnavailable(status));
    CHECK(status.message() == "server 0: connection reset");
    CHECK(setup.raw[0]->Stats().pushes_applied == 2);
  }
  SECTION("a stop while a push is in flight: the loop stops, and waits for the push") {
    start();
    // Push 2 is held until the loop has written step 2's row, which asks the loop to stop.
    std::atomic<bool> stop{false};
    client->OnCall(FaultInjectingPsClient::kPush, [&](int n) {
      if (n == 2) client->AwaitCounterReads(2);
      return absl::OkStatus();
    });
    client->OnCounterRead([&](int n) {
      if (n == 2) stop = true;
      return absl::OkStatus();
    });
    const absl::Status status = RunWorkerZero(setup, client.get(), "stopped", &stop).status();
    CHECK(absl::IsCancelled(status));
    CHECK(setup.raw[0]->Stats().pushes_applied == 2);
  }
  SECTION("a pull that times out") {
    setup.config.transport.overlap = Overlap::kNone;
    setup.config.transport.pull_with_push = false;
    start();
    client->OnCall(FaultInjectingPsClient::kPull, [](int n) {
      return n == 2 ? absl::DeadlineExceededError("server 0: the pull waited 30 s")
                    : absl::OkStatus();
    });
    const absl::Status status = RunWorkerZero(setup, client.get(), "pull_timeout").status();
    CHECK(absl::IsDeadlineExceeded(status));
    CHECK(status.message() == "server 0: the pull waited 30 s");
    CHECK(setup.raw[0]->Stats().pushes_applied == 1);
  }
  SECTION("an exchange that fails in flight (easgd)") {
    setup.config.training.algorithm = Algorithm::kEasgd;
    setup.config.easgd.tau = 2;
    start();
    client->OnCall(FaultInjectingPsClient::kExchange, [](int n) {
      return n == 2 ? absl::UnavailableError("server 0: gone") : absl::OkStatus();
    });
    const absl::Status status = RunWorkerZero(setup, client.get(), "failed_exchange").status();
    CHECK(absl::IsUnavailable(status));
    CHECK(setup.raw[0]->Stats().pushes_applied == 1);
  }
}

TEST_CASE("TrainingWorker (easgd): the cosine schedule scales the workers' local steps",
          "[worker][easgd]") {
  // One worker, one batch per epoch (the whole data set, so the gradient does not depend on
  // the order). Cosine over 2 epochs: step 1 ends at epoch 1 (rate x 0.5), step 2 at epoch 2
  // (rate x 0), then one exchange. Constant over 1 epoch at half the rate: the same step 1,
  // then the exchange. The centres must agree.
  std::vector<float> centres[2];
  for (const bool cosine : {true, false}) {
    LinearSetup setup(1, 0.1f, 1, Algorithm::kEasgd);
    setup.config.training.batch_size = 400;
    setup.config.training.epochs = cosine ? 2 : 1;
    setup.config.training.learning_rate_schedule =
        cosine ? LearningRateSchedule::kCosine : LearningRateSchedule::kConstant;
    setup.config.easgd.learning_rate = cosine ? 0.2 : 0.1;
    setup.config.easgd.tau = cosine ? 2 : 1;
    setup.config.easgd.alpha = 0.5;
    setup.Start();
    const std::vector<float> start = setup.Weights();
    setup.RunWorkers();
    centres[cosine ? 0 : 1] = setup.Weights();
    CHECK(centres[cosine ? 0 : 1] != start);
  }
  CHECK(centres[0][0] == Approx(centres[1][0]).epsilon(1e-5));
  CHECK(centres[0][1] == Approx(centres[1][1]).epsilon(1e-5));
}

TEST_CASE("TrainingWorker: a stop request ends the loop with Cancelled", "[worker]") {
  LinearSetup setup(1);
  setup.Start();
  CpuBackend backend;
  auto model = Model::Create(setup.config.model, &backend);
  DataShard shard(setup.data, 0, 3);
  InProcessPsClient client(setup.raw, {RoleKind::kWorker, 0});
  TrainingWorker worker(setup.config, 0, model->get(), &shard, &client, nullptr, nullptr);
  std::atomic<bool> stop{true};
  CHECK(absl::IsCancelled(worker.Run(&stop).status()));
}

// A PsClient whose servers have gone away: every call fails as an RPC would.
class GoneClient : public PsClient {
 public:
  absl::StatusOr<PullResult> PullAll(absl::Span<float>, const PullWait&, ChunkVersions*) override {
    return Gone();
  }
  absl::StatusOr<PushSummary> PushAll(FiniteGradient, const ChunkVersions&,
                                      const PushOrigin&) override {
    return Gone();
  }
  absl::StatusOr<PushSummary> PushPullAll(FiniteGradient, const ChunkVersions&, const PushOrigin&,
                                          PullAfterPush*) override {
    return Gone();
  }
  absl::StatusOr<PushSummary> ExchangeAll(absl::Span<const float>, absl::Span<float>,
                                          ChunkVersions*, const PushOrigin&) override {
    return Gone();
  }
  // Learnt when connecting, before the servers went away: a fresh start.
  absl::StatusOr<ResumePoint> Resume() override { return ResumePoint{}; }
  absl::Status Finish() override { return Gone(); }
  absl::StatusOr<std::vector<ServerStats>> AllStats() override { return Gone(); }
  TransferCounters counters() const override { return {}; }
  const ShardingPlan& plan() const override { return plan_; }

 private:
  const ShardingPlan plan_ = *ShardingPlan::Create(2, 1, 2);
  static absl::Status Gone() { return absl::UnavailableError("server 0: connection refused"); }
};

TEST_CASE("TrainingWorker: an RPC failure is reported as such; a stop between steps as the stop",
          "[worker]") {
  LinearSetup setup(1);
  CpuBackend backend;
  auto model = Model::Create(setup.config.model, &backend);
  DataShard shard(setup.data, 0, 3);
  GoneClient client;
  TrainingWorker worker(setup.config, 0, model->get(), &shard, &client, nullptr, nullptr);
  CHECK(absl::IsUnavailable(worker.Run(nullptr).status()));
  std::atomic<bool> stopping{false};
  // The stop arrives during a step's pull, which succeeds: the worker stops before the next.
  class StopDuringPull : public GoneClient {
   public:
    explicit StopDuringPull(std::atomic<bool>* stop) : stop_(stop) {}
    absl::StatusOr<PullResult> PullAll(absl::Span<float>, const PullWait&,
                                       ChunkVersions*) override {
      stop_->store(true);
      return PullResult{};
    }
    absl::StatusOr<PushSummary> PushAll(FiniteGradient, const ChunkVersions&,
                                        const PushOrigin&) override {
      return PushSummary{};
    }
    absl::StatusOr<PushSummary> PushPullAll(FiniteGradient, const ChunkVersions&, const PushOrigin&,
                                            PullAfterPush*) override {
      return PushSummary{};
    }

   private:
    std::atomic<bool>* stop_;
  } stopping_client(&stopping);
  TrainingWorker stopped(setup.config, 0, model->get(), &shard, &stopping_client, nullptr, nullptr);
  const auto status = stopped.Run(&stopping).status();
  CHECK(absl::IsCancelled(status));
  CHECK(status.message() == "worker stopped by signal");
}

TEST_CASE("Evaluator: scores the server weights and finishes after the workers",
          "[worker][evaluator]") {
  LinearSetup setup(1);
  setup.Start();
  CpuBackend backend;
  auto model = Model::Create(setup.config.model, &backend);
  InProcessPsClient worker_client(setup.raw, {RoleKind::kWorker, 0});
  InProcessPsClient eval_client(setup.raw, {RoleKind::kEvaluator, 0});
  SECTION("a first evaluator") {
    Evaluator evaluator(model->get(), &setup.data, &eval_client, 64, nullptr, nullptr);
    // Weights start at zero: the loss is the mean of 0.5 y^2 over the data.
    double expected = 0;
    for (float y : setup.data.targets) expected += 0.5 * y * y;
    expected /= setup.data.size();
    auto first = evaluator.EvaluateOnce();
    REQUIRE(first.ok());
    CHECK(first->test_loss == Approx(expected));
    CHECK(first->global_step == 0);
    CHECK(first->epoch == 0);
    // A push reports the worker's progress; the evaluator shows the workers' mean.
    PushOrigin origin;
    origin.epoch = 1.5;
    REQUIRE(worker_client.PushAll(Finite({0.0f, 0.0f}), {0}, origin).ok());
    auto second = evaluator.EvaluateOnce();
    REQUIRE(second.ok());
    CHECK(second->epoch == Approx(1.5));
    REQUIRE(worker_client.Finish().ok());
    auto final_result = evaluator.RunUntilWorkersFinish(absl::Milliseconds(10), nullptr);
    REQUIRE(final_result.ok());
    CHECK(final_result->params.size() == 2);
    CHECK(final_result->wall_seconds >= second->wall_seconds);
  }
  SECTION("a restarted evaluator's clock carries on from its earlier processes'") {
    const absl::Time before = absl::Now();
    Evaluator evaluator(model->get(), &setup.data, &eval_client, 64, nullptr, nullptr,
                        /*earlier_wall_seconds=*/1000);
    auto result = evaluator.EvaluateOnce();
    const double elapsed = absl::ToDoubleSeconds(absl::Now() - before);
    REQUIRE(result.ok());
    CHECK(result->wall_seconds >= 1000);
    CHECK(result->wall_seconds <= 1000 + elapsed);
  }
}

TEST_CASE(
    "StallWatch: the first step's own limit, then the limit given or ten times the "
    "longest step",
    "[worker]") {
  StallWatch given("worker-0", 7, 600);
  CHECK(given.limit() == absl::Seconds(600));  // a first step may warm up for long
  { const StallWatch::Computing step(&given, 0); }
  CHECK(given.limit() == absl::Seconds(7));
  StallWatch derived("worker-0", 0, 30);
  CHECK(derived.limit() == absl::Seconds(30));
  { const StallWatch::Computing step(&derived, 0); }
  CHECK(derived.limit() == StallWatch::kAutoFloor);
  StallWatch off("worker-0", kStallWatchOff, 30);
  CHECK(off.limit() == absl::InfiniteDuration());
  { const StallWatch::Computing step(&off, 0); }
  CHECK(off.limit() == absl::InfiniteDuration());
}

}  // namespace
}  // namespace monsoon
