#include "core/metrics/metrics.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace monsoon {
namespace {

// One CSV line of numbers, with enough digits to read every value back exactly.
std::string CsvRow(const std::vector<double>& values) {
  std::string line;
  for (size_t i = 0; i < values.size(); ++i) {
    absl::StrAppendFormat(&line, "%s%.15g", i == 0 ? "" : ",", values[i]);
  }
  return line + "\n";
}

// The row `line` of a CSV whose header line is `header` (neither with its newline), as
// column -> value; cells that are not numbers are left out.
MetricsRow ParseMetricsRow(absl::string_view header, absl::string_view line) {
  const std::vector<absl::string_view> names = absl::StrSplit(header, ',');
  const std::vector<absl::string_view> cells = absl::StrSplit(line, ',');
  MetricsRow row;
  for (size_t i = 0; i < names.size() && i < cells.size(); ++i) {
    double v = 0;
    if (absl::SimpleAtod(cells[i], &v)) row.values.emplace_back(names[i], v);
  }
  return row;
}

// The part of a continued CSV `text` (which starts with `header`) to keep: every complete row
// up to the first whose `step` exceeds `last_step`. *last is set to the last row kept.
absl::string_view KeptRows(absl::string_view text, absl::string_view header,
                           std::optional<double> last_step, MetricsRow* last) {
  const absl::string_view columns = header.substr(0, header.size() - 1);
  size_t end = header.size();
  for (size_t next; (next = text.find('\n', end)) != absl::string_view::npos; end = next + 1) {
    MetricsRow row = ParseMetricsRow(columns, text.substr(end, next - end));
    const std::optional<double> step = row.Find("step");
    if (last_step.has_value() && step.has_value() && *step > *last_step) break;
    *last = std::move(row);
  }
  return text.substr(0, end);
}

}  // namespace

absl::StatusOr<std::unique_ptr<CsvMetricsWriter>> CsvMetricsWriter::Create(
    const std::string& path, const std::vector<std::string>& columns,
    std::optional<double> last_step) {
  const std::string header = absl::StrJoin(columns, ",") + "\n";
  std::string existing;
  {
    std::ifstream in(path, std::ios::binary);
    if (in) existing.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  // A restarted role continues its own file; a row torn by a kill, and rows of steps about to
  // be replayed, are cut off first.
  const bool resume = existing.rfind(header, 0) == 0;
  MetricsRow last;
  if (resume) {
    const absl::string_view kept = KeptRows(existing, header, last_step, &last);
    if (kept.size() < existing.size() &&
        truncate(path.c_str(), static_cast<off_t>(kept.size())) != 0) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot repair ", path, ": ", std::strerror(errno)));
    }
  }
  std::FILE* f = std::fopen(path.c_str(), resume ? "a" : "w");
  if (f == nullptr) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
  }
  if (!resume) std::fputs(header.c_str(), f);
  std::fflush(f);
  return std::unique_ptr<CsvMetricsWriter>(new CsvMetricsWriter(f, columns, std::move(last)));
}

CsvMetricsWriter::~CsvMetricsWriter() { std::fclose(file_); }

void CsvMetricsWriter::MirrorTo(std::unique_ptr<EventFileWriter> events,
                                const std::string& step_column) {
  events_ = std::move(events);
  const auto found = std::find(columns_.begin(), columns_.end(), step_column);
  step_column_ = found == columns_.end() ? -1 : static_cast<int>(found - columns_.begin());
}

absl::Status CsvMetricsWriter::Append(const std::vector<double>& values) {
  if (values.size() != columns_.size()) {
    return absl::InternalError(absl::StrCat("metrics row has ", values.size(), " values for ",
                                            columns_.size(), " columns"));
  }
  const std::string line = CsvRow(values);
  if (std::fputs(line.c_str(), file_) < 0 || std::fflush(file_) != 0) {
    return absl::DataLossError(absl::StrCat("cannot write metrics: ", std::strerror(errno)));
  }
  ++rows_;
  if (events_ == nullptr) return absl::OkStatus();
  std::vector<std::pair<std::string, double>> scalars;
  for (size_t i = 0; i < columns_.size(); ++i) {
    if (static_cast<int>(i) != step_column_) scalars.emplace_back(columns_[i], values[i]);
  }
  const int64_t step =
      step_column_ < 0 ? rows_ : static_cast<int64_t>(std::llround(values[step_column_]));
  return events_->AddScalars(step, scalars);
}

std::optional<double> MetricsRow::Find(std::string_view column) const {
  for (const auto& [name, value] : values) {
    if (name == column) return value;
  }
  return std::nullopt;
}

absl::Status MissingColumn(absl::string_view path, absl::string_view name) {
  return absl::NotFoundError(absl::StrCat(path, " has no column '", name, "'"));
}

MetricsRow ReadLastCsvRow(const std::string& path) {
  std::ifstream in(path);
  std::string header, line, last;
  if (!std::getline(in, header)) return {};
  // Only newline-terminated rows are complete; getline cannot tell, so track eof.
  while (std::getline(in, line)) {
    if (!in.eof()) last = line;
  }
  if (last.empty()) return {};
  return ParseMetricsRow(header, last);
}

std::string FormatCsvTable(const CsvTable& table) {
  std::string text = absl::StrJoin(table.columns, ",") + "\n";
  for (const std::vector<double>& row : table.rows) text += CsvRow(row);
  return text;
}

int CsvTable::Column(const std::string& name) const {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i] == name) return static_cast<int>(i);
  }
  return -1;
}

absl::StatusOr<CsvTable> ReadCsvTable(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  CsvTable table;
  std::string line;
  if (!std::getline(in, line)) return table;
  table.columns = absl::StrSplit(line, ',');
  for (int number = 2; std::getline(in, line); ++number) {
    if (in.eof()) break;  // a row still being written
    std::vector<std::string> cells = absl::StrSplit(line, ',');
    std::vector<double> row(cells.size());
    for (size_t i = 0; i < cells.size(); ++i) {
      if (!absl::SimpleAtod(cells[i], &row[i]) || cells.size() != table.columns.size()) {
        return absl::DataLossError(absl::StrCat(path, ":", number, ": not a row of ",
                                                table.columns.size(), " numbers: ", line));
      }
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

double HistogramMean(const std::vector<uint64_t>& counts) {
  double total = 0, weighted = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    total += static_cast<double>(counts[i]);
    weighted += static_cast<double>(i) * static_cast<double>(counts[i]);
  }
  return total > 0 ? weighted / total : 0;
}

double HistogramQuantile(const std::vector<uint64_t>& counts, double q) {
  double total = 0;
  for (const uint64_t n : counts) total += static_cast<double>(n);
  double below = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    below += static_cast<double>(counts[i]);
    if (total > 0 && below >= q * total) return static_cast<double>(i);
  }
  return 0;
}

}  // namespace monsoon
