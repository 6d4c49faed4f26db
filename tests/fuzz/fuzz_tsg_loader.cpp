// libFuzzer entry point for the .tsg loader: any input must either load into a document that
// passes checkIntegrity and writes back out, or be refused with TsgError. Anything else (a crash,
// another exception, a leak, a hang) is a bug.

#include "engine/io/tsg.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace io = tscope::engine::io;

[[noreturn]] static void fail(const char* what, const char* detail) {
  std::fprintf(stderr, "%s: %s\n", what, detail);
  std::abort();
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string again;
  try {
    io::TsgDocument doc = io::readTsg(text, "fuzz");
    doc.original->checkIntegrity();
    if (doc.optimized) doc.optimized->checkIntegrity();
    again = io::writeTsg(doc);
  } catch (const io::TsgError&) {
    return 0;  // a refusal with a message: the expected outcome for broken input
  } catch (const std::exception& e) {
    fail("unexpected exception", e.what());
  }
  // A document that loads must write out, load back and write the same bytes (exact round trip).
  try {
    io::TsgDocument back = io::readTsg(again, "fuzz-roundtrip");
    if (io::writeTsg(back) != again) fail("round trip", "the reloaded document writes different bytes");
  } catch (const std::exception& e) {
    fail("the written document does not load", e.what());
  }
  return 0;
}
