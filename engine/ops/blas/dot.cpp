#include "engine/ops/blas/dot.h"

#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/gemm.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/tensor/tensor.h"

#include <algorithm>
#include <type_traits>

namespace tscope::engine {

namespace {
std::string dimStr(std::int64_t d) {
  return d == kUnknownDim ? "?" : std::to_string(d);
}

// Walks the batch axes of a (batch..., m, k), b (batch..., k, n) (both broadcast to one batch
// shape, stride 0 where broadcast) in row-major order and calls f(aOffset, bOffset, index).
template <class F>
void forEachBatch(const Tensor& a, const Tensor& b, int nb, F&& f) {
  std::int64_t total = 1;
  for (int i = 0; i < nb; ++i) total *= a.shape()[static_cast<std::size_t>(i)];
  std::vector<std::int64_t> idx(static_cast<std::size_t>(nb), 0);
  std::int64_t oa = 0, ob = 0;
  for (std::int64_t it = 0; it < total; ++it) {
    f(oa, ob, it);
    for (int d = nb - 1; d >= 0; --d) {
      const auto i = static_cast<std::size_t>(d);
      oa += a.strides()[i];
      ob += b.strides()[i];
      if (++idx[i] < a.shape()[i]) break;
      oa -= a.strides()[i] * a.shape()[i];
      ob -= b.strides()[i] * b.shape()[i];
      idx[i] = 0;
    }
  }
}

// Row-major rows of a stack that b does not vary over: (batch..., m, k) as one (batch*m, k)
// matrix when the batch axes step uniformly over the rows (a contiguous stack of matrices), with
// rowStride the step from one row to the next. Axes of size 1 take no step, whatever their stride:
// a sequence-first (T, 1, D) activation read through a transpose is still T rows of D, and folding
// it makes one GEMM of what would be T matrix-vector products, each reading all of b.
bool foldsIntoRows(const Tensor& a, const Tensor& b, int nb, std::int64_t& rowStride) {
  if (nb == 0) return false;
  for (int i = 0; i < nb; ++i)
    if (b.strides()[static_cast<std::size_t>(i)] != 0 &&
        b.shape()[static_cast<std::size_t>(i)] != 1)
      return false;
  rowStride = a.strides()[static_cast<std::size_t>(nb)];
  bool first = true;
  std::int64_t next = 0;  // the stride the next non-unit axis up must have
  for (int i = nb; i >= 0; --i) {
    const auto u = static_cast<std::size_t>(i);
    if (a.shape()[u] == 1) continue;
    if (first)
      rowStride = a.strides()[u];
    else if (a.strides()[u] != next)
      return false;
    first = false;
    next = a.strides()[u] * a.shape()[u];
  }
  return true;
}

template <class T>
void batchedFloat(const Tensor& a, const Tensor& b, Tensor& c, int nb) {
  const std::int64_t m = c.shape()[static_cast<std::size_t>(nb)],
                     n = c.shape()[static_cast<std::size_t>(nb) + 1];
  const std::int64_t k = a.shape()[static_cast<std::size_t>(nb) + 1];
  const std::int64_t sar = a.strides()[static_cast<std::size_t>(nb)],
                     sac = a.strides()[static_cast<std::size_t>(nb) + 1];
  const std::int64_t sbr = b.strides()[static_cast<std::size_t>(nb)],
                     sbc = b.strides()[static_cast<std::size_t>(nb) + 1];
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* pc = c.data<T>();
  if (std::int64_t rowStride = 0; foldsIntoRows(a, b, nb, rowStride)) {
    // One GEMM for the whole stack: (batch*m, k) . (k, n), the common (N, T, D) . (D, H) case.
    const std::int64_t rows = c.numel() / std::max<std::int64_t>(n, 1);
    matmulStrided<T>({pa, rows, k, rowStride, sac}, {pb, k, n, sbr, sbc}, {pc, rows, n, n, 1}, T(1),
                     T(0));
    return;
  }
  forEachBatch(a, b, nb, [&](std::int64_t oa, std::int64_t ob, std::int64_t it) {
    matmulStrided<T>({pa + oa, m, k, sar, sac}, {pb + ob, k, n, sbr, sbc},
                     {pc + it * m * n, m, n, n, 1}, T(1), T(0));
  });
}

// Integer products: i-k-j loops (the inner one contiguous in b and c when b is row-major), in
// unsigned arithmetic so overflow wraps (numpy) instead of being undefined.
template <class T>
void batchedInt(const Tensor& a, const Tensor& b, Tensor& c, int nb) {
  using U = std::make_unsigned_t<T>;
  const std::int64_t m = c.shape()[static_cast<std::size_t>(nb)],
                     n = c.shape()[static_cast<std::size_t>(nb) + 1];
  const std::int64_t k = a.shape()[static_cast<std::size_t>(nb) + 1];
  const std::int64_t sar = a.strides()[static_cast<std::size_t>(nb)],
                     sac = a.strides()[static_cast<std::size_t>(nb) + 1];
  const std::int64_t sbr = b.strides()[static_cast<std::size_t>(nb)],
                     sbc = b.strides()[static_cast<std::size_t>(nb) + 1];
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* pc = c.data<T>();
  forEachBatch(a, b, nb, [&](std::int64_t oa, std::int64_t ob, std::int64_t it) {
    T* cm = pc + it * m * n;
    for (std::int64_t i = 0; i < m; ++i) {
      U* row = reinterpret_cast<U*>(cm + i * n);
      std::fill(row, row + n, U(0));
      for (std::int64_t kk = 0; kk < k; ++kk) {
        const U aik = static_cast<U>(pa[oa + i * sar + kk * sac]);
        const T* brow = pb + ob + kk * sbr;
        if (sbc == 1)
          for (std::int64_t j = 0; j < n; ++j)
            row[j] = static_cast<U>(row[j] + static_cast<U>(aik * static_cast<U>(brow[j])));
        else
          for (std::int64_t j = 0; j < n; ++j)
            row[j] = static_cast<U>(row[j] + static_cast<U>(aik * static_cast<U>(brow[j * sbc])));
      }
    }
  });
}

// The gradient of a Dot input in its own dtype; integer inputs are disconnected, as in Elemwise
// (Note [Elemwise gradient conventions]).
Grad inDtype(const VarPtr& g, const VarPtr& input) {
  if (!isFloat(input->type().dtype())) return Grad::disconnected();
  return g->type().dtype() == input->type().dtype() ? g : cast(g, input->type().dtype());
}

// Swaps the last two axes.
VarPtr swapLast(const VarPtr& x) {
  std::vector<int> order;
  const int nd = x->type().ndim();
  for (int i = 0; i < nd - 2; ++i) order.push_back(i);
  order.push_back(nd - 1);
  order.push_back(nd - 2);
  return dimshuffle(x, std::move(order));
}

// Sums a batched gradient g (batch..., r, c) down to the type `target` (batch'..., r, c) whose
// batch axes broadcast against it: the extra leading axes go, axes where target is broadcastable
// (static 1) are summed and kept.
VarPtr sumToBatch(const VarPtr& g, const TensorType& target) {
  const int extra = g->type().ndim() - target.ndim();
  std::vector<int> keep;
  for (int i = 0; i + 2 < target.ndim(); ++i)
    if (target.shape()[static_cast<std::size_t>(i)] == 1 &&
        g->type().shape()[static_cast<std::size_t>(extra + i)] != 1)
      keep.push_back(extra + i);
  VarPtr r = g;
  if (!keep.empty()) r = sum(r, keep, true);
  if (extra > 0) {
    std::vector<int> lead;
    for (int i = 0; i < extra; ++i) lead.push_back(i);
    r = sum(r, lead, false);
  }
  return r;
}
}  // namespace

std::vector<TensorType> Dot::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 2);
  const TensorType& a = inputs[0]->type();
  const TensorType& b = inputs[1]->type();
  if (a.ndim() == 0)
    throwInputError(inputs, 0, "a tensor of rank 1 or more (use Elemwise{mul} for scalars)");
  if (b.ndim() == 0)
    throwInputError(inputs, 1, "a tensor of rank 1 or more (use Elemwise{mul} for scalars)");
  if (a.dtype() == DType::Bool) throwInputError(inputs, 0, "a numeric tensor");
  if (b.dtype() == DType::Bool) throwInputError(inputs, 1, "a numeric tensor");
  if (a.device() != b.device())
    throwInputError(inputs, 1, "a tensor on " + std::string(deviceName(a.device())));
  // Promote vectors to matrices as numpy does, then drop the added axes again.
  std::vector<std::int64_t> sa = a.shape(), sb = b.shape();
  bool aVector = sa.size() == 1, bVector = sb.size() == 1;
  if (aVector) sa.insert(sa.begin(), 1);
  if (bVector) sb.push_back(1);
  std::int64_t ka = sa.back(), kb = sb[sb.size() - 2];
  if (ka != kUnknownDim && kb != kUnknownDim && ka != kb)
    throw TypeError(
        str() + ": the inner dimensions differ: " + a.str() + " . " + b.str() + " (" + dimStr(ka) +
        " vs " + dimStr(kb) + ")" +
        (inputs[0]->site().empty() ? "" : "; input 0 was created at " + inputs[0]->site().str()));
  std::vector<std::int64_t> batchA(sa.begin(), sa.end() - 2), batchB(sb.begin(), sb.end() - 2);
  std::vector<std::vector<std::int64_t>> batches{batchA, batchB};
  auto batch = broadcastStaticShapes(batches);
  if (!batch)
    throw TypeError(str() + ": the batch dimensions cannot be broadcast: " + a.str() + " . " +
                    b.str());
  std::vector<std::int64_t> shape = *batch;
  if (!aVector) shape.push_back(sa[sa.size() - 2]);
  if (!bVector) shape.push_back(sb.back());
  return {TensorType(promoteTypes(a.dtype(), b.dtype()), std::move(shape), a.device())};
}

void Dot::perform(const Apply& node, std::span<const Tensor* const> inputs,
                  std::span<Tensor* const> outputs) const {
  const DType outDtype = node.outputRef(0).type().dtype();
  const DType work = outDtype == DType::Float16 ? DType::Float32 : outDtype;
  Tensor a = inputs[0]->dtype() == work ? *inputs[0] : inputs[0]->astype(work);
  Tensor b = inputs[1]->dtype() == work ? *inputs[1] : inputs[1]->astype(work);
  const bool aVector = a.ndim() == 1, bVector = b.ndim() == 1;
  if (aVector) a = a.expandDims(0);
  if (bVector) b = b.expandDims(1);
  const std::size_t ra = a.shape().size(), rb = b.shape().size();
  const std::int64_t m = a.shape()[ra - 2], k = a.shape()[ra - 1], kb = b.shape()[rb - 2],
                     n = b.shape()[rb - 1];
  const auto fail = [&](const std::string& what) {
    throw std::invalid_argument(str() + ": " + what + ": " + shapeToString(inputs[0]->shape()) +
                                " . " + shapeToString(inputs[1]->shape()));
  };
  if (k != kb)
    fail("the inner dimensions differ (" + std::to_string(k) + " vs " + std::to_string(kb) + ")");
  const int nb = static_cast<int>(std::max(ra, rb)) - 2;
  Shape batch(static_cast<std::size_t>(nb));
  for (int i = 0; i < nb; ++i) {
    const int ia = i - (nb - static_cast<int>(ra - 2)), ib = i - (nb - static_cast<int>(rb - 2));
    const std::int64_t da = ia >= 0 ? a.shape()[static_cast<std::size_t>(ia)] : 1;
    const std::int64_t db = ib >= 0 ? b.shape()[static_cast<std::size_t>(ib)] : 1;
    if (da != db && da != 1 && db != 1) fail("the batch dimensions cannot be broadcast");
    batch[static_cast<std::size_t>(i)] = da == 1 ? db : da;
  }
  Shape full = batch, outShape = batch;
  full.insert(full.end(), {m, n});
  if (!aVector) outShape.push_back(m);
  if (!bVector) outShape.push_back(n);
  Tensor& out = reuseOrAllocate(outputs[0], outDtype, outShape);
  Tensor c = work == outDtype ? out.reshape(full) : Tensor::empty(work, full);
  Shape fa = batch, fb = batch;
  fa.insert(fa.end(), {m, k});
  fb.insert(fb.end(), {k, n});
  a = a.broadcastTo(fa);
  b = b.broadcastTo(fb);
  dispatchDType(work, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
      batchedFloat<T>(a, b, c, nb);
    else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
      batchedInt<T>(a, b, c, nb);
    else
      throw std::logic_error(str() + ": no kernel for " + std::string(dtypeName(work)));
  });
  if (work != outDtype) out.copyFrom(c.reshape(outShape));
}

std::vector<ShapeExpr> Dot::inferShape(const Apply& node,
                                       std::span<const ShapeExpr> inputShapes) const {
  const TensorType& ta = node.input(0)->type();
  const TensorType& tb = node.input(1)->type();
  const TensorType& to = node.outputRef(0).type();
  const ShapeExpr &sa = inputShapes[0], &sb = inputShapes[1];
  const bool aVector = ta.ndim() == 1, bVector = tb.ndim() == 1;
  const int na = aVector ? 0 : ta.ndim() - 2, nbB = bVector ? 0 : tb.ndim() - 2;
  const int nb = std::max(na, nbB);
  ShapeExpr out;
  for (int i = 0; i < nb; ++i) {
    if (to.isDimKnown(i)) {
      out.push_back(constantInt(to.shape()[static_cast<std::size_t>(i)]));
      continue;
    }
    const int ia = i - (nb - na), ib = i - (nb - nbB);
    if (ia < 0 || (ib >= 0 && ta.shape()[static_cast<std::size_t>(ia)] == 1)) {
      out.push_back(sb[static_cast<std::size_t>(ib)]);
    } else if (ib < 0 || tb.shape()[static_cast<std::size_t>(ib)] == 1) {
      out.push_back(sa[static_cast<std::size_t>(ia)]);
    } else {
      // Both unknown: equal, or one of them is 1 at run time; the larger is the broadcast size.
      out.push_back(maximum(sa[static_cast<std::size_t>(ia)], sb[static_cast<std::size_t>(ib)]));
    }
  }
  if (!aVector) out.push_back(sa[sa.size() - 2]);
  if (!bVector) out.push_back(sb.back());
  return {out};
}

// Note [Dot gradient]: vectors are promoted to matrices (a: (1, k), b: (k, 1)) and the output
// gradient gets the dropped axes back, so one rule serves every rank combination:
//   gA = dot(G, B^T)   gB = dot(A^T, G)
// each summed over the batch axes its input was broadcast along (sumToBatch), then the promoted
// axis is dropped again.
std::vector<Grad> Dot::pullback(const Apply& node, std::span<const VarPtr> outputGrads) const {
  const VarPtr &a = node.input(0), &b = node.input(1);
  const bool aVector = a->type().ndim() == 1, bVector = b->type().ndim() == 1;
  const int x = DimShuffle::kNewAxis;
  const VarPtr A = aVector ? dimshuffle(a, {x, 0}) : a;
  const VarPtr B = bVector ? dimshuffle(b, {0, x}) : b;
  VarPtr G = outputGrads[0];
  const int gnd = G->type().ndim();
  std::vector<int> order;
  for (int i = 0; i < gnd; ++i) order.push_back(i);
  if (aVector && bVector)
    order = {x, x};
  else if (aVector)
    order.insert(order.end() - 1, x);
  else if (bVector)
    order.push_back(x);
  if (aVector || bVector) G = dimshuffle(G, order);
  VarPtr gA = sumToBatch(dot(G, swapLast(B)), A->type());
  VarPtr gB = sumToBatch(dot(swapLast(A), G), B->type());
  if (aVector) gA = dimshuffle(gA, {1});
  if (bVector) gB = dimshuffle(gB, {0});
  return {inDtype(gA, a), inDtype(gB, b)};
}

std::optional<std::vector<VarPtr>> Dot::pushforward(const Apply& node,
                                                    std::span<const VarPtr> tangents) const {
  const VarPtr &a = node.input(0), &b = node.input(1);
  VarPtr r;
  if (tangents[0]) r = dot(tangents[0], b);
  if (tangents[1]) r = r ? add(r, dot(a, tangents[1])) : dot(a, tangents[1]);
  const DType outDtype = node.outputRef(0).type().dtype();
  if (r && r->type().dtype() != outDtype) r = cast(r, outDtype);
  return std::vector<VarPtr>{r};
}

OpPtr Dot::fromProps(const nlohmann::json& props) {
  if (!props.empty()) throw std::invalid_argument("Dot: takes no props, found " + props.dump());
  return std::make_shared<Dot>();
}

VarPtr dot(const VarPtr& a, const VarPtr& b, std::source_location site) {
  return std::make_shared<Dot>()->operator()({a, b}, site);
}

VarPtr matmul(const VarPtr& a, const VarPtr& b, std::source_location site) {
  return std::make_shared<Dot>()->operator()({a, b}, site);
}

VarPtr outer(const VarPtr& a, const VarPtr& b, std::source_location site) {
  if (a->type().ndim() != 1 || b->type().ndim() != 1)
    throw TypeError("outer: expected two vectors, found " + a->type().str() + " and " +
                    b->type().str());
  return dot(dimshuffle(a, {0, DimShuffle::kNewAxis}, site),
             dimshuffle(b, {DimShuffle::kNewAxis, 0}, site), site);
}

void registerBlasOps(OpRegistry& registry) {
  registry.add("Dot", &Dot::fromProps);
  registerGemmOps(registry);
}

}  // namespace tscope::engine
