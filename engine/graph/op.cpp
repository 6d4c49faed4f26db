#include "engine/graph/op.h"

#include "engine/graph/config.h"
#include "engine/graph/errors.h"
#include "engine/graph/variable.h"
#include "engine/tensor/tensor.h"

#include <functional>
#include <typeinfo>

namespace tscope::engine {

namespace {
std::string propValueStr(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}
}  // namespace

std::string Op::str() const {
  nlohmann::json p = props();
  if (!p.is_object() || p.empty()) return name();
  std::string out = name() + "{";
  bool first = true;
  for (const auto& [key, value] : p.items()) {
    if (!first) out += ",";
    first = false;
    out += key + "=" + propValueStr(value);
  }
  return out + "}";
}

bool Op::equals(const Op& other) const {
  if (this == &other) return true;
  if (typeid(*this) != typeid(other)) return false;
  // Two hashes already computed settle most inequalities without building the props.
  const std::size_t a = m_hash.load(std::memory_order_relaxed),
                    b = other.m_hash.load(std::memory_order_relaxed);
  if (a != 0 && b != 0 && a != b) return false;
  return name() == other.name() && props() == other.props();
}

std::size_t Op::hash() const {
  std::size_t h = m_hash.load(std::memory_order_relaxed);
  if (h != 0) return h;
  h = std::hash<std::string>{}(name()) * 31u + std::hash<std::string>{}(props().dump());
  if (h == 0) h = 1;
  m_hash.store(h, std::memory_order_relaxed);
  return h;
}

ApplyPtr Op::makeNode(std::vector<VarPtr> inputs, std::source_location site) const {
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i]) throw TypeError(str() + ": input " + std::to_string(i) + " is a null variable");
  if (weak_from_this().expired())
    throw GraphError(str() +
                     ": an op must be held by a std::shared_ptr to build nodes (std::make_shared)");
  std::vector<TensorType> types = outputTypes(inputs);
  ApplyPtr node = Apply::create(shared_from_this(), std::move(inputs), std::move(types),
                                SourceSite::from(site));
  if (testValueMode() != TestValueMode::Off && isExecutable()) computeTestValues(*node);
  return node;
}

const Tensor* valueOf(const Variable& v) {
  if (v.kind() == Variable::Kind::Constant) return &static_cast<const Constant&>(v).value();
  if (v.kind() == Variable::Kind::Shared) return &static_cast<const SharedVariable&>(v).value();
  const auto& tv = v.testValue();
  return tv ? &*tv : nullptr;
}

namespace {
std::string nodeContext(const Apply& node, std::span<const Tensor* const> values) {
  std::string msg = "; input shapes ";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) msg += ", ";
    msg += values[i] ? shapeToString(values[i]->shape()) : "(no value)";
  }
  if (!node.site().empty()) msg += "; the node was created at " + node.site().str();
  return msg;
}
}  // namespace

void Op::computeTestValues(Apply& node) const {
  const TestValueMode mode = testValueMode();
  std::vector<const Tensor*> values(static_cast<std::size_t>(node.nInputs()));
  for (int i = 0; i < node.nInputs(); ++i) {
    values[static_cast<std::size_t>(i)] = valueOf(*node.input(i));
    if (values[static_cast<std::size_t>(i)] == nullptr) {
      if (mode == TestValueMode::Warn) return;  // Theano warns only about failures, not gaps
      const Variable& in = *node.input(i);
      std::string msg = str() + ": cannot compute the test value: input " + std::to_string(i);
      if (!in.name().empty()) msg += " ('" + in.name() + "')";
      msg +=
          " has no test value (test values are in raise mode; give every graph input one with "
          "setTestValue())" +
          nodeContext(node, values);
      throw TestValueError(msg);
    }
  }
  std::vector<Tensor> results(static_cast<std::size_t>(node.nOutputs()));
  std::vector<Tensor*> outPtrs;
  for (Tensor& t : results) outPtrs.push_back(&t);
  try {
    perform(node, values, outPtrs);
    for (int o = 0; o < node.nOutputs(); ++o) {
      Tensor& r = results[static_cast<std::size_t>(o)];
      // A view output would alias the input's test value; keep an independent copy.
      node.outputRef(o).setTestValue(r.storage() && valueSharesInput(r, values) ? r.clone() : r);
    }
  } catch (const std::exception& e) {
    for (int o = 0; o < node.nOutputs(); ++o) node.outputRef(o).clearTestValue();
    // Kernels that already name the node's site keep their message; otherwise add the context.
    const std::string what = e.what();
    std::string msg = str() + ": computing the test value failed: " + what;
    if (what.find("created at") == std::string::npos) msg += nodeContext(node, values);
    if (mode == TestValueMode::Raise) throw TestValueError(msg);
    warn(msg);
  }
}

bool Op::valueSharesInput(const Tensor& out, std::span<const Tensor* const> inputs) {
  for (const Tensor* in : inputs)
    if (in && out.sharesStorageWith(*in)) return true;
  return false;
}

void Op::perform(const Apply&, std::span<const Tensor* const>, std::span<Tensor* const>) const {
  throw NotImplementedError(str() + " has no CPU implementation (perform)");
}

OpCost Op::cost(const Apply&, std::span<const Shape>) const {
  return {};
}

std::vector<ShapeExpr> Op::inferShape(const Apply&, std::span<const ShapeExpr>) const {
  throw NotImplementedError(str() + " cannot infer its output shapes (inferShape)");
}

std::vector<Grad> Op::pullback(const Apply& node, std::span<const VarPtr>) const {
  return std::vector<Grad>(static_cast<std::size_t>(node.nInputs()),
                           Grad::undefined(str() + " has no gradient (pullback)"));
}

std::optional<std::vector<VarPtr>> Op::pushforward(const Apply&, std::span<const VarPtr>) const {
  return std::nullopt;
}

VarPtr Op::operator()(std::vector<VarPtr> inputs, std::source_location site) const {
  ApplyPtr node = makeNode(std::move(inputs), site);
  if (node->nOutputs() != 1)
    throw GraphError(str() + " has " + std::to_string(node->nOutputs()) +
                     " outputs; use makeNode() and pick one");
  return node->output(0);
}

std::vector<std::vector<bool>> Op::connectionPattern(const Apply& node) const {
  return std::vector<std::vector<bool>>(
      static_cast<std::size_t>(node.nInputs()),
      std::vector<bool>(static_cast<std::size_t>(node.nOutputs()), true));
}

void Op::throwInputError(std::span<const VarPtr> inputs, int index,
                         const std::string& expected) const {
  const Variable& v = *inputs[static_cast<std::size_t>(index)];
  std::string msg = str() + ": input " + std::to_string(index);
  if (!v.name().empty()) msg += " ('" + v.name() + "')";
  msg += ": expected " + expected + ", found " + v.type().str();
  if (!v.site().empty()) msg += "; the input was created at " + v.site().str();
  throw TypeError(msg);
}

void Op::checkInputCount(std::span<const VarPtr> inputs, std::size_t expected) const {
  if (inputs.size() != expected)
    throw TypeError(str() + ": expected " + std::to_string(expected) + " input" +
                    (expected == 1 ? "" : "s") + ", found " + std::to_string(inputs.size()));
}

OpaqueOp::OpaqueOp(std::string name, nlohmann::json props, std::string why)
    : m_name(std::move(name)), m_props(std::move(props)), m_why(std::move(why)) {}

std::string OpaqueOp::str() const {
  std::string base = Op::str();
  return base + " (opaque)";
}

std::vector<TensorType> OpaqueOp::outputTypes(std::span<const VarPtr>) const {
  throw TypeError(str() + ": an opaque op cannot infer its output types (" + m_why +
                  "); it only appears in graphs loaded from files");
}

}  // namespace tscope::engine
