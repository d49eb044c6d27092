#include "core/config/yaml_section.h"

#include <map>

#include "absl/strings/str_split.h"

namespace monsoon {
namespace {

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

}  // namespace

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

}  // namespace monsoon
