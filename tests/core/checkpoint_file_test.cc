#include "core/run/checkpoint_file.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace monsoon {
namespace {

namespace fs = std::filesystem;

std::string FreshDir(const std::string& name) {
  const std::string dir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/", name);
  fs::remove_all(dir);
  return dir;
}

// Writes checkpoint `n`: its number, then `floats` values n, n+1, ... (self-checking).
std::string WriteNumbered(const std::string& dir, uint64_t n, size_t floats, int keep = 2) {
  auto out = CheckpointWriter::Begin(dir);
  REQUIRE(out.ok());
  (*out)->Pod(n);
  std::vector<float> values(floats);
  for (size_t i = 0; i < floats; ++i) values[i] = static_cast<float>(n + i);
  (*out)->Vector(values);
  auto path = (*out)->Commit(keep);
  REQUIRE(path.ok());
  return *path;
}

// Reads a checkpoint written by WriteNumbered and checks every value; returns its number.
uint64_t ReadNumbered(CheckpointReader* in, size_t floats) {
  uint64_t n = 0;
  REQUIRE(in->Pod(&n).ok());
  std::vector<float> values;
  REQUIRE(in->Vector(floats, &values).ok());
  for (size_t i = 0; i < floats; ++i) REQUIRE(values[i] == static_cast<float>(n + i));
  REQUIRE(in->Finish().ok());
  return n;
}

void FlipByte(const std::string& path, size_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(c ^ 0x40));
}

TEST_CASE("Checkpoint files: round trip, newest first, only `keep` kept", "[checkpoint]") {
  const std::string dir = FreshDir("roundtrip");
  for (uint64_t n = 1; n <= 4; ++n) WriteNumbered(dir, n * 10, 1000, 3);
  const std::vector<std::string> all = ListCheckpoints(dir);
  REQUIRE(all.size() == 3);
  CHECK(fs::path(all[0]).filename() == "ckpt-00000004.bin");
  std::vector<std::string> skipped;
  auto newest = OpenNewestCheckpoint(dir, &skipped);
  REQUIRE(newest.ok());
  CHECK(skipped.empty());
  CHECK(ReadNumbered(newest->get(), 1000) == 40);
  // No stray temporary files are left behind.
  for (const auto& entry : fs::directory_iterator(dir)) {
    CHECK(entry.path().filename().string().rfind("ckpt-", 0) == 0);
  }
}

TEST_CASE("Checkpoint files: a damaged newest checkpoint is named and the previous one used",
          "[checkpoint]") {
  const std::string dir = FreshDir("damaged");
  WriteNumbered(dir, 1, 5000);
  const std::string newest = WriteNumbered(dir, 2, 5000);
  SECTION("one flipped bit in the payload") { FlipByte(newest, 12 + 4000); }
  SECTION("cut short, as by a crash without the rename's guarantees") {
    fs::resize_file(newest, fs::file_size(newest) - 100);
  }
  SECTION("the trailer itself damaged") { FlipByte(newest, fs::file_size(newest) - 2); }
  auto direct = CheckpointReader::Open(newest);
  REQUIRE(absl::IsDataLoss(direct.status()));
  CHECK(std::string(direct.status().message()).find(newest) != std::string::npos);
  std::vector<std::string> skipped;
  auto used = OpenNewestCheckpoint(dir, &skipped);
  REQUIRE(used.ok());
  CHECK(ReadNumbered(used->get(), 5000) == 1);
  REQUIRE(skipped.size() == 1);
  CHECK(skipped[0].find("ckpt-00000002.bin is damaged") != std::string::npos);
}

TEST_CASE("Checkpoint files: when none verifies, each is named and none is used", "[checkpoint]") {
  const std::string dir = FreshDir("all_damaged");
  const std::string older = WriteNumbered(dir, 1, 100);
  const std::string newer = WriteNumbered(dir, 2, 100);
  FlipByte(older, 12 + 40);
  fs::resize_file(newer, fs::file_size(newer) - 10);
  std::vector<std::string> skipped;
  auto none = OpenNewestCheckpoint(dir, &skipped);
  REQUIRE(absl::IsDataLoss(none.status()));
  const std::string message(none.status().message());
  CHECK(message.find("no checkpoint in " + dir + " verifies") != std::string::npos);
  CHECK(message.find("ckpt-00000001.bin is damaged: checksum") != std::string::npos);
  CHECK(message.find("ckpt-00000002.bin is damaged") != std::string::npos);
}

TEST_CASE("Checkpoint files: another format version is named as such", "[checkpoint]") {
  const std::string path = WriteNumbered(FreshDir("format"), 1, 10);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(11);
    f.put('\2');
  }
  auto in = CheckpointReader::Open(path);
  REQUIRE(absl::IsDataLoss(in.status()));
  CHECK(std::string(in.status().message()).find("format 2, from another version of monsoon") !=
        std::string::npos);
}

TEST_CASE("Checkpoint files: reading past the payload or leaving some unread is an error",
          "[checkpoint]") {
  const std::string dir = FreshDir("bounds");
  const std::string path = WriteNumbered(dir, 7, 10);
  auto in = CheckpointReader::Open(path);
  REQUIRE(in.ok());
  uint64_t n = 0;
  REQUIRE((*in)->Pod(&n).ok());
  std::vector<float> values;
  CHECK(absl::IsDataLoss((*in)->Vector(11, &values)));  // the count says 10
  CHECK(absl::IsDataLoss((*in)->Finish()));
  std::vector<char> too_much(1000);
  CHECK(absl::IsDataLoss((*in)->Bytes(too_much.data(), too_much.size())));
  std::vector<std::string> skipped;
  CHECK(absl::IsNotFound(OpenNewestCheckpoint(FreshDir("empty"), &skipped).status()));
}

// True when DIR holds a temporary file: a checkpoint write was cut off.
bool HasPartialWrite(const std::string& dir) {
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind(".ckpt.tmp.", 0) == 0) return true;
  }
  return false;
}

// Real processes, real kill -9: a child commits 16 MiB checkpoints as fast as it can; it is
// killed at random moments (mostly in the middle of a write). Every time, the newest
// checkpoint that verifies is complete and correct, and never older than the last one whose
// rename the child had announced.
TEST_CASE("Checkpoint files: kill -9 during writes never leaves the job without a checkpoint",
          "[checkpoint][crash]") {
  const std::string dir = FreshDir("crash");
  constexpr size_t kFloats = 4 << 20;  // 16 MiB per checkpoint
  WriteNumbered(dir, 1, kFloats);
  std::mt19937 rng(42);
  uint64_t next = 2;
  int killed_mid_write = 0;
  constexpr int kRounds = 20;
  for (int round = 0; round < kRounds; ++round) {
    int pipe_fds[2];
    REQUIRE(pipe(pipe_fds) == 0);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      close(pipe_fds[0]);
      for (uint64_t n = next;; ++n) {
        auto out = CheckpointWriter::Begin(dir);
        if (!out.ok()) _exit(2);
        (*out)->Pod(n);
        std::vector<float> values(kFloats);
        for (size_t i = 0; i < kFloats; ++i) values[i] = static_cast<float>(n + i);
        (*out)->Vector(values);
        if (!(*out)->Commit(2).ok()) _exit(3);
        if (write(pipe_fds[1], &n, sizeof(n)) != sizeof(n)) _exit(4);
      }
    }
    close(pipe_fds[1]);
    absl::SleepFor(absl::Milliseconds(std::uniform_int_distribution<int>(5, 120)(rng)));
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    REQUIRE(WIFSIGNALED(status));
    uint64_t committed = 0, n = 0;
    while (read(pipe_fds[0], &n, sizeof(n)) == sizeof(n)) committed = n;
    close(pipe_fds[0]);
    std::vector<std::string> skipped;
    auto newest = OpenNewestCheckpoint(dir, &skipped);
    REQUIRE(newest.ok());
    const uint64_t found = ReadNumbered(newest->get(), kFloats);
    CHECK(found >= committed);  // nothing announced as committed is lost
    CHECK(skipped.empty());     // a cut-off write never looks like a checkpoint
    killed_mid_write += HasPartialWrite(dir) ? 1 : 0;
    next = found + 1;
  }
  // Most kills land inside a write (writing is most of the child's time); the next writer
  // removes what they left.
  INFO("kills during a write: " << killed_mid_write << " of " << kRounds);
  CHECK(killed_mid_write >= kRounds / 4);
  WriteNumbered(dir, next, 10);
  CHECK(!HasPartialWrite(dir));
}

}  // namespace
}  // namespace monsoon
