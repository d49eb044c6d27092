#include "core/metrics/trace.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/file_util.h"
#include "core/status_macros.h"

namespace monsoon {
namespace {

using Json = nlohmann::ordered_json;

// Microseconds since the Unix epoch.
double Micros(absl::Time t) { return absl::ToDoubleMicroseconds(t - absl::UnixEpoch()); }

// One event as a line of the role's trace file.
std::string Line(const Json& event) { return event.dump() + "\n"; }

std::string Metadata(std::string_view what, int pid, int tid, std::string_view name) {
  return Line(
      {{"name", what}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}});
}

}  // namespace

absl::StatusOr<std::unique_ptr<TraceWriter>> TraceWriter::Open(
    const std::string& path, int process_id, const std::string& process_name,
    const std::vector<std::string>& thread_names, const Clock& clock) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::FILE* f = std::fopen(path.c_str(), "a+");
  if (f == nullptr) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  // A line a crash of the previous process cut short is ended first; the merge skips it.
  const bool cut_short = std::fseek(f, -1, SEEK_END) == 0 && std::fgetc(f) != '\n';
  std::fseek(f, 0, SEEK_END);  // from reading to appending
  std::unique_ptr<TraceWriter> trace(new TraceWriter(f, process_id, clock));
  if (cut_short) trace->Write("\n");
  trace->Write(Metadata("process_name", process_id, 0, process_name));
  for (size_t t = 0; t < thread_names.size(); ++t) {
    trace->Write(Metadata("thread_name", process_id, static_cast<int>(t), thread_names[t]));
  }
  MONSOON_RETURN_IF_ERROR(trace->status());
  return trace;
}

TraceWriter::~TraceWriter() { std::fclose(file_); }

void TraceWriter::Span(int thread, std::string_view name, absl::Time start, absl::Time end,
                       const TraceArgs& args) {
  Json event = {{"name", name},        {"ph", "X"},
                {"ts", Micros(start)}, {"dur", absl::ToDoubleMicroseconds(end - start)},
                {"pid", process_id_},  {"tid", thread}};
  if (!args.empty()) {
    Json& values = event["args"];
    for (const auto& [key, value] : args) values[key] = value;  // NaN and Inf become null
  }
  Write(Line(event));
}

void TraceWriter::Instant(int thread, std::string_view name, absl::Time at,
                          std::string_view detail) {
  Write(Line({{"name", name},
              {"ph", "i"},
              {"s", "t"},
              {"ts", Micros(at)},
              {"pid", process_id_},
              {"tid", thread},
              {"args", {{"detail", detail}}}}));
}

absl::Status TraceWriter::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

void TraceWriter::Write(const std::string& line) {
  absl::MutexLock lock(&mu_);
  if (!status_.ok()) return;
  if (std::fputs(line.c_str(), file_) < 0 || std::fflush(file_) != 0) {
    status_ = absl::DataLossError(absl::StrCat("cannot write trace: ", std::strerror(errno)));
  }
}

absl::StatusOr<std::unique_ptr<TraceWriter>> OpenRoleTrace(
    int trace_steps, const std::string& trace_dir, const std::string& file, int process_id,
    const std::string& process_name, const std::vector<std::string>& thread_names,
    const Clock& clock) {
  if (trace_steps == 0) return nullptr;
  return TraceWriter::Open(absl::StrCat(trace_dir, "/", file, ".jsonl"), process_id, process_name,
                           thread_names, clock);
}

absl::StatusOr<size_t> MergeTraces(const std::string& dir, const std::string& out) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (absl::EndsWith(entry.path().string(), ".jsonl")) files.push_back(entry.path().string());
  }
  if (files.empty()) return 0;
  std::sort(files.begin(), files.end());
  std::string text = "{\"traceEvents\": [\n";
  size_t events = 0;
  for (const std::string& file : files) {
    std::ifstream in(file);
    std::string line;
    // A restarted role names its process and threads again, in the same words: once is enough.
    std::set<std::string> metadata;
    while (std::getline(in, line)) {
      // Whole events only: not a line still being written, nor one a crash cut short.
      if (in.eof() || !Json::accept(line)) continue;
      if (absl::StrContains(line, R"("ph":"M")") && !metadata.insert(line).second) continue;
      absl::StrAppend(&text, events == 0 ? "" : ",\n", line);
      ++events;
    }
  }
  text += "\n]}\n";
  MONSOON_RETURN_IF_ERROR(WriteFileAtomically(out, text));
  return events;
}

}  // namespace monsoon
