// gemm_from_dot_add: sums of scaled terms with a matrix product in them become one BLAS call
// (Theano's local_gemm_to_gemm / gemm_optimizer, simplified):
//
//   Z + a * dot(X, Y)        -> Gemm(Z, a, X, Y, 1)          X, Y matrices
//   b * Z + a * dot(X, Y)    -> Gemm(Z, a, X, Y, b)
//   Z - a * dot(X, Y)        -> Gemm(Z, -a, X, Y, 1)
//   dot(X, Y) + Z + R        -> Gemm(Z, 1, X, Y, 1) + R
//   Z + dot(A, x)            -> Gemv(Z, 1, A, x, 1)          A a matrix, x a vector
//   Z + dot(x, A)            -> Gemv(Z, 1, A.T, x, 1)
//   Z + dot(X, Y).T          -> Gemm(Z, 1, Y.T, X.T, 1)
//
// The SGD update `W - lr * dot(x.T, delta)` becomes one Gemm. The ops are built no_inplace; the
// inplace phase switches them when Z's buffer may be overwritten.
//
// Note [Gemm terms]: the root (an Elemwise add or sub of a float32/float64 result of rank 1 or 2)
// is read as a sum of terms coef * s1 * ... * sk * v: add, sub and neg are opened, and so is a mul
// by scalars (0-d variables, or constant-valued operands whose static dims are all 1, which
// cannot broadcast the other factor). An inner node is opened only when the root is its only
// client and it computes in the root's dtype, so no work is duplicated and no promotion changes.
// At most kMaxOpened nodes are opened per root, so a long add chain costs linear time overall.
//
// Note [Gemm shape condition]: Elemwise broadcasts at run time, also along dims its type leaves
// unknown, while Gemm requires Z to have exactly the product's shape. So Z is taken only when the
// ShapeFeature proves its shape equal to the product's (sameShape): a bias row `dot(X, W) + b`
// is left alone, and so are terms whose sizes are unrelated symbols. The dot must have no other
// client: Gemm recomputes the product, and a dot kept for another client would compute it twice.

#include "engine/graph/function_graph.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/blas/gemm.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/ops/shape/specify_shape.h"
#include "engine/rewrite/rewriter.h"
#include "engine/rewrite/shape_feature.h"

namespace tscope::engine {

NodeRewriterPtr gemmFromDotAddRewriter();

namespace {

constexpr int kMaxOpened = 32;

struct Term {
  VarPtr var;
  double coef = 1.0;
  std::vector<VarPtr> scales;  // 0-d variables
};

bool onlyClientIsParent(const FunctionGraph& fg, const Variable& v) {
  return fg.contains(v) && nodeClientCount(fg, v) == 1 && !isGraphOutput(fg, v);
}

// A mul operand that scales without broadcasting the rest (Note [Gemm terms]): its constant
// value, or the 0-d variable behind it.
struct Scalar {
  std::optional<double> value;
  VarPtr var;
};
std::optional<Scalar> scalarFactor(const VarPtr& f, int resultNdim) {
  const TensorType& t = f->type();
  if (t.ndim() > resultNdim) return std::nullopt;
  for (std::int64_t d : t.shape())
    if (d != 1) return std::nullopt;
  if (auto v = scalarConstantValue(*f)) return Scalar{v, nullptr};
  if (t.ndim() == 0) return Scalar{std::nullopt, f};
  // DimShuffle{x,x,...}(s): a 0-d variable broadcast.
  if (const Apply* owner = f->owner();
      owner && dynamic_cast<const DimShuffle*>(&owner->op()) && owner->input(0)->type().ndim() == 0)
    return Scalar{std::nullopt, owner->input(0)};
  return std::nullopt;
}

// The terms of the sum the root computes (Note [Gemm terms]).
std::vector<Term> termsOf(const FunctionGraph& fg, Apply& root, DType dtype) {
  std::vector<Term> terms;
  std::vector<Term> work;
  int opened = 0;
  auto open = [&](Apply& node, const Term& t) {
    ++opened;
    const auto op = elemwiseScalarOp(node);
    if (*op == ScalarOp::Add) {
      for (const VarPtr& in : node.inputs()) work.push_back(Term{in, t.coef, t.scales});
    } else if (*op == ScalarOp::Sub) {
      work.push_back(Term{node.input(0), t.coef, t.scales});
      work.push_back(Term{node.input(1), -t.coef, t.scales});
    } else if (*op == ScalarOp::Neg) {
      work.push_back(Term{node.input(0), -t.coef, t.scales});
    }
  };
  open(root, Term{nullptr, 1.0, {}});
  while (!work.empty()) {
    Term t = std::move(work.back());
    work.pop_back();
    Apply* p = t.var->owner();
    const auto op = p ? elemwiseScalarOp(*p) : std::nullopt;
    const bool openable = op && opened < kMaxOpened && t.var->type().dtype() == dtype &&
                          onlyClientIsParent(fg, *t.var);
    if (openable && (*op == ScalarOp::Add || *op == ScalarOp::Sub || *op == ScalarOp::Neg)) {
      open(*p, t);
      continue;
    }
    if (openable && *op == ScalarOp::Mul) {
      // Exactly one factor that is not a scalar, of the product's rank (so of its shape); when
      // every factor is a scalar (all dims 1), the last one of full rank plays the tensor.
      const int ndim = t.var->type().ndim();
      const int n = p->nInputs();
      std::vector<std::optional<Scalar>> scalars(static_cast<std::size_t>(n));
      int tensorAt = -1, nonScalars = 0;
      for (int i = 0; i < n; ++i) {
        scalars[static_cast<std::size_t>(i)] = scalarFactor(p->input(i), ndim);
        if (!scalars[static_cast<std::size_t>(i)]) {
          tensorAt = i;
          ++nonScalars;
        }
      }
      if (nonScalars == 0)
        for (int i = 0; i < n; ++i)
          if (p->input(i)->type().ndim() == ndim) tensorAt = i;
      if (nonScalars <= 1 && tensorAt >= 0 && p->input(tensorAt)->type().ndim() == ndim) {
        Term scaled{p->input(tensorAt), t.coef, t.scales};
        for (int i = 0; i < n; ++i) {
          if (i == tensorAt) continue;
          const Scalar& s = *scalars[static_cast<std::size_t>(i)];
          if (s.value)
            scaled.coef *= *s.value;
          else
            scaled.scales.push_back(s.var);
        }
        ++opened;
        work.push_back(std::move(scaled));
        continue;
      }
    }
    terms.push_back(std::move(t));
  }
  return terms;
}

// A matrix product behind a term: dot(X, Y) of matrices, or of a matrix and a vector, seen
// through SpecifyShape and transposes that only this chain uses. The factors are returned so
// that X . Y (with a vector Y, or X a matrix and Y a vector after moving a leading vector to the
// right) is the term's value.
struct Product {
  VarPtr x, y;
};
std::optional<Product> productOf(const FunctionGraph& fg, const VarPtr& term, DType dtype) {
  VarPtr v = term;
  bool transposed = false;
  for (int depth = 0; depth < 8; ++depth) {
    Apply* p = v->owner();
    // Every link of the chain feeds only the next: another client would keep the product alive.
    if (!p || !onlyClientIsParent(fg, *v)) return std::nullopt;
    if (dynamic_cast<const SpecifyShape*>(&p->op())) {
      v = p->input(0);
      continue;
    }
    if (const auto* ds = dynamic_cast<const DimShuffle*>(&p->op())) {
      if (ds->inputNdim() != 2 || ds->order() != std::vector<int>{1, 0}) return std::nullopt;
      transposed = !transposed;
      v = p->input(0);
      continue;
    }
    if (!dynamic_cast<const Dot*>(&p->op())) return std::nullopt;
    const VarPtr& a = p->input(0);
    const VarPtr& b = p->input(1);
    if (a->type().dtype() != dtype || b->type().dtype() != dtype || v->type().dtype() != dtype)
      return std::nullopt;
    const int na = a->type().ndim(), nb = b->type().ndim();
    if (na == 2 && nb == 2) return transposed ? Product{transpose(b), transpose(a)} : Product{a, b};
    if (transposed) return std::nullopt;  // a vector result is never transposed by DimShuffle{1,0}
    if (na == 2 && nb == 1) return Product{a, b};
    if (na == 1 && nb == 2) return Product{transpose(b), a};  // x . A == A.T . x
    return std::nullopt;
  }
  return std::nullopt;
}

// coef * s1 * ... * sk as a 0-d variable of dtype.
VarPtr scaleOf(const Term& t, DType dtype) {
  VarPtr s;
  for (const VarPtr& v : t.scales) {
    const VarPtr c = v->type().dtype() == dtype ? v : cast(v, dtype);
    s = s ? mul(s, c) : c;
  }
  if (!s) return constant(t.coef, dtype);
  return t.coef == 1.0 ? s : mul(s, constant(t.coef, dtype));
}

// The term's value, scaled, for re-adding beside the gemm.
VarPtr valueOf(const Term& t, DType dtype) {
  if (t.scales.empty() && t.coef == 1.0) return t.var;
  return mul(t.var, scaleOf(t, dtype));
}

Replacements gemmFromDotAdd(RewriteContext& ctx, Apply& root) {
  const auto op = elemwiseScalarOp(root);
  if (!op || (*op != ScalarOp::Add && *op != ScalarOp::Sub)) return {};
  const VarPtr out = root.output(0);
  const DType dtype = out->type().dtype();
  const int ndim = out->type().ndim();
  if ((dtype != DType::Float32 && dtype != DType::Float64) || (ndim != 1 && ndim != 2)) return {};
  const FunctionGraph& fg = ctx.graph();
  std::vector<Term> terms = termsOf(ctx.graph(), root, dtype);
  if (terms.size() < 2) return {};

  ShapeFeature& shapes = ctx.shapes();
  for (std::size_t d = 0; d < terms.size(); ++d) {
    const std::optional<Product> product = productOf(fg, terms[d].var, dtype);
    if (!product) continue;
    const VarPtr& dotVar = terms[d].var;
    for (std::size_t z = 0; z < terms.size(); ++z) {
      const VarPtr& zVar = terms[z].var;
      if (z == d || zVar->type().dtype() != dtype || zVar->type().ndim() != dotVar->type().ndim())
        continue;
      if (!shapes.sameShape(zVar, dotVar)) continue;  // Note [Gemm shape condition]
      const VarPtr alpha = scaleOf(terms[d], dtype);
      const VarPtr beta = scaleOf(terms[z], dtype);
      VarPtr result = product->y->type().ndim() == 2
                          ? gemm(zVar, alpha, product->x, product->y, beta)
                          : gemv(zVar, alpha, product->x, product->y, beta);
      for (std::size_t r = 0; r < terms.size(); ++r) {
        if (r == d || r == z) continue;
        const Term& t = terms[r];
        if (t.scales.empty() && t.coef == -1.0)
          result = sub(result, t.var);
        else
          result = add(result, valueOf(t, dtype));
      }
      // Z's type may know fewer static dims than the sum's (the product's type knows them).
      result = refineShape(result, out->type().shape());
      if (!result->type().isSubtypeOf(out->type())) return {};
      return {{out, result}};
    }
  }
  return {};
}

}  // namespace

NodeRewriterPtr gemmFromDotAddRewriter() {
  return nodeRewriter("gemm_from_dot_add", {"Elemwise"}, gemmFromDotAdd);
}

}  // namespace tscope::engine
