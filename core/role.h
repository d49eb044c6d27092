// A job's roles, named once: the kind of role and, for servers and workers, which one. The
// config's cluster.ranks, the launchers, supervision, the clients and the servers all speak
// of roles with these; the wire's enum maps to RoleKind in proto/role_wire.h alone.
#ifndef MONSOON_CORE_ROLE_H_
#define MONSOON_CORE_ROLE_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "core/enum_names.h"

namespace monsoon {

enum class RoleKind { kServer, kWorker, kEvaluator };
inline constexpr NamedValue<RoleKind> kRoleKindValues[] = {{RoleKind::kServer, "server"},
                                                           {RoleKind::kWorker, "worker"},
                                                           {RoleKind::kEvaluator, "evaluator"}};
inline constexpr EnumNames<RoleKind> kRoleKindNames{"role", kRoleKindValues};

struct RoleId {
  RoleKind kind = RoleKind::kWorker;
  int index = 0;  // server j or worker i; 0 for the evaluator

  // As its process and log are named: "server-0", "worker-2", "evaluator".
  std::string Name() const {
    return kind == RoleKind::kEvaluator ? "evaluator"
                                        : absl::StrCat(kRoleKindNames.Name(kind), "-", index);
  }
  // As messages name it: "server 0", "worker 2", "evaluator".
  std::string Describe() const {
    return kind == RoleKind::kEvaluator ? "evaluator"
                                        : absl::StrCat(kRoleKindNames.Name(kind), " ", index);
  }
  friend bool operator==(const RoleId& a, const RoleId& b) {
    return a.kind == b.kind && a.index == b.index;
  }
};

}  // namespace monsoon

#endif  // MONSOON_CORE_ROLE_H_
