// libFuzzer entry point for the .tsg loader: any input must either load into a document that
// passes checkIntegrity and writes back out, or be refused with TsgError. Anything else (a crash,
// another exception, a leak, a hang) is a bug.

#include "engine/io/tsg.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    tscope::engine::io::TsgDocument doc = tscope::engine::io::readTsg(text, "fuzz");
    doc.original->checkIntegrity();
    if (doc.optimized) doc.optimized->checkIntegrity();
    // A document that loads must write out and load back.
    std::string again = tscope::engine::io::writeTsg(doc);
    tscope::engine::io::readTsg(again, "fuzz-roundtrip");
  } catch (const tscope::engine::io::TsgError&) {
    // A refusal with a message: the expected outcome for broken input.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}
