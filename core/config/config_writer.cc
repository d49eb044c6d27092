#include "core/config/config_writer.h"

#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "core/config/config_schema.h"
#include "core/config/yaml_text.h"

namespace monsoon {
namespace {

// Writes every field VisitJobConfig declares as YAML that ParseJobConfig reads back the same.
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
    const std::optional<std::string> text = FieldYaml(*value, spec);
    if (!text.has_value()) return;
    out_ << indent_ << key << ": " << *text << "\n";
    fields_.emplace_back(section_ + key, *text);
  }

  void Exclusive(const char*, const char*, const char*) {}
  template <class T>
  void Derive(T*, T) {}

 private:
  std::ostringstream out_;
  std::string indent_;
  std::string section_;  // "training." while writing that section
  std::vector<std::pair<std::string, std::string>> fields_;
};

}  // namespace

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

}  // namespace monsoon
