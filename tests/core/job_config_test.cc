#include "core/config/job_config.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/config/config_reader.h"
#include "core/config/config_reference.h"
#include "core/config/config_validation.h"
#include "core/config/config_writer.h"
#include "core/config/derived_values.h"
#include "core/job/input_shape.h"
#include "core/model/model.h"
#include "tests/test_util.h"

namespace monsoon {
namespace {

// A minimal valid CSV job; data files are created next to the YAML.
std::string CsvJob(const std::string& extra = "") {
  std::ofstream(TempPath("train.csv")) << "x,y\n1,2\n";
  std::ofstream(TempPath("test.csv")) << "x,y\n1,2\n";
  return "job: t\nmodel:\n  type: linear_regression\n  input_dim: 1\n  output_dim: 1\n"
         "data:\n  format: csv\n  train: train.csv\n  test: test.csv\n" +
         extra;
}

std::string ErrorOf(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  auto config = ParseJobConfig(yaml, TempPath(""), sets);
  return config.ok() ? "" : std::string(config.status().message());
}

// A CSV job whose model is `model` (the YAML of the model section's body).
std::string CsvJobWithModel(const std::string& model) {
  std::ofstream(TempPath("train4.csv")) << "a,b,c,d,label\n1,2,3,4,0\n5,6,7,8,1\n";
  return "job: t\nmodel:\n" + model +
         "data:\n  format: csv\n  train: train4.csv\n  test: train4.csv\n";
}

TEST_CASE("JobConfig: a model as a list of layers, shapes inferred, misfits named",
          "[core][config][model]") {
  const std::string layers =
      "  input_shape: [1, 2, 2]\n"
      "  layers:\n    - flatten\n    - dense: {units: 8}\n    - tanh\n    - dense: {units: 2}\n";
  auto config = ParseJobConfig(CsvJobWithModel(layers), TempPath(""));
  INFO(config.status().ToString());
  REQUIRE(config.ok());
  const ModelSpec& m = config->model;
  CHECK(m.type == ModelType::kLayers);
  CHECK(m.input_dim == 4);
  CHECK(m.output_dim == 2);  // the last layer's
  CHECK(m.layers == std::vector<LayerSpec>{{LayerKind::kFlatten, 0},
                                           {LayerKind::kDense, 8},
                                           {LayerKind::kTanh, 0},
                                           {LayerKind::kDense, 2}});
  // The resolved YAML reads back to the same model.
  auto again = ParseJobConfig(JobConfigToYaml(*config), "/");
  REQUIRE(again.ok());
  CHECK(again->model.layers == m.layers);
  CHECK(Model::NumParams(m) == 4 * 8 + 8 + 8 * 2 + 2);
  // Each misfit is one line naming the layer.
  const auto error = [&](const std::string& model) { return ErrorOf(CsvJobWithModel(model)); };
  CHECK(error("  input_shape: [1, 2, 2]\n  layers: [dense: {units: 2}]\n") ==
        "model.layers[0] (dense): takes a flat input, got (1, 2, 2); put a flatten before it");
  CHECK(error("  input_dim: 4\n  layers: [dense: {units: 2, size: 3}]\n") ==
        "model.layers[0].dense.size: unknown setting (allowed: units)");
  CHECK(error("  input_dim: 4\n  layers: [dense]\n") ==
        "model.layers[0].dense: needs {units: ...}");
  CHECK(error("  input_dim: 4\n  layers: [flatten, relu: {x: 1}]\n") ==
        "model.layers[1].relu: takes no settings");
  CHECK(error("  input_dim: 4\n  layers: [dense: {units: 0}]\n") ==
        "model.layers[0].dense.units: expected an integer in [1, 16777216], got '0'");
  CHECK(error("  input_dim: 4\n  layers: [lstm]\n") ==
        "model.layers[0]: unknown layer 'lstm' (layers: dense, relu, tanh, sigmoid, leaky_relu, "
        "gelu, gelu_tanh, silu, flatten, conv2d, maxpool2d, avgpool2d, dropout, globalavgpool2d, "
        "batchnorm, residual)");
  CHECK(error("  input_dim: 4\n  output_dim: 3\n  layers: [dense: {units: 2}]\n") ==
        "model.output_dim is 3 but the last layer's output is (2)");
  CHECK(error("  input_shape: [2, 2]\n  input_dim: 5\n  layers: [flatten, dense: {units: 2}]\n") ==
        "model.input_dim is 5 but model.input_shape (2, 2) holds 4");
  CHECK(error("  type: mlp\n  input_dim: 4\n  output_dim: 2\n  layers: [dense: {units: 2}]\n") ==
        "model.layers: a layer list is the whole model; leave out model.type (mlp is a shorthand "
        "for a layer list)");
  CHECK(error("  type: layers\n  input_dim: 4\n  output_dim: 2\n") ==
        "model.type: layers needs the model.layers list");
}

TEST_CASE("JobConfig: the input shape is read from the data when the model does not give it",
          "[core][config][model]") {
  const std::string dir = "/usr/share/datasets/fashion-mnist/";
  const std::string idx =
      "job: t\ncluster: {evaluator: false}\nmodel:\n  layers: [flatten, dense: {units: 10}]\n"
      "data:\n  train_images: " +
      dir +
      "train-images-idx3-ubyte.gz\n"
      "  train_labels: " +
      dir + "train-labels-idx1-ubyte.gz\n";
  // Reading the file reads no data; resolving the shape reads the data's headers.
  auto config = ParseJobConfig(idx, TempPath(""));
  INFO(config.status().ToString());
  REQUIRE(config.ok());
  CHECK(config->model.input_shape_from_data);
  CHECK(config->model.input_dim == 0);
  REQUIRE(ResolveInputShape(&*config).ok());
  CHECK(!config->model.input_shape_from_data);
  CHECK(config->model.input_shape == std::vector<int>{1, 28, 28});
  CHECK(config->model.input_dim == 784);
  CHECK(config->model.output_dim == 10);
  // A given input_dim is the shape; a CSV file's shape is not guessed.
  std::string given = idx;
  given.insert(given.find("  layers"), "  input_dim: 784\n");
  auto flat = ParseJobConfig(given, "/");
  REQUIRE(flat.ok());
  CHECK(flat->model.input_shape.empty());
  CHECK(ErrorOf(CsvJobWithModel("  layers: [dense: {units: 2}]\n")) ==
        "model.input_dim: required (or model.input_shape)");
  std::ofstream(TempPath("bad-images.gz")) << "not idx";
  auto bad = ParseJobConfig(
      "job: t\ncluster: {evaluator: false}\nmodel:\n  layers: [dense: {units: 10}]\n"
      "data:\n  train_images: bad-images.gz\n  train_labels: bad-images.gz\n",
      TempPath(""));
  REQUIRE(bad.ok());
  CHECK(ResolveInputShape(&*bad).message() ==
        "model.input_shape: not given, and the training data's shape cannot be read: " +
            TempPath("bad-images.gz") +
            ": not an IDX image file (magic 0x6e6f7420; expected 0x00000803)");
}

TEST_CASE("JobConfig: convolution and pooling layers, their settings and misfits",
          "[core][config][model]") {
  std::ofstream(TempPath("image.csv")) << "p0,p1,p2,p3,p4,p5,p6,p7,p8,label\n"
                                       << "0,1,2,3,4,5,6,7,8,0\n1,1,1,1,1,1,1,1,1,1\n";
  const auto job = [](const std::string& layers) {
    return "job: t\nmodel:\n  input_shape: [1, 3, 3]\n  layers: " + layers +
           "\ndata:\n  format: csv\n  train: image.csv\n  test: image.csv\n";
  };
  auto config = ParseJobConfig(
      job("[conv2d: {filters: 4, kernel: 2, padding: same}, relu, maxpool2d: {size: 2, stride: "
          "1}, avgpool2d: {size: 2}, flatten, dense: {units: 2}]"),
      TempPath(""));
  INFO(config.status().ToString());
  REQUIRE(config.ok());
  const std::vector<LayerSpec>& layers = config->model.layers;
  REQUIRE(layers.size() == 6);
  CHECK(layers[0].kind == LayerKind::kConv2d);
  CHECK(layers[0].filters == 4);
  CHECK(layers[0].kernel == 2);
  CHECK(layers[0].stride == 1);  // the default
  CHECK(layers[0].padding == Padding::kSame);
  CHECK(layers[2].stride == 1);
  CHECK(layers[3].stride == 2);  // a pool's stride defaults to its size
  CHECK(LayerShapes(config->model)->at(3) == Shape{4, 1, 1});
  auto again = ParseJobConfig(JobConfigToYaml(*config), "/");
  REQUIRE(again.ok());
  CHECK(again->model.layers == layers);
  const auto error = [&](const std::string& layers) { return ErrorOf(job(layers)); };
  CHECK(error("[conv2d: {filters: 4}, flatten, dense: {units: 2}]") ==
        "model.layers[0].conv2d.kernel: required");
  CHECK(error("[conv2d: {filters: 4, kernel: 3, padding: full}, flatten, dense: {units: 2}]") ==
        "model.layers[0].conv2d.padding: 'full' is not allowed (allowed: valid, same)");
  CHECK(error("[conv2d: {filters: 4, kernel: 5}, flatten, dense: {units: 2}]") ==
        "model.layers[0] (conv2d): a 5x5 kernel does not fit its input (1, 3, 3) unpadded");
  CHECK(error("[maxpool2d: {size: 4}, flatten, dense: {units: 2}]") ==
        "model.layers[0] (maxpool2d): a 4x4 window does not fit its input (1, 3, 3)");
  CHECK(error("[flatten, conv2d: {filters: 1, kernel: 1}, dense: {units: 2}]") ==
        "model.layers[1] (conv2d): takes a (channels, height, width) input, got (9); give "
        "model.input_shape as [C, H, W]");
  CHECK(error("[conv2d: {filters: 2, kernel: 1}]") ==
        "model.layers: the model's output (2, 3, 3) is not flat; end with a dense layer of as "
        "many units as classes or targets");
  CHECK(error("[avgpool2d: {size: 2, units: 3}, flatten, dense: {units: 2}]") ==
        "model.layers[0].avgpool2d.units: unknown setting (allowed: size, stride)");
  CHECK(error("[flatten, dropout: {rate: 1}, dense: {units: 2}]") ==
        "model.layers[1].dropout.rate: expected a number in [0, 1), got '1'");
  CHECK(error("[flatten, globalavgpool2d, dense: {units: 2}]") ==
        "model.layers[1] (globalavgpool2d): takes a (channels, height, width) input, got (9); "
        "give model.input_shape as [C, H, W]");
  CHECK(error("[globalavgpool2d: {size: 3}, dense: {units: 2}]") ==
        "model.layers[0].globalavgpool2d: takes no settings");
  CHECK(error("[flatten, leaky_relu: {slope: 1}, dense: {units: 2}]") ==
        "model.layers[1].leaky_relu.slope: expected a number in [0, 1), got '1'");
  auto leaky = ParseJobConfig(job("[flatten, leaky_relu, dense: {units: 2}]"), TempPath(""));
  REQUIRE(leaky.ok());
  CHECK(leaky->model.layers[1].slope == 0.01);  // the default
  CHECK(JobConfigToYaml(*leaky).find("{leaky_relu: {slope: 0.01}}") != std::string::npos);
  auto global = ParseJobConfig(job("[conv2d: {filters: 5, kernel: 2}, globalavgpool2d, "
                                   "dense: {units: 2}]"),
                               TempPath(""));
  REQUIRE(global.ok());
  CHECK(LayerShapes(global->model)->at(1) == Shape{5});
  auto dropout =
      ParseJobConfig(job("[flatten, dropout: {rate: 0.25}, dense: {units: 2}]"), TempPath(""));
  REQUIRE(dropout.ok());
  CHECK(dropout->model.layers[1].rate == 0.25);
  CHECK(JobConfigToYaml(*dropout).find("{dropout: {rate: 0.25}}") != std::string::npos);
}

TEST_CASE("JobConfig: residual blocks nest a layer list, shapes and misfits named within",
          "[core][config][model]") {
  const auto job = [](const std::string& layers) {
    return CsvJobWithModel(absl::StrCat("  input_shape: [1, 3, 3]\n  layers: ", layers, "\n"));
  };
  const std::string blocks =
      "[residual: {layers: [conv2d: {filters: 1, kernel: 3, padding: same}, batchnorm]}, relu, "
      "residual: {shortcut: projection, layers: [conv2d: {filters: 4, kernel: 3, stride: 2, "
      "padding: same}]}, globalavgpool2d, dense: {units: 2}]";
  auto config = ParseJobConfig(job(blocks), TempPath(""));
  INFO(config.status().ToString());
  REQUIRE(config.ok());
  const std::vector<LayerSpec>& layers = config->model.layers;
  REQUIRE(layers.size() == 5);
  CHECK(layers[0].kind == LayerKind::kResidual);
  CHECK(layers[0].layers.size() == 2);
  CHECK(layers[0].shortcut == Shortcut::kIdentity);
  CHECK(layers[2].shortcut == Shortcut::kProjection);
  CHECK(LayerShapes(config->model)->at(2) == Shape{4, 2, 2});
  // conv 9 + 1, batchnorm 1 + 1 (and 2 state), conv 4 * 9 + 4, projection 4 + 4, dense 8 + 2.
  CHECK(Model::NumParams(config->model) == 10 + 2 + 2 + 40 + 8 + 10);
  auto again = ParseJobConfig(JobConfigToYaml(*config), "/");
  REQUIRE(again.ok());
  CHECK(again->model.layers == layers);
  const auto error = [&](const std::string& layers) { return ErrorOf(job(layers)); };
  CHECK(error("[residual: {layers: [conv2d: {filters: 2, kernel: 1}]}, flatten, "
              "dense: {units: 2}]") ==
        "model.layers[0] (residual): its layers turn (1, 3, 3) into (2, 3, 3), which an "
        "identity shortcut cannot add; use shortcut: projection");
  CHECK(error("[residual: {shortcut: projection, layers: [flatten]}, dense: {units: 2}]") ==
        "model.layers[0] (residual): no 1x1 projection with a stride turns (1, 3, 3) into (9) "
        "(the block's output)");
  CHECK(error("[residual: {layers: [dense: {units: 2}]}, flatten, dense: {units: 2}]") ==
        "model.layers[0] (residual): layers[0] (dense): takes a flat input, got (1, 3, 3); put "
        "a flatten before it");
  CHECK(error("[residual: {layers: [conv2d: {filters: 2}]}, flatten, dense: {units: 2}]") ==
        "model.layers[0].residual.layers[0].conv2d.kernel: required");
  CHECK(error("[residual: {layers: []}, flatten, dense: {units: 2}]") ==
        "model.layers[0].residual.layers: expected a non-empty list of layers, like [conv2d: "
        "{filters: 16, kernel: 3}]");
  CHECK(error("[residual, flatten, dense: {units: 2}]") ==
        "model.layers[0].residual: needs {layers: ...}");
  CHECK(error("[batchnorm: {momentum: 1}, flatten, dense: {units: 2}]") ==
        "model.layers[0].batchnorm.momentum: expected a number in [0, 1), got '1'");
  CHECK(error("[batchnorm: {epsilon: 0}, flatten, dense: {units: 2}]") ==
        "model.layers[0].batchnorm.epsilon: expected a number in [1e-12, 1), got '0'");
  CHECK(error("[batchnorm: {eps: 0.1}, flatten, dense: {units: 2}]") ==
        "model.layers[0].batchnorm.eps: unknown setting (allowed: momentum, epsilon)");
}

TEST_CASE("Layer kinds: each is declared once, and README's table has a row for each",
          "[core][config][model]") {
  const std::string table = LayerReferenceMarkdown();
  for (const NamedValue<LayerKind>& named : kLayerKindValues) {
    INFO(named.name);
    CHECK(DeclOf(named.value).kind == named.value);
    CHECK(table.find(absl::StrCat("| `", named.name, "` |")) != std::string::npos);
  }
  CHECK(table.find("| `conv2d` | `filters`, `kernel`, `stride` (1), `padding` (`valid` or "
                   "`same`; `valid`) |") != std::string::npos);
  CHECK(table.find("| `maxpool2d` | `size`, `stride` (`size`) |") != std::string::npos);
}

TEST_CASE("JobConfig: the shipped configs load", "[core][config]") {
  auto fmnist = LoadJobConfig("configs/fmnist_downpour.yaml");
  REQUIRE(fmnist.ok());
  CHECK(fmnist->cluster.servers == 2);
  CHECK(fmnist->cluster.workers == 2);
  CHECK(fmnist->model.hidden == std::vector<int>{256, 128});
  CHECK(fmnist->optimizer.type == OptimizerType::kMomentum);
  CHECK(fmnist->training.learning_rate_schedule == LearningRateSchedule::kCosine);
  auto linear = LoadJobConfig("configs/linear_regression.yaml");
  REQUIRE(linear.ok());
  CHECK(linear->model.loss == LossType::kMeanSquaredError);
  CHECK(linear->data.train.find("configs/data/linear_train.csv") != std::string::npos);
  auto cnn = LoadJobConfig("configs/fmnist_cnn.yaml");
  REQUIRE(cnn.ok());
  REQUIRE(ResolveInputShape(&*cnn).ok());
  CHECK(cnn->model.type == ModelType::kLayers);
  CHECK(Model::NumParams(cnn->model) == 421642);
}

TEST_CASE("JobConfig: errors name the field and the allowed values", "[core][config]") {
  CHECK(ErrorOf(CsvJob("training:\n  epoch: 3\n"))
            .rfind("training.epoch: unknown key (allowed: ", 0) == 0);
  CHECK(ErrorOf(CsvJob("training:\n  epochs: abc\n")) ==
        "training.epochs: expected an integer in [1, 100000], got 'abc'");
  CHECK(ErrorOf(CsvJob("optimizer:\n  type: rmsprop\n")) ==
        "optimizer.type: 'rmsprop' is not allowed (allowed: sgd, momentum, adagrad, adam)");
  CHECK(ErrorOf(CsvJob("cluster:\n  evaluator: maybe\n")) ==
        "cluster.evaluator: expected true or false, got 'maybe'");
  CHECK(ErrorOf(CsvJob("training:\n  learning_rate_schedule: step\n")) ==
        "training.learning_rate_schedule: 'step' is not allowed (allowed: constant, cosine)");
  CHECK(ErrorOf(CsvJob("optimizer:\n  learning_rate: -1\n")) ==
        "optimizer.learning_rate: expected a number in (0, 1000], got '-1'");
  CHECK(ErrorOf(CsvJob("bogus: 1\n")).rfind("bogus: unknown key", 0) == 0);
  CHECK(ErrorOf(CsvJob("cluster: [1, 2]\n")).rfind("cluster: expected a mapping", 0) == 0);
  CHECK(ErrorOf("job: [\n").rfind("YAML syntax error at line", 0) == 0);
}

TEST_CASE("JobConfig: compute.precision is tensor-core arithmetic on a GPU", "[core][config]") {
  for (const char* precision : {"fp32", "tf32", "bf16"}) {
    CHECK(ErrorOf(CsvJob(), {absl::StrCat("compute.precision=", precision)}).empty());
  }
  CHECK(ErrorOf(CsvJob(), {"compute.precision=bf16", "compute.device=cpu"}) ==
        "compute.precision: bf16 is tensor-core arithmetic on a GPU; compute.device cpu "
        "computes in fp32");
  CHECK(ErrorOf(CsvJob(), {"compute.precision=fp32", "compute.device=cpu"}).empty());
  CHECK(ErrorOf(CsvJob(), {"compute.precision=fp16"}).rfind("compute.precision: 'fp16'", 0) == 0);
}

TEST_CASE("JobConfig: compute.cudnn_path is auto, off or an absolute path", "[core][config]") {
  for (const char* path : {"auto", "off", "/opt/cudnn/lib", "/opt/cudnn/lib/libcudnn.so.9"}) {
    CHECK(ErrorOf(CsvJob(), {absl::StrCat("compute.cudnn_path=", path)}).empty());
  }
  CHECK(ErrorOf(CsvJob(), {"compute.cudnn_path=cudnn/lib"}) ==
        "compute.cudnn_path: 'cudnn/lib' is neither auto, off nor an absolute path (of "
        "libcudnn.so.9 or its directory)");
  CHECK(ErrorOf(CsvJob("compute:\n  cudnn_path: ''\n")) ==
        "compute.cudnn_path: '' is neither auto, off nor an absolute path (of libcudnn.so.9 or "
        "its directory)");
}

TEST_CASE("JobConfig: the job's name is one directory name, slurm values one word each",
          "[core][config]") {
  for (const std::string name : {"fmnist_downpour", "run-2.v1", "_x", "A9"}) {
    CHECK(CheckRunName("job", name).ok());
  }
  for (const std::string name :
       {"", "..", ".", ".hidden", "-x", "a/b", "../../escape", "a b", "a\nb", "caf\xc3\xa9"}) {
    const absl::Status status = CheckRunName("job", name);
    CHECK(absl::IsInvalidArgument(status));
    CHECK(std::string(status.message()).rfind("job: expected 1 to 128 letters", 0) == 0);
  }
  CHECK(CheckRunName("job", std::string(128, 'a')).ok());
  CHECK(!CheckRunName("job", std::string(129, 'a')).ok());
  CHECK(ErrorOf(CsvJob(), {"job=../x"}) ==
        "job: expected 1 to 128 letters, digits, '.', '_' and '-', the first a letter, digit or "
        "'_' (it names a directory), got '../x'");
  CHECK(ErrorOf(CsvJob("slurm:\n  partition: \"gpu\\n#SBATCH --wrap=x\"\n")) ==
        "slurm.partition: expected one word (no spaces, quotes, backslashes or control "
        "characters), got 'gpu\\n#SBATCH --wrap=x'");
  CHECK(ErrorOf(CsvJob(), {"slurm.account='a b'"}).rfind("slurm.account: expected one word", 0) ==
        0);
  CHECK(ErrorOf(CsvJob(), {"slurm.time=''"}) == "slurm.time: must not be empty");
  for (const char* time : {"2h", "1:2:3:4", "-5", "1-", "30m"}) {
    INFO(time);
    CHECK(ErrorOf(CsvJob(), {absl::StrCat("slurm.time='", time, "'")})
              .rfind("slurm.time: expected MINUTES, ", 0) == 0);
  }
  for (const char* time :
       {"90", "30:00", "01:30:00", "2-0", "2-12:30", "1-00:00:01", "UNLIMITED"}) {
    INFO(time);
    CHECK(ErrorOf(CsvJob(), {absl::StrCat("slurm.time='", time, "'")}) == "");
  }
  CHECK(ErrorOf(CsvJob(), {"slurm.partition=gpu,debug", "slurm.time=1-00:00:00"}).empty());
}

TEST_CASE("JobConfig: a field written without a value is an error, not its default",
          "[core][config]") {
  CHECK(ErrorOf(CsvJob("training:\n  epochs:\n")) ==
        "training.epochs: no value (leave the key out for its default)");
  CHECK(ErrorOf(CsvJob("optimizer:\n  learning_rate: ~\n")) ==
        "optimizer.learning_rate: no value (leave the key out for its default)");
  std::string no_hidden = CsvJob();
  no_hidden.insert(no_hidden.find("data:"), "  hidden: null\n");
  CHECK(ErrorOf(no_hidden) == "model.hidden: no value (leave the key out for its default)");
  CHECK(ErrorOf(CsvJob("cluster:\n  ranks:\n")) ==
        "cluster.ranks: no value (leave the key out for its default)");
  CHECK(ErrorOf(CsvJob("reliability:\n  heartbeat_seconds:\n")) ==
        "reliability.heartbeat_seconds: no value (leave the key out for its default)");
  // A section without fields is an empty section: every default.
  auto config = ParseJobConfig(CsvJob("downpour:\n"), TempPath(""), {});
  REQUIRE(config.ok());
  CHECK(config->downpour.n_fetch == 1);
}

TEST_CASE("JobConfig: algorithm knobs are checked against their ranges", "[core][config]") {
  CHECK(ErrorOf(CsvJob("training:\n  algorithm: hogwild\n")) ==
        "training.algorithm: 'hogwild' is not allowed (allowed: downpour, sync, ssp, easgd, "
        "eamsgd)");
  CHECK(ErrorOf(CsvJob("easgd:\n  tau: 0\n")) ==
        "easgd.tau: expected an integer in [1, 1048576], got '0'");
  CHECK(ErrorOf(CsvJob("easgd:\n  alpha: 0\n")) ==
        "easgd.alpha: expected a number in (0, 1], got '0'");
  const std::string two_workers = "cluster:\n  workers: 2\n";
  CHECK(ErrorOf(CsvJob(two_workers + "easgd:\n  beta: 3\n")) ==
        "easgd.beta: expected a number in (0, 2], got '3'");  // beta <= workers
  CHECK(ErrorOf(CsvJob(two_workers + "sync:\n  quorum: 3\n")) ==
        "sync.quorum: expected an integer in [0, 2], got '3'");  // K <= N
  CHECK(ErrorOf(CsvJob("sync:\n  late_gradients: keep\n")) ==
        "sync.late_gradients: 'keep' is not allowed (allowed: drop, fold)");
  CHECK(ErrorOf(CsvJob("ssp:\n  bound: -1\n")) ==
        "ssp.bound: expected an integer in [0, 1048576], got '-1'");
  auto config = ParseJobConfig(CsvJob(two_workers), TempPath(""),
                               {"training.algorithm=eamsgd", "easgd.alpha=0.95",
                                "easgd.learning_rate=0.5", "sync.quorum=1", "ssp.bound=0"});
  REQUIRE(config.ok());
  CHECK(config->training.algorithm == Algorithm::kEamsgd);
  CHECK(ElasticAlpha(config->easgd, 2) == Approx(0.95));
  // Valid, but above the stability bound (4 - 1) / 3.5 = 0.857: a warning.
  const auto warnings = JobConfigWarnings(*config);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].rfind("easgd: alpha = 0.95 exceeds the stability bound", 0) == 0);
  // A warm-up as long as the run never reaches the learning rate: a warning too.
  auto long_warmup = ParseJobConfig(
      CsvJob(""), TempPath(""),
      {"training.epochs=3", "training.warmup_epochs=3", "optimizer.weight_decay=0.0005"});
  REQUIRE(long_warmup.ok());
  CHECK(long_warmup->optimizer.weight_decay == Approx(0.0005));
  CHECK(JobConfigWarnings(*long_warmup) ==
        std::vector<std::string>{"training.warmup_epochs (3) is not shorter than "
                                 "training.epochs (3): the learning rate never reaches its value"});
  // Every knob survives the resolved YAML round trip.
  auto again = ParseJobConfig(JobConfigToYaml(*config), "/", {});
  REQUIRE(again.ok());
  CHECK(again->easgd.alpha == Approx(0.95));
  CHECK(again->sync.quorum == 1);
  CHECK(again->ssp.bound == 0);
  CHECK(JobConfigToYaml(*again) == JobConfigToYaml(*config));
}

TEST_CASE("JobConfig: a missing data file is named with its field", "[core][config]") {
  const std::string yaml =
      "model:\n  type: linear_regression\n  input_dim: 1\n  output_dim: 1\n"
      "data:\n  format: csv\n  train: no_such.csv\n";
  auto config = ParseJobConfig(yaml, "/nonexistent", {});
  REQUIRE(absl::IsNotFound(config.status()));
  CHECK(std::string(config.status().message()) ==
        "data.train: file not found: /nonexistent/no_such.csv");
}

TEST_CASE("JobConfig: --set overrides any key before validation", "[core][config]") {
  auto config = ParseJobConfig(
      CsvJob(), TempPath(""), {"training.epochs=7", "cluster.workers=3", "optimizer.type=adagrad"});
  REQUIRE(config.ok());
  CHECK(config->training.epochs == 7);
  CHECK(config->cluster.workers == 3);
  CHECK(config->optimizer.type == OptimizerType::kAdagrad);
  CHECK(ErrorOf(CsvJob(), {"training.epochs=0"}).rfind("training.epochs:", 0) == 0);
  CHECK(ErrorOf(CsvJob(), {"noequals"}) == "--set noequals: expected key.path=value");
  CHECK(ErrorOf(CsvJob(), {"job.x=1"}) == "--set job.x: 'job' is not a section");
  // An empty value would have replaced the file's value (or whole section) with the default.
  for (const std::string empty : {"training.epochs=", "cluster=", "training.epochs=~"}) {
    CHECK(ErrorOf(CsvJob(), {empty})
              .rfind("--set " + empty.substr(0, empty.find('=')) + ": no value (write ", 0) == 0);
  }
}

TEST_CASE("JobConfig: a worker program's model (model.type: program)", "[core][config]") {
  std::ofstream(TempPath("train.py")) << "pass\n";
  const std::string model = "  type: program\n  input_dim: 4\n  output_dim: 2\n";
  const std::string program = "cluster:\n  worker_program: [python3, train.py, --fast]\n";
  auto config = ParseJobConfig(program + CsvJobWithModel(model), TempPath(""));
  REQUIRE(config.ok());
  // A file beside the job file becomes its absolute path; other arguments stay.
  CHECK(config->cluster.worker_program ==
        std::vector<std::string>{"python3", TempPath("train.py"), "--fast"});
  CHECK(Model::Create(config->model, nullptr).status().message() ==
        "model.type is program: the model is the worker program's (cluster.worker_program)");
  // The launcher's num_params is written, and read back.
  config->model.num_params = 1234;
  const std::string yaml = JobConfigToYaml(*config);
  CHECK(yaml.find("  num_params: 1234\n") != std::string::npos);
  auto again = ParseJobConfig(yaml, "/");
  REQUIRE(again.ok());
  CHECK(again->model.num_params == 1234);
  CHECK(Model::NumParams(again->model) == 1234);

  // evaluation.by_program: the program scores the weights, so no test data is needed.
  const std::string no_test = "job: t\nmodel:\n" + model +
                              "data:\n  format: csv\n  train: train4.csv\n"
                              "evaluation:\n  by_program: true\n";
  CHECK(ParseJobConfig(program + no_test, TempPath("")).ok());
  CHECK(ErrorOf(program + no_test, {"evaluation.by_program=false"}) ==
        "data.test: required when cluster.evaluator is true");
  CHECK(ErrorOf(CsvJob("evaluation:\n  by_program: true\n")) ==
        "evaluation.by_program: only a worker program (cluster.worker_program) has an "
        "evaluation function of its own");

  CHECK(ErrorOf(CsvJobWithModel(model)) ==
        "model.type is program: name the program in cluster.worker_program");
  CHECK(ErrorOf(program + CsvJobWithModel("  type: mlp\n  input_dim: 4\n  output_dim: 2\n")) ==
        "cluster.worker_program: the program's model needs model.type: program");
  CHECK(ErrorOf(program + CsvJobWithModel(model + "  hidden: [8]\n")) ==
        "model.type is program: the model is the worker program's; leave out model.layers and "
        "model.hidden");
  CHECK(ErrorOf(CsvJobWithModel("  input_dim: 4\n  output_dim: 2\n  num_params: 8\n")) ==
        "model.num_params: only a program's model (model.type: program) gives its size");
  CHECK(ErrorOf("cluster:\n  worker_program: [python3, '']\n" + CsvJobWithModel(model)) ==
        "cluster.worker_program[1]: an empty argument");
}

TEST_CASE("JobConfig: the resolved YAML parses back to the same config", "[core][config]") {
  auto config = LoadJobConfig("configs/fmnist_downpour.yaml", {"optimizer.learning_rate=0.0123"});
  REQUIRE(config.ok());
  const std::string yaml = JobConfigToYaml(*config);
  auto again = ParseJobConfig(yaml, "/", {});
  REQUIRE(again.ok());
  CHECK(JobConfigToYaml(*again) == yaml);
  CHECK(again->optimizer.learning_rate == config->optimizer.learning_rate);
  CHECK(again->training.learning_rate_schedule == LearningRateSchedule::kCosine);
  CHECK(again->data.train_images == config->data.train_images);
  // Each number as written, not as a float's nearest double (0.0123 was 0.0122999996).
  CHECK(yaml.find("  learning_rate: 0.0123\n") != std::string::npos);
  CHECK(yaml.find("  timeout_seconds: 600\n") != std::string::npos);
}

TEST_CASE("JobConfig: ValidateJobConfig checks a config built in code", "[core][config]") {
  JobConfig config;
  config.model.input_dim = 4;
  config.model.output_dim = 3;
  config.cluster.evaluator = false;
  config.data.train_images = "/data/train-images";
  config.data.train_labels = "/data/train-labels";
  CHECK(ValidateJobConfig(config).ok());
  config.data.format = DataFormat::kCsv;
  CHECK(ValidateJobConfig(config).message() ==
        "data.train_images: only for format idx (data.format is csv)");
  config.data.train_images = config.data.train_labels = "";
  CHECK(ValidateJobConfig(config).message() == "data.train: required");
  config.data.format = DataFormat::kHdf5;
  CHECK(ValidateJobConfig(config).message() == "data.train_files: required");
  config.data.format = DataFormat::kNpy;
  config.data.train_features = config.data.train_targets = "/data/x.npy";
  config.data.test_features = "/data/tx.npy";
  CHECK(ValidateJobConfig(config).message() ==
        "data.test_targets: give data.test_features and data.test_targets together");
  config.data = DataConfig{};
  config.data.train_images = "/data/train-images";
  config.data.train_labels = "/data/train-labels";
  config.data.format = DataFormat::kIdx;
  config.cluster.ranks = {RoleKind::kServer, RoleKind::kWorker, RoleKind::kWorker};
  CHECK(std::string(ValidateJobConfig(config).message())
            .rfind("cluster.ranks: lists 1 server(s), 2 worker(s)", 0) == 0);
}

TEST_CASE("JobConfig: the configuration reference has a row for every field the writer writes",
          "[core][config]") {
  const std::string reference = ConfigReferenceMarkdown();
  auto config = LoadJobConfig("configs/slurm/fmnist.yaml");
  REQUIRE(config.ok());
  std::string section;
  int fields = 0;
  std::istringstream yaml(JobConfigToYaml(*config));
  for (std::string line; std::getline(yaml, line);) {
    if (line.empty() || line[0] == '#') continue;
    const std::string key = line.substr(0, line.find(':'));
    if (line.back() == ':') {
      section = key + ".";
      continue;
    }
    const bool nested = key.rfind("  ", 0) == 0;
    if (!nested) section.clear();
    const std::string field = section + (nested ? key.substr(2) : key);
    INFO(field);
    CHECK(reference.find("| `" + field + "` |") != std::string::npos);
    ++fields;
  }
  CHECK(fields > 70);
}

TEST_CASE("JobConfig: cross-field rules", "[core][config]") {
  CHECK(ErrorOf(CsvJob(), {"model.hidden=[3]"}).rfind("model.hidden: only an mlp", 0) == 0);
  CHECK(ErrorOf("model:\n  type: linear_regression\n  input_dim: 1\n  output_dim: 1\n"
                "data:\n  format: csv\n  train: train.csv\n") ==
        "data.test: required when cluster.evaluator is true");
}

TEST_CASE("JobConfig: nodes that push once count as the servers' clients", "[core][config]") {
  const std::vector<std::string> nodes = {"cluster.workers=5", "cluster.workers_per_node=2",
                                          "cluster.aggregate_per_node=true"};
  auto loaded = LoadJobConfig("configs/fmnist_downpour.yaml", nodes);
  REQUIRE(loaded.ok());
  const ClusterConfig& c = loaded->cluster;
  CHECK(c.pushing_clients() == 3);  // 2 + 2 + a lone last worker
  CHECK((c.client_of(3) == 1 && c.client_of(4) == 2));
  CHECK((c.pushes_to_servers(2) && !c.pushes_to_servers(3) && c.pushes_to_servers(4)));
  loaded->training.algorithm = Algorithm::kSync;
  loaded->sync.backup_fraction = 0.3;
  CHECK(EffectiveQuorum(*loaded) == 2);  // of 3 nodes, not of 5 workers
  loaded->cluster.aggregate_per_node = false;
  CHECK((loaded->cluster.pushing_clients() == 5 && loaded->cluster.client_of(3) == 3));

  const auto refusal = [&](std::vector<std::string> more) {
    more.insert(more.begin(), nodes.begin(), nodes.end());
    auto config = LoadJobConfig("configs/fmnist_downpour.yaml", more);
    return config.ok() ? std::string("accepted") : std::string(config.status().message());
  };
  CHECK_THAT(refusal({"training.algorithm=eamsgd"}),
             Catch::Contains("cluster.aggregate_per_node: the workers of eamsgd"));
  CHECK_THAT(refusal({"simulation.enabled=true"}),
             Catch::Contains("cluster.aggregate_per_node: a simulated cluster"));
  CHECK_THAT(refusal({"reliability.worker_restarts=1"}),
             Catch::Contains("reliability.worker_restarts to 0"));
  CHECK_THAT(refusal({"cluster.workers_per_node=1"}),
             Catch::Contains("needs nodes of several workers"));
  CHECK_THAT(refusal({"training.algorithm=sync", "sync.quorum=4"}), Catch::Contains("sync.quorum"));
  CHECK_THAT(refusal({"cluster.workers_per_node=6"}), Catch::Contains("cluster.workers_per_node"));
}

TEST_CASE("EffectiveMomentum: lowered by 1 - 1/W for asynchronous algorithms when asked",
          "[core][config]") {
  JobConfig config;
  config.optimizer.momentum = 0.9f;
  config.training.algorithm = Algorithm::kDownpour;
  config.cluster.workers = 4;
  CHECK(EffectiveMomentum(config) == 0.9f);  // not asked
  config.optimizer.lower_momentum_with_workers = true;
  CHECK(EffectiveMomentum(config) == Approx(0.15));
  config.cluster.workers = 1;
  CHECK(EffectiveMomentum(config) == Approx(0.9));
  config.cluster.workers = 32;
  CHECK(EffectiveMomentum(config) == 0);
  config.training.algorithm = Algorithm::kSync;  // synchronous: no implicit momentum
  CHECK(EffectiveMomentum(config) == 0.9f);
  auto loaded = LoadJobConfig("configs/fmnist_downpour.yaml",
                              {"optimizer.lower_momentum_with_workers=true"});
  REQUIRE(loaded.ok());
  CHECK(loaded->optimizer.lower_momentum_with_workers);
}

TEST_CASE("JobConfig: reliability, checkpoint and security sections", "[core][config]") {
  CHECK(ErrorOf(CsvJob("reliability:\n  heartbeat_seconds: 5\n  peer_timeout_seconds: 8\n")) ==
        "reliability.peer_timeout_seconds: must be at least twice heartbeat_seconds (5), got 8");
  CHECK(ErrorOf(CsvJob("transport:\n  rendezvous_timeout_seconds: 120\n"
                       "reliability:\n  join_timeout_seconds: 90\n")) ==
        "reliability.join_timeout_seconds: must be at least "
        "transport.rendezvous_timeout_seconds (120), got 90");
  CHECK(ErrorOf(CsvJob("reliability:\n  worker_loss: ignore\n")) ==
        "reliability.worker_loss: 'ignore' is not allowed (allowed: auto, continue, stop)");
  CHECK(ErrorOf(CsvJob("reliability:\n  server_restarts: -1\n")) ==
        "reliability.server_restarts: expected an integer in [0, 1000], got '-1'");
  CHECK(ErrorOf(CsvJob("reliability:\n  stall_seconds: never\n")) ==
        "reliability.stall_seconds: expected a number in [0, 1e+06], got 'never'");
  CHECK(ErrorOf(CsvJob("reliability:\n  stall_seconds: -1\n")) ==
        "reliability.stall_seconds: expected a number in [0, 1e+06], got '-1'");
  auto off = ParseJobConfig(CsvJob("reliability:\n  stall_seconds: off\n"), TempPath(""), {});
  REQUIRE(off.ok());
  CHECK(off->reliability.stall_seconds == kStallWatchOff);
  CHECK(JobConfigToYaml(*off).find("  stall_seconds: off\n") != std::string::npos);
  CHECK(ParseJobConfig(JobConfigToYaml(*off), "/", {})->reliability.stall_seconds ==
        kStallWatchOff);
  CHECK(ErrorOf(CsvJob("checkpoint:\n  keep: 1\n")) ==
        "checkpoint.keep: expected an integer in [2, 1000], got '1'");
  std::ofstream(TempPath("job.crt")) << "not really a certificate\n";
  CHECK(ErrorOf(CsvJob("security:\n  tls_cert: job.crt\n")) ==
        "security: TLS needs all of tls_cert, tls_key and tls_ca (or none of them)");
  CHECK(ErrorOf(CsvJob("security:\n  tls_key: missing.key\n"))
            .rfind("security.tls_key: file not found: ", 0) == 0);
  // worker_loss: auto stops only sync with every worker in the quorum.
  auto config = ParseJobConfig(CsvJob("cluster:\n  workers: 3\n"), TempPath(""), {});
  REQUIRE(config.ok());
  CHECK(!StopsOnWorkerLoss(*config));
  config->training.algorithm = Algorithm::kSync;
  CHECK(StopsOnWorkerLoss(*config));
  config->sync.quorum = 2;
  CHECK(!StopsOnWorkerLoss(*config));
  config->reliability.worker_loss = WorkerLoss::kStop;
  CHECK(StopsOnWorkerLoss(*config));
  // The resolved YAML keeps the new sections.
  config->reliability.worker_restarts = 3;
  config->reliability.evaluator_restarts = 4;
  config->reliability.server_restarts = 2;
  config->checkpoint.interval_seconds = 7;
  auto again = ParseJobConfig(JobConfigToYaml(*config), "/", {});
  REQUIRE(again.ok());
  CHECK(again->reliability.worker_restarts == 3);
  CHECK(again->reliability.evaluator_restarts == 4);
  CHECK(again->reliability.server_restarts == 2);
  CHECK(again->reliability.worker_loss == WorkerLoss::kStop);
  CHECK(again->checkpoint.interval_seconds == 7);
}

TEST_CASE("JobConfig: a key given twice or a second document is refused, naming it",
          "[core][config]") {
  CHECK(ErrorOf(CsvJob("training:\n  epochs: 2\n  epochs: 3\n")) ==
        "training.epochs: given twice (lines 11 and 12)");
  CHECK(ErrorOf(CsvJob("seed: 1\nseed: 2\n")) == "seed: given twice (lines 10 and 11)");
  CHECK(ErrorOf(CsvJob("---\ntraining:\n  epochs: 2\n")) ==
        "line 11: a second YAML document; a job file holds one (remove the '---')");
}

TEST_CASE("JobConfig: only a regular file of sane size is read as a job file", "[core][config]") {
  const std::string dir = TempPath("not_a_file");
  std::filesystem::create_directories(dir);
  const auto error = [](const std::string& path) {
    return std::string(LoadJobConfig(path).status().message());
  };
  CHECK(error(dir) == dir + " is a directory, not a file");
  CHECK(error("/dev/zero") == "/dev/zero is not a regular file (a FIFO, socket or device)");
  const std::string fifo = TempPath("config.fifo");
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);  // reading it would block until a writer came
  CHECK(error(fifo) == fifo + " is not a regular file (a FIFO, socket or device)");
  const std::string big = TempPath("big.yaml");
  std::ofstream(big) << std::string(kMaxConfigBytes + 1, '#');
  CHECK(error(big) == absl::StrCat(big, " has ", kMaxConfigBytes + 1, " bytes; a file of at most ",
                                   kMaxConfigBytes, " is expected here"));
  CHECK(absl::IsNotFound(LoadJobConfig(TempPath("missing.yaml")).status()));
  // A data path that is a directory says so, not "file not found".
  const absl::StatusOr<JobConfig> data_dir = ParseJobConfig(
      "job: j\nmodel: {type: linear_regression, input_dim: 1, output_dim: 1}\n"
      "data: {format: csv, train: " +
          dir + "}\n",
      "/");
  CHECK(std::string(data_dir.status().message()) ==
        "data.train: " + dir + " is a directory, not a file");
}

}  // namespace
}  // namespace monsoon
