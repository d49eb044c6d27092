#include "core/config/job_config.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/config/config_schema.h"
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
    const YAML::Node n =
        settings_.IsMap() ? settings_[key] : YAML::Node(YAML::NodeType::Undefined);
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
          return absl::InvalidArgumentError(absl::StrCat(at_, ".", key,
                                                         ": unknown setting (allowed: ",
                                                         absl::StrJoin(keys_, ", "), ")"));
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
    const YAML::Node n =
        settings_.IsMap() ? settings_[key] : YAML::Node(YAML::NodeType::Undefined);
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

// Reads the fields of one YAML mapping, remembering which keys were read so that any other
// key is reported as unknown. Every error message starts with the field's dotted path.
class YamlSection {
 public:
  YamlSection(const YAML::Node& node, std::string path) : node_(node), path_(std::move(path)) {}

  absl::Status CheckIsMap() const {
    if (!node_ || node_.IsNull() || node_.IsMap()) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(Name(), ": expected a mapping of fields"));
  }

  absl::StatusOr<YamlSection> Child(const std::string& key) {
    known_.insert(key);
    YamlSection child(Get(key), Path(key));
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

  // model.layers: each item a layer's name ("relu", "flatten") or a one-key map of a layer to
  // its settings ({dense: {units: 128}}).
  absl::Status Layers(const std::string& key, std::vector<LayerSpec>* out) {
    MONSOON_ASSIGN_OR_RETURN(const YAML::Node n, Field(key));
    if (!n) return absl::OkStatus();
    if (!n.IsSequence()) {
      return absl::InvalidArgumentError(absl::StrCat(
          Path(key), ": expected a list of layers, like [flatten, dense: {units: 10}]"));
    }
    std::vector<LayerSpec> layers;
    for (size_t i = 0; i < n.size(); ++i) {
      MONSOON_ASSIGN_OR_RETURN(LayerSpec layer,
                               OneLayer(n[i], absl::StrCat(Path(key), "[", i, "]")));
      layers.push_back(layer);
    }
    *out = layers;
    return absl::OkStatus();
  }

  // A list of `names`' values.
  template <typename E>
  absl::Status EnumList(const std::string& key, const EnumNames<E>& names, std::vector<E>* out) {
    std::vector<std::string> texts;
    MONSOON_RETURN_IF_ERROR(StringList(key, names.AllNames(), &texts));
    out->clear();
    for (const std::string& t : texts) out->push_back(*names.Parse(t));
    return absl::OkStatus();
  }

  // A path to an existing file; relative paths resolve against base_dir. Absent or "": not given.
  absl::Status File(const std::string& key, const std::string& base_dir, std::string* out) {
    std::string text;
    MONSOON_ASSIGN_OR_RETURN(bool present, Scalar(key, &text));
    if (!present || text.empty()) return absl::OkStatus();
    return ExistingFile(Path(key), text, base_dir, out);
  }

  // A list of paths to existing files, resolved as File's; a single path is a list of one.
  absl::Status FileList(const std::string& key, const std::string& base_dir,
                        std::vector<std::string>* out) {
    MONSOON_ASSIGN_OR_RETURN(const YAML::Node n, Field(key));
    if (n && n.IsScalar()) {
      std::string path;
      MONSOON_RETURN_IF_ERROR(File(key, base_dir, &path));
      *out = {path};
      return absl::OkStatus();
    }
    std::vector<std::string> texts;
    MONSOON_RETURN_IF_ERROR(StringList(key, {}, &texts));
    out->assign(texts.size(), "");
    for (size_t i = 0; i < texts.size(); ++i) {
      MONSOON_RETURN_IF_ERROR(
          ExistingFile(absl::StrCat(Path(key), "[", i, "]"), texts[i], base_dir, &(*out)[i]));
    }
    return absl::OkStatus();
  }

  // True when the mapping has `key` (with or without a value).
  bool Has(const std::string& key) const { return static_cast<bool>(Get(key)); }

  std::string Path(const std::string& key) const {
    return path_.empty() ? key : absl::StrCat(path_, ".", key);
  }

  // `text` as an absolute path to a readable regular file, or an error naming `field`.
  static absl::Status ExistingFile(const std::string& field, const std::string& text,
                                   const std::string& base_dir, std::string* out) {
    fs::path p(text);
    if (p.is_relative()) p = fs::path(base_dir) / p;
    std::error_code ec;
    p = fs::absolute(p, ec).lexically_normal();
    const absl::Status readable = CheckRegularFile(p.string()).status();
    if (!readable.ok()) {
      return absl::Status(readable.code(), absl::StrCat(field, ": ", readable.message()));
    }
    *out = p.string();
    return absl::OkStatus();
  }

  // InvalidArgument naming the first key that no reader asked for.
  absl::Status CheckNoUnknownKeys() const {
    if (!node_ || !node_.IsMap()) return absl::OkStatus();
    for (const auto& kv : node_) {
      const std::string key = kv.first.Scalar();
      if (known_.count(key) == 0 && path_.empty() && key == "study") {
        return absl::InvalidArgumentError(
            "study: this is a study file, not a job: run it with `monsoon compare`");
      }
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
    return absl::InvalidArgumentError(absl::StrCat("--set ", path, ": no value (write ", path,
                                                   "=VALUE; to get a field's default, leave it "
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

// InvalidArgument naming a key that a mapping under `node` (at `path`) holds twice: YAML
// forbids it, and yaml-cpp would silently take the first.
absl::Status CheckNoDuplicateKeys(const YAML::Node& node, const std::string& path) {
  if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      MONSOON_RETURN_IF_ERROR(CheckNoDuplicateKeys(node[i], absl::StrCat(path, "[", i, "]")));
    }
  }
  if (!node.IsMap()) return absl::OkStatus();
  std::map<std::string, int> lines;  // key -> line of its first occurrence (1-based)
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    const std::string field = path.empty() ? key : absl::StrCat(path, ".", key);
    const auto [first, fresh] = lines.emplace(key, kv.first.Mark().line + 1);
    if (!fresh) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": given twice (lines ", first->second,
                                                     " and ", kv.first.Mark().line + 1, ")"));
    }
    MONSOON_RETURN_IF_ERROR(CheckNoDuplicateKeys(kv.second, field));
  }
  return absl::OkStatus();
}

// The one YAML document of a job file, its keys each given once. InvalidArgument for a second
// document (`---`), which yaml-cpp would ignore.
absl::StatusOr<YAML::Node> LoadOneDocument(const std::string& text) {
  std::vector<YAML::Node> documents = YAML::LoadAll(text);
  if (documents.size() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("line ", documents[1].Mark().line + 1,
                     ": a second YAML document; a job file holds one (remove the '---')"));
  }
  if (documents.empty()) return YAML::Node();
  MONSOON_RETURN_IF_ERROR(CheckNoDuplicateKeys(documents[0], ""));
  return documents[0];
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

// Shortest decimal text that reads back as the same value.
template <typename T>
std::string Num(T v) {
  char text[32];
  const std::to_chars_result end = std::to_chars(text, text + sizeof(text), v);
  return std::string(text, end.ptr);
}

std::string Quote(const std::string& s) {
  YAML::Emitter e;
  e << YAML::DoubleQuoted << s;
  return e.c_str();
}

std::string LayerText(LayerSpec l);

// Writes one layer's settings as a YAML flow mapping's body: "filters: 8, kernel: 3".
class LayerSettingsWriter : public LayerSettingVisitor {
 public:
  void Int(const char* key, int* value, int, int, const SettingDefault&) override {
    Add(key, absl::StrCat(*value));
  }
  void Real(const char* key, double* value, double, double, const SettingDefault&) override {
    Add(key, Num(*value));
  }
  void Choice(const char* key, std::string* value, const std::vector<std::string>&,
              const SettingDefault&) override {
    Add(key, *value);
  }
  void Layers(const char* key, std::vector<LayerSpec>* value) override {
    std::vector<std::string> items;
    for (const LayerSpec& l : *value) items.push_back(LayerText(l));
    Add(key, absl::StrCat("[", absl::StrJoin(items, ", "), "]"));
  }
  const std::string& text() const { return text_; }

 private:
  void Add(const char* key, const std::string& value) {
    absl::StrAppend(&text_, text_.empty() ? "" : ", ", key, ": ", value);
  }
  std::string text_;
};

// A layer as model.layers writes it: "relu", "{dense: {units: 10}}".
std::string LayerText(LayerSpec l) {
  LayerSettingsWriter writer;
  DeclOf(l.kind).settings(l, writer);
  const std::string name = kLayerKindNames.Name(l.kind);
  return writer.text().empty() ? name : absl::StrCat("{", name, ": {", writer.text(), "}}");
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
  absl::Status Read(const char* key, bool* v, Flag) { return section_->Bool(key, v); }
  absl::Status Read(const char* key, std::string* v, Text) { return section_->String(key, {}, v); }
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
  absl::Status Read(const char* key, std::vector<LayerSpec>* v, LayerList) {
    return section_->Layers(key, v);
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

// Writes every field VisitJobConfig declares as YAML that YamlReader reads back the same.
// Writes the resolved YAML, and collects each field written as ("section.key", value text).
class YamlWriter {
 public:
  std::string text() const { return out_.str(); }
  const std::vector<std::pair<std::string, std::string>>& fields() const { return fields_; }

  template <class Body>
  void Section(const char* key, const char* /*note*/, Body body) {
    out_ << key << ":\n";
    indent_ = "  ";
    section_ = absl::StrCat(key, ".");
    body();
    indent_.clear();
    section_.clear();
  }

  template <class T, class Spec>
  void Field(const char* key, T* value, const Spec& spec, const Doc& doc) {
    if (!doc.written()) return;
    const std::optional<std::string> text = Format(*value, spec);
    if (!text.has_value()) return;
    out_ << indent_ << key << ": " << *text << "\n";
    fields_.emplace_back(section_ + key, *text);
  }

  void Exclusive(const char*, const char*, const char*) {}
  template <class T>
  void Derive(T*, T) {}

  // The value's YAML text; nothing for a path that is not given.
  static std::optional<std::string> Format(int v, IntRange) { return absl::StrCat(v); }
  static std::optional<std::string> Format(uint64_t v, AnyUint64) { return absl::StrCat(v); }
  template <class T>
  static std::optional<std::string> Format(T v, RealRange) {
    return Num(v);
  }
  static std::optional<std::string> Format(bool v, Flag) { return v ? "true" : "false"; }
  static std::optional<std::string> Format(const std::string& v, Text) { return Quote(v); }
  static std::optional<std::string> Format(const std::string& v, Word) { return Quote(v); }
  static std::optional<std::string> Format(const std::string& v, RunName) { return Quote(v); }
  static std::optional<std::string> Format(const std::string& v, Path) {
    if (v.empty()) return std::nullopt;
    return Quote(v);
  }
  static std::optional<std::string> Format(const std::vector<int>& v, IntList) {
    return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
  }
  static std::optional<std::string> Format(const std::vector<int>& v, ShapeFromData) {
    if (v.empty()) return std::nullopt;
    return Format(v, IntList{1});
  }
  static std::optional<std::string> Format(const std::vector<std::string>& v, PathList) {
    if (v.empty()) return std::nullopt;
    return QuotedList(v);
  }
  static std::optional<std::string> Format(const std::vector<std::string>& v, SbatchOptions) {
    return QuotedList(v);
  }
  static std::optional<std::string> Format(const std::vector<std::string>& v, ShellLines) {
    return QuotedList(v);
  }
  static std::optional<std::string> Format(const std::vector<std::string>& v, ProgramArgs) {
    if (v.empty()) return std::nullopt;
    return QuotedList(v);
  }
  static std::optional<std::string> Format(const std::vector<LayerSpec>& v, LayerList) {
    if (v.empty()) return std::nullopt;
    std::vector<std::string> items;
    for (const LayerSpec& l : v) items.push_back(LayerText(l));
    return absl::StrCat("[", absl::StrJoin(items, ", "), "]");
  }
  static std::string QuotedList(const std::vector<std::string>& v) {
    std::vector<std::string> quoted;
    for (const std::string& s : v) quoted.push_back(Quote(s));
    return absl::StrCat("[", absl::StrJoin(quoted, ", "), "]");
  }
  template <class E>
  static std::optional<std::string> Format(E v, const EnumNames<E>& names) {
    return std::string(names.Name(v));
  }
  template <class E>
  static std::optional<std::string> Format(const std::vector<E>& v, const EnumNames<E>& names) {
    std::vector<std::string> texts;
    for (E e : v) texts.push_back(names.Name(e));
    return absl::StrCat("[", absl::StrJoin(texts, ", "), "]");
  }

 private:
  std::ostringstream out_;
  std::string indent_;
  std::string section_;  // "training." while writing that section
  std::vector<std::pair<std::string, std::string>> fields_;
};

// A number as README writes it: whole numbers without an exponent.
std::string Number(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return absl::StrCat(static_cast<int64_t>(v));
  return absl::StrCat(v);
}

std::string Ticked(const std::string& s) { return absl::StrCat("`", s, "`"); }

// Writes README's configuration reference: a row per field, a heading row per section.
class MarkdownWriter {
 public:
  std::string text() const { return out_.str(); }

  template <class Body>
  void Section(const char* key, const char* note, Body body) {
    out_ << "| **" << key << "**" << (*note != '\0' ? " " : "") << note << " | | | |\n";
    prefix_ = absl::StrCat(key, ".");
    body();
    prefix_.clear();
  }

  template <class T, class Spec>
  void Field(const char* key, T* value, const Spec& spec, const Doc& doc) {
    out_ << "| `" << prefix_ << key << "` | "
         << (doc.type() != nullptr ? doc.type() : TypeOf(*value, spec)) << " | "
         << (doc.default_value() != nullptr ? doc.default_value() : DefaultOf(*value, spec))
         << " | " << doc.meaning() << " |\n";
  }

  void Exclusive(const char*, const char*, const char*) {}
  template <class T>
  void Derive(T*, T) {}

 private:
  static std::string TypeOf(int, IntRange r) {
    return absl::StrCat("integer (", r.min, "–", r.max, ")");
  }
  static std::string TypeOf(uint64_t, AnyUint64) { return "integer ≥ 0"; }
  template <class T>
  static std::string TypeOf(T, RealRange r) {
    return absl::StrCat("number ", r.min_open ? "(" : "[", Number(r.min), ", ", Number(r.max), "]");
  }
  static std::string TypeOf(bool, Flag) { return "`true` / `false`"; }
  static std::string TypeOf(const std::string&, Text) { return "string"; }
  static std::string TypeOf(const std::string&, Word) {
    return "one word (no spaces, quotes, backslashes or control characters)";
  }
  static std::string TypeOf(const std::string&, RunName) {
    return "name: 1–128 letters, digits, `.`, `_`, `-`; the first a letter, digit or `_`";
  }
  static std::string TypeOf(const std::string&, Path) { return "path"; }
  static std::string TypeOf(const std::vector<int>&, IntList list) {
    return absl::StrCat("list of integers ≥ ", list.min);
  }
  static std::string TypeOf(const std::vector<int>&, ShapeFromData) {
    return TypeOf(std::vector<int>{}, IntList{1});
  }
  static std::string TypeOf(const std::vector<std::string>&, PathList) {
    return "path or list of paths";
  }
  static std::string TypeOf(const std::vector<std::string>&, SbatchOptions) {
    return "list of `--option=value`";
  }
  static std::string TypeOf(const std::vector<std::string>&, ShellLines) {
    return "list of shell lines";
  }
  static std::string TypeOf(const std::vector<LayerSpec>&, LayerList) { return "list of layers"; }
  static std::string TypeOf(const std::vector<std::string>&, ProgramArgs) {
    return "list of strings";
  }
  template <class E>
  static std::string TypeOf(E, const EnumNames<E>& names) {
    std::vector<std::string> ticked;
    for (const std::string& n : names.AllNames()) ticked.push_back(Ticked(n));
    return absl::StrJoin(ticked, ", ");
  }
  template <class E>
  static std::string TypeOf(const std::vector<E>&, const EnumNames<E>& names) {
    return absl::StrCat("list of ", TypeOf(E{}, names));
  }

  template <class T, class Spec>
  static std::string DefaultOf(const T& value, const Spec& spec) {
    if constexpr (std::is_same_v<Spec, Path>) {
      if (value.empty()) return "—";
    }
    if constexpr (std::is_same_v<T, std::string>) {
      return Ticked(value.empty() ? "\"\"" : value);
    } else if constexpr (std::is_floating_point_v<T>) {
      return Number(value);
    } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      return absl::StrCat(value);
    } else {
      return Ticked(*YamlWriter::Format(value, spec));
    }
  }

  std::ostringstream out_;
  std::string prefix_;
};

// The cross-field rules of ValidateJobConfig, by area; each returns the first broken one.
absl::Status ValidateCluster(const ClusterConfig& c) {
  if (c.ranks.empty()) {
    if (c.assignment != Assignment::kRanks) return absl::OkStatus();
    return absl::InvalidArgumentError("cluster.ranks: required when cluster.assignment is ranks");
  }
  const auto count = [&](RankRole role) {
    return static_cast<int>(std::count(c.ranks.begin(), c.ranks.end(), role));
  };
  const int servers = count(RankRole::kServer), workers = count(RankRole::kWorker),
            evaluators = count(RankRole::kEvaluator);
  if (servers == c.servers && workers == c.workers && evaluators == (c.evaluator ? 1 : 0)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("cluster.ranks: lists ", servers, " server(s), ", workers, " worker(s) and ",
                   evaluators, " evaluator(s); the cluster section has ", c.servers, ", ",
                   c.workers, " and ", c.evaluator ? 1 : 0));
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
    return absl::InvalidArgumentError(absl::StrCat(
        "model.", m.num_params != 0 ? "num_params" : "num_state",
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
  if (config.training.warmup_epochs >= config.training.epochs) {
    warnings.push_back(absl::StrCat("training.warmup_epochs (", config.training.warmup_epochs,
                                    ") is not shorter than training.epochs (",
                                    config.training.epochs,
                                    "): the learning rate never reaches its value"));
  }
  return warnings;
}

bool StopsOnWorkerLoss(const JobConfig& config) {
  const WorkerLoss loss = config.reliability.worker_loss;
  if (loss != WorkerLoss::kAuto) return loss == WorkerLoss::kStop;
  return config.training.algorithm == Algorithm::kSync &&
         EffectiveQuorum(config) == config.cluster.workers;
}

int EffectiveQuorum(const JobConfig& config) {
  if (config.sync.quorum > 0) return config.sync.quorum;
  const int workers = config.cluster.workers;
  const int backups = static_cast<int>(std::ceil(config.sync.backup_fraction * workers - 1e-9));
  return std::max(1, workers - backups);
}

float EffectiveMomentum(const JobConfig& config) {
  const Algorithm a = config.training.algorithm;
  const float momentum = config.optimizer.momentum;
  if (!config.optimizer.lower_momentum_with_workers ||
      (a != Algorithm::kDownpour && a != Algorithm::kSsp)) {
    return momentum;
  }
  return std::max(0.0f, momentum - (1.0f - 1.0f / config.cluster.workers));
}

absl::StatusOr<ShardingPlan> JobShardingPlan(const JobConfig& config) {
  return ShardingPlan::Create(Model::NumParams(config.model), config.cluster.servers,
                              config.chunk_floats(), Model::NumState(config.model));
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

absl::Status ResolveInputShape(JobConfig* config) {
  ModelSpec& m = config->model;
  if (!m.input_shape_from_data) return absl::OkStatus();
  absl::StatusOr<std::vector<int>> shape = TrainingExampleShape(config->data);
  if (!shape.ok()) {
    return absl::Status(shape.status().code(),
                        absl::StrCat("model.input_shape: not given, and the training data's "
                                     "shape cannot be read: ",
                                     shape.status().message()));
  }
  m.input_shape = *std::move(shape);
  m.input_dim = ShapeSize(m.input_shape);
  m.input_shape_from_data = false;
  // A layer list's output is its last layer's unless the file gave output_dim (then checked).
  if (m.type == ModelType::kLayers && m.output_dim == 0) m.output_dim = LayersOutputSize(m);
  return ValidateJobConfig(*config);
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

absl::Status ValidateJobConfig(const JobConfig& c) {
  MONSOON_RETURN_IF_ERROR(ValidateCluster(c.cluster));
  for (const int w : c.stragglers.slow_workers) {
    if (w >= c.cluster.workers) {
      return absl::InvalidArgumentError(absl::StrCat("stragglers.slow_workers: worker ", w,
                                                     " does not exist (cluster.workers is ",
                                                     c.cluster.workers, ")"));
    }
  }
  MONSOON_RETURN_IF_ERROR(
      ValidateData(c.data, c.cluster.evaluator && !c.evaluation.by_program));
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
  if (c.network.link_mbit > 0 && c.network.hosts != HostsKind::kNamespaces) {
    return absl::InvalidArgumentError(
        "network.link_mbit: a link rate needs emulated hosts (network.hosts: namespaces)");
  }
  MONSOON_RETURN_IF_ERROR(ValidateReliability(c.reliability, c.transport));
  return ValidateSecurityAndSlurm(c.security, c.slurm);
}

double BaseLearningRate(const JobConfig& config) {
  return PushesGradients(config.training.algorithm) ? config.optimizer.learning_rate
                                                    : config.easgd.learning_rate;
}

LearningRatePlan LearningRatePlanOf(const JobConfig& config) {
  return {config.training.learning_rate_schedule, static_cast<double>(config.training.epochs),
          config.training.warmup_epochs};
}

std::string JobConfigToYaml(const JobConfig& config) {
  JobConfig copy = config;  // the visitor takes fields by pointer; the writer only reads them
  YamlWriter writer;
  VisitJobConfig(copy, writer);
  return absl::StrCat("# Resolved Monsoon job configuration (every default filled in).\n",
                      writer.text());
}

std::vector<std::pair<std::string, std::string>> JobConfigFields(const JobConfig& config) {
  JobConfig copy = config;
  YamlWriter writer;
  VisitJobConfig(copy, writer);
  return writer.fields();
}

std::string ConfigReferenceMarkdown() {
  JobConfig defaults;
  MarkdownWriter writer;
  VisitJobConfig(defaults, writer);
  return absl::StrCat("| field | type (range) | default | meaning |\n|---|---|---|---|\n",
                      writer.text());
}

}  // namespace monsoon
