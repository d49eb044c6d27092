// Pooling benchmark: the CPU backend's own 2x2 max pooling on oneDNN's blocked layout (forward
// recording each window's winner, backward from those bytes, optionally through the fused ReLU
// before it) against oneDNN's pooling primitives on the same layout and the same data
// (forward_training with its workspace, backward from it; through the ReLU, oneDNN's
// eltwise_relu backward after it), for the pooling layers of configs/fmnist_cnn.yaml, one
// thread. Passes alternate, one of each a round. Prints one JSON object: medians over the
// rounds, and ratio = oneDNN's time / the backend's (above 1: the backend is faster).
//
//   pool_bench [--rounds N] [--batch B]
#include <omp.h>

#include <iostream>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <vector>

#include "absl/strings/str_format.h"
#include "bench/median.h"
#include "bench/seconds.h"
#include "core/cli/command_line.h"
#include "core/compute/cpu/cpu_backend.h"

namespace monsoon {
namespace {

using dnnl::memory;

// n floats uniform in [-1, 1), the same for the same seed.
std::vector<float> RandomFloats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// oneDNN's max pooling (and, with `relu`, the ReLU's backward after it) on `g`, in the
// backend's blocked layout.
class OneDnnPooling {
 public:
  OneDnnPooling(const Pool2dGeometry& g, int batch, int block, bool relu)
      : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_), relu_(relu) {
    const auto tag = block == 16 ? memory::format_tag::nChw16c : memory::format_tag::nChw8c;
    const memory::desc src({batch, g.channels, g.height, g.width}, memory::data_type::f32, tag);
    const memory::desc dst({batch, g.channels, g.out_height, g.out_width},
                           memory::data_type::f32, tag);
    const memory::dims strides = {g.stride, g.stride}, kernel = {g.size, g.size}, pad = {0, 0};
    const dnnl::pooling_forward::primitive_desc forward_pd(
        {dnnl::prop_kind::forward_training, dnnl::algorithm::pooling_max, src, dst, strides,
         kernel, pad, pad},
        engine_);
    const dnnl::pooling_backward::primitive_desc backward_pd(
        {dnnl::algorithm::pooling_max, src, dst, strides, kernel, pad, pad}, engine_, forward_pd);
    const dnnl::eltwise_forward::primitive_desc relu_forward_pd(
        {dnnl::prop_kind::forward_training, dnnl::algorithm::eltwise_relu_use_dst_for_bwd, src,
         0.0f},
        engine_);
    const dnnl::eltwise_backward::primitive_desc relu_pd(
        {dnnl::algorithm::eltwise_relu_use_dst_for_bwd, src, src, 0.0f}, engine_,
        relu_forward_pd);
    forward_ = dnnl::pooling_forward(forward_pd);
    backward_ = dnnl::pooling_backward(backward_pd);
    relu_backward_ = dnnl::eltwise_backward(relu_pd);
    x_ = memory(src, engine_);
    y_ = memory(dst, engine_);
    dy_ = memory(dst, engine_);
    dx_ = memory(src, engine_);
    workspace_ = memory(forward_pd.workspace_desc(), engine_);
    Fill(x_, src.get_size() / 4, 1);
    Fill(dy_, dst.get_size() / 4, 2);
  }

  void Step() {
    forward_.execute(stream_, {{DNNL_ARG_SRC, x_}, {DNNL_ARG_DST, y_},
                               {DNNL_ARG_WORKSPACE, workspace_}});
    backward_.execute(stream_, {{DNNL_ARG_DIFF_DST, dy_}, {DNNL_ARG_DIFF_SRC, dx_},
                                {DNNL_ARG_WORKSPACE, workspace_}});
    if (relu_) {
      relu_backward_.execute(stream_,
                             {{DNNL_ARG_DST, x_}, {DNNL_ARG_DIFF_DST, dx_}, {DNNL_ARG_DIFF_SRC, dx_}});
    }
    stream_.wait();
  }

 private:
  static void Fill(memory& m, size_t n, uint64_t seed) {
    const std::vector<float> values = RandomFloats(n, seed);
    std::copy(values.begin(), values.end(), static_cast<float*>(m.get_data_handle()));
  }

  dnnl::engine engine_;
  dnnl::stream stream_;
  const bool relu_;
  dnnl::pooling_forward forward_;
  dnnl::pooling_backward backward_;
  dnnl::eltwise_backward relu_backward_;
  memory x_, y_, dy_, dx_, workspace_;
};

// The backend's own pooling on the same geometry, layout and data.
class BackendPooling {
 public:
  BackendPooling(Pool2dGeometry g, int batch, bool relu) : g_(g), batch_(batch) {
    g_.layout = Layout::kNative;
    g_.relu = relu ? FusedRelu::kOnInput : FusedRelu::kNone;
    const size_t in = static_cast<size_t>(batch) * g.channels * g.height * g.width;
    const size_t out = static_cast<size_t>(batch) * g.channels * g.out_height * g.out_width;
    x_ = RandomFloats(in, 1);
    dy_ = RandomFloats(out, 2);
    y_.resize(out);
    dx_.resize(in + 16);  // 16-byte aligned below
    workspace_.resize(backend_.PoolWorkspaceBytes(g_, PoolKind::kMax, batch));
  }

  void Step() {
    float* dx = dx_.data() + (16 - reinterpret_cast<uintptr_t>(dx_.data()) % 16) / 4 % 4;
    backend_.Pool2dForward(g_, PoolKind::kMax, x_.data(), batch_, y_.data(), workspace_.data());
    backend_.Pool2dBackward(g_, PoolKind::kMax, x_.data(), y_.data(), workspace_.data(), dy_.data(),
                            batch_, dx);
  }

 private:
  CpuBackend backend_{1};
  Pool2dGeometry g_;
  const int batch_;
  std::vector<float> x_, y_, dy_, dx_;
  std::vector<uint8_t> workspace_;
};

// The pooling layers of configs/fmnist_cnn.yaml: 2x2 windows after 32 and 64 filters.
std::vector<Pool2dGeometry> CnnPools() {
  std::vector<Pool2dGeometry> pools;
  for (const auto& [channels, side] : {std::pair{32, 28}, std::pair{64, 14}}) {
    Pool2dGeometry g;
    g.channels = channels;
    g.height = g.width = side;
    g.out_height = g.out_width = side / 2;
    pools.push_back(g);
  }
  return pools;
}

// Prints the JSON object: each pooling of the CNN's, `rounds` times at `batch`.
void Report(int rounds, int batch) {
  omp_set_num_threads(1);
  const int block = CpuBackend(1).NativeChannelBlock();
  std::cout << absl::StrFormat("{\"batch\": %d, \"channel_block\": %d, \"cases\": [", batch, block);
  const char* separator = "";
  for (const bool relu : {false, true}) {
    for (const Pool2dGeometry& g : CnnPools()) {
      OneDnnPooling onednn(g, batch, block, relu);
      BackendPooling own(g, batch, relu);
      std::vector<double> onednn_s, own_s;
      for (int r = 0; r < rounds; ++r) {
        onednn_s.push_back(SecondsOf([&] { onednn.Step(); }));
        own_s.push_back(SecondsOf([&] { own.Step(); }));
      }
      std::cout << absl::StrFormat(
          "%s\n  {\"channels\": %d, \"side\": %d, \"through_relu\": %s, \"onednn_us\": %.1f, "
          "\"backend_us\": %.1f, \"ratio\": %.3f}",
          separator, g.channels, g.height, relu ? "true" : "false", Median(onednn_s) * 1e6,
          Median(own_s) * 1e6, Median(onednn_s) / Median(own_s));
      separator = ",";
    }
  }
  std::cout << "\n]}\n";
}

int Main(int argc, char** argv) {
  int rounds = 50, batch = 64;
  const ProgramText text{"pool_bench", "The backend's max pooling against oneDNN's; prints JSON.",
                         ""};
  return RunProgram(argc, argv, text, [&](Command& program, int*) {
    program.Option("--rounds", &rounds, "interleaved rounds").InRange(1, 100000).ShowDefault();
    program.Option("--batch", &batch, "examples per pass").InRange(1, 65536).ShowDefault();
    program.OnRun([&] { Report(rounds, batch); });
  });
}

}  // namespace
}  // namespace monsoon

int main(int argc, char** argv) { return monsoon::Main(argc, argv); }
