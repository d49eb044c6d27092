#include "core/data/array_files.h"

#include <fcntl.h>
#include <unistd.h>
#include <zip.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <numeric>
#include <regex>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/data/hdf5_library.h"
#include "core/file_util.h"
#include "core/status_macros.h"

namespace monsoon {
namespace {

// An array element type: an integer or IEEE float of `bytes` bytes, little-endian.
struct ElementType {
  char kind = 0;  // 'u', 'i' or 'f'
  int bytes = 0;

  std::string Name() const {
    return absl::StrCat(kind == 'f' ? "float" : kind == 'u' ? "uint" : "int", 8 * bytes);
  }
  bool IsUint8() const { return kind == 'u' && bytes == 1; }
};

// Converts `count` elements of type T at `p` to floats at `out`, times `scale`.
template <class T>
void ConvertFrom(const unsigned char* p, size_t count, float scale, float* out) {
  for (size_t i = 0; i < count; ++i) {
    T v;
    std::memcpy(&v, p + i * sizeof(T), sizeof(T));
    out[i] = static_cast<float>(v) * scale;
  }
}

// The HDF5 library. REQUIRES: LoadHdf5Library() has succeeded (OpenHdf5Source checks first).
const Hdf5Library& H5() { return **LoadHdf5Library(); }

// An element type the readers accept: its converter to float, and HDF5's in-memory type for it.
struct TypeInfo {
  ElementType type;
  void (*convert)(const unsigned char* p, size_t count, float scale, float* out);
  hid_t (*hdf5_native)();
};

// `t`'s entry, or nullptr for a type the readers do not accept.
const TypeInfo* Lookup(ElementType t) {
  static const TypeInfo kTypes[] = {
      {{'u', 1}, ConvertFrom<uint8_t>, [] { return *H5().H5T_NATIVE_UINT8_g; }},
      {{'u', 2}, ConvertFrom<uint16_t>, [] { return *H5().H5T_NATIVE_UINT16_g; }},
      {{'u', 4}, ConvertFrom<uint32_t>, [] { return *H5().H5T_NATIVE_UINT32_g; }},
      {{'u', 8}, ConvertFrom<uint64_t>, [] { return *H5().H5T_NATIVE_UINT64_g; }},
      {{'i', 1}, ConvertFrom<int8_t>, [] { return *H5().H5T_NATIVE_INT8_g; }},
      {{'i', 2}, ConvertFrom<int16_t>, [] { return *H5().H5T_NATIVE_INT16_g; }},
      {{'i', 4}, ConvertFrom<int32_t>, [] { return *H5().H5T_NATIVE_INT32_g; }},
      {{'i', 8}, ConvertFrom<int64_t>, [] { return *H5().H5T_NATIVE_INT64_g; }},
      {{'f', 4}, ConvertFrom<float>, [] { return *H5().H5T_NATIVE_FLOAT_g; }},
      {{'f', 8}, ConvertFrom<double>, [] { return *H5().H5T_NATIVE_DOUBLE_g; }},
  };
  for (const TypeInfo& info : kTypes) {
    if (info.type.kind == t.kind && info.type.bytes == t.bytes) return &info;
  }
  return nullptr;
}

std::string ShapeString(const std::vector<uint64_t>& dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ", "), "]");
}

// One array of a data set: its element type and dimensions ([rows, ...]), and how to read a
// run of consecutive rows into a byte buffer.
struct ArrayPart {
  std::string where;  // "FILE" or "FILE:/dataset", for messages
  ElementType type;
  std::vector<uint64_t> dims;

  uint64_t rows() const { return dims.empty() ? 0 : dims[0]; }
  uint64_t row_elements() const {
    uint64_t n = 1;
    for (size_t i = 1; i < dims.size(); ++i) n *= dims[i];
    return n;
  }
};

// Checks a features array and a targets array of one data set against each other and the
// rules, naming both shapes.
absl::Status CheckPair(const ArrayPart& features, const ArrayPart& targets) {
  if (features.dims.size() < 2 || features.row_elements() == 0 ||
      features.row_elements() > (1u << 24) || features.dims.size() > 5) {
    return absl::InvalidArgumentError(absl::StrCat(
        features.where, ": features of shape ", ShapeString(features.dims),
        "; expected [rows, ...] with 1 to 4 dimensions per example, of at most 2^24 values"));
  }
  if (!(features.type.kind == 'f' || features.type.IsUint8())) {
    return absl::InvalidArgumentError(absl::StrCat(features.where, ": features are ",
                                                   features.type.Name(),
                                                   "; expected float32, float64 or uint8"));
  }
  if (targets.dims.empty() || targets.dims.size() > 2 || targets.row_elements() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(targets.where, ": targets of shape ",
                                                   ShapeString(targets.dims),
                                                   "; expected [rows] or [rows, k]"));
  }
  if (targets.rows() != features.rows()) {
    return absl::InvalidArgumentError(
        absl::StrCat(targets.where, ": ", targets.rows(), " rows of targets ",
                     ShapeString(targets.dims), " for ", features.rows(), " rows of features ",
                     ShapeString(features.dims), " in ", features.where));
  }
  return absl::OkStatus();
}

// Reads rows of an array: ReadRun(first, count, out) fills `out` with rows [first, first+count).
class ArrayReader {
 public:
  virtual ~ArrayReader() = default;
  virtual const ArrayPart& part() const = 0;
  virtual absl::Status ReadRun(uint64_t first, uint64_t count, unsigned char* out) = 0;
};

// Appends the rows at `indices` (ascending, relative to this array) of `reader` to `out`,
// converted to floats, reading each run of consecutive rows at once.
absl::Status AppendRows(ArrayReader* reader, const std::vector<uint64_t>& indices, float scale,
                        std::vector<float>* out) {
  const ArrayPart& part = reader->part();
  const uint64_t width = part.row_elements();
  std::vector<unsigned char> buffer;
  for (size_t i = 0; i < indices.size();) {
    size_t j = i + 1;
    while (j < indices.size() && indices[j] == indices[j - 1] + 1) ++j;
    buffer.resize((j - i) * width * part.type.bytes);
    MONSOON_RETURN_IF_ERROR(reader->ReadRun(indices[i], j - i, buffer.data()));
    const size_t at = out->size();
    out->resize(at + (j - i) * width);
    Lookup(part.type)->convert(buffer.data(), (j - i) * width, scale, out->data() + at);
    i = j;
  }
  return absl::OkStatus();
}

// Files of (features, targets) array pairs, their rows concatenated: the source both readers
// share.
class ArraySource : public DataSource {
 public:
  using Pair = std::pair<std::unique_ptr<ArrayReader>, std::unique_ptr<ArrayReader>>;

  static absl::StatusOr<std::unique_ptr<DataSource>> Create(std::vector<Pair> pairs,
                                                            const TargetSpec& targets) {
    const ArrayPart& first = pairs.at(0).first->part();
    for (const Pair& p : pairs) {
      MONSOON_RETURN_IF_ERROR(CheckPair(p.first->part(), p.second->part()));
      const ArrayPart& f = p.first->part();
      if (std::vector<uint64_t>(f.dims.begin() + 1, f.dims.end()) !=
          std::vector<uint64_t>(first.dims.begin() + 1, first.dims.end())) {
        return absl::InvalidArgumentError(
            absl::StrCat(f.where, ": features of shape ", ShapeString(f.dims), " do not match ",
                         ShapeString(first.dims), " in ", first.where));
      }
      if (p.second->part().row_elements() != pairs[0].second->part().row_elements()) {
        return absl::InvalidArgumentError(absl::StrCat(
            p.second->part().where, ": targets of shape ", ShapeString(p.second->part().dims),
            " do not match ", ShapeString(pairs[0].second->part().dims), " in ",
            pairs[0].second->part().where));
      }
    }
    return std::unique_ptr<DataSource>(new ArraySource(std::move(pairs), targets));
  }

  uint64_t rows() const override { return rows_; }
  const std::vector<int>& example_shape() const override { return shape_; }
  absl::StatusOr<Dataset> Read(const std::vector<uint64_t>& indices) override;
  absl::StatusOr<Dataset> ReadTargets() override;

 private:
  ArraySource(std::vector<Pair> pairs, const TargetSpec& targets)
      : pairs_(std::move(pairs)), class_labels_(targets.class_labels) {
    const ArrayPart& f = pairs_[0].first->part();
    for (size_t i = 1; i < f.dims.size(); ++i) shape_.push_back(static_cast<int>(f.dims[i]));
    for (const Pair& p : pairs_) rows_ += p.first->part().rows();
  }

  // One more than the largest class label; InvalidArgument for targets that are not labels.
  absl::StatusOr<int> CountClasses(const Dataset& data) const;

  std::vector<Pair> pairs_;
  const bool class_labels_;
  std::vector<int> shape_;
  uint64_t rows_ = 0;
};

absl::StatusOr<Dataset> ArraySource::Read(const std::vector<uint64_t>& indices) {
  Dataset data;
  data.example_shape = shape_;
  data.feature_dim = static_cast<int>(pairs_[0].first->part().row_elements());
  data.target_dim = static_cast<int>(pairs_[0].second->part().row_elements());
  data.features.reserve(indices.size() * data.feature_dim);
  data.targets.reserve(indices.size() * data.target_dim);
  size_t at = 0;
  uint64_t base = 0;
  for (const Pair& p : pairs_) {
    const uint64_t end = base + p.first->part().rows();
    std::vector<uint64_t> local;
    for (; at < indices.size() && indices[at] < end; ++at) local.push_back(indices[at] - base);
    const float scale = p.first->part().type.IsUint8() ? 1.0f / 255.0f : 1.0f;
    MONSOON_RETURN_IF_ERROR(AppendRows(p.first.get(), local, scale, &data.features));
    MONSOON_RETURN_IF_ERROR(AppendRows(p.second.get(), local, 1.0f, &data.targets));
    base = end;
  }
  if (at != indices.size()) {
    return absl::OutOfRangeError(absl::StrCat("row ", indices[at], " of ", rows_, " asked for"));
  }
  if (class_labels_) {
    MONSOON_ASSIGN_OR_RETURN(data.num_classes, CountClasses(data));
  }
  return data;
}

absl::StatusOr<Dataset> ArraySource::ReadTargets() {
  Dataset data;
  data.example_shape = shape_;
  data.feature_dim = static_cast<int>(pairs_[0].first->part().row_elements());
  data.target_dim = static_cast<int>(pairs_[0].second->part().row_elements());
  data.targets.reserve(rows_ * data.target_dim);
  for (const Pair& p : pairs_) {
    std::vector<uint64_t> all(p.second->part().rows());
    std::iota(all.begin(), all.end(), uint64_t{0});
    MONSOON_RETURN_IF_ERROR(AppendRows(p.second.get(), all, 1.0f, &data.targets));
  }
  if (class_labels_) {
    MONSOON_ASSIGN_OR_RETURN(data.num_classes, CountClasses(data));
  }
  return data;
}

absl::StatusOr<int> ArraySource::CountClasses(const Dataset& data) const {
  const ArrayPart& targets = pairs_[0].second->part();
  if (data.target_dim != 1) {
    return absl::InvalidArgumentError(absl::StrCat(targets.where, ": targets of shape ",
                                                   ShapeString(targets.dims),
                                                   "; class labels take one value per row"));
  }
  float largest = 0;
  for (const float label : data.targets) {
    if (!IsClassLabel(label)) {
      return absl::InvalidArgumentError(absl::StrCat(targets.where, ": holds ", label,
                                                     "; class labels are integers 0, 1, 2, ..."));
    }
    largest = std::max(largest, label);
  }
  return static_cast<int>(largest) + 1;
}

// Bytes `count` at `offset` of an open file, all of them.
absl::Status ReadAt(int fd, uint64_t offset, uint64_t count, unsigned char* out,
                    const std::string& path) {
  while (count > 0) {
    const ssize_t n = pread(fd, out, count, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(errno, absl::StrCat("cannot read ", path));
    if (n == 0) return absl::DataLossError(absl::StrCat(path, ": ends early (truncated?)"));
    out += n;
    offset += n;
    count -= n;
  }
  return absl::OkStatus();
}

// A .npy file (format versions 1 to 3): its header parsed, its rows read with pread.
class NpyReader : public ArrayReader {
 public:
  static absl::StatusOr<std::unique_ptr<ArrayReader>> Open(const std::string& path);
  ~NpyReader() override { close(fd_); }
  const ArrayPart& part() const override { return part_; }
  absl::Status ReadRun(uint64_t first, uint64_t count, unsigned char* out) override {
    const uint64_t row_bytes = part_.row_elements() * part_.type.bytes;
    return ReadAt(fd_, data_offset_ + first * row_bytes, count * row_bytes, out, part_.where);
  }

 private:
  NpyReader(int fd, ArrayPart part, uint64_t data_offset)
      : fd_(fd), part_(std::move(part)), data_offset_(data_offset) {}
  // Fills `part` from the header's Python dict literal; returns an error without the path.
  static absl::Status ParseHeader(const std::string& header, ArrayPart* part);

  const int fd_;
  const ArrayPart part_;
  const uint64_t data_offset_;
};

absl::Status NpyReader::ParseHeader(const std::string& header, ArrayPart* part) {
  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('descr'\s*:\s*'([<>|=])([uifb])(\d+)')"))) {
    return absl::InvalidArgumentError(absl::StrCat("unsupported dtype in header ", header,
                                                   "; expected a plain integer or float type"));
  }
  part->type = {m[2].str()[0], std::stoi(m[3].str())};
  if (Lookup(part->type) == nullptr || (m[1] == ">" && part->type.bytes > 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dtype ", m[1].str(), m[2].str(), m[3].str(),
        " is not supported; expected little-endian (u)int8/16/32/64, float32 or float64"));
  }
  if (std::regex_search(header, std::regex(R"('fortran_order'\s*:\s*True)"))) {
    return absl::InvalidArgumentError(
        "the array is in Fortran order; save it with np.ascontiguousarray");
  }
  if (!std::regex_search(header, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))"))) {
    return absl::InvalidArgumentError(absl::StrCat("no shape in header ", header));
  }
  for (absl::string_view d : absl::StrSplit(m[1].str(), ',', absl::SkipWhitespace())) {
    uint64_t v;
    if (!absl::SimpleAtoi(d, &v) || v > (uint64_t{1} << 40)) {
      return absl::InvalidArgumentError(absl::StrCat("bad shape (", m[1].str(), ") in header"));
    }
    part->dims.push_back(v);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ArrayReader>> NpyReader::Open(const std::string& path) {
  MONSOON_ASSIGN_OR_RETURN(const uint64_t size, CheckRegularFile(path));
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("cannot open ", path));
  absl::Cleanup closer = [&fd] {
    if (fd >= 0) close(fd);
  };
  unsigned char preamble[12] = {};
  const bool magic = size >= 10 && ReadAt(fd, 0, 10, preamble, path).ok() &&
                     std::memcmp(preamble, "\x93NUMPY", 6) == 0 && preamble[6] >= 1 &&
                     preamble[6] <= 3;
  if (!magic) {
    return absl::InvalidArgumentError(absl::StrCat(path,
                                                   ": not a .npy file (no \\x93NUMPY "
                                                   "magic of format version 1 to 3)"));
  }
  const bool wide = preamble[6] >= 2;  // versions 2 and 3 have a 4-byte header length
  if (wide) MONSOON_RETURN_IF_ERROR(ReadAt(fd, 10, 2, preamble + 10, path));
  const uint64_t header_len =
      wide ? preamble[8] | preamble[9] << 8 | preamble[10] << 16 | uint64_t{preamble[11]} << 24
           : preamble[8] | preamble[9] << 8;
  const uint64_t offset = (wide ? 12 : 10) + header_len;
  if (header_len > (1 << 20) || offset > size) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": header of ", header_len, " bytes in a file of ", size));
  }
  std::string header(header_len, '\0');
  MONSOON_RETURN_IF_ERROR(ReadAt(fd, wide ? 12 : 10, header_len,
                                 reinterpret_cast<unsigned char*>(header.data()), path));
  ArrayPart part;
  part.where = path;
  const absl::Status parsed = ParseHeader(header, &part);
  if (!parsed.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", parsed.message()));
  uint64_t bytes = part.type.bytes;
  bool overflow = false;
  for (const uint64_t d : part.dims) overflow |= __builtin_mul_overflow(bytes, d, &bytes);
  if (overflow || offset + bytes != size) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": shape ", ShapeString(part.dims), " of ", part.type.Name(), " needs ",
        overflow ? "more than 2^64" : absl::StrCat(bytes), " bytes of data, but the file holds ",
        size - offset, !overflow && bytes > size - offset ? " (truncated)" : ""));
  }
  return std::unique_ptr<ArrayReader>(
      new NpyReader(std::exchange(fd, -1), std::move(part), offset));
}

// An HDF5 identifier, closed by `close` when it goes.
class Hid {
 public:
  Hid(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Hid(Hid&& other) noexcept : id_(std::exchange(other.id_, -1)), close_(other.close_) {}
  Hid& operator=(Hid&&) = delete;
  ~Hid() {
    if (id_ >= 0) close_(id_);
  }
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// A dataset of an HDF5 file, its rows read by hyperslab.
class Hdf5Reader : public ArrayReader {
 public:
  static absl::StatusOr<std::unique_ptr<ArrayReader>> Open(std::shared_ptr<Hid> file,
                                                           const std::string& path,
                                                           const std::string& name);
  const ArrayPart& part() const override { return part_; }
  absl::Status ReadRun(uint64_t first, uint64_t count, unsigned char* out) override;

 private:
  Hdf5Reader(std::shared_ptr<Hid> file, Hid dataset, ArrayPart part)
      : file_(std::move(file)), dataset_(std::move(dataset)), part_(std::move(part)) {}

  const std::shared_ptr<Hid> file_;  // kept open while its datasets are
  const Hid dataset_;
  const ArrayPart part_;
};

// The most links followed to reach one dataset: a soft-link cycle ends here.
constexpr int kMaxLinkHops = 16;

// `name` in `file` with every soft link on its way followed (at most kMaxLinkHops): the path
// of the dataset through hard links alone. External and user-defined links are refused: they
// would open another file. `path` names the file in errors.
absl::StatusOr<std::string> ResolveLinks(hid_t file, const std::string& path,
                                         const std::string& name) {
  std::vector<std::string> todo = absl::StrSplit(name, '/', absl::SkipEmpty());
  std::reverse(todo.begin(), todo.end());  // popped from the back, first component first
  std::string resolved;
  for (int hops = 0; !todo.empty();) {
    const std::string next = absl::StrCat(resolved, "/", todo.back());
    todo.pop_back();
    H5L_info_t link;
    if (H5().H5Lexists(file, next.c_str(), H5P_DEFAULT) <= 0 ||
        H5().H5Lget_info(file, next.c_str(), &link, H5P_DEFAULT) < 0) {
      const std::string via = next == absl::StrCat("/", name) ? "" : absl::StrCat(" (", next, ")");
      return absl::InvalidArgumentError(absl::StrCat(path, ": has no dataset '", name, "'", via));
    }
    if (link.type == H5L_TYPE_HARD) {
      resolved = next;
      continue;
    }
    if (link.type != H5L_TYPE_SOFT) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", name, ": external link refused (it would read another file); give the "
          "file that holds the dataset itself"));
    }
    if (++hops > kMaxLinkHops) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", name, ": more than ",
                                                     kMaxLinkHops, " soft links (a cycle?)"));
    }
    std::string target(link.u.val_size, '\0');
    if (H5().H5Lget_val(file, next.c_str(), target.data(), target.size(), H5P_DEFAULT) < 0) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", next, ": unreadable soft link"));
    }
    target.resize(std::strlen(target.c_str()));
    if (absl::StartsWith(target, "/")) resolved.clear();
    std::vector<std::string> parts = absl::StrSplit(target, '/', absl::SkipEmpty());
    todo.insert(todo.end(), parts.rbegin(), parts.rend());
  }
  return resolved.empty() ? "/" : resolved;
}

// OK when every filter of `plist` (a dataset's creation properties) can be decoded here: the
// built-in ones (deflate, shuffle, fletcher32, n-bit, scale-offset) and those a plugin on
// HDF5's plugin path provides.
absl::Status CheckFilters(hid_t plist, const std::string& where) {
  const int filters = H5().H5Pget_nfilters(plist);
  for (int i = 0; i < filters; ++i) {
    unsigned flags = 0, config = 0;
    size_t values = 0;
    char name[128] = {};
    const H5Z_filter_t id =
        H5().H5Pget_filter2(plist, i, &flags, &values, nullptr, sizeof(name), name, &config);
    if (id >= 0 && H5().H5Zfilter_avail(id) > 0) continue;
    return absl::FailedPreconditionError(absl::StrCat(
        where, ": compressed with HDF5 filter ", id, name[0] ? absl::StrCat(" (", name, ")") : "",
        ", which this HDF5 cannot decode: install its plugin (lzf: Debian's hdf5-plugin-lzf) "
        "or name its folder in HDF5_PLUGIN_PATH, or write a copy without it (`h5repack -f NONE "
        "FILE COPY`)"));
  }
  return absl::OkStatus();
}

// The chunks a chunked dataset of extent `dims` needs, `plist` giving their shape.
uint64_t ChunksNeeded(hid_t plist, const std::vector<hsize_t>& dims) {
  std::vector<hsize_t> chunk(dims.size(), 1);
  H5().H5Pget_chunk(plist, static_cast<int>(chunk.size()), chunk.data());
  uint64_t needed = 1;
  for (size_t i = 0; i < dims.size(); ++i) needed *= (dims[i] + chunk[i] - 1) / chunk[i];
  return needed;
}

// OK when `dataset`'s storage holds every row: each chunk of a chunked dataset allocated
// (counted, as filtered chunks are smaller than their rows and HDF5 reports such storage as
// part-allocated), or a contiguous one's storage allocated. Rows never written read as fill
// values.
absl::Status CheckAllWritten(const Hid& dataset, hid_t plist, const std::string& where) {
  if (H5().H5Pget_layout(plist) == H5D_CHUNKED) {
    const Hid space(H5().H5Dget_space(dataset.get()), H5().H5Sclose);
    std::vector<hsize_t> dims(std::max(H5().H5Sget_simple_extent_ndims(space.get()), 0));
    H5().H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    hsize_t written = 0;
    const uint64_t needed = ChunksNeeded(plist, dims);
    if (H5().H5Dget_num_chunks(dataset.get(), space.get(), &written) < 0 || written >= needed) {
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": refused: ", needed - written, " of its ", needed, " chunks were never written, "
        "so their rows would read as fill values"));
  }
  H5D_space_status_t allocated = H5D_SPACE_STATUS_ERROR;
  if (H5().H5Dget_space_status(dataset.get(), &allocated) < 0 ||
      allocated != H5D_SPACE_STATUS_ALLOCATED) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": refused: its rows were never (all) written, so they would read as fill values"));
  }
  return absl::OkStatus();
}

// OK when `dataset`'s rows are this file's own bytes, all written and decodable: not in
// external storage files nor a virtual layout (they read other files, or fill values where one
// is missing), compressed only by filters this HDF5 has, and every chunk written.
absl::Status CheckSelfContained(const Hid& dataset, const std::string& where) {
  const std::string copy =
      " (make a self-contained copy of the file, e.g. `h5repack -l CONTI FILE COPY`)";
  const Hid plist(H5().H5Dget_create_plist(dataset.get()), H5().H5Pclose);
  if (!plist.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": unreadable storage properties"));
  }
  if (H5().H5Pget_external_count(plist.get()) > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": refused: its rows are stored in external files", copy));
  }
  if (H5().H5Pget_layout(plist.get()) == H5D_VIRTUAL) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": refused: a virtual dataset, whose rows come from other files", copy));
  }
  MONSOON_RETURN_IF_ERROR(CheckFilters(plist.get(), where));
  return CheckAllWritten(dataset, plist.get(), where);
}

// The most memory a dataset's chunk cache takes (RowChunkCache).
constexpr uint64_t kMaxChunkCacheBytes = 64 << 20;

// Access properties for a chunked dataset whose creation properties are `plist` and extent
// `dims`, of `element_bytes` elements: a chunk cache that holds every chunk covering two chunks'
// worth of rows (up to kMaxChunkCacheBytes), so that rows read in ascending order decompress
// each chunk once. HDF5's default cache (1 MiB) holds less than one row of a chunk layout that
// cuts rows across many chunks (h5py's default for images), and a read of scattered rows then
// decompresses every chunk again for each row.
Hid RowChunkCache(hid_t plist, const std::vector<hsize_t>& dims, size_t element_bytes) {
  Hid access(H5().H5Pcreate(*H5().H5P_CLS_DATASET_ACCESS_ID_g), H5().H5Pclose);
  std::vector<hsize_t> chunk(dims.size(), 1);
  H5().H5Pget_chunk(plist, static_cast<int>(chunk.size()), chunk.data());
  uint64_t chunks_per_row = 1, row_bytes = chunk[0] * element_bytes;
  for (size_t i = 1; i < dims.size(); ++i) {
    const uint64_t across = (dims[i] + chunk[i] - 1) / chunk[i];
    chunks_per_row *= across;
    row_bytes *= across * chunk[i];
  }
  const uint64_t bytes = std::clamp<uint64_t>(2 * row_bytes, 1 << 20, kMaxChunkCacheBytes);
  const uint64_t slots = std::max<uint64_t>(521, 20 * chunks_per_row + 1);
  H5().H5Pset_chunk_cache(access.get(), slots, bytes, /*w0=*/1.0);
  return access;
}

// The access properties to open `name` (a path of hard links) in `file` with: RowChunkCache
// when it is chunked, else the default.
Hid AccessProperties(hid_t file, const std::string& name) {
  const Hid dataset(H5().H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5().H5Dclose);
  const Hid plist(dataset.ok() ? H5().H5Dget_create_plist(dataset.get()) : -1, H5().H5Pclose);
  const Hid space(dataset.ok() ? H5().H5Dget_space(dataset.get()) : -1, H5().H5Sclose);
  const Hid type(dataset.ok() ? H5().H5Dget_type(dataset.get()) : -1, H5().H5Tclose);
  std::vector<hsize_t> dims(
      std::max(space.ok() ? H5().H5Sget_simple_extent_ndims(space.get()) : 0, 0));
  if (!plist.ok() || !type.ok() || dims.empty() || H5().H5Pget_layout(plist.get()) != H5D_CHUNKED) {
    return Hid(H5().H5Pcreate(*H5().H5P_CLS_DATASET_ACCESS_ID_g), H5().H5Pclose);
  }
  H5().H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  return RowChunkCache(plist.get(), dims, H5().H5Tget_size(type.get()));
}

// `name` (a path of hard links) in `file`, opened with AccessProperties. HDF5 shares one open
// dataset among its handles, with the cache of the first open: AccessProperties' handle is
// closed before this one opens.
Hid OpenDataset(hid_t file, const std::string& name) {
  const Hid access = AccessProperties(file, name);
  return Hid(H5().H5Dopen2(file, name.c_str(), access.get()), H5().H5Dclose);
}

absl::StatusOr<std::unique_ptr<ArrayReader>> Hdf5Reader::Open(std::shared_ptr<Hid> file,
                                                              const std::string& path,
                                                              const std::string& name) {
  ArrayPart part;
  part.where = absl::StrCat(path, ":", name);
  MONSOON_ASSIGN_OR_RETURN(const std::string resolved, ResolveLinks(file->get(), path, name));
  Hid dataset = OpenDataset(file->get(), resolved);
  if (!dataset.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": has no dataset '", name, "'"));
  }
  MONSOON_RETURN_IF_ERROR(CheckSelfContained(dataset, part.where));
  const Hid type(H5().H5Dget_type(dataset.get()), H5().H5Tclose);
  const H5T_class_t type_class = H5().H5Tget_class(type.get());
  part.type.bytes = static_cast<int>(H5().H5Tget_size(type.get()));
  part.type.kind = type_class == H5T_FLOAT                        ? 'f'
                   : type_class != H5T_INTEGER                    ? '?'
                   : H5().H5Tget_sign(type.get()) == H5T_SGN_NONE ? 'u'
                                                                  : 'i';
  if (Lookup(part.type) == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(part.where, ": is not of an integer or float type of 1 to 8 bytes"));
  }
  const Hid space(H5().H5Dget_space(dataset.get()), H5().H5Sclose);
  const int rank = H5().H5Sget_simple_extent_ndims(space.get());
  if (rank < 1 || rank > 5) {
    return absl::InvalidArgumentError(absl::StrCat(part.where, ": has ", rank, " dimensions"));
  }
  std::vector<hsize_t> dims(rank);
  H5().H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  part.dims.assign(dims.begin(), dims.end());
  return std::unique_ptr<ArrayReader>(
      new Hdf5Reader(std::move(file), std::move(dataset), std::move(part)));
}

absl::Status Hdf5Reader::ReadRun(uint64_t first, uint64_t count, unsigned char* out) {
  std::vector<hsize_t> start(part_.dims.size(), 0), extent(part_.dims.begin(), part_.dims.end());
  start[0] = first;
  extent[0] = count;
  const Hid file_space(H5().H5Dget_space(dataset_.get()), H5().H5Sclose);
  const Hid memory_space(
      H5().H5Screate_simple(static_cast<int>(extent.size()), extent.data(), nullptr),
      H5().H5Sclose);
  const bool read = file_space.ok() && memory_space.ok() &&
                    H5().H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(),
                                             nullptr, extent.data(), nullptr) >= 0 &&
                    H5().H5Dread(dataset_.get(), Lookup(part_.type)->hdf5_native(),
                                 memory_space.get(), file_space.get(), H5P_DEFAULT, out) >= 0;
  if (!read) {
    return absl::DataLossError(
        absl::StrCat(part_.where, ": cannot read rows ", first, " to ", first + count - 1));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<Hid>> OpenHdf5File(const std::string& path) {
  MONSOON_RETURN_IF_ERROR(CheckRegularFile(path).status());
  if (H5().H5Fis_hdf5(path.c_str()) <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not an HDF5 file"));
  }
  auto file =
      std::make_shared<Hid>(H5().H5Fopen(path.c_str(), kHdf5ReadOnly, H5P_DEFAULT), H5().H5Fclose);
  if (!file->ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": cannot open as HDF5 (damaged?)"));
  }
  return file;
}

}  // namespace

absl::StatusOr<std::unique_ptr<DataSource>> OpenNpySource(const std::string& features_path,
                                                          const std::string& targets_path,
                                                          const TargetSpec& targets) {
  std::vector<ArraySource::Pair> pairs(1);
  MONSOON_ASSIGN_OR_RETURN(pairs[0].first, NpyReader::Open(features_path));
  MONSOON_ASSIGN_OR_RETURN(pairs[0].second, NpyReader::Open(targets_path));
  return ArraySource::Create(std::move(pairs), targets);
}

absl::StatusOr<std::unique_ptr<DataSource>> OpenHdf5Source(const std::vector<std::string>& files,
                                                           const std::string& features_name,
                                                           const std::string& targets_name,
                                                           const TargetSpec& targets) {
  if (files.empty()) return absl::InvalidArgumentError("no HDF5 files");
  MONSOON_RETURN_IF_ERROR(LoadHdf5Library().status());
  std::vector<ArraySource::Pair> pairs;
  for (const std::string& path : files) {
    MONSOON_ASSIGN_OR_RETURN(std::shared_ptr<Hid> file, OpenHdf5File(path));
    ArraySource::Pair pair;
    MONSOON_ASSIGN_OR_RETURN(pair.first, Hdf5Reader::Open(file, path, features_name));
    MONSOON_ASSIGN_OR_RETURN(pair.second, Hdf5Reader::Open(file, path, targets_name));
    pairs.push_back(std::move(pair));
  }
  return ArraySource::Create(std::move(pairs), targets);
}

namespace {

// A .npy file (format 1.0) of float32 `values` shaped `dims`: the magic, the header's length,
// the header (a Python dict literal, padded so the data starts at a multiple of 64), the data.
std::string NpyBytes(const std::vector<int>& dims, absl::Span<const float> values) {
  std::string shape = absl::StrJoin(dims, ", ");
  if (dims.size() == 1) shape += ",";
  std::string header =
      absl::StrCat("{'descr': '<f4', 'fortran_order': False, 'shape': (", shape, "), }");
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  std::string out = absl::StrCat("\x93NUMPY", std::string(1, '\x01'), std::string(1, '\0'));
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  return out;
}

}  // namespace

absl::Status WriteNpz(const std::string& path, const std::vector<NamedArray>& arrays) {
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  int error = 0;
  zip_t* archive = zip_open(tmp.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
  if (archive == nullptr) return ErrnoStatus(errno, absl::StrCat("cannot create ", tmp));
  std::vector<std::string> files;  // zip_close reads them
  files.reserve(arrays.size());
  for (const NamedArray& a : arrays) {
    files.push_back(NpyBytes(a.dims, a.values));
    zip_source_t* source = zip_source_buffer(archive, files.back().data(), files.back().size(), 0);
    if (source == nullptr ||
        zip_file_add(archive, absl::StrCat(a.name, ".npy").c_str(), source, ZIP_FL_ENC_UTF_8) < 0) {
      if (source != nullptr) zip_source_free(source);
      const std::string why = zip_strerror(archive);
      zip_discard(archive);
      return absl::InternalError(absl::StrCat("cannot add ", a.name, " to ", path, ": ", why));
    }
  }
  if (zip_close(archive) != 0) {
    const std::string why = zip_strerror(archive);
    zip_discard(archive);
    std::remove(tmp.c_str());
    return absl::DataLossError(absl::StrCat("cannot write ", path, ": ", why));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const absl::Status status = ErrnoStatus(errno, absl::StrCat("cannot rename ", tmp));
    std::remove(tmp.c_str());
    return status;
  }
  return absl::OkStatus();
}

}  // namespace monsoon
