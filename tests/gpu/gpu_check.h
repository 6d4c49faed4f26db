#pragma once
// The GPU tests' harness (no Qt on the GPU machines): CHECK records a failure with its line and
// goes on; SKIP ends the test with CTest's "skipped" code; section() runs one named part and
// counts it; main prints sectionSummary() and returns result().
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>

namespace tscope::gputest {
inline int& failures() {
  static int n = 0;
  return n;
}
struct SectionCounts {
  int passed = 0, failed = 0;
};
inline SectionCounts& sectionCounts() {
  static SectionCounts c;
  return c;
}
// Runs one part of a suite; it passes when it records no failure and throws nothing.
inline void section(const char* name, const std::function<void()>& body) {
  const int before = failures();
  try {
    body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: exception: %s\n", name, e.what());
    ++failures();
  }
  const bool ok = failures() == before;
  std::printf("%-28s %s\n", name, ok ? "ok" : "FAILED");
  ++(ok ? sectionCounts().passed : sectionCounts().failed);
}
inline void sectionSummary() {
  std::printf("%d passed, %d failed\n", sectionCounts().passed, sectionCounts().failed);
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
