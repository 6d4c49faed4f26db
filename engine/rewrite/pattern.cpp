// The pattern rewriter's matcher and builder (pattern.h); the parser is pattern_parse.cpp.
#include "engine/rewrite/pattern.h"

#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/nn/crossentropy.h"
#include "engine/ops/nn/softmax.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/rewrite/pattern_internal.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <set>
#include <stdexcept>

namespace tscope::engine {

using pattern_detail::Attr;
using pattern_detail::FunctionInfo;
using pattern_detail::Kind;
using pattern_detail::Node;

// --- The tensor functions
// --------------------------------------------------------------------------

namespace pattern_detail {
namespace {

template <class SoftmaxOp>
std::optional<std::vector<int>> readSoftmaxAxis(const Apply& node) {
  const auto* op = dynamic_cast<const SoftmaxOp*>(&node.op());
  if (!op) return std::nullopt;
  return std::vector<int>{op->axisFor(node.input(0)->type().ndim())};
}

std::optional<std::vector<int>> readSumAxes(const Apply& node) {
  const auto* op = dynamic_cast<const CAReduce*>(&node.op());
  if (!op || op->scalarOp() != ScalarOp::Add) return std::nullopt;
  const int ndim = node.input(0)->type().ndim();
  std::vector<int> axes = op->axesFor(ndim);
  if (axes.empty())  // Note [Empty axes mean all] in careduce.h
    for (int i = 0; i < ndim; ++i) axes.push_back(i);
  return axes;
}

std::optional<std::vector<int>> readNoAttribute(const Apply& node) {
  if (!dynamic_cast<const CategoricalCrossEntropy*>(&node.op())) return std::nullopt;
  return std::vector<int>{};
}

std::optional<std::vector<int>> readNothing(const Apply&) {
  return std::nullopt;
}

int oneAxis(const std::vector<int>* axes) {
  if (!axes || axes->size() != 1)
    throw TypeError("pattern: softmax takes one axis, found " +
                    std::to_string(axes ? axes->size() : 0));
  return axes->front();
}

const FunctionInfo kFunctions[] = {
    {"softmax", "Softmax", 1, "axis", &readSoftmaxAxis<Softmax>,
     [](const std::vector<VarPtr>& a, const std::vector<int>* axes) {
       return softmax(a[0], oneAxis(axes));
     }},
    {"log_softmax", "LogSoftmax", 1, "axis", &readSoftmaxAxis<LogSoftmax>,
     [](const std::vector<VarPtr>& a, const std::vector<int>* axes) {
       return logSoftmax(a[0], oneAxis(axes));
     }},
    {"sum", "CAReduce", 1, "axis", &readSumAxes,
     [](const std::vector<VarPtr>& a, const std::vector<int>* axes) {
       return sum(a[0], axes ? *axes : Axes{});
     }},
    {"categorical_crossentropy", "CategoricalCrossEntropy", 2, "", &readNoAttribute,
     [](const std::vector<VarPtr>& a, const std::vector<int>*) {
       return categoricalCrossEntropy(a[0], a[1]);
     }},
    {"logsumexp", "", 1, "axis", &readNothing,
     [](const std::vector<VarPtr>& a, const std::vector<int>* axes) {
       return logsumexp(a[0], axes ? *axes : Axes{});
     }},
    {"softmax_crossentropy_with_logits", "", 2, "", &readNothing,
     [](const std::vector<VarPtr>& a, const std::vector<int>*) {
       return softmaxCrossEntropyWithLogits(a[0], a[1]);
     }},
};

}  // namespace

const FunctionInfo* findFunction(std::string_view name) {
  for (const FunctionInfo& f : kFunctions)
    if (f.name == name) return &f;
  return nullptr;
}

std::string functionNames() {
  std::string s;
  for (const FunctionInfo& f : kFunctions) s += (s.empty() ? "" : ", ") + std::string(f.name);
  return s;
}

}  // namespace pattern_detail

// --- PatternMatch and the ready-made conditions
// ----------------------------------------------------

Apply& PatternMatch::root() const {
  if (!m_root) throw std::logic_error("pattern match: the pattern's root is a variable, not an op");
  return *m_root;
}

const VarPtr& PatternMatch::operator[](std::string_view name) const {
  for (const auto& [n, v] : m_vars)
    if (n == name) return v;
  throw std::out_of_range("pattern match: no variable '" + std::string(name) + "' is bound");
}

bool PatternMatch::has(std::string_view name) const {
  return std::any_of(m_vars.begin(), m_vars.end(), [&](const auto& b) { return b.first == name; });
}

const std::vector<int>& PatternMatch::attr(std::string_view name) const {
  for (const auto& [n, v] : m_attrs)
    if (n == name) return v;
  throw std::out_of_range("pattern match: no attribute value '" + std::string(name) + "' is bound");
}

VarPredicate floatValued() {
  return [](const VarPtr& v, RewriteContext&) { return isFloat(v->type().dtype()); };
}
VarPredicate integralValued() {
  return [](const VarPtr& v, RewriteContext&) {
    const DType d = v->type().dtype();
    return isInteger(d) || d == DType::Bool;
  };
}
VarPredicate ofDType(DType dtype) {
  return [dtype](const VarPtr& v, RewriteContext&) { return v->type().dtype() == dtype; };
}
VarPredicate ofRank(int ndim) {
  return [ndim](const VarPtr& v, RewriteContext&) { return v->type().ndim() == ndim; };
}
VarPredicate singleClient() {
  return [](const VarPtr& v, RewriteContext& ctx) {
    return ctx.graph().contains(*v) && nodeClientCount(ctx.graph(), *v) == 1 &&
           !isGraphOutput(ctx.graph(), *v);
  };
}

// --- Matching
// --------------------------------------------------------------------------------------

namespace {

// A number of the pattern matches a constant-valued variable whose value is that number once
// stored in the variable's dtype (0.1 matches a float32 0.1f; 0.5 never matches an integer).
bool numberMatches(const Variable& v, double number) {
  const std::optional<double> value = scalarConstantValue(v);
  if (!value) return false;
  const DType d = v.type().dtype();
  if (!isFloat(d) && std::nearbyint(number) != number) return false;
  if (*value == number) return true;
  return isFloat(d) && Tensor::scalar(d, number).item() == *value;
}

// The Apply of the root when it is the op the pattern's root names; null otherwise. The cheap
// test that runs before any matching state is built.
Apply* rootCandidate(const Node& p, const VarPtr& var) {
  Apply* a = var ? var->owner() : nullptr;
  if (!a) return nullptr;
  if (p.kind == Kind::Scalar) {
    const auto op = elemwiseScalarOp(*a);
    return op && *op == p.scalar ? a : nullptr;
  }
  if (p.kind == Kind::Function)
    return a->op().name() == p.fn->opName && var->index() == 0 ? a : nullptr;
  return nullptr;
}

}  // namespace

namespace pattern_detail {

// Continuation-passing matcher: node(p, v, k) matches p against v and then calls k, trying the
// next alternative (another operand order) when k fails, so bindings made deep in one operand
// are revisited when a later operand needs them otherwise (Note [Commutative patterns]).
struct Matcher {
  using Cont = std::function<bool()>;

  RewriteContext& ctx;
  const PatternConstraints& constraints;
  PatternMatch& m;
  const Variable* rootVar;

  bool bindVariable(const std::string& name, const VarPtr& v, const Cont& k) {
    for (const auto& [n, bound] : m.m_vars)
      if (n == name) return bound == v && k();
    if (const auto it = constraints.variables.find(name);
        it != constraints.variables.end() && !it->second(v, ctx))
      return false;
    m.m_vars.emplace_back(name, v);
    if (k()) return true;
    m.m_vars.pop_back();
    return false;
  }

  bool bindAttribute(const Attr& a, const std::vector<int>& value, int ndim, const Cont& k) {
    if (a.value) {
      const int axis = *a.value < 0 ? *a.value + ndim : *a.value;
      return value == std::vector<int>{axis} && k();
    }
    for (const auto& [n, bound] : m.m_attrs)
      if (n == a.param) return bound == value && k();
    m.m_attrs.emplace_back(a.param, value);
    if (k()) return true;
    m.m_attrs.pop_back();
    return false;
  }

  // PatternConstraints::exclusive: an inner node's output must feed only its pattern parent.
  bool exclusiveHolds(const VarPtr& v) const {
    if (!constraints.exclusive || v.get() == rootVar) return true;
    const FunctionGraph& g = ctx.graph();
    return g.contains(*v) && nodeClientCount(g, *v) == 1 && !isGraphOutput(g, *v);
  }

  bool node(const Node& p, const VarPtr& v, const Cont& k) {
    switch (p.kind) {
      case Kind::Variable:
        return bindVariable(p.name, v, k);
      case Kind::Number:
        return numberMatches(*v, p.number) && k();
      case Kind::Scalar: {
        Apply* a = rootCandidate(p, v);
        if (!a || !exclusiveHolds(v)) return false;
        if (isCommutative(p.scalar)) return unordered(p, *a, k);
        return a->nInputs() == static_cast<int>(p.args.size()) && ordered(p, *a, 0, k);
      }
      case Kind::Function: {
        Apply* a = rootCandidate(p, v);
        if (!a || !exclusiveHolds(v) || a->nInputs() != static_cast<int>(p.args.size()))
          return false;
        const std::optional<std::vector<int>> value = p.fn->read(*a);
        if (!value) return false;
        if (p.attrs.empty()) return ordered(p, *a, 0, k);
        return bindAttribute(p.attrs.front(), *value, a->input(0)->type().ndim(),
                             [&] { return ordered(p, *a, 0, k); });
      }
    }
    return false;
  }

  bool ordered(const Node& p, const Apply& a, std::size_t i, const Cont& k) {
    if (i == p.args.size()) return k();
    return node(p.args[i], a.input(static_cast<int>(i)), [&] { return ordered(p, a, i + 1, k); });
  }

  bool unordered(const Node& p, const Apply& a, const Cont& k) {
    const std::size_t n = static_cast<std::size_t>(a.nInputs());
    std::vector<bool> used(n, false);
    std::vector<std::size_t> order;
    if (n == p.args.size()) {
      for (std::size_t i = 0; i < p.args.size(); ++i) order.push_back(i);
      return assign(p, a, order, 0, used, k);
    }
    if (n < p.args.size() || p.restIndex < 0) return false;
    for (std::size_t i = 0; i < p.args.size(); ++i)
      if (static_cast<int>(i) != p.restIndex) order.push_back(i);
    return assign(p, a, order, 0, used, [&] { return bindRest(p, a, used, k); });
  }

  bool assign(const Node& p, const Apply& a, const std::vector<std::size_t>& order, std::size_t idx,
              std::vector<bool>& used, const Cont& k) {
    if (idx == order.size()) return k();
    for (std::size_t j = 0; j < used.size(); ++j) {
      if (used[j]) continue;
      used[j] = true;
      if (node(p.args[order[idx]], a.input(static_cast<int>(j)),
               [&] { return assign(p, a, order, idx + 1, used, k); }))
        return true;
      used[j] = false;
    }
    return false;
  }

  bool bindRest(const Node& p, const Apply& a, const std::vector<bool>& used, const Cont& k) {
    std::vector<VarPtr> rest;
    for (std::size_t j = 0; j < used.size(); ++j)
      if (!used[j]) rest.push_back(a.input(static_cast<int>(j)));
    VarPtr combined;
    try {
      combined = elemwise(p.scalar, rest);
    } catch (const TypeError&) {
      return false;
    }
    if (combined->type().dtype() != a.outputRef(0).type().dtype()) return false;
    return bindVariable(p.args[static_cast<std::size_t>(p.restIndex)].name, combined, k);
  }
};

}  // namespace pattern_detail

Pattern Pattern::parse(std::string_view expression) {
  Pattern p;
  p.m_text = std::string(expression);
  p.m_root = pattern_detail::parseExpression(expression, "pattern '" + p.m_text + "'");
  return p;
}

std::optional<PatternMatch> Pattern::match(const VarPtr& var, RewriteContext& ctx,
                                           const PatternConstraints& constraints) const {
  PatternMatch m;
  if (m_root->kind == Kind::Scalar || m_root->kind == Kind::Function) {
    m.m_root = rootCandidate(*m_root, var);
    if (!m.m_root) return std::nullopt;
  } else {
    m.m_root = var->owner();
  }
  pattern_detail::Matcher matcher{ctx, constraints, m, var.get()};
  if (!matcher.node(*m_root, var, [] { return true; })) return std::nullopt;
  return m;
}

std::string Pattern::rootOpName() const {
  if (m_root->kind == Kind::Scalar) return "Elemwise";
  if (m_root->kind == Kind::Function) return std::string(m_root->fn->opName);
  return {};
}

std::vector<std::string> Pattern::variableNames() const {
  std::vector<std::string> names;
  const std::function<void(const Node&)> walk = [&](const Node& n) {
    if (n.kind == Kind::Variable && std::find(names.begin(), names.end(), n.name) == names.end())
      names.push_back(n.name);
    for (const Node& a : n.args) walk(a);
  };
  walk(*m_root);
  return names;
}

// --- Building
// --------------------------------------------------------------------------------------

namespace {

struct Builder {
  const PatternMatch& m;
  DType outDtype;
  // Note [Fitting the replacement]: the dtype variables are cast to (widening only), if any.
  std::optional<DType> castTo;

  VarPtr variable(const std::string& name) const {
    VarPtr v = m[name];
    const DType d = v->type().dtype();
    if (castTo && d != *castTo && promoteTypes(d, *castTo) == *castTo) return cast(v, *castTo);
    return v;
  }

  VarPtr number(double value, const VarPtr* like) const {
    return like ? scalarLike(value, *like) : constant(value, castTo.value_or(outDtype));
  }

  VarPtr build(const Node& p) const {
    switch (p.kind) {
      case Kind::Variable:
        return variable(p.name);
      case Kind::Number:
        return number(p.number, nullptr);
      case Kind::Scalar:
      case Kind::Function:
        break;
    }
    // Operands first, numbers last: a number is built in the dtype of its first non-number sibling.
    std::vector<VarPtr> args(p.args.size());
    const VarPtr* like = nullptr;
    for (std::size_t i = 0; i < p.args.size(); ++i) {
      if (p.args[i].kind == Kind::Number) continue;
      args[i] = build(p.args[i]);
      if (!like) like = &args[i];
    }
    for (std::size_t i = 0; i < p.args.size(); ++i)
      if (!args[i]) args[i] = number(p.args[i].number, p.kind == Kind::Scalar ? like : nullptr);
    if (p.kind == Kind::Function) {
      std::vector<int> axes;
      const std::vector<int>* value = nullptr;
      if (!p.attrs.empty()) {
        const Attr& a = p.attrs.front();
        axes = a.value ? std::vector<int>{*a.value} : m.attr(a.param);
        value = &axes;
      }
      return p.fn->build(args, value);
    }
    // -(-y) on the right (e.g. -softplus(-x) with x = -y) folds to y, so a stabilized result does
    // not depend on canonicalize running again.
    if (p.scalar == ScalarOp::Neg)
      if (Apply* inner = producedBy(*args[0], ScalarOp::Neg)) return inner->input(0);
    return elemwise(p.scalar, args);
  }
};

}  // namespace

PatternRule PatternRule::parse(std::string_view rule) {
  PatternRule r;
  r.m_text = std::string(rule);
  pattern_detail::ParsedRule parsed =
      pattern_detail::parseRule(rule, "pattern rule '" + r.m_text + "'");
  const std::size_t arrow = r.m_text.find("->");
  r.m_lhs.m_text = r.m_text.substr(0, arrow);
  while (!r.m_lhs.m_text.empty() && std::isspace(static_cast<unsigned char>(r.m_lhs.m_text.back())))
    r.m_lhs.m_text.pop_back();
  r.m_lhs.m_root = std::move(parsed.lhs);
  r.m_rhs = std::move(parsed.rhs);
  r.m_rhsElementwise = parsed.rhsElementwise;
  return r;
}

VarPtr PatternRule::build(const PatternMatch& match, const VarPtr& old, RewriteContext& ctx) const {
  const DType out = old->type().dtype();
  VarPtr built;
  try {
    built = Builder{match, out, std::nullopt}.build(*m_rhs);
    if (built->type().dtype() != out && m_rhsElementwise) {
      VarPtr widened = Builder{match, out, out}.build(*m_rhs);
      if (widened->type().dtype() == out) built = widened;
    }
  } catch (const TypeError&) {
    return nullptr;  // the right side does not apply to these operands (e.g. an integer softmax)
  }
  return fitReplacement(ctx, built, old);
}

// --- The rewriter
// ----------------------------------------------------------------------------------

namespace {

class PatternRewriter final : public NodeRewriter {
 public:
  PatternRewriter(std::string name, std::vector<std::string> tracks, std::vector<PatternRule> rules,
                  PatternConstraints constraints)
      : NodeRewriter(std::move(name), std::move(tracks)),
        m_rules(std::move(rules)),
        m_constraints(std::move(constraints)) {}

  Replacements transform(RewriteContext& ctx, Apply& node) override {
    if (node.nOutputs() < 1) return {};
    const VarPtr out = node.output(0);
    for (const PatternRule& rule : m_rules) {
      try {
        const std::optional<PatternMatch> m = rule.lhs().match(out, ctx, m_constraints);
        if (!m || (m_constraints.match && !m_constraints.match(*m, ctx))) continue;
        if (VarPtr replacement = rule.build(*m, out, ctx)) return {{out, replacement}};
      } catch (const std::exception& e) {
        throw std::runtime_error("pattern rewrite " + name() + ", rule '" + rule.text() +
                                 "' on node " + std::to_string(node.id()) + " (" + node.op().str() +
                                 "): " + e.what());
      }
    }
    return {};
  }

 private:
  std::vector<PatternRule> m_rules;
  PatternConstraints m_constraints;
};

}  // namespace

NodeRewriterPtr patternRewriter(std::string name, std::string_view rules,
                                PatternConstraints constraints) {
  std::vector<PatternRule> parsed;
  std::vector<std::string> tracks;
  std::set<std::string> bound;
  std::size_t line = 0;
  std::size_t start = 0;
  while (start <= rules.size()) {
    std::size_t end = rules.find('\n', start);
    if (end == std::string_view::npos) end = rules.size();
    std::string_view text = rules.substr(start, end - start);
    ++line;
    start = end + 1;
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
      text.remove_prefix(1);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
      text.remove_suffix(1);
    if (text.empty()) continue;
    try {
      parsed.push_back(PatternRule::parse(text));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("pattern rewrite " + name + ", line " + std::to_string(line) +
                                  ": " + e.what());
    }
    const std::string op = parsed.back().lhs().rootOpName();
    if (std::find(tracks.begin(), tracks.end(), op) == tracks.end()) tracks.push_back(op);
    for (const std::string& v : parsed.back().lhs().variableNames()) bound.insert(v);
  }
  if (parsed.empty()) throw std::invalid_argument("pattern rewrite " + name + ": no rule given");
  for (const auto& [var, predicate] : constraints.variables)
    if (!bound.contains(var))
      throw std::invalid_argument("pattern rewrite " + name +
                                  ": a constraint names the variable '" + var +
                                  "', which no rule's left side binds");
  return std::make_shared<PatternRewriter>(std::move(name), std::move(tracks), std::move(parsed),
                                           std::move(constraints));
}

}  // namespace tscope::engine
