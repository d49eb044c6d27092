// A failed allocation as one error line naming what was being allocated, never an abort.
#ifndef MONSOON_CORE_PROCESS_OUT_OF_MEMORY_H_
#define MONSOON_CORE_PROCESS_OUT_OF_MEMORY_H_

#include <functional>
#include <string>

#include "absl/status/status.h"

namespace monsoon {

// While it lives, says what the calling thread is allocating ("the model's 7850 parameters");
// scopes nest, the innermost naming it.
class Allocating {
 public:
  explicit Allocating(std::string what);
  ~Allocating();
  Allocating(const Allocating&) = delete;
  Allocating& operator=(const Allocating&) = delete;

  // The innermost scope's words on this thread; "" outside any.
  static const std::string& Current();

 private:
  std::string previous_;
};

// Runs `body`; a std::bad_alloc it throws comes back as ResourceExhausted: "out of memory
// while allocating WHAT" (WHAT: Allocating::Current() where it was thrown).
absl::Status CatchOutOfMemory(const std::function<absl::Status()>& body);

}  // namespace monsoon

#endif  // MONSOON_CORE_PROCESS_OUT_OF_MEMORY_H_
