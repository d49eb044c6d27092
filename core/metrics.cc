#include "core/metrics.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace monsoon {

absl::StatusOr<std::unique_ptr<CsvMetricsWriter>> CsvMetricsWriter::Create(
    const std::string& path, const std::vector<std::string>& columns) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
  }
  std::fprintf(f, "%s\n", absl::StrJoin(columns, ",").c_str());
  std::fflush(f);
  return std::unique_ptr<CsvMetricsWriter>(new CsvMetricsWriter(f, columns.size()));
}

CsvMetricsWriter::~CsvMetricsWriter() { std::fclose(file_); }

absl::Status CsvMetricsWriter::Append(const std::vector<double>& values) {
  if (values.size() != columns_) {
    return absl::InternalError(
        absl::StrCat("metrics row has ", values.size(), " values for ", columns_, " columns"));
  }
  std::string line;
  for (size_t i = 0; i < values.size(); ++i) {
    absl::StrAppendFormat(&line, "%s%.15g", i == 0 ? "" : ",", values[i]);
  }
  line += "\n";
  if (std::fputs(line.c_str(), file_) < 0 || std::fflush(file_) != 0) {
    return absl::DataLossError(absl::StrCat("cannot write metrics: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

std::vector<std::pair<std::string, double>> ReadLastCsvRow(const std::string& path) {
  std::ifstream in(path);
  std::string header, line, last;
  if (!std::getline(in, header)) return {};
  // Only newline-terminated rows are complete; getline cannot tell, so track eof.
  while (std::getline(in, line)) {
    if (!in.eof()) last = line;
  }
  if (last.empty()) return {};
  std::vector<std::string> names = absl::StrSplit(header, ',');
  std::vector<std::string> cells = absl::StrSplit(last, ',');
  std::vector<std::pair<std::string, double>> row;
  for (size_t i = 0; i < names.size() && i < cells.size(); ++i) {
    double v = 0;
    if (absl::SimpleAtod(cells[i], &v)) row.emplace_back(names[i], v);
  }
  return row;
}

}  // namespace monsoon
