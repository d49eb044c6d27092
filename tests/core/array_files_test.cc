#include "core/data/array_files.h"

#include <hdf5.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/data/data_shard.h"
#include "tests/test_util.h"

namespace monsoon {
namespace {

// A .npy file (format 1.0) of `dims` holding `bytes` of dtype `descr`, cut to `keep` bytes of
// data when keep >= 0.
std::string WriteNpy(const std::string& name, const std::string& descr,
                     const std::vector<int>& dims, const std::string& bytes,
                     const std::string& extra = "", long keep = -1) {
  const std::string path = TempPath(name);
  std::string header =
      absl::StrCat("{'descr': '", descr, "', 'fortran_order': False, 'shape': (",
                   absl::StrJoin(dims, ", "), dims.size() == 1 ? ",), " : "), ", extra, "}");
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out << "\x93NUMPY" << '\x01' << '\x00' << static_cast<char>(header.size() & 0xff)
      << static_cast<char>(header.size() >> 8) << header
      << bytes.substr(0, keep < 0 ? bytes.size() : keep);
  return path;
}

template <class T>
std::string Bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

std::string Message(const absl::Status& status) { return std::string(status.message()); }

TEST_CASE("npy: reads only the rows asked for, uint8 scaled to [0, 1]", "[core][data]") {
  std::vector<uint8_t> pixels(5 * 6);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 8);
  const std::string x = WriteNpy("x.npy", "|u1", {5, 1, 2, 3}, Bytes(pixels));
  const std::string y = WriteNpy("y.npy", "<i8", {5}, Bytes(std::vector<int64_t>{4, 0, 2, 1, 3}));
  auto source = OpenNpySource(x, y, {1, true});
  REQUIRE(source.ok());
  CHECK((*source)->rows() == 5);
  CHECK((*source)->example_shape() == std::vector<int>{1, 2, 3});
  auto data = (*source)->Read({1, 3, 4});
  REQUIRE(data.ok());
  REQUIRE(data->size() == 3);
  CHECK(data->feature_dim == 6);
  CHECK(data->features[0] == Approx(48 / 255.0));    // row 1, first pixel
  CHECK(data->features[17] == Approx(232 / 255.0));  // row 4, last pixel
  CHECK(data->targets == std::vector<float>{0, 1, 3});
  CHECK(data->num_classes == 4);
  // Every target, without the features (run and validate check the data with them).
  auto targets = (*source)->ReadTargets();
  REQUIRE(targets.ok());
  CHECK(targets->features.empty());
  CHECK(targets->feature_dim == 6);
  CHECK(targets->targets == std::vector<float>{4, 0, 2, 1, 3});
  CHECK(targets->num_classes == 5);
}

TEST_CASE("npy: float64 features and [rows, k] regression targets", "[core][data]") {
  const std::string x =
      WriteNpy("xf.npy", "<f8", {3, 2}, Bytes(std::vector<double>{1, 2, 3, 4, 5, 6}));
  const std::string y =
      WriteNpy("yf.npy", "<f4", {3, 2}, Bytes(std::vector<float>{.5, 1, 1.5, 2, 2.5, 3}));
  auto data = (*OpenNpySource(x, y, {2, false}))->Read({0, 2});
  REQUIRE(data.ok());
  CHECK(data->features == std::vector<float>{1, 2, 5, 6});
  CHECK(data->targets == std::vector<float>{.5, 1, 2.5, 3});
  CHECK(data->target_dim == 2);
}

TEST_CASE("npy: truncated, mismatched and unsupported files are named with their shapes",
          "[core][data]") {
  const std::string y = WriteNpy("y3.npy", "|u1", {3}, "\x01\x02\x03");
  const std::string cut = WriteNpy("cut.npy", "<f4", {3, 4}, std::string(48, '\0'), "", 40);
  CHECK(Message(OpenNpySource(cut, y, {}).status()) ==
        cut +
            ": shape [3, 4] of float32 needs 48 bytes of data, but the file holds 40 (truncated)");
  const std::string four = WriteNpy("four.npy", "<f4", {4, 2}, std::string(32, '\0'));
  CHECK(Message(OpenNpySource(four, y, {}).status()) ==
        y + ": 3 rows of targets [3] for 4 rows of features [4, 2] in " + four);
  const std::string big = WriteNpy("big.npy", ">f4", {3, 1}, std::string(12, '\0'));
  CHECK(Message(OpenNpySource(big, y, {}).status()).find("big.npy: dtype >f4 is not supported") !=
        std::string::npos);
  const std::string fortran =
      WriteNpy("f.npy", "<f4", {3, 2}, std::string(24, '\0'), "'fortran_order': True, ");
  CHECK(Message(OpenNpySource(fortran, y, {}).status()).find("Fortran order") != std::string::npos);
  const std::string ints = WriteNpy("i.npy", "<i4", {3, 1}, std::string(12, '\0'));
  CHECK(Message(OpenNpySource(ints, y, {}).status()) ==
        ints + ": features are int32; expected float32, float64 or uint8");
  const std::string text = TempPath("text.npy");
  std::ofstream(text) << "x,y\n1,2\n";
  CHECK(Message(OpenNpySource(text, y, {}).status()).find("not a .npy file") != std::string::npos);
  const std::string labels = WriteNpy("half.npy", "<f4", {3}, Bytes(std::vector<float>{0, .5, 1}));
  const std::string x = WriteNpy("x3.npy", "<f4", {3, 1}, std::string(12, '\0'));
  CHECK(Message((*OpenNpySource(x, labels, {1, true}))->Read({0, 1, 2}).status()) ==
        labels + ": holds 0.5; class labels are integers 0, 1, 2, ...");
}

// An HDF5 file with datasets "x" (float32 [rows, 2], row r = {r + first, -(r + first)}) and
// "y" (int32 [rows], row r = (r + first) % 3).
std::string WriteHdf5(const std::string& name, int first, int rows) {
  const std::string path = TempPath(name);
  std::vector<float> x;
  std::vector<int32_t> y;
  for (int r = first; r < first + rows; ++r) {
    x.insert(x.end(), {float(r), -float(r)});
    y.push_back(r % 3);
  }
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hsize_t x_dims[] = {hsize_t(rows), 2}, y_dims[] = {hsize_t(rows)};
  const hid_t x_space = H5Screate_simple(2, x_dims, nullptr),
              y_space = H5Screate_simple(1, y_dims, nullptr);
  const hid_t xs =
      H5Dcreate2(file, "x", H5T_IEEE_F32LE, x_space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t ys =
      H5Dcreate2(file, "y", H5T_STD_I32BE, y_space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(xs, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, x.data());
  H5Dwrite(ys, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, y.data());
  for (hid_t id : {xs, ys}) H5Dclose(id);
  for (hid_t id : {x_space, y_space}) H5Sclose(id);
  H5Fclose(file);
  return path;
}

TEST_CASE("DataShard: a streamed shard yields the batches of the same rows in memory",
          "[core][data]") {
  const int rows = 97, width = 3;
  std::vector<float> features(rows * width);
  std::vector<int64_t> labels(rows);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < width; ++c) features[r * width + c] = r + c / 10.0f;
    labels[r] = r % 7;
  }
  const std::string x = WriteNpy("stream_x.npy", "<f4", {rows, width}, Bytes(features));
  const std::string y = WriteNpy("stream_y.npy", "<i8", {rows}, Bytes(labels));
  const std::vector<uint64_t> mine = ShardRows(rows, 1, 3, 5);
  auto source = OpenNpySource(x, y, {1, true});
  REQUIRE(source.ok());
  const Dataset held = *(*source)->Read(mine);
  DataShard in_memory(held, 1, 5);
  DataShard streamed(*OpenNpySource(x, y, {1, true}), mine, 1, 5);
  CHECK(streamed.streamed());
  CHECK(streamed.size() == in_memory.size());
  std::vector<float> xa, ya, xb, yb;
  // Three epochs in batches that do not divide the shard, then a resume mid-epoch.
  for (int step = 0; step < 12; ++step) {
    const int a = in_memory.NextBatch(8, &xa, &ya).value();
    REQUIRE(streamed.NextBatch(8, &xb, &yb).value() == a);
    REQUIRE(xa == xb);
    REQUIRE(ya == yb);
  }
  CHECK(streamed.epoch() == in_memory.epoch());
  const DataPosition at = in_memory.Position(12);
  DataShard resumed(*OpenNpySource(x, y, {1, true}), mine, 1, 5);
  REQUIRE(resumed.Seek(at).ok());
  in_memory.NextBatch(8, &xa, &ya).value();
  resumed.NextBatch(8, &xb, &yb).value();
  CHECK(xa == xb);
  // A seek while the next batch is read ahead (to another epoch's cursor 16): the batches after
  // it are the seek's, not the batch read ahead.
  const DataPosition back = {5, 0, 16};
  REQUIRE(in_memory.Seek(back).ok());
  REQUIRE(streamed.Seek(back).ok());
  for (int step = 0; step < 3; ++step) {
    REQUIRE(streamed.NextBatch(8, &xb, &yb).value() == in_memory.NextBatch(8, &xa, &ya).value());
    REQUIRE(xa == xb);
    REQUIRE(ya == yb);
  }
  // A file cut short after opening: the batch's read error names it.
  DataShard cut(*OpenNpySource(x, y, {1, true}), mine, 1, 5);
  std::filesystem::resize_file(x, 200);
  const absl::StatusOr<int> failed = cut.NextBatch(200, &xb, &yb);
  REQUIRE_FALSE(failed.ok());
  CHECK_THAT(Message(failed.status()), Catch::Contains("stream_x.npy"));
}

TEST_CASE("hdf5: rows of several files, read by hyperslab across the files' boundary",
          "[core][data]") {
  const std::string a = WriteHdf5("a.h5", 0, 4), b = WriteHdf5("b.h5", 4, 3);
  auto source = OpenHdf5Source({a, b}, "x", "y", {1, true});
  REQUIRE(source.ok());
  CHECK((*source)->rows() == 7);
  CHECK((*source)->example_shape() == std::vector<int>{2});
  auto data = (*source)->Read({1, 2, 3, 4, 6});
  REQUIRE(data.ok());
  CHECK(data->features == std::vector<float>{1, -1, 2, -2, 3, -3, 4, -4, 6, -6});
  CHECK(data->targets == std::vector<float>{1, 2, 0, 1, 0});  // big-endian int32 in the file
  CHECK(data->num_classes == 3);
  CHECK(Message((*source)->Read({7}).status()) == "row 7 of 7 asked for");
}

TEST_CASE("hdf5: a missing dataset, a non-HDF5 file and mismatched files are named",
          "[core][data]") {
  const std::string a = WriteHdf5("c.h5", 0, 4);
  CHECK(Message(OpenHdf5Source({a}, "images", "y", {}).status()) ==
        a + ": has no dataset 'images'");
  const std::string text = TempPath("plain.h5");
  std::ofstream(text) << "not hdf5";
  CHECK(Message(OpenHdf5Source({a, text}, "x", "y", {}).status()) == text + ": not an HDF5 file");
  const std::string mixed = TempPath("mixed.h5");
  {
    const hid_t file = H5Fcreate(mixed.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t x_dims[] = {2, 3}, y_dims[] = {2};
    const hid_t xsp = H5Screate_simple(2, x_dims, nullptr),
                ysp = H5Screate_simple(1, y_dims, nullptr);
    const hid_t xs =
        H5Dcreate2(file, "x", H5T_IEEE_F32LE, xsp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const hid_t ys =
        H5Dcreate2(file, "y", H5T_STD_I32LE, ysp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const std::vector<float> zeros(6, 0.0f);
    const std::vector<int32_t> labels(2, 0);
    H5Dwrite(xs, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, zeros.data());
    H5Dwrite(ys, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels.data());
    H5Dclose(xs);
    H5Dclose(ys);
    H5Sclose(xsp);
    H5Sclose(ysp);
    H5Fclose(file);
  }
  CHECK(Message(OpenHdf5Source({a, mixed}, "x", "y", {}).status()) ==
        mixed + ":x: features of shape [2, 3] do not match [4, 2] in " + a + ":x");
}

// A file whose dataset "x" (float32 [4, 2]) is made by `make(file, space)` and whose "y" is a
// plain int32 [4].
std::string WriteHdf5With(const std::string& name,
                          const std::function<hid_t(hid_t file, hid_t space)>& make) {
  const std::string path = TempPath(name);
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hsize_t x_dims[] = {4, 2}, y_dims[] = {4};
  const hid_t xsp = H5Screate_simple(2, x_dims, nullptr), ysp = H5Screate_simple(1, y_dims, nullptr);
  const hid_t x = make(file, xsp);
  if (x >= 0) H5Dclose(x);
  const hid_t y = H5Dcreate2(file, "y", H5T_STD_I32LE, ysp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const std::vector<int32_t> labels = {0, 1, 2, 0};
  H5Dwrite(y, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels.data());
  H5Dclose(y);
  H5Sclose(xsp);
  H5Sclose(ysp);
  H5Fclose(file);
  return path;
}

TEST_CASE("hdf5: rows that are not the file's own written bytes are refused, named",
          "[core][data][security]") {
  const std::string copy = " (make a self-contained copy of the file, e.g. `h5repack -l CONTI "
                           "FILE COPY`)";
  // External storage: the rows would be another file's bytes (a key, /etc/shadow).
  const std::string secret = TempPath("secret.bin");
  std::ofstream(secret) << std::string(64, 'k');
  const std::string external = WriteHdf5With("external.h5", [&](hid_t file, hid_t space) {
    const hid_t plist = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_external(plist, secret.c_str(), 0, H5F_UNLIMITED);
    const hid_t x = H5Dcreate2(file, "x", H5T_IEEE_F32LE, space, H5P_DEFAULT, plist, H5P_DEFAULT);
    H5Pclose(plist);
    return x;
  });
  CHECK(Message(OpenHdf5Source({external}, "x", "y", {}).status()) ==
        external + ":x: refused: its rows are stored in external files" + copy);
  // A virtual dataset whose source file is missing: HDF5 would read fill values.
  const std::string virtual_file = WriteHdf5With("virtual.h5", [&](hid_t file, hid_t space) {
    const hid_t plist = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_virtual(plist, space, "missing-source.h5", "/x", space);
    const hid_t x = H5Dcreate2(file, "x", H5T_IEEE_F32LE, space, H5P_DEFAULT, plist, H5P_DEFAULT);
    H5Pclose(plist);
    return x;
  });
  CHECK(Message(OpenHdf5Source({virtual_file}, "x", "y", {}).status()) ==
        virtual_file + ":x: refused: a virtual dataset, whose rows come from other files" + copy);
  // Chunks never written: every row would read as the fill value.
  const std::string unwritten = WriteHdf5With("unwritten.h5", [&](hid_t file, hid_t space) {
    const hid_t plist = H5Pcreate(H5P_DATASET_CREATE);
    const hsize_t chunk[] = {1, 2};
    H5Pset_chunk(plist, 2, chunk);
    const hid_t x = H5Dcreate2(file, "x", H5T_IEEE_F32LE, space, H5P_DEFAULT, plist, H5P_DEFAULT);
    H5Pclose(plist);
    return x;
  });
  CHECK(Message(OpenHdf5Source({unwritten}, "x", "y", {}).status()) ==
        unwritten + ":x: refused: 4 of its 4 chunks were never written, so their rows would read "
                    "as fill values");
  // An external link to another file's dataset.
  const std::string plain = WriteHdf5("linked-to.h5", 0, 4);
  const std::string linked = WriteHdf5With("linking.h5", [&](hid_t file, hid_t) {
    H5Lcreate_external(plain.c_str(), "/x", file, "x", H5P_DEFAULT, H5P_DEFAULT);
    return hid_t{-1};
  });
  CHECK(Message(OpenHdf5Source({linked}, "x", "y", {}).status()) ==
        linked + ":x: external link refused (it would read another file); give the file that "
                 "holds the dataset itself");
}

// A file like WriteHdf5With's whose "x" is float32 [8, 2], chunks of 2 rows, with `filters`
// applied to its creation properties, and its first `written_rows` rows written (row r =
// {r, -r}).
std::string WriteChunkedHdf5(const std::string& name, const std::function<void(hid_t)>& filters,
                             int written_rows = 8) {
  const std::string path = TempPath(name);
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hsize_t dims[] = {8, 2}, chunk[] = {2, 2}, y_dims[] = {8};
  const hid_t space = H5Screate_simple(2, dims, nullptr), ysp = H5Screate_simple(1, y_dims, nullptr);
  const hid_t plist = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(plist, 2, chunk);
  filters(plist);
  const hid_t x = H5Dcreate2(file, "x", H5T_IEEE_F32LE, space, H5P_DEFAULT, plist, H5P_DEFAULT);
  std::vector<float> rows;
  for (int r = 0; r < written_rows; ++r) rows.insert(rows.end(), {float(r), -float(r)});
  const hsize_t start[] = {0, 0}, count[] = {hsize_t(written_rows), 2};
  const hid_t memory = H5Screate_simple(2, count, nullptr);
  H5Sselect_hyperslab(space, H5S_SELECT_SET, start, nullptr, count, nullptr);
  if (written_rows > 0) H5Dwrite(x, H5T_NATIVE_FLOAT, memory, space, H5P_DEFAULT, rows.data());
  const hid_t y = H5Dcreate2(file, "y", H5T_STD_I32LE, ysp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const std::vector<int32_t> labels = {0, 1, 2, 0, 1, 2, 0, 1};
  H5Dwrite(y, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels.data());
  for (hid_t id : {x, y}) H5Dclose(id);
  for (hid_t id : {space, ysp, memory}) H5Sclose(id);
  H5Pclose(plist);
  H5Fclose(file);
  return path;
}

TEST_CASE("hdf5: rows compressed by HDF5's own filters read as written", "[core][data]") {
  const std::vector<std::pair<std::string, std::function<void(hid_t)>>> kinds = {
      {"gzip", [](hid_t p) { H5Pset_deflate(p, 6); }},
      {"shuffle-gzip-fletcher32",
       [](hid_t p) {
         H5Pset_shuffle(p);
         H5Pset_deflate(p, 9);
         H5Pset_fletcher32(p);
       }},
      {"nbit", [](hid_t p) { H5Pset_nbit(p); }},
      {"scaleoffset", [](hid_t p) { H5Pset_scaleoffset(p, H5Z_SO_FLOAT_DSCALE, 3); }},
  };
  for (const auto& [name, filters] : kinds) {
    INFO(name);
    const std::string path = WriteChunkedHdf5(name + ".h5", filters);
    auto source = OpenHdf5Source({path}, "x", "y", {1, true});
    REQUIRE(source.ok());
    auto data = (*source)->Read({0, 3, 7});
    REQUIRE(data.ok());
    CHECK(data->features == std::vector<float>{0, 0, 3, -3, 7, -7});
  }
}

TEST_CASE("hdf5: a chunked dataset with chunks never written is refused, counting them",
          "[core][data]") {
  const std::string half = WriteChunkedHdf5(
      "half-written.h5", [](hid_t p) { H5Pset_deflate(p, 6); }, /*written_rows=*/4);
  CHECK(Message(OpenHdf5Source({half}, "x", "y", {}).status()) ==
        half + ":x: refused: 2 of its 4 chunks were never written, so their rows would read as "
               "fill values");
}

TEST_CASE("hdf5: soft links inside the file are followed, a cycle and a dangling one named",
          "[core][data]") {
  const std::string path = WriteHdf5("soft.h5", 0, 4);
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  const hid_t group = H5Gcreate2(file, "g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Gclose(group);
  H5Lcreate_soft("/x", file, "g/features", H5P_DEFAULT, H5P_DEFAULT);
  H5Lcreate_soft("g", file, "alias", H5P_DEFAULT, H5P_DEFAULT);  // relative to the root
  H5Lcreate_soft("/loop", file, "loop", H5P_DEFAULT, H5P_DEFAULT);
  H5Lcreate_soft("/nowhere", file, "dangling", H5P_DEFAULT, H5P_DEFAULT);
  H5Fclose(file);
  auto source = OpenHdf5Source({path}, "alias/features", "y", {1, true});
  REQUIRE(source.ok());
  auto data = (*source)->Read({2});
  REQUIRE(data.ok());
  CHECK(data->features == std::vector<float>{2, -2});
  CHECK(Message(OpenHdf5Source({path}, "loop", "y", {}).status()) ==
        path + ":loop: more than 16 soft links (a cycle?)");
  CHECK(Message(OpenHdf5Source({path}, "dangling", "y", {}).status()) ==
        path + ": has no dataset 'dangling' (/nowhere)");
}

}  // namespace
}  // namespace monsoon
