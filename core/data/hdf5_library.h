// HDF5's C library, loaded when a process first reads an HDF5 file (dlopen of Debian's
// libhdf5_serial), so that every other Monsoon process starts without it and the thirty
// libraries it brings (libcurl and its closure). Its types and constants come from hdf5.h;
// its functions and global ids are reached through the loaded library's table.
#ifndef MONSOON_CORE_DATA_HDF5_LIBRARY_H_
#define MONSOON_CORE_DATA_HDF5_LIBRARY_H_

#include <hdf5.h>

#include "absl/status/statusor.h"

namespace monsoon {

// The soname the build's headers belong to (Debian 12's libhdf5-103-1).
inline constexpr char kHdf5Library[] = "libhdf5_serial.so.103";

// H5F_ACC_RDONLY's value: the macro also calls H5check and H5open, which name the library's
// symbols (the loader calls H5open).
inline constexpr unsigned kHdf5ReadOnly = 0x0000u;

// clang-format off
#define MONSOON_HDF5_FUNCTIONS(X)                                                               \
  X(H5open) X(H5Eset_auto2) X(H5Fis_hdf5) X(H5Fopen) X(H5Fclose)                                \
  X(H5Lexists) X(H5Lget_info) X(H5Lget_val)                                                     \
  X(H5Pcreate) X(H5Pclose) X(H5Pget_nfilters) X(H5Pget_filter2) X(H5Pget_chunk)                \
  X(H5Pget_layout) X(H5Pget_external_count) X(H5Pset_chunk_cache) X(H5Zfilter_avail)           \
  X(H5Dopen2) X(H5Dclose) X(H5Dget_space) X(H5Dget_type) X(H5Dget_create_plist)                 \
  X(H5Dget_num_chunks) X(H5Dget_space_status) X(H5Dread)                                        \
  X(H5Sclose) X(H5Screate_simple) X(H5Sget_simple_extent_ndims) X(H5Sget_simple_extent_dims)   \
  X(H5Sselect_hyperslab) X(H5Tclose) X(H5Tget_class) X(H5Tget_size) X(H5Tget_sign)

// The ids hdf5.h's H5T_NATIVE_* and H5P_DATASET_ACCESS stand for, valid after H5open.
#define MONSOON_HDF5_GLOBALS(X)                                                                 \
  X(H5T_NATIVE_UINT8_g) X(H5T_NATIVE_UINT16_g) X(H5T_NATIVE_UINT32_g) X(H5T_NATIVE_UINT64_g)   \
  X(H5T_NATIVE_INT8_g) X(H5T_NATIVE_INT16_g) X(H5T_NATIVE_INT32_g) X(H5T_NATIVE_INT64_g)       \
  X(H5T_NATIVE_FLOAT_g) X(H5T_NATIVE_DOUBLE_g) X(H5P_CLS_DATASET_ACCESS_ID_g)
// clang-format on

// Each member is named as the library's symbol: lib.H5Fopen(...), *lib.H5T_NATIVE_FLOAT_g.
struct Hdf5Library {
#define MONSOON_HDF5_FUNCTION(name) decltype(&::name) name = nullptr;
#define MONSOON_HDF5_GLOBAL(name) const hid_t* name = nullptr;
  MONSOON_HDF5_FUNCTIONS(MONSOON_HDF5_FUNCTION)
  MONSOON_HDF5_GLOBALS(MONSOON_HDF5_GLOBAL)
#undef MONSOON_HDF5_FUNCTION
#undef MONSOON_HDF5_GLOBAL
};

// The library, loaded and opened (H5open) once per process, its error printing off;
// FailedPrecondition naming the library and why it could not be loaded. liblzf goes into the
// process's global scope first where it is installed: Debian's LZF filter plugin calls it
// without linking it.
absl::StatusOr<const Hdf5Library*> LoadHdf5Library();

}  // namespace monsoon

#endif  // MONSOON_CORE_DATA_HDF5_LIBRARY_H_
