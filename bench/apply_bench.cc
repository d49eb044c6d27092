// Server apply benchmark: how fast a parameter server applies pushes (or EASGD exchanges) to
// its chunks, for every update rule, next to memcpy and a triad over the same bytes measured
// in the same run. A push here is ParameterServer::Push per chunk, exactly as the gRPC
// handler calls it: validation (size, NaN/Inf scan), the chunk's lock, the rule, counters.
// Prints a table and one JSON object.
//
//   apply_bench [--mib N] [--reps R] [--threads T]
//
// ratio = gradient bytes applied per second / bytes copied per second by memcpy. A rule that
// keeps state (momentum, Adagrad, Adam) moves more memory per gradient byte than memcpy does,
// which the "traffic" column states (bytes read + written per gradient byte; memcpy: 2).
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "bench/step_shapes.h"
#include "core/process_setup.h"
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

// Seconds per pass of `pass`, best of `reps` after one warm-up.
template <typename F>
double Best(int reps, F pass) {
  pass();
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const absl::Time start = absl::Now();
    pass();
    best = std::min(best, absl::ToDoubleSeconds(absl::Now() - start));
  }
  return best;
}

int Main(int argc, char** argv) {
  ApplyProcessSettings();  // as a server process has them
  int mib = 64, reps = 10, threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--mib") {
      mib = std::stoi(argv[i + 1]);
    } else if (flag == "--reps") {
      reps = std::stoi(argv[i + 1]);
    } else if (flag == "--threads") {
      threads = std::stoi(argv[i + 1]);
    } else {
      std::cerr << "usage: apply_bench [--mib N] [--reps R] [--threads T]\n";
      return 2;
    }
  }
  const size_t floats = static_cast<size_t>(mib) * 1024 * 1024 / sizeof(float);
  const double bytes = static_cast<double>(floats) * sizeof(float);
  // The jobs' default chunk size.
  auto plan = ShardingPlan::Create(floats, 1, JobConfig().chunk_floats());
  std::vector<float> src(floats, 1e-3f), dst(floats, 0.0f), other(floats, 2.0f);
  // Chunks are split across `threads` threads, as gRPC's handler threads would share them.
  auto parallel = [&](const std::function<void(int chunk)>& body) {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        for (int c = t; c < plan->num_chunks(); c += threads) body(c);
      });
    }
    for (auto& th : pool) th.join();
  };
  // The references are measured again next to every rule (the VM's memory bandwidth drifts
  // between runs); each rule's ratio uses the memcpy measured just before it.
  auto memcpy_seconds = [&] {
    return Best(reps, [&] {
      parallel([&](int c) {
        const Chunk& k = plan->chunk(c);
        std::memcpy(dst.data() + k.offset, src.data() + k.offset, k.size * sizeof(float));
      });
    });
  };
  auto triad_seconds = [&] {
    return Best(reps, [&] {
      parallel([&](int c) {
        const Chunk& k = plan->chunk(c);
        float* __restrict d = dst.data() + k.offset;
        const float* __restrict a = src.data() + k.offset;
        const float* __restrict b = other.data() + k.offset;
        for (size_t i = 0; i < k.size; ++i) d[i] = a[i] + 0.5f * b[i];
      });
    });
  };
  std::printf("%-26s %10s %11s %8s %8s %8s\n", "rule", "GB/s", "memcpy GB/s", "traffic", "ratio",
              "vs triad");
  std::string json = absl::StrFormat(
      "{\"bench\": \"apply\", \"mib\": %d, \"threads\": %d, \"rules\": [", mib, threads);
  const std::vector<Rule> rules = Rules();
  for (size_t ri = 0; ri < rules.size(); ++ri) {
    const Rule& rule = rules[ri];
    ParameterServer server(0, *plan, FlatModel(floats), 1, rule.rules, rule.workers, false);
    const bool exchange = !PushesGradients(rule.rules.algorithm);
    std::vector<uint64_t> version(plan->num_chunks(), 0);
    // One pass applies `rule.workers` pushes of every chunk: a complete round for sync.
    const double pass_s = Best(reps, [&] {
      parallel([&](int c) {
        const Chunk& k = plan->chunk(c);
        const absl::Span<const float> g(src.data() + k.offset, k.size);
        absl::StatusOr<PushResult> result;
        for (int w = 0; w < rule.workers; ++w) {
          result = exchange ? server.Exchange(c, w, version[c], g,
                                              absl::MakeSpan(dst.data() + k.offset, k.size))
                            : server.Push(c, w, version[c], g);
          if (!result.ok()) {
            std::cerr << rule.name << ": " << result.status() << std::endl;
            std::exit(1);
          }
        }
        version[c] = result->version;
      });
    });
    const double memcpy_gbps = bytes / memcpy_seconds() / 1e9;
    const double triad_s = triad_seconds();
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
  std::printf("%s]}\n", json.c_str());
  return 0;
}

}  // namespace
}  // namespace monsoon

int main(int argc, char** argv) { return monsoon::Main(argc, argv); }
