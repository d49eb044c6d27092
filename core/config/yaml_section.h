// The YAML primitives of the job-file reader (config_reader.cc): a mapping read field by
// field, each error starting with the field's dotted path; a file's one document; `--set`.
#ifndef MONSOON_CORE_CONFIG_YAML_SECTION_H_
#define MONSOON_CORE_CONFIG_YAML_SECTION_H_

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/enum_names.h"
#include "core/file_util.h"
#include "core/status_macros.h"

namespace monsoon {

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

  // True when the mapping has `key` (with or without a value).
  bool Has(const std::string& key) const { return static_cast<bool>(Get(key)); }

  std::string Path(const std::string& key) const {
    return path_.empty() ? key : absl::StrCat(path_, ".", key);
  }

  // `text` as an absolute path to a readable regular file, or an error naming `field`.
  static absl::Status ExistingFile(const std::string& field, const std::string& text,
                                   const std::string& base_dir, std::string* out) {
    std::filesystem::path p(text);
    if (p.is_relative()) p = std::filesystem::path(base_dir) / p;
    std::error_code ec;
    p = std::filesystem::absolute(p, ec).lexically_normal();
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

// Applies one `--set key.path=value` (the value in YAML syntax) to `root`; InvalidArgument
// naming the assignment when it is malformed or walks through a field that is not a section.
absl::Status ApplyOverride(YAML::Node root, const std::string& assignment);

// The one YAML document of a job file, its keys each given once. InvalidArgument for a second
// document (`---`), which yaml-cpp would ignore.
absl::StatusOr<YAML::Node> LoadOneDocument(const std::string& text);

}  // namespace monsoon

#endif  // MONSOON_CORE_CONFIG_YAML_SECTION_H_
