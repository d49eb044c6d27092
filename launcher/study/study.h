// A study for `monsoon compare STUDY.yaml`: several variants of one base job (same data,
// model and seed; each variant overrides some fields), run in turn and compared.
//
// A study file:
//   study: compare_fmnist           # names the default output directory
//   base: fmnist_downpour.yaml      # the base job, relative to the study file
//   target_accuracy: 0.84           # for the time-to-target column (optional)
//   set: {training.epochs: 6}       # overrides for every variant (optional)
//   variants:
//     - name: sync
//       set: {training.algorithm: sync}
//     - ...
//   sweep:                          # optional: each variant once per combination of values
//     stragglers.probability: [0, 0.1, 0.3]   # sync-probability0, sync-probability0.1, ...
#ifndef MONSOON_LAUNCHER_STUDY_STUDY_H_
#define MONSOON_LAUNCHER_STUDY_STUDY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/config/job_config.h"

namespace monsoon {

struct StudyVariant {
  std::string name;
  std::vector<std::string> sets;  // "key.path=value", after the study's common ones
  JobConfig config;               // the base job with both applied
  // The fields VariantKnobs does not show in which the study's variants differ, with this
  // variant's values: "training.batch_size=256 model.hidden=[64]" (empty when none).
  std::string differs;
  // Its name in `variants`, before a sweep's suffixes; and its value of the study's sweep
  // axis (Study::axis).
  std::string family;
  double axis_value = 0;
};

struct Study {
  std::string name = "study";  // names runs/STUDY (CheckRunName)
  double target_accuracy = 0;  // 0: no target
  // Every variant classifies (the plot shows test accuracy) or every variant regresses (the
  // plot shows test loss).
  bool classification = true;
  std::vector<StudyVariant> variants;
  // The first swept field whose values are all numbers (e.g. cluster.workers), which the
  // report puts on an x axis; empty when the study sweeps none.
  std::string axis;
};

// Reads and validates a study: every variant's config must load. InvalidArgument names the
// field (`variants[2].set: ...`) or the variant whose config is bad. `overrides` ("key=value",
// as `--set` takes them) apply to every variant, after the study's own settings.
absl::StatusOr<Study> LoadStudy(const std::string& path,
                                const std::vector<std::string>& overrides = {});

// The settings that distinguish a variant, e.g. "tau=4 alpha=0.45 eta=0.05 workers=2".
std::string VariantKnobs(const JobConfig& config);
// VariantKnobs and, after them, what else sets the variant apart (StudyVariant::differs).
std::string VariantLabel(const StudyVariant& variant);

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_STUDY_STUDY_H_
