#pragma once
// Validator: replace-then-validate with automatic revert (Theano's ReplaceValidate).
//   auto v = std::make_shared<Validator>(); fg.attachFeature(v);
//   if (!v->replaceValidate(fg, {{y, z}}, "my_rewrite")) { /* refused: the graph is unchanged */ }
// Attaching a Validator attaches a History when the graph has none.

#include "engine/graph/feature.h"
#include "engine/graph/history.h"

#include <span>
#include <string>

namespace tscope::engine {

class Validator final : public Feature {
 public:
  void onAttach(FunctionGraph& fg) override;
  // The graph must stay acyclic (toposort succeeds); the other features validate themselves.
  void validate(const FunctionGraph& fg) const override;

  // Applies the replacements and validates the graph; when a feature refuses, reverts them and
  // returns false with the refusal in lastError(). Type errors still throw (a rewrite bug).
  bool replaceValidate(FunctionGraph& fg, std::span<const std::pair<VarPtr, VarPtr>> pairs,
                       std::string_view reason);
  const std::string& lastError() const { return m_lastError; }

 private:
  std::shared_ptr<History> m_history;
  std::string m_lastError;
};

}  // namespace tscope::engine
