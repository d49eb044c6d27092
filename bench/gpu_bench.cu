// GPU benchmark (CUDA backend): worker training-step samples/s of the default MLP
// (784-256-128-10) at batch 64..4096 and of the CNN of configs/fmnist_cnn.yaml and the ResNet
// of configs/fmnist_resnet.yaml at batch 64..1024, each next to the same-shape cuBLAS SGEMMs
// alone, and the backend's host->device copy rate (from memory it pinned, and from pageable
// memory) next to a plain cudaMemcpy from pinned memory. Prints one JSON object; without a
// usable GPU it prints {"skipped": reason} and exits 0.
//
//   gpu_bench [--precision fp32|tf32|bf16] [--cudnn-path auto|off|PATH] [--cublaslt on|off]
// (compute.precision, default fp32; compute.cudnn_path, default auto; cuBLASLt for the dense
// layers, default on: "device", printed last, names what ran the convolutions and batch norms
// and how many dense products cuBLASLt ran).
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench/step_shapes.h"
#include "core/cli/command_line.h"
#include "core/compute/cuda/cublas_backend.h"
#include "core/model/model.h"

namespace monsoon {
namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Times `reps` calls of `op` after one warm-up call, synchronizing the backend at the end.
template <typename Op>
double TimePerCall(ComputeBackend& backend, int reps, Op op) {
  op();
  backend.Synchronize().IgnoreError();
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r) op();
  backend.Synchronize().IgnoreError();
  return Seconds(start) / reps;
}

// Prints `key`: the worker step of `spec` at each batch size next to `gemms(batch)` alone.
template <typename Gemms>
void PrintSteps(ComputeBackend& backend, const char* key, const ModelSpec& spec,
                const std::vector<int>& batches, Gemms gemms_of) {
  auto model = Model::Create(spec, &backend);
  std::vector<float> params((*model)->num_params()), grads(params.size());
  Model::InitialValues(spec, 1, 0, absl::MakeSpan(params));
  (*model)->SetParams(params.data());
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(0, 1);
  std::printf("  \"%s\": [\n", key);
  for (size_t bi = 0; bi < batches.size(); ++bi) {
    const int batch = batches[bi];
    const int reps = std::max(20, 200 * 256 / batch);
    std::vector<float> x(static_cast<size_t>(batch) * spec.input_dim), y(batch);
    for (float& v : x) v = u(rng);
    for (int r = 0; r < batch; ++r) y[r] = static_cast<float>(r % spec.output_dim);
    // A worker's step: upload the batch, forward, backward, download the gradients, with the
    // batch and the gradients in pinned memory, as a worker's: replayed as a graph (the
    // default), and call by call with the gradient streamed layer by layer during backward.
    const HostPin pins[] = {(*model)->PinHostMemory(absl::MakeSpan(x)),
                            (*model)->PinHostMemory(absl::MakeSpan(y)),
                            (*model)->PinHostMemory(absl::MakeSpan(grads))};
    auto step = [&] {
      (*model)->ComputeGradients(x.data(), y.data(), batch);
      (*model)->GetGrads(grads.data());
    };
    (*model)->StreamGradientsTo(grads.data());
    (*model)->set_graphs(false);
    const double calls_s = TimePerCall(backend, reps, step);
    (*model)->set_graphs(true);
    const int64_t graphed_before = (*model)->graphed_steps();
    const double step_s = TimePerCall(backend, reps, step);
    const bool graphed = (*model)->graphed_steps() - graphed_before >= reps;
    // As a worker whose shard is not on the GPU: two batch buffers, each batch uploaded during
    // the step before it (Model::PrefetchBatch).
    std::vector<float> x2 = x;
    const HostPin pin2 = (*model)->PinHostMemory(absl::MakeSpan(x2));
    int turn = 0;
    const double prefetched_s = TimePerCall(backend, reps, [&] {
      (*model)->PrefetchBatch((turn == 0 ? x2 : x).data(), y.data(), batch);
      (*model)->ComputeGradients((turn == 0 ? x : x2).data(), y.data(), batch);
      (*model)->GetGrads(grads.data());
      turn = 1 - turn;
    });
    (*model)->StreamGradientsTo(nullptr);
    const std::vector<GemmShape> shapes = gemms_of(batch);
    std::vector<DeviceBuffer> a, b, c;
    for (const GemmShape& s : shapes) {
      a.push_back(backend.Allocate(static_cast<size_t>(s.m) * s.k));
      b.push_back(backend.Allocate(static_cast<size_t>(s.k) * s.n));
      c.push_back(backend.Allocate(static_cast<size_t>(s.m) * s.n));
    }
    const double gemm_s = TimePerCall(backend, reps, [&] {
      for (size_t i = 0; i < shapes.size(); ++i) {
        const GemmShape& s = shapes[i];
        backend.Gemm(s.trans_a, s.trans_b, s.m, s.n, s.k, 1.0f, a[i].data(), b[i].data(), 0.0f,
                     c[i].data());
      }
    });
    std::printf(
        "    {\"batch\": %d, \"step_samples_per_second\": %.0f, \"gemm_samples_per_second\": %.0f,"
        " \"ratio\": %.3f, \"graphed\": %s, \"call_by_call_step_samples_per_second\": %.0f,"
        " \"prefetched_step_samples_per_second\": %.0f}%s\n",
        batch, batch / step_s, batch / gemm_s, gemm_s / step_s, graphed ? "true" : "false",
        batch / calls_s, batch / prefetched_s, bi + 1 < batches.size() ? "," : "");
  }
  std::printf("  ],\n");
}

// Prints the JSON object for the backend `options` make on device 0; the exit status.
int Report(const CublasOptions& options) {
  auto created = CreateCublasBackend(0, options);
  if (!created.ok()) {
    std::printf("{\"benchmark\": \"gpu\", \"skipped\": \"%s\"}\n",
                std::string(created.status().message()).c_str());
    return 0;
  }
  ComputeBackend& backend = **created;
  std::printf("{\n  \"benchmark\": \"gpu\",\n  \"precision\": \"%s\",\n",
              kPrecisionNames.Name(options.precision));
  const ModelSpec mlp = BenchmarkMlp(), cnn = BenchmarkCnn(), resnet = BenchmarkResnet();
  PrintSteps(backend, "step", mlp, {64, 256, 1024, 4096},
             [&](int batch) { return StepGemms(batch, mlp); });
  PrintSteps(backend, "cnn_step", cnn, {64, 256, 1024},
             [&](int batch) { return CudaLayerListGemms(batch, cnn); });
  PrintSteps(backend, "resnet_step", resnet, {64, 256, 1024},
             [&](int batch) { return CudaLayerListGemms(batch, resnet); });
  std::printf("  \"host_to_device\": [\n");

  const std::vector<int> mib = {1, 16, 64};
  for (size_t i = 0; i < mib.size(); ++i) {
    const size_t n = static_cast<size_t>(mib[i]) << 18;  // floats
    std::vector<float> host(n, 1.0f);
    DeviceBuffer dest = backend.Allocate(n);
    auto upload = [&] { backend.CopyToDevice(host.data(), dest.data(), n); };
    const double pageable_s = TimePerCall(backend, 20, upload);
    HostPin pin = backend.PinHostMemory(host.data(), n);  // as a worker's buffers
    const double backend_s = TimePerCall(backend, 20, upload);
    pin = HostPin();
    float* pinned = nullptr;
    cudaMallocHost(reinterpret_cast<void**>(&pinned), n * sizeof(float));
    cudaMemcpy(dest.data(), pinned, n * sizeof(float), cudaMemcpyHostToDevice);
    const auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < 20; ++r)
      cudaMemcpy(dest.data(), pinned, n * sizeof(float), cudaMemcpyHostToDevice);
    const double pinned_s = Seconds(start) / 20;
    cudaFreeHost(pinned);
    const double bytes = static_cast<double>(n) * sizeof(float);
    std::printf(
        "    {\"mib\": %d, \"backend_gbps\": %.2f, \"pinned_memcpy_gbps\": %.2f, \"ratio\": "
        "%.3f, \"pageable_backend_gbps\": %.2f}%s\n",
        mib[i], bytes / backend_s / 1e9, bytes / pinned_s / 1e9, pinned_s / backend_s,
        bytes / pageable_s / 1e9, i + 1 < mib.size() ? "," : "");
  }
  const absl::Status health = backend.Synchronize();
  std::printf("  ],\n  \"device\": \"%s\",\n  \"status\": \"%s\"\n}\n", backend.name().c_str(),
              health.ok() ? "ok" : std::string(health.message()).c_str());
  return health.ok() ? 0 : 1;
}

int Main(int argc, char** argv) {
  std::string precision = "fp32", cudnn_path = "auto", cublaslt = "on";
  const ProgramText text{"gpu_bench",
                         "The GPU training step next to its GEMMs alone, and the backend's "
                         "uploads next to a pinned cudaMemcpy; prints JSON.",
                         ""};
  return RunProgram(argc, argv, text, [&](Command& program, int* exit_code) {
    program.Option("--precision", &precision, "compute.precision")
        .OneOf(kPrecisionNames.AllNames())
        .ShowDefault();
    program.Option("--cudnn-path", &cudnn_path, "compute.cudnn_path: auto, off or a PATH")
        .ShowDefault();
    program.Option("--cublaslt", &cublaslt, "dense layers on cuBLASLt's epilogues")
        .OneOf({"on", "off"})
        .ShowDefault();
    program.OnRun([&, exit_code] {
      CublasOptions options;
      options.precision = *kPrecisionNames.Parse(precision);
      options.cublaslt = cublaslt == "on";
      absl::StatusOr<CudnnLibrary> cudnn = CudnnLibrary::Parse(cudnn_path);
      if (!cudnn.ok()) {
        std::fprintf(stderr, "gpu_bench: --cudnn-path: %s\n",
                     std::string(cudnn.status().message()).c_str());
        *exit_code = 2;
        return;
      }
      options.cudnn = *cudnn;
      *exit_code = Report(options);
    });
  });
}

}  // namespace
}  // namespace monsoon

int main(int argc, char** argv) { return monsoon::Main(argc, argv); }
