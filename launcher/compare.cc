#include "launcher/compare.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/metrics.h"
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

absl::StatusOr<Study> ParseStudy(const YAML::Node& root, const std::string& dir) {
  if (!root.IsMap()) return absl::InvalidArgumentError("top level: expected a mapping");
  static const std::set<std::string> kKeys = {"study", "base", "target_accuracy", "set",
                                              "variants"};
  for (const auto& kv : root) {
    if (kKeys.count(kv.first.Scalar()) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(kv.first.Scalar(),
                       ": unknown key (allowed: study, base, target_accuracy, set, variants)"));
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
  const YAML::Node variants = root["variants"];
  if (!variants || !variants.IsSequence() || variants.size() == 0) {
    return absl::InvalidArgumentError("variants: expected a non-empty list of {name, set}");
  }
  std::set<std::string> names;
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
    StudyVariant variant;
    variant.name = v["name"].Scalar();
    MONSOON_RETURN_IF_ERROR(CheckRunName(field + ".name", variant.name));
    if (!names.insert(variant.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".name: '", variant.name, "' is taken by an earlier variant"));
    }
    MONSOON_ASSIGN_OR_RETURN(std::vector<std::string> own, Overrides(v["set"], field + ".set"));
    variant.sets = common;
    variant.sets.insert(variant.sets.end(), own.begin(), own.end());
    auto config = LoadJobConfig(base.string(), variant.sets);
    if (!config.ok()) {
      return absl::Status(config.status().code(), absl::StrCat("variant '", variant.name,
                                                               "': ", config.status().message()));
    }
    variant.config = *std::move(config);
    const bool classification = variant.config.model.loss == LossType::kSoftmaxCrossEntropy;
    if (i == 0) study.classification = classification;
    if (classification != study.classification) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".set: every variant must have the same model.loss as the first"));
    }
    study.variants.push_back(std::move(variant));
  }
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
          "quorum=", c.sync.quorum > 0 ? c.sync.quorum : c.cluster.workers, "/", c.cluster.workers,
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
  return absl::StrCat(knobs, " workers=", c.cluster.workers);
}

namespace {

// ---- The plot: three panels (accuracy vs wall time, epochs, GB sent), SVG by hand. ----

constexpr const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                    "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};

// A "nice" tick step for a range: 1, 2 or 5 times a power of ten, about `count` ticks.
double TickStep(double range, int count) {
  const double raw = range / count;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * magnitude >= raw) return m * magnitude;
  }
  return 10 * magnitude;
}

struct Panel {
  double left, top, width, height;  // plot area in pixels
  double x_max, y_lo, y_hi;
  std::string x_label, clip_id;
  const std::vector<double> VariantResult::*x_curve;  // the x of each evaluation
  double x_unit;                                      // x_curve's values per axis unit
  double X(double x) const { return left + width * x / x_max; }
  double Y(double y) const { return top + height * (1 - (y - y_lo) / (y_hi - y_lo)); }
};

// The curve a study plots: test accuracy (classification) or test loss (regression).
const std::vector<double>& Metric(const Study& study, const VariantResult& r) {
  return study.classification ? r.curve_accuracy : r.curve_loss;
}
const char* MetricName(const Study& study) {
  return study.classification ? "test accuracy" : "test loss";
}

void DrawPanel(const Panel& p, const Study& study, const std::vector<VariantResult>& results,
               std::string* svg) {
  const double target = study.classification ? study.target_accuracy : 0;
  absl::StrAppendFormat(svg,
                        "<clipPath id=\"%s\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                        "height=\"%.1f\"/></clipPath>\n",
                        p.clip_id, p.left, p.top, p.width, p.height);
  absl::StrAppendFormat(svg,
                        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"white\" "
                        "stroke=\"#333\"/>\n",
                        p.left, p.top, p.width, p.height);
  const double xs = TickStep(p.x_max, 6);
  for (double x = 0; x <= p.x_max * (1 + 1e-9); x += xs) {
    absl::StrAppendFormat(svg,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                          p.X(x), p.top, p.X(x), p.top + p.height, p.X(x), p.top + p.height + 16,
                          Fmt(x));
  }
  const double ys = TickStep(p.y_hi - p.y_lo, 6);
  for (double y = std::ceil(p.y_lo / ys) * ys; y <= p.y_hi + 1e-9; y += ys) {
    absl::StrAppendFormat(svg,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                          p.left, p.Y(y), p.left + p.width, p.Y(y), p.left - 6, p.Y(y) + 4,
                          Fmt(std::round(y / ys) * ys));
  }
  if (target > p.y_lo && target < p.y_hi) {
    absl::StrAppendFormat(svg,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" "
                          "stroke-dasharray=\"6,4\"/><text x=\"%.1f\" y=\"%.1f\" "
                          "text-anchor=\"end\" fill=\"#555\">target %s</text>\n",
                          p.left, p.Y(target), p.left + p.width, p.Y(target), p.left + p.width - 4,
                          p.Y(target) - 4, Fmt(target));
  }
  for (size_t i = 0; i < results.size(); ++i) {
    const VariantResult& r = results[i];
    const std::vector<double>& metric = Metric(study, r);
    std::vector<std::string> points;
    for (size_t k = 0; k < metric.size(); ++k) {
      const double x = (r.*p.x_curve)[k] / p.x_unit;
      points.push_back(absl::StrFormat("%.1f,%.1f", p.X(x), p.Y(metric[k])));
    }
    absl::StrAppendFormat(svg,
                          "<polyline clip-path=\"url(#%s)\" fill=\"none\" stroke=\"%s\" "
                          "stroke-width=\"2\" points=\"%s\"/>\n",
                          p.clip_id, kPalette[i % std::size(kPalette)], absl::StrJoin(points, " "));
  }
  absl::StrAppendFormat(svg, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                        p.left + p.width / 2, p.top + p.height + 36, p.x_label);
  absl::StrAppendFormat(svg,
                        "<text transform=\"translate(%.1f,%.1f) rotate(-90)\" "
                        "text-anchor=\"middle\">%s</text>\n",
                        p.left - 48, p.top + p.height / 2, MetricName(study));
}

std::string Svg(const Study& study, const std::vector<VariantResult>& results) {
  constexpr double kGB = 1e9;
  double max_seconds = 0, max_epochs = 0, max_bytes = 0, high = 0, low = 1e300;
  for (const VariantResult& r : results) {
    const std::vector<double>& metric = Metric(study, r);
    for (size_t k = 0; k < metric.size(); ++k) {
      max_seconds = std::max(max_seconds, r.curve_seconds[k]);
      max_epochs = std::max(max_epochs, r.curve_epochs[k]);
      max_bytes = std::max(max_bytes, r.curve_bytes[k]);
      // The range leaves out each curve's first evaluation (often of the initial weights).
      if (k > 0 || metric.size() == 1) {
        high = std::max(high, metric[k]);
        low = std::min(low, metric[k]);
      }
    }
  }
  if (max_epochs <= 0) max_epochs = 1;
  if (max_seconds <= 0) max_seconds = 1;
  const double max_gb = max_bytes > 0 ? max_bytes / kGB : 1;
  if (low > high) low = high = 0;
  double y_lo, y_hi;
  if (study.classification) {
    y_hi = std::min(1.0, std::ceil(high * 20 + 0.2) / 20);
    y_lo = std::max(0.0, std::min(y_hi - 0.1, std::floor(low * 10) / 10));
  } else {
    y_lo = 0;
    y_hi = high > 0 ? high * 1.1 : 1;
  }
  const int legend_rows = static_cast<int>(results.size());
  const double width = 1620, height = 470 + 20.0 * legend_rows;
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "font-family=\"sans-serif\" font-size=\"13\">\n<rect width=\"100%%\" height=\"100%%\" "
      "fill=\"white\"/>\n<text x=\"%.0f\" y=\"26\" text-anchor=\"middle\" font-size=\"17\">"
      "%s: %s by variant</text>\n",
      width, height, width / 2, study.name, MetricName(study));
  const Panel panels[] = {
      {80, 50, 440, 330, max_seconds, y_lo, y_hi, "wall time (s)", "time",
       &VariantResult::curve_seconds, 1},
      {630, 50, 440, 330, max_epochs, y_lo, y_hi, "epochs (mean over workers)", "epochs",
       &VariantResult::curve_epochs, 1},
      {1160, 50, 440, 330, max_gb, y_lo, y_hi, "GB sent (all workers)", "bytes",
       &VariantResult::curve_bytes, kGB},
  };
  for (const Panel& panel : panels) DrawPanel(panel, study, results, &svg);
  for (size_t i = 0; i < results.size(); ++i) {
    const double y = 440 + 20.0 * i;
    absl::StrAppendFormat(
        &svg,
        "<line x1=\"80\" y1=\"%.0f\" x2=\"110\" y2=\"%.0f\" stroke=\"%s\" "
        "stroke-width=\"3\"/><text x=\"118\" y=\"%.0f\">%s (%s): final %s</text>\n",
        y, y, kPalette[i % std::size(kPalette)], y + 4, results[i].name, results[i].knobs,
        Fmt(study.classification ? results[i].final_accuracy : results[i].final_loss));
  }
  return svg + "</svg>\n";
}

}  // namespace

absl::StatusOr<Study> LoadStudy(const std::string& path) {
  if (!fs::is_regular_file(path)) return absl::NotFoundError(absl::StrCat("no study file ", path));
  try {
    const YAML::Node root = YAML::LoadFile(path);
    auto study = ParseStudy(root, fs::absolute(path).parent_path().string());
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

absl::StatusOr<VariantResult> ReadVariantResult(const StudyVariant& variant, const RunDir& run_dir,
                                                double target_accuracy) {
  const JobConfig& c = variant.config;
  VariantResult r;
  r.name = variant.name;
  r.algorithm = kAlgorithmNames.Name(c.training.algorithm);
  r.knobs = VariantKnobs(c);
  MONSOON_ASSIGN_OR_RETURN(CsvTable eval, ReadCsvTable(run_dir.evaluator_metrics_path()));
  const int seconds = eval.Column("wall_seconds"), epoch = eval.Column("epoch"),
            accuracy = eval.Column("test_accuracy"), loss = eval.Column("test_loss");
  if (seconds < 0 || epoch < 0 || accuracy < 0 || loss < 0 || eval.rows.empty()) {
    return absl::DataLossError(
        absl::StrCat(run_dir.evaluator_metrics_path(), " has no evaluations to compare"));
  }
  for (const auto& row : eval.rows) {
    r.curve_seconds.push_back(row[seconds]);
    r.curve_epochs.push_back(row[epoch]);
    r.curve_accuracy.push_back(row[accuracy]);
    r.curve_loss.push_back(row[loss]);
    r.best_accuracy = std::max(r.best_accuracy, row[accuracy]);
    r.best_loss = r.curve_loss.size() == 1 ? row[loss] : std::min(r.best_loss, row[loss]);
    if (target_accuracy > 0 && r.time_to_target < 0 && row[accuracy] >= target_accuracy) {
      r.time_to_target = row[seconds];
    }
  }
  r.final_accuracy = r.curve_accuracy.back();
  r.final_loss = r.curve_loss.back();
  r.wall_seconds = r.curve_seconds.back();
  r.curve_bytes.assign(r.curve_seconds.size(), 0);
  std::vector<uint64_t> staleness;
  for (int i = 0; i < c.cluster.workers; ++i) {
    MONSOON_ASSIGN_OR_RETURN(CsvTable worker, ReadCsvTable(run_dir.worker_metrics_path(i)));
    if (worker.rows.empty()) continue;
    const int wall = worker.Column("wall_seconds"), sent = worker.Column("bytes_sent");
    const std::vector<double>& last = worker.rows.back();
    r.bytes_sent += last[sent];
    r.samples_per_second += last[worker.Column("samples_per_second")];
    r.comm_share +=
        last[worker.Column("comm_seconds")] / std::max(last[wall], 1e-9) / c.cluster.workers;
    // Rows are in time order: walk them along the evaluations. (A restarted worker's clock
    // and the evaluator's both carry on without the time between their processes, which
    // differs by up to an evaluation interval; a compare variant runs without restarts.)
    size_t row = 0;
    double sent_by_then = 0;
    for (size_t k = 0; k < r.curve_seconds.size(); ++k) {
      while (row < worker.rows.size() && worker.rows[row][wall] <= r.curve_seconds[k]) {
        sent_by_then = worker.rows[row++][sent];
      }
      r.curve_bytes[k] += sent_by_then;
    }
  }
  for (int j = 0; j < c.cluster.servers; ++j) {
    MONSOON_ASSIGN_OR_RETURN(CsvTable histogram, ReadCsvTable(run_dir.staleness_path(j)));
    for (const auto& row : histogram.rows) {
      const size_t s = static_cast<size_t>(row[0]);
      staleness.resize(std::max(staleness.size(), s + 1), 0);
      staleness[s] += static_cast<uint64_t>(row[1]);
    }
  }
  r.mean_staleness = HistogramMean(staleness);
  return r;
}

absl::Status WriteComparison(const Study& study, const std::vector<VariantResult>& results,
                             const std::string& out_dir) {
  const std::string columns =
      "variant,algorithm,knobs,status,final_test_accuracy,best_test_accuracy,final_test_loss,"
      "best_test_loss,seconds_to_target,samples_per_second,bytes_sent,mean_staleness,"
      "comm_share,wall_seconds\n";
  std::string csv = columns;
  std::string md = absl::StrCat(
      "# ", study.name, "\n\n", results.size(), " variants of one job",
      study.target_accuracy > 0 ? absl::StrCat("; target accuracy ", Fmt(study.target_accuracy))
                                : "",
      ". Plot: compare.svg.\n\n",
      "| variant | algorithm | knobs | final acc | best acc | final loss | best loss | "
      "s to target | samples/s | MB sent | mean staleness | comm share | wall s | status |\n",
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  // Regression jobs have no accuracy: empty in the CSV, "n/a" in the table.
  const auto csv_accuracy = [&](double v) { return study.classification ? Fmt(v) : ""; };
  const auto md_accuracy = [&](double v) {
    return study.classification ? absl::StrFormat("%.4f", v) : "n/a";
  };
  for (const VariantResult& r : results) {
    const std::string to_target = r.time_to_target >= 0 ? Fmt(r.time_to_target) : "";
    absl::StrAppend(&csv, r.name, ",", r.algorithm, ",\"", r.knobs, "\",\"", r.status, "\",",
                    csv_accuracy(r.final_accuracy), ",", csv_accuracy(r.best_accuracy), ",",
                    Fmt(r.final_loss), ",", Fmt(r.best_loss), ",", to_target, ",",
                    Fmt(r.samples_per_second), ",", absl::StrFormat("%.0f", r.bytes_sent), ",",
                    Fmt(r.mean_staleness), ",", Fmt(r.comm_share), ",", Fmt(r.wall_seconds), "\n");
    absl::StrAppend(
        &md, "| ", r.name, " | ", r.algorithm, " | ", r.knobs, " | ", md_accuracy(r.final_accuracy),
        " | ", md_accuracy(r.best_accuracy), " | ", absl::StrFormat("%.4g", r.final_loss), " | ",
        absl::StrFormat("%.4g", r.best_loss), " | ", to_target.empty() ? "not reached" : to_target,
        " | ", absl::StrFormat("%.0f", r.samples_per_second), " | ",
        absl::StrFormat("%.1f", r.bytes_sent / 1e6), " | ",
        absl::StrFormat("%.2f", r.mean_staleness), " | ", absl::StrFormat("%.2f", r.comm_share),
        " | ", Fmt(r.wall_seconds), " | ", r.status, " |\n");
  }
  MONSOON_RETURN_IF_ERROR(WriteFileAtomically(out_dir + "/compare.csv", csv));
  MONSOON_RETURN_IF_ERROR(WriteFileAtomically(out_dir + "/compare.md", md));
  return WriteFileAtomically(out_dir + "/compare.svg", Svg(study, results));
}

}  // namespace monsoon
