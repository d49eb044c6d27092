// Checkpoint files: written atomically (temporary file, fsync, rename, fsync of the
// directory) and sealed with a length and a CRC-32 trailer, so that a reader either gets a
// complete checkpoint or knows it is damaged and falls back to the previous one.
//
//   DIR/ckpt-00000001.bin, DIR/ckpt-00000002.bin, ...   (the highest number is the newest)
//
// File layout: "MONSOONCKPT\3" (12 bytes), the payload (fields written by the caller, raw
// little-endian), then the trailer: u64 payload length, u32 CRC-32 of every byte before the
// trailer, "CEND".
#ifndef MONSOON_CORE_RUN_CHECKPOINT_FILE_H_
#define MONSOON_CORE_RUN_CHECKPOINT_FILE_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"

namespace monsoon {

// Writes one checkpoint into a temporary file of DIR; Commit() makes it the newest. Destroying
// an uncommitted writer removes the temporary file. Field writes never fail on their own:
// the first I/O error is kept and returned by Commit().
class CheckpointWriter {
 public:
  // Creates DIR if needed, removes temporary files an earlier (killed) writer left, and opens
  // the temporary file. One writer per directory at a time.
  static absl::StatusOr<std::unique_ptr<CheckpointWriter>> Begin(const std::string& dir);
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;  // it owns a file
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  void Bytes(const void* data, size_t size);
  template <typename T>
  void Pod(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    Bytes(&value, sizeof(T));
  }
  // The element count (u64), then the elements.
  template <typename T>
  void Vector(const std::vector<T>& values) {
    static_assert(std::is_trivially_copyable_v<T>);
    Pod<uint64_t>(values.size());
    Bytes(values.data(), values.size() * sizeof(T));
  }

  // Seals the file, fsyncs it, renames it to the next ckpt-N.bin, fsyncs DIR and deletes all
  // but the newest `keep` checkpoints. Returns the new file's path.
  absl::StatusOr<std::string> Commit(int keep);

 private:
  CheckpointWriter(std::string dir, std::string tmp_path, std::FILE* file);

  const std::string dir_;
  const std::string tmp_path_;
  std::FILE* file_;  // owned; null once committed
  uint32_t crc_ = 0;
  uint64_t payload_bytes_ = 0;
  int errno_ = 0;  // first write error
};

// Reads one checkpoint file whose trailer and checksum have been verified.
class CheckpointReader {
 public:
  // DataLoss (naming the file and what is wrong) for a truncated or corrupt file.
  static absl::StatusOr<std::unique_ptr<CheckpointReader>> Open(const std::string& path);
  ~CheckpointReader();
  CheckpointReader(const CheckpointReader&) = delete;  // it owns a file
  CheckpointReader& operator=(const CheckpointReader&) = delete;

  const std::string& path() const { return path_; }

  // DataLoss when fewer than `size` payload bytes remain.
  absl::Status Bytes(void* data, size_t size);
  template <typename T>
  absl::Status Pod(T* value) {
    static_assert(std::is_trivially_copyable_v<T>);
    return Bytes(value, sizeof(T));
  }
  // A vector written by CheckpointWriter::Vector; DataLoss unless it has `expected` elements.
  template <typename T>
  absl::Status Vector(size_t expected, std::vector<T>* values) {
    uint64_t n = 0;
    absl::Status s = Pod(&n);
    if (!s.ok()) return s;
    if (n != expected) return SizeMismatch(n, expected);
    values->resize(n);
    return Bytes(values->data(), n * sizeof(T));
  }
  // A vector written by CheckpointWriter::Vector, of whatever length it has; DataLoss when the
  // payload is too short for it.
  template <typename T>
  absl::Status Vector(std::vector<T>* values) {
    uint64_t n = 0;
    absl::Status s = Pod(&n);
    if (!s.ok()) return s;
    const uint64_t fits = (payload_bytes_ - read_) / sizeof(T);
    if (n > fits) return SizeMismatch(n, fits);
    values->resize(n);
    return Bytes(values->data(), n * sizeof(T));
  }
  // DataLoss unless the whole payload has been read.
  absl::Status Finish() const;

 private:
  CheckpointReader(std::string path, std::FILE* file, uint64_t payload_bytes);
  absl::Status SizeMismatch(uint64_t found, uint64_t expected) const;

  const std::string path_;
  std::FILE* const file_;  // owned
  const uint64_t payload_bytes_;
  uint64_t read_ = 0;
};

// The checkpoint files of DIR, newest first.
std::vector<std::string> ListCheckpoints(const std::string& dir);

// Opens the newest checkpoint of DIR that verifies; each newer one that does not is described
// in *skipped ("PATH: reason"). NotFound when DIR holds no checkpoint; DataLoss, naming each
// file and what is wrong with it, when none of them verifies.
absl::StatusOr<std::unique_ptr<CheckpointReader>> OpenNewestCheckpoint(
    const std::string& dir, std::vector<std::string>* skipped);

}  // namespace monsoon

#endif  // MONSOON_CORE_RUN_CHECKPOINT_FILE_H_
