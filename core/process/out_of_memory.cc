#include "core/process/out_of_memory.h"

#include <new>
#include <utility>

#include "absl/strings/str_cat.h"

namespace monsoon {
namespace {

thread_local std::string t_allocating;
// Where the last std::bad_alloc was thrown: the scope is gone by the time it is caught.
thread_local std::string t_failed;

}  // namespace

Allocating::Allocating(std::string what) : previous_(std::exchange(t_allocating, std::move(what))) {
  t_failed.clear();
}

Allocating::~Allocating() {
  if (std::uncaught_exceptions() > 0 && t_failed.empty()) t_failed = t_allocating;
  t_allocating = std::move(previous_);
}

const std::string& Allocating::Current() { return t_allocating; }

absl::Status CatchOutOfMemory(const std::function<absl::Status()>& body) {
  t_failed.clear();
  try {
    return body();
  } catch (const std::bad_alloc&) {
    const std::string what = t_failed.empty() ? t_allocating : t_failed;
    return absl::ResourceExhaustedError(
        absl::StrCat("out of memory while allocating ", what.empty() ? "memory" : what,
                     " (`monsoon validate` prints what each role needs)"));
  }
}

}  // namespace monsoon
