// monsoon compare's reading of a finished variant's metrics (launcher/study).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "core/config/derived_values.h"
#include "launcher/study/study.h"
#include "launcher/study/study_report.h"
#include "launcher/study/study_results.h"
#include "tests/test_util.h"
#include "worker/worker_metrics.h"

namespace monsoon {
namespace {

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST_CASE("compare: each evaluation gets the bytes every worker had sent by its version",
          "[launcher][compare]") {
  RunDir run_dir{TempPath("variant")};
  std::filesystem::create_directories(run_dir.metrics_dir());
  const std::string m = run_dir.metrics_dir();
  // Files as the roles write them: every column of their rows.
  auto write_rows = [](const std::string& path, const auto& rows) {
    using Row = typename std::decay_t<decltype(rows)>::value_type;
    auto writer = CsvMetricsWriter::Create(path, ColumnNames<Row>());
    REQUIRE(writer.ok());
    for (const Row& row : rows) REQUIRE((*writer)->Append(RowValues(row)).ok());
  };
  const auto eval = [](double wall, double epoch, double accuracy, double loss) {
    EvaluatorMetricsRow row;
    row.wall_seconds = wall;
    row.global_step = 20 * epoch;
    row.epoch = epoch;
    row.test_accuracy = accuracy;
    row.test_loss = loss;
    return row;
  };
  write_rows(run_dir.evaluator_metrics_path(),
             std::vector<EvaluatorMetricsRow>{eval(0.5, 0, 0.1, 2.3), eval(2.0, 1, 0.7, 0.9),
                                              eval(4.0, 2, 0.8, 0.6)});
  const auto worker = [](double wall, double version, double sent, double samples, double comm) {
    WorkerMetricsRow row;
    row.wall_seconds = wall;
    row.version = version;
    row.bytes_sent = sent;
    row.samples_per_second = samples;
    row.comm_seconds = comm;
    return row;
  };
  // The evaluations scored versions 0, 20 and 40. Worker 0 computed on versions 0, 10, ..., 40;
  // worker 1 on 15 and 45. Their clocks say nothing about the evaluator's (each role's starts
  // after it has loaded its data): the versions pair them.
  write_rows(run_dir.worker_metrics_path(0),
             std::vector<WorkerMetricsRow>{worker(1, 0, 100, 10, 0.1), worker(2, 10, 200, 10, 0.2),
                                           worker(3, 20, 300, 10, 0.3), worker(4, 30, 400, 10, 0.4),
                                           worker(5, 40, 500, 10, 0.5)});
  write_rows(
      run_dir.worker_metrics_path(1),
      std::vector<WorkerMetricsRow>{worker(3, 15, 1000, 20, 1), worker(5, 45, 3000, 20, 2.5)});
  Write(m + "/staleness-server-0.csv", "staleness,pushes\n0,3\n1,1\n");
  Write(m + "/staleness-server-1.csv", "staleness,pushes\n0,95\n7,1\n");
  Write(run_dir.summary_path(), "{\"wall_seconds\": 6.5}\n");
  StudyVariant variant;
  variant.name = "v";
  variant.config.cluster.workers = 2;
  variant.config.cluster.servers = 2;
  auto r = ReadVariantResult(variant, run_dir, 0.75);
  REQUIRE(r.ok());
  CHECK(r->curve_seconds == std::vector<double>{0.5, 2.0, 4.0});
  CHECK(r->curve_bytes == std::vector<double>{100, 1300, 1500});
  CHECK(r->wall_seconds == 6.5);  // the job's, not the evaluator's last row
  CHECK(r->bytes_sent == 3500);
  CHECK(r->samples_per_second == 30);
  CHECK(r->comm_share == Approx(0.5 * (0.5 / 5 + 2.5 / 5)));
  CHECK(r->time_to_target == 4.0);
  // Both servers' pushes: 98 at staleness 0, 1 at 1, 1 at 7.
  CHECK(r->mean_staleness == Approx(0.08));
  CHECK(r->p99_staleness == 1);
}

// A new directory `name` with a base job, base.yaml: an MLP regression on 'train: one.csv'
// (its name a string YAML must keep quoted), without a test set.
std::string StudyDir(const std::string& name) {
  const std::string dir = TempPath(name);
  std::filesystem::create_directories(dir);
  Write(dir + "/train: one.csv", "x,y\n0,1\n1,3\n2,5\n");
  Write(dir + "/base.yaml",
        "job: base\n"
        "model: {type: mlp, input_dim: 1, output_dim: 1, loss: mean_squared_error}\n"
        "data: {format: csv, train: 'train: one.csv'}\n"
        "training: {epochs: 3}\n");
  return dir;
}

// Writes `text` as DIR/study.yaml and loads it.
absl::StatusOr<Study> LoadWritten(const std::string& dir, const std::string& text) {
  Write(dir + "/study.yaml", text);
  return LoadStudy(dir + "/study.yaml");
}

TEST_CASE("compare: a study's overrides reach each variant's config as written",
          "[launcher][compare]") {
  const std::string dir = StudyDir("study");
  // A list value, and a string that YAML must keep quoted (its ": " would read as a mapping).
  auto study = LoadWritten(
      dir,
      "study: s\n"
      "base: base.yaml\n"
      "set: {training.epochs: 5}\n"
      "variants:\n"
      "  - name: deep\n"
      "    set: {model.hidden: [8, 4], data.test: 'train: one.csv'}\n"
      "  - name: wide\n"
      "    set: {model.hidden: [64], training.algorithm: sync, data.test: 'train: one.csv'}\n");
  INFO(study.status().ToString());
  REQUIRE(study.ok());
  REQUIRE(study->variants.size() == 2);
  // The legend names what else differs: the model and the test set, not the algorithm's knobs.
  CHECK(study->variants[0].differs == "model.hidden=[8, 4]");
  CHECK(study->variants[1].differs == "model.hidden=[64]");
  CHECK_THAT(VariantLabel(study->variants[1]), Catch::EndsWith(" workers=1 model.hidden=[64]"));
  const JobConfig& config = study->variants[0].config;
  CHECK(config.training.epochs == 5);
  CHECK(config.model.hidden == std::vector<int>{8, 4});
  CHECK(config.data.test == dir + "/train: one.csv");

  SECTION("a key without a value is named") {
    Write(dir + "/study.yaml",
          "base: base.yaml\nvariants:\n  - name: a\n    set: {training.epochs: }\n");
    auto bad = LoadStudy(dir + "/study.yaml");
    REQUIRE_FALSE(bad.ok());
    CHECK_THAT(
        std::string(bad.status().message()),
        Catch::EndsWith("study.yaml: variants[0].set.training.epochs: no value (leave the key out "
                        "for the base job's)"));
  }
}

}  // namespace
}  // namespace monsoon

namespace monsoon {
namespace {

TEST_CASE("compare: a sweep over list values names each variant apart, readably",
          "[launcher][compare]") {
  const std::string dir = StudyDir("sweep-lists");
  auto study = LoadWritten(dir,
                           "base: base.yaml\n"
                           "set: {cluster.evaluator: false}\n"
                           "variants: [{name: a}]\n"
                           "sweep:\n"
                           "  model.hidden: [[1, 28], [12, 8], [128]]\n"
                           "  optimizer.learning_rate: [0.1, '0.1']\n");
  INFO(study.status().ToString());
  REQUIRE(study.ok());
  std::vector<std::string> names;
  for (const StudyVariant& v : study->variants) names.push_back(v.name);
  CHECK(names == std::vector<std::string>{
                     "a-hidden1x28-learning_rate0.1", "a-hidden1x28-learning_rate0.1-2",
                     "a-hidden12x8-learning_rate0.1", "a-hidden12x8-learning_rate0.1-2",
                     "a-hidden128-learning_rate0.1", "a-hidden128-learning_rate0.1-2"});
  CHECK(study->variants[2].config.model.hidden == std::vector<int>{12, 8});
}

TEST_CASE("compare: a sweep runs every variant for each combination of its values",
          "[launcher][compare]") {
  const std::string dir = StudyDir("sweep");
  auto study = LoadWritten(dir,
                           "base: base.yaml\n"
                           "set: {cluster.workers: 2, cluster.evaluator: false}\n"
                           "variants: [{name: sync, set: {training.algorithm: sync}}, "
                           "{name: downpour}]\n"
                           "sweep:\n"
                           "  stragglers.probability: [0, 0.25]\n"
                           "  stragglers.slow_workers: [[], [1]]\n");
  INFO(study.status().ToString());
  REQUIRE(study.ok());
  std::vector<std::string> names;
  for (const StudyVariant& v : study->variants) names.push_back(v.name);
  CHECK(names == std::vector<std::string>{
                     "sync-probability0-slow_workers", "sync-probability0-slow_workers1",
                     "sync-probability0.25-slow_workers", "sync-probability0.25-slow_workers1",
                     "downpour-probability0-slow_workers", "downpour-probability0-slow_workers1",
                     "downpour-probability0.25-slow_workers",
                     "downpour-probability0.25-slow_workers1"});
  const JobConfig& last = study->variants.back().config;
  CHECK(last.training.algorithm == Algorithm::kDownpour);
  CHECK(last.stragglers.probability == 0.25);
  CHECK(last.stragglers.slow_workers == std::vector<int>{1});
  CHECK(study->variants[2].config.training.algorithm == Algorithm::kSync);
  // The first numeric swept field is the study's axis.
  CHECK(study->axis == "stragglers.probability");
  CHECK(study->variants[2].family == "sync");
  CHECK(study->variants[2].axis_value == 0.25);

  SECTION("the report plots each family against the axis") {
    std::vector<VariantResult> results;
    for (const StudyVariant& v : study->variants) {
      VariantResult r;
      r.name = v.name;
      r.final_accuracy = 0.8 - v.axis_value;
      r.time_to_target = v.family == "sync" ? 10 + 10 * v.axis_value : -1;
      r.mean_staleness = 4 * v.axis_value;
      r.p99_staleness = 8;
      results.push_back(r);
    }
    study->classification = true;
    REQUIRE(WriteComparison(*study, results, dir).ok());
    for (const char* name : {"accuracy", "time", "staleness"}) {
      std::ifstream in(absl::StrCat(dir, "/compare_by_probability_", name, ".svg"));
      const std::string svg((std::istreambuf_iterator<char>(in)), {});
      INFO(name);
      // One line per family (sync, downpour) per panel, two points each; downpour never
      // reached the target, so its line of times has none.
      size_t lines = 0, empty = 0;
      for (size_t at = svg.find("<polyline"); at != std::string::npos;
           at = svg.find("<polyline", at + 1)) {
        ++lines;
        empty += svg.compare(svg.find("points=", at), 9, "points=\"\"") == 0 ? 1 : 0;
      }
      CHECK(lines == (std::string(name) == "staleness" ? 4 : 2));
      CHECK(empty == (std::string(name) == "time" ? 1 : 0));
    }
  }

  SECTION("a sweep field without a list of values is named") {
    auto bad = LoadWritten(dir, "base: base.yaml\nvariants: [{name: a}]\nsweep: {easgd.tau: 4}\n");
    REQUIRE_FALSE(bad.ok());
    CHECK_THAT(std::string(bad.status().message()),
               Catch::EndsWith("sweep.easgd.tau: expected a non-empty list of values"));
  }
}

TEST_CASE("compare: the shipped straggler, scaling and network studies load", "[launcher][compare]") {
  auto stragglers = LoadStudy("configs/compare_stragglers.yaml");
  INFO(stragglers.status().ToString());
  REQUIRE(stragglers.ok());
  REQUIRE(stragglers->variants.size() == 12);
  CHECK(stragglers->variants[0].config.stragglers.slow_factor == 3);
  // Random stragglers for every algorithm of the slow-worker half.
  for (size_t i = 0; i < 6; ++i) {
    const JobConfig& slow = stragglers->variants[i].config;
    const JobConfig& random = stragglers->variants[i + 6].config;
    INFO(stragglers->variants[i + 6].name);
    CHECK(random.training.algorithm == slow.training.algorithm);
    CHECK(random.stragglers.probability == 0.1);
    CHECK(random.stragglers.slow_workers.empty());
  }
  auto scaling = LoadStudy("configs/compare_scaling.yaml");
  INFO(scaling.status().ToString());
  REQUIRE(scaling.ok());
  CHECK(scaling->variants.size() == 24);
  CHECK(scaling->axis == "cluster.workers");
  CHECK(scaling->variants[11].family == "downpour-lowmom");
  CHECK(scaling->variants[11].config.cluster.workers == 32);
  CHECK(EffectiveMomentum(scaling->variants[7].config) == Approx(0.4));  // 2 workers
  auto network = LoadStudy("configs/compare_network.yaml");
  INFO(network.status().ToString());
  REQUIRE(network.ok());
  std::vector<std::string> names;
  for (const StudyVariant& v : network->variants) {
    names.push_back(v.name);
    CHECK(v.config.network.hosts == HostsKind::kNamespaces);
  }
  CHECK(names == std::vector<std::string>{"tau1-link_mbit1000", "tau1-link_mbit10000",
                                          "tau4-link_mbit1000", "tau4-link_mbit10000",
                                          "tau16-link_mbit1000", "tau16-link_mbit10000"});
}

TEST_CASE("compare: the shipped CNN study loads, every variant a layer-list model",
          "[launcher][compare]") {
  auto study = LoadStudy("configs/compare_fmnist_cnn.yaml");
  INFO(study.status().ToString());
  REQUIRE(study.ok());
  REQUIRE(study->variants.size() == 4);
  for (const StudyVariant& v : study->variants) {
    INFO(v.name);
    CHECK(v.config.model.type == ModelType::kLayers);
    CHECK(v.differs.empty());  // the algorithms' knobs are all that differ
  }
}

TEST_CASE("compare: a failed variant has no figures, and its status stays on one line",
          "[launcher][compare]") {
  Study study;
  study.name = "s";
  VariantResult ok, failed;
  ok.name = "good";
  ok.status = "ok";
  ok.final_loss = 0.5;
  ok.curve_seconds = {1};
  ok.curve_accuracy = {0.8};
  failed.name = "bad";
  failed.status = "worker-1 exited with status 1 | oops";
  const std::string dir = TempPath("failed_variant");
  std::filesystem::create_directories(dir);
  REQUIRE(WriteComparison(study, {ok, failed}, dir).ok());
  std::ifstream md_in(dir + "/compare.md"), csv_in(dir + "/compare.csv");
  const std::string md((std::istreambuf_iterator<char>(md_in)), {});
  const std::string csv((std::istreambuf_iterator<char>(csv_in)), {});
  CHECK(md.find("| bad | 0 |  |  | — | — | — | — | — | — | — | — | — | — | — | worker-1 exited "
                "with status 1 \\| oops |\n") != std::string::npos);
  CHECK(csv.find("\nbad,,,worker-1 exited with status 1 | oops,,,,,,,,,,,,0\n") !=
        std::string::npos);
  CHECK(md.find("Over seeds") == std::string::npos);  // one run per variant
}

TEST_CASE("compare --seeds: each figure's median and range over a variant's runs",
          "[launcher][compare]") {
  Study study;
  study.name = "s";
  study.classification = true;
  std::vector<VariantResult> results;
  // sync reaches the target in 10, 12 and 20 s; downpour in 5, 8 and (seed 3) never.
  const auto run = [&](const char* name, uint64_t seed, double accuracy, double to_target) {
    VariantResult r;
    r.name = name;
    r.seed = seed;
    r.final_accuracy = accuracy;
    r.time_to_target = to_target;
    r.samples_per_second = 1000;
    r.wall_seconds = 30;
    r.curve_seconds = {1};
    r.curve_accuracy = {accuracy};
    results.push_back(r);
  };
  run("sync", 1, 0.86, 10);
  run("downpour", 1, 0.88, 5);
  run("sync", 2, 0.87, 12);
  run("downpour", 2, 0.89, 8);
  run("sync", 3, 0.90, 20);
  run("downpour", 3, 0.80, -1);
  const std::string dir = TempPath("seeds");
  std::filesystem::create_directories(dir);
  REQUIRE(WriteComparison(study, results, dir).ok());
  std::ifstream md_in(dir + "/compare.md");
  const std::string md((std::istreambuf_iterator<char>(md_in)), {});
  INFO(md);
  CHECK(md.find("2 variants of one job (6 runs)") != std::string::npos);
  CHECK(md.find("| sync | 3 of 3 | 0.8700 [0.8600, 0.9000] | 12.0 [10.0, 20.0] | 3 | "
                "1.00 [1.00, 1.00] | 1000 [1000, 1000] | 30.0 [30.0, 30.0] |") !=
        std::string::npos);
  // Speed-ups paired by seed: 10 / 5 and 12 / 8; seed 3 never reached the target.
  CHECK(md.find("| downpour | 3 of 3 | 0.8800 [0.8000, 0.8900] | 6.5 [5.0, 8.0] | 2 | "
                "1.75 [1.50, 2.00] |") != std::string::npos);
}

TEST_CASE("CsvField: a field with a comma, quote or line break is quoted, quotes doubled",
          "[launcher][compare]") {
  CHECK(CsvField("ok") == "ok");
  CHECK(CsvField("tau=4 alpha=0.45") == "tau=4 alpha=0.45");
  CHECK(CsvField("a,b") == "\"a,b\"");
  CHECK(CsvField("server 0: \"x\" lost") == "\"server 0: \"\"x\"\" lost\"");
  CHECK(CsvField("line\nbreak") == "\"line\nbreak\"");
}

TEST_CASE("LinePlot: panels share the y axis; each series is a polyline in its colour",
          "[launcher][plot]") {
  LinePlot plot;
  plot.title = "a <b> & c";
  plot.y_label = "test accuracy";
  plot.y_lo = 0.5;
  plot.y_hi = 1;
  plot.target = 0.8;
  plot.legend = {"sync", "easgd"};
  // easgd diverged at x = 20 in panel 0: a cross there.
  plot.panels = {{"wall time (s)", {{{0, 10}, {0.5, 0.9}, {}}, {{0, 20}, {0.5, 0.7}, {20}}}},
                 {"epochs", {{{0, 1}, {0.5, 0.9}, {}}, {{0, 1}, {0.5, 0.7}, {}}}}};
  const std::string svg = plot.ToSvg();
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1160\"", 0) == 0);
  CHECK(svg.find("a &lt;b&gt; &amp; c") != std::string::npos);
  int polylines = 0;
  for (size_t at = svg.find("<polyline"); at != std::string::npos;
       at = svg.find("<polyline", at + 1)) {
    ++polylines;
  }
  CHECK(polylines == 4);
  // Panel 0's x axis runs to 20: the sync series ends at x = 10, halfway across (80 + 220),
  // at y = 0.9 (50 + 330 * 0.2 = 116).
  CHECK(svg.find("points=\"80.0,380.0 300.0,116.0\"") != std::string::npos);
  CHECK(svg.find("target 0.8") != std::string::npos);
  CHECK(svg.find(">sync</text>") != std::string::npos);
  CHECK(svg.find("<text x=\"520.0\" y=\"64.0\" text-anchor=\"middle\" font-size=\"18\" "
                 "fill=\"") != std::string::npos);
  CHECK(TickStep(20, 6) == 5);
  CHECK(TickStep(0.5, 6) == Approx(0.1));
}

}  // namespace
}  // namespace monsoon
