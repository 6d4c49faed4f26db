#include "engine/ops/elemwise/elemwise.h"

#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"

#include <algorithm>
#include <array>

namespace tscope::engine {

Elemwise::Elemwise(ScalarOp scalar, std::map<int, int> inplace, DType target)
    : m_scalar(scalar), m_inplace(std::move(inplace)), m_target(target) {
  const ScalarOpInfo& info = scalarOpInfo(scalar);
  for (const auto& [out, in] : m_inplace) {
    // The messages name the "inplace" prop: the registry reports them for bad props.
    if (out != 0) throw std::invalid_argument("Elemwise{" + std::string(info.name) + "}: inplace output " +
                                              std::to_string(out) + " does not exist (Elemwise has one output)");
    if (in < 0 || (info.arity >= 0 && in >= info.arity))
      throw std::invalid_argument("Elemwise{" + std::string(info.name) + "}: inplace input " + std::to_string(in) +
                                  " does not exist; cannot write in place into it");
  }
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

std::optional<std::vector<std::int64_t>> broadcastStaticShapes(std::span<const std::vector<std::int64_t>> shapes) {
  return broadcastShapes(shapes.size(), [&](std::size_t k) -> const std::vector<std::int64_t>& { return shapes[k]; });
}

std::vector<TensorType> Elemwise::outputTypes(std::span<const VarPtr> inputs) const {
  const ScalarOpInfo& info = scalarOpInfo(m_scalar);
  if (info.arity >= 0) {
    checkInputCount(inputs, static_cast<std::size_t>(info.arity));
  } else if (inputs.size() < 2) {
    throw TypeError(str() + ": expected two or more inputs, found " + std::to_string(inputs.size()));
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
      throwInputError(inputs, static_cast<int>(i), "a tensor on " + std::string(deviceName(device)));
    dtypes[i] = t.dtype();
  }
  DType dtype = scalarOpOutputDType(m_scalar, std::span<const DType>(dtypes, inputs.size()), m_target);
  auto shape = broadcastShapes(inputs.size(), [&](std::size_t k) -> const std::vector<std::int64_t>& {
    return inputs[k]->type().shape();
  });
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
      throwInputError(inputs, in, "the output's type " + out.str() + " to write the result in place");
    out = inputs[static_cast<std::size_t>(in)]->type();
  }
  return {out};
}

DestroyMap Elemwise::destroyMap() const {
  DestroyMap m;
  for (const auto& [out, in] : m_inplace) m[out].push_back(in);
  return m;
}

OpPtr Elemwise::fromProps(const nlohmann::json& props) {
  if (!props.contains("scalar_op") || !props["scalar_op"].is_string())
    throw std::invalid_argument("Elemwise: props need \"scalar_op\" (a string such as \"add\")");
  auto scalar = scalarOpFromName(props["scalar_op"].get<std::string>());
  if (!scalar) throw std::invalid_argument("Elemwise: unknown scalar_op \"" + props["scalar_op"].get<std::string>() + "\"");
  DType target = DType::Float32;
  if (*scalar == ScalarOp::Cast) {
    if (!props.contains("dtype") || !props["dtype"].is_string())
      throw std::invalid_argument("Elemwise{cast}: props need \"dtype\" (a dtype name)");
    auto d = dtypeFromName(props["dtype"].get<std::string>());
    if (!d) throw std::invalid_argument("Elemwise{cast}: unknown dtype \"" + props["dtype"].get<std::string>() + "\"");
    target = *d;
  }
  std::map<int, int> inplace;
  if (props.contains("inplace")) {
    const auto& p = props["inplace"];
    if (!p.is_object()) throw std::invalid_argument("Elemwise: \"inplace\" must be an object {\"output\": input}");
    for (const auto& [key, value] : p.items()) {
      if (key != "0" || !value.is_number_integer())
        throw std::invalid_argument("Elemwise: \"inplace\" must map output \"0\" to an input index");
      std::int64_t in = value.get<std::int64_t>();
      if (in < 0 || in > 1'000'000) throw std::invalid_argument("Elemwise: inplace input index out of range");
      inplace[0] = static_cast<int>(in);
    }
  }
  return std::make_shared<Elemwise>(*scalar, std::move(inplace), target);
}

VarPtr elemwise(ScalarOp op, std::vector<VarPtr> inputs, std::source_location site) {
  // Ops are immutable values: every node of one scalar op shares one Elemwise.
  static const std::array<OpPtr, kScalarOpCount> kShared = [] {
    std::array<OpPtr, kScalarOpCount> ops;
    for (int i = 0; i < kScalarOpCount; ++i) ops[i] = std::make_shared<Elemwise>(static_cast<ScalarOp>(i));
    return ops;
  }();
  return kShared[static_cast<std::size_t>(op)]->operator()(std::move(inputs), site);
}

VarPtr cast(const VarPtr& x, DType dtype, std::source_location site) {
  return std::make_shared<Elemwise>(ScalarOp::Cast, std::map<int, int>{}, dtype)->operator()({x}, site);
}

void registerElemwiseOps(OpRegistry& registry) { registry.add("Elemwise", &Elemwise::fromProps); }

}  // namespace tscope::engine
