#pragma once
// The GPU tests' harness (no Qt on the GPU machines): CHECK records a failure with its line and
// goes on; SKIP ends the test with CTest's "skipped" code. main returns gpuTestResult().
#include <cstdio>
#include <cstdlib>

namespace tscope::gputest {
inline int& failures() {
  static int n = 0;
  return n;
}
inline int result() {
  if (failures() == 0) std::printf("PASS\n");
  return failures() == 0 ? 0 : 1;
}
}  // namespace tscope::gputest

#define CHECK(cond)                                                                 \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++::tscope::gputest::failures();                                              \
    }                                                                               \
  } while (0)
#define SKIP(why)                   \
  do {                              \
    std::printf("SKIP: %s\n", why); \
    std::exit(77);                  \
  } while (0)
