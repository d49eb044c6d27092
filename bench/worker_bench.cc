// Worker benchmark: per-worker samples/s of the training loop when it talks to a parameter
// server over gRPC (Downpour: pull and push every step, without and with overlap of
// communication and compute; EASGD: an elastic exchange every tau steps) next to the same
// worker training alone (the same batches, forward, backward and a
// local SGD step, no server), measured in the same run; and the share of each step the worker
// spends in pulls, pushes and exchanges. The server is a separate process on loopback.
// Each mode runs in `rounds` rounds of steps / rounds steps, each round right after its own
// lone-worker reference; the figures are the medians over the rounds. Each round starts a
// fresh server and connection, whose first ~100 steps run at half speed or less (about 50 ms
// on the AMD VM), so a round must be long against that for the figure to be the loop's steady
// rate: 2000 steps by default. Last, the lone worker on the same rows streamed from .npy files
// (a shard larger than data.memory_budget_mib) as a share of them held in memory. Prints a
// table and one JSON object.
//
//   worker_bench [--steps N] [--batch B] [--tau T] [--rounds R]
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "bench/child_process.h"
#include "bench/median.h"
#include "bench/step_shapes.h"
#include "core/cli/command_line.h"
#include "core/compute/cpu/blas_kernels.h"
#include "core/compute/cpu/cpu_backend.h"
#include "core/config/derived_values.h"
#include "core/data/array_files.h"
#include "core/data/data_shard.h"
#include "core/process/process_setup.h"
#include "server/grpc_parameter_server.h"
#include "worker/grpc_ps_client.h"
#include "worker/training_worker.h"

namespace monsoon {
namespace {

constexpr int kStepsPerEpoch = 100;

// The job every mode runs: the benchmark MLP, one server, one worker.
JobConfig BenchJob(Algorithm algorithm, int batch, int steps, int tau,
                   Overlap overlap = Overlap::kNone) {
  JobConfig config;
  config.transport.overlap = overlap;
  config.model = BenchmarkMlp();
  config.training.algorithm = algorithm;
  config.training.batch_size = batch;
  config.training.epochs = steps / kStepsPerEpoch;
  config.optimizer.type = OptimizerType::kMomentum;
  config.optimizer.learning_rate = 0.01f;
  config.easgd.tau = tau;
  config.easgd.alpha = 0.45;
  config.easgd.learning_rate = 0.05;
  return config;
}

// Child: serve the job's parameters with its rules; print the address; exit on stdin EOF.
int Serve(Algorithm algorithm, int tau) {
  const JobConfig config = BenchJob(algorithm, 64, kStepsPerEpoch, tau);
  auto plan = JobShardingPlan(config);
  ParameterServer logic(0, *plan, ModelInitialValues(config.model, 1),
                        ServerRules::FromConfig(config), 1, false);
  return ServeForParent(&logic);
}

// Random images and labels of Fashion-MNIST's shape: the cost of a step does not depend on
// the values, and the benchmark needs no data set.
Dataset RandomImages(int rows) {
  Dataset data;
  data.feature_dim = 784;
  data.num_classes = 10;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> pixel(0, 1);
  data.features.resize(static_cast<size_t>(rows) * 784);
  for (float& f : data.features) f = pixel(rng);
  for (int r = 0; r < rows; ++r) data.targets.push_back(static_cast<float>(r % 10));
  return data;
}

struct Figures {
  double samples_per_second = 0;
  double comm_share = 0;
};

// The worker's loop without any server, on `shard`'s batches.
Figures Alone(DataShard* shard, int batch, int steps) {
  CpuBackend backend;
  auto model = Model::Create(BenchmarkMlp(), &backend);
  std::vector<float> x, y;
  const absl::Time start = absl::Now();
  int64_t samples = 0;
  for (int s = 0; s < steps; ++s) {
    const int rows = shard->NextBatch(batch, &x, &y).value();
    (*model)->ComputeGradients(x.data(), y.data(), rows);
    (*model)->ApplyLocalSgd(0.01f);
    samples += rows;
  }
  if (!(*model)->Synchronize().ok()) std::abort();
  return {samples / absl::ToDoubleSeconds(absl::Now() - start), 0};
}

Figures Alone(const Dataset& data, int batch, int steps) {
  DataShard shard(data, 0, 1);
  return Alone(&shard, batch, steps);
}

// `data` as .npy files (float32 features, int64 labels) in a fresh temporary directory.
struct NpyFiles {
  std::string features, targets;
};
NpyFiles WriteNpyFiles(const Dataset& data) {
  char dir[] = "/tmp/worker_bench.XXXXXX";
  if (mkdtemp(dir) == nullptr) std::abort();
  const auto write = [&](const std::string& path, const char* descr, const std::string& shape,
                         const void* bytes, size_t size) {
    std::string header =
        absl::StrFormat("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::ofstream out(path, std::ios::binary);
    out << "\x93NUMPY" << '\x01' << '\x00' << static_cast<char>(header.size() & 0xff)
        << static_cast<char>(header.size() >> 8) << header;
    out.write(static_cast<const char*>(bytes), static_cast<std::streamsize>(size));
  };
  const NpyFiles files{absl::StrCat(dir, "/x.npy"), absl::StrCat(dir, "/y.npy")};
  write(files.features, "<f4", absl::StrFormat("(%d, %d)", data.size(), data.feature_dim),
        data.features.data(), data.features.size() * sizeof(float));
  std::vector<int64_t> labels(data.targets.begin(), data.targets.end());
  write(files.targets, "<i8", absl::StrFormat("(%d,)", data.size()), labels.data(),
        labels.size() * sizeof(int64_t));
  return files;
}

// The lone worker on `data` streamed from .npy files (as a shard larger than
// data.memory_budget_mib is), as a share of the same rows held in memory, over `rounds`.
double StreamedRatio(const Dataset& data, int batch, int steps, int rounds) {
  const NpyFiles files = WriteNpyFiles(data);
  std::vector<uint64_t> all(data.size());
  std::iota(all.begin(), all.end(), uint64_t{0});
  std::vector<double> ratio;
  for (int r = 0; r < rounds; ++r) {
    const double held = Alone(data, batch, steps).samples_per_second;
    auto source = OpenNpySource(files.features, files.targets, {1, true});
    if (!source.ok()) std::abort();
    DataShard streamed(std::move(*source), all, 0, 1);
    ratio.push_back(Alone(&streamed, batch, steps).samples_per_second / held);
  }
  std::filesystem::remove_all(std::filesystem::path(files.features).parent_path());
  return Median(ratio);
}

Figures WithServer(const Dataset& data, Algorithm algorithm, int batch, int steps, int tau,
                   Overlap overlap) {
  BenchChild server = BenchChild::Spawn(
      {"worker_bench", "--serve", kAlgorithmNames.Name(algorithm), std::to_string(tau)});
  const std::string address = server.ReadLine();
  const JobConfig config = BenchJob(algorithm, batch, steps, tau, overlap);
  auto plan = JobShardingPlan(config);
  GrpcPsClientOptions options;
  options.secrets.token = kBenchToken;
  auto client = GrpcPsClient::Connect({address}, *plan, {RoleKind::kWorker, 0}, options);
  if (!client.ok()) {
    std::cerr << client.status() << std::endl;
    std::abort();
  }
  CpuBackend backend;
  auto model = Model::Create(config.model, &backend);
  DataShard shard(data, 0, 1);
  TrainingWorker worker(config, 0, model->get(), &shard, client->get(), nullptr, nullptr);
  auto report = worker.Run(nullptr);
  if (!report.ok()) {
    std::cerr << report.status() << std::endl;
    std::abort();
  }
  client->reset();
  server.Stop();
  return {report->samples / report->wall_seconds, report->comm_seconds / report->wall_seconds};
}

// What the command line chose.
struct Options {
  int steps = 10000, batch = 64, tau = 8, rounds = 5;
};

// Prints the table and the JSON object: each worker loop against the lone worker.
void Report(const Options& o) {
  const int batch = o.batch, tau = o.tau, rounds = o.rounds;
  // Whole epochs of the bench's data.
  const int steps = std::max(kStepsPerEpoch, o.steps / kStepsPerEpoch * kStepsPerEpoch);
  const int round_steps =
      std::max(kStepsPerEpoch, steps / rounds / kStepsPerEpoch * kStepsPerEpoch);
  const Dataset data = RandomImages(kStepsPerEpoch * batch);
  struct Mode {
    std::string name, key;
    Algorithm algorithm;
    Overlap overlap;
  };
  const std::vector<Mode> modes = {
      {"downpour, pull+push every step", "downpour", Algorithm::kDownpour, Overlap::kNone},
      {"  push overlapped with compute", "downpour_push", Algorithm::kDownpour, Overlap::kPush},
      {"  push + next pull overlapped", "downpour_push_pull", Algorithm::kDownpour,
       Overlap::kPushPull},
      {absl::StrFormat("easgd, exchange every %d steps", tau), "easgd", Algorithm::kEasgd,
       Overlap::kNone},
      {"  exchange overlapped with a step", "easgd_overlap", Algorithm::kEasgd, Overlap::kPush},
  };
  std::printf("%-34s %12s %12s %8s %11s\n", "worker loop", "samples/s", "alone", "ratio",
              "comm share");
  std::string json = absl::StrFormat(
      "{\"bench\": \"worker\", \"steps\": %d, \"rounds\": %d, \"batch\": %d, \"tau\": %d",
      round_steps * rounds, rounds, batch, tau);
  for (const Mode& mode : modes) {
    // The reference is measured again right before each round: this VM's speed drifts within
    // a run by more than the differences measured here (a lone worker by up to 50 % between
    // blocks of a few seconds).
    std::vector<double> alone, with_server, ratio, comm_share;
    for (int r = 0; r < rounds; ++r) {
      alone.push_back(Alone(data, batch, round_steps).samples_per_second);
      const Figures f = WithServer(data, mode.algorithm, batch, round_steps, tau, mode.overlap);
      with_server.push_back(f.samples_per_second);
      ratio.push_back(f.samples_per_second / alone.back());
      comm_share.push_back(f.comm_share);
    }
    const Figures median = {Median(with_server), Median(comm_share)};
    const double median_alone = Median(alone), median_ratio = Median(ratio);
    std::printf("%-34s %12.0f %12.0f %8.3f %11.3f\n", mode.name.c_str(), median.samples_per_second,
                median_alone, median_ratio, median.comm_share);
    absl::StrAppendFormat(&json,
                          ", \"%s_samples_per_second\": %.0f, \"%s_alone_samples_per_second\": "
                          "%.0f, \"%s_ratio\": %.3f, \"%s_comm_share\": %.3f",
                          mode.key, median.samples_per_second, mode.key, median_alone, mode.key,
                          median_ratio, mode.key, median.comm_share);
  }
  const double streamed = StreamedRatio(data, batch, round_steps, rounds);
  std::printf("%-34s %12s %12s %8.3f\n", "data streamed from .npy files", "", "", streamed);
  absl::StrAppendFormat(&json, ", \"streamed_data_ratio\": %.3f", streamed);
  std::printf("%s}\n", json.c_str());
}

int Main(int argc, char** argv) {
  RestartWith({BlasKernelsVariable()}, argv);  // the kernels a job's worker gets
  ApplyProcessSettings();
  FlushDenormalsToZero();
  if (argc == 4 && std::string(argv[1]) == "--serve") {
    return Serve(std::string(argv[2]) == "easgd" ? Algorithm::kEasgd : Algorithm::kDownpour,
                 std::stoi(argv[3]));
  }
  Options o;
  const ProgramText text{"worker_bench",
                         "A worker's loop with a server process against the lone worker; prints "
                         "JSON last.",
                         ""};
  return RunProgram(argc, argv, text, [&](Command& program, int*) {
    program.Option("--steps", &o.steps, "steps in all (whole epochs of the bench's data)")
        .InRange(1, 100000000)
        .ShowDefault();
    program.Option("--batch", &o.batch, "examples per step").InRange(1, 65536).ShowDefault();
    program.Option("--tau", &o.tau, "EASGD's steps between exchanges")
        .InRange(1, 100000)
        .ShowDefault();
    program.Option("--rounds", &o.rounds, "rounds, each measuring the lone worker again")
        .InRange(1, 1000)
        .ShowDefault();
    program.OnRun([&] { Report(o); });
  });
}

}  // namespace
}  // namespace monsoon

int main(int argc, char** argv) { return monsoon::Main(argc, argv); }
