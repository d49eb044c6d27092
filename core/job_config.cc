#include "core/job_config.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/status_macros.h"

namespace monsoon {
namespace {

namespace fs = std::filesystem;

// Reads the fields of one YAML mapping, remembering which keys were read so that any other
// key is reported as unknown. Every error message starts with the field's dotted path.
class Section {
 public:
  Section(const YAML::Node& node, std::string path) : node_(node), path_(std::move(path)) {}

  absl::Status CheckIsMap() const {
    if (!node_ || node_.IsNull() || node_.IsMap()) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(Name(), ": expected a mapping of fields"));
  }

  absl::StatusOr<Section> Child(const std::string& key) {
    known_.insert(key);
    Section child(Get(key), Path(key));
    MONSOON_RETURN_IF_ERROR(child.CheckIsMap());
    return child;
  }

  absl::Status Int(const std::string& key, int min, int max, int* out) {
    std::string text;
    MONSOON_ASSIGN_OR_RETURN(bool present, Scalar(key, &text));
    if (!present) return absl::OkStatus();
    int v;
    if (!absl::SimpleAtoi(text, &v) || v < min || v > max) {
      return absl::InvalidArgumentError(absl::StrCat(Path(key), ": expected an integer in [", min,
                                                     ", ", max, "], got '", text, "'"));
    }
    *out = v;
    return absl::OkStatus();
  }

  absl::Status Uint64(const std::string& key, uint64_t* out) {
    std::string text;
    MONSOON_ASSIGN_OR_RETURN(bool present, Scalar(key, &text));
    if (!present) return absl::OkStatus();
    if (!absl::SimpleAtoi(text, out)) {
      return absl::InvalidArgumentError(
          absl::StrCat(Path(key), ": expected a non-negative integer, got '", text, "'"));
    }
    return absl::OkStatus();
  }

  // Accepts min < v <= max when min_exclusive, else min <= v <= max.
  template <typename T>
  absl::Status Real(const std::string& key, double min, bool min_exclusive, double max, T* out) {
    std::string text;
    MONSOON_ASSIGN_OR_RETURN(bool present, Scalar(key, &text));
    if (!present) return absl::OkStatus();
    double v;
    const bool in_range = absl::SimpleAtod(text, &v) && std::isfinite(v) &&
                          (min_exclusive ? v > min : v >= min) && v <= max;
    if (!in_range) {
      return absl::InvalidArgumentError(absl::StrCat(Path(key), ": expected a number in ",
                                                     min_exclusive ? "(" : "[", min, ", ", max,
                                                     "], got '", text, "'"));
    }
    *out = static_cast<T>(v);
    return absl::OkStatus();
  }

  absl::Status Bool(const std::string& key, bool* out) {
    std::string text;
    MONSOON_ASSIGN_OR_RETURN(bool present, Scalar(key, &text));
    if (!present) return absl::OkStatus();
    if (text == "true") {
      *out = true;
    } else if (text == "false") {
      *out = false;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(Path(key), ": expected true or false, got '", text, "'"));
    }
    return absl::OkStatus();
  }

  // A string; when `allowed` is not empty the value must be one of them.
  absl::Status String(const std::string& key, const std::vector<std::string>& allowed,
                      std::string* out) {
    std::string text;
    MONSOON_ASSIGN_OR_RETURN(bool present, Scalar(key, &text));
    if (!present) return absl::OkStatus();
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), text) == allowed.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Path(key), ": '", text,
                       "' is not allowed (allowed: ", absl::StrJoin(allowed, ", "), ")"));
    }
    *out = text;
    return absl::OkStatus();
  }

  // One of `names`' values; *out keeps its value when the key is absent.
  template <typename E>
  absl::Status Enum(const std::string& key, const EnumNames<E>& names, E* out) {
    std::string text = names.Name(*out);
    MONSOON_RETURN_IF_ERROR(String(key, names.AllNames(), &text));
    MONSOON_ASSIGN_OR_RETURN(*out, names.Parse(text));
    return absl::OkStatus();
  }

  absl::Status IntList(const std::string& key, int min, std::vector<int>* out) {
    MONSOON_ASSIGN_OR_RETURN(const YAML::Node n, Field(key));
    if (!n) return absl::OkStatus();
    if (!n.IsSequence()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Path(key), ": expected a list of integers like [256, 128]"));
    }
    std::vector<int> values;
    for (size_t i = 0; i < n.size(); ++i) {
      int v;
      if (!n[i].IsScalar() || !absl::SimpleAtoi(n[i].Scalar(), &v) || v < min) {
        return absl::InvalidArgumentError(
            absl::StrCat(Path(key), "[", i, "]: expected an integer >= ", min));
      }
      values.push_back(v);
    }
    *out = values;
    return absl::OkStatus();
  }

  // A list of strings, each (when `allowed` is not empty) one of `allowed`.
  absl::Status StringList(const std::string& key, const std::vector<std::string>& allowed,
                          std::vector<std::string>* out) {
    MONSOON_ASSIGN_OR_RETURN(const YAML::Node n, Field(key));
    if (!n) return absl::OkStatus();
    if (!n.IsSequence()) {
      return absl::InvalidArgumentError(absl::StrCat(Path(key), ": expected a list"));
    }
    std::vector<std::string> values;
    for (size_t i = 0; i < n.size(); ++i) {
      if (!n[i].IsScalar()) {
        return absl::InvalidArgumentError(absl::StrCat(Path(key), "[", i, "]: expected a string"));
      }
      const std::string v = n[i].Scalar();
      if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), v) == allowed.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat(Path(key), "[", i, "]: '", v,
                         "' is not allowed (allowed: ", absl::StrJoin(allowed, ", "), ")"));
      }
      values.push_back(v);
    }
    *out = values;
    return absl::OkStatus();
  }

  // A path to an existing file; relative paths resolve against base_dir.
  absl::Status File(const std::string& key, const std::string& base_dir, bool required,
                    std::string* out) {
    std::string text;
    MONSOON_ASSIGN_OR_RETURN(bool present, Scalar(key, &text));
    if (!present || text.empty()) {
      if (required) return absl::InvalidArgumentError(absl::StrCat(Path(key), ": required"));
      return absl::OkStatus();
    }
    fs::path p(text);
    if (p.is_relative()) p = fs::path(base_dir) / p;
    std::error_code ec;
    p = fs::absolute(p, ec).lexically_normal();
    if (!fs::is_regular_file(p, ec)) {
      return absl::NotFoundError(absl::StrCat(Path(key), ": file not found: ", p.string()));
    }
    *out = p.string();
    return absl::OkStatus();
  }

  // InvalidArgument naming the first key that no reader asked for.
  absl::Status CheckNoUnknownKeys() const {
    if (!node_ || !node_.IsMap()) return absl::OkStatus();
    for (const auto& kv : node_) {
      const std::string key = kv.first.Scalar();
      if (known_.count(key) == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(Path(key), ": unknown key (allowed: ", absl::StrJoin(known_, ", "), ")"));
      }
    }
    return absl::OkStatus();
  }

 private:
  YAML::Node Get(const std::string& key) const {
    if (!node_ || !node_.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    return node_[key];
  }
  std::string Path(const std::string& key) const {
    return path_.empty() ? key : absl::StrCat(path_, ".", key);
  }
  std::string Name() const { return path_.empty() ? "top level" : path_; }

  // The key's node, undefined when the key is absent. InvalidArgument when the key is there
  // without a value (`epochs:`, `epochs: ~`): that is far more often a slip than a wish for
  // the default, which leaving the key out gives.
  absl::StatusOr<YAML::Node> Field(const std::string& key) {
    known_.insert(key);
    const YAML::Node n = Get(key);
    if (n && n.IsNull()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Path(key), ": no value (leave the key out for its default)"));
    }
    return n;
  }

  // Returns false when the key is absent, true and the text when it is a scalar.
  absl::StatusOr<bool> Scalar(const std::string& key, std::string* text) {
    MONSOON_ASSIGN_OR_RETURN(const YAML::Node n, Field(key));
    if (!n) return false;
    if (!n.IsScalar()) {
      return absl::InvalidArgumentError(absl::StrCat(Path(key), ": expected a single value"));
    }
    *text = n.Scalar();
    return true;
  }

  YAML::Node node_;
  std::string path_;
  std::set<std::string> known_;
};

absl::Status ApplyOverride(YAML::Node root, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--set ", assignment, ": expected key.path=value"));
  }
  const std::string path = assignment.substr(0, eq);
  const YAML::Node value = YAML::Load(assignment.substr(eq + 1));
  if (value.IsNull()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--set ", path, ": no value (write ", path, "=VALUE; to get a field's default, leave it "
        "out of the config)"));
  }
  std::vector<std::string> keys = absl::StrSplit(path, '.');
  // yaml-cpp nodes are handles: walking with reset() keeps edits inside `root`.
  YAML::Node node = root;
  for (size_t i = 0; i + 1 < keys.size(); ++i) {
    if (node[keys[i]] && !node[keys[i]].IsMap() && !node[keys[i]].IsNull()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--set ", path, ": '", keys[i], "' is not a section"));
    }
    YAML::Node next = node[keys[i]];
    node.reset(next);
  }
  node[keys.back()] = value;
  return absl::OkStatus();
}

// A value that `monsoon sbatch` writes into an #SBATCH line as it is: one word, so it can
// neither end the line nor split into two options.
absl::Status CheckSbatchWord(const std::string& field, const std::string& value) {
  for (char ch : value) {
    if (absl::ascii_isspace(static_cast<unsigned char>(ch)) ||
        absl::ascii_iscntrl(static_cast<unsigned char>(ch)) || ch == '"' || ch == '\'' ||
        ch == '\\') {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ": expected one word (no spaces, quotes, backslashes or control characters), "
                 "got '", absl::CEscape(value), "'"));
    }
  }
  return absl::OkStatus();
}

absl::Status ParseTree(const YAML::Node& root, const std::string& base_dir, JobConfig* c) {
  if (!root.IsMap()) return absl::InvalidArgumentError("top level: expected a mapping of sections");
  Section top(root, "");
  MONSOON_RETURN_IF_ERROR(top.String("job", {}, &c->job));
  MONSOON_RETURN_IF_ERROR(CheckRunName("job", c->job));
  MONSOON_RETURN_IF_ERROR(top.Uint64("seed", &c->seed));

  MONSOON_ASSIGN_OR_RETURN(Section cluster, top.Child("cluster"));
  MONSOON_RETURN_IF_ERROR(cluster.Int("servers", 1, 1024, &c->cluster.servers));
  MONSOON_RETURN_IF_ERROR(cluster.Int("workers", 1, 4096, &c->cluster.workers));
  MONSOON_RETURN_IF_ERROR(cluster.Bool("evaluator", &c->cluster.evaluator));
  MONSOON_RETURN_IF_ERROR(cluster.String("assignment", {"auto", "counts", "ranks", "het_groups"},
                                         &c->cluster.assignment));
  MONSOON_RETURN_IF_ERROR(
      cluster.StringList("ranks", {"server", "worker", "evaluator"}, &c->cluster.ranks));
  if (!c->cluster.ranks.empty()) {
    const auto count = [&](const char* role) {
      return static_cast<int>(std::count(c->cluster.ranks.begin(), c->cluster.ranks.end(), role));
    };
    if (count("server") != c->cluster.servers || count("worker") != c->cluster.workers ||
        count("evaluator") != (c->cluster.evaluator ? 1 : 0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cluster.ranks: lists ", count("server"), " server(s), ", count("worker"),
          " worker(s) and ", count("evaluator"), " evaluator(s); the cluster section has ",
          c->cluster.servers, ", ", c->cluster.workers, " and ", c->cluster.evaluator ? 1 : 0));
    }
  } else if (c->cluster.assignment == "ranks") {
    return absl::InvalidArgumentError("cluster.ranks: required when cluster.assignment is ranks");
  }
  MONSOON_RETURN_IF_ERROR(cluster.CheckNoUnknownKeys());

  MONSOON_ASSIGN_OR_RETURN(Section model, top.Child("model"));
  MONSOON_RETURN_IF_ERROR(model.Enum("type", kModelTypeNames, &c->model.type));
  MONSOON_RETURN_IF_ERROR(model.Int("input_dim", 1, 1 << 24, &c->model.input_dim));
  MONSOON_RETURN_IF_ERROR(model.Int("output_dim", 1, 1 << 24, &c->model.output_dim));
  if (c->model.input_dim == 0) return absl::InvalidArgumentError("model.input_dim: required");
  if (c->model.output_dim == 0) return absl::InvalidArgumentError("model.output_dim: required");
  MONSOON_RETURN_IF_ERROR(model.IntList("hidden", 1, &c->model.hidden));
  if (c->model.type != ModelType::kMlp && !c->model.hidden.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.hidden: only an mlp has hidden layers (model.type is ",
                     kModelTypeNames.Name(c->model.type), ")"));
  }
  MONSOON_RETURN_IF_ERROR(model.Enum("activation", kActivationNames, &c->model.activation));
  c->model.loss = c->model.type == ModelType::kLinearRegression ? LossType::kMeanSquaredError
                                                                : LossType::kSoftmaxCrossEntropy;
  MONSOON_RETURN_IF_ERROR(model.Enum("loss", kLossNames, &c->model.loss));
  if (c->model.type == ModelType::kSoftmaxRegression &&
      c->model.loss != LossType::kSoftmaxCrossEntropy) {
    return absl::InvalidArgumentError("model.loss: softmax_regression needs softmax_cross_entropy");
  }
  if (c->model.loss == LossType::kSoftmaxCrossEntropy && c->model.output_dim < 2) {
    return absl::InvalidArgumentError(
        "model.output_dim: softmax_cross_entropy needs at least 2 classes");
  }
  MONSOON_RETURN_IF_ERROR(model.CheckNoUnknownKeys());

  MONSOON_ASSIGN_OR_RETURN(Section data, top.Child("data"));
  MONSOON_RETURN_IF_ERROR(data.String("format", {"idx", "csv"}, &c->data.format));
  const bool idx = c->data.format == "idx";
  MONSOON_RETURN_IF_ERROR(data.File("train_images", base_dir, idx, &c->data.train_images));
  MONSOON_RETURN_IF_ERROR(data.File("train_labels", base_dir, idx, &c->data.train_labels));
  MONSOON_RETURN_IF_ERROR(data.File("test_images", base_dir, false, &c->data.test_images));
  MONSOON_RETURN_IF_ERROR(data.File("test_labels", base_dir, false, &c->data.test_labels));
  MONSOON_RETURN_IF_ERROR(data.File("train", base_dir, !idx, &c->data.train));
  MONSOON_RETURN_IF_ERROR(data.File("test", base_dir, false, &c->data.test));
  if (idx && !c->data.train.empty()) {
    return absl::InvalidArgumentError("data.train: only for format csv (idx uses train_images)");
  }
  if (!idx && !c->data.train_images.empty()) {
    return absl::InvalidArgumentError("data.train_images: only for format idx (csv uses train)");
  }
  MONSOON_RETURN_IF_ERROR(data.CheckNoUnknownKeys());
  const bool has_test = !(idx ? c->data.test_images : c->data.test).empty();
  if (idx && c->data.test_images.empty() != c->data.test_labels.empty()) {
    return absl::InvalidArgumentError(
        "data.test_labels: give test_images and test_labels together");
  }

  if (c->cluster.evaluator && !has_test) {
    return absl::InvalidArgumentError(absl::StrCat("data.", idx ? "test_images" : "test",
                                                   ": required when cluster.evaluator is true"));
  }

  MONSOON_ASSIGN_OR_RETURN(Section training, top.Child("training"));
  MONSOON_RETURN_IF_ERROR(training.Enum("algorithm", kAlgorithmNames, &c->training.algorithm));
  MONSOON_RETURN_IF_ERROR(training.Int("epochs", 1, 100000, &c->training.epochs));
  MONSOON_RETURN_IF_ERROR(training.Int("batch_size", 1, 1 << 20, &c->training.batch_size));
  MONSOON_RETURN_IF_ERROR(training.Int("max_steps", 0, 1 << 30, &c->training.max_steps));
  MONSOON_RETURN_IF_ERROR(
      training.Real("timeout_seconds", 0, true, 1e7, &c->training.timeout_seconds));
  MONSOON_RETURN_IF_ERROR(
      training.Enum("learning_rate_schedule", kScheduleNames, &c->training.learning_rate_schedule));
  MONSOON_RETURN_IF_ERROR(training.CheckNoUnknownKeys());

  MONSOON_ASSIGN_OR_RETURN(Section downpour, top.Child("downpour"));
  MONSOON_RETURN_IF_ERROR(downpour.Int("n_fetch", 1, 1 << 20, &c->downpour.n_fetch));
  MONSOON_RETURN_IF_ERROR(downpour.Int("n_push", 1, 1 << 20, &c->downpour.n_push));
  MONSOON_RETURN_IF_ERROR(
      downpour.Real("local_learning_rate", 0, false, 1e3, &c->downpour.local_learning_rate));
  MONSOON_RETURN_IF_ERROR(
      downpour.Int("warm_start_steps", 0, 1 << 30, &c->downpour.warm_start_steps));
  MONSOON_RETURN_IF_ERROR(downpour.CheckNoUnknownKeys());

  MONSOON_ASSIGN_OR_RETURN(Section sync, top.Child("sync"));
  MONSOON_RETURN_IF_ERROR(sync.Int("quorum", 0, c->cluster.workers, &c->sync.quorum));
  MONSOON_RETURN_IF_ERROR(sync.String("late_gradients", {"drop", "fold"}, &c->sync.late_gradients));
  MONSOON_RETURN_IF_ERROR(sync.CheckNoUnknownKeys());

  MONSOON_ASSIGN_OR_RETURN(Section ssp, top.Child("ssp"));
  MONSOON_RETURN_IF_ERROR(ssp.Int("bound", 0, 1 << 20, &c->ssp.bound));
  MONSOON_RETURN_IF_ERROR(ssp.CheckNoUnknownKeys());

  MONSOON_ASSIGN_OR_RETURN(Section easgd, top.Child("easgd"));
  MONSOON_RETURN_IF_ERROR(easgd.Int("tau", 1, 1 << 20, &c->easgd.tau));
  MONSOON_RETURN_IF_ERROR(easgd.Real("alpha", 0, true, 1, &c->easgd.alpha));
  double beta = 0;
  MONSOON_RETURN_IF_ERROR(easgd.Real("beta", 0, true, c->cluster.workers, &beta));
  if (beta > 0 && c->easgd.alpha > 0) {
    return absl::InvalidArgumentError(
        "easgd.beta: give easgd.alpha or easgd.beta (alpha = beta / workers), not both");
  }
  if (beta > 0) c->easgd.beta = beta;
  MONSOON_RETURN_IF_ERROR(easgd.Real("learning_rate", 0, true, 1e3, &c->easgd.learning_rate));
  MONSOON_RETURN_IF_ERROR(easgd.Real("momentum", 0, false, 0.999999, &c->easgd.momentum));
  MONSOON_RETURN_IF_ERROR(easgd.CheckNoUnknownKeys());

  MONSOON_ASSIGN_OR_RETURN(Section staleness, top.Child("staleness"));
  MONSOON_RETURN_IF_ERROR(
      staleness.String("policy", {"accept", "drop", "scale"}, &c->staleness.policy));
  MONSOON_RETURN_IF_ERROR(staleness.Int("bound", 0, 1 << 30, &c->staleness.bound));
  MONSOON_RETURN_IF_ERROR(staleness.Real("dc_lambda", 0, false, 1e3, &c->staleness.dc_lambda));
  if (c->staleness.dc_lambda > 0 && c->training.algorithm != Algorithm::kDownpour &&
      c->training.algorithm != Algorithm::kSsp) {
    return absl::InvalidArgumentError(
        absl::StrCat("staleness.dc_lambda: delay compensation applies to downpour and ssp, not ",
                     kAlgorithmNames.Name(c->training.algorithm)));
  }
  MONSOON_RETURN_IF_ERROR(staleness.CheckNoUnknownKeys());

  MONSOON_ASSIGN_OR_RETURN(Section optimizer, top.Child("optimizer"));
  MONSOON_RETURN_IF_ERROR(optimizer.Enum("type", kOptimizerNames, &c->optimizer.type));
  MONSOON_RETURN_IF_ERROR(
      optimizer.Real("learning_rate", 0, true, 1e3, &c->optimizer.learning_rate));
  MONSOON_RETURN_IF_ERROR(optimizer.Real("momentum", 0, false, 0.999999, &c->optimizer.momentum));
  MONSOON_RETURN_IF_ERROR(optimizer.Real("epsilon", 0, true, 1, &c->optimizer.epsilon));
  MONSOON_RETURN_IF_ERROR(
      optimizer.Real("initial_accumulator", 0, false, 1e6, &c->optimizer.initial_accumulator));
  MONSOON_RETURN_IF_ERROR(optimizer.Real("beta1", 0, false, 0.999999, &c->optimizer.beta1));
  MONSOON_RETURN_IF_ERROR(optimizer.Real("beta2", 0, false, 0.999999, &c->optimizer.beta2));
  MONSOON_RETURN_IF_ERROR(optimizer.CheckNoUnknownKeys());

  MONSOON_ASSIGN_OR_RETURN(Section evaluation, top.Child("evaluation"));
  MONSOON_RETURN_IF_ERROR(
      evaluation.Real("interval_seconds", 0, true, 1e6, &c->evaluation.interval_seconds));
  MONSOON_RETURN_IF_ERROR(evaluation.Int("batch_size", 1, 1 << 20, &c->evaluation.batch_size));
  MONSOON_RETURN_IF_ERROR(evaluation.CheckNoUnknownKeys());

  MONSOON_ASSIGN_OR_RETURN(Section trace, top.Child("trace"));
  MONSOON_RETURN_IF_ERROR(trace.Int("steps", 0, 1000000, &c->trace.steps));
  MONSOON_RETURN_IF_ERROR(trace.CheckNoUnknownKeys());

  MONSOON_ASSIGN_OR_RETURN(Section transport, top.Child("transport"));
  MONSOON_RETURN_IF_ERROR(transport.Int("chunk_kib", 4, 256 * 1024, &c->transport.chunk_kib));
  MONSOON_RETURN_IF_ERROR(transport.Int("max_in_flight", 1, 64, &c->transport.max_in_flight));
  MONSOON_RETURN_IF_ERROR(
      transport.Int("channels_per_server", 1, 8, &c->transport.channels_per_server));
  MONSOON_RETURN_IF_ERROR(
      transport.Real("rpc_timeout_seconds", 0, true, 3600, &c->transport.rpc_timeout_seconds));
  MONSOON_RETURN_IF_ERROR(transport.Real("rendezvous_timeout_seconds", 0, true, 3600,
                                         &c->transport.rendezvous_timeout_seconds));
  MONSOON_RETURN_IF_ERROR(
      transport.String("overlap", {"none", "push", "push_pull"}, &c->transport.overlap));
  MONSOON_RETURN_IF_ERROR(transport.Bool("pull_with_push", &c->transport.pull_with_push));
  MONSOON_RETURN_IF_ERROR(
      transport.String("compression", {"none", "fp16", "topk"}, &c->transport.compression));
  MONSOON_RETURN_IF_ERROR(transport.Real("topk_fraction", 0, true, 1, &c->transport.topk_fraction));
  MONSOON_RETURN_IF_ERROR(transport.CheckNoUnknownKeys());

  MONSOON_ASSIGN_OR_RETURN(Section compute, top.Child("compute"));
  MONSOON_RETURN_IF_ERROR(compute.String("device", {"auto", "cpu", "cuda"}, &c->compute.device));
  MONSOON_RETURN_IF_ERROR(compute.Int("threads", 1, 256, &c->compute.threads));
  MONSOON_RETURN_IF_ERROR(compute.Bool("tf32", &c->compute.tf32));
  MONSOON_RETURN_IF_ERROR(compute.CheckNoUnknownKeys());

  MONSOON_ASSIGN_OR_RETURN(Section reliability, top.Child("reliability"));
  ReliabilityConfig& r = c->reliability;
  MONSOON_RETURN_IF_ERROR(reliability.Real("heartbeat_seconds", 0, true, 60, &r.heartbeat_seconds));
  MONSOON_RETURN_IF_ERROR(
      reliability.Real("peer_timeout_seconds", 0, true, 3600, &r.peer_timeout_seconds));
  if (r.peer_timeout_seconds < 2 * r.heartbeat_seconds) {
    return absl::InvalidArgumentError(
        absl::StrCat("reliability.peer_timeout_seconds: must be at least twice heartbeat_seconds (",
                     r.heartbeat_seconds, "), got ", r.peer_timeout_seconds));
  }
  MONSOON_RETURN_IF_ERROR(
      reliability.Real("join_timeout_seconds", 0, true, 86400, &r.join_timeout_seconds));
  if (r.join_timeout_seconds < c->transport.rendezvous_timeout_seconds) {
    return absl::InvalidArgumentError(absl::StrCat(
        "reliability.join_timeout_seconds: must be at least transport.rendezvous_timeout_seconds (",
        c->transport.rendezvous_timeout_seconds, "), got ", r.join_timeout_seconds));
  }
  MONSOON_RETURN_IF_ERROR(
      reliability.String("worker_loss", {"auto", "continue", "stop"}, &r.worker_loss));
  MONSOON_RETURN_IF_ERROR(reliability.Int("worker_restarts", 0, 1000, &r.worker_restarts));
  MONSOON_RETURN_IF_ERROR(reliability.Int("evaluator_restarts", 0, 1000, &r.evaluator_restarts));
  MONSOON_RETURN_IF_ERROR(reliability.Int("server_restarts", 0, 1000, &r.server_restarts));
  MONSOON_RETURN_IF_ERROR(reliability.CheckNoUnknownKeys());

  MONSOON_ASSIGN_OR_RETURN(Section checkpoint, top.Child("checkpoint"));
  MONSOON_RETURN_IF_ERROR(
      checkpoint.Real("interval_seconds", 0, false, 1e6, &c->checkpoint.interval_seconds));
  MONSOON_RETURN_IF_ERROR(checkpoint.Int("keep", 2, 1000, &c->checkpoint.keep));
  MONSOON_RETURN_IF_ERROR(checkpoint.CheckNoUnknownKeys());

  MONSOON_ASSIGN_OR_RETURN(Section security, top.Child("security"));
  SecurityConfig& sec = c->security;
  MONSOON_RETURN_IF_ERROR(security.File("tls_cert", base_dir, false, &sec.tls_cert));
  MONSOON_RETURN_IF_ERROR(security.File("tls_key", base_dir, false, &sec.tls_key));
  MONSOON_RETURN_IF_ERROR(security.File("tls_ca", base_dir, false, &sec.tls_ca));
  MONSOON_RETURN_IF_ERROR(security.String("tls_server_name", {}, &sec.tls_server_name));
  const int tls_files = !sec.tls_cert.empty() + !sec.tls_key.empty() + !sec.tls_ca.empty();
  if (tls_files != 0 && tls_files != 3) {
    return absl::InvalidArgumentError(
        "security: TLS needs all of tls_cert, tls_key and tls_ca (or none of them)");
  }
  if (sec.tls_server_name.empty()) {
    return absl::InvalidArgumentError("security.tls_server_name: must not be empty");
  }
  MONSOON_RETURN_IF_ERROR(security.CheckNoUnknownKeys());

  MONSOON_ASSIGN_OR_RETURN(Section network, top.Child("network"));
  MONSOON_RETURN_IF_ERROR(network.String("interface", {}, &c->network.interface));
  MONSOON_RETURN_IF_ERROR(network.CheckNoUnknownKeys());

  MONSOON_ASSIGN_OR_RETURN(Section slurm, top.Child("slurm"));
  SlurmConfig& s = c->slurm;
  MONSOON_RETURN_IF_ERROR(slurm.Int("nodes", 1, 100000, &s.nodes));
  MONSOON_RETURN_IF_ERROR(slurm.Int("cpus_per_task", 1, 4096, &s.cpus_per_task));
  MONSOON_RETURN_IF_ERROR(slurm.Int("gpus_per_node", 0, 1024, &s.gpus_per_node));
  MONSOON_RETURN_IF_ERROR(slurm.String("time", {}, &s.time));
  MONSOON_RETURN_IF_ERROR(slurm.String("partition", {}, &s.partition));
  MONSOON_RETURN_IF_ERROR(slurm.String("account", {}, &s.account));
  MONSOON_RETURN_IF_ERROR(slurm.StringList("extra", {}, &s.extra));
  MONSOON_RETURN_IF_ERROR(slurm.Bool("heterogeneous", &s.heterogeneous));
  MONSOON_RETURN_IF_ERROR(slurm.Int("server_nodes", 1, 100000, &s.server_nodes));
  MONSOON_RETURN_IF_ERROR(slurm.Int("worker_nodes", 1, 100000, &s.worker_nodes));
  MONSOON_RETURN_IF_ERROR(slurm.Int("signal_seconds", 0, 65535, &s.signal_seconds));
  if (s.time.empty()) return absl::InvalidArgumentError("slurm.time: must not be empty");
  MONSOON_RETURN_IF_ERROR(CheckSbatchWord("slurm.time", s.time));
  MONSOON_RETURN_IF_ERROR(CheckSbatchWord("slurm.partition", s.partition));
  MONSOON_RETURN_IF_ERROR(CheckSbatchWord("slurm.account", s.account));
  for (size_t i = 0; i < s.extra.size(); ++i) {
    if (s.extra[i].rfind("--", 0) != 0 || s.extra[i].find('\n') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "slurm.extra[", i, "]: expected one sbatch option like --mail-type=END, got '",
          s.extra[i], "'"));
    }
  }
  MONSOON_RETURN_IF_ERROR(slurm.CheckNoUnknownKeys());

  return top.CheckNoUnknownKeys();
}

std::string Quote(const std::string& s) {
  YAML::Emitter e;
  e << YAML::DoubleQuoted << s;
  return e.c_str();
}

// Shortest text that parses back to the same value.
template <typename T>
std::string Num(T v) {
  std::ostringstream os;
  os.precision(std::numeric_limits<T>::max_digits10);
  os << v;
  return os.str();
}

}  // namespace

bool PushesGradients(Algorithm a) { return a != Algorithm::kEasgd && a != Algorithm::kEamsgd; }

double ElasticAlpha(const EasgdConfig& easgd, int live_workers) {
  if (easgd.alpha > 0) return easgd.alpha;
  return std::min(1.0, easgd.beta / std::max(1, live_workers));
}

double ElasticAlphaBound(double eta) { return (4 - 2 * eta) / (4 - eta); }

std::vector<std::string> JobConfigWarnings(const JobConfig& config) {
  std::vector<std::string> warnings;
  if (!PushesGradients(config.training.algorithm)) {
    const double alpha = ElasticAlpha(config.easgd, config.cluster.workers);
    const double bound = ElasticAlphaBound(config.easgd.learning_rate);
    if (alpha > bound) {
      warnings.push_back(absl::StrCat(
          "easgd: alpha = ", alpha, " exceeds the stability bound (4 - 2 eta) / (4 - eta) = ",
          bound, " for eta = easgd.learning_rate = ", config.easgd.learning_rate,
          "; the centre may oscillate"));
    }
  }
  return warnings;
}

bool StopsOnWorkerLoss(const JobConfig& config) {
  const std::string& loss = config.reliability.worker_loss;
  if (loss != "auto") return loss == "stop";
  return config.training.algorithm == Algorithm::kSync &&
         (config.sync.quorum == 0 || config.sync.quorum == config.cluster.workers);
}

absl::StatusOr<ShardingPlan> JobShardingPlan(const JobConfig& config) {
  return ShardingPlan::Create(Model::NumParams(config.model), config.cluster.servers,
                              config.chunk_floats());
}

absl::Status CheckRunName(const std::string& field, const std::string& name) {
  const auto allowed = [](char ch, bool first) {
    return absl::ascii_isalnum(static_cast<unsigned char>(ch)) || ch == '_' ||
           (!first && (ch == '.' || ch == '-'));
  };
  bool ok = !name.empty() && name.size() <= 128;
  for (size_t i = 0; ok && i < name.size(); ++i) ok = allowed(name[i], i == 0);
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": expected 1 to 128 letters, digits, '.', '_' and '-', the first a letter, digit "
             "or '_' (it names a directory), got '", absl::CEscape(name), "'"));
}

absl::StatusOr<JobConfig> ParseJobConfig(const std::string& yaml_text, const std::string& base_dir,
                                         const std::vector<std::string>& overrides) {
  // yaml-cpp reports errors by exception; this is the one place they are caught.
  try {
    YAML::Node root = YAML::Load(yaml_text);
    if (!root || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
    for (const std::string& o : overrides) MONSOON_RETURN_IF_ERROR(ApplyOverride(root, o));
    JobConfig config;
    MONSOON_RETURN_IF_ERROR(ParseTree(root, base_dir, &config));
    return config;
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("YAML syntax error at line ", e.mark.line + 1,
                                                   ", column ", e.mark.column + 1, ": ", e.msg));
  }
}

absl::StatusOr<JobConfig> LoadJobConfig(const std::string& path,
                                        const std::vector<std::string>& overrides) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("config file not found: ", path));
  std::stringstream text;
  text << in.rdbuf();
  const std::string dir = fs::absolute(fs::path(path)).parent_path().string();
  auto config = ParseJobConfig(text.str(), dir, overrides);
  if (!config.ok()) {
    return absl::Status(config.status().code(),
                        absl::StrCat(path, ": ", config.status().message()));
  }
  return config;
}

std::string JobConfigToYaml(const JobConfig& c) {
  std::ostringstream y;
  y << "# Resolved Monsoon job configuration (every default filled in).\n";
  y << "job: " << Quote(c.job) << "\n";
  y << "seed: " << c.seed << "\n";
  y << "cluster:\n  servers: " << c.cluster.servers << "\n  workers: " << c.cluster.workers
    << "\n  evaluator: " << (c.cluster.evaluator ? "true" : "false")
    << "\n  assignment: " << c.cluster.assignment << "\n";
  if (!c.cluster.ranks.empty()) y << "  ranks: [" << absl::StrJoin(c.cluster.ranks, ", ") << "]\n";
  y << "model:\n  type: " << kModelTypeNames.Name(c.model.type)
    << "\n  input_dim: " << c.model.input_dim << "\n  output_dim: " << c.model.output_dim << "\n";
  if (c.model.type == ModelType::kMlp) {
    y << "  hidden: [" << absl::StrJoin(c.model.hidden, ", ") << "]\n";
  }
  y << "  activation: " << kActivationNames.Name(c.model.activation)
    << "\n  loss: " << kLossNames.Name(c.model.loss) << "\n";
  y << "data:\n  format: " << c.data.format << "\n";
  if (c.data.format == "idx") {
    y << "  train_images: " << Quote(c.data.train_images)
      << "\n  train_labels: " << Quote(c.data.train_labels) << "\n";
    if (!c.data.test_images.empty()) {
      y << "  test_images: " << Quote(c.data.test_images)
        << "\n  test_labels: " << Quote(c.data.test_labels) << "\n";
    }
  } else {
    y << "  train: " << Quote(c.data.train) << "\n";
    if (!c.data.test.empty()) y << "  test: " << Quote(c.data.test) << "\n";
  }
  y << "training:\n  algorithm: " << kAlgorithmNames.Name(c.training.algorithm)
    << "\n  epochs: " << c.training.epochs << "\n  batch_size: " << c.training.batch_size
    << "\n  max_steps: " << c.training.max_steps
    << "\n  timeout_seconds: " << Num(c.training.timeout_seconds)
    << "\n  learning_rate_schedule: " << kScheduleNames.Name(c.training.learning_rate_schedule)
    << "\n";
  y << "downpour:\n  n_fetch: " << c.downpour.n_fetch << "\n  n_push: " << c.downpour.n_push
    << "\n  local_learning_rate: " << Num(c.downpour.local_learning_rate)
    << "\n  warm_start_steps: " << c.downpour.warm_start_steps << "\n";
  y << "sync:\n  quorum: " << c.sync.quorum << "\n  late_gradients: " << c.sync.late_gradients
    << "\n";
  y << "ssp:\n  bound: " << c.ssp.bound << "\n";
  y << "easgd:\n  tau: " << c.easgd.tau << "\n  "
    << (c.easgd.alpha > 0 ? "alpha: " + Num(c.easgd.alpha) : "beta: " + Num(c.easgd.beta))
    << "\n  learning_rate: " << Num(c.easgd.learning_rate)
    << "\n  momentum: " << Num(c.easgd.momentum) << "\n";
  y << "staleness:\n  policy: " << c.staleness.policy << "\n  bound: " << c.staleness.bound
    << "\n  dc_lambda: " << Num(c.staleness.dc_lambda) << "\n";
  y << "optimizer:\n  type: " << kOptimizerNames.Name(c.optimizer.type)
    << "\n  learning_rate: " << Num(c.optimizer.learning_rate)
    << "\n  momentum: " << Num(c.optimizer.momentum) << "\n  epsilon: " << Num(c.optimizer.epsilon)
    << "\n  initial_accumulator: " << Num(c.optimizer.initial_accumulator)
    << "\n  beta1: " << Num(c.optimizer.beta1) << "\n  beta2: " << Num(c.optimizer.beta2) << "\n";
  y << "evaluation:\n  interval_seconds: " << Num(c.evaluation.interval_seconds)
    << "\n  batch_size: " << c.evaluation.batch_size << "\n";
  y << "trace:\n  steps: " << c.trace.steps << "\n";
  y << "transport:\n  chunk_kib: " << c.transport.chunk_kib
    << "\n  max_in_flight: " << c.transport.max_in_flight
    << "\n  channels_per_server: " << c.transport.channels_per_server
    << "\n  rpc_timeout_seconds: " << Num(c.transport.rpc_timeout_seconds)
    << "\n  rendezvous_timeout_seconds: " << Num(c.transport.rendezvous_timeout_seconds)
    << "\n  overlap: " << c.transport.overlap
    << "\n  pull_with_push: " << (c.transport.pull_with_push ? "true" : "false")
    << "\n  compression: " << c.transport.compression
    << "\n  topk_fraction: " << Num(c.transport.topk_fraction) << "\n";
  y << "compute:\n  device: " << c.compute.device << "\n  threads: " << c.compute.threads
    << "\n  tf32: " << (c.compute.tf32 ? "true" : "false") << "\n";
  y << "reliability:\n  heartbeat_seconds: " << Num(c.reliability.heartbeat_seconds)
    << "\n  peer_timeout_seconds: " << Num(c.reliability.peer_timeout_seconds)
    << "\n  join_timeout_seconds: " << Num(c.reliability.join_timeout_seconds)
    << "\n  worker_loss: " << c.reliability.worker_loss
    << "\n  worker_restarts: " << c.reliability.worker_restarts
    << "\n  evaluator_restarts: " << c.reliability.evaluator_restarts
    << "\n  server_restarts: " << c.reliability.server_restarts << "\n";
  y << "checkpoint:\n  interval_seconds: " << Num(c.checkpoint.interval_seconds)
    << "\n  keep: " << c.checkpoint.keep << "\n";
  y << "security:\n";
  if (c.security.tls()) {
    y << "  tls_cert: " << Quote(c.security.tls_cert)
      << "\n  tls_key: " << Quote(c.security.tls_key) << "\n  tls_ca: " << Quote(c.security.tls_ca)
      << "\n";
  }
  y << "  tls_server_name: " << Quote(c.security.tls_server_name) << "\n";
  y << "network:\n  interface: " << Quote(c.network.interface) << "\n";
  std::vector<std::string> extra;
  for (const std::string& e : c.slurm.extra) extra.push_back(Quote(e));
  y << "slurm:\n  nodes: " << c.slurm.nodes << "\n  cpus_per_task: " << c.slurm.cpus_per_task
    << "\n  gpus_per_node: " << c.slurm.gpus_per_node << "\n  time: " << Quote(c.slurm.time)
    << "\n  partition: " << Quote(c.slurm.partition) << "\n  account: " << Quote(c.slurm.account)
    << "\n  extra: [" << absl::StrJoin(extra, ", ") << "]"
    << "\n  heterogeneous: " << (c.slurm.heterogeneous ? "true" : "false")
    << "\n  server_nodes: " << c.slurm.server_nodes << "\n  worker_nodes: " << c.slurm.worker_nodes
    << "\n  signal_seconds: " << c.slurm.signal_seconds << "\n";
  return y.str();
}

}  // namespace monsoon
