#include "core/data/dataset.h"

#include <zlib.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <string>

#include "core/data/data_shard.h"
#include "core/data/data_source.h"
#include "tests/test_util.h"

namespace monsoon {
namespace {

void WriteGz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

std::string Be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

// Every row of the IDX split in `images_path` and `labels_path`.
absl::StatusOr<Dataset> ReadIdxDataset(const std::string& images_path,
                                       const std::string& labels_path) {
  absl::StatusOr<std::unique_ptr<DataSource>> source = OpenIdxSource(images_path, labels_path);
  if (!source.ok()) return source.status();
  return (*source)->ReadAll();
}

TEST_CASE("OpenIdxSource: reads gzip'd images and labels, scaled to [0, 1]", "[core][data]") {
  const std::string images = TempPath("img.gz"), labels = TempPath("lbl.gz");
  WriteGz(images, Be32(0x803) + Be32(2) + Be32(1) + Be32(2) + std::string("\x00\xff\x80\x01", 4));
  WriteGz(labels, Be32(0x801) + Be32(2) + std::string("\x03\x01", 2));
  auto data = ReadIdxDataset(images, labels);
  REQUIRE(data.ok());
  CHECK(data->size() == 2);
  CHECK(data->feature_dim == 2);
  CHECK(data->features[1] == Approx(1.0));
  CHECK(data->features[2] == Approx(128 / 255.0));
  CHECK(data->targets == std::vector<float>{3, 1});
  CHECK(data->num_classes == 4);
  // One row alone, converted when read.
  auto second = (*OpenIdxSource(images, labels))->Read({1});
  REQUIRE(second.ok());
  CHECK(second->features == std::vector<float>{128 / 255.0f, 1 / 255.0f});
  CHECK(second->targets == std::vector<float>{1});
  CHECK(second->example_shape == std::vector<int>{1, 1, 2});
}

TEST_CASE("OpenIdxSource: malformed and missing files are named", "[core][data]") {
  const std::string images = TempPath("bad.gz"), labels = TempPath("lbl2.gz");
  WriteGz(images, Be32(0x803) + Be32(5) + Be32(1) + Be32(2) + "ab");  // truncated
  WriteGz(labels, Be32(0x801) + Be32(5) + "abcde");
  auto data = ReadIdxDataset(images, labels);
  REQUIRE_FALSE(data.ok());
  CHECK(std::string(data.status().message()).find(images) != std::string::npos);
  // A labels file given for the images: the error says which magic it found.
  const auto swapped = ReadIdxDataset(labels, labels);
  CHECK(std::string(swapped.status().message()) ==
        labels + ": not an IDX image file (magic 0x00000801; expected 0x00000803)");
  auto missing = ReadIdxDataset(TempPath("nope.gz"), labels);
  CHECK(absl::IsNotFound(missing.status()));
}

TEST_CASE("OpenIdxSource: a header whose sizes overflow is refused, not wrapped around",
          "[core][data]") {
  // Images of 2^30 x 2^30 pixels are refused by the header alone.
  const std::string images = TempPath("overflow.gz"), labels = TempPath("overflow_lbl.gz");
  WriteGz(images, Be32(0x803) + Be32(16) + Be32(1u << 30) + Be32(1u << 30));
  WriteGz(labels, Be32(0x801) + Be32(16) + std::string(16, '\1'));
  auto data = ReadIdxDataset(images, labels);
  REQUIRE(absl::IsInvalidArgument(data.status()));
  CHECK(std::string(data.status().message()) ==
        images + ": the header says images of 1073741824x1073741824 pixels");
  // 2^31 images of 2^23 pixels: 2^54 bytes, checked against the 0 bytes of the file by
  // division, not by a product that could wrap around.
  WriteGz(images, Be32(0x803) + Be32(1u << 31) + Be32(1u << 11) + Be32(1u << 12));
  data = ReadIdxDataset(images, labels);
  REQUIRE(absl::IsInvalidArgument(data.status()));
  CHECK(std::string(data.status().message()) ==
        images +
            ": the header says 2147483648 images of 2048x4096 pixels, which do not match the "
            "0 bytes after it");
  // No images at all is refused too.
  WriteGz(images, Be32(0x803) + Be32(0) + Be32(28) + Be32(28));
  CHECK(absl::IsInvalidArgument(ReadIdxDataset(images, labels).status()));
}

TEST_CASE("OpenIdxSource: Debian's Fashion-MNIST has 60000 + 10000 28x28 images of 10 classes",
          "[core][data][fmnist]") {
  const std::string dir = "/usr/share/datasets/fashion-mnist/";
  auto train =
      ReadIdxDataset(dir + "train-images-idx3-ubyte.gz", dir + "train-labels-idx1-ubyte.gz");
  REQUIRE(train.ok());
  CHECK(train->size() == 60000);
  CHECK(train->feature_dim == 784);
  CHECK(train->num_classes == 10);
  auto test = ReadIdxDataset(dir + "t10k-images-idx3-ubyte.gz", dir + "t10k-labels-idx1-ubyte.gz");
  REQUIRE(test.ok());
  CHECK(test->size() == 10000);
}

TEST_CASE("CSV: generated linear data round-trips through WriteCsvDataset and ReadCsvDataset",
          "[core][data]") {
  LinearDataSpec spec;
  spec.slope = 3.0;
  spec.intercept = -2.0;
  spec.noise = 0.0;
  spec.rows = 50;
  const Dataset data = GenerateLinearDataset(spec);
  for (size_t i = 0; i < data.size(); ++i) {
    CHECK(data.targets[i] == Approx(3.0 * data.features[i] - 2.0).margin(1e-5));
  }
  const std::string path = TempPath("lin.csv");
  REQUIRE(WriteCsvDataset(data, path).ok());
  auto back = ReadCsvDataset(path);
  REQUIRE(back.ok());
  CHECK(back->size() == 50);
  CHECK(back->feature_dim == 1);
  CHECK(back->num_classes == 0);
  CHECK(back->features[7] == Approx(data.features[7]).margin(1e-5));
}

TEST_CASE("ReadCsvDataset: no header, hex, control bytes and huge cells are refused plainly",
          "[core][data]") {
  const std::string path = TempPath("odd.csv");
  const auto error = [&](const std::string& text) {
    std::ofstream(path) << text;
    return std::string(ReadCsvDataset(path).status().message());
  };
  CHECK(error("1,2\n3,4\n") ==
        path + ":1: the first line holds numbers, not a header; add one (e.g. x,y)");
  CHECK(error("x,y\n0x10,1\n") == path + ":2: column 1 is not a finite decimal number: '0x10'");
  CHECK(error("x,y\n1,\x1b[2J\n") ==
        path + ":2: column 2 is not a finite decimal number: '\\x1b[2J'");
  CHECK(error("x,y\n1," + std::string(100000, '9') + "z\n") ==
        path + ":2: column 2 is not a finite decimal number: '" + std::string(40, '9') +
            "... (100001 bytes)'");
  std::ofstream(path) << "x,y\n+1.5,-2e3\n";
  auto fine = ReadCsvDataset(path);
  REQUIRE(fine.ok());
  CHECK(fine->features[0] == 1.5f);
  CHECK(fine->targets[0] == -2000.0f);
}

TEST_CASE("ReadCsvDataset: a bad cell names the file, line and column", "[core][data]") {
  const std::string path = TempPath("bad.csv");
  std::ofstream(path) << "x,y\n1,2\n3,oops\n";
  auto data = ReadCsvDataset(path);
  REQUIRE_FALSE(data.ok());
  CHECK(std::string(data.status().message()) ==
        path + ":3: column 2 is not a finite decimal number: 'oops'");
  std::ofstream(path) << "x,y\n1,2,3\n";
  CHECK(std::string(ReadCsvDataset(path).status().message()).find("expected 2 columns") !=
        std::string::npos);
}

TEST_CASE("ReadCsvDataset: several targets, or class labels", "[core][data]") {
  const std::string path = TempPath("targets.csv");
  std::ofstream(path) << "a,b,y0,y1\n1,2,3,4\n5,6,7,8\n";
  auto two = ReadCsvDataset(path, {2, false});
  REQUIRE(two.ok());
  CHECK(two->feature_dim == 2);
  CHECK(two->target_dim == 2);
  CHECK(two->features == std::vector<float>{1, 2, 5, 6});
  CHECK(two->targets == std::vector<float>{3, 4, 7, 8});
  CHECK(two->num_classes == 0);
  auto labels = ReadCsvDataset(path, {1, true});
  REQUIRE(labels.ok());
  CHECK(labels->feature_dim == 3);
  CHECK(labels->targets == std::vector<float>{4, 8});
  CHECK(labels->num_classes == 9);
  std::ofstream(path) << "a,label\n1,-1\n";
  CHECK(std::string(ReadCsvDataset(path, {1, true}).status().message()) ==
        path + ":2: column 2 is the class label, '-1'; class labels are integers 0, 1, 2, ...");
  std::ofstream(path) << "a,y\n1,2\n";
  CHECK(std::string(ReadCsvDataset(path, {2, false}).status().message()) ==
        path + ":1: 2 columns; need at least one feature column and 2 target column(s)");
}

TEST_CASE("DataShard: shards are disjoint, cover the data and reshuffle every epoch",
          "[core][data]") {
  Dataset data;
  data.feature_dim = 1;
  for (int i = 0; i < 103; ++i) {
    data.features.push_back(static_cast<float>(i));
    data.targets.push_back(0);
  }
  std::vector<int> seen(103, 0);
  for (int w = 0; w < 4; ++w) {
    const Dataset part = *InMemorySource(data).Read(ShardRows(data.size(), w, 4, 9));
    DataShard shard(part, w, 9);
    std::vector<float> x, y;
    std::vector<float> first_epoch;
    while (shard.progress() < 1.0) {
      const int rows = shard.NextBatch(10, &x, &y).value();
      for (int r = 0; r < rows; ++r) {
        ++seen[static_cast<int>(x[r])];
        first_epoch.push_back(x[r]);
      }
    }
    CHECK(first_epoch.size() == shard.size());
    std::vector<float> second_epoch;
    while (shard.progress() < 2.0) {
      const int rows = shard.NextBatch(10, &x, &y).value();
      second_epoch.insert(second_epoch.end(), x.begin(), x.begin() + rows);
    }
    CHECK(shard.epoch() == 1);
    CHECK(second_epoch != first_epoch);
    std::sort(first_epoch.begin(), first_epoch.end());
    std::sort(second_epoch.begin(), second_epoch.end());
    CHECK(second_epoch == first_epoch);
  }
  for (int v : seen) REQUIRE(v == 1);
}

TEST_CASE("DataShard: NextBatchRows numbers the rows NextBatch copies, epoch after epoch",
          "[core][data]") {
  Dataset data;
  data.feature_dim = 2;
  data.target_dim = 1;
  for (int i = 0; i < 47; ++i) {
    data.features.insert(data.features.end(), {static_cast<float>(i), -1.0f * i});
    data.targets.push_back(static_cast<float>(i % 3));
  }
  DataShard copied(data, 1, 5), numbered(data, 1, 5);
  std::vector<float> x, y;
  std::vector<uint32_t> rows;
  for (int batch = 0; batch < 15; ++batch) {  // 47 rows, 10 a batch: three epochs
    INFO("batch " << batch);
    const int n = copied.NextBatch(10, &x, &y).value();
    numbered.NextBatchRows(10, &rows);
    REQUIRE(rows.size() == static_cast<size_t>(n));
    CHECK(n == (batch % 5 == 4 ? 7 : 10));
    for (int r = 0; r < n; ++r) {
      CHECK(x[2 * r] == numbered.held().features[2 * rows[r]]);
      CHECK(y[r] == numbered.held().targets[rows[r]]);
    }
    CHECK(numbered.progress() == copied.progress());
  }
  CHECK(numbered.epoch() == 2);
}

}  // namespace
}  // namespace monsoon
