// A job file's values as YAML text, the way the resolved-YAML writer (config_writer.cc) writes
// them and README's reference (config_reference.cc) shows their defaults: one FieldYaml
// overload per kind of field in config_schema.h, and the text reads back to the same value.
#ifndef MONSOON_CORE_CONFIG_YAML_TEXT_H_
#define MONSOON_CORE_CONFIG_YAML_TEXT_H_

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/config/config_schema.h"

namespace monsoon {

// The shortest decimal text that reads back as the same value.
template <typename T>
std::string ShortestNumber(T v) {
  char text[32];
  const std::to_chars_result end = std::to_chars(text, text + sizeof(text), v);
  return std::string(text, end.ptr);
}

// `s` as a double-quoted YAML scalar.
std::string DoubleQuoted(const std::string& s);
// ["a", "b"], each item DoubleQuoted.
std::string QuotedList(const std::vector<std::string>& v);
// A layer list as model.layers writes it: [relu, {dense: {units: 10}}].
std::string LayerListText(const std::vector<LayerSpec>& layers);

// The field's YAML text; nothing for a field that is not given (an empty path or list whose
// absence the reader takes as the same value).
inline std::optional<std::string> FieldYaml(int v, IntRange) { return absl::StrCat(v); }
inline std::optional<std::string> FieldYaml(uint64_t v, AnyUint64) { return absl::StrCat(v); }
template <class T>
std::optional<std::string> FieldYaml(T v, RealRange) {
  return ShortestNumber(v);
}
inline std::optional<std::string> FieldYaml(double v, SecondsOrOff) {
  return v < 0 ? "off" : ShortestNumber(v);
}
inline std::optional<std::string> FieldYaml(bool v, Flag) { return v ? "true" : "false"; }
inline std::optional<std::string> FieldYaml(const std::string& v, Text) { return DoubleQuoted(v); }
inline std::optional<std::string> FieldYaml(const CudnnLibrary& v, CudnnPath) {
  return DoubleQuoted(v.Text());
}
inline std::optional<std::string> FieldYaml(const std::string& v, Word) { return DoubleQuoted(v); }
inline std::optional<std::string> FieldYaml(const std::string& v, RunName) {
  return DoubleQuoted(v);
}
std::optional<std::string> FieldYaml(const std::string& v, Path);
std::optional<std::string> FieldYaml(const std::vector<int>& v, IntList);
std::optional<std::string> FieldYaml(const std::vector<int>& v, ShapeFromData);
std::optional<std::string> FieldYaml(const std::vector<std::string>& v, PathList);
std::optional<std::string> FieldYaml(const std::vector<std::string>& v, SbatchOptions);
std::optional<std::string> FieldYaml(const std::vector<std::string>& v, ShellLines);
std::optional<std::string> FieldYaml(const std::vector<std::string>& v, ProgramArgs);
std::optional<std::string> FieldYaml(const std::vector<LayerSpec>& v, LayerList);
template <class E>
std::optional<std::string> FieldYaml(E v, const EnumNames<E>& names) {
  return std::string(names.Name(v));
}
template <class E>
std::optional<std::string> FieldYaml(const std::vector<E>& v, const EnumNames<E>& names) {
  std::vector<std::string> texts;
  for (E e : v) texts.push_back(names.Name(e));
  return absl::StrCat("[", absl::StrJoin(texts, ", "), "]");
}

}  // namespace monsoon

#endif  // MONSOON_CORE_CONFIG_YAML_TEXT_H_
