// Early-return helpers for absl::Status / absl::StatusOr (Debian's Abseil has none).
#ifndef MONSOON_CORE_STATUS_MACROS_H_
#define MONSOON_CORE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define MONSOON_CONCAT_INNER_(a, b) a##b
#define MONSOON_CONCAT_(a, b) MONSOON_CONCAT_INNER_(a, b)

// Returns the status of `expr` from the enclosing function if it is not OK.
#define MONSOON_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    const ::absl::Status monsoon_status_ = (expr);     \
    if (!monsoon_status_.ok()) return monsoon_status_; \
  } while (false)

// `lhs = *expr` when `expr` (a StatusOr) is OK; otherwise returns its status.
#define MONSOON_ASSIGN_OR_RETURN(lhs, expr) \
  MONSOON_ASSIGN_OR_RETURN_IMPL_(MONSOON_CONCAT_(monsoon_statusor_, __LINE__), lhs, expr)

#define MONSOON_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                   \
  if (!statusor.ok()) return statusor.status();             \
  lhs = std::move(*statusor)

#endif  // MONSOON_CORE_STATUS_MACROS_H_
