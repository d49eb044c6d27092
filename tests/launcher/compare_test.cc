// monsoon compare's reading of a finished variant's metrics (launcher/compare).
#include "launcher/compare.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "tests/test_util.h"

namespace monsoon {
namespace {

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST_CASE("compare: each evaluation gets the bytes every worker had sent by its time",
          "[launcher][compare]") {
  RunDir run_dir{TempPath("variant")};
  std::filesystem::create_directories(run_dir.metrics_dir());
  const std::string m = run_dir.metrics_dir();
  Write(m + "/evaluator.csv",
        "wall_seconds,epoch,test_accuracy,test_loss\n"
        "0.5,0,0.1,2.3\n"
        "2.0,1,0.7,0.9\n"
        "4.0,2,0.8,0.6\n");
  // Worker 0 sends 100 bytes a second from t = 1; worker 1 only at t = 3 and t = 5.
  Write(m + "/worker-0.csv",
        "wall_seconds,bytes_sent,samples_per_second,comm_seconds\n"
        "1,100,10,0.1\n"
        "2,200,10,0.2\n"
        "3,300,10,0.3\n"
        "4,400,10,0.4\n"
        "5,500,10,0.5\n");
  Write(m + "/worker-1.csv",
        "wall_seconds,bytes_sent,samples_per_second,comm_seconds\n"
        "3,1000,20,1\n"
        "5,3000,20,2.5\n");
  Write(m + "/staleness-server-0.csv", "staleness,pushes\n0,3\n1,1\n");
  StudyVariant variant;
  variant.name = "v";
  variant.config.cluster.workers = 2;
  variant.config.cluster.servers = 1;
  auto r = ReadVariantResult(variant, run_dir, 0.75);
  REQUIRE(r.ok());
  CHECK(r->curve_seconds == std::vector<double>{0.5, 2.0, 4.0});
  CHECK(r->curve_bytes == std::vector<double>{0, 200, 1400});
  CHECK(r->bytes_sent == 3500);
  CHECK(r->samples_per_second == 30);
  CHECK(r->comm_share == Approx(0.5 * (0.5 / 5 + 2.5 / 5)));
  CHECK(r->time_to_target == 4.0);
  CHECK(r->mean_staleness == 0.25);
}

TEST_CASE("compare: a study's overrides reach each variant's config as written",
          "[launcher][compare]") {
  const std::string dir = TempPath("study");
  std::filesystem::create_directories(dir);
  Write(dir + "/train: one.csv", "x,y\n0,1\n1,3\n2,5\n");
  Write(dir + "/base.yaml",
        "job: base\n"
        "model: {type: mlp, input_dim: 1, output_dim: 1, loss: mean_squared_error}\n"
        "data: {format: csv, train: 'train: one.csv'}\n"
        "training: {epochs: 3}\n");
  // A list value, and a string that YAML must keep quoted (its ": " would read as a mapping).
  Write(dir + "/study.yaml",
        "study: s\n"
        "base: base.yaml\n"
        "set: {training.epochs: 5}\n"
        "variants:\n"
        "  - name: deep\n"
        "    set: {model.hidden: [8, 4], data.test: 'train: one.csv'}\n");
  auto study = LoadStudy(dir + "/study.yaml");
  INFO(study.status().ToString());
  REQUIRE(study.ok());
  REQUIRE(study->variants.size() == 1);
  const JobConfig& config = study->variants[0].config;
  CHECK(config.training.epochs == 5);
  CHECK(config.model.hidden == std::vector<int>{8, 4});
  CHECK(config.data.test == dir + "/train: one.csv");

  SECTION("a key without a value is named") {
    Write(dir + "/study.yaml",
          "base: base.yaml\nvariants:\n  - name: a\n    set: {training.epochs: }\n");
    auto bad = LoadStudy(dir + "/study.yaml");
    REQUIRE_FALSE(bad.ok());
    CHECK_THAT(std::string(bad.status().message()),
               Catch::EndsWith(
                   "study.yaml: variants[0].set.training.epochs: no value (leave the key out "
                   "for the base job's)"));
  }
}

}  // namespace
}  // namespace monsoon
