#include "core/run/checkpoint_file.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/file_util.h"

namespace monsoon {
namespace {

namespace fs = std::filesystem;

// The last byte is the format version of what ParameterServer writes; 2 added the sync
// round's epoch (the learning-rate schedule's). Files of another version read as damaged.
constexpr char kMagic[12] = {'M', 'O', 'N', 'S', 'O', 'O', 'N', 'C', 'K', 'P', 'T', '\3'};
constexpr char kEnd[4] = {'C', 'E', 'N', 'D'};
constexpr size_t kTrailerBytes = sizeof(uint64_t) + sizeof(uint32_t) + sizeof(kEnd);
constexpr char kPrefix[] = "ckpt-";
constexpr char kSuffix[] = ".bin";

uint32_t Crc(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const Bytef*>(data);
  while (size > 0) {  // zlib takes uInt lengths
    const uInt n = static_cast<uInt>(std::min<size_t>(size, 1u << 30));
    crc = static_cast<uint32_t>(crc32(crc, p, n));
    p += n;
    size -= n;
  }
  return crc;
}

// The number N of DIR/ckpt-N.bin, or -1 for any other name.
int64_t CheckpointNumber(const fs::path& p) {
  const std::string name = p.filename().string();
  const size_t prefix = sizeof(kPrefix) - 1, suffix = sizeof(kSuffix) - 1;
  if (name.size() <= prefix + suffix || name.rfind(kPrefix, 0) != 0 ||
      name.compare(name.size() - suffix, suffix, kSuffix) != 0) {
    return -1;
  }
  int64_t n = 0;
  for (size_t i = prefix; i < name.size() - suffix; ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    n = n * 10 + (name[i] - '0');
  }
  return n;
}

absl::Status SyncDirectory(const std::string& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || fsync(fd) != 0) {
    const int err = errno;
    if (fd >= 0) close(fd);
    return ErrnoStatus(err, absl::StrCat("cannot fsync ", dir));
  }
  close(fd);
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> ListCheckpoints(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const int64_t n = CheckpointNumber(entry.path());
    if (n >= 0) found.emplace_back(n, entry.path().string());
  }
  std::sort(found.rbegin(), found.rend());
  std::vector<std::string> paths;
  for (auto& [n, path] : found) paths.push_back(std::move(path));
  return paths;
}

CheckpointWriter::CheckpointWriter(std::string dir, std::string tmp_path, std::FILE* file)
    : dir_(std::move(dir)), tmp_path_(std::move(tmp_path)), file_(file) {}

absl::StatusOr<std::unique_ptr<CheckpointWriter>> CheckpointWriter::Begin(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return absl::PermissionDeniedError(absl::StrCat("cannot create ", dir, ": ", ec.message()));
  // One writer per directory: what an earlier, killed writer left half-written goes.
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().filename().string().rfind(".ckpt.tmp.", 0) == 0) {
      fs::remove(entry.path(), ec);
    }
  }
  const std::string tmp = absl::StrCat(dir, "/.ckpt.tmp.", getpid());
  std::FILE* file = std::fopen(tmp.c_str(), "wbe");  // e: O_CLOEXEC
  if (file == nullptr) return ErrnoStatus(errno, absl::StrCat("cannot create ", tmp));
  std::setvbuf(file, nullptr, _IOFBF, 1 << 20);
  std::unique_ptr<CheckpointWriter> writer(new CheckpointWriter(dir, tmp, file));
  writer->Bytes(kMagic, sizeof(kMagic));
  writer->payload_bytes_ = 0;  // the magic is not payload
  return writer;
}

CheckpointWriter::~CheckpointWriter() {
  if (file_ == nullptr) return;
  std::fclose(file_);
  unlink(tmp_path_.c_str());
}

void CheckpointWriter::Bytes(const void* data, size_t size) {
  if (errno_ != 0 || size == 0) return;
  if (std::fwrite(data, 1, size, file_) != size) {
    errno_ = errno != 0 ? errno : EIO;
    return;
  }
  crc_ = Crc(crc_, data, size);
  payload_bytes_ += size;
}

absl::StatusOr<std::string> CheckpointWriter::Commit(int keep) {
  const uint64_t payload = payload_bytes_;
  Bytes(&payload, sizeof(payload));
  const uint32_t crc = crc_;
  Bytes(&crc, sizeof(crc));
  Bytes(kEnd, sizeof(kEnd));
  if (errno_ == 0 && std::fflush(file_) != 0) errno_ = errno;
  if (errno_ == 0 && fsync(fileno(file_)) != 0) errno_ = errno;
  if (errno_ != 0) return ErrnoStatus(errno_, absl::StrCat("cannot write checkpoint ", tmp_path_));
  std::fclose(file_);
  file_ = nullptr;
  const std::vector<std::string> existing = ListCheckpoints(dir_);
  const int64_t next = existing.empty() ? 1 : CheckpointNumber(existing.front()) + 1;
  const std::string path = absl::StrFormat("%s/%s%08d%s", dir_, kPrefix, next, kSuffix);
  if (rename(tmp_path_.c_str(), path.c_str()) != 0) {
    const std::string err = std::strerror(errno);
    unlink(tmp_path_.c_str());
    return absl::DataLossError(absl::StrCat("cannot rename ", tmp_path_, " to ", path, ": ", err));
  }
  absl::Status synced = SyncDirectory(dir_);
  if (!synced.ok()) return synced;
  // `existing` is newest first and the new checkpoint is newer still: it counts as one.
  for (size_t i = static_cast<size_t>(std::max(keep, 1)) - 1; i < existing.size(); ++i) {
    unlink(existing[i].c_str());
  }
  return path;
}

CheckpointReader::CheckpointReader(std::string path, std::FILE* file, uint64_t payload_bytes)
    : path_(std::move(path)), file_(file), payload_bytes_(payload_bytes) {}

CheckpointReader::~CheckpointReader() { std::fclose(file_); }

absl::StatusOr<std::unique_ptr<CheckpointReader>> CheckpointReader::Open(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  auto damaged = [&](const std::string& why) {
    std::fclose(file);
    return absl::DataLossError(absl::StrCat("checkpoint ", path, " is damaged: ", why));
  };
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (ec || size < sizeof(kMagic) + kTrailerBytes) return damaged("too short");
  char magic[sizeof(kMagic)];
  const size_t version_at = sizeof(kMagic) - 1;
  if (std::fread(magic, 1, sizeof(magic), file) != sizeof(magic) ||
      std::memcmp(magic, kMagic, version_at) != 0) {
    return damaged("not a Monsoon checkpoint (bad magic)");
  }
  if (magic[version_at] != kMagic[version_at]) {
    return damaged(absl::StrCat("format ", static_cast<int>(magic[version_at]),
                                ", from another version of monsoon (this one reads format ",
                                static_cast<int>(kMagic[version_at]), ")"));
  }
  // One pass over the whole file for the checksum, then back to the payload's start.
  const uint64_t payload_bytes = size - sizeof(kMagic) - kTrailerBytes;
  uint32_t crc = Crc(0, kMagic, sizeof(kMagic));
  std::vector<char> buffer(1 << 20);
  for (uint64_t left = payload_bytes; left > 0;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, buffer.size()));
    if (std::fread(buffer.data(), 1, n, file) != n) return damaged("read error");
    crc = Crc(crc, buffer.data(), n);
    left -= n;
  }
  uint64_t recorded_bytes = 0;
  uint32_t recorded_crc = 0;
  char end[sizeof(kEnd)];
  if (std::fread(&recorded_bytes, sizeof(recorded_bytes), 1, file) != 1)
    return damaged("no trailer");
  crc = Crc(crc, &recorded_bytes, sizeof(recorded_bytes));
  if (std::fread(&recorded_crc, sizeof(recorded_crc), 1, file) != 1 ||
      std::fread(end, 1, sizeof(end), file) != sizeof(end) ||
      std::memcmp(end, kEnd, sizeof(kEnd)) != 0) {
    return damaged("no trailer (a partial write?)");
  }
  if (recorded_bytes != payload_bytes) {
    return damaged(absl::StrCat("length ", payload_bytes, " bytes, trailer says ", recorded_bytes));
  }
  if (recorded_crc != crc) {
    return damaged(absl::StrFormat("checksum %08x, trailer says %08x", crc, recorded_crc));
  }
  std::fseek(file, sizeof(kMagic), SEEK_SET);
  return std::unique_ptr<CheckpointReader>(new CheckpointReader(path, file, payload_bytes));
}

absl::Status CheckpointReader::Bytes(void* data, size_t size) {
  if (size > payload_bytes_ - read_ || std::fread(data, 1, size, file_) != size) {
    return absl::DataLossError(absl::StrCat("checkpoint ", path_, " ends early"));
  }
  read_ += size;
  return absl::OkStatus();
}

absl::Status CheckpointReader::SizeMismatch(uint64_t found, uint64_t expected) const {
  return absl::DataLossError(absl::StrCat("checkpoint ", path_, " holds ", found, " values where ",
                                          expected, " were expected"));
}

absl::Status CheckpointReader::Finish() const {
  if (read_ == payload_bytes_) return absl::OkStatus();
  return absl::DataLossError(
      absl::StrCat("checkpoint ", path_, " has ", payload_bytes_ - read_, " unread bytes"));
}

absl::StatusOr<std::unique_ptr<CheckpointReader>> OpenNewestCheckpoint(
    const std::string& dir, std::vector<std::string>* skipped) {
  const std::vector<std::string> paths = ListCheckpoints(dir);
  if (paths.empty()) return absl::NotFoundError(absl::StrCat("no checkpoint in ", dir));
  for (const std::string& path : paths) {
    auto reader = CheckpointReader::Open(path);
    if (reader.ok()) return reader;
    skipped->push_back(std::string(reader.status().message()));
  }
  return absl::DataLossError(
      absl::StrCat("no checkpoint in ", dir, " verifies: ", absl::StrJoin(*skipped, "; ")));
}

}  // namespace monsoon
