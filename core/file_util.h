// Whole-file reads and atomic writes: the ground floor under every file Monsoon writes.
#ifndef MONSOON_CORE_FILE_UTIL_H_
#define MONSOON_CORE_FILE_UTIL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace monsoon {

// `what` ("cannot create PATH") and the errno value `err` as one status: ResourceExhausted when
// the process or system is out of file descriptors (EMFILE, ENFILE) or the disk is full
// (ENOSPC, EDQUOT), PermissionDenied (EACCES, EPERM, EROFS), NotFound (ENOENT), else DataLoss.
absl::Status ErrnoStatus(int err, absl::string_view what);

// Writes `contents` to `path` via a temporary file (fsynced) and rename, so readers never see
// a partial file.
absl::Status WriteFileAtomically(const std::string& path, const std::string& contents,
                                 int mode = 0644);
// NotFound when `path` cannot be read.
absl::StatusOr<std::string> ReadFile(const std::string& path);
// `path` as raw little-endian float32 values (Monsoon's flat weight files), `expected` of them:
// NotFound when it cannot be read, DataLoss when its size is not expected * 4 bytes.
absl::StatusOr<std::vector<float>> ReadFloatFile(const std::string& path, size_t expected);
// The size of `path`, a regular file this process can read. NotFound ("file not found: PATH")
// when there is none; InvalidArgument for a directory, a FIFO, socket or device;
// PermissionDenied (with the system's reason) when it cannot be read.
absl::StatusOr<uint64_t> CheckRegularFile(const std::string& path);

// The contents of the regular file `path`, of at most `max_bytes`: for files a user names
// (job and study files). NotFound when there is no such file; InvalidArgument for a directory,
// a FIFO or a device (checked before opening, so a FIFO never blocks) and for a larger file;
// PermissionDenied when it cannot be read.
absl::StatusOr<std::string> ReadRegularFile(const std::string& path, size_t max_bytes);

}  // namespace monsoon

#endif  // MONSOON_CORE_FILE_UTIL_H_
