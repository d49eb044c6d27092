#include "core/data/hdf5_library.h"

#include <dlfcn.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"

namespace monsoon {
namespace {

absl::StatusOr<const Hdf5Library*> Load() {
  dlopen("liblzf.so.1", RTLD_NOW | RTLD_GLOBAL);  // optional: only the LZF plugin needs it
  void* handle = dlopen(kHdf5Library, RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "reading HDF5 files needs HDF5's library (Debian's libhdf5-103-1): ", dlerror()));
  }
  auto library = std::make_unique<Hdf5Library>();
  std::string missing;
  const auto find = [&](const char* name) {
    void* symbol = dlsym(handle, name);
    if (symbol == nullptr && missing.empty()) missing = name;
    return symbol;
  };
#define MONSOON_HDF5_LOAD(name) \
  library->name = reinterpret_cast<decltype(library->name)>(find(#name));
  MONSOON_HDF5_FUNCTIONS(MONSOON_HDF5_LOAD)
  MONSOON_HDF5_GLOBALS(MONSOON_HDF5_LOAD)
#undef MONSOON_HDF5_LOAD
  if (!missing.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(kHdf5Library, " has no ", missing));
  }
  if (library->H5open() < 0) {
    return absl::FailedPreconditionError(absl::StrCat(kHdf5Library, ": H5open failed"));
  }
  library->H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // errors come back as statuses
  return library.release();                              // kept for the process's life
}

}  // namespace

absl::StatusOr<const Hdf5Library*> LoadHdf5Library() {
  static const auto* const loaded = new absl::StatusOr<const Hdf5Library*>(Load());
  return *loaded;
}

}  // namespace monsoon
