#include "core/process/out_of_memory.h"

#include <catch2/catch.hpp>
#include <cstddef>
#include <memory>

namespace monsoon {
namespace {

TEST_CASE("A failed allocation is one error naming what was being allocated", "[core]") {
  const absl::Status status = CatchOutOfMemory([] {
    const Allocating outer("the model's weights");
    {
      const Allocating inner("the model's 4611686018427387904 activations");
      // More than any address space: operator new[] throws std::bad_array_new_length, a
      // std::bad_alloc.
      volatile size_t huge = size_t{1} << 62;
      std::unique_ptr<float[]> values(new float[huge]);
      values[0] = 1;
    }
    return absl::OkStatus();
  });
  CHECK(status.code() == absl::StatusCode::kResourceExhausted);
  CHECK(std::string(status.message()) ==
        "out of memory while allocating the model's 4611686018427387904 activations "
        "(`monsoon validate` prints what each role needs)");
  CHECK(Allocating::Current().empty());
  // Without a failure the body's own status comes back.
  CHECK(CatchOutOfMemory([] { return absl::InternalError("x"); }).message() == "x");
}

}  // namespace
}  // namespace monsoon
