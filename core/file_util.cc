#include "core/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace monsoon {

absl::Status ErrnoStatus(int err, absl::string_view what) {
  const std::string message = absl::StrCat(what, ": ", std::strerror(err));
  switch (err) {
    case EMFILE:
    case ENFILE:
    case ENOSPC:
    case EDQUOT:
      return absl::ResourceExhaustedError(message);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(message);
    case ENOENT:
      return absl::NotFoundError(message);
    default:
      return absl::DataLossError(message);
  }
}

absl::Status WriteFileAtomically(const std::string& path, const std::string& contents, int mode) {
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("cannot create ", tmp));
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string err = std::strerror(errno);
      close(fd);
      unlink(tmp.c_str());
      return absl::DataLossError(absl::StrCat("cannot write ", tmp, ": ", err));
    }
    done += static_cast<size_t>(n);
  }
  fsync(fd);
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string err = std::strerror(errno);
    unlink(tmp.c_str());
    return absl::DataLossError(absl::StrCat("cannot rename ", tmp, " to ", path, ": ", err));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

absl::StatusOr<std::vector<float>> ReadFloatFile(const std::string& path, size_t expected) {
  absl::StatusOr<std::string> bytes = ReadFile(path);
  if (!bytes.ok()) return bytes.status();
  if (bytes->size() != expected * sizeof(float)) {
    return absl::DataLossError(absl::StrCat(path, " holds ", bytes->size(), " bytes, not the ",
                                            expected * sizeof(float), " of ", expected,
                                            " float32 parameters"));
  }
  std::vector<float> values(expected);
  bytes->copy(reinterpret_cast<char*>(values.data()), bytes->size());
  return values;
}

absl::StatusOr<uint64_t> CheckRegularFile(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) {
      return absl::NotFoundError(absl::StrCat("file not found: ", path));
    }
    return ErrnoStatus(errno, absl::StrCat("cannot read ", path));
  }
  if (S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is a directory, not a file"));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is not a regular file (a FIFO, socket or device)"));
  }
  if (access(path.c_str(), R_OK) != 0) {
    return ErrnoStatus(errno, absl::StrCat("cannot read ", path));
  }
  return static_cast<uint64_t>(st.st_size);
}

absl::StatusOr<std::string> ReadRegularFile(const std::string& path, size_t max_bytes) {
  const absl::StatusOr<uint64_t> size = CheckRegularFile(path);
  if (!size.ok()) return size.status();
  if (*size > max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " has ", *size, " bytes; a file of at most ", max_bytes, " is expected here"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoStatus(errno, absl::StrCat("cannot read ", path));
  std::string text(static_cast<size_t>(*size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(*size));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

}  // namespace monsoon
