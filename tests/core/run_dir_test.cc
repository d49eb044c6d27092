#include "core/run/run_dir.h"

#include <sys/stat.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/metrics/metrics.h"
#include "core/run/job_secrets.h"
#include "tests/test_util.h"

namespace monsoon {
namespace {

RunDir FreshRunDir(const std::string& name) {
  RunDir dir{TempPath(name)};
  std::filesystem::remove_all(dir.root);
  REQUIRE(dir.Create().ok());
  return dir;
}

TEST_CASE("Job token: created with mode 0600 and read back; a readable token is refused",
          "[core][run_dir]") {
  const RunDir dir = FreshRunDir("token_run");
  auto token = CreateJobToken(dir);
  REQUIRE(token.ok());
  CHECK(token->size() == 64);
  struct stat st;
  REQUIRE(stat(dir.token_path().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(*ReadJobToken(dir) == *token);
  chmod(dir.token_path().c_str(), 0644);
  CHECK(absl::IsPermissionDenied(ReadJobToken(dir).status()));
  CHECK(std::string(ReadJobToken(dir).status().message()).find("(mode 0644); it must be 0600") !=
        std::string::npos);
  CHECK(*CreateJobToken(dir) != *token);
}

TEST_CASE("Job token: an empty or short token file is refused", "[core][run_dir]") {
  const RunDir dir = FreshRunDir("short_token");
  for (const std::string text : {"", "\n", "0123456789abcde\n"}) {
    REQUIRE(WriteFileAtomically(dir.token_path(), text, 0600).ok());
    const absl::Status status = ReadJobToken(dir).status();
    CHECK(absl::IsInvalidArgument(status));
    CHECK(std::string(status.message()).find("a job token needs at least 16") != std::string::npos);
  }
}

TEST_CASE("Rendezvous: waits for every server's published address", "[core][run_dir]") {
  const RunDir dir = FreshRunDir("rdv_run");
  std::thread publisher([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK(PublishServerAddress(dir, 1, "127.0.0.1:5001").ok());
    CHECK(PublishServerAddress(dir, 0, "127.0.0.1:5000").ok());
  });
  auto addresses = WaitForServerAddresses(dir, 2, absl::Seconds(10), nullptr);
  publisher.join();
  REQUIRE(addresses.ok());
  CHECK(*addresses == std::vector<std::string>{"127.0.0.1:5000", "127.0.0.1:5001"});
}

TEST_CASE("Rendezvous: the deadline error names the missing servers; stop cancels",
          "[core][run_dir]") {
  const RunDir dir = FreshRunDir("rdv_missing");
  REQUIRE(PublishServerAddress(dir, 1, "127.0.0.1:5001").ok());
  auto result = WaitForServerAddresses(dir, 3, absl::Milliseconds(300), nullptr);
  REQUIRE(absl::IsDeadlineExceeded(result.status()));
  CHECK(std::string(result.status().message()).find("server(s) 0, 2 have not published") !=
        std::string::npos);
  std::atomic<bool> stop{true};
  CHECK(absl::IsCancelled(WaitForServerAddresses(dir, 3, absl::Seconds(30), &stop).status()));
}

TEST_CASE("CsvMetricsWriter: rows are readable as they are written", "[core][metrics]") {
  const std::string path = TempPath("m.csv");
  auto writer = CsvMetricsWriter::Create(path, {"step", "bytes"});
  REQUIRE(writer.ok());
  CHECK(ReadLastCsvRow(path).empty());
  REQUIRE((*writer)->Append({1, 123456789012.0}).ok());
  REQUIRE((*writer)->Append({2, 5}).ok());
  const MetricsRow row = ReadLastCsvRow(path);
  REQUIRE(row.values.size() == 2);
  CHECK(row.Find("step") == 2);
  CHECK(row.Find("bytes") == 5);
  CHECK(!row.Find("no such column").has_value());
  CHECK(absl::IsInternal((*writer)->Append({1})));
  REQUIRE((*writer)->Append({3, 123456789012.0}).ok());
  CHECK(ReadLastCsvRow(path).Find("bytes") == 123456789012.0);
  CHECK((*writer)->continued_from().empty());  // it started the file
}

TEST_CASE("CsvMetricsWriter: a restarted role continues its file from its last complete row",
          "[core][metrics]") {
  const std::string path = TempPath("continued.csv");
  {
    auto first = CsvMetricsWriter::Create(path, {"step", "bytes"});
    REQUIRE(first.ok());
    CHECK((*first)->continued_from().empty());
  }
  {
    auto header_only = CsvMetricsWriter::Create(path, {"step", "bytes"});
    REQUIRE(header_only.ok());
    CHECK((*header_only)->continued_from().empty());  // no row yet
    REQUIRE((*header_only)->Append({1, 10}).ok());
    REQUIRE((*header_only)->Append({2, 20}).ok());
  }
  std::ofstream(path, std::ios::app) << "3,3";  // a row torn by a kill
  {
    auto restarted = CsvMetricsWriter::Create(path, {"step", "bytes"});
    REQUIRE(restarted.ok());
    CHECK((*restarted)->continued_from().Find("step") == 2);
    CHECK((*restarted)->continued_from().Find("bytes") == 20);
    REQUIRE((*restarted)->Append({3, 30}).ok());
  }
  auto table = ReadCsvTable(path);
  REQUIRE(table.ok());
  CHECK(table->rows == std::vector<std::vector<double>>{{1, 10}, {2, 20}, {3, 30}});
  // Another header: the file is started again, and nothing is continued.
  auto other = CsvMetricsWriter::Create(path, {"step", "loss"});
  REQUIRE(other.ok());
  CHECK((*other)->continued_from().empty());
  CHECK(ReadLastCsvRow(path).empty());
}

}  // namespace
}  // namespace monsoon
