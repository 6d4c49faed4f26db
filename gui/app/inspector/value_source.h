#pragma once
// Where the inspector finds values to show. A ValueSource answers "which values are known for
// this variable"; the inspector asks every source it has, so values from a run (the debugger,
// another issue) are one more source next to the values saved in the graph.

#include "engine/graph/variable.h"
#include "engine/tensor/tensor.h"

#include <QString>

#include <memory>
#include <vector>

namespace tscope::gui {

struct InspectedValue {
  QString label;          // what the value is: "test value", "constant value", ...
  engine::Tensor tensor;  // a snapshot sharing the value's storage
};

class ValueSource {
 public:
  virtual ~ValueSource() = default;
  // The values this source knows for `variable` (a variable of the graph being inspected).
  // Called on the GUI thread: return what is at hand, compute nothing.
  virtual std::vector<InspectedValue> valuesOf(const engine::Variable& variable) const = 0;
};

// The values a graph carries itself: a Constant's value, a SharedVariable's value and a test value.
class GraphValueSource final : public ValueSource {
 public:
  std::vector<InspectedValue> valuesOf(const engine::Variable& variable) const override {
    std::vector<InspectedValue> out;
    if (const auto* c = dynamic_cast<const engine::Constant*>(&variable))
      out.push_back({QStringLiteral("constant value"), c->value()});
    if (const auto* s = dynamic_cast<const engine::SharedVariable*>(&variable))
      out.push_back({QStringLiteral("shared value"), s->value()});
    if (variable.testValue()) out.push_back({QStringLiteral("test value"), *variable.testValue()});
    return out;
  }
};

}  // namespace tscope::gui
