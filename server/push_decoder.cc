#include "server/push_decoder.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/compression.h"
#include "core/status_macros.h"

namespace monsoon {

absl::StatusOr<absl::Span<const float>> DecodeGradient(const wire::PushRequest& request,
                                                       const PayloadView& payload,
                                                       size_t max_floats,
                                                       std::vector<float>* gradient) {
  const uint64_t n = request.update().num_floats();
  const uint64_t nnz = request.encoding() == wire::ENCODING_SPARSE_F32 ? request.nnz() : 0;
  const uint64_t bytes_expected = request.encoding() == wire::ENCODING_F32   ? n * sizeof(float)
                                  : request.encoding() == wire::ENCODING_F16 ? n * sizeof(uint16_t)
                                                                             : nnz * 8;
  if (request.encoding() < wire::ENCODING_F32 || request.encoding() > wire::ENCODING_SPARSE_F32) {
    return absl::InvalidArgumentError(absl::StrCat("unknown push encoding ", request.encoding()));
  }
  if (payload.bytes() != bytes_expected || nnz > n || n > max_floats) {
    return absl::InvalidArgumentError(
        absl::StrCat("push header says ", n, " floats (", nnz, " sparse) in encoding ",
                     request.encoding(), " but carries ", payload.bytes(), " bytes"));
  }
  if (request.encoding() == wire::ENCODING_F32) return payload.Floats(n, gradient);
  gradient->resize(n);
  switch (request.encoding()) {
    case wire::ENCODING_F16: {
      thread_local std::vector<uint16_t> halves;
      halves.resize(n);
      MONSOON_RETURN_IF_ERROR(payload.CopyTo(absl::MakeSpan(halves)));
      HalvesToFloats(halves.data(), absl::MakeSpan(*gradient));
      break;
    }
    case wire::ENCODING_SPARSE_F32: {
      thread_local std::vector<uint32_t> pairs;
      pairs.resize(2 * nnz);
      MONSOON_RETURN_IF_ERROR(payload.CopyTo(absl::MakeSpan(pairs)));
      std::fill(gradient->begin(), gradient->end(), 0.0f);
      for (uint64_t j = 0; j < nnz; ++j) {
        const uint32_t index = pairs[2 * j];
        if (index >= n) {
          return absl::InvalidArgumentError(
              absl::StrCat("sparse push index ", index, " outside the chunk's ", n, " floats"));
        }
        std::memcpy(&(*gradient)[index], &pairs[2 * j + 1], sizeof(float));
      }
      break;
    }
    default:
      break;
  }
  return absl::MakeConstSpan(*gradient);
}

}  // namespace monsoon
