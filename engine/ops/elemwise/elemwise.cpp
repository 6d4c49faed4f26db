#include "engine/ops/elemwise/elemwise.h"

#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/basic.h"
#include "engine/ops/elemwise/composite.h"
#include "engine/ops/elemwise/elemwise_kernels.h"
#include "engine/ops/elemwise/sum_to_shape.h"
#include "engine/tensor/tensor.h"

#include <algorithm>
#include <array>

namespace tscope::engine {

Elemwise::Elemwise(ScalarOp scalar, std::map<int, int> inplace, DType target)
    : m_scalar(scalar), m_inplace(std::move(inplace)), m_target(target) {
  const ScalarOpInfo& info = scalarOpInfo(scalar);
  for (const auto& [out, in] : m_inplace) {
    // The messages name the "inplace" prop: the registry reports them for bad props.
    if (out != 0)
      throw std::invalid_argument("Elemwise{" + std::string(info.name) + "}: inplace output " +
                                  std::to_string(out) +
                                  " does not exist (Elemwise has one output)");
    if (in < 0 || (info.arity >= 0 && in >= info.arity))
      throw std::invalid_argument("Elemwise{" + std::string(info.name) + "}: inplace input " +
                                  std::to_string(in) +
                                  " does not exist; cannot write in place into it");
  }
  for (int d = 0; d < kDTypeCount; ++d)
    m_kernels[static_cast<std::size_t>(d)] = elemwiseRowKernel(scalar, static_cast<DType>(d));
  const bool flat = scalar != ScalarOp::Cast && scalar != ScalarOp::Second && info.arity != 3;
  m_flatArity = flat ? (info.arity == 1 ? 1 : 2) : 0;
}

nlohmann::json Elemwise::props() const {
  nlohmann::json p = {{"scalar_op", scalarOpInfo(m_scalar).name}};
  if (m_scalar == ScalarOp::Cast) p["dtype"] = dtypeName(m_target);
  if (!m_inplace.empty()) {
    nlohmann::json inplace = nlohmann::json::object();
    for (const auto& [out, in] : m_inplace) inplace[std::to_string(out)] = in;
    p["inplace"] = inplace;
  }
  return p;
}

std::string Elemwise::str() const {
  std::string inner(scalarOpInfo(m_scalar).name);
  if (m_scalar == ScalarOp::Cast) inner += "{" + std::string(dtypeName(m_target)) + "}";
  if (!m_inplace.empty()) inner += ",inplace";
  return "Elemwise{" + inner + "}";
}

namespace {
// The broadcast of the static shapes shapeOf(0..n-1); nullopt on a conflict.
template <class ShapeOf>
std::optional<std::vector<std::int64_t>> broadcastShapes(std::size_t n, ShapeOf shapeOf) {
  std::size_t ndim = 0;
  for (std::size_t k = 0; k < n; ++k) ndim = std::max(ndim, shapeOf(k).size());
  std::vector<std::int64_t> out(ndim, 1);
  for (std::size_t axis = 0; axis < ndim; ++axis) {
    bool unknown = false;
    std::int64_t known = 1;
    for (std::size_t k = 0; k < n; ++k) {
      const std::vector<std::int64_t>& s = shapeOf(k);
      if (axis + s.size() < ndim) continue;  // this operand has no such axis: it broadcasts
      std::int64_t d = s[axis + s.size() - ndim];
      if (d == kUnknownDim) {
        unknown = true;
      } else if (d != 1) {
        if (known != 1 && known != d) return std::nullopt;
        known = d;
      }
    }
    out[axis] = known != 1 ? known : (unknown ? kUnknownDim : 1);
  }
  return out;
}
}  // namespace

std::optional<std::vector<std::int64_t>> broadcastStaticShapes(
    std::span<const std::vector<std::int64_t>> shapes) {
  return broadcastShapes(
      shapes.size(), [&](std::size_t k) -> const std::vector<std::int64_t>& { return shapes[k]; });
}

std::vector<TensorType> Elemwise::outputTypes(std::span<const VarPtr> inputs) const {
  const ScalarOpInfo& info = scalarOpInfo(m_scalar);
  if (info.arity >= 0) {
    checkInputCount(inputs, static_cast<std::size_t>(info.arity));
  } else if (inputs.size() < 2) {
    throw TypeError(str() + ": expected two or more inputs, found " +
                    std::to_string(inputs.size()));
  }
  // Typing runs for every node built or loaded: no copies of the input shapes, and the dtypes
  // on the stack for the usual few inputs.
  Device device = inputs[0]->type().device();
  std::array<DType, 8> small{};
  std::vector<DType> large;
  if (inputs.size() > small.size()) large.resize(inputs.size());
  DType* dtypes = large.empty() ? small.data() : large.data();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const TensorType& t = inputs[i]->type();
    if (t.device() != device)
      throwInputError(inputs, static_cast<int>(i),
                      "a tensor on " + std::string(deviceName(device)));
    dtypes[i] = t.dtype();
  }
  DType dtype =
      scalarOpOutputDType(m_scalar, std::span<const DType>(dtypes, inputs.size()), m_target);
  auto shape = broadcastShapes(
      inputs.size(),
      [&](std::size_t k) -> const std::vector<std::int64_t>& { return inputs[k]->type().shape(); });
  if (!shape) {
    std::string found;
    for (std::size_t i = 0; i < inputs.size(); ++i)
      found += (i ? ", " : "") + inputs[i]->type().str();
    throw TypeError(str() + ": the input shapes cannot be broadcast together: " + found);
  }
  TensorType out(dtype, std::move(*shape), device);
  for (const auto& [o, in] : m_inplace) {
    if (in >= static_cast<int>(inputs.size()))
      throw TypeError(str() + ": writes in place into input " + std::to_string(in) + " but has " +
                      std::to_string(inputs.size()) + " inputs");
    if (!out.isSubtypeOf(inputs[static_cast<std::size_t>(in)]->type()) ||
        inputs[static_cast<std::size_t>(in)]->type().ndim() != out.ndim())
      throwInputError(inputs, in,
                      "the output's type " + out.str() + " to write the result in place");
    out = inputs[static_cast<std::size_t>(in)]->type();
  }
  return {out};
}

// --- Execution
// -------------------------------------------------------------------------------------

namespace {
// May the output be written into input k's buffer? It must have the output's shape and no two
// elements in one place (a stride-0 axis), and every other input that reads the same storage must
// read it through exactly the same view, so that each element is read before it is overwritten.
bool canWriteInto(std::span<const Tensor* const> inputs, std::size_t k,
                  std::span<const std::int64_t> shape) {
  const Tensor& t = *inputs[k];
  if (t.device() != Device::Cpu ||
      !std::equal(t.shape().begin(), t.shape().end(), shape.begin(), shape.end()))
    return false;
  for (std::size_t a = 0; a < t.shape().size(); ++a)
    if (t.shape()[a] > 1 && t.strides()[a] == 0) return false;
  for (std::size_t j = 0; j < inputs.size(); ++j) {
    const Tensor& u = *inputs[j];
    if (j == k || !u.sharesStorageWith(t)) continue;
    if (u.offset() != t.offset() || u.shape() != t.shape() || u.strides() != t.strides() ||
        u.dtype() != t.dtype())
      return false;
  }
  return true;
}

// Note [Elemwise kernel dtypes]: the kernel computes in one dtype K: the output dtype for
// arithmetic and the float functions (numpy promotion has already widened it: int8 + uint8 runs as
// int16), the promoted input dtype for comparisons and logic (whose output is bool). Inputs of
// another dtype are converted first (Tensor::astype, numpy semantics). float16 has no kernel: it
// computes in float32 and rounds the result once, as numpy's half loops do.
DType kernelDType(DType d) {
  return d == DType::Float16 ? DType::Float32 : d;
}

inline bool flatLayout(const Tensor& t) {
  return t.ndim() == 0 || t.isContiguous();
}
inline std::int64_t elementCount(const Tensor& t) {
  return t.ndim() == 0 ? 1 : t.numel();
}
inline const char* firstByte(const Tensor& t) {
  return reinterpret_cast<const char*>(t.storage()->data()) +
         t.offset() * static_cast<std::int64_t>(t.itemSize());
}
// reuseOrAllocate's test for keeping the buffer, inline for the fast path.
inline bool reusable(const Tensor& t, DType dtype, const Shape& shape) {
  return t.defined() && t.dtype() == dtype && t.offset() == 0 && t.storage().use_count() == 1 &&
         t.shape() == shape && t.storage()->device() == Device::Cpu && flatLayout(t);
}
}  // namespace

void Elemwise::perform(const Apply& node, std::span<const Tensor* const> inputs,
                       std::span<Tensor* const> outputs) const {
  Tensor* out = outputs[0];
  // Note [Elemwise fast path]: one or two contiguous inputs of one shape and of the kernel's dtype,
  // not in place: one row call, no conversion, no allocation once the output buffer exists. This
  // is the path of a VM running chains of 0-d arithmetic, where the per-node overhead is the cost.
  if (m_flatArity == inputs.size() && m_inplace.empty()) {
    const Tensor& a = *inputs[0];
    const DType d = a.dtype();
    const DType outDType = node.outputRef(0).type().dtype();
    bool flat = flatLayout(a) && (outDType == d || outDType == DType::Bool);
    if (flat && m_flatArity == 2) {
      const Tensor& b = *inputs[1];
      flat = b.dtype() == d && b.shape() == a.shape() && flatLayout(b);
    }
    const ElemwiseRowFn fn = m_kernels[static_cast<std::size_t>(d)];
    // A bool output is right only for the comparisons and logic, whose kernels write bool.
    if (flat && fn && (outDType == d || scalarOpInfo(m_scalar).rule == DTypeRule::Bool)) {
      Tensor& dest =
          reusable(*out, outDType, a.shape()) ? *out : reuseOrAllocate(out, outDType, a.shape());
      const char* ptrs[2] = {firstByte(a), m_flatArity == 2 ? firstByte(*inputs[1]) : nullptr};
      const std::int64_t ones[2] = {1, 1};
      fn(reinterpret_cast<char*>(dest.storage()->data()), 1, ptrs, ones, elementCount(a));
      return;
    }
  }
  const Shape& first = inputs[0]->shape();
  bool sameShape = true;
  for (std::size_t i = 1; i < inputs.size(); ++i)
    sameShape = sameShape && inputs[i]->shape() == first;
  Shape broadcast;  // empty (no allocation) unless the shapes differ
  std::span<const std::int64_t> shape(first);
  if (!sameShape) {
    if (!broadcastRuntimeShapes(inputs, broadcast)) {
      std::string found;
      for (std::size_t i = 0; i < inputs.size(); ++i)
        found += (i ? ", " : "") + shapeToString(inputs[i]->shape());
      std::string msg = str() + ": the input shapes cannot be broadcast together: " + found;
      if (!node.site().empty()) msg += "; the node was created at " + node.site().str();
      throw std::invalid_argument(msg);
    }
    shape = broadcast;
  }
  if (!m_inplace.empty()) {
    const auto k = static_cast<std::size_t>(m_inplace.begin()->second);
    if (k < inputs.size() && canWriteInto(inputs, k, shape)) {
      if (out != inputs[k]) *out = *inputs[k];
      compute(*out, inputs);
      return;
    }
  }
  compute(reuseOrAllocate(out, node.outputRef(0).type().dtype(), shape), inputs);
}

void Elemwise::compute(Tensor& dest, std::span<const Tensor* const> inputs) const {
  if (m_scalar == ScalarOp::Cast) {
    dest.copyFrom(*inputs[0]);  // numpy's astype semantics; a no-op copy when in place
    return;
  }
  const ScalarOpInfo& info = scalarOpInfo(m_scalar);
  DType computeDType = dest.dtype();
  if (info.rule == DTypeRule::Bool) {
    computeDType = inputs[0]->dtype();
    for (std::size_t i = 1; i < inputs.size(); ++i)
      computeDType = promoteTypes(computeDType, inputs[i]->dtype());
  }
  const DType k = kernelDType(computeDType);
  const DType kernelOut = info.rule == DTypeRule::Bool ? DType::Bool : k;
  // A fold over n inputs writes dest before it reads inputs 2..n-1: when dest is one of them (in
  // place), compute into a temporary first.
  bool foldClobbers = false;
  if (info.arity < 0)
    for (std::size_t j = 2; j < inputs.size(); ++j)
      foldClobbers = foldClobbers || inputs[j]->sharesStorageWith(dest);
  if (dest.dtype() != kernelOut || foldClobbers) {
    Tensor tmp = Tensor::empty(kernelOut, dest.shape());
    compute(tmp, inputs);
    dest.copyFrom(tmp);
    return;
  }
  ElemwiseRowFn fn = elemwiseRowKernel(m_scalar, k);
  if (fn == nullptr)
    throw std::logic_error(str() + ": no CPU kernel for " + std::string(dtypeName(k)) + " inputs");
  // The operand j converted to dtype want (held in holder when a conversion is needed).
  auto operand = [&](std::size_t j, DType want, Tensor& holder) -> const Tensor* {
    if (inputs[j]->dtype() == want) return inputs[j];
    holder = inputs[j]->astype(want);
    return &holder;
  };
  Tensor h0, h1, h2;
  if (m_scalar == ScalarOp::Second) {
    const std::array<const Tensor*, 1> ops{operand(1, k, h1)};
    runElemwiseKernel(fn, dest, ops);
  } else if (m_scalar == ScalarOp::Switch) {
    const std::array<const Tensor*, 3> ops{operand(0, DType::Bool, h0), operand(1, k, h1),
                                           operand(2, k, h2)};
    runElemwiseKernel(fn, dest, ops);
  } else if (info.arity == 1) {
    const std::array<const Tensor*, 1> ops{operand(0, k, h0)};
    runElemwiseKernel(fn, dest, ops);
  } else if (info.arity == 3) {
    const std::array<const Tensor*, 3> ops{operand(0, k, h0), operand(1, k, h1), operand(2, k, h2)};
    runElemwiseKernel(fn, dest, ops);
  } else {
    // Binary, or an n-ary add/mul/minimum/maximum folded left to right.
    const std::array<const Tensor*, 2> ops{operand(0, k, h0), operand(1, k, h1)};
    runElemwiseKernel(fn, dest, ops);
    for (std::size_t j = 2; j < inputs.size(); ++j) {
      const std::array<const Tensor*, 2> next{&dest, operand(j, k, h2)};
      runElemwiseKernel(fn, dest, next);
    }
  }
}

// --- Shapes
// ----------------------------------------------------------------------------------------

ShapeExpr broadcastShapeExpr(const TensorType& outType, std::span<const ShapeExpr> shapes,
                             std::span<const std::vector<std::int64_t>* const> staticShapes) {
  const std::size_t ndim = static_cast<std::size_t>(outType.ndim());
  ShapeExpr out;
  out.reserve(ndim);
  for (std::size_t axis = 0; axis < ndim; ++axis) {
    std::int64_t known = outType.shape()[axis] != 1 ? outType.shape()[axis] : kUnknownDim;
    std::vector<VarPtr> candidates;
    for (std::size_t k = 0; k < shapes.size() && known == kUnknownDim; ++k) {
      const ShapeExpr& s = shapes[k];
      if (axis + s.size() < ndim) continue;  // the input lacks this axis: it broadcasts
      const VarPtr& d = s[axis + s.size() - ndim];
      const std::vector<std::int64_t>& typeShape = *staticShapes[k];
      std::int64_t value = constantIntValue(d).value_or(kUnknownDim);
      if (value == kUnknownDim && typeShape.size() == s.size())
        value = typeShape[axis + s.size() - ndim];
      if (value == 1) continue;
      if (value != kUnknownDim) {
        known = value;
      } else if (std::find(candidates.begin(), candidates.end(), d) == candidates.end()) {
        candidates.push_back(d);
      }
    }
    if (known != kUnknownDim) {
      out.push_back(constantInt(known));
    } else if (outType.shape()[axis] == 1 || candidates.empty()) {
      out.push_back(constantInt(1));
    } else if (candidates.size() == 1) {
      out.push_back(candidates[0]);
    } else {
      out.push_back(elemwise(ScalarOp::Maximum, std::move(candidates)));
    }
  }
  return out;
}

std::vector<ShapeExpr> Elemwise::inferShape(const Apply& node,
                                            std::span<const ShapeExpr> inputShapes) const {
  std::vector<const std::vector<std::int64_t>*> staticShapes;
  staticShapes.reserve(inputShapes.size());
  for (std::size_t k = 0; k < inputShapes.size(); ++k)
    staticShapes.push_back(&node.input(static_cast<int>(k))->type().shape());
  return {broadcastShapeExpr(node.outputRef(0).type(), inputShapes, staticShapes)};
}

DestroyMap Elemwise::destroyMap() const {
  DestroyMap m;
  for (const auto& [out, in] : m_inplace) m[out].push_back(in);
  return m;
}

OpPtr Elemwise::outOfPlace() const {
  return m_inplace.empty() ? nullptr
                           : std::make_shared<Elemwise>(m_scalar, std::map<int, int>{}, m_target);
}

OpPtr Elemwise::fromProps(const nlohmann::json& props) {
  if (!props.contains("scalar_op") || !props["scalar_op"].is_string())
    throw std::invalid_argument("Elemwise: props need \"scalar_op\" (a string such as \"add\")");
  auto scalar = scalarOpFromName(props["scalar_op"].get<std::string>());
  if (!scalar)
    throw std::invalid_argument("Elemwise: unknown scalar_op \"" +
                                props["scalar_op"].get<std::string>() + "\"");
  DType target = DType::Float32;
  if (*scalar == ScalarOp::Cast) {
    if (!props.contains("dtype") || !props["dtype"].is_string())
      throw std::invalid_argument("Elemwise{cast}: props need \"dtype\" (a dtype name)");
    auto d = dtypeFromName(props["dtype"].get<std::string>());
    if (!d)
      throw std::invalid_argument("Elemwise{cast}: unknown dtype \"" +
                                  props["dtype"].get<std::string>() + "\"");
    target = *d;
  }
  std::map<int, int> inplace;
  if (props.contains("inplace")) {
    const auto& p = props["inplace"];
    if (!p.is_object())
      throw std::invalid_argument("Elemwise: \"inplace\" must be an object {\"output\": input}");
    for (const auto& [key, value] : p.items()) {
      if (key != "0" || !value.is_number_integer())
        throw std::invalid_argument(
            "Elemwise: \"inplace\" must map output \"0\" to an input index");
      std::int64_t in = value.get<std::int64_t>();
      if (in < 0 || in > 1'000'000)
        throw std::invalid_argument("Elemwise: inplace input index out of range");
      inplace[0] = static_cast<int>(in);
    }
  }
  return std::make_shared<Elemwise>(*scalar, std::move(inplace), target);
}

VarPtr elemwise(ScalarOp op, std::vector<VarPtr> inputs, std::source_location site) {
  // Ops are immutable values: every node of one scalar op shares one Elemwise.
  static const std::array<OpPtr, kScalarOpCount> kShared = [] {
    std::array<OpPtr, kScalarOpCount> ops;
    for (int i = 0; i < kScalarOpCount; ++i)
      ops[i] = std::make_shared<Elemwise>(static_cast<ScalarOp>(i));
    return ops;
  }();
  return kShared[static_cast<std::size_t>(op)]->operator()(std::move(inputs), site);
}

VarPtr cast(const VarPtr& x, DType dtype, std::source_location site) {
  return std::make_shared<Elemwise>(ScalarOp::Cast, std::map<int, int>{}, dtype)
      ->
      operator()({x}, site);
}

void registerElemwiseOps(OpRegistry& registry) {
  registry.add("Elemwise", &Elemwise::fromProps);
  registry.add("Composite", &Composite::fromProps);
  registry.add("SumToShape", &SumToShape::fromProps);
}

}  // namespace tscope::engine
