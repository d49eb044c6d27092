#include "launcher/study/study.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/config/config_reader.h"
#include "core/config/config_validation.h"
#include "core/config/config_writer.h"
#include "core/config/derived_values.h"
#include "core/job/input_shape.h"
#include "core/status_macros.h"

namespace monsoon {
namespace {

namespace fs = std::filesystem;

// "key=value" overrides, as `--set` takes them, from a YAML mapping of dotted keys to values
// (a value may be a list: {model.hidden: [64, 32]}); the value is written back as YAML, so
// that `--set` reads the same value.
absl::StatusOr<std::vector<std::string>> Overrides(const YAML::Node& node,
                                                   const std::string& field) {
  std::vector<std::string> sets;
  if (!node || node.IsNull()) return sets;
  if (!node.IsMap()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": expected a mapping of config fields, e.g. {ssp.bound: 2}"));
  }
  for (const auto& kv : node) {
    if (kv.second.IsNull()) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".", kv.first.Scalar(), ": no value (leave the key out for the base job's)"));
    }
    YAML::Emitter value;
    value << YAML::Flow << kv.second;
    sets.push_back(absl::StrCat(kv.first.Scalar(), "=", value.c_str()));
  }
  return sets;
}

// Whether VariantKnobs shows the field `path` (or the variant's name is all it is).
bool ShownByKnobs(const std::string& path) {
  for (const char* prefix : {"downpour.", "sync.", "ssp.", "easgd.", "staleness."}) {
    if (absl::StartsWith(path, prefix)) return true;
  }
  for (const char* field :
       {"job", "training.algorithm", "optimizer.type", "optimizer.learning_rate",
        "optimizer.weight_decay", "training.learning_rate_schedule", "training.warmup_epochs",
        "cluster.workers"}) {
    if (path == field) return true;
  }
  return false;
}

// Fills each variant's `differs`: the fields not ShownByKnobs whose values are not the same in
// every variant.
void SetDiffers(Study* study) {
  std::vector<std::vector<std::pair<std::string, std::string>>> fields;
  for (const StudyVariant& v : study->variants) fields.push_back(JobConfigFields(v.config));
  std::map<std::string, std::set<std::string>> values;  // path -> the values variants have
  for (const auto& variant_fields : fields) {
    for (const auto& [path, value] : variant_fields) values[path].insert(value);
  }
  for (size_t i = 0; i < fields.size(); ++i) {
    std::vector<std::string> words;
    for (const auto& [path, value] : fields[i]) {
      if (values[path].size() > 1 && !ShownByKnobs(path)) {
        words.push_back(absl::StrCat(path, "=", value));
      }
    }
    study->variants[i].differs = absl::StrJoin(words, " ");
  }
}

// A variant as the study file names it: its name and its own overrides.
struct VariantSpec {
  std::string name;
  std::vector<std::string> sets;
  std::string family;  // the name in `variants`
  // Each swept field's value, in the sweep's order.
  std::vector<std::pair<std::string, std::string>> swept;
};

// The variants list, each checked for its keys and a unique name.
absl::StatusOr<std::vector<VariantSpec>> ParseVariants(const YAML::Node& variants) {
  if (!variants || !variants.IsSequence() || variants.size() == 0) {
    return absl::InvalidArgumentError("variants: expected a non-empty list of {name, set}");
  }
  std::vector<VariantSpec> specs;
  for (size_t i = 0; i < variants.size(); ++i) {
    const std::string field = absl::StrCat("variants[", i, "]");
    const YAML::Node v = variants[i];
    if (!v.IsMap() || !v["name"] || !v["name"].IsScalar()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".name: required"));
    }
    for (const auto& kv : v) {
      if (kv.first.Scalar() != "name" && kv.first.Scalar() != "set") {
        return absl::InvalidArgumentError(
            absl::StrCat(field, ".", kv.first.Scalar(), ": unknown key (allowed: name, set)"));
      }
    }
    VariantSpec spec{v["name"].Scalar(), {}, v["name"].Scalar(), {}};
    MONSOON_RETURN_IF_ERROR(CheckRunName(field + ".name", spec.name));
    for (const VariantSpec& earlier : specs) {
      if (earlier.name == spec.name) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, ".name: '", spec.name, "' is taken by an earlier variant"));
      }
    }
    MONSOON_ASSIGN_OR_RETURN(spec.sets, Overrides(v["set"], field + ".set"));
    specs.push_back(std::move(spec));
  }
  return specs;
}

// Names a sweep made the same (values that differ only in characters a name cannot hold, such
// as "a b" and "a_b") "-2", "-3", ... after the first.
void MakeNamesUnique(std::vector<VariantSpec>* specs) {
  std::map<std::string, int> seen;
  for (VariantSpec& spec : *specs) {
    const int n = ++seen[spec.name];
    if (n > 1) spec.name = absl::StrCat(spec.name, "-", n);
  }
}

// A swept value as a run name may hold it: a scalar's own characters, a list's items joined
// by "x" ([1, 28] is "1x28", [12, 8] "12x8"), a mapping's "KEY_VALUE"s joined by "_"; other
// characters become "_".
std::string SweepValueName(const YAML::Node& value) {
  std::string name;
  if (value.IsSequence() || value.IsMap()) {
    std::vector<std::string> parts;
    for (const auto& item : value) {
      parts.push_back(value.IsMap() ? absl::StrCat(SweepValueName(item.first), "_",
                                                   SweepValueName(item.second))
                                    : SweepValueName(item));
    }
    name = absl::StrJoin(parts, value.IsMap() ? "_" : "x");
  } else {
    name = value.Scalar();
  }
  for (char& c : name) {
    if (!IsRunNameChar(c, /*first=*/false)) c = '_';
  }
  return name;
}

// Each variant once for every combination of the sweep's values, in the order given (the last
// field's values vary fastest): "NAME-LEAFVALUE..." with LEAF the field's last part
// (stragglers.probability: 0.1 adds "-probability0.1"; model.hidden: [64, 32] "-hidden64x32").
absl::StatusOr<std::vector<VariantSpec>> ExpandSweep(std::vector<VariantSpec> specs,
                                                     const YAML::Node& sweep) {
  if (!sweep || sweep.IsNull()) return specs;
  if (!sweep.IsMap()) {
    return absl::InvalidArgumentError(
        "sweep: expected a mapping of config fields to lists of values, e.g. "
        "{stragglers.probability: [0, 0.1, 0.3]}");
  }
  for (const auto& kv : sweep) {
    const std::string field = kv.first.Scalar();
    if (!kv.second.IsSequence() || kv.second.size() == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("sweep.", field, ": expected a non-empty list of values"));
    }
    const std::string leaf = field.substr(field.rfind('.') + 1);
    std::vector<VariantSpec> crossed;
    for (const VariantSpec& spec : specs) {
      for (const YAML::Node& value : kv.second) {
        YAML::Emitter text;
        text << YAML::Flow << value;
        VariantSpec swept = spec;
        swept.name = absl::StrCat(spec.name, "-", leaf, SweepValueName(value));
        swept.sets.push_back(absl::StrCat(field, "=", text.c_str()));
        swept.swept.emplace_back(field, text.c_str());
        crossed.push_back(std::move(swept));
      }
    }
    specs = std::move(crossed);
  }
  MakeNamesUnique(&specs);
  return specs;
}

// The study's axis: the first swept field whose every value is a number, and each variant's
// value of it.
void SetAxis(const std::vector<VariantSpec>& specs, Study* study) {
  if (specs.empty()) return;
  for (size_t f = 0; f < specs[0].swept.size(); ++f) {
    std::vector<double> values(specs.size());
    bool numeric = true;
    for (size_t i = 0; i < specs.size() && numeric; ++i) {
      numeric = absl::SimpleAtod(specs[i].swept[f].second, &values[i]);
    }
    if (!numeric) continue;
    study->axis = specs[0].swept[f].first;
    for (size_t i = 0; i < specs.size(); ++i) study->variants[i].axis_value = values[i];
    return;
  }
}

absl::StatusOr<Study> ParseStudy(const YAML::Node& root, const std::string& dir,
                                 const std::vector<std::string>& overrides) {
  if (!root.IsMap()) return absl::InvalidArgumentError("top level: expected a mapping");
  static const std::set<std::string> kKeys = {"study", "base",     "target_accuracy",
                                              "set",   "variants", "sweep"};
  for (const auto& kv : root) {
    if (kKeys.count(kv.first.Scalar()) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          kv.first.Scalar(),
          ": unknown key (allowed: study, base, target_accuracy, set, variants, sweep)"));
    }
  }
  Study study;
  if (root["study"]) {
    if (!root["study"].IsScalar()) return absl::InvalidArgumentError("study: expected a name");
    study.name = root["study"].Scalar();
  }
  MONSOON_RETURN_IF_ERROR(CheckRunName("study", study.name));
  if (!root["base"] || !root["base"].IsScalar()) {
    return absl::InvalidArgumentError("base: required, the base job's YAML file");
  }
  fs::path base(root["base"].Scalar());
  if (base.is_relative()) base = fs::path(dir) / base;
  if (const YAML::Node target = root["target_accuracy"]) {
    const std::string text = target.IsScalar() ? target.Scalar() : "";
    if (!absl::SimpleAtod(text, &study.target_accuracy) ||
        !(study.target_accuracy > 0 && study.target_accuracy <= 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("target_accuracy: expected a number in (0, 1], got '", text, "'"));
    }
  }
  MONSOON_ASSIGN_OR_RETURN(std::vector<std::string> common, Overrides(root["set"], "set"));
  MONSOON_ASSIGN_OR_RETURN(std::vector<VariantSpec> specs, ParseVariants(root["variants"]));
  MONSOON_ASSIGN_OR_RETURN(specs, ExpandSweep(std::move(specs), root["sweep"]));
  std::set<std::string> names;
  for (size_t i = 0; i < specs.size(); ++i) {
    StudyVariant variant;
    variant.name = specs[i].name;
    if (!names.insert(variant.name).second) {
      return absl::InvalidArgumentError(absl::StrCat("sweep: variant '", variant.name,
                                                     "' would be named twice; rename a variant"));
    }
    variant.family = specs[i].family;
    variant.sets = common;
    variant.sets.insert(variant.sets.end(), specs[i].sets.begin(), specs[i].sets.end());
    variant.sets.insert(variant.sets.end(), overrides.begin(), overrides.end());
    auto config = LoadJobConfig(base.string(), variant.sets);
    if (config.ok()) {
      const absl::Status resolved = ResolveInputShape(&*config);
      if (!resolved.ok()) config = resolved;
    }
    if (!config.ok()) {
      return absl::Status(config.status().code(), absl::StrCat("variant '", variant.name,
                                                               "': ", config.status().message()));
    }
    variant.config = *std::move(config);
    const bool classification = variant.config.model.loss == LossType::kSoftmaxCrossEntropy;
    if (i == 0) study.classification = classification;
    if (classification != study.classification) {
      return absl::InvalidArgumentError(
          absl::StrCat("variant '", variant.name,
                       "': every variant must have the same model.loss as the first"));
    }
    study.variants.push_back(std::move(variant));
  }
  SetDiffers(&study);
  SetAxis(specs, &study);
  return study;
}

std::string Fmt(double v) { return absl::StrFormat("%.4g", v); }

}  // namespace

std::string VariantKnobs(const JobConfig& c) {
  const std::string optimizer =
      absl::StrCat(kOptimizerNames.Name(c.optimizer.type), " lr=", Fmt(c.optimizer.learning_rate));
  std::string knobs;
  switch (c.training.algorithm) {
    case Algorithm::kDownpour:
      knobs = absl::StrCat("n_fetch=", c.downpour.n_fetch, " n_push=", c.downpour.n_push, " ",
                           optimizer);
      if (c.downpour.warm_start_steps > 0) {
        absl::StrAppend(&knobs, " warm_start=", c.downpour.warm_start_steps);
      }
      break;
    case Algorithm::kSync:
      knobs = absl::StrCat(
          "quorum=", EffectiveQuorum(c), "/", c.cluster.pushing_clients(),
          " late=", kLateGradientsNames.Name(c.sync.late_gradients), " ", optimizer);
      break;
    case Algorithm::kSsp:
      knobs = absl::StrCat("bound=", c.ssp.bound, " ", optimizer);
      break;
    case Algorithm::kEasgd:
    case Algorithm::kEamsgd:
      knobs = absl::StrCat("tau=", c.easgd.tau,
                           " alpha=", Fmt(ElasticAlpha(c.easgd, c.cluster.workers)),
                           " eta=", Fmt(c.easgd.learning_rate));
      if (c.training.algorithm == Algorithm::kEamsgd) {
        absl::StrAppend(&knobs, " delta=", Fmt(c.easgd.momentum));
      }
      break;
  }
  if (PushesGradients(c.training.algorithm) && c.staleness.policy != StalenessPolicy::kAccept) {
    absl::StrAppend(&knobs, " staleness=", kStalenessPolicyNames.Name(c.staleness.policy));
    if (c.staleness.policy == StalenessPolicy::kDrop) {
      absl::StrAppend(&knobs, "@", c.staleness.bound);
    }
  }
  if (c.staleness.dc_lambda > 0) absl::StrAppend(&knobs, " dc_lambda=", Fmt(c.staleness.dc_lambda));
  if (c.training.learning_rate_schedule != LearningRateSchedule::kConstant) {
    absl::StrAppend(&knobs, " schedule=", kScheduleNames.Name(c.training.learning_rate_schedule));
  }
  if (c.training.warmup_epochs > 0)
    absl::StrAppend(&knobs, " warmup=", Fmt(c.training.warmup_epochs));
  if (c.optimizer.weight_decay > 0) absl::StrAppend(&knobs, " wd=", Fmt(c.optimizer.weight_decay));
  absl::StrAppend(&knobs, " workers=", c.cluster.workers);
  // Times of a simulated run are simulated seconds: the table says so.
  if (c.simulation.enabled) absl::StrAppend(&knobs, " simulated");
  return knobs;
}

std::string VariantLabel(const StudyVariant& variant) {
  const std::string knobs = VariantKnobs(variant.config);
  return variant.differs.empty() ? knobs : absl::StrCat(knobs, " ", variant.differs);
}

absl::StatusOr<Study> LoadStudy(const std::string& path,
                                const std::vector<std::string>& overrides) {
  if (!fs::is_regular_file(path)) return absl::NotFoundError(absl::StrCat("no study file ", path));
  try {
    const YAML::Node root = YAML::LoadFile(path);
    auto study = ParseStudy(root, fs::absolute(path).parent_path().string(), overrides);
    if (!study.ok()) {
      return absl::Status(study.status().code(),
                          absl::StrCat(path, ": ", study.status().message()));
    }
    return study;
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": YAML error at line ", e.mark.line + 1, ": ", e.msg));
  }
}

}  // namespace monsoon
