#pragma once
// The declarative pattern rewriter: simple algebra written the way a reader checks it, one rule
// per line (STYLE.md "Rewrites"):
//
//   patternRewriter("local_log1p", "log(1 + x) -> log1p(x)");
//   patternRewriter("local_expm1", "exp(x) - 1 -> expm1(x)\n"
//                                  "exp(x) + -1 -> expm1(x)");
//   patternRewriter("local_log_softmax", "log(softmax(x, axis=a)) -> log_softmax(x, axis=a)");
//
// Grammar (both sides):
//   rule     := expr '->' expr
//   expr     := term (('+' | '-') term)*
//   term     := unary (('*' | '/') unary)*
//   unary    := '-' unary | primary
//   primary  := number | name '(' args ')' | variable | '(' expr ')'
//   args     := arg (',' arg)*;   arg := expr | attr '=' (variable | integer)
// A function name is a scalar op (scalarOpFromName: add, sub, mul, true_div, neg, exp, log,
// log1p, sigmoid, softplus, ...; add and mul take two or more arguments) or one of the tensor
// functions softmax(x, axis=), log_softmax(x, axis=), sum(x, axis=), categorical_crossentropy(p, t)
// and, on the right side only, logsumexp(x, axis=) and softmax_crossentropy_with_logits(x, t).
// A variable (a lowercase identifier) binds any variable; one that appears twice must bind the
// same Variable. A number matches a constant-valued variable (scalarConstantValue: a Constant
// seen through broadcasting) whose value, in its own dtype, is that number. An attribute bound
// to a name on the left (axis=a) carries the op's value (normalised axes) to the right side; an
// integer attribute matches only that axis; an attribute left out of the left side matches any.
//
// Note [Commutative patterns]: add and mul match either order of their operands, and an n-ary
// node matches a pattern of the same arity as a set (every assignment of operands is tried, with
// backtracking, so a variable repeated elsewhere in the pattern still binds consistently). A node
// with more operands than the pattern still matches when one operand of the pattern is a
// variable used nowhere else on the left: it takes the remaining operands, combined by a new
// node of the same op ("log(1 + x)" matches log(add(a, 1, b)) with x = add(a, b)), provided that
// node computes in the matched node's dtype.
//
// Note [Fitting the replacement]: a right side is built with the ordinary builders, and the
// result must keep the type of the output it replaces (RewriteContext::replace refuses
// anything else). Literals on the right are built in the dtype of the operand beside them
// (scalarLike), or in the output's dtype. When the built dtype still differs (log(1 + x) with a
// float64 1 and a float32 x), the right side is rebuilt from its variables cast to the output's
// dtype where that widening is lossless, so it computes in the dtype the original computed in;
// otherwise the result is cast. When the shape is not known to be the output's (x * y / y, where
// y may broadcast x), the result is broadcast with Alloc to the output's symbolic shape. A match
// whose result still does not fit is skipped, so the replacement is never refused.

#include "engine/rewrite/rewriter.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tscope::engine {

namespace pattern_detail {
struct Node;
struct Matcher;
}  // namespace pattern_detail

// What one match bound: each variable of the left side to a Variable, each attribute name to the
// op's value. Variables are in the graph, except an operand that took the rest of an n-ary node
// (Note [Commutative patterns]), which is a new node not yet in the graph.
class PatternMatch {
 public:
  // The node the pattern's root op matched; throws std::logic_error for a pattern that is a
  // bare variable.
  Apply& root() const;
  // The variable bound to name; throws std::out_of_range naming it when nothing is bound to it.
  const VarPtr& operator[](std::string_view name) const;
  bool has(std::string_view name) const;
  // The axes bound to an attribute name (normalised: non-negative, sorted); throws
  // std::out_of_range naming it when nothing is bound to it.
  const std::vector<int>& attr(std::string_view name) const;
  const std::vector<std::pair<std::string, VarPtr>>& variables() const { return m_vars; }

 private:
  friend struct pattern_detail::Matcher;
  friend class Pattern;
  Apply* m_root = nullptr;
  std::vector<std::pair<std::string, VarPtr>> m_vars;
  std::vector<std::pair<std::string, std::vector<int>>> m_attrs;
};

// A condition on the variable a pattern variable bound (checked as soon as it binds).
using VarPredicate = std::function<bool(const VarPtr&, RewriteContext&)>;
// A condition on a whole match (checked after the left side matched, before building).
using MatchPredicate = std::function<bool(const PatternMatch&, RewriteContext&)>;

struct PatternConstraints {
  // Pattern variable name -> condition; every name must be a variable of the left side.
  std::map<std::string, VarPredicate, std::less<>> variables;
  MatchPredicate match;
  // When true, every node the left side matches below its root must have no client but its
  // parent in the pattern (Theano's allow_multiple_clients=False): the rewrite then never keeps
  // the old subexpression alive beside the new one. Off by default: the stabilize rewrites are
  // worth applying even when the unstable subexpression stays for another client.
  bool exclusive = false;
};

// Ready-made variable conditions.
VarPredicate floatValued();     // a float dtype
VarPredicate integralValued();  // an integer or bool dtype (cannot hold NaN or Inf)
VarPredicate ofDType(DType dtype);
VarPredicate ofRank(int ndim);
VarPredicate singleClient();  // one node client and not a graph output

// One parsed expression (a side of a rule).
class Pattern {
 public:
  // Throws std::invalid_argument naming the expression and the column of the problem.
  static Pattern parse(std::string_view expression);
  // The bindings when var is computed the way the pattern says, else nullopt.
  std::optional<PatternMatch> match(const VarPtr& var, RewriteContext& ctx,
                                    const PatternConstraints& constraints = {}) const;
  const std::string& text() const { return m_text; }
  // The Op::name() the root matches ("Elemwise", "Softmax"); empty for a variable or a number.
  std::string rootOpName() const;
  // The variable names of the pattern, in order of first appearance.
  std::vector<std::string> variableNames() const;

 private:
  friend class PatternRule;
  std::string m_text;
  std::shared_ptr<const pattern_detail::Node> m_root;
};

// "lhs -> rhs" parsed and checked: the left side's root is an op (not a variable or a number),
// every variable and attribute name of the right side is bound on the left, functions that
// exist only as builders (logsumexp) appear only on the right.
class PatternRule {
 public:
  // Throws std::invalid_argument naming the rule and the column of the problem.
  static PatternRule parse(std::string_view rule);
  const Pattern& lhs() const { return m_lhs; }
  const std::string& text() const { return m_text; }
  // The replacement for the matched root output `old`, fitted to its type (Note [Fitting the
  // replacement]); null when the right side cannot be built on these operands (a TypeError) or
  // cannot be made to fit.
  VarPtr build(const PatternMatch& match, const VarPtr& old, RewriteContext& ctx) const;

 private:
  std::string m_text;
  Pattern m_lhs;
  std::shared_ptr<const pattern_detail::Node> m_rhs;
  bool m_rhsElementwise = true;  // only scalar ops, variables and numbers on the right
};

// A NodeRewriter from rules, one per line (blank lines ignored), tried in order; the first rule
// that matches and builds a fitting replacement wins. tracks() is the union of the left roots'
// ops. Throws std::invalid_argument naming the rewrite, the rule (line) and the column for a parse
// error, and for a constraint on a variable no rule binds.
NodeRewriterPtr patternRewriter(std::string name, std::string_view rules,
                                PatternConstraints constraints = {});

// Note [Fitting the replacement], for hand-written rewriters too: built with old's dtype (cast
// when it differs) and old's shape (Alloc to ctx.shapes().shapeOf(old) unless the shapes are
// known equal); null when it still does not fit old's type, or when built is old.
VarPtr fitReplacement(RewriteContext& ctx, VarPtr built, const VarPtr& old);

}  // namespace tscope::engine
