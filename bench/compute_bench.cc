// Compute benchmark: CPU training-step samples/s of the default MLP (784-256-128-10), of the
// CNN of configs/fmnist_cnn.yaml or of the ResNet of configs/fmnist_resnet.yaml, next to the
// time of the same-shape primitives alone (the SGEMMs, and the convolutional models' oneDNN
// convolution and batch normalisation primitives in their own layouts, without the reorders
// from and to Monsoon's; the residual additions and the activations are not among them), at
// several batch sizes. Steps and primitives alternate,
// one of each a round. Prints one JSON object: medians over the rounds, and ratio = the median
// of the rounds' primitives-only time / full step time (1.0 = no overhead).
//
//   compute_bench [--model mlp|cnn|resnet] [--steps N] [--threads T] [--breakdown]
#include <cstdio>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "bench/median.h"
#include "bench/seconds.h"
#include "bench/step_shapes.h"
#include "bench/timed_backend.h"
#include "core/cli/command_line.h"
#include "core/compute/cpu/blas_kernels.h"
#include "core/compute/cpu/cpu_backend.h"
#include "core/compute/cpu/onednn_batchnorm.h"
#include "core/compute/cpu/onednn_convolution.h"
#include "core/model/model.h"

namespace monsoon {
namespace {

// `spec`'s primitives alone at `batch` (best layouts, no reorders): its SGEMMs on `backend`
// and, for the CNNs, their oneDNN convolution and batch normalisation primitives. Run() runs
// each once.
class Primitives {
 public:
  Primitives(CpuBackend* backend, const ModelSpec& spec, bool cnn, int batch, int threads)
      : backend_(backend),
        batch_(batch),
        shapes_(cnn ? LayerListGemms(batch, spec) : StepGemms(batch, spec)),
        steps_(cnn ? LayerListPrimitives(spec, OneDnnConvolution::NativeChannelBlock())
                   : PrimitiveSteps{}),
        convolution_(threads),
        batch_norm_(threads) {
    for (const GemmShape& s : shapes_) {
      a_.emplace_back(static_cast<size_t>(s.m) * s.k, 0.5f);
      b_.emplace_back(static_cast<size_t>(s.k) * s.n, 0.25f);
      c_.emplace_back(static_cast<size_t>(s.m) * s.n, 0.0f);
    }
  }

  void Run() {
    for (const ConvolutionStep& c : steps_.convolutions) {
      convolution_.RunPrimitives(c.geometry, batch_, c.input_gradient);
    }
    for (const BatchNormGeometry& g : steps_.batch_norms) batch_norm_.RunPrimitives(g, batch_);
    for (size_t i = 0; i < shapes_.size(); ++i) {
      const GemmShape& s = shapes_[i];
      backend_->Gemm(s.trans_a, s.trans_b, s.m, s.n, s.k, 1.0f, a_[i].data(), b_[i].data(), 0.0f,
                     c_[i].data());
    }
  }

 private:
  CpuBackend* const backend_;
  const int batch_;
  const std::vector<GemmShape> shapes_;
  const PrimitiveSteps steps_;
  OneDnnConvolution convolution_;
  OneDnnBatchNorm batch_norm_;
  std::vector<std::vector<float>> a_, b_, c_;
};

// `seconds` (TimedBackend's, over `steps` steps of `batch`) as a JSON object of microseconds
// per example.
std::string Breakdown(const std::map<std::string, double>& seconds, int steps, int batch) {
  std::string json = "{";
  for (const auto& [kind, s] : seconds) {
    absl::StrAppendFormat(&json, "%s\"%s\": %.1f", json.size() > 1 ? ", " : "", kind,
                          s / steps / batch * 1e6);
  }
  return json + "}";
}

// What the command line chose.
struct Options {
  int steps = 200, threads = 1;
  std::string model_name = "mlp";
  bool breakdown = false;
};

// Prints the JSON object: the step against its primitives at each batch size.
void Report(const Options& o) {
  const auto& [steps, threads, model_name, breakdown] = o;
  CpuBackend cpu(threads);
  TimedBackend timed(&cpu);
  ComputeBackend& backend = breakdown ? static_cast<ComputeBackend&>(timed) : cpu;
  const bool cnn = model_name != "mlp";  // a layer list with convolutions
  const ModelSpec spec = model_name == "resnet" ? BenchmarkResnet()
                         : cnn                  ? BenchmarkCnn()
                                                : BenchmarkMlp();
  auto model = Model::Create(spec, &backend);
  std::vector<float> params((*model)->num_params());
  Model::InitialValues(spec, 1, 0, absl::MakeSpan(params));
  (*model)->SetParams(params.data());
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(0, 1);
  std::cout << "{\n  \"benchmark\": \"compute\",\n  \"model\": \""
            << (model_name == "resnet" ? "resnet 16-32-64, 2 blocks a stage"
                : cnn                  ? "cnn conv32-pool-conv64-pool-128-10"
                                       : "mlp 784-256-128-10")
            << "\",\n"
            << "  \"backend\": \"" << backend.name() << "\",\n  \"blas_threads\": " << threads
            << ",\n  \"results\": [\n";
  const std::vector<int> batches =
      cnn ? std::vector<int>{64, 256} : std::vector<int>{64, 256, 1024};
  for (size_t bi = 0; bi < batches.size(); ++bi) {
    const int batch = batches[bi];
    const int reps = std::max(std::min(10, steps), steps * 64 / batch);
    std::vector<float> x(static_cast<size_t>(batch) * 784), y(batch);
    for (float& v : x) v = u(rng);
    for (int r = 0; r < batch; ++r) y[r] = static_cast<float>(r % 10);
    std::vector<float> grads((*model)->num_params());
    auto step = [&] {
      (*model)->ComputeGradients(x.data(), y.data(), batch);
      (*model)->GetGrads(grads.data());
    };
    Primitives primitives(&cpu, spec, cnn, batch, threads);
    step();
    primitives.Run();
    timed.Reset();
    std::vector<double> step_times, primitives_times, ratios;
    for (int r = 0; r < reps; ++r) {
      step_times.push_back(SecondsOf(step));
      primitives_times.push_back(SecondsOf([&] { primitives.Run(); }));
      ratios.push_back(primitives_times.back() / step_times.back());
    }
    const double step_s = Median(step_times), primitives_s = Median(primitives_times);
    std::printf(
        "    {\"batch\": %d, \"step_samples_per_second\": %.0f, "
        "\"primitives_samples_per_second\": %.0f, \"ratio\": %.3f%s}%s\n",
        batch, batch / step_s, batch / primitives_s, Median(ratios),
        breakdown
            ? (", \"breakdown_us_per_example\": " + Breakdown(timed.seconds(), reps, batch)).c_str()
            : "",
        bi + 1 < batches.size() ? "," : "");
    std::fflush(stdout);
  }
  std::cout << "  ]\n}" << std::endl;
}

int Main(int argc, char** argv) {
  RestartWith({BlasKernelsVariable()}, argv);  // the kernels a job's worker gets
  FlushDenormalsToZero();
  Options o;
  const ProgramText text{"compute_bench",
                         "The CPU training step next to its primitives alone; prints JSON.", ""};
  return RunProgram(argc, argv, text, [&](Command& program, int*) {
    program
        .Option("--model", &o.model_name,
                "the default job's MLP, or fmnist_cnn's or fmnist_resnet's network")
        .OneOf({"mlp", "cnn", "resnet"})
        .ShowDefault();
    program
        .Option("--steps", &o.steps,
                "steps at batch 64 (fewer at larger batches, at least 10 or STEPS)")
        .InRange(1, 1000000)
        .ShowDefault();
    program.Option("--threads", &o.threads, "BLAS and oneDNN threads").InRange(1, 1024);
    program.Flag("--breakdown", &o.breakdown,
                 "also where the step's time goes, in microseconds per example by kind of call");
    program.OnRun([&] { Report(o); });
  });
}

}  // namespace
}  // namespace monsoon

int main(int argc, char** argv) { return monsoon::Main(argc, argv); }
