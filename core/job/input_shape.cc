#include "core/job/input_shape.h"

#include "absl/strings/str_cat.h"
#include "core/config/config_validation.h"
#include "core/data/data_source.h"

namespace monsoon {

absl::Status ResolveInputShape(JobConfig* config) {
  ModelSpec& m = config->model;
  if (!m.input_shape_from_data) return absl::OkStatus();
  absl::StatusOr<std::vector<int>> shape = TrainingExampleShape(config->data);
  if (!shape.ok()) {
    return absl::Status(shape.status().code(),
                        absl::StrCat("model.input_shape: not given, and the training data's "
                                     "shape cannot be read: ",
                                     shape.status().message()));
  }
  m.input_shape = *std::move(shape);
  m.input_dim = ShapeSize(m.input_shape);
  m.input_shape_from_data = false;
  // A layer list's output is its last layer's unless the file gave output_dim (then checked).
  if (m.type == ModelType::kLayers && m.output_dim == 0) m.output_dim = LayersOutputSize(m);
  return ValidateJobConfig(*config);
}

}  // namespace monsoon
