// libFuzzer entry point for the .tsg loader (version 2: header, JSON, tensor section; version 1:
// JSON text): any input must either load into a document that passes checkIntegrity, whose every
// tensor can be read in full, and that writes back out, or be refused with TsgError. Anything else
// (a crash, an out-of-bounds read of the tensor section, another exception, a leak, a hang) is a
// bug.
//
// Note [Framed inputs]: a mutation of a version-2 file's JSON changes its length, which the header
// then contradicts, so few mutations would get past the header. An input that does not start with
// the magic but holds a NUL byte is therefore also tried as "JSON NUL SECTION": the JSON before the
// first NUL and the bytes after it (zero-padded to 64) are framed with a correct header, which lets
// the fuzzer mutate the descriptors freely (framed_*.tsg seeds).

#include "engine/io/tsg.h"
#include "engine/io/tsg_binary.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

namespace io = tscope::engine::io;

[[noreturn]] static void fail(const char* what, const char* detail) {
  std::fprintf(stderr, "%s: %s\n", what, detail);
  std::abort();
}

static void check(std::string_view text) {
  std::string again;
  try {
    io::TsgDocument doc = io::readTsg(text, "fuzz");
    doc.original->checkIntegrity();
    if (doc.optimized) doc.optimized->checkIntegrity();
    // The tensors are views of the file's bytes: reading each in full (writeTsg does) lets
    // AddressSanitizer see a range the reader let past the end of the section.
    again = io::writeTsg(doc);
    const io::TsgTensorStats& s = doc.tensorStats;
    if (s.sharedTensors > s.tensors || s.sharedBetweenGraphs > s.sharedTensors ||
        s.references < s.tensors)
      fail("tensor stats", "the shared counts exceed the stored ones");
  } catch (const io::TsgError& e) {
    // A refusal with a message: the expected outcome for broken input. The message must be valid
    // UTF-8 (the GUI and --json output carry it; nlohmann's dump throws on broken UTF-8).
    try {
      (void)nlohmann::json(std::string(e.what())).dump();
    } catch (const std::exception&) {
      fail("the error message is not valid UTF-8", e.what());
    }
    return;
  } catch (const std::exception& e) {
    fail("unexpected exception", e.what());
  }
  // A document that loads must write out, load back and write the same bytes (exact round trip).
  try {
    io::TsgDocument back = io::readTsg(again, "fuzz-roundtrip");
    if (io::writeTsg(back) != again)
      fail("round trip", "the reloaded document writes different bytes");
    if (back.tensorStats.version != 2)
      fail("round trip", "the written document is not read as version 2");
  } catch (const std::exception& e) {
    fail("the written document does not load", e.what());
  }
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  check(text);
  if (const std::size_t nul = text.find('\0');
      nul != std::string_view::npos && !io::looksLikeBinaryTsg(text)) {
    std::string section(text.substr(nul + 1));
    section.resize(io::alignTsg(section.size()), '\0');
    check(io::assembleTsg(text.substr(0, nul), section));
  }
  return 0;
}
