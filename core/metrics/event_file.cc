#include "core/metrics/event_file.h"

#include <isa-l/crc.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/file_util.h"
#include "core/status_macros.h"
#include "core/metrics/tensorboard_event.pb.h"

namespace monsoon {

uint32_t MaskedCrc32c(const void* data, size_t size) {
  const uint32_t crc = crc32_iscsi(static_cast<unsigned char*>(const_cast<void*>(data)),
                                   static_cast<int>(size), 0xffffffffu) ^
                       0xffffffffu;
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

absl::StatusOr<std::unique_ptr<EventFileWriter>> EventFileWriter::Create(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return ErrnoStatus(ec.value(), absl::StrCat("cannot create ", dir));
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  const std::string path = absl::StrCat(dir, "/events.out.tfevents.",
                                        absl::ToUnixSeconds(absl::Now()), ".", host, ".", getpid());
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) return ErrnoStatus(errno, absl::StrCat("cannot create ", path));
  std::unique_ptr<EventFileWriter> writer(new EventFileWriter(file, path));
  tensorboard::Event first;
  first.set_wall_time(absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()));
  first.set_file_version("brain.Event:2");
  MONSOON_RETURN_IF_ERROR(writer->WriteRecord(first.SerializeAsString()));
  return writer;
}

EventFileWriter::~EventFileWriter() { std::fclose(file_); }

absl::Status EventFileWriter::AddScalars(
    int64_t step, const std::vector<std::pair<std::string, double>>& scalars) {
  tensorboard::Event event;
  event.set_wall_time(absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()));
  event.set_step(step);
  for (const auto& [tag, value] : scalars) {
    tensorboard::Summary::Value* v = event.mutable_summary()->add_value();
    v->set_tag(tag);
    v->set_simple_value(static_cast<float>(value));
  }
  return WriteRecord(event.SerializeAsString());
}

absl::Status EventFileWriter::WriteRecord(const std::string& data) {
  char header[12];
  const uint64_t length = data.size();  // little-endian on x86-64, as the format wants
  std::memcpy(header, &length, 8);
  const uint32_t length_crc = MaskedCrc32c(header, 8);
  std::memcpy(header + 8, &length_crc, 4);
  const uint32_t data_crc = MaskedCrc32c(data.data(), data.size());
  const bool written = std::fwrite(header, 1, sizeof(header), file_) == sizeof(header) &&
                       std::fwrite(data.data(), 1, data.size(), file_) == data.size() &&
                       std::fwrite(&data_crc, 1, 4, file_) == 4 && std::fflush(file_) == 0;
  return written ? absl::OkStatus() : ErrnoStatus(errno, absl::StrCat("cannot write ", path_));
}

}  // namespace monsoon
