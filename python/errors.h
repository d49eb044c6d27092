// How the `monsoon` Python module turns failures into Python exceptions, and reads the NumPy
// arrays it is given. Every function here needs the GIL.
#ifndef MONSOON_PYTHON_ERRORS_H_
#define MONSOON_PYTHON_ERRORS_H_

#include <pybind11/pybind11.h>

#include <cstddef>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace monsoon {

// Creates monsoon.Error in `module` (once, when the module loads).
void DefineErrorType(pybind11::module_& module);

// Raises monsoon.Error(message) for a failed status, with `code` (the status code's name) and
// `exit_status` (what the process should exit with: RoleExitStatus, `client` as there).
[[noreturn]] void Raise(const absl::Status& status, bool client);

template <class T>
T ValueOrRaise(absl::StatusOr<T> value) {
  if (!value.ok()) Raise(value.status(), /*client=*/false);
  return *std::move(value);
}

// A writeable, C-contiguous 1-D float32 array's data and size; ValueError naming `what`
// otherwise.
float* FloatData(pybind11::handle array, const char* what, size_t* size);

}  // namespace monsoon

#endif  // MONSOON_PYTHON_ERRORS_H_
