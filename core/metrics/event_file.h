// TensorBoard event files: the scalars a role logs as it runs, as TensorBoard reads them. A
// file is a TFRecord stream (each record: its length as 8 little-endian bytes, the masked
// CRC-32C of those, the data, the masked CRC-32C of the data) of tensorboard.Event protos
// (core/metrics/tensorboard_event.proto), the first one naming the format ("brain.Event:2").
#ifndef MONSOON_CORE_METRICS_EVENT_FILE_H_
#define MONSOON_CORE_METRICS_EVENT_FILE_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace monsoon {

// TFRecord's checksum: CRC-32C (Castagnoli), rotated and offset ("masked").
uint32_t MaskedCrc32c(const void* data, size_t size);

class EventFileWriter {
 public:
  // Creates DIR (and its parents) and DIR/events.out.tfevents.SECONDS.HOSTNAME.PID, a new file
  // for each process, and writes its first event.
  static absl::StatusOr<std::unique_ptr<EventFileWriter>> Create(const std::string& dir);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;  // it owns a file
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  // One event at `step`, now, with a scalar per (tag, value); flushed to the file.
  absl::Status AddScalars(int64_t step, const std::vector<std::pair<std::string, double>>& scalars);

  const std::string& path() const { return path_; }

 private:
  EventFileWriter(std::FILE* file, std::string path) : file_(file), path_(std::move(path)) {}
  absl::Status WriteRecord(const std::string& data);

  std::FILE* const file_;  // owned
  const std::string path_;
};

}  // namespace monsoon

#endif  // MONSOON_CORE_METRICS_EVENT_FILE_H_
