#include "core/process/process_setup.h"

#include <catch2/catch.hpp>
#include <limits>
#include <thread>
#include <vector>

#include "core/optimizer.h"

namespace monsoon {
namespace {

// Momentum's velocity for 1,000 parameters whose gradient stays zero, after `steps` applies
// from `start`, on the calling thread.
std::vector<float> RestingVelocity(float start, int steps) {
  std::vector<float> w(1000, 1.0f), g(1000, 0.0f), v(1000, start);
  const MomentumOptimizer momentum(0.002f, 0.9f, 0.0f);
  for (int step = 0; step < steps; ++step)
    momentum.Apply(absl::MakeSpan(w), g, absl::MakeSpan(v), step, 1.0f);
  return v;
}

TEST_CASE("process setup: denormals flush to zero here and in threads started after", "[core]") {
#if defined(__x86_64__)
  constexpr float kDenormal = std::numeric_limits<float>::denorm_min();
  // Without the setting the velocity comes to rest at the smallest denormal: 0.9 of it rounds
  // back up to it.
  CHECK(RestingVelocity(kDenormal, 10)[0] == kDenormal);
  FlushDenormalsToZero();
  CHECK(RestingVelocity(kDenormal, 1)[0] == 0.0f);
  CHECK(RestingVelocity(1e-3f, 1000)[999] == 0.0f);
  std::vector<float> in_thread;
  std::thread([&] { in_thread = RestingVelocity(kDenormal, 1); }).join();
  CHECK(in_thread[0] == 0.0f);
  volatile float smallest_normal = std::numeric_limits<float>::min();
  CHECK(smallest_normal * 0.5f == 0.0f);
#endif
}

}  // namespace
}  // namespace monsoon
