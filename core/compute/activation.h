// Elementwise activations, each declared once: its name, README's line for it and its math.
// The layer kinds (core/model/layer_kinds.h), the MLP's model.activation, the CPU backend and
// the CUDA kernels (compiled for host and device under nvcc) are all made from these rows, so
// an activation is added here and nowhere else in the code.
#ifndef MONSOON_CORE_COMPUTE_ACTIVATION_H_
#define MONSOON_CORE_COMPUTE_ACTIVATION_H_

#include <cmath>
#include <type_traits>

#include "core/compute/kernel_math.h"

// X(enumerator, name in job files, what it computes as README's layer table says it).
#define MONSOON_ACTIVATIONS(X)                                                           \
  X(kRelu, "relu", "`max(0, x)`, elementwise")                                           \
  X(kTanh, "tanh", "`tanh(x)`, elementwise")                                             \
  X(kSigmoid, "sigmoid", "`1 / (1 + exp(-x))`, elementwise")                             \
  X(kLeakyRelu, "leaky_relu", "`x` where `x > 0`, else `slope · x`, elementwise")        \
  X(kGelu, "gelu", "`x Φ(x)`, Φ the standard normal CDF (exact, by `erf`), elementwise") \
  X(kGeluTanh, "gelu_tanh",                                                              \
    "GELU's tanh approximation `x (1 + tanh(√(2/π) (x + 0.044715 x³))) / 2`, "       \
    "elementwise (PyTorch's `GELU(approximate='tanh')`)")                                \
  X(kSilu, "silu", "`x / (1 + exp(-x))` (SiLU, swish), elementwise")

namespace monsoon {

enum class Activation {
#define MONSOON_ACTIVATION_ENUMERATOR(kind, name, meaning) kind,
  MONSOON_ACTIVATIONS(MONSOON_ACTIVATION_ENUMERATOR)
#undef MONSOON_ACTIVATION_ENUMERATOR
};

// Every activation, in declaration order.
inline constexpr Activation kAllActivations[] = {
#define MONSOON_ACTIVATION_VALUE(kind, name, meaning) Activation::kind,
    MONSOON_ACTIVATIONS(MONSOON_ACTIVATION_VALUE)
#undef MONSOON_ACTIVATION_VALUE
};

// Its name in job files: "relu".
constexpr const char* ActivationName(Activation f) {
  switch (f) {
#define MONSOON_ACTIVATION_NAME(kind, name, meaning) \
  case Activation::kind:                             \
    return name;
    MONSOON_ACTIVATIONS(MONSOON_ACTIVATION_NAME)
#undef MONSOON_ACTIVATION_NAME
  }
  return "";
}

// An activation with its parameter: `slope` is leaky_relu's below zero, in [0, 1); the other
// activations take none.
struct ActivationFn {
  Activation kind = Activation::kRelu;
  float slope = 0;
};

// Whether F's gradient is computed from its input x; the others' come from their output y
// alone, so that a ReLU fused into another kernel, whose input is never kept, backpropagates.
MONSOON_HOST_DEVICE constexpr bool GradientUsesInput(Activation f) {
  return f == Activation::kGelu || f == Activation::kGeluTanh || f == Activation::kSilu;
}

// GELU's tanh approximation: its inner argument's constants.
inline constexpr float kSqrtTwoOverPi = 0.7978845608f;
inline constexpr float kGeluCubic = 0.044715f;

// y = F(x).
template <Activation F>
MONSOON_HOST_DEVICE inline float ActivationElement(float slope, float x) {
  if constexpr (F == Activation::kRelu) {
    return x > 0.0f ? x : 0.0f;
  } else if constexpr (F == Activation::kTanh) {
    return tanhf(x);
  } else if constexpr (F == Activation::kSigmoid) {
    return 1.0f / (1.0f + expf(-x));
  } else if constexpr (F == Activation::kLeakyRelu) {
    return x > 0.0f ? x : slope * x;
  } else if constexpr (F == Activation::kGelu) {
    return 0.5f * x * (1.0f + erff(x * 0.7071067812f));
  } else if constexpr (F == Activation::kGeluTanh) {
    return 0.5f * x * (1.0f + tanhf(kSqrtTwoOverPi * (x + kGeluCubic * x * x * x)));
  } else {
    static_assert(F == Activation::kSilu, "an activation without its math");
    return x / (1.0f + expf(-x));
  }
}

// dx = dy * F'(x), from the input x (read only where GradientUsesInput(F)) and the output
// y = F(x). Each case reads every operand it selects between, so that a loop of them compiles
// to selects rather than branches (a branch per element mispredicts on real activations).
template <Activation F>
MONSOON_HOST_DEVICE inline float ActivationGradient(float slope, float x, float y, float dy) {
  if constexpr (F == Activation::kRelu) {
    return y > 0.0f ? dy : 0.0f;
  } else if constexpr (F == Activation::kTanh) {
    return dy * (1.0f - y * y);
  } else if constexpr (F == Activation::kSigmoid) {
    return dy * y * (1.0f - y);
  } else if constexpr (F == Activation::kLeakyRelu) {
    // y has x's sign wherever slope > 0, and where slope is 0 both branches give 0 below 0.
    return y > 0.0f ? dy : slope * dy;
  } else if constexpr (F == Activation::kGelu) {
    // Φ(x) + x φ(x), φ the standard normal density.
    const float cdf = 0.5f * (1.0f + erff(x * 0.7071067812f));
    return dy * (cdf + x * 0.3989422804f * expf(-0.5f * x * x));
  } else if constexpr (F == Activation::kGeluTanh) {
    const float t = tanhf(kSqrtTwoOverPi * (x + kGeluCubic * x * x * x));
    const float inner = kSqrtTwoOverPi * (1.0f + 3.0f * kGeluCubic * x * x);
    return dy * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * inner);
  } else {
    static_assert(F == Activation::kSilu, "an activation without its gradient");
    const float s = 1.0f / (1.0f + expf(-x));
    return dy * s * (1.0f + x * (1.0f - s));
  }
}

// Calls visit(std::integral_constant<Activation, F>{}) with F = f: how a backend turns the
// activation it is given into a loop or kernel compiled for that one activation.
template <class Visit>
void DispatchActivation(Activation f, Visit&& visit) {
  switch (f) {
#define MONSOON_ACTIVATION_CASE(kind, name, meaning)               \
  case Activation::kind:                                           \
    visit(std::integral_constant<Activation, Activation::kind>{}); \
    return;
    MONSOON_ACTIVATIONS(MONSOON_ACTIVATION_CASE)
#undef MONSOON_ACTIVATION_CASE
  }
}

}  // namespace monsoon

#endif  // MONSOON_CORE_COMPUTE_ACTIVATION_H_
