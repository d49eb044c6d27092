// A role on the wire: the one place the proto's Role maps to core/role.h's RoleKind. Only
// clients (workers and the evaluator) name their role on the wire.
#ifndef MONSOON_PROTO_ROLE_WIRE_H_
#define MONSOON_PROTO_ROLE_WIRE_H_

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/role.h"
#include "proto/monsoon.pb.h"

namespace monsoon {

// A client's role as it sends it; a server is no client and has no wire form.
inline wire::Role RoleToWire(RoleKind kind) {
  return kind == RoleKind::kWorker ? wire::ROLE_WORKER : wire::ROLE_EVALUATOR;
}

// The role a client's request names; InvalidArgument for an unspecified one (`call`: "hello").
inline absl::StatusOr<RoleKind> RoleFromWire(wire::Role role, const char* call) {
  switch (role) {
    case wire::ROLE_WORKER:
      return RoleKind::kWorker;
    case wire::ROLE_EVALUATOR:
      return RoleKind::kEvaluator;
    default:
      return absl::InvalidArgumentError(absl::StrCat(call, " from an unspecified role"));
  }
}

}  // namespace monsoon

#endif  // MONSOON_PROTO_ROLE_WIRE_H_
