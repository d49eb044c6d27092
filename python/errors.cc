#include "python/errors.h"

#include <pybind11/numpy.h>

#include "absl/strings/str_cat.h"
#include "core/exit_status.h"

namespace py = pybind11;

namespace monsoon {
namespace {

py::handle g_error_type;  // owned by the module (its `Error` attribute)

}  // namespace

void DefineErrorType(py::module_& module) {
  module.attr("Error") = py::reinterpret_steal<py::object>(PyErr_NewExceptionWithDoc(
      "monsoon.Error", "A Monsoon call failed; the message is the C++ status's.",
      PyExc_RuntimeError, nullptr));
  g_error_type = module.attr("Error");
}

void Raise(const absl::Status& status, bool client) {
  py::object error = g_error_type(std::string(status.message()));
  error.attr("code") = absl::StatusCodeToString(status.code());
  error.attr("exit_status") = RoleExitStatus(status, client);
  PyErr_SetObject(g_error_type.ptr(), error.ptr());
  throw py::error_already_set();
}

float* FloatData(py::handle array, const char* what, size_t* size) {
  if (!py::isinstance<py::array_t<float>>(array)) {
    throw py::value_error(absl::StrCat(what, " must be a float32 NumPy array"));
  }
  py::array a = py::reinterpret_borrow<py::array>(array);
  if (a.ndim() != 1 || !(a.flags() & py::array::c_style) || !a.writeable()) {
    throw py::value_error(absl::StrCat(what, " must be a writeable, contiguous 1-D array"));
  }
  *size = static_cast<size_t>(a.shape(0));
  return static_cast<float*>(a.mutable_data());
}

}  // namespace monsoon
