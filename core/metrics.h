// Metrics as CSV files: one header row, then one numeric row per observation, flushed as
// written so that a live reader (the launcher's progress line) and a crash both see them.
#ifndef MONSOON_CORE_METRICS_H_
#define MONSOON_CORE_METRICS_H_

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace monsoon {

class CsvMetricsWriter {
 public:
  // Creates (truncates) `path` and writes the header.
  static absl::StatusOr<std::unique_ptr<CsvMetricsWriter>> Create(
      const std::string& path, const std::vector<std::string>& columns);
  ~CsvMetricsWriter();

  // One row; values.size() must equal the number of columns.
  absl::Status Append(const std::vector<double>& values);

 private:
  CsvMetricsWriter(std::FILE* file, size_t columns) : file_(file), columns_(columns) {}
  std::FILE* const file_;  // owned
  const size_t columns_;
};

// The last complete row of a metrics CSV as column -> value (empty when there is none yet).
std::vector<std::pair<std::string, double>> ReadLastCsvRow(const std::string& path);

}  // namespace monsoon

#endif  // MONSOON_CORE_METRICS_H_
