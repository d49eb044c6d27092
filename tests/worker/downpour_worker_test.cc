// The Downpour loop and the evaluator against in-process servers (no network).
#include "worker/downpour_worker.h"

#include <catch2/catch.hpp>
#include <vector>

#include "core/cpu_backend.h"
#include "worker/evaluator.h"
#include "worker/in_process_ps_client.h"

namespace monsoon {
namespace {

struct LinearSetup {
  explicit LinearSetup(int servers, float lr = 0.1f) {
    LinearDataSpec data_spec;
    data_spec.slope = 2.5;
    data_spec.intercept = -1.25;
    data_spec.noise = 0.0;
    data_spec.rows = 400;
    data = GenerateLinearDataset(data_spec);
    spec.type = ModelType::kLinearRegression;
    spec.input_dim = 1;
    spec.output_dim = 1;
    spec.loss = LossType::kMeanSquaredError;
    plan = *ShardingPlan::Create(2, servers, 2);  // one chunk per server
    OptimizerSpec sgd;
    sgd.learning_rate = lr;
    for (int j = 0; j < servers; ++j) {
      servers_.push_back(std::make_unique<ParameterServer>(
          j, plan, spec, 1, std::make_unique<DownpourRule>(sgd), 1, false));
      raw.push_back(servers_.back().get());
    }
  }
  Dataset data;
  ModelSpec spec;
  ShardingPlan plan;
  std::vector<std::unique_ptr<ParameterServer>> servers_;
  std::vector<ParameterServer*> raw;
};

TEST_CASE("DownpourWorker: fits y = 2.5 x - 1.25 through two sharded servers",
          "[worker][downpour]") {
  LinearSetup setup(2);
  CpuBackend backend;
  auto model = Model::Create(setup.spec, &backend);
  REQUIRE(model.ok());
  DataShard shard(&setup.data, 0, 1, 3);
  InProcessPsClient client(setup.raw, {ClientRole::kWorker, 0});
  TrainingConfig training;
  training.epochs = 30;
  training.batch_size = 20;
  DownpourWorker worker(training, DownpourConfig(), model->get(), &shard, &client, nullptr);
  auto report = worker.Run(nullptr);
  REQUIRE(report.ok());
  CHECK(report->steps == 30 * 20);
  CHECK(report->samples == 30 * 400);
  std::vector<float> w(2);
  REQUIRE(client.PullAll(absl::MakeSpan(w)).ok());
  CHECK(w[0] == Approx(2.5).margin(1e-3));
  CHECK(w[1] == Approx(-1.25).margin(1e-3));
  CHECK(setup.raw[0]->Stats().workers_finished == 1);
}

TEST_CASE("DownpourWorker: n_push accumulates gradients and pushes their sum every n_push steps",
          "[worker][downpour]") {
  LinearSetup setup(1);
  CpuBackend backend;
  auto model = Model::Create(setup.spec, &backend);
  DataShard shard(&setup.data, 0, 1, 3);
  InProcessPsClient client(setup.raw, {ClientRole::kWorker, 0});
  TrainingConfig training;
  training.epochs = 1;
  training.batch_size = 40;  // 10 steps per epoch
  DownpourConfig downpour;
  downpour.n_push = 4;
  downpour.n_fetch = 4;
  DownpourWorker worker(training, downpour, model->get(), &shard, &client, nullptr);
  REQUIRE(worker.Run(nullptr).ok());
  // 10 steps: pushes after steps 4 and 8, and the remainder (2 steps) at the end.
  CHECK(setup.raw[0]->Stats().pushes_applied == 3);
  CHECK(setup.raw[0]->Stats().pulls_served == 3);  // fetches before steps 1, 5, 9
}

TEST_CASE("DownpourWorker: the sum pushed after n_push steps equals the gradients' sum",
          "[worker][downpour]") {
  // With every fetch skipped after the first, n_push = 2 steps from identical weights must move
  // the server exactly as two single pushes of the same gradients would, under SGD.
  LinearSetup accumulate(1, 0.05f), single(1, 0.05f);
  CpuBackend backend;
  auto run = [&](LinearSetup& s, int n_push) {
    auto model = Model::Create(s.spec, &backend);
    DataShard shard(&s.data, 0, 1, 3);
    InProcessPsClient client(s.raw, {ClientRole::kWorker, 0});
    TrainingConfig training;
    training.epochs = 1;
    training.batch_size = 200;  // 2 steps
    DownpourConfig downpour;
    downpour.n_fetch = 2;
    downpour.n_push = n_push;
    DownpourWorker worker(training, downpour, model->get(), &shard, &client, nullptr);
    REQUIRE(worker.Run(nullptr).ok());
    std::vector<float> w(2);
    REQUIRE(client.PullAll(absl::MakeSpan(w)).ok());
    return w;
  };
  const auto a = run(accumulate, 2), b = run(single, 1);
  CHECK(a[0] == Approx(b[0]));
  CHECK(a[1] == Approx(b[1]));
  CHECK(accumulate.raw[0]->Stats().pushes_applied == 1);
  CHECK(single.raw[0]->Stats().pushes_applied == 2);
}

TEST_CASE("DownpourWorker: a stop request ends the loop with Cancelled", "[worker]") {
  LinearSetup setup(1);
  CpuBackend backend;
  auto model = Model::Create(setup.spec, &backend);
  DataShard shard(&setup.data, 0, 1, 3);
  InProcessPsClient client(setup.raw, {ClientRole::kWorker, 0});
  DownpourWorker worker(TrainingConfig(), DownpourConfig(), model->get(), &shard, &client, nullptr);
  std::atomic<bool> stop{true};
  CHECK(absl::IsCancelled(worker.Run(&stop).status()));
}

// A PsClient whose servers have gone away: every call fails as an RPC would.
class GoneClient : public PsClient {
 public:
  absl::StatusOr<uint64_t> PullAll(absl::Span<float>) override { return Gone(); }
  absl::Status PushAll(absl::Span<const float>, uint64_t) override { return Gone(); }
  absl::Status Finish() override { return Gone(); }
  absl::StatusOr<std::vector<ServerStats>> AllStats() override { return Gone(); }
  TransferCounters counters() const override { return {}; }

 private:
  static absl::Status Gone() { return absl::UnavailableError("server 0: connection refused"); }
};

TEST_CASE("DownpourWorker: an RPC failure is reported as such, or as the stop that caused it",
          "[worker]") {
  LinearSetup setup(1);
  CpuBackend backend;
  auto model = Model::Create(setup.spec, &backend);
  DataShard shard(&setup.data, 0, 1, 3);
  GoneClient client;
  DownpourWorker worker(TrainingConfig(), DownpourConfig(), model->get(), &shard, &client, nullptr);
  CHECK(absl::IsUnavailable(worker.Run(nullptr).status()));
  std::atomic<bool> stopping{false};
  // The stop arrives while the pull is failing: servers shut down on the same signal.
  class StopThenFail : public GoneClient {
   public:
    explicit StopThenFail(std::atomic<bool>* stop) : stop_(stop) {}
    absl::StatusOr<uint64_t> PullAll(absl::Span<float> p) override {
      stop_->store(true);
      return GoneClient::PullAll(p);
    }

   private:
    std::atomic<bool>* stop_;
  } racing(&stopping);
  DownpourWorker stopped(TrainingConfig(), DownpourConfig(), model->get(), &shard, &racing,
                         nullptr);
  const auto status = stopped.Run(&stopping).status();
  CHECK(absl::IsCancelled(status));
  CHECK(status.message() == "worker stopped by signal");
}

TEST_CASE("Evaluator: scores the server weights and finishes after the workers",
          "[worker][evaluator]") {
  LinearSetup setup(1);
  CpuBackend backend;
  auto model = Model::Create(setup.spec, &backend);
  InProcessPsClient worker_client(setup.raw, {ClientRole::kWorker, 0});
  InProcessPsClient eval_client(setup.raw, {ClientRole::kEvaluator, 0});
  Evaluator evaluator(model->get(), &setup.data, &eval_client, 64, nullptr);
  // Weights start at zero: the loss is the mean of 0.5 y^2 over the data.
  double expected = 0;
  for (float y : setup.data.targets) expected += 0.5 * y * y;
  expected /= setup.data.size();
  auto first = evaluator.EvaluateOnce();
  REQUIRE(first.ok());
  CHECK(first->test_loss == Approx(expected));
  CHECK(first->global_step == 0);
  REQUIRE(worker_client.Finish().ok());
  auto final_result = evaluator.RunUntilWorkersFinish(absl::Milliseconds(10), nullptr);
  REQUIRE(final_result.ok());
  CHECK(final_result->params.size() == 2);
}

}  // namespace
}  // namespace monsoon
