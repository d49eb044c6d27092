// The names an enum's values go by in job files, listed once per enum. Naming a value, parsing
// a name and the config reader's "allowed: ..." lists all come from that one list, so they
// cannot disagree.
#ifndef MONSOON_CORE_ENUM_NAMES_H_
#define MONSOON_CORE_ENUM_NAMES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace monsoon {

template <typename E>
struct NamedValue {
  E value;
  const char* name;
};

// `kind` says what the values are ("optimizer"), for errors; `values` lists every value of E
// once, in declaration order.
template <typename E>
struct EnumNames {
  const char* kind;
  absl::Span<const NamedValue<E>> values;

  // The value's name; every value is listed, so "" only for a value cast from a bad integer.
  const char* Name(E value) const {
    for (const NamedValue<E>& v : values) {
      if (v.value == value) return v.name;
    }
    return "";
  }

  std::vector<std::string> AllNames() const {
    std::vector<std::string> names;
    for (const NamedValue<E>& v : values) names.push_back(v.name);
    return names;
  }

  // The value named `name`, or InvalidArgument "unknown KIND 'NAME' (allowed: a, b, c)".
  absl::StatusOr<E> Parse(absl::string_view name) const {
    for (const NamedValue<E>& v : values) {
      if (name == v.name) return v.value;
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown ", kind, " '", name, "' (allowed: ", absl::StrJoin(AllNames(), ", "), ")"));
  }
};

}  // namespace monsoon

#endif  // MONSOON_CORE_ENUM_NAMES_H_
