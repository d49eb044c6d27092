// Chrome trace events: what each role did when, for chrome://tracing and ui.perfetto.dev.
// A role appends one event per line to its own file, RUN_DIR/trace/ROLE.jsonl, flushed as
// written (a killed process leaves whole lines behind); MergeTraces joins a run's files into
// RUN_DIR/trace.json ({"traceEvents": [...]}). Timestamps are microseconds since the Unix
// epoch, so roles on different hosts line up as well as their clocks do.
#ifndef MONSOON_CORE_METRICS_TRACE_H_
#define MONSOON_CORE_METRICS_TRACE_H_

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/clock.h"

namespace monsoon {

// Process ids in a job's trace: they order the roles in the viewer.
constexpr int kTraceServerPid = 1;     // + server index (0 is special to some viewers)
constexpr int kTraceWorkerPid = 1000;  // + worker index
constexpr int kTraceEvaluatorPid = 2000;

// Numeric details of an event, shown when it is selected in the viewer.
using TraceArgs = std::vector<std::pair<std::string, double>>;

// Thread-safe.
class TraceWriter {
 public:
  // Appends to `path` (a restarted role continues its own file), first naming the process
  // `process_name` and its threads: thread ids are indices into `thread_names`. Borrows
  // `clock`, the role's (TraceScope reads it).
  static absl::StatusOr<std::unique_ptr<TraceWriter>> Open(
      const std::string& path, int process_id, const std::string& process_name,
      const std::vector<std::string>& thread_names, const Clock& clock = Clock::System());
  ~TraceWriter();

  // The time on the role's clock.
  absl::Time Now() const { return clock_.Now(); }

  // Something that ran on `thread` from `start` to `end`.
  void Span(int thread, std::string_view name, absl::Time start, absl::Time end,
            const TraceArgs& args = {});
  // A moment on `thread`: a lost peer, say; `detail` is shown when it is selected.
  void Instant(int thread, std::string_view name, absl::Time at, std::string_view detail = "");

  // OK, or the first write that failed (the events after it were dropped).
  absl::Status status() const;

 private:
  TraceWriter(std::FILE* file, int process_id, const Clock& clock)
      : file_(file), process_id_(process_id), clock_(clock) {}
  void Write(const std::string& line);

  mutable absl::Mutex mu_;
  std::FILE* const file_;  // owned
  const int process_id_;
  const Clock& clock_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

// A span from construction to destruction on the trace's clock; nothing at all when `trace`
// is null.
class TraceScope {
 public:
  TraceScope(TraceWriter* trace, int thread, std::string_view name, TraceArgs args = {})
      : trace_(trace),
        thread_(thread),
        name_(name),
        args_(std::move(args)),
        start_(trace != nullptr ? trace->Now() : absl::InfinitePast()) {}
  ~TraceScope() {
    if (trace_ != nullptr) trace_->Span(thread_, name_, start_, trace_->Now(), args_);
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  TraceWriter* const trace_;
  const int thread_;
  const std::string_view name_;  // a literal: outlives the scope
  const TraceArgs args_;
  const absl::Time start_;
};

// Runs `call` and returns its result, traced as `name` (a literal) on `thread`.
template <typename Call>
auto Traced(TraceWriter* trace, int thread, std::string_view name, Call call) -> decltype(call()) {
  TraceScope span(trace, thread, name);
  return call();
}

// A role's trace, `trace_dir`/`file`.jsonl (process `process_id`, named `process_name`), or
// null when the job writes none (`trace_steps`, the job's trace.steps, is 0).
absl::StatusOr<std::unique_ptr<TraceWriter>> OpenRoleTrace(
    int trace_steps, const std::string& trace_dir, const std::string& file, int process_id,
    const std::string& process_name, const std::vector<std::string>& thread_names,
    const Clock& clock = Clock::System());

// Joins every complete event line of `dir`/*.jsonl (in file-name order) into `out`, written
// atomically; returns how many events it holds. Writes nothing, and returns 0, when `dir`
// holds no trace.
absl::StatusOr<size_t> MergeTraces(const std::string& dir, const std::string& out);

}  // namespace monsoon

#endif  // MONSOON_CORE_METRICS_TRACE_H_
