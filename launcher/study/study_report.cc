#include "launcher/study/study_report.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "core/run/run_dir.h"
#include "core/status_macros.h"

namespace monsoon {
namespace {

std::string Fmt(double v) { return absl::StrFormat("%.4g", v); }

// A Markdown table cell: one line, its pipes escaped.
std::string MdCell(const std::string& text) {
  return absl::StrReplaceAll(text, {{"|", "\\|"}, {"\r", " "}, {"\n", " "}});
}

// The study's metric: test accuracy (classification) or test loss (regression).
const std::vector<double>& Metric(const Study& study, const VariantResult& r) {
  return study.classification ? r.curve_accuracy : r.curve_loss;
}

// The y axis for the metric's curves, leaving out each curve's first evaluation (often of the
// initial weights).
void YRange(const Study& study, const std::vector<VariantResult>& results, LinePlot* plot) {
  double high = 0, low = 1e300;
  for (const VariantResult& r : results) {
    const std::vector<double>& metric = Metric(study, r);
    for (size_t k = metric.size() == 1 ? 0 : 1; k < metric.size(); ++k) {
      high = std::max(high, metric[k]);
      low = std::min(low, metric[k]);
    }
  }
  if (low > high) low = high = 0;
  if (study.classification) {
    plot->y_hi = std::min(1.0, std::ceil(high * 20 + 0.2) / 20);
    plot->y_lo = std::max(0.0, std::min(plot->y_hi - 0.1, std::floor(low * 10) / 10));
  } else {
    plot->y_lo = 0;
    plot->y_hi = high > 0 ? high * 1.1 : 1;
  }
}

std::string Csv(const Study& study, const std::vector<VariantResult>& results) {
  std::string csv =
      "variant,algorithm,knobs,status,final_test_accuracy,best_test_accuracy,final_test_loss,"
      "best_test_loss,seconds_to_target,samples_per_second,bytes_sent,mean_staleness,"
      "p99_staleness,comm_share,wall_seconds,seed\n";
  // Regression jobs have no accuracy: empty in the CSV; a failed variant has no figures.
  const auto accuracy = [&](double v) { return study.classification ? Fmt(v) : ""; };
  for (const VariantResult& r : results) {
    absl::StrAppend(&csv, CsvField(r.name), ",", CsvField(r.algorithm), ",", CsvField(r.knobs), ",",
                    CsvField(r.status));
    if (r.failed()) {
      absl::StrAppend(&csv, ",,,,,,,,,,,,", r.seed, "\n");
      continue;
    }
    absl::StrAppend(&csv, ",", accuracy(r.final_accuracy), ",", accuracy(r.best_accuracy), ",",
                    Fmt(r.final_loss), ",", Fmt(r.best_loss), ",",
                    r.time_to_target >= 0 ? Fmt(r.time_to_target) : "", ",",
                    Fmt(r.samples_per_second), ",", absl::StrFormat("%.0f", r.bytes_sent), ",",
                    Fmt(r.mean_staleness), ",", Fmt(r.p99_staleness), ",", Fmt(r.comm_share), ",",
                    Fmt(r.wall_seconds), ",",
                    r.seed, "\n");
  }
  return csv;
}

// The median and range of a figure over a variant's runs.
struct Spread {
  double median = 0, low = 0, high = 0;
  size_t count = 0;
};

Spread SpreadOf(std::vector<double> values) {
  Spread s;
  s.count = values.size();
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  s.median = n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  s.low = values.front();
  s.high = values.back();
  return s;
}

// "0.8781 [0.8712, 0.8840]" (with `digits` decimals), or "—" without values.
std::string SpreadText(const Spread& s, int digits) {
  if (s.count == 0) return "—";
  return absl::StrFormat("%.*f [%.*f, %.*f]", digits, s.median, digits, s.low, digits, s.high);
}

// The runs of each variant, in the order of the variants' first runs.
std::vector<std::vector<const VariantResult*>> RunsByVariant(
    const std::vector<VariantResult>& results) {
  std::vector<std::vector<const VariantResult*>> groups;
  for (const VariantResult& r : results) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.front()->name == r.name; });
    if (it == groups.end()) {
      groups.push_back({&r});
    } else {
      it->push_back(&r);
    }
  }
  return groups;
}

// The first variant's time to target over this run's, for the first variant's run of the
// same seed; < 0 when either never reached the target.
double SpeedupOverFirst(const std::vector<const VariantResult*>& first, const VariantResult& r) {
  for (const VariantResult* f : first) {
    if (f->seed == r.seed && !f->failed() && f->time_to_target > 0 && r.time_to_target > 0) {
      return f->time_to_target / r.time_to_target;
    }
  }
  return -1;
}

// compare.md's table over seeds: each figure's median and range over a variant's runs.
std::string SeedTable(const Study& study, const std::vector<VariantResult>& results) {
  const auto groups = RunsByVariant(results);
  const std::string& first = groups.front().front()->name;
  std::string md = absl::StrCat(
      "\n## Over seeds\n\nEach figure: median [lowest, highest] over a variant's runs, one per "
      "seed; the speed-up pairs each run with `", first, "`'s run of the same seed.\n\n",
      "| variant | runs ok | final ", study.classification ? "acc" : "loss",
      " | s to target | runs reaching it | `", first, "`'s s to target / this | samples/s | "
      "wall s |\n|---|---|---|---|---|---|---|---|\n");
  for (const auto& runs : groups) {
    std::vector<double> final_metric, to_target, speedup, samples, wall;
    for (const VariantResult* r : runs) {
      if (r->failed()) continue;
      final_metric.push_back(study.classification ? r->final_accuracy : r->final_loss);
      if (r->time_to_target >= 0) to_target.push_back(r->time_to_target);
      const double ratio = SpeedupOverFirst(groups.front(), *r);
      if (ratio > 0) speedup.push_back(ratio);
      samples.push_back(r->samples_per_second);
      wall.push_back(r->wall_seconds);
    }
    absl::StrAppend(&md, "| ", MdCell(runs.front()->name), " | ", final_metric.size(), " of ",
                    runs.size(), " | ", SpreadText(SpreadOf(final_metric), 4), " | ",
                    SpreadText(SpreadOf(to_target), 1), " | ", to_target.size(), " | ",
                    SpreadText(SpreadOf(speedup), 2), " | ",
                    SpreadText(SpreadOf(samples), 0), " | ", SpreadText(SpreadOf(wall), 1),
                    " |\n");
  }
  return md;
}

std::string Markdown(const Study& study, const std::vector<VariantResult>& results) {
  const size_t variants = RunsByVariant(results).size();
  const bool seeds = variants < results.size();  // several runs of a variant
  std::string md = absl::StrCat(
      "# ", study.name, "\n\n", variants, " variants of one job",
      seeds ? absl::StrCat(" (", results.size(), " runs)") : "",
      study.target_accuracy > 0 ? absl::StrCat("; target accuracy ", Fmt(study.target_accuracy))
                                : "",
      ". Plot: compare.svg",
      study.axis.empty() ? "" : absl::StrCat("; against ", study.axis, ": compare_by_*.svg"),
      ".\n\n",
      "| variant | seed | algorithm | knobs | final acc | best acc | final loss | best loss | "
      "s to target | samples/s | MB sent | mean staleness | p99 staleness | comm share | wall s | "
      "status |\n",
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  const auto accuracy = [&](double v) {
    return study.classification ? absl::StrFormat("%.4f", v) : "n/a";
  };
  for (const VariantResult& r : results) {
    absl::StrAppend(&md, "| ", MdCell(r.name), " | ", r.seed, " | ", r.algorithm, " | ",
                    MdCell(r.knobs), " | ");
    if (r.failed()) {  // no figures, rather than zeros that would read as the best loss
      absl::StrAppend(&md, "— | — | — | — | — | — | — | — | — | — | — | ", MdCell(r.status),
                      " |\n");
      continue;
    }
    absl::StrAppend(
        &md, accuracy(r.final_accuracy), " | ", accuracy(r.best_accuracy), " | ",
        absl::StrFormat("%.4g", r.final_loss), " | ", absl::StrFormat("%.4g", r.best_loss), " | ",
        r.time_to_target >= 0 ? Fmt(r.time_to_target) : "not reached", " | ",
        absl::StrFormat("%.0f", r.samples_per_second), " | ",
        absl::StrFormat("%.1f", r.bytes_sent / 1e6), " | ",
        absl::StrFormat("%.2f", r.mean_staleness), " | ", Fmt(r.p99_staleness), " | ",
        absl::StrFormat("%.2f", r.comm_share),
        " | ", Fmt(r.wall_seconds), " | ", MdCell(r.status), " |\n");
  }
  if (seeds) absl::StrAppend(&md, SeedTable(study, results));
  return md;
}

// The median of `metric` over each family's runs at each axis value: one series per family
// (in the order of the variants), its points in ascending axis order; runs where `metric`
// gives a negative value (a target never reached) are left out.
std::vector<PlotSeries> AxisSeries(const Study& study, const std::vector<VariantResult>& results,
                                   const std::function<double(const VariantResult&)>& metric,
                                   std::vector<std::string>* families) {
  std::map<std::string, std::map<double, std::vector<double>>> points;
  std::map<std::string, std::set<double>> diverged;  // family -> axis values of diverged runs
  families->clear();
  for (const StudyVariant& v : study.variants) {
    if (std::find(families->begin(), families->end(), v.family) == families->end()) {
      families->push_back(v.family);
    }
    for (const VariantResult& r : results) {
      if (r.name == v.name && r.diverged) diverged[v.family].insert(v.axis_value);
      if (r.name != v.name || r.failed() || metric(r) < 0) continue;
      points[v.family][v.axis_value].push_back(metric(r));
    }
  }
  std::vector<PlotSeries> series;
  for (const std::string& family : *families) {
    PlotSeries s;
    for (const auto& [x, ys] : points[family]) {
      s.x.push_back(x);
      s.y.push_back(SpreadOf(ys).median);
    }
    s.marks.assign(diverged[family].begin(), diverged[family].end());
    series.push_back(std::move(s));
  }
  return series;
}

// A plot of `metrics` (one panel each, sharing the y axis from 0) against the study's axis.
LinePlot AxisPlot(const Study& study, const std::vector<VariantResult>& results,
                  const std::string& y_label,
                  const std::vector<std::pair<std::string, std::function<double(
                                                               const VariantResult&)>>>& metrics) {
  LinePlot plot;
  plot.title = absl::StrCat(study.name, ": ", y_label, " by ", study.axis);
  plot.y_label = y_label;
  plot.y_lo = 0;
  double high = 0;
  for (const auto& [label, metric] : metrics) {
    PlotPanel panel{absl::StrCat(label, " against ", study.axis), {}};
    panel.series = AxisSeries(study, results, metric, &plot.legend);
    for (const PlotSeries& s : panel.series) {
      for (const double y : s.y) high = std::max(high, y);
    }
    plot.panels.push_back(std::move(panel));
  }
  plot.y_hi = high > 0 ? high * 1.1 : 1;
  return plot;
}

// compare_by_LEAF_{metric,time,staleness}.svg: the final metric, the time to target and the
// staleness (mean and 99th percentile) against the study's axis.
absl::Status WriteAxisPlots(const Study& study, const std::vector<VariantResult>& results,
                            const std::string& out_dir) {
  const std::string stem = absl::StrCat(out_dir, "/compare_by_",
                                        study.axis.substr(study.axis.rfind('.') + 1));
  const bool classify = study.classification;
  const std::vector<std::pair<std::string, LinePlot>> plots = {
      {classify ? "accuracy" : "loss",
       AxisPlot(study, results, classify ? "final test accuracy" : "final test loss",
                {{"final", [&](const VariantResult& r) {
                    return classify ? r.final_accuracy : r.final_loss;
                  }}})},
      {"time", AxisPlot(study, results, "seconds to target",
                        {{"time to target", [](const VariantResult& r) {
                            return r.time_to_target;
                          }}})},
      {"staleness",
       AxisPlot(study, results, "staleness (pushes)",
                {{"mean", [](const VariantResult& r) { return r.mean_staleness; }},
                 {"99th percentile", [](const VariantResult& r) { return r.p99_staleness; }}})}};
  for (const auto& [name, plot] : plots) {
    MONSOON_RETURN_IF_ERROR(
        WriteFileAtomically(absl::StrCat(stem, "_", name, ".svg"), plot.ToSvg()));
  }
  return absl::OkStatus();
}

}  // namespace

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  return absl::StrCat("\"", absl::StrReplaceAll(text, {{"\"", "\"\""}}), "\"");
}

LinePlot ComparisonPlot(const Study& study, const std::vector<VariantResult>& results) {
  LinePlot plot;
  const char* metric = study.classification ? "test accuracy" : "test loss";
  plot.title = absl::StrCat(study.name, ": ", metric, " by variant");
  plot.y_label = metric;
  YRange(study, results, &plot);
  if (study.classification && study.target_accuracy > 0) plot.target = study.target_accuracy;
  plot.panels = {
      {"wall time (s)", {}}, {"epochs (mean over workers)", {}}, {"GB sent (all workers)", {}}};
  const bool seeds = RunsByVariant(results).size() < results.size();
  for (const VariantResult& r : results) {
    plot.legend.push_back(absl::StrCat(
        r.name, " (", r.knobs, seeds ? absl::StrCat(", seed ", r.seed) : "", "): ",
        r.diverged  ? r.status
        : r.failed() ? "failed"
                     : absl::StrCat("final ", Fmt(study.classification ? r.final_accuracy
                                                                     : r.final_loss))));
    std::vector<double> gigabytes;
    for (double bytes : r.curve_bytes) gigabytes.push_back(bytes / 1e9);
    const std::vector<double>& y = Metric(study, r);
    // A diverged run's cross at the end of its curve.
    const auto mark = [&](const std::vector<double>& x) {
      return r.diverged && !x.empty() ? std::vector<double>{x.back()} : std::vector<double>{};
    };
    plot.panels[0].series.push_back({r.curve_seconds, y, mark(r.curve_seconds)});
    plot.panels[1].series.push_back({r.curve_epochs, y, mark(r.curve_epochs)});
    plot.panels[2].series.push_back({gigabytes, y, mark(gigabytes)});
  }
  return plot;
}

absl::Status WriteComparison(const Study& study, const std::vector<VariantResult>& results,
                             const std::string& out_dir) {
  MONSOON_RETURN_IF_ERROR(WriteFileAtomically(out_dir + "/compare.csv", Csv(study, results)));
  MONSOON_RETURN_IF_ERROR(WriteFileAtomically(out_dir + "/compare.md", Markdown(study, results)));
  if (!study.axis.empty()) MONSOON_RETURN_IF_ERROR(WriteAxisPlots(study, results, out_dir));
  return WriteFileAtomically(out_dir + "/compare.svg", ComparisonPlot(study, results).ToSvg());
}

}  // namespace monsoon
