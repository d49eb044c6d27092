// Helpers shared by Monsoon's tests.
#ifndef MONSOON_TESTS_TEST_UTIL_H_
#define MONSOON_TESTS_TEST_UTIL_H_

#include <cstdlib>
#include <string>

namespace monsoon {

// A path inside the test's private temporary directory (Bazel's TEST_TMPDIR).
inline std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

}  // namespace monsoon

#endif  // MONSOON_TESTS_TEST_UTIL_H_
