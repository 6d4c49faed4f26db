// libFuzzer entry point for the ONNX importer: any input must either import into a document
// whose graph passes checkIntegrity and writes out as a .tsg, or be refused with OnnxError whose
// message is valid UTF-8. Anything else (a crash, another exception, a leak, a hang, an
// allocation of gigabytes) is a bug.

#include "engine/io/onnx/onnx_import.h"

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

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    io::OnnxImportResult result = io::readOnnx(bytes, "fuzz.onnx");
    result.document.original->checkIntegrity();
    (void)io::writeTsg(result.document);
  } catch (const io::OnnxError& e) {
    try {
      (void)nlohmann::json(std::string(e.what())).dump();
    } catch (const std::exception&) {
      fail("the error message is not valid UTF-8", e.what());
    }
  } catch (const std::exception& e) {
    fail("unexpected exception", e.what());
  }
  return 0;
}
