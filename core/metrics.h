// Metrics as CSV files: one header row, then one numeric row per observation, flushed as
// written so that a live reader (the launcher's progress line) and a crash both see them.
#ifndef MONSOON_CORE_METRICS_H_
#define MONSOON_CORE_METRICS_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace monsoon {

// One metrics row as column -> value, in the file's column order.
struct MetricsRow {
  std::vector<std::pair<std::string, double>> values;
  bool empty() const { return values.empty(); }
  // The value in `column`; 0 when the row has no such column (or is empty).
  double Get(std::string_view column) const;
};

class CsvMetricsWriter {
 public:
  // Creates `path` with the header, or, when it already starts with this header (a restarted
  // role), appends to it after cutting off a last row left incomplete.
  static absl::StatusOr<std::unique_ptr<CsvMetricsWriter>> Create(
      const std::string& path, const std::vector<std::string>& columns);
  ~CsvMetricsWriter();

  // One row; values.size() must equal the number of columns.
  absl::Status Append(const std::vector<double>& values);

  // The last complete row of the file this writer continues (empty when it started the
  // file, or the file held only its header).
  const MetricsRow& continued_from() const { return continued_from_; }

 private:
  CsvMetricsWriter(std::FILE* file, size_t columns, MetricsRow continued_from)
      : file_(file), columns_(columns), continued_from_(std::move(continued_from)) {}
  std::FILE* const file_;  // owned
  const size_t columns_;
  const MetricsRow continued_from_;
};

// The last complete row of a metrics CSV (empty when there is none yet).
MetricsRow ReadLastCsvRow(const std::string& path);

// A whole metrics CSV: its columns and every complete row.
struct CsvTable {
  std::vector<std::string> columns;
  std::vector<std::vector<double>> rows;
  // Index of a column; -1 when absent.
  int Column(const std::string& name) const;
};
// NotFound when the file is missing; DataLoss naming the line when a row is not numeric.
absl::StatusOr<CsvTable> ReadCsvTable(const std::string& path);
// The table as CSV text (what ReadCsvTable reads), for files written whole at once.
std::string FormatCsvTable(const CsvTable& table);

// The mean of a histogram whose bucket i counts observations of value i (0 when empty).
double HistogramMean(const std::vector<uint64_t>& counts);

}  // namespace monsoon

#endif  // MONSOON_CORE_METRICS_H_
