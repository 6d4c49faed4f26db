#pragma once
// Graphs for the debugger's GUI tests (tst_debug_*), saved as .tsg files and opened as documents:
//   nanChain   x -> h = log(x) (in scope layer3) -> a = h * 2 -> b = a + 1 -> y = sum(b); x[1, 1] <
//   0, so h holds a
//              NaN; with h's and a's NaN allowed, NanGuard reports b with the chain b, a, log
//   ofg        y = inner(x) * 3 with inner = OpFromGraph(exp(a) * 2): stepping into it
//   longChain  n nodes h = tanh(dot(h, W)), (8, 1024) x (1024, 1024): a run that takes a while
//   breakOp    a BreakPoint op monitoring one value
#include "engine/graph/apply.h"
#include "engine/graph/source_site.h"
#include "engine/io/tsg.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/debug/breakpoint.h"
#include "engine/ops/graph/op_from_graph.h"
#include "engine/ops/reduce/reduce.h"
#include "gui/app/debug/debug_controller.h"

#include <QString>
#include <QTest>

#include <random>
#include <string>

namespace test {

using namespace tscope::engine;

inline VarPtr named(VarPtr v, const std::string& name) {
  v->setName(name);
  return v;
}

inline void save(const QString& path, const std::vector<VarPtr>& inputs,
                 const std::vector<VarPtr>& outputs) {
  io::TsgDocument doc;
  doc.original = std::make_unique<FunctionGraph>(inputs, outputs);
  io::saveTsg(doc, path.toStdString());
}

inline void writeNanChain(const QString& path) {
  VarPtr x = Variable::create(TensorType(DType::Float32, {2, 3}), "x");
  x->setTestValue(Tensor::fromDoubles(DType::Float32, {2, 3}, {0.5, 1, 2, 3, -0.375, 4}));
  VarPtr h;
  {
    NameScope scope("layer3");  // the creator sits in a group
    h = named(log(x), "h");
  }
  VarPtr a = named(h * 2.0, "a");
  VarPtr b = named(a + 1.0, "b");
  VarPtr y = named(sum(b), "y");
  save(path, {x}, {y});
}

inline void writeOfg(const QString& path) {
  VarPtr a = Variable::create(TensorType(DType::Float32, {kUnknownDim}), "a");
  auto inner = opFromGraph({a}, {named(exp(a) * 2.0, "inner_out")}, "inner");
  VarPtr x = Variable::create(TensorType(DType::Float32, {kUnknownDim}), "x");
  x->setTestValue(Tensor::fromDoubles(DType::Float32, {1}, {0}));
  VarPtr y = named((*inner)({x}) * 3.0, "y");
  save(path, {x}, {y});
}

// n GEMMs of (rows, size) x (size, size): slow-ish nodes with small values, in scopes of 25.
inline void writeLongChain(const QString& path, int n, std::int64_t rows = 8,
                           std::int64_t size = 1024) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> d(-0.05, 0.05);
  std::vector<double> w(static_cast<std::size_t>(size * size)),
      v(static_cast<std::size_t>(rows * size));
  for (double& e : w) e = d(rng);
  for (double& e : v) e = d(rng);
  VarPtr x = Variable::create(TensorType(DType::Float32, {rows, size}), "x");
  x->setTestValue(Tensor::fromDoubles(DType::Float32, {rows, size}, v));
  auto W = SharedVariable::create(Tensor::fromDoubles(DType::Float32, {size, size}, w), "W");
  VarPtr h = x;
  // In blocks of 25 (scopes): one level of 1200 nodes in a chain overflows Graphviz's stack.
  for (int i = 0; i < n; ++i) {
    NameScope block("block" + std::to_string(i / 25));
    h = tanh(dot(h, W));
  }
  save(path, {x, W}, {named(sum(h), "total")});
}

inline void writeBreakOp(const QString& path) {
  VarPtr x = Variable::create(TensorType(DType::Float32, {3}), "x");
  x->setTestValue(Tensor::fromDoubles(DType::Float32, {3}, {1, 2, 3}));
  VarPtr h = named(x * 2.0, "h");
  VarPtr cond = named(gt(sum(h), constant(0.0, DType::Float32)), "cond");
  VarPtr watched = breakpoint("check_h", cond, {h})[0];
  save(path, {x}, {named(watched + 1.0, "out")});
}

// The id of the first node whose op's str() is `op` in the graph of a document.
inline std::int64_t nodeIdOf(const FunctionGraph& graph, const std::string& op) {
  for (const Apply* a : graph.toposort())
    if (a->op().str() == op) return a->id();
  return -1;
}

}  // namespace test
