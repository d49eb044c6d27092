// Typed metrics rows: written and read back by their one list of columns; a file without a
// column is an error naming it, never a silent 0.
#include "core/metrics.h"

#include <catch2/catch.hpp>
#include <fstream>

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
}  // namespace monsoon
