// A model's input shape read from the training data's headers, for a job file that leaves it
// out: above both the config and the data readers, since it reads the data's files.
#ifndef MONSOON_CORE_JOB_INPUT_SHAPE_H_
#define MONSOON_CORE_JOB_INPUT_SHAPE_H_

#include "absl/status/status.h"
#include "core/config/job_config.h"

namespace monsoon {

// The step that reads the data's headers, for a config whose model takes its input shape from
// the training data (ModelSpec::input_shape_from_data): sets the shape, and a layer list's
// output size, then checks the model as ParseJobConfig checks a model given in full. A no-op
// for other configs. Errors name model.input_shape and the file.
absl::Status ResolveInputShape(JobConfig* config);

}  // namespace monsoon

#endif  // MONSOON_CORE_JOB_INPUT_SHAPE_H_
