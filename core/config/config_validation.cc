#include "core/config/config_validation.h"

#include <algorithm>
#include <regex>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/config/derived_values.h"
#include "core/status_macros.h"

namespace monsoon {
namespace {

// The cross-field rules of ValidateJobConfig, by area; each returns the first broken one.
absl::Status ValidateCluster(const ClusterConfig& c) {
  if (c.ranks.empty()) {
    if (c.assignment != Assignment::kRanks) return absl::OkStatus();
    return absl::InvalidArgumentError("cluster.ranks: required when cluster.assignment is ranks");
  }
  const auto count = [&](RoleKind role) {
    return static_cast<int>(std::count(c.ranks.begin(), c.ranks.end(), role));
  };
  const int servers = count(RoleKind::kServer), workers = count(RoleKind::kWorker),
            evaluators = count(RoleKind::kEvaluator);
  if (servers == c.servers && workers == c.workers && evaluators == (c.evaluator ? 1 : 0)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("cluster.ranks: lists ", servers, " server(s), ", workers, " worker(s) and ",
                   evaluators, " evaluator(s); the cluster section has ", c.servers, ", ",
                   c.workers, " and ", c.evaluator ? 1 : 0));
}

// Nodes that push summed gradients: the rules that need each worker's own push, or a process
// of its own, cannot hold.
absl::Status ValidateNodes(const JobConfig& c) {
  if (!c.cluster.aggregate_per_node) return absl::OkStatus();
  const auto refused = [](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("cluster.aggregate_per_node: ", why));
  };
  if (c.cluster.workers_per_node == 1) {
    return refused("needs nodes of several workers (cluster.workers_per_node > 1)");
  }
  if (!PushesGradients(c.training.algorithm)) {
    return refused(absl::StrCat("the workers of ", kAlgorithmNames.Name(c.training.algorithm),
                                " each train a copy of their own and exchange weights, not "
                                "gradients: there is nothing to sum (use 1)"));
  }
  if (c.simulation.enabled) return refused("a simulated cluster pushes each worker's gradients");
  if (c.reliability.worker_restarts > 0) {
    return refused(
        "a restarted worker cannot rejoin its node's summed pushes: set "
        "reliability.worker_restarts to 0");
  }
  return absl::OkStatus();
}

// A program's model: only its input, output and size are Monsoon's to check.
absl::Status ValidateProgramModel(const ModelSpec& m) {
  if (!m.layers.empty() || !m.hidden.empty()) {
    return absl::InvalidArgumentError(
        "model.type is program: the model is the worker program's; leave out model.layers and "
        "model.hidden");
  }
  if (m.output_dim == 0) {
    return absl::InvalidArgumentError(
        "model.output_dim: required (the program's classes or regression targets)");
  }
  if (m.num_params > 0 && m.num_state >= m.num_params) {
    return absl::InvalidArgumentError(absl::StrCat("model.num_state: ", m.num_state, " of ",
                                                   m.num_params,
                                                   " values leaves no trained parameter"));
  }
  return absl::OkStatus();
}

absl::Status ValidateModel(const ModelSpec& m) {
  if (m.input_shape_from_data) return absl::OkStatus();  // checked by ResolveInputShape
  if (m.input_dim == 0) {
    return absl::InvalidArgumentError("model.input_dim: required (or model.input_shape)");
  }
  if (m.type == ModelType::kProgram) return ValidateProgramModel(m);
  if (m.num_params != 0 || m.num_state != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.", m.num_params != 0 ? "num_params" : "num_state",
                     ": only a program's model (model.type: program) gives its size"));
  }
  if (!m.input_shape.empty() && ShapeSize(m.input_shape) != m.input_dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.input_dim is ", m.input_dim, " but model.input_shape ",
                     ShapeText(m.input_shape), " holds ", ShapeSize(m.input_shape)));
  }
  if (m.type == ModelType::kLayers && m.layers.empty()) {
    return absl::InvalidArgumentError("model.type: layers needs the model.layers list");
  }
  if (m.type != ModelType::kLayers && !m.layers.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.layers: a layer list is the whole model; leave out model.type (",
                     kModelTypeNames.Name(m.type), " is a shorthand for a layer list)"));
  }
  const absl::StatusOr<std::vector<Shape>> shapes = LayerShapes(m);
  if (!shapes.ok()) return shapes.status();
  if (m.output_dim == 0) return absl::InvalidArgumentError("model.output_dim: required");
  if (m.type == ModelType::kLayers && ShapeSize(shapes->back()) != m.output_dim) {
    return absl::InvalidArgumentError(absl::StrCat("model.output_dim is ", m.output_dim,
                                                   " but the last layer's output is ",
                                                   ShapeText(shapes->back())));
  }
  if (m.type != ModelType::kMlp && !m.hidden.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.hidden: only an mlp has hidden layers (model.type is ",
                     kModelTypeNames.Name(m.type), ")"));
  }
  if (m.type == ModelType::kSoftmaxRegression && m.loss != LossType::kSoftmaxCrossEntropy) {
    return absl::InvalidArgumentError("model.loss: softmax_regression needs softmax_cross_entropy");
  }
  if (m.loss == LossType::kSoftmaxCrossEntropy && m.output_dim < 2) {
    return absl::InvalidArgumentError(
        "model.output_dim: softmax_cross_entropy needs at least 2 classes");
  }
  return absl::OkStatus();
}

absl::Status ValidateData(const DataConfig& d, bool evaluator) {
  const std::vector<DataFileField> fields = d.FileFields();
  const DataFileField* first_test = nullptr;
  for (const DataFileField& f : fields) {
    const std::string field = absl::StrCat("data.", f.key);
    if (f.format != d.format) {
      if (!f.given) continue;
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": only for format ", kDataFormatNames.Name(f.format),
                       " (data.format is ", kDataFormatNames.Name(d.format), ")"));
    }
    if (!f.test && !f.given) return absl::InvalidArgumentError(absl::StrCat(field, ": required"));
    if (!f.test) continue;
    if (first_test == nullptr) first_test = &f;
    if (f.given != first_test->given) {
      return absl::InvalidArgumentError(
          absl::StrCat("data.", first_test->given ? f.key : first_test->key, ": give data.",
                       first_test->key, " and data.", f.key, " together"));
    }
  }
  if (evaluator && !d.HasTestSet()) {
    return absl::InvalidArgumentError(
        absl::StrCat("data.", first_test->key, ": required when cluster.evaluator is true"));
  }
  if (d.format == DataFormat::kHdf5 && (d.features_dataset.empty() || d.targets_dataset.empty())) {
    return absl::InvalidArgumentError(
        absl::StrCat("data.", d.features_dataset.empty() ? "features_dataset" : "targets_dataset",
                     ": names an HDF5 dataset; it cannot be empty"));
  }
  return absl::OkStatus();
}

absl::Status ValidateReliability(const ReliabilityConfig& r, const TransportConfig& t) {
  if (r.peer_timeout_seconds < 2 * r.heartbeat_seconds) {
    return absl::InvalidArgumentError(
        absl::StrCat("reliability.peer_timeout_seconds: must be at least twice heartbeat_seconds (",
                     r.heartbeat_seconds, "), got ", r.peer_timeout_seconds));
  }
  if (r.join_timeout_seconds < t.rendezvous_timeout_seconds) {
    return absl::InvalidArgumentError(absl::StrCat(
        "reliability.join_timeout_seconds: must be at least transport.rendezvous_timeout_seconds (",
        t.rendezvous_timeout_seconds, "), got ", r.join_timeout_seconds));
  }
  return absl::OkStatus();
}

absl::Status ValidateSecurityAndSlurm(const SecurityConfig& sec, const SlurmConfig& s) {
  const int tls_files = !sec.tls_cert.empty() + !sec.tls_key.empty() + !sec.tls_ca.empty();
  if (tls_files != 0 && tls_files != 3) {
    return absl::InvalidArgumentError(
        "security: TLS needs all of tls_cert, tls_key and tls_ca (or none of them)");
  }
  if (sec.tls_server_name.empty()) {
    return absl::InvalidArgumentError("security.tls_server_name: must not be empty");
  }
  if (s.time.empty()) return absl::InvalidArgumentError("slurm.time: must not be empty");
  // The forms sbatch --time takes.
  static const std::regex kSlurmTime(
      R"(\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d{1,2}(:\d{1,2}(:\d{1,2})?)?|UNLIMITED|INFINITE)");
  if (!std::regex_match(s.time, kSlurmTime)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "slurm.time: expected MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS, DAYS-HOURS, "
        "DAYS-HOURS:MINUTES, DAYS-HOURS:MINUTES:SECONDS or UNLIMITED (sbatch --time), got '",
        s.time, "'"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateJobConfig(const JobConfig& c) {
  MONSOON_RETURN_IF_ERROR(ValidateCluster(c.cluster));
  for (const int w : c.stragglers.slow_workers) {
    if (w >= c.cluster.workers) {
      return absl::InvalidArgumentError(absl::StrCat("stragglers.slow_workers: worker ", w,
                                                     " does not exist (cluster.workers is ",
                                                     c.cluster.workers, ")"));
    }
  }
  MONSOON_RETURN_IF_ERROR(ValidateData(c.data, c.cluster.evaluator && !c.evaluation.by_program));
  MONSOON_RETURN_IF_ERROR(ValidateModel(c.model));
  if ((c.model.type == ModelType::kProgram) != !c.cluster.worker_program.empty()) {
    return absl::InvalidArgumentError(
        c.cluster.worker_program.empty()
            ? "model.type is program: name the program in cluster.worker_program"
            : "cluster.worker_program: the program's model needs model.type: program");
  }
  if (c.sync.quorum > 0 && c.sync.backup_fraction > 0) {
    return absl::InvalidArgumentError(
        "sync.backup_fraction: set it or sync.quorum, not both (quorum fixes K itself)");
  }
  if (c.simulation.enabled && !c.cluster.worker_program.empty()) {
    return absl::InvalidArgumentError(
        "simulation.enabled: a simulated cluster trains Monsoon's own models; a worker "
        "program's (cluster.worker_program) runs only as real processes");
  }
  if (c.evaluation.by_program && c.cluster.worker_program.empty()) {
    return absl::InvalidArgumentError(
        "evaluation.by_program: only a worker program (cluster.worker_program) has an "
        "evaluation function of its own");
  }
  if (c.staleness.dc_lambda > 0 && c.training.algorithm != Algorithm::kDownpour &&
      c.training.algorithm != Algorithm::kSsp) {
    return absl::InvalidArgumentError(
        absl::StrCat("staleness.dc_lambda: delay compensation applies to downpour and ssp, not ",
                     kAlgorithmNames.Name(c.training.algorithm)));
  }
  if (c.compute.device == Device::kCpu && c.compute.precision != Precision::kFp32) {
    return absl::InvalidArgumentError(absl::StrCat(
        "compute.precision: ", kPrecisionNames.Name(c.compute.precision),
        " is tensor-core arithmetic on a GPU; compute.device cpu computes in fp32"));
  }
  if (c.network.link_mbit > 0 && c.network.hosts != HostsKind::kNamespaces) {
    return absl::InvalidArgumentError(
        "network.link_mbit: a link rate needs emulated hosts (network.hosts: namespaces)");
  }
  MONSOON_RETURN_IF_ERROR(ValidateReliability(c.reliability, c.transport));
  MONSOON_RETURN_IF_ERROR(ValidateNodes(c));
  return ValidateSecurityAndSlurm(c.security, c.slurm);
}

bool IsRunNameChar(char ch, bool first) {
  return absl::ascii_isalnum(static_cast<unsigned char>(ch)) || ch == '_' ||
         (!first && (ch == '.' || ch == '-'));
}

absl::Status CheckRunName(const std::string& field, const std::string& name) {
  bool ok = !name.empty() && name.size() <= 128;
  for (size_t i = 0; ok && i < name.size(); ++i) ok = IsRunNameChar(name[i], i == 0);
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      field,
      ": expected 1 to 128 letters, digits, '.', '_' and '-', the first a letter, digit "
      "or '_' (it names a directory), got '",
      absl::CEscape(name), "'"));
}

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
  if (config.training.warmup_epochs >= config.training.epochs) {
    warnings.push_back(absl::StrCat("training.warmup_epochs (", config.training.warmup_epochs,
                                    ") is not shorter than training.epochs (",
                                    config.training.epochs,
                                    "): the learning rate never reaches its value"));
  }
  return warnings;
}

}  // namespace monsoon
