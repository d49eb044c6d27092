#include "launcher/summary.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/metrics.h"
#include "core/model.h"
#include "core/status_macros.h"

namespace monsoon {
namespace {

double Column(const std::vector<std::pair<std::string, double>>& row, const std::string& name) {
  for (const auto& [key, value] : row) {
    if (key == name) return value;
  }
  return 0;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppend(&out, "\\u", absl::Hex(c, absl::kZeroPad4));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string JsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  return absl::StrFormat("%.10g", v);
}

}  // namespace

JobProgress ReadProgress(const JobConfig& config, const RunDir& run_dir) {
  JobProgress p;
  p.min_epoch = std::numeric_limits<double>::infinity();
  for (int i = 0; i < config.cluster.workers; ++i) {
    const auto row = ReadLastCsvRow(absl::StrCat(run_dir.metrics_dir(), "/worker-", i, ".csv"));
    p.min_epoch = std::min(p.min_epoch, Column(row, "epoch"));
    p.samples_per_second += Column(row, "samples_per_second");
    p.worker_seconds = std::max(p.worker_seconds, Column(row, "wall_seconds"));
  }
  for (int j = 0; j < config.cluster.servers; ++j) {
    const auto row = ReadLastCsvRow(absl::StrCat(run_dir.metrics_dir(), "/server-", j, ".csv"));
    p.workers_lost = std::max(p.workers_lost, static_cast<int>(Column(row, "workers_lost")));
  }
  const auto eval = ReadLastCsvRow(run_dir.metrics_dir() + "/evaluator.csv");
  if (!eval.empty()) {
    p.has_eval = true;
    p.test_accuracy = Column(eval, "test_accuracy");
    p.test_loss = Column(eval, "test_loss");
    p.global_step = Column(eval, "global_step");
  }
  return p;
}

absl::StatusOr<std::string> WriteSummary(const JobConfig& config, const RunDir& run_dir,
                                         double wall_seconds) {
  const JobProgress p = ReadProgress(config, run_dir);
  const bool classify = config.model.loss == LossType::kSoftmaxCrossEntropy;
  const std::vector<ParamTensor> layout = Model::Layout(config.model);
  const size_t num_params = Model::NumParams(config.model);

  std::vector<float> values;
  const bool have_params = config.cluster.evaluator;
  if (have_params) {
    MONSOON_ASSIGN_OR_RETURN(std::string bytes, ReadFile(run_dir.params_path()));
    if (bytes.size() != num_params * sizeof(float)) {
      return absl::DataLossError(absl::StrCat(run_dir.params_path(), " has ", bytes.size(),
                                              " bytes; expected ", num_params * sizeof(float)));
    }
    values.resize(num_params);
    std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(values.data()));
  }
  std::vector<std::string> tensors;
  for (const ParamTensor& t : layout) {
    std::string entry = absl::StrCat("    {\"name\": ", JsonString(t.shape.name), ", \"shape\": [",
                                     t.shape.rows, ", ", t.shape.cols, "], \"offset\": ", t.offset);
    if (have_params && num_params <= 64) {
      std::vector<std::string> v;
      for (size_t i = 0; i < t.shape.size(); ++i) v.push_back(JsonNumber(values[t.offset + i]));
      absl::StrAppend(&entry, ", \"values\": [", absl::StrJoin(v, ", "), "]");
    }
    tensors.push_back(entry + "}");
  }
  const std::string json = absl::StrCat(
      "{\n", "  \"job\": ", JsonString(config.job), ",\n",
      "  \"algorithm\": ", JsonString(kAlgorithmNames.Name(config.training.algorithm)), ",\n",
      "  \"run_dir\": ", JsonString(run_dir.root), ",\n", "  \"servers\": ", config.cluster.servers,
      ",\n", "  \"workers\": ", config.cluster.workers, ",\n",
      "  \"workers_lost\": ", p.workers_lost, ",\n",
      "  \"final_test_accuracy\": ", p.has_eval && classify ? JsonNumber(p.test_accuracy) : "null",
      ",\n", "  \"final_test_loss\": ", p.has_eval ? JsonNumber(p.test_loss) : "null", ",\n",
      "  \"global_step\": ", p.has_eval ? JsonNumber(p.global_step) : "null", ",\n",
      "  \"wall_seconds\": ", JsonNumber(wall_seconds), ",\n",
      "  \"training_seconds\": ", JsonNumber(p.worker_seconds), ",\n",
      "  \"samples_per_second\": ", JsonNumber(p.samples_per_second), ",\n",
      "  \"epochs\": ", JsonNumber(p.min_epoch), ",\n", "  \"num_parameters\": ", num_params, ",\n",
      "  \"params_file\": ", have_params ? JsonString(run_dir.params_path()) : "null", ",\n",
      "  \"params_format\": \"raw little-endian float32, flat layout below\",\n",
      "  \"parameters\": [\n", absl::StrJoin(tensors, ",\n"), "\n  ]\n", "}\n");
  MONSOON_RETURN_IF_ERROR(WriteFileAtomically(run_dir.summary_path(), json));
  return json;
}

}  // namespace monsoon
