// The SGEMMs of one training step of a dense network, the reference the compute benchmarks
// compare a full step against.
#ifndef MONSOON_BENCH_STEP_SHAPES_H_
#define MONSOON_BENCH_STEP_SHAPES_H_

#include <vector>

namespace monsoon {

struct GemmShape {
  bool trans_a, trans_b;
  int m, n, k;
};

// For each dense layer (in -> out) at batch B: forward x W, then dW = x^T dy and, except for
// the first layer, dx = dy W^T. `widths` lists the layer widths from input to output.
inline std::vector<GemmShape> StepGemms(int batch, const std::vector<int>& widths) {
  std::vector<GemmShape> shapes;
  for (size_t l = 0; l + 1 < widths.size(); ++l) {
    const int in = widths[l], out = widths[l + 1];
    shapes.push_back({false, false, batch, out, in});
    shapes.push_back({true, false, in, out, batch});
    if (l > 0) shapes.push_back({false, true, batch, in, out});
  }
  return shapes;
}

}  // namespace monsoon

#endif  // MONSOON_BENCH_STEP_SHAPES_H_
