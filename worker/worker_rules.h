// What a worker's training loop needs from the job config, read once (as ServerRules is for
// the server): the algorithm and its knobs, the transport modes and the run's length.
#ifndef MONSOON_WORKER_WORKER_RULES_H_
#define MONSOON_WORKER_WORKER_RULES_H_

#include "core/config/job_config.h"

namespace monsoon {

struct WorkerRules {
  Algorithm algorithm = Algorithm::kDownpour;
  // Downpour (n_push is 1 and local_learning_rate 0 for sync and ssp).
  int n_fetch = 1;
  int n_push = 1;
  int warm_start_steps = 0;
  float local_learning_rate = 0;
  bool pull_with_push = true;
  int ssp_bound = 2;
  EasgdConfig easgd;
  // Transport.
  Overlap overlap = Overlap::kNone;
  Compression compression = Compression::kNone;
  double topk_fraction = 0.01;
  // The run's length, and the learning-rate plan and weight decay of the workers' local steps.
  int epochs = 1;
  int batch_size = 64;
  int max_steps = 0;  // 0: no limit
  LearningRatePlan learning_rate;
  double base_learning_rate = 0;  // BaseLearningRate: the metrics' learning_rate before the plan
  float weight_decay = 0;
  int trace_steps = 200;
  uint64_t seed = 1;  // the job's: with the worker's index and step, each batch's dropout masks
  StragglersConfig stragglers;  // emulated slowness
  double stall_seconds = 0;      // reliability.stall_seconds
  double first_step_seconds = 600;  // reliability.first_step_seconds
  size_t model_data_bytes = 0;      // compute.gpu_data_mib: for TrainableModel::HoldRows

  static WorkerRules FromConfig(const JobConfig& config);
};

// The emulated delay `stragglers` add to step `step` of `worker` whose compute took
// `compute_seconds`: a slow worker's (slow_factor - 1) * compute_seconds, plus a random
// straggler's delay with the configured probability, drawn from (seed, worker, step). Real
// workers sleep it; simulated ones add it to their step's virtual time.
double StragglerDelaySeconds(const StragglersConfig& stragglers, uint64_t seed, int worker,
                             int64_t step, double compute_seconds);

}  // namespace monsoon

#endif  // MONSOON_WORKER_WORKER_RULES_H_
