#include "launcher/simulation/cost_estimate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "core/compute/compute_backends.h"
#include "core/config/derived_values.h"
#include "core/model/model.h"
#include "core/process/out_of_memory.h"
#include "core/status_macros.h"
#include "launcher/local/summary.h"
#include "server/parameter_server.h"
#include "server/server_rules.h"
#include "worker/worker_role.h"
#include "worker/worker_rules.h"

namespace monsoon {
namespace {

// A role process's start-up (exec, data, connection), and a simulated worker's set-up.
constexpr double kProcessStartSeconds = 1.5;
constexpr double kSimulatedWorkerSetupSeconds = 0.004;
// Memory bandwidth a server's apply of a chunk runs at (copies and the update's passes).
constexpr double kApplyBytesPerSecond = 2e9;

// Expected extra seconds per step the stragglers add to a step of `step` seconds, averaged over
// the workers.
double StragglerSeconds(const JobConfig& config, double step) {
  const StragglersConfig& s = config.stragglers;
  const double slow_share = static_cast<double>(s.slow_workers.size()) / config.cluster.workers;
  return slow_share * (s.slow_factor - 1) * step + s.probability * s.delay_ms / 1e3;
}

// Simulated seconds per step of one worker: its compute, or its share of the servers' links
// or of their processors when those are the bottleneck. Pulls and pushes each carry the whole
// model, across servers; elastic algorithms exchange it every tau steps, Downpour pushes every
// n_push.
double SimulatedStepPeriod(const JobConfig& config, double compute) {
  const SimulationConfig& m = config.simulation;
  const double model_bytes = 4.0 * Model::NumParams(config.model);
  const WorkerRules rules = WorkerRules::FromConfig(config);
  const double every = PushesGradients(rules.algorithm) ? rules.n_push : rules.easgd.tau;
  const double per_step_bytes = model_bytes / std::max(every, 1.0);
  const double applies =
      (m.apply_gbyte_per_s > 0 ? m.apply_gbyte_per_s * 1e9 : kApplyBytesPerSecond) *
      config.cluster.servers;
  const double applying = config.cluster.workers * per_step_bytes / applies;
  if (m.link_gbit <= 0) return std::max(compute + 2 * m.latency_ms / 1e3 / every, applying);
  const double link = m.link_gbit * 1e9 / 8 * config.cluster.servers;
  const double alone = compute + 2 * (m.latency_ms / 1e3 + per_step_bytes / link) / every;
  return std::max({alone, config.cluster.workers * per_step_bytes / link, applying});
}

// The upper median of `timed` values of `measure(i)`, i counting from 0, after `warm_up`
// calls whose values are dropped; the first error stops it. A slow measure is cut short: once
// a warm-up call takes `slow_seconds` or more, the other warm-ups are skipped and only
// kSlowTimed values are taken (the estimate of a model with second-long steps takes a few
// steps, not 13).
constexpr int kSlowTimed = 3;
template <typename Measure>
absl::StatusOr<double> MedianOf(int warm_up, int timed, Measure measure,
                                double slow_seconds = std::numeric_limits<double>::infinity()) {
  std::vector<double> values;
  for (int i = 0; i < warm_up + timed; ++i) {
    MONSOON_ASSIGN_OR_RETURN(const double value, measure(i));
    if (i >= warm_up) {
      values.push_back(value);
    } else if (value >= slow_seconds) {
      warm_up = i + 1;
      timed = std::min(timed, kSlowTimed);
    }
  }
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

}  // namespace

absl::StatusOr<double> MeasureStepSeconds(const JobConfig& config) {
  double median = 0;
  MONSOON_RETURN_IF_ERROR(CatchOutOfMemory([&]() -> absl::Status {
    const Allocating allocating("a model to time one step of");
    // Built as NativeModel builds it, without logging where it runs: a command's estimate.
    MONSOON_ASSIGN_OR_RETURN(BackendSelection selection, MakeComputeBackend(config.compute, -1));
    MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                             Model::Create(config.model, std::move(selection.backend)));
    const int batch = config.training.batch_size;
    const bool classify = config.model.loss == LossType::kSoftmaxCrossEntropy;
    const std::vector<float> x(static_cast<size_t>(batch) * config.model.input_dim, 0.0f);
    const std::vector<float> y(
        static_cast<size_t>(batch) * (classify ? 1 : config.model.output_dim), 0.0f);
    const auto step = [&](int) -> absl::StatusOr<double> {
      const absl::Time start = absl::Now();
      model->ComputeGradients(x.data(), y.data(), batch);
      MONSOON_RETURN_IF_ERROR(model->Synchronize());
      return absl::ToDoubleSeconds(absl::Now() - start);
    };
    MONSOON_ASSIGN_OR_RETURN(median, MedianOf(3, 10, step, /*slow_seconds=*/0.1));
    return absl::OkStatus();
  }));
  return median;
}

absl::StatusOr<double> MeasureApplyBytesPerSecond(const JobConfig& config) {
  MONSOON_ASSIGN_OR_RETURN(const ShardingPlan job_plan, JobShardingPlan(config));
  constexpr int kWarmUp = 5, kTimed = 50;
  size_t share = 0;
  for (int s = 0; s < job_plan.num_servers(); ++s) share = std::max(share, job_plan.FloatsOf(s));
  // No more chunks than the pushes timed: each then meets a chunk as cold as a large share's.
  share = std::min(share, (kWarmUp + kTimed) * config.chunk_floats());
  MONSOON_ASSIGN_OR_RETURN(const ShardingPlan plan,
                           ShardingPlan::Create(share, 1, config.chunk_floats()));
  ServerRules rules = ServerRules::FromConfig(config);
  rules.algorithm = Algorithm::kDownpour;  // the optimizer's update, whatever the rounds
  ParameterServer server(
      0, plan, [](size_t, absl::Span<float> out) { std::fill(out.begin(), out.end(), 0.0f); },
      rules, 1, false, Clock::System(), ServerTicks::kByOwner);
  const std::vector<float> received(plan.max_chunk_size(), 1e-3f);
  std::vector<float> gradient(plan.max_chunk_size());
  std::vector<uint64_t> versions(plan.num_chunks(), 0);
  MONSOON_ASSIGN_OR_RETURN(
      const double seconds_per_byte,
      MedianOf(kWarmUp, kTimed, [&](int i) -> absl::StatusOr<double> {
        const Chunk& c = plan.chunk(i % plan.num_chunks());
        const absl::Time start = absl::Now();
        std::copy_n(received.begin(), c.size, gradient.begin());  // the decode
        MONSOON_ASSIGN_OR_RETURN(
            const PushResult pushed,
            server.Push(c.id, 0, versions[c.id], absl::MakeConstSpan(gradient.data(), c.size)));
        versions[c.id] = pushed.version;
        return absl::ToDoubleSeconds(absl::Now() - start) / (c.size * sizeof(float));
      }));
  return 1 / std::max(seconds_per_byte, 1e-15);
}

CostEstimate EstimateCost(const JobConfig& config, const DataSizes& data, double measured_step) {
  const int workers = config.cluster.workers;
  const int64_t rows = static_cast<int64_t>(data.train_rows / workers);
  int64_t per_worker = config.training.epochs *
                       ((rows + config.training.batch_size - 1) / config.training.batch_size);
  if (config.training.max_steps > 0)
    per_worker = std::min<int64_t>(per_worker, config.training.max_steps);
  CostEstimate cost;
  cost.steps = per_worker * workers;
  const double apply = 4.0 * Model::NumParams(config.model) / kApplyBytesPerSecond;
  // Scoring the test set: a forward pass, about a third of a training step per batch.
  const double evaluation = config.cluster.evaluator
                                ? measured_step / 3 * data.test_rows / config.training.batch_size
                                : 0;
  if (config.simulation.enabled) {
    cost.step_seconds =
        config.simulation.step_seconds > 0 ? config.simulation.step_seconds : measured_step;
    const double compute = cost.step_seconds + StragglerSeconds(config, cost.step_seconds);
    cost.simulated_seconds = per_worker * SimulatedStepPeriod(config, compute);
    cost.real_seconds = cost.steps * (measured_step + apply) +
                        workers * kSimulatedWorkerSetupSeconds +
                        evaluation * cost.simulated_seconds / config.evaluation.interval_seconds;
    return cost;
  }
  cost.step_seconds = measured_step;
  const double cores = std::max(1u, std::thread::hardware_concurrency());
  const double busy = cost.steps * (measured_step + apply) / std::min<double>(workers, cores);
  const double stragglers = per_worker * StragglerSeconds(config, measured_step);
  cost.real_seconds = kProcessStartSeconds + std::max(busy, stragglers + busy / workers) +
                      evaluation * busy / config.evaluation.interval_seconds;
  return cost;
}

std::string CostText(const CostEstimate& cost) {
  std::string text =
      absl::StrFormat("%d gradient steps of %.2f ms", cost.steps, cost.step_seconds * 1e3);
  if (cost.simulated_seconds > 0) {
    absl::StrAppendFormat(&text, "; about %.3g simulated s", cost.simulated_seconds);
  }
  absl::StrAppend(&text, "; about ", DurationText(cost.real_seconds), " on this machine");
  return text;
}

}  // namespace monsoon
