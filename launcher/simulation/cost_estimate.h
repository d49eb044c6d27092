// What a job will cost before it runs (`monsoon validate`, and a study's plan in `monsoon
// compare`): its gradient steps, how long a simulated one runs in simulated time, and how long
// it takes on this machine, from one step of its model measured here.
#ifndef MONSOON_LAUNCHER_SIMULATION_COST_ESTIMATE_H_
#define MONSOON_LAUNCHER_SIMULATION_COST_ESTIMATE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/config/job_config.h"
#include "core/job/memory_plan.h"

namespace monsoon {

struct CostEstimate {
  int64_t steps = 0;             // gradient computations, all workers together
  double step_seconds = 0;       // one step's compute as the job will time it
  double simulated_seconds = 0;  // a simulated job's length in simulated time; 0 for real ones
  double real_seconds = 0;       // the run's time on this machine
};

// The median of 10 steps (after 3 to warm up) of the job's model on a batch of zeros: one real
// worker's step on this machine.
absl::StatusOr<double> MeasureStepSeconds(const JobConfig& config);

// Bytes of pushed gradient one server decodes and applies a second on this machine under the
// job's optimizer (and DC-ASGD, when set): the median of 50 pushes (after 5 to warm up) into
// a throwaway server holding as much as the job's largest share (at most 55 chunks), chunk
// after chunk, each copied out of a receive buffer first as the gRPC server decodes it.
absl::StatusOr<double> MeasureApplyBytesPerSecond(const JobConfig& config);

// The estimate for `config` over `data`, with one step taking `measured_step` seconds here.
// Rough by design (within a factor of 2 on the shipped studies): link contention and
// stragglers are averaged, evaluation and start-up counted.
CostEstimate EstimateCost(const JobConfig& config, const DataSizes& data, double measured_step);

// "3,752 gradient steps of 0.80 ms; about 4.1 simulated s; about 6s on this machine".
std::string CostText(const CostEstimate& cost);

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_SIMULATION_COST_ESTIMATE_H_
