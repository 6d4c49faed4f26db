#pragma once
// Breakpoints set from outside the graph (DebugSession::addBreakpoint): on a node id, a variable
// (breaks when it is computed), an op type or a scope, each with an optional condition on the
// node's output, a hit count and an enabled flag. The text form is what `tensorscope run --break`
// and the `break` command of `tensorscope debug` take:
//
//   node:12            var:loss            op:Elemwise{log}  (or op:Dot, the op's name)
//   node:5/12          (node 12 in the inner graph of node 5: an OpFromGraph body or either
//                       IfElse branch; paths nest, Note [Inner lineage] in lineage.h)
//   scope:encoder/attn (a prefix of the node's scope, on '/' boundaries)
//   ... followed by an optional condition: @nan @inf @max>K @min<K @norm>K @changed>K
//   ... and an optional hit count:         #N  (break on the Nth hit and after)
//   ... and an optional iteration filter:  [iteration==K]  (Note [Loop breakpoints])
//
//   BreakpointSpec s = parseBreakSpec("scope:layer3@max>1e4#2");
//   toString(s) == "scope:layer3@max>10000#2";
//
// Note [Breakpoint conditions]: a condition is evaluated on the node's outputs after the node ran
// (the VM pauses after it). For a variable target it reads that variable; for the other targets
// it holds when it holds for any of the node's outputs it applies to. @nan and @inf apply to
// floating-point outputs only; @max, @min, @norm and @changed to numeric (not bool) outputs. A
// condition that applies to none of the outputs a breakpoint resolves to is refused when the
// breakpoint is added. @changed>K compares with the value the same output had when its node ran
// in the previous execution (the first execution never breaks on it).
//
// Note [Loop breakpoints]: with an iteration filter (iteration >= 0) a breakpoint only counts a
// hit when its node runs in iteration K of the innermost loop frame around it (a Scan's body,
// NodeEvent::iteration()); "node:9/4@nan[iteration==7]" pauses after node 4 of Scan node 9's
// body in iteration 7 when that output holds a NaN.

#include "engine/debug/value_stats.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tscope::engine::debug {

struct BreakCondition {
  enum class Kind { Always, AnyNan, AnyInf, MaxGt, MinLt, NormGt, ChangedBy };
  Kind kind = Kind::Always;
  double k = 0;
  friend bool operator==(const BreakCondition&, const BreakCondition&) = default;
};

struct BreakpointSpec {
  enum class Target { Node, Variable, OpType, Scope };
  Target target = Target::Node;
  std::string key;  // node id or path (as text), variable name, op name or str, scope prefix
  BreakCondition condition;
  int hitCount = 1;  // break on the Nth hit and after
  bool enabled = true;
  bool temporary = false;       // tbreak: deleted after it hits
  std::int64_t iteration = -1;  // Note [Loop breakpoints]; -1: every iteration
  friend bool operator==(const BreakpointSpec&, const BreakpointSpec&) = default;
};

// Parses the text form above. Throws std::invalid_argument with a one-line message naming what
// was expected and what was found ("breakpoint 'nod:3': expected a target node:, var:, op: or
// scope:, found 'nod'").
BreakpointSpec parseBreakSpec(std::string_view text);
// The text form; parseBreakSpec(toString(s)) == s except for enabled and temporary.
std::string toString(const BreakpointSpec& spec);
std::string toString(const BreakCondition& condition);       // "" for Always, else "@max>3"
std::string_view targetName(BreakpointSpec::Target target);  // "node", "var", "op", "scope"

// Whether a condition applies to outputs of this dtype (Note [Breakpoint conditions]).
bool conditionApplies(const BreakCondition& condition, DType dtype);
// Evaluates a condition on one output value. `previous` is the value the output had in the
// previous execution (ChangedBy only; null when there was none: the condition does not hold).
bool conditionHolds(const BreakCondition& condition, const Tensor& value,
                    const Tensor* previous = nullptr);

// True when `scope` is `prefix` or lies below it ("a/b" is below "a", "ab" is not).
bool scopeMatches(std::string_view scope, std::string_view prefix);

}  // namespace tscope::engine::debug
