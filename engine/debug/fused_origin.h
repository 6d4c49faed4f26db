#pragma once
// Which inner operation of a Composite created a bad element (Note [Fused code keeps names]).
//
// Note [Fused code keeps names]: when a Composite produces a bad value from good inputs, its
// scalar program is evaluated again at the offending element alone (its inputs read there, with
// broadcasting), one Elemwise per instruction (expandComposite); the first instruction whose value
// goes bad while its operands are good is the creator. NanGuard then names the original node it
// came from through the rewrite log (NodeLineage): among the Composite's original nodes, the
// occurrence-th one with that op (original ids follow the data flow, as the program does).

#include "engine/debug/nan_report.h"
#include "engine/tensor/tensor.h"

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tscope::engine {
class Apply;
}

namespace tscope::engine::debug {

struct FusedOrigin {
  std::string op;                   // the inner op as an unfused node's str(): "Elemwise{log}"
  int occurrence = 0;               // how many earlier instructions of the program have that op
  int instruction = 0;              // its position in the evaluated program
  std::vector<InputSample> inputs;  // its operands at the offending element
  double value = 0;                 // what it computed there
};

// node: a Composite node; inputs: its input values as it read them; outIndex: the offending
// element of output `output`. kinds: the kinds that count as bad (with big and bigThreshold).
// nullopt when node is no Composite, or no inner operation goes bad (the inputs changed since).
std::optional<FusedOrigin> findFusedOrigin(const Apply& node, std::span<const Tensor* const> inputs,
                                           int output, const std::vector<std::int64_t>& outIndex,
                                           NanChecks kinds, double bigThreshold);

}  // namespace tscope::engine::debug
