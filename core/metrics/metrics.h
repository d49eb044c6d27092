// Metrics as CSV files: one header row, then one numeric row per observation, flushed as
// written so that a live reader (the launcher's progress line) and a crash both see them.
#ifndef MONSOON_CORE_METRICS_METRICS_H_
#define MONSOON_CORE_METRICS_METRICS_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/metrics/event_file.h"

namespace monsoon {

// One metrics row as column -> value, in the file's column order.
struct MetricsRow {
  std::vector<std::pair<std::string, double>> values;
  bool empty() const { return values.empty(); }
  // The value in `column`; nullopt when the row has no such column.
  std::optional<double> Find(std::string_view column) const;
};

// A metrics file's rows are structs of doubles whose columns are declared once, as a
// specialisation of MetricsSchema listing each column's name and field:
//   template <> struct MetricsSchema<WorkerMetricsRow> {
//     static constexpr MetricsColumn<WorkerMetricsRow> kColumns[] = {
//         {"step", &WorkerMetricsRow::step}, ...};
//   };
// Writers append structs and readers get structs back: a column that is renamed or missing
// is a compile error or a NotFound naming it, never a silent 0.
// NotFound "PATH has no column 'NAME'".
absl::Status MissingColumn(absl::string_view path, absl::string_view name);

template <class Row>
struct MetricsColumn {
  const char* name;
  double Row::*field;
};
template <class Row>
struct MetricsSchema;

template <class Row>
std::vector<std::string> ColumnNames() {
  std::vector<std::string> names;
  for (const MetricsColumn<Row>& c : MetricsSchema<Row>::kColumns) names.push_back(c.name);
  return names;
}

template <class Row>
std::vector<double> RowValues(const Row& row) {
  std::vector<double> values;
  for (const MetricsColumn<Row>& c : MetricsSchema<Row>::kColumns) values.push_back(row.*c.field);
  return values;
}

// The struct of a parsed row: nullopt for an empty one (no row yet); NotFound naming a column
// the row lacks (a file of another schema).
template <class Row>
absl::StatusOr<std::optional<Row>> RowFrom(const MetricsRow& parsed, absl::string_view path) {
  if (parsed.empty()) return std::optional<Row>();
  Row row;
  for (const MetricsColumn<Row>& c : MetricsSchema<Row>::kColumns) {
    const std::optional<double> v = parsed.Find(c.name);
    if (!v.has_value()) return MissingColumn(path, c.name);
    row.*c.field = *v;
  }
  return std::optional<Row>(row);
}

class CsvMetricsWriter {
 public:
  // Creates `path` with the header, or, when it already starts with this header (a restarted
  // role), appends to it after cutting off a last row left incomplete and, given `last_step`,
  // every row from the first whose `step` column exceeds it (steps about to be replayed).
  static absl::StatusOr<std::unique_ptr<CsvMetricsWriter>> Create(
      const std::string& path, const std::vector<std::string>& columns,
      std::optional<double> last_step = std::nullopt);
  ~CsvMetricsWriter();
  CsvMetricsWriter(const CsvMetricsWriter&) = delete;  // it owns a file
  CsvMetricsWriter& operator=(const CsvMetricsWriter&) = delete;

  // One row; values.size() must equal the number of columns.
  absl::Status Append(const std::vector<double>& values);

  // From now on every row also goes to `events` as a TensorBoard scalar per column, named by
  // the column, at the step in column `step_column` (at the row's number when there is none).
  void MirrorTo(std::unique_ptr<EventFileWriter> events, const std::string& step_column);

  // The last complete row of the file this writer continues (empty when it started the
  // file, or the file held only its header).
  const MetricsRow& continued_from() const { return continued_from_; }

 private:
  CsvMetricsWriter(std::FILE* file, std::vector<std::string> columns, MetricsRow continued_from)
      : file_(file), columns_(std::move(columns)), continued_from_(std::move(continued_from)) {}
  std::FILE* const file_;  // owned
  const std::vector<std::string> columns_;
  const MetricsRow continued_from_;
  std::unique_ptr<EventFileWriter> events_;  // MirrorTo's
  int step_column_ = -1;                     // its index in columns_; -1: the row's number
  int64_t rows_ = 0;                         // rows appended by this writer
};

// The last complete row of a metrics CSV (empty when there is none yet).
MetricsRow ReadLastCsvRow(const std::string& path);
// The same as a Row; nullopt when there is none yet.
template <class Row>
absl::StatusOr<std::optional<Row>> ReadLastRow(const std::string& path) {
  return RowFrom<Row>(ReadLastCsvRow(path), path);
}

// A whole metrics CSV: its columns and every complete row.
struct CsvTable {
  std::vector<std::string> columns;
  std::vector<std::vector<double>> rows;
  // Index of a column; -1 when absent.
  int Column(const std::string& name) const;
};
// NotFound when the file is missing; DataLoss naming the line when a row is not numeric.
absl::StatusOr<CsvTable> ReadCsvTable(const std::string& path);
// Every complete row of a metrics CSV as Rows; NotFound for a missing file or column.
template <class Row>
absl::StatusOr<std::vector<Row>> ReadRows(const std::string& path) {
  absl::StatusOr<CsvTable> table = ReadCsvTable(path);
  if (!table.ok()) return table.status();
  std::vector<Row> rows(table->rows.size());
  for (const MetricsColumn<Row>& c : MetricsSchema<Row>::kColumns) {
    const int column = table->Column(c.name);
    if (column < 0) return MissingColumn(path, c.name);
    for (size_t r = 0; r < rows.size(); ++r) rows[r].*c.field = table->rows[r][column];
  }
  return rows;
}
// The table as CSV text (what ReadCsvTable reads), for files written whole at once.
std::string FormatCsvTable(const CsvTable& table);

// The mean of a histogram whose bucket i counts observations of value i (0 when empty).
double HistogramMean(const std::vector<uint64_t>& counts);
// The smallest value at or below which at least `q` (0 < q <= 1) of the observations lie (0
// when empty): q = 0.99 gives the 99th percentile.
double HistogramQuantile(const std::vector<uint64_t>& counts, double q);

}  // namespace monsoon

#endif  // MONSOON_CORE_METRICS_METRICS_H_
