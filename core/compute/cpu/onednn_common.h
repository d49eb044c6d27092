// What the CPU backend's oneDNN kernels share: a CPU engine with its stream, and the
// descriptions of activations in Monsoon's layouts.
#ifndef MONSOON_CORE_COMPUTE_CPU_ONEDNN_COMMON_H_
#define MONSOON_CORE_COMPUTE_CPU_ONEDNN_COMMON_H_

#include <dnnl.hpp>

namespace monsoon {
namespace onednn {

using Tag = dnnl::memory::format_tag;

// oneDNN's CPU engine and an in-order stream on it.
struct Engine {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
};

// The channel block of the native layout: 16 on CPUs with AVX-512, else 8.
inline int NativeChannelBlock() {
  static const int block = dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core ? 16 : 8;
  return block;
}

inline dnnl::memory::desc Desc(const dnnl::memory::dims& dims, Tag tag) {
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, tag);
}

// The native activation layout's tag.
inline Tag NativeTag() { return NativeChannelBlock() == 16 ? Tag::nChw16c : Tag::nChw8c; }

// An activation's layout as Monsoon holds it: native, or [batch x C x H x W].
inline dnnl::memory::desc HeldDesc(const dnnl::memory::dims& dims, bool native) {
  return Desc(dims, native ? NativeTag() : Tag::nchw);
}

}  // namespace onednn
}  // namespace monsoon

#endif  // MONSOON_CORE_COMPUTE_CPU_ONEDNN_COMMON_H_
