#pragma once
// Helpers shared by the graph-core tests: the message of an expected exception, and a structural
// dump of a FunctionGraph that two graphs (or one graph before and after an edit) can be compared
// by.

#include "engine/graph/apply.h"
#include "engine/graph/function_graph.h"
#include "engine/graph/op.h"
#include "engine/ops/elemwise/elemwise.h"

#include <QString>

#include <optional>
#include <source_location>
#include <string>
#include <string_view>

namespace tscope::engine::testing {

// Small graphs over float32 vectors of 3, built with the Elemwise builders. Each helper passes
// its caller's line on, so creation sites name the test, not this header.
using Site = std::source_location;
inline const TensorType kVec(DType::Float32, {3});
inline VarPtr fv(std::string name = {}, Site site = Site::current()) {
  return Variable::create(kVec, std::move(name), site);
}
inline VarPtr neg(const VarPtr& x, Site site = Site::current()) { return elemwise(ScalarOp::Neg, {x}, site); }
inline VarPtr exp_(const VarPtr& x, Site site = Site::current()) { return elemwise(ScalarOp::Exp, {x}, site); }
inline VarPtr log_(const VarPtr& x, Site site = Site::current()) { return elemwise(ScalarOp::Log, {x}, site); }
inline VarPtr add(const VarPtr& a, const VarPtr& b, Site site = Site::current()) {
  return elemwise(ScalarOp::Add, {a, b}, site);
}
inline VarPtr mul(const VarPtr& a, const VarPtr& b, Site site = Site::current()) {
  return elemwise(ScalarOp::Mul, {a, b}, site);
}

// The what() of the E that f throws; nullopt when f returns normally. Other exception types
// propagate, so the test fails on them.
template <class E, class F>
std::optional<std::string> thrownMessage(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const E& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

inline bool contains(const std::optional<std::string>& text, std::string_view part) {
  return text && text->find(part) != std::string::npos;
}

inline QString qs(std::string_view s) {
  return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

// One line per node in toposort order: "id: Op(input ids) -> output ids", then the inputs and
// outputs of the graph by id. Equal dumps mean equal structure, ids included.
inline std::string structureDump(const FunctionGraph& fg) {
  std::string out = "inputs:";
  for (const auto& in : fg.inputs()) out += " " + std::to_string(in->id());
  out += "\n";
  for (const Apply* node : fg.toposort()) {
    out += std::to_string(node->id()) + ": " + node->op().str() + "(";
    for (int i = 0; i < node->nInputs(); ++i)
      out += (i ? ", " : "") + std::to_string(node->input(i)->id());
    out += ") ->";
    for (int o = 0; o < node->nOutputs(); ++o) out += " " + std::to_string(node->outputRef(o).id());
    out += "\n";
  }
  out += "outputs:";
  for (const auto& o : fg.outputs()) out += " " + std::to_string(o->id());
  return out + "\n";
}

}  // namespace tscope::engine::testing
