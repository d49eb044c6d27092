#include "core/metrics/trace.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "core/run/run_dir.h"
#include "tests/test_util.h"

namespace monsoon {
namespace {

std::string Contents(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string FreshDir(const std::string& name) {
  const std::string dir = TempPath(name);
  std::filesystem::remove_all(dir);
  return dir;
}

TEST_CASE("TraceWriter: names the process and threads, then one event per line", "[core][trace]") {
  const std::string dir = FreshDir("trace_events");
  const std::string path = dir + "/worker-3.jsonl";  // the directory is created
  const absl::Time t0 = absl::FromUnixMicros(1700000000000000);
  {
    auto trace = TraceWriter::Open(path, kTraceWorkerPid + 3, "worker 3", {"loop", "overlap"});
    REQUIRE(trace.ok());
    (*trace)->Span(0, "compute", t0, t0 + absl::Microseconds(1500), {{"step", 7}});
    (*trace)->Instant(1, "peer", t0 + absl::Seconds(1), "worker 1 (\"x\") lost\n");
    REQUIRE((*trace)->status().ok());
  }
  const std::vector<std::string> lines = absl::StrSplit(Contents(path), '\n', absl::SkipEmpty());
  REQUIRE(lines.size() == 5);
  using Json = nlohmann::json;
  CHECK(Json::parse(lines[0]) == Json::parse(R"({"name":"process_name","ph":"M","pid":1003,)"
                                             R"("tid":0,"args":{"name":"worker 3"}})"));
  CHECK(Json::parse(lines[1]) == Json::parse(R"({"name":"thread_name","ph":"M","pid":1003,)"
                                             R"("tid":0,"args":{"name":"loop"}})"));
  CHECK(Json::parse(lines[2]) == Json::parse(R"({"name":"thread_name","ph":"M","pid":1003,)"
                                             R"("tid":1,"args":{"name":"overlap"}})"));
  CHECK(Json::parse(lines[3]) ==
        Json::parse(R"({"name":"compute","ph":"X","ts":1700000000000000.000,"dur":1500.000,)"
                    R"("pid":1003,"tid":0,"args":{"step":7}})"));
  CHECK(Json::parse(lines[4]) ==
        Json::parse(R"({"name":"peer","ph":"i","s":"t","ts":1700000001000000.000,"pid":1003,)"
                    R"("tid":1,"args":{"detail":"worker 1 (\"x\") lost\n"}})"));
}

TEST_CASE("MergeTraces: joins whole events of every role; a restarted role continues its file",
          "[core][trace]") {
  const std::string dir = FreshDir("trace_merge");
  const absl::Time t0 = absl::FromUnixMicros(1700000000000000);
  CHECK(*MergeTraces(dir, dir + "/trace.json") == 0);  // no trace: nothing written
  CHECK(!std::filesystem::exists(dir + "/trace.json"));
  {
    auto server = TraceWriter::Open(dir + "/server-0.jsonl", kTraceServerPid, "server 0", {"s"});
    REQUIRE(server.ok());
    (*server)->Span(0, "checkpoint", t0, t0 + absl::Milliseconds(3));
  }
  {
    auto worker = TraceWriter::Open(dir + "/worker-0.jsonl", kTraceWorkerPid, "worker 0", {"l"});
    REQUIRE(worker.ok());
    (*worker)->Span(0, "pull", t0, t0 + absl::Milliseconds(1));
  }
  // The worker dies in the middle of a line; its restart appends after ending that line.
  std::ofstream(dir + "/worker-0.jsonl", std::ios::app) << R"({"name":"push","ph":"X","ts":17)";
  {
    auto worker = TraceWriter::Open(dir + "/worker-0.jsonl", kTraceWorkerPid, "worker 0", {"l"});
    REQUIRE(worker.ok());
    (*worker)->Span(0, "pull", t0 + absl::Seconds(5), t0 + absl::Seconds(6));
  }
  // A line still being written (no newline yet) is left out too.
  std::ofstream(dir + "/evaluator.jsonl") << R"({"name":"process_name","ph":"M"})"
                                          << "\n"
                                          << R"({"name":"pull weights","ph":"X")";
  std::ofstream(dir + "/notes.txt") << "not a trace\n";

  auto merged = MergeTraces(dir, dir + "/trace.json");
  REQUIRE(merged.ok());
  // server: 2 metadata + 1; worker: 2 + 1, then 1 (its metadata once); evaluator: 1.
  CHECK(*merged == 8);
  const std::string text = Contents(dir + "/trace.json");
  CHECK(absl::StartsWith(text, "{\"traceEvents\": [\n"));
  CHECK(absl::EndsWith(text, "\n]}\n"));
  CHECK(!absl::StrContains(text, "\"ts\":17\n"));
  CHECK(!absl::StrContains(text, "pull weights"));
  CHECK(!absl::StrContains(text, "not a trace"));
  // The worker's process name, written by both of its processes, is in once.
  const std::string worker_name = R"("args":{"name":"worker 0"})";
  CHECK(text.find(worker_name) != std::string::npos);
  CHECK(text.find(worker_name) == text.rfind(worker_name));
  const std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  REQUIRE(lines.size() == 10);  // the brackets, and one event a line
  for (size_t i = 1; i + 1 < lines.size(); ++i) {
    CHECK(lines[i].front() == '{');
    CHECK(absl::EndsWith(lines[i], i + 2 < lines.size() ? "}," : "}"));
  }
}

}  // namespace
}  // namespace monsoon
