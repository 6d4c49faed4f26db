#pragma once
// Helpers shared by the graph-core tests: the message of an expected exception, a structural dump
// of a FunctionGraph that two graphs (or one graph before and after an edit) can be compared by, a
// feature that records its callbacks, and an independent recount of a graph's structure.

#include "engine/graph/apply.h"
#include "engine/graph/feature.h"
#include "engine/graph/function_graph.h"
#include "engine/graph/op.h"
#include "engine/graph/variable.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/tensor/tensor.h"

#include <QString>
#include <QTest>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <source_location>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tscope::engine::testing {

// Small graphs over float32 vectors of 3, built with the Elemwise builders. Each helper passes
// its caller's line on, so creation sites name the test, not this header.
using Site = std::source_location;
inline const TensorType kVec(DType::Float32, {3});
inline VarPtr fv(std::string name = {}, Site site = Site::current()) {
  return Variable::create(kVec, std::move(name), site);
}
inline VarPtr neg(const VarPtr& x, Site site = Site::current()) {
  return elemwise(ScalarOp::Neg, {x}, site);
}
inline VarPtr exp_(const VarPtr& x, Site site = Site::current()) {
  return elemwise(ScalarOp::Exp, {x}, site);
}
inline VarPtr log_(const VarPtr& x, Site site = Site::current()) {
  return elemwise(ScalarOp::Log, {x}, site);
}
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

// A feature that records the reason of every input change, in order.
class ChangeLog : public Feature {
 public:
  std::vector<std::string> reasons;
  void onChangeInput(FunctionGraph&, Apply*, int, const VarPtr&, const VarPtr&,
                     std::string_view reason) override {
    reasons.emplace_back(reason);
  }
};

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

using Ownership = FunctionGraph::Ownership;

// A float32 constant of three ones.
inline VarPtr one() {
  return Constant::create(Tensor::full(DType::Float32, {3}, 1), "one");
}

inline std::string idStr(const Apply* node) {
  return node ? std::to_string(node->id()) : "out";
}

// Logs every callback as a line of text.
class RecordingFeature : public Feature {
 public:
  std::vector<std::string> events;
  std::vector<Apply*> imported;
  std::vector<Apply*> pruned;

  void onAttach(FunctionGraph&) override { events.push_back("attach"); }
  void onDetach(FunctionGraph&) override { events.push_back("detach"); }
  void onImport(FunctionGraph& fg, Apply& node, std::string_view reason) override {
    QVERIFY(fg.contains(node));
    imported.push_back(&node);
    events.push_back("import " + std::to_string(node.id()) + " " + node.op().str() + " " +
                     std::string(reason));
  }
  void onPrune(FunctionGraph&, Apply& node, std::string_view reason) override {
    pruned.push_back(&node);
    events.push_back("prune " + std::to_string(node.id()) + " " + std::string(reason));
  }
  void onChangeInput(FunctionGraph&, Apply* node, int index, const VarPtr& oldVar,
                     const VarPtr& newVar, std::string_view reason) override {
    events.push_back("change " + idStr(node) + "[" + std::to_string(index) + "] " +
                     std::to_string(oldVar->id()) + "->" + std::to_string(newVar->id()) + " " +
                     std::string(reason));
  }
  void onChangeBegin(FunctionGraph&, std::string_view reason) override {
    events.push_back("begin " + std::string(reason));
  }
  void onChangeEnd(FunctionGraph&, std::string_view reason) override {
    events.push_back("end " + std::string(reason));
  }
  std::size_t count(std::string_view prefix) const {
    return std::count_if(events.begin(), events.end(),
                         [&](const std::string& e) { return e.rfind(prefix, 0) == 0; });
  }
};

// Recounts the structure from the nodes and outputs alone and compares it with what the graph
// keeps: the nodes are exactly those the outputs need, every variable's clients are exactly its
// uses, and the variables are exactly the inputs, the used constants and the node outputs.
inline void verifyStructure(const FunctionGraph& fg) {
  std::set<const Apply*> reachable;
  std::vector<const Variable*> stack;
  for (const auto& o : fg.outputs()) stack.push_back(o.get());
  while (!stack.empty()) {
    const Variable* v = stack.back();
    stack.pop_back();
    if (const Apply* n = v->owner(); n && reachable.insert(n).second)
      for (const auto& in : n->inputs()) stack.push_back(in.get());
  }
  const std::set<const Apply*> nodes(fg.nodes().begin(), fg.nodes().end());
  QCOMPARE(nodes.size(), fg.nodes().size());
  QVERIFY2(nodes == reachable, "the graph's nodes must be exactly those its outputs need");

  std::map<const Variable*, std::multiset<std::pair<const Apply*, int>>> uses;
  std::set<const Variable*> expectedVars;
  for (const auto& in : fg.inputs()) expectedVars.insert(in.get());
  for (const Apply* n : fg.nodes()) {
    for (int i = 0; i < n->nInputs(); ++i) {
      uses[n->input(i).get()].insert({n, i});
      expectedVars.insert(n->input(i).get());
      QVERIFY(n->input(i)->fgraph() == &fg);
    }
    for (int o = 0; o < n->nOutputs(); ++o) expectedVars.insert(&n->outputRef(o));
  }
  for (std::size_t i = 0; i < fg.outputs().size(); ++i) {
    uses[fg.outputs()[i].get()].insert({nullptr, static_cast<int>(i)});
    expectedVars.insert(fg.outputs()[i].get());
  }
  const std::set<const Variable*> vars(fg.variables().begin(), fg.variables().end());
  QCOMPARE(vars.size(), fg.variables().size());
  QVERIFY2(vars == expectedVars,
           "the graph's variables must be inputs, used constants and node outputs");
  for (const Variable* v : vars) {
    std::multiset<std::pair<const Apply*, int>> listed;
    for (const Client& c : fg.clients(*v)) listed.insert({c.node, c.index});
    QVERIFY2(listed == uses[v], ("wrong clients for " + v->displayName()).c_str());
  }
}

}  // namespace tscope::engine::testing
