// Typed metrics rows: written and read back by their one list of columns; a file without a
// column is an error naming it, never a silent 0.
#include "core/metrics/metrics.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <iterator>

#include "tests/test_util.h"

namespace monsoon {

struct TestRow {
  double step = 0;
  double loss = 0;
};

template <>
struct MetricsSchema<TestRow> {
  static constexpr MetricsColumn<TestRow> kColumns[] = {{"step", &TestRow::step},
                                                        {"loss", &TestRow::loss}};
};

namespace {

TEST_CASE("Metrics rows: a struct written is the struct read back", "[core][metrics]") {
  const std::string path = TempPath("typed.csv");
  CHECK(ColumnNames<TestRow>() == std::vector<std::string>{"step", "loss"});
  {
    auto writer = CsvMetricsWriter::Create(path, ColumnNames<TestRow>());
    REQUIRE(writer.ok());
    REQUIRE((*writer)->Append(RowValues(TestRow{1, 0.5})).ok());
    REQUIRE((*writer)->Append(RowValues(TestRow{2, 0.25})).ok());
  }
  auto rows = ReadRows<TestRow>(path);
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 2);
  CHECK((*rows)[1].step == 2);
  CHECK((*rows)[1].loss == 0.25);
  auto last = ReadLastRow<TestRow>(path);
  REQUIRE(last.ok());
  REQUIRE(last->has_value());
  CHECK((*last)->loss == 0.25);
  auto none = ReadLastRow<TestRow>(TempPath("no_such_file.csv"));
  REQUIRE(none.ok());
  CHECK(!none->has_value());
}

TEST_CASE("Metrics files: a continued file loses its torn row and the steps to be replayed",
          "[core][metrics]") {
  const std::string path = TempPath("continued.csv");
  std::ofstream(path) << "step,loss\n1,0.5\n2,0.4\n3,0.3\n4,0.2\n5,0.";  // torn by a kill
  {
    auto writer = CsvMetricsWriter::Create(path, ColumnNames<TestRow>(), /*last_step=*/2);
    REQUIRE(writer.ok());
    CHECK((*writer)->continued_from().Find("loss") == 0.4);
    REQUIRE((*writer)->Append(RowValues(TestRow{3, 0.35})).ok());  // the replayed step 3
  }
  auto rows = ReadRows<TestRow>(path);
  REQUIRE(rows.ok());
  std::vector<double> steps;
  for (const TestRow& r : *rows) steps.push_back(r.step);
  CHECK(steps == std::vector<double>{1, 2, 3});  // each step once
  CHECK(rows->back().loss == 0.35);
  // Without last_step only the torn row goes.
  std::ofstream(path) << "step,loss\n1,0.5\n2,0.4\n3,0.";
  auto writer = CsvMetricsWriter::Create(path, ColumnNames<TestRow>());
  REQUIRE(writer.ok());
  CHECK((*writer)->continued_from().Find("step") == 2);
}

TEST_CASE("Metrics rows: a missing column is NotFound naming it", "[core][metrics]") {
  const std::string path = TempPath("renamed.csv");
  std::ofstream(path) << "step,losses\n1,0.5\n";
  const auto last = ReadLastRow<TestRow>(path);
  CHECK(absl::IsNotFound(last.status()));
  CHECK(last.status().message() == path + " has no column 'loss'");
  CHECK(absl::IsNotFound(ReadRows<TestRow>(path).status()));
}

}  // namespace
TEST_CASE("Event files: TFRecord checksums, and a file per writer mirroring the CSV rows",
          "[core][metrics]") {
  // CRC-32C("123456789") is 0xe3069283 (RFC 3720's check value); masked as TFRecord does.
  CHECK(MaskedCrc32c("123456789", 9) == 0xc78ab0e5u);
  const std::string dir = TempPath("events");
  auto metrics = CsvMetricsWriter::Create(TempPath("mirrored.csv"), {"step", "loss"});
  REQUIRE(metrics.ok());
  auto events = EventFileWriter::Create(dir);
  REQUIRE(events.ok());
  const std::string path = (*events)->path();
  (*metrics)->MirrorTo(*std::move(events), "step");
  REQUIRE((*metrics)->Append({1, 0.5}).ok());
  REQUIRE((*metrics)->Append({2, 0.25}).ok());
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Three records (the version event, two rows), each framed by its length and checksums.
  size_t at = 0, records = 0;
  while (at + 12 <= bytes.size()) {
    uint64_t length = 0;
    std::memcpy(&length, bytes.data() + at, 8);
    uint32_t length_crc = 0, data_crc = 0;
    std::memcpy(&length_crc, bytes.data() + at + 8, 4);
    CHECK(length_crc == MaskedCrc32c(bytes.data() + at, 8));
    REQUIRE(at + 16 + length <= bytes.size());
    std::memcpy(&data_crc, bytes.data() + at + 12 + length, 4);
    CHECK(data_crc == MaskedCrc32c(bytes.data() + at + 12, length));
    if (records == 0)
      CHECK(bytes.substr(at + 12, length).find("brain.Event:2") != std::string::npos);
    if (records > 0) CHECK(bytes.substr(at + 12, length).find("loss") != std::string::npos);
    at += 16 + length;
    ++records;
  }
  CHECK(at == bytes.size());
  CHECK(records == 3);
}

}  // namespace monsoon
