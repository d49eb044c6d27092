// Server apply benchmark: how fast a parameter server applies pushes (or EASGD exchanges) to
// its chunks, for every update rule, next to memcpy and a triad over the same bytes measured
// in the same run. A push here is ParameterServer::Push per chunk, exactly as the gRPC
// handler calls it: validation (size, NaN/Inf scan), the chunk's lock, the rule, counters.
// Also the worker's side of the same bytes: its copy of the gradient out of the model, which
// finds NaN and infinity in the same pass (CopyFindingNonFinite), next to memcpy and to memcpy
// followed by a separate scan. Prints a table and one JSON object.
//
//   apply_bench [--mib N] [--reps R] [--threads T]
//
// ratio = gradient bytes applied per second / bytes copied per second by memcpy. A rule that
// keeps state (momentum, Adagrad, Adam) moves more memory per gradient byte than memcpy does,
// which the "traffic" column states (bytes read + written per gradient byte; memcpy: 2).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "bench/median.h"
#include "bench/seconds.h"
#include "bench/step_shapes.h"
#include "core/cli/command_line.h"
#include "core/config/derived_values.h"
#include "core/finite.h"
#include "core/process/process_setup.h"
#include "server/parameter_server.h"

namespace monsoon {
namespace {

struct Rule {
  std::string name;
  ServerRules rules;
  int workers;     // sync: pushes per round
  double traffic;  // bytes read + written per gradient byte (NaN scan excluded)
};

std::vector<Rule> Rules() {
  std::vector<Rule> out;
  auto add = [&](const std::string& name, Algorithm algorithm, OptimizerType type, int workers,
                 double traffic) {
    Rule r{name, {}, workers, traffic};
    r.rules.algorithm = algorithm;
    r.rules.optimizer.type = type;
    r.rules.optimizer.learning_rate = 1e-6f;
    out.push_back(r);
    return &out.back();
  };
  add("downpour sgd", Algorithm::kDownpour, OptimizerType::kSgd, 1, 3);
  add("downpour momentum", Algorithm::kDownpour, OptimizerType::kMomentum, 1, 5);
  add("downpour adagrad", Algorithm::kDownpour, OptimizerType::kAdagrad, 1, 5);
  add("downpour adam", Algorithm::kDownpour, OptimizerType::kAdam, 1, 7);
  add("sync sgd (2 per round)", Algorithm::kSync, OptimizerType::kSgd, 2, 4.5);
  add("easgd exchange", Algorithm::kEasgd, OptimizerType::kSgd, 1, 4);
  Rule* dc = add("downpour sgd + dc-asgd", Algorithm::kDownpour, OptimizerType::kSgd, 1, 5);
  dc->rules.staleness.dc_lambda = 0.04;
  return out;
}

// Seconds per pass of `pass`, the median of `reps` after one warm-up.
template <typename F>
double MedianPass(int reps, F pass) {
  pass();
  std::vector<double> seconds;
  for (int r = 0; r < reps; ++r) seconds.push_back(SecondsOf(pass));
  return Median(seconds);
}

// The 64 MiB (say) of weights, gradients and a second operand, in the jobs' chunks, and the
// `threads` threads that share the chunks as gRPC's handler threads would.
struct Workload {
  Workload(size_t floats, int threads)
      : plan(*ShardingPlan::Create(floats, 1, JobConfig().chunk_floats())),
        threads(threads),
        src(floats, 1e-3f),
        dst(floats, 0.0f),
        other(floats, 2.0f) {}

  void ForEachChunk(const std::function<void(const Chunk& chunk, int index)>& body) const {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        for (int c = t; c < plan.num_chunks(); c += threads) body(plan.chunk(c), c);
      });
    }
    for (auto& th : pool) th.join();
  }

  ShardingPlan plan;
  const int threads;
  std::vector<float> src, dst, other;
};

// The references, measured again next to every rule (the VM's memory bandwidth drifts between
// runs): memcpy of every chunk, and a triad d = a + 0.5 b.
double MemcpySeconds(Workload& w, int reps) {
  return MedianPass(reps, [&] {
    w.ForEachChunk([&](const Chunk& k, int) {
      std::memcpy(w.dst.data() + k.offset, w.src.data() + k.offset, k.size * sizeof(float));
    });
  });
}

double TriadSeconds(Workload& w, int reps) {
  return MedianPass(reps, [&] {
    w.ForEachChunk([&](const Chunk& k, int) {
      float* __restrict d = w.dst.data() + k.offset;
      const float* __restrict a = w.src.data() + k.offset;
      const float* __restrict b = w.other.data() + k.offset;
      for (size_t i = 0; i < k.size; ++i) d[i] = a[i] + 0.5f * b[i];
    });
  });
}

// The median time of a pass that applies `rule.workers` pushes (or exchanges) of every chunk: a
// complete round for sync.
double RulePassSeconds(Workload& w, const Rule& rule, int reps) {
  ParameterServer server(0, w.plan, ModelInitialValues(FlatModel(w.src.size()), 1), rule.rules,
                         rule.workers, false);
  const bool exchange = !PushesGradients(rule.rules.algorithm);
  std::vector<uint64_t> version(w.plan.num_chunks(), 0);
  return MedianPass(reps, [&] {
    w.ForEachChunk([&](const Chunk& k, int c) {
      const absl::Span<const float> g(w.src.data() + k.offset, k.size);
      absl::StatusOr<PushResult> result;
      for (int worker = 0; worker < rule.workers; ++worker) {
        result = exchange ? server.Exchange(c, worker, version[c], g,
                                            absl::MakeSpan(w.dst.data() + k.offset, k.size))
                          : server.Push(c, worker, version[c], g);
        if (!result.ok()) {
          std::cerr << rule.name << ": " << result.status() << std::endl;
          std::exit(1);
        }
      }
      version[c] = result->version;
    });
  });
}

// The worker's gradient copy (one thread, the whole vector), checked in its pass and then
// scanned separately, each over memcpy's time measured next to it: {checked, then scanned}.
std::pair<double, double> GradientCopyRatios(Workload& w, int reps) {
  std::vector<double> checked, scanned;
  const size_t n = w.src.size();
  for (int r = 0; r < reps; ++r) {
    const double memcpy_s =
        SecondsOf([&] { std::memcpy(w.dst.data(), w.src.data(), n * sizeof(float)); });
    checked.push_back(memcpy_s / SecondsOf([&] {
                        if (CopyFindingNonFinite(w.src.data(), w.dst.data(), n) != n) std::abort();
                      }));
    scanned.push_back(memcpy_s / SecondsOf([&] {
                        std::memcpy(w.dst.data(), w.src.data(), n * sizeof(float));
                        if (FirstNonFinite(w.dst) != n) std::abort();
                      }));
  }
  return {Median(checked), Median(scanned)};
}

// Prints the table and the JSON object for `mib` MiB of weights shared by `threads`.
void Report(int mib, int reps, int threads) {
  Workload work(static_cast<size_t>(mib) * 1024 * 1024 / sizeof(float), threads);
  const double bytes = static_cast<double>(work.src.size()) * sizeof(float);
  std::printf("%-26s %10s %11s %8s %8s %8s\n", "rule", "GB/s", "memcpy GB/s", "traffic", "ratio",
              "vs triad");
  std::string json = absl::StrFormat(
      "{\"bench\": \"apply\", \"mib\": %d, \"threads\": %d, \"rules\": [", mib, threads);
  const std::vector<Rule> rules = Rules();
  for (size_t ri = 0; ri < rules.size(); ++ri) {
    const Rule& rule = rules[ri];
    const double pass_s = RulePassSeconds(work, rule, reps);
    // Each rule's ratio uses the memcpy measured just after it.
    const double memcpy_gbps = bytes / MemcpySeconds(work, reps) / 1e9;
    const double triad_s = TriadSeconds(work, reps);
    const double gbps = rule.workers * bytes / pass_s / 1e9;
    const double ratio = gbps / memcpy_gbps;
    const double vs_triad = rule.workers * triad_s / pass_s;
    std::printf("%-26s %10.2f %11.2f %8.1f %8.3f %8.3f\n", rule.name.c_str(), gbps, memcpy_gbps,
                rule.traffic, ratio, vs_triad);
    absl::StrAppendFormat(&json,
                          "%s{\"rule\": \"%s\", \"gbps\": %.3f, \"memcpy_gbps\": %.3f, "
                          "\"traffic\": %.1f, \"ratio_vs_memcpy\": %.3f, \"ratio_vs_triad\": %.3f}",
                          ri == 0 ? "" : ", ", rule.name, gbps, memcpy_gbps, rule.traffic, ratio,
                          vs_triad);
  }
  const auto [checked, scanned] = GradientCopyRatios(work, reps);
  std::printf("worker gradient copy / memcpy: checked in the copy %.3f, copied then scanned %.3f\n",
              checked, scanned);
  absl::StrAppendFormat(&json,
                        "], \"gradient_copy\": {\"checked_in_copy_vs_memcpy\": %.3f, "
                        "\"copy_then_scan_vs_memcpy\": %.3f}",
                        checked, scanned);
  std::printf("%s}\n", json.c_str());
}

int Main(int argc, char** argv) {
  ApplyProcessSettings();  // as a server process has them
  FlushDenormalsToZero();
  int mib = 64, reps = 10, threads = 1;
  const ProgramText text{
      "apply_bench", "A server applying pushes, per update rule, next to memcpy; prints JSON last.",
      ""};
  return RunProgram(argc, argv, text, [&](Command& program, int*) {
    program.Option("--mib", &mib, "MiB of weights").InRange(1, 4096).ShowDefault();
    program.Option("--reps", &reps, "passes per figure (their median counts)")
        .InRange(1, 1000)
        .ShowDefault();
    program.Option("--threads", &threads, "threads sharing the chunks")
        .InRange(1, 64)
        .ShowDefault();
    program.OnRun([&] { Report(mib, reps, threads); });
  });
}

}  // namespace
}  // namespace monsoon

int main(int argc, char** argv) { return monsoon::Main(argc, argv); }
