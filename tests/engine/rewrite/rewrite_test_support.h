#pragma once
// Helpers for rewrite tests: rewrite a graph with a query, run the graph before and after on the
// same values, count ops. Every rewrite test checks both the structure and that the values did not
// change (DESIGN.md "Testing").

#include "../ops/op_test_support.h"
#include "engine/graph/function_graph.h"
#include "engine/graph/op.h"
#include "engine/graph/rewrite_recorder.h"
#include "engine/rewrite/rewrite_db.h"
#include "engine/vm/vm.h"

#include <QTest>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tscope::test {

struct Rewritten {
  std::unique_ptr<FunctionGraph> graph;
  std::shared_ptr<RewriteRecorder> recorder;
  RewriteProfile profile;
};

// A query that selects exactly the named rewrites (by name, Note [Rewrite selection]).
inline RewriteQuery only(std::initializer_list<const char*> names) {
  RewriteQuery q;
  for (const char* n : names) q.include.insert(n);
  return q;
}

// Clones inputs -> outputs into a FunctionGraph with a RewriteRecorder, optimizes it with the
// query (checking integrity after every change) and returns it.
inline Rewritten rewrite(const std::vector<VarPtr>& inputs, const std::vector<VarPtr>& outputs,
                         const RewriteQuery& query, const RewriteDb& db = RewriteDb::standard()) {
  Rewritten r;
  r.graph = std::make_unique<FunctionGraph>(inputs, outputs);
  r.recorder = std::make_shared<RewriteRecorder>();
  r.graph->attachFeature(r.recorder);
  OptimizeOptions options;
  options.checkEachChange = true;
  r.profile = optimize(*r.graph, query, db, options);
  r.graph->checkIntegrity();
  return r;
}

// True when the rewrite log has a change made by the rewrite `name`.
inline bool logged(const Rewritten& r, const std::string& name) {
  for (const RewriteRecord& rec : r.recorder->records())
    if (rec.reason == name) return true;
  return false;
}

// Runs a FunctionGraph (inputs in the graph's order) on values.
inline std::vector<Tensor> runGraph(const FunctionGraph& fg, const std::vector<Tensor>& values) {
  VM vm(fg, fg.toposort());
  vm.start(values);
  while (vm.run() != VM::Status::Finished) {
  }
  return vm.outputValues();
}

// The values of the graph as built (mode none) and after rewriting agree on `values`.
inline bool sameValues(const std::vector<VarPtr>& inputs, const std::vector<VarPtr>& outputs,
                       const FunctionGraph& rewritten, const std::vector<Tensor>& values,
                       double rtol = 1e-5, double atol = 1e-6) {
  const std::vector<Tensor> before = evaluate(inputs, outputs, values);
  const std::vector<Tensor> after = runGraph(rewritten, values);
  if (before.size() != after.size()) return false;
  for (std::size_t i = 0; i < before.size(); ++i)
    if (!closeTo(after[i], before[i], rtol, atol)) return false;
  return true;
}

inline int countNodes(const FunctionGraph& fg, const std::function<bool(const Apply&)>& pred) {
  int n = 0;
  for (const Apply* a : fg.nodes()) n += pred(*a) ? 1 : 0;
  return n;
}
// Nodes whose Op::str() equals s ("Elemwise{log1p}", "Gemm{no_inplace}").
inline int countOps(const FunctionGraph& fg, const std::string& s) {
  return countNodes(fg, [&](const Apply& a) { return a.op().str() == s; });
}

}  // namespace tscope::test
