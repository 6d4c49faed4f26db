#pragma once
// ONNX test fixtures (tests/data/onnx/): listing, loading, running and comparing, shared by the
// ONNX tests. Header-only (inline functions) since only tst_*.cpp files are built.
//
// Note [ONNX fixture layout]: a fixture NAME in a directory is
//   NAME.onnx                the model
//   NAME.in0.npy, in1, ...   values of the model's graph inputs that are not initializers, in order
//   NAME.out0.npy, ...       the reference outputs (numpy or PyTorch), in the order of graph
//   outputs NAME.json (optional)     {"rtol": 1e-4, "atol": 1e-5, "export": true, "note": "..."}
// Missing sidecar fields take the defaults below (float32 within 1e-4 relative, as issue 5 asks).
#include "engine/compile/function.h"
#include "engine/graph/function_graph.h"
#include "engine/io/npy.h"
#include "engine/session/run_graph.h"
#include "engine/tensor/tensor.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace tscope::test::onnx {

using engine::DType;
using engine::Tensor;

inline constexpr double kDefaultRtol = 1e-4;
inline constexpr double kDefaultAtol = 1e-5;

struct Fixture {
  std::string name;                // NAME, e.g. "conv_3d_group2_dil2"
  std::filesystem::path onnxPath;  // DIR/NAME.onnx
  std::vector<Tensor> inputs;      // NAME.in<i>.npy
  std::vector<Tensor> expected;    // NAME.out<i>.npy
  double rtol = kDefaultRtol;
  double atol = kDefaultAtol;
  bool exportable = true;  // a round trip through export applies
  std::string note;        // the sidecar's "note", if any
  std::string badCase;     // the sidecar's "bad_case": why the reference contradicts the node
};

// DIR/NAME.in0.npy, DIR/NAME.in1.npy, ... up to the first missing index.
inline std::vector<Tensor> loadNumbered(const std::filesystem::path& dir, const std::string& name,
                                        const std::string& kind) {
  std::vector<Tensor> out;
  for (int i = 0;; ++i) {
    const std::filesystem::path p = dir / (name + "." + kind + std::to_string(i) + ".npy");
    if (!std::filesystem::exists(p)) break;
    out.push_back(engine::io::loadNpy(p));
  }
  return out;
}

// Loads the fixture whose model is `onnxPath` (Note [ONNX fixture layout]). Throws
// std::runtime_error naming the file when the sidecar is malformed or no output exists.
inline Fixture loadFixture(const std::filesystem::path& onnxPath) {
  Fixture f;
  f.name = onnxPath.stem().string();
  f.onnxPath = onnxPath;
  const std::filesystem::path dir = onnxPath.parent_path();
  f.inputs = loadNumbered(dir, f.name, "in");
  f.expected = loadNumbered(dir, f.name, "out");
  if (f.expected.empty())
    throw std::runtime_error(onnxPath.string() + ": no reference outputs (" + f.name +
                             ".out0.npy)");
  const std::filesystem::path sidecar = dir / (f.name + ".json");
  if (std::filesystem::exists(sidecar)) {
    std::ifstream in(sidecar);
    try {
      const nlohmann::json j = nlohmann::json::parse(in);
      f.rtol = j.value("rtol", kDefaultRtol);
      f.atol = j.value("atol", kDefaultAtol);
      f.exportable = j.value("export", true);
      f.note = j.value("note", std::string());
      f.badCase = j.value("bad_case", std::string());
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(sidecar.string() + ": " + e.what());
    }
  }
  return f;
}

// The models (*.onnx) of a directory, sorted by fixture name; empty when the directory is missing.
inline std::vector<std::filesystem::path> fixturePaths(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> models;
  if (std::filesystem::is_directory(dir))
    for (const auto& entry : std::filesystem::directory_iterator(dir))
      if (entry.is_regular_file() && entry.path().extension() == ".onnx")
        models.push_back(entry.path());
  std::sort(models.begin(), models.end(),
            [](const auto& a, const auto& b) { return a.stem().string() < b.stem().string(); });
  return models;
}

// Every fixture of a directory, loaded, sorted by name.
inline std::vector<Fixture> listFixtures(const std::filesystem::path& dir) {
  std::vector<Fixture> out;
  for (const auto& p : fixturePaths(dir)) out.push_back(loadFixture(p));
  return out;
}

// Runs the imported graph on the fixture's inputs: input i goes to the graph's i-th non-shared
// input (initializers are shared variables and keep their values). Throws std::runtime_error when
// the counts differ; runGraph's own errors pass through.
inline std::vector<Tensor> runFixture(const engine::FunctionGraph& graph, const Fixture& fixture,
                                      engine::Mode mode) {
  engine::session::RunInputs run;
  run.mode = mode;
  run.randomSeed = 0;  // only reached by an input the fixture lacks, which the count check refuses
  std::size_t i = 0;
  for (const engine::VarPtr& in : graph.inputs()) {
    if (in->kind() == engine::Variable::Kind::Shared) continue;
    if (i >= fixture.inputs.size())
      throw std::runtime_error(fixture.name + ": the graph has more inputs than the fixture's " +
                               std::to_string(fixture.inputs.size()) + " (next: '" + in->name() +
                               "')");
    run.byName[in->name()] = fixture.inputs[i++];
  }
  if (i != fixture.inputs.size())
    throw std::runtime_error(fixture.name + ": the graph has " + std::to_string(i) +
                             " non-shared inputs, the fixture " +
                             std::to_string(fixture.inputs.size()));
  return engine::session::runGraph(graph, run).outputs;
}

inline std::string formatIndex(std::int64_t flat, const engine::Shape& shape) {
  std::vector<std::int64_t> idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] == 0 ? 0 : flat % shape[d];
    flat = shape[d] == 0 ? 0 : flat / shape[d];
  }
  return engine::shapeToString(idx);
}

inline std::string formatValue(double v) {
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}

// nullopt when every actual output matches its expected one; otherwise a message naming the first
// output that differs: a count, dtype or shape mismatch, or the worst element out of tolerance
// (|a - e| <= atol + rtol*|e| for floats, NaN equal to NaN and infinities equal to themselves;
// integers and bools exact), with its index and both values.
inline std::optional<std::string> compareOutputs(const std::vector<Tensor>& actual,
                                                 const std::vector<Tensor>& expected, double rtol,
                                                 double atol) {
  if (actual.size() != expected.size())
    return "expected " + std::to_string(expected.size()) + " outputs, found " +
           std::to_string(actual.size());
  for (std::size_t k = 0; k < actual.size(); ++k) {
    const Tensor& a = actual[k];
    const Tensor& e = expected[k];
    const std::string out = "output " + std::to_string(k) + ": ";
    if (!a.defined()) return out + "undefined";
    if (a.dtype() != e.dtype())
      return out + "expected dtype " + std::string(engine::dtypeName(e.dtype())) + ", found " +
             std::string(engine::dtypeName(a.dtype()));
    if (a.shape() != e.shape())
      return out + "expected shape " + engine::shapeToString(e.shape()) + ", found " +
             engine::shapeToString(a.shape());
    const std::vector<double> av = a.toDoubles();
    const std::vector<double> ev = e.toDoubles();
    const bool exact = !engine::isFloat(e.dtype());
    std::int64_t worst = -1;
    double worstExcess = 0;  // |a - e| - tolerance, or +inf for NaN/infinity mismatches
    std::int64_t bad = 0;
    for (std::size_t i = 0; i < av.size(); ++i) {
      const double x = av[i], y = ev[i];
      double excess;
      if (exact || std::isnan(x) || std::isnan(y) || std::isinf(x) || std::isinf(y))
        excess = (x == y || (std::isnan(x) && std::isnan(y))) ? 0 : INFINITY;
      else
        excess = std::abs(x - y) - (atol + rtol * std::abs(y));
      if (excess > 0) {
        ++bad;
        if (worst < 0 || excess > worstExcess)
          worst = static_cast<std::int64_t>(i), worstExcess = excess;
      }
    }
    if (worst >= 0) {
      const double x = av[static_cast<std::size_t>(worst)], y = ev[static_cast<std::size_t>(worst)];
      return out + std::to_string(bad) + " of " + std::to_string(av.size()) +
             " elements differ; worst at " + formatIndex(worst, e.shape()) + ": actual " +
             formatValue(x) + ", expected " + formatValue(y) + " (|diff| " +
             formatValue(std::abs(x - y)) + ", rtol " + formatValue(rtol) + ", atol " +
             formatValue(atol) + ")";
    }
  }
  return std::nullopt;
}

}  // namespace tscope::test::onnx
