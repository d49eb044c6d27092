#include "core/config/config_reference.h"

#include <cmath>
#include <sstream>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/config/config_schema.h"
#include "core/config/yaml_text.h"

namespace monsoon {
namespace {

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
  static std::string TypeOf(double, SecondsOrOff s) {
    return absl::StrCat("number [0, ", Number(s.max), "] or `off`");
  }
  static std::string TypeOf(bool, Flag) { return "`true` / `false`"; }
  static std::string TypeOf(const std::string&, Text) { return "string"; }
  static std::string TypeOf(const CudnnLibrary&, CudnnPath) {
    return "`auto`, `off` or an absolute path";
  }
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
    } else if constexpr (std::is_same_v<T, CudnnLibrary>) {
      return Ticked(value.Text());
    } else if constexpr (std::is_floating_point_v<T>) {
      return Number(value);
    } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      return absl::StrCat(value);
    } else {
      return Ticked(*FieldYaml(value, spec));
    }
  }

  std::ostringstream out_;
  std::string prefix_;
};

}  // namespace

std::string ConfigReferenceMarkdown() {
  JobConfig defaults;
  MarkdownWriter writer;
  VisitJobConfig(defaults, writer);
  return absl::StrCat("| field | type (range) | default | meaning |\n|---|---|---|---|\n",
                      writer.text());
}

}  // namespace monsoon
