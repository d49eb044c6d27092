#include "core/data/dataset.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/data/data_source.h"
#include "core/status_macros.h"

namespace monsoon {
namespace {

// Reads a file (its first `max_bytes`) through zlib, which passes plain (non-gzip) files
// through unchanged, into a string that reserves `expected` bytes first.
absl::StatusOr<std::string> ReadMaybeGzipped(const std::string& path,
                                             size_t max_bytes = std::string::npos,
                                             size_t expected = 0) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  std::string out;
  out.reserve(std::min(expected, max_bytes));
  constexpr size_t kChunk = 1 << 20;
  int n = 0;
  while (out.size() < max_bytes) {
    const size_t at = out.size(), want = std::min(kChunk, max_bytes - at);
    out.resize(at + want);
    n = gzread(f, out.data() + at, static_cast<unsigned>(want));
    out.resize(at + std::max(n, 0));
    if (n <= 0) break;
  }
  int err = Z_OK;
  const char* msg = gzerror(f, &err);
  const bool failed = n < 0 || (err != Z_OK && err != Z_STREAM_END);
  const std::string err_text = msg != nullptr ? msg : "";
  gzclose(f);
  if (failed) return absl::InvalidArgumentError(absl::StrCat("cannot read ", path, ": ", err_text));
  return out;
}

uint32_t BigEndian32(const std::string& s, size_t at) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data() + at);
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// What a file's first four bytes say, for an error about its IDX magic number.
std::string MagicFound(const std::string& bytes) {
  if (bytes.size() < 4) return absl::StrCat("only ", bytes.size(), " bytes");
  return absl::StrCat("magic 0x", absl::Hex(BigEndian32(bytes, 0), absl::kZeroPad8));
}

constexpr size_t kIdxImageHeader = 16;

absl::Status CheckIdxImageMagic(const std::string& path, const std::string& bytes) {
  if (bytes.size() >= kIdxImageHeader && BigEndian32(bytes, 0) == 0x803) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": not an IDX image file (", MagicFound(bytes), "; expected 0x00000803)"));
}

// An IDX label file's `count` labels (the images file's count, `images_path`) into `data`'s
// targets, and its num_classes.
absl::Status ReadIdxLabelsInto(const std::string& labels_path, uint64_t count,
                               const std::string& images_path, Dataset* data) {
  auto labels = ReadMaybeGzipped(labels_path);
  if (!labels.ok()) return labels.status();
  if (labels->size() < 8 || BigEndian32(*labels, 0) != 0x801) {
    return absl::InvalidArgumentError(absl::StrCat(labels_path, ": not an IDX label file (",
                                                   MagicFound(*labels), "; expected 0x00000801)"));
  }
  if (BigEndian32(*labels, 4) != count || labels->size() != 8 + count) {
    return absl::InvalidArgumentError(
        absl::StrCat(labels_path, ": expected ", count, " labels to match ", images_path));
  }
  data->targets.resize(count);
  int max_label = 0;
  for (size_t i = 0; i < count; ++i) {
    const int label = static_cast<unsigned char>((*labels)[8 + i]);
    max_label = std::max(max_label, label);
    data->targets[i] = static_cast<float>(label);
  }
  data->num_classes = max_label + 1;
  return absl::OkStatus();
}

}  // namespace

namespace {

// What an IDX image file's header says: how many images, and their shape [1, rows, cols].
struct IdxImageHeader {
  uint64_t count = 0;
  std::vector<int> shape;
};

// The bytes of an IDX image file whose header says `count` images of `shape`, as a reservation:
// 0 past 1 GiB, so that a lying header cannot reserve the memory it names.
size_t ExpectedIdxBytes(uint64_t count, const std::vector<int>& shape) {
  const uint64_t pixels = uint64_t(shape[1]) * uint64_t(shape[2]);
  return count <= (uint64_t{1} << 30) / pixels ? kIdxImageHeader + count * pixels : 0;
}

absl::StatusOr<IdxImageHeader> ReadIdxImageHeader(const std::string& images_path) {
  auto header = ReadMaybeGzipped(images_path, kIdxImageHeader);
  if (!header.ok()) return header.status();
  MONSOON_RETURN_IF_ERROR(CheckIdxImageMagic(images_path, *header));
  const uint32_t rows = BigEndian32(*header, 8), cols = BigEndian32(*header, 12);
  if (rows == 0 || cols == 0 || uint64_t{rows} * cols > (1u << 24)) {
    return absl::InvalidArgumentError(
        absl::StrCat(images_path, ": the header says images of ", rows, "x", cols, " pixels"));
  }
  return IdxImageHeader{BigEndian32(*header, 4),
                        {1, static_cast<int>(rows), static_cast<int>(cols)}};
}

}  // namespace

absl::StatusOr<std::vector<int>> ReadIdxImageShape(const std::string& images_path) {
  MONSOON_ASSIGN_OR_RETURN(IdxImageHeader header, ReadIdxImageHeader(images_path));
  return std::move(header.shape);
}

absl::StatusOr<Dataset> ReadIdxLabels(const std::string& images_path,
                                      const std::string& labels_path) {
  MONSOON_ASSIGN_OR_RETURN(IdxImageHeader header, ReadIdxImageHeader(images_path));
  Dataset data;
  data.feature_dim = header.shape[1] * header.shape[2];
  data.example_shape = std::move(header.shape);
  MONSOON_RETURN_IF_ERROR(ReadIdxLabelsInto(labels_path, header.count, images_path, &data));
  return data;
}

namespace {

// An IDX split held as its image file's bytes (a quarter of their size as floats) and its
// labels: rows become floats, scaled to [0, 1], only when read.
class IdxSource : public DataSource {
 public:
  IdxSource(std::string images, Dataset labels)
      : images_(std::move(images)), labels_(std::move(labels)) {}
  uint64_t rows() const override { return labels_.targets.size(); }
  const std::vector<int>& example_shape() const override { return labels_.example_shape; }
  absl::StatusOr<Dataset> Read(const std::vector<uint64_t>& indices) override;
  absl::StatusOr<Dataset> ReadTargets() override { return labels_; }

 private:
  std::string images_;
  Dataset labels_;
};

absl::StatusOr<Dataset> IdxSource::Read(const std::vector<uint64_t>& indices) {
  Dataset out = labels_.Empty();
  const size_t pixels = labels_.feature_dim;
  out.features.resize(indices.size() * pixels);
  out.targets.resize(indices.size());
  const auto* body = reinterpret_cast<const unsigned char*>(images_.data()) + kIdxImageHeader;
  for (size_t r = 0; r < indices.size(); ++r) {
    const unsigned char* px = body + indices[r] * pixels;
    float* row = out.features.data() + r * pixels;
    for (size_t i = 0; i < pixels; ++i) row[i] = px[i] * (1.0f / 255.0f);
    out.targets[r] = labels_.targets[indices[r]];
  }
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<DataSource>> OpenIdxSource(const std::string& images_path,
                                                          const std::string& labels_path) {
  MONSOON_ASSIGN_OR_RETURN(IdxImageHeader header, ReadIdxImageHeader(images_path));
  MONSOON_ASSIGN_OR_RETURN(std::string images,
                           ReadMaybeGzipped(images_path, std::string::npos,
                                            ExpectedIdxBytes(header.count, header.shape)));
  // The header, already checked (magic, rows x cols at most 2^24), against the file's length:
  // count * pixels might overflow, so by division.
  const uint64_t count = header.count, rows = header.shape[1], cols = header.shape[2];
  const uint64_t pixels = rows * cols, body = images.size() - kIdxImageHeader;
  if (images.size() < kIdxImageHeader || count == 0 || pixels > body / count ||
      count * pixels != body) {
    return absl::InvalidArgumentError(
        absl::StrCat(images_path, ": the header says ", count, " images of ", rows, "x", cols,
                     " pixels, which do not match the ", body, " bytes after it"));
  }
  Dataset labels;
  labels.feature_dim = static_cast<int>(pixels);
  labels.example_shape = {1, static_cast<int>(rows), static_cast<int>(cols)};
  MONSOON_RETURN_IF_ERROR(ReadIdxLabelsInto(labels_path, count, images_path, &labels));
  return std::make_unique<IdxSource>(std::move(images), std::move(labels));
}

namespace {

// A CSV cell as a decimal number (an optional sign, digits, a point, an exponent): not hex
// ("0x10"), not "inf" or "nan".
bool ParseDecimal(absl::string_view cell, float* value) {
  cell = absl::StripAsciiWhitespace(cell);
  if (!cell.empty() && cell.front() == '+') cell.remove_prefix(1);
  const char* end = cell.data() + cell.size();
  const std::from_chars_result parsed =
      std::from_chars(cell.data(), end, *value, std::chars_format::general);
  return !cell.empty() && parsed.ec == std::errc() && parsed.ptr == end && std::isfinite(*value);
}

// A cell as an error message shows it: its first 40 bytes, escaped.
std::string Shown(absl::string_view cell) {
  return cell.size() <= 40
             ? absl::CHexEscape(cell)
             : absl::StrCat(absl::CHexEscape(cell.substr(0, 40)), "... (", cell.size(), " bytes)");
}

}  // namespace

bool IsClassLabel(float v) { return v >= 0 && v < (1 << 24) && v == std::floor(v); }

absl::StatusOr<Dataset> ReadCsvDataset(const std::string& path, const TargetSpec& targets) {
  const size_t target_columns = targets.class_labels ? 1 : static_cast<size_t>(targets.columns);
  std::ifstream in(path);
  if (!in)
    return absl::NotFoundError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  Dataset data;
  std::string line;
  int line_no = 0;
  size_t columns = 0;
  while (std::getline(in, line)) {
    ++line_no;
    const absl::string_view row = absl::StripAsciiWhitespace(line);
    if (row.empty()) continue;
    std::vector<absl::string_view> cells = absl::StrSplit(row, ',');
    if (columns == 0) {  // header
      columns = cells.size();
      if (columns < target_columns + 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ":", line_no, ": ", columns, " columns; need at least one feature column and ",
            target_columns, targets.class_labels ? " class label column" : " target column(s)"));
      }
      float v;
      if (std::all_of(cells.begin(), cells.end(), [&](auto c) { return ParseDecimal(c, &v); })) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ":", line_no,
                         ": the first line holds numbers, not a header; add one (e.g. x,y)"));
      }
      continue;
    }
    if (cells.size() != columns) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line_no, ": expected ", columns,
                                                     " columns, found ", cells.size()));
    }
    for (size_t c = 0; c < columns; ++c) {
      float v;
      if (!ParseDecimal(cells[c], &v)) {
        return absl::InvalidArgumentError(absl::StrCat(path, ":", line_no, ": column ", c + 1,
                                                       " is not a finite decimal number: '",
                                                       Shown(cells[c]), "'"));
      }
      const bool target = c + target_columns >= columns;
      if (target && targets.class_labels && !IsClassLabel(v)) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ":", line_no, ": column ", c + 1, " is the class label, '",
                         Shown(cells[c]), "'; class labels are integers 0, 1, 2, ..."));
      }
      (target ? data.targets : data.features).push_back(v);
    }
  }
  if (data.targets.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no data rows"));
  data.feature_dim = static_cast<int>(columns - target_columns);
  data.example_shape = {data.feature_dim};
  data.target_dim = static_cast<int>(target_columns);
  if (targets.class_labels) {
    data.num_classes =
        static_cast<int>(*std::max_element(data.targets.begin(), data.targets.end())) + 1;
  }
  return data;
}

Dataset GenerateLinearDataset(const LinearDataSpec& spec) {
  std::mt19937_64 rng(spec.seed);
  std::uniform_real_distribution<double> x_dist(spec.x_min, spec.x_max);
  std::normal_distribution<double> noise(0.0, spec.noise);
  Dataset data;
  data.feature_dim = 1;
  data.example_shape = {1};
  for (int i = 0; i < spec.rows; ++i) {
    const double x = x_dist(rng);
    data.features.push_back(static_cast<float>(x));
    data.targets.push_back(static_cast<float>(spec.slope * x + spec.intercept + noise(rng)));
  }
  return data;
}

absl::Status WriteCsvDataset(const Dataset& data, const std::string& path) {
  std::ofstream out(path);
  if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot write ", path));
  for (int c = 0; c < data.feature_dim; ++c) out << "x" << c << ",";
  out << "y\n";
  for (size_t r = 0; r < data.size(); ++r) {
    for (int c = 0; c < data.feature_dim; ++c) {
      out << data.features[r * data.feature_dim + c] << ",";
    }
    out << data.targets[r] << "\n";
  }
  out.close();
  if (!out) return absl::DataLossError(absl::StrCat("failed writing ", path));
  return absl::OkStatus();
}

}  // namespace monsoon
