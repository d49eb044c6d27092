// The comparison of a study's variants: out_dir/compare.csv (one row per variant),
// compare.md (the same as a table) and compare.svg (test accuracy, or test loss for regression
// jobs, against wall time, against epochs and against the bytes the workers sent).
#ifndef MONSOON_LAUNCHER_STUDY_STUDY_REPORT_H_
#define MONSOON_LAUNCHER_STUDY_STUDY_REPORT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "launcher/study/study.h"
#include "launcher/study/study_results.h"
#include "launcher/study/svg_plot.h"

namespace monsoon {

// A CSV field: as it is, or in double quotes with its quotes doubled when it holds a comma,
// a quote or a line break (RFC 4180).
std::string CsvField(const std::string& text);

// compare.svg's picture: one panel per x (wall seconds, epochs, GB sent), one series per
// variant.
LinePlot ComparisonPlot(const Study& study, const std::vector<VariantResult>& results);

// Writes out_dir/compare.csv, compare.md and compare.svg.
absl::Status WriteComparison(const Study& study, const std::vector<VariantResult>& results,
                             const std::string& out_dir);

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_STUDY_STUDY_REPORT_H_
