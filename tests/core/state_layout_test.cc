#include "core/model/state_layout.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/layer_specs.h"

namespace monsoon {
namespace {

std::string Message(const absl::Status& s) { return std::string(s.message()); }

TEST_CASE("StateLayout: a program's buffers from its manifest, checked by kind",
          "[core][model][state]") {
  ModelSpec spec;
  spec.type = ModelType::kProgram;
  const StateLayout layout = StateLayout::ForModel(
      spec, 1e6,
      {"0.weight (16, 1, 3, 3)", "buffer 1.running_mean (2,)", "buffer 1.running_var (2,)",
       "buffer 1.num_batches_tracked ()", "buffer table (2, 1)"});
  // running_mean [0, 2), running_var [2, 4), num_batches_tracked 4, table [5, 7).
  CHECK(layout.Check(0, {0.5f, -3, 1, 0, 12, -7, 2}).ok());
  CHECK(Message(layout.Check(0, {0, 0, 1, -1, 12, 0, 0})) ==
        "model state '1.running_var' holds -1 at its element 1: a variance is finite, at least "
        "0 and within 1e+06 (model.state_bound)");
  CHECK(Message(layout.Check(0, {3e38f, 0})) ==
        "model state '1.running_mean' holds 3e+38 at its element 0: a mean is finite and within "
        "1e+06 (model.state_bound)");
  CHECK(Message(layout.Check(4, {-1})) ==
        "model state '1.num_batches_tracked' holds -1 at its element 0: a counter is finite and "
        "at least 0");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(Message(layout.Check(5, {1e30f, nan})) ==
        "model state 'table' holds nan at its element 1: a buffer's values are finite");
  // Values past the manifest's buffers have no names: finite is all they must be.
  CHECK(layout.Check(7, {-5}).ok());
  CHECK(Message(layout.Check(7, {nan})) ==
        "model state holds nan at its value 7: a buffer's values are finite");
}

TEST_CASE("StateLayout: a Monsoon model's BatchNorm statistics by their layers' names",
          "[core][model][state]") {
  const ModelSpec spec = Cnn({1, 4, 4}, {Conv(2, 3, 1, Padding::kSame), BatchNorm()}, 3);
  const StateLayout layout = StateLayout::ForModel(spec, 100);
  REQUIRE(Model::NumState(spec) == 4);
  CHECK(layout.Check(0, {0, 0, 1, 1}).ok());
  CHECK_THAT(Message(layout.Check(0, {0, 0, 1, 101})),
             Catch::Matches("model state '.*running_var' holds 101 at its element 1: a variance "
                            "is finite, at least 0 and within 100 \\(model.state_bound\\)"));
}

}  // namespace
}  // namespace monsoon
