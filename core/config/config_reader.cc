#include "core/config/config_reader.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/config/config_schema.h"
#include "core/config/config_validation.h"
#include "core/config/yaml_section.h"
#include "core/file_util.h"
#include "core/status_macros.h"

namespace monsoon {
namespace {

namespace fs = std::filesystem;

absl::StatusOr<LayerSpec> OneLayer(const YAML::Node& item, const std::string& where);

// Reads one layer's settings from `settings` (at `at`, "model.layers[2].conv2d"): each
// setting its kind visits from the file, or from its default when the file leaves it out.
// status() is the first error, an unknown setting's before any value's.
class LayerSettingsReader : public LayerSettingVisitor {
 public:
  LayerSettingsReader(const YAML::Node& settings, std::string at)
      : settings_(settings), at_(std::move(at)) {}

  void Int(const char* key, int* value, int min, int max, const SettingDefault& d) override {
    std::string text;
    if (!Text(key, d, &text)) return;
    if (!absl::SimpleAtoi(text, value) || *value < min || *value > max) {
      Fail(key, absl::StrCat("expected an integer in [", min, ", ", max, "], got '", text, "'"));
    }
  }
  void Real(const char* key, double* value, double min, double max,
            const SettingDefault& d) override {
    std::string text;
    if (!Text(key, d, &text)) return;
    if (!absl::SimpleAtod(text, value) || !(*value >= min) || !(*value < max)) {
      Fail(key, absl::StrCat("expected a number in [", min, ", ", max, "), got '", text, "'"));
    }
  }
  void Choice(const char* key, std::string* value, const std::vector<std::string>& allowed,
              const SettingDefault& d) override {
    std::string text;
    if (!Text(key, d, &text)) return;
    if (std::find(allowed.begin(), allowed.end(), text) == allowed.end()) {
      Fail(key, absl::StrCat("'", text, "' is not allowed (allowed: ", absl::StrJoin(allowed, ", "),
                             ")"));
      return;
    }
    *value = text;
  }
  void Layers(const char* key, std::vector<LayerSpec>* value) override {
    keys_.push_back(key);
    required_.push_back(key);
    const YAML::Node n = settings_.IsMap() ? settings_[key] : YAML::Node(YAML::NodeType::Undefined);
    if (!n || !n.IsSequence() || n.size() == 0) {
      Fail(key, "expected a non-empty list of layers, like [conv2d: {filters: 16, kernel: 3}]");
      return;
    }
    value->clear();
    for (size_t i = 0; i < n.size(); ++i) {
      absl::StatusOr<LayerSpec> layer = OneLayer(n[i], absl::StrCat(at_, ".", key, "[", i, "]"));
      if (!layer.ok()) {
        if (first_error_.ok()) first_error_ = layer.status();
        return;
      }
      value->push_back(*std::move(layer));
    }
  }

  absl::Status status() const {
    const bool none =
        !settings_ || settings_.IsNull() || (settings_.IsMap() && settings_.size() == 0);
    if (keys_.empty() && !none) {
      return absl::InvalidArgumentError(absl::StrCat(at_, ": takes no settings"));
    }
    if (!required_.empty() && (none || !settings_.IsMap())) {
      return absl::InvalidArgumentError(
          absl::StrCat(at_, ": needs {", absl::StrJoin(required_, ": ..., "), ": ...}"));
    }
    if (settings_.IsMap()) {
      for (const auto& kv : settings_) {
        const std::string key = kv.first.Scalar();
        if (std::find(keys_.begin(), keys_.end(), key) == keys_.end()) {
          return absl::InvalidArgumentError(absl::StrCat(
              at_, ".", key, ": unknown setting (allowed: ", absl::StrJoin(keys_, ", "), ")"));
        }
      }
    }
    return first_error_;
  }

 private:
  // The setting's text, from the file or its default; false (and an error where it is
  // required or not a single value) when there is none to read.
  bool Text(const char* key, const SettingDefault& d, std::string* text) {
    keys_.push_back(key);
    if (d.value.empty()) required_.push_back(key);
    const YAML::Node n = settings_.IsMap() ? settings_[key] : YAML::Node(YAML::NodeType::Undefined);
    if (!n) {
      if (d.value.empty()) Fail(key, "required");
      *text = d.value;
      return !d.value.empty();
    }
    if (!n.IsScalar()) {
      Fail(key, "expected a single value, got a list or map");
      return false;
    }
    *text = n.Scalar();
    return true;
  }
  void Fail(const char* key, const std::string& what) {
    if (first_error_.ok()) {
      first_error_ = absl::InvalidArgumentError(absl::StrCat(at_, ".", key, ": ", what));
    }
  }

  const YAML::Node settings_;
  const std::string at_;
  std::vector<std::string> keys_;      // every setting the kind takes, in order
  std::vector<std::string> required_;  // those without a default
  absl::Status first_error_;
};

// One item of model.layers, at `where` ("model.layers[2]").
absl::StatusOr<LayerSpec> OneLayer(const YAML::Node& item, const std::string& where) {
  std::string name;
  YAML::Node settings;
  if (item.IsScalar()) {
    name = item.Scalar();
  } else if (item.IsMap() && item.size() == 1) {
    name = item.begin()->first.Scalar();
    settings = item.begin()->second;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": expected a layer's name or one `layer: {settings}` pair"));
  }
  const absl::StatusOr<LayerKind> kind = kLayerKindNames.Parse(name);
  if (!kind.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": unknown layer '", name,
                     "' (layers: ", absl::StrJoin(kLayerKindNames.AllNames(), ", "), ")"));
  }
  LayerSpec layer;
  layer.kind = *kind;
  LayerSettingsReader reader(settings, absl::StrCat(where, ".", name));
  DeclOf(layer.kind).settings(layer, reader);
  MONSOON_RETURN_IF_ERROR(reader.status());
  return layer;
}

// A value that `monsoon sbatch` writes into an #SBATCH line as it is: one word, so it can
// neither end the line nor split into two options.
absl::Status CheckSbatchWord(const std::string& field, const std::string& value) {
  for (char ch : value) {
    if (absl::ascii_isspace(static_cast<unsigned char>(ch)) ||
        absl::ascii_iscntrl(static_cast<unsigned char>(ch)) || ch == '"' || ch == '\'' ||
        ch == '\\') {
      return absl::InvalidArgumentError(absl::StrCat(
          field,
          ": expected one word (no spaces, quotes, backslashes or control characters), "
          "got '",
          absl::CEscape(value), "'"));
    }
  }
  return absl::OkStatus();
}

// Reads every field VisitJobConfig declares from a YAML tree; keeps the first error.
class YamlReader {
 public:
  YamlReader(YamlSection* top, std::string base_dir)
      : section_(top), base_dir_(std::move(base_dir)) {}
  const absl::Status& status() const { return status_; }

  template <class Body>
  void Section(const char* key, const char* /*note*/, Body body) {
    if (!status_.ok()) return;
    absl::StatusOr<YamlSection> child = section_->Child(key);
    if (!child.ok()) {
      status_ = child.status();
      return;
    }
    YamlSection* parent = section_;
    section_ = &*child;
    body();
    if (status_.ok()) status_ = section_->CheckNoUnknownKeys();
    section_ = parent;
  }

  template <class T, class Spec>
  void Field(const char* key, T* value, const Spec& spec, const Doc& /*doc*/) {
    if (status_.ok()) status_ = Read(key, value, spec);
  }

  void Exclusive(const char* a, const char* b, const char* message) {
    if (status_.ok() && section_->Has(a) && section_->Has(b)) {
      status_ = absl::InvalidArgumentError(absl::StrCat(section_->Path(b), ": ", message));
    }
  }

  template <class T>
  void Derive(T* value, T value_now) {
    if (status_.ok()) *value = value_now;
  }

 private:
  absl::Status Read(const char* key, int* v, IntRange r) {
    return section_->Int(key, r.min, r.max, v);
  }
  absl::Status Read(const char* key, uint64_t* v, AnyUint64) { return section_->Uint64(key, v); }
  template <class T>
  absl::Status Read(const char* key, T* v, RealRange r) {
    return section_->Real(key, r.min, r.min_open, r.max, v);
  }
  absl::Status Read(const char* key, double* v, SecondsOrOff spec) {
    std::string text;
    MONSOON_RETURN_IF_ERROR(section_->String(key, {}, &text));
    if (text == "off") {
      *v = kStallWatchOff;
      return absl::OkStatus();
    }
    return section_->Real(key, 0, false, spec.max, v);
  }
  absl::Status Read(const char* key, bool* v, Flag) { return section_->Bool(key, v); }
  absl::Status Read(const char* key, std::string* v, Text) { return section_->String(key, {}, v); }
  absl::Status Read(const char* key, CudnnLibrary* v, CudnnPath) {
    std::string text = v->Text();  // kept where the key is absent
    MONSOON_RETURN_IF_ERROR(section_->String(key, {}, &text));
    absl::StatusOr<CudnnLibrary> parsed = CudnnLibrary::Parse(text);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(section_->Path(key), ": ", parsed.status().message()));
    }
    *v = *std::move(parsed);
    return absl::OkStatus();
  }
  absl::Status Read(const char* key, std::string* v, Word) {
    MONSOON_RETURN_IF_ERROR(section_->String(key, {}, v));
    return CheckSbatchWord(section_->Path(key), *v);
  }
  absl::Status Read(const char* key, std::string* v, RunName) {
    MONSOON_RETURN_IF_ERROR(section_->String(key, {}, v));
    return CheckRunName(section_->Path(key), *v);
  }
  absl::Status Read(const char* key, std::string* v, Path) {
    return section_->File(key, base_dir_, v);
  }
  absl::Status Read(const char* key, std::vector<int>* v, IntList list) {
    return section_->IntList(key, list.min, v);
  }
  absl::Status Read(const char* key, std::vector<std::string>* v, PathList) {
    return section_->FileList(key, base_dir_, v);
  }
  absl::Status Read(const char* key, std::vector<int>* v, ShapeFromData spec) {
    MONSOON_RETURN_IF_ERROR(section_->IntList(key, 1, v));
    // A CSV's columns are features or targets only by the model's output size: its shape is
    // not read from it.
    const DataConfig& data = *spec.data;
    *spec.from_data = v->empty() && !section_->Has("input_dim") &&
                      data.format != DataFormat::kCsv && data.HasTrainingSet();
    return absl::OkStatus();
  }
  absl::Status Read(const char* key, std::vector<std::string>* v, SbatchOptions) {
    MONSOON_RETURN_IF_ERROR(section_->StringList(key, {}, v));
    for (size_t i = 0; i < v->size(); ++i) {
      const std::string& option = (*v)[i];
      if (option.rfind("--", 0) != 0 || option.find('\n') != std::string::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat(section_->Path(key), "[", i,
                         "]: expected one sbatch option like --mail-type=END, got '", option, "'"));
      }
    }
    return absl::OkStatus();
  }
  absl::Status Read(const char* key, std::vector<std::string>* v, ProgramArgs) {
    MONSOON_RETURN_IF_ERROR(section_->StringList(key, {}, v));
    for (size_t i = 0; i < v->size(); ++i) {
      std::string& arg = (*v)[i];
      if (arg.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(section_->Path(key), "[", i, "]: an empty argument"));
      }
      const fs::path beside = fs::path(base_dir_) / arg;
      std::error_code ec;
      if (fs::path(arg).is_relative() && fs::is_regular_file(beside, ec)) {
        arg = fs::absolute(beside, ec).lexically_normal().string();
      }
    }
    return absl::OkStatus();
  }
  // Each item a layer's name ("relu", "flatten") or a one-key map of a layer to its settings
  // ({dense: {units: 128}}).
  absl::Status Read(const char* key, std::vector<LayerSpec>* v, LayerList) {
    MONSOON_ASSIGN_OR_RETURN(const YAML::Node n, section_->Field(key));
    if (!n) return absl::OkStatus();
    if (!n.IsSequence()) {
      return absl::InvalidArgumentError(absl::StrCat(
          section_->Path(key), ": expected a list of layers, like [flatten, dense: {units: 10}]"));
    }
    std::vector<LayerSpec> layers;
    for (size_t i = 0; i < n.size(); ++i) {
      MONSOON_ASSIGN_OR_RETURN(LayerSpec layer,
                               OneLayer(n[i], absl::StrCat(section_->Path(key), "[", i, "]")));
      layers.push_back(layer);
    }
    *v = layers;
    return absl::OkStatus();
  }
  absl::Status Read(const char* key, std::vector<std::string>* v, ShellLines) {
    MONSOON_RETURN_IF_ERROR(section_->StringList(key, {}, v));
    for (size_t i = 0; i < v->size(); ++i) {
      if ((*v)[i].empty() || (*v)[i].find_first_of("\n\r") != std::string::npos) {
        return absl::InvalidArgumentError(absl::StrCat(
            section_->Path(key), "[", i, "]: expected one line of shell, got '", (*v)[i], "'"));
      }
    }
    return absl::OkStatus();
  }
  template <class E>
  absl::Status Read(const char* key, E* v, const EnumNames<E>& names) {
    return section_->Enum(key, names, v);
  }
  template <class E>
  absl::Status Read(const char* key, std::vector<E>* v, const EnumNames<E>& names) {
    return section_->EnumList(key, names, v);
  }

  YamlSection* section_;  // the mapping being read; borrowed
  const std::string base_dir_;
  absl::Status status_;
};

}  // namespace

absl::StatusOr<JobConfig> ParseJobConfig(const std::string& yaml_text, const std::string& base_dir,
                                         const std::vector<std::string>& overrides) {
  // yaml-cpp reports errors by exception; this is the one place they are caught.
  try {
    MONSOON_ASSIGN_OR_RETURN(YAML::Node root, LoadOneDocument(yaml_text));
    if (!root || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
    for (const std::string& o : overrides) MONSOON_RETURN_IF_ERROR(ApplyOverride(root, o));
    if (!root.IsMap()) {
      return absl::InvalidArgumentError("top level: expected a mapping of sections");
    }
    JobConfig config;
    YamlSection top(root, "");
    YamlReader reader(&top, base_dir);
    VisitJobConfig(config, reader);
    MONSOON_RETURN_IF_ERROR(reader.status());
    MONSOON_RETURN_IF_ERROR(top.CheckNoUnknownKeys());
    MONSOON_RETURN_IF_ERROR(ValidateJobConfig(config));
    return config;
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("YAML syntax error at line ", e.mark.line + 1,
                                                   ", column ", e.mark.column + 1, ": ", e.msg));
  }
}

absl::StatusOr<JobConfig> LoadJobConfig(const std::string& path,
                                        const std::vector<std::string>& overrides) {
  absl::StatusOr<std::string> text = ReadRegularFile(path, kMaxConfigBytes);
  if (absl::IsNotFound(text.status())) {
    return absl::NotFoundError(absl::StrCat("config file not found: ", path));
  }
  if (!text.ok()) return text.status();
  const std::string dir = fs::absolute(fs::path(path)).parent_path().string();
  auto config = ParseJobConfig(*text, dir, overrides);
  if (!config.ok()) {
    return absl::Status(config.status().code(),
                        absl::StrCat(path, ": ", config.status().message()));
  }
  return config;
}

}  // namespace monsoon
