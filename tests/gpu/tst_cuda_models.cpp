// The ONNX models on the GPU against the CPU (issue 22; label `gpu`, no Qt): the ResNet-18
// fixture (torchvision at widths 16-128, 64x64), the transformer encoder fixture, and a MobileNetV2
// (torchvision at width 0.25, 64x64, 10 classes: depthwise and 1x1 convolutions, ReLU6, residual
// adds; tests/gpu/models/make_mobilenet.py). The detection fixtures' MobileNet is not used: their
// top-k and NMS load from a .tsg as ONNX-backed nodes, which need ONNX at run time. The GPU
// machines have no protobuf, so the models come as .tsg files converted from the .onnx on a
// machine with ONNX (tests/gpu/models/make_models.sh); their inputs and PyTorch's outputs are
// .npy files (the ONNX fixtures' own, or the MobileNet's next to its .tsg). Each model compiles
// in fast_run for the CPU and for the GPU, runs on the input, and every output is checked against
// the CPU's and against PyTorch's; the GPU compilation must place at least half the nodes on the
// device. Skips (77) without a device. TSCOPE_GPU_TEST_ON_CPU=1 runs the "device" side on the
// CPU too (the placement check left out): the files, the comparison and the test's logic,
// checked on a machine without a GPU.
//   tst_cuda_models [MODELS_DIR [FIXTURES_DIR]]
#include "engine/backends/cuda/cuda_backend.h"
#include "engine/compile/function.h"
#include "engine/compile/program.h"
#include "engine/graph/function_graph.h"
#include "engine/graph/variable.h"
#include "engine/io/npy.h"
#include "engine/io/tsg.h"
#include "gpu_check.h"
#include "gpu_device.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

using namespace tscope::engine;
namespace fs = std::filesystem;

namespace {
using tscope::gputest::section;

bool g_dry = false;  // TSCOPE_GPU_TEST_ON_CPU
fs::path g_models = TSCOPE_GPU_MODELS_DIR;
fs::path g_fixtures = TSCOPE_ONNX_FIXTURES_DIR;

struct Model {
  const char* name;  // X.tsg in the models folder
  // The folder of X.in*.npy and X.out*.npy under the fixtures folder, or "" for the models folder.
  const char* fixtures;
  double rtol, atol;      // GPU against CPU, and against PyTorch (atol scaled by the output)
  double minDeviceShare;  // of the linked nodes that run on the device
};

// The largest |a - b| over max(|b|) of a tensor, for messages.
double worstScaled(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.toDoubles(), y = b.toDoubles();
  double worst = 0, scale = 0;
  for (double v : y) scale = std::max(scale, std::abs(v));
  for (std::size_t i = 0; i < x.size() && i < y.size(); ++i)
    worst = std::max(worst, std::abs(x[i] - y[i]));
  return scale > 0 ? worst / scale : worst;
}

// Equal shapes and |a - b| <= atol * max|b| + rtol * |b| everywhere.
bool close(const Tensor& got, const Tensor& want, double rtol, double atol,
           const std::string& what) {
  if (got.shape() != want.shape()) {
    std::fprintf(stderr, "%s: shape %s, expected %s\n", what.c_str(),
                 shapeToString(got.shape()).c_str(), shapeToString(want.shape()).c_str());
    return false;
  }
  const std::vector<double> x = got.toDoubles(), y = want.toDoubles();
  double scale = 0;
  for (double v : y) scale = std::max(scale, std::abs(v));
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::abs(x[i] - y[i]) <= atol * scale + rtol * std::abs(y[i])) continue;
    std::fprintf(stderr, "%s: element %zu is %.8g, expected %.8g (worst scaled error %.3g)\n",
                 what.c_str(), i, x[i], y[i], worstScaled(got, want));
    return false;
  }
  return true;
}

Function compileOn(const FunctionGraph& graph, Device device) {
  std::vector<VarPtr> inputs;
  for (const VarPtr& in : graph.inputs())
    if (in->kind() != Variable::Kind::Shared) inputs.push_back(in);
  CompileOptions options;
  options.mode = Mode::FastRun;
  options.device = device;
  return compile(inputs, graph.outputs(), {}, options);
}

void checkModel(const Model& m) {
  const io::TsgDocument doc = io::loadTsg(g_models / (std::string(m.name) + ".tsg"));
  const fs::path dir = *m.fixtures ? g_fixtures / m.fixtures : g_models;
  std::vector<Tensor> args;
  for (int i = 0; fs::exists(dir / (std::string(m.name) + ".in" + std::to_string(i) + ".npy")); ++i)
    args.push_back(io::loadNpy(dir / (std::string(m.name) + ".in" + std::to_string(i) + ".npy")));
  CHECK(!args.empty());
  Function cpu = compileOn(*doc.original, Device::Cpu);
  Function gpu = compileOn(*doc.original, g_dry ? Device::Cpu : Device::Cuda);
  const std::vector<Tensor> want = cpu(args);
  const std::vector<Tensor> got = gpu(args);
  CHECK(got.size() == want.size());
  for (std::size_t o = 0; o < got.size() && o < want.size(); ++o) {
    const std::string what = std::string(m.name) + " output " + std::to_string(o);
    CHECK(got[o].device() == Device::Cpu);  // outputs come back to the host
    CHECK(close(got[o], want[o], m.rtol, m.atol, what + " (GPU against CPU)"));
    const fs::path torch = dir / (std::string(m.name) + ".out" + std::to_string(o) + ".npy");
    if (fs::exists(torch))
      CHECK(close(got[o], io::loadNpy(torch).astype(got[o].dtype()), m.rtol, m.atol,
                  what + " (GPU against PyTorch)"));
  }
  // A second call reuses the compiled kernels and gives the same values.
  const std::vector<Tensor> again = gpu(args);
  for (std::size_t o = 0; o < again.size() && o < got.size(); ++o)
    CHECK(close(again[o], got[o], 0, 0, std::string(m.name) + " second call"));
  std::size_t onDevice = 0;
  for (const LinkedNode& node : gpu.program().nodes())
    onDevice += node.kernel.device == Device::Cuda;
  const double share =
      static_cast<double>(onDevice) / static_cast<double>(gpu.program().nodes().size());
  std::printf("  %s: %zu of %zu nodes on the device, worst scaled error against the CPU %.2g\n",
              m.name, onDevice, gpu.program().nodes().size(),
              got.empty() ? 0.0 : worstScaled(got[0], want[0]));
  if (!g_dry) CHECK(share >= m.minDeviceShare);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) g_models = argv[1];
  if (argc > 2) g_fixtures = argv[2];
  g_dry = tscope::gputest::startDeviceOrDryRun();
  // Tolerances: float32 on cuDNN and cuBLAS (no TF32) against oneDNN and OpenBLAS.
  section("resnet18", [] { checkModel({"resnet18", "models", 1e-3, 1e-4, 0.5}); });
  section("transformer encoder", [] {
    checkModel({"transformer_encoder", "models", 1e-3, 1e-4, 0.5});
  });
  section("mobilenet v2", [] { checkModel({"mobilenetv2", "", 1e-3, 1e-4, 0.5}); });
  tscope::gputest::sectionSummary();
  return tscope::gputest::result();
}
