#include "core/config/yaml_text.h"

#include <yaml-cpp/yaml.h>

namespace monsoon {
namespace {

// Writes one layer's settings as a YAML flow mapping's body: "filters: 8, kernel: 3".
class LayerSettingsWriter : public LayerSettingVisitor {
 public:
  void Int(const char* key, int* value, int, int, const SettingDefault&) override {
    Add(key, absl::StrCat(*value));
  }
  void Real(const char* key, double* value, double, double, const SettingDefault&) override {
    Add(key, ShortestNumber(*value));
  }
  void Choice(const char* key, std::string* value, const std::vector<std::string>&,
              const SettingDefault&) override {
    Add(key, *value);
  }
  void Layers(const char* key, std::vector<LayerSpec>* value) override {
    Add(key, LayerListText(*value));
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

}  // namespace

std::string DoubleQuoted(const std::string& s) {
  YAML::Emitter e;
  e << YAML::DoubleQuoted << s;
  return e.c_str();
}

std::string QuotedList(const std::vector<std::string>& v) {
  std::vector<std::string> quoted;
  for (const std::string& s : v) quoted.push_back(DoubleQuoted(s));
  return absl::StrCat("[", absl::StrJoin(quoted, ", "), "]");
}

std::string LayerListText(const std::vector<LayerSpec>& layers) {
  std::vector<std::string> items;
  for (const LayerSpec& l : layers) items.push_back(LayerText(l));
  return absl::StrCat("[", absl::StrJoin(items, ", "), "]");
}

std::optional<std::string> FieldYaml(const std::string& v, Path) {
  if (v.empty()) return std::nullopt;
  return DoubleQuoted(v);
}

std::optional<std::string> FieldYaml(const std::vector<int>& v, IntList) {
  return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
}

std::optional<std::string> FieldYaml(const std::vector<int>& v, ShapeFromData) {
  if (v.empty()) return std::nullopt;
  return FieldYaml(v, IntList{1});
}

std::optional<std::string> FieldYaml(const std::vector<std::string>& v, PathList) {
  if (v.empty()) return std::nullopt;
  return QuotedList(v);
}

std::optional<std::string> FieldYaml(const std::vector<std::string>& v, SbatchOptions) {
  return QuotedList(v);
}

std::optional<std::string> FieldYaml(const std::vector<std::string>& v, ShellLines) {
  return QuotedList(v);
}

std::optional<std::string> FieldYaml(const std::vector<std::string>& v, ProgramArgs) {
  if (v.empty()) return std::nullopt;
  return QuotedList(v);
}

std::optional<std::string> FieldYaml(const std::vector<LayerSpec>& v, LayerList) {
  if (v.empty()) return std::nullopt;
  return LayerListText(v);
}

}  // namespace monsoon
