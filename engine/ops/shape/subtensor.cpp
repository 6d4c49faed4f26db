#include "engine/ops/shape/subtensor.h"

#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/shape/shape_common.h"
#include "engine/tensor/tensor.h"

#include <limits>

namespace tscope::engine {

using namespace shape_detail;

// --- Building indices ----------------------------------------------------------------------------

IdxBound::IdxBound(VarPtr var) {
  if (!var) return;
  if (auto c = constantIntValue(var))
    m_value = *c;
  else
    m_var = std::move(var);
}

Idx Idx::at(IdxBound index) {
  if (index.absent())
    throw std::invalid_argument("Idx::at: an index needs a value (a constant or a variable)");
  Idx idx;
  idx.isSlice = false;
  idx.start = std::move(index);
  return idx;
}

Idx Idx::slice(IdxBound start, IdxBound stop, IdxBound step) {
  if (step.value() == 0) throw std::invalid_argument("Idx::slice: the step cannot be 0");
  Idx idx;
  idx.start = std::move(start);
  idx.stop = std::move(stop);
  idx.step = std::move(step);
  return idx;
}

// --- IndexList -----------------------------------------------------------------------------------

IndexList::IndexList(std::vector<IdxEntry> entries) : m_entries(std::move(entries)) {
  if (m_entries.size() > 64) throw std::invalid_argument("IndexList: more than 64 indices");
  for (const IdxEntry& e : m_entries) {
    for (const IdxPart* p : {&e.start, &e.stop, &e.step})
      if (p->kind == IdxPart::Kind::Input) ++m_nInputs;
    if (!e.isSlice && e.start.kind == IdxPart::Kind::None)
      throw std::invalid_argument("IndexList: an index entry needs a value");
    if (!e.isSlice && (e.stop.kind != IdxPart::Kind::None || e.step.kind != IdxPart::Kind::None))
      throw std::invalid_argument("IndexList: an index entry has only \"i\"");
    if (e.isSlice && e.step.kind == IdxPart::Kind::Constant && e.step.value == 0)
      throw std::invalid_argument("IndexList: a slice step cannot be 0");
  }
}

std::pair<IndexList, std::vector<VarPtr>> IndexList::fromIdx(const std::vector<Idx>& idx) {
  std::vector<IdxEntry> entries;
  std::vector<VarPtr> inputs;
  auto part = [&](const IdxBound& b) {
    IdxPart p;
    if (b.value()) {
      p.kind = IdxPart::Kind::Constant;
      p.value = *b.value();
    } else if (b.var()) {
      p.kind = IdxPart::Kind::Input;
      inputs.push_back(b.var());
    }
    return p;
  };
  for (const Idx& i : idx) {
    IdxEntry e;
    e.isSlice = i.isSlice;
    // The order start, stop, step is the order of the inputs (Note [Index lists]).
    e.start = part(i.start);
    if (i.isSlice) {
      e.stop = part(i.stop);
      e.step = part(i.step);
    }
    entries.push_back(e);
  }
  return {IndexList(std::move(entries)), std::move(inputs)};
}

int IndexList::nDropped() const {
  int n = 0;
  for (const IdxEntry& e : m_entries) n += e.isSlice ? 0 : 1;
  return n;
}

namespace {
nlohmann::json partJson(const IdxPart& p) {
  switch (p.kind) {
    case IdxPart::Kind::None:
      return nullptr;
    case IdxPart::Kind::Constant:
      return p.value;
    case IdxPart::Kind::Input:
      break;
  }
  return "?";
}

IdxPart partFromJson(const nlohmann::json& j, const std::string& op, const std::string& what) {
  IdxPart p;
  if (j.is_null()) return p;
  if (j.is_string() && j.get<std::string>() == "?") {
    p.kind = IdxPart::Kind::Input;
    return p;
  }
  if (j.is_number_integer() &&
      !(j.is_number_unsigned() &&
        j.get<std::uint64_t>() > std::numeric_limits<std::int64_t>::max())) {
    p.kind = IdxPart::Kind::Constant;
    p.value = j.get<std::int64_t>();
    return p;
  }
  throw std::invalid_argument(op + ": idx_list " + what +
                              " must be null, an integer or \"?\", found " + j.dump());
}

std::string partStr(const IdxPart& p) {
  switch (p.kind) {
    case IdxPart::Kind::None:
      return "";
    case IdxPart::Kind::Constant:
      return std::to_string(p.value);
    case IdxPart::Kind::Input:
      break;
  }
  return "?";
}

std::string outOfBounds(const std::string& op, std::int64_t index, int axis, std::int64_t size) {
  return op + ": index " + std::to_string(index) + " is out of bounds for axis " +
         std::to_string(axis) + " with size " + std::to_string(size);
}
}  // namespace

nlohmann::json IndexList::toJson() const {
  nlohmann::json list = nlohmann::json::array();
  for (const IdxEntry& e : m_entries) {
    if (e.isSlice)
      list.push_back(
          {{"start", partJson(e.start)}, {"stop", partJson(e.stop)}, {"step", partJson(e.step)}});
    else
      list.push_back({{"i", partJson(e.start)}});
  }
  return list;
}

IndexList IndexList::fromJson(const nlohmann::json& list, const std::string& op) {
  if (!list.is_array() || list.size() > 64)
    throw std::invalid_argument(
        op + ": props \"idx_list\" must be an array of at most 64 entries, found " + list.dump());
  std::vector<IdxEntry> entries;
  for (const auto& j : list) {
    if (!j.is_object())
      throw std::invalid_argument(op + ": each idx_list entry must be an object, found " +
                                  j.dump());
    IdxEntry e;
    if (j.contains("i")) {
      if (j.size() != 1)
        throw std::invalid_argument(op + ": an index entry has only \"i\", found " + j.dump());
      e.isSlice = false;
      e.start = partFromJson(j["i"], op, "\"i\"");
      if (e.start.kind == IdxPart::Kind::None)
        throw std::invalid_argument(op + ": an index entry needs \"i\", found null");
    } else {
      for (const auto& [key, value] : j.items())
        if (key != "start" && key != "stop" && key != "step")
          throw std::invalid_argument(
              op + ": a slice entry has \"start\", \"stop\" and \"step\", found \"" + key + "\"");
      e.start = partFromJson(j.value("start", nlohmann::json()), op, "\"start\"");
      e.stop = partFromJson(j.value("stop", nlohmann::json()), op, "\"stop\"");
      e.step = partFromJson(j.value("step", nlohmann::json()), op, "\"step\"");
      if (e.step.kind == IdxPart::Kind::Constant && e.step.value == 0)
        throw std::invalid_argument(op + ": a slice step cannot be 0");
    }
    entries.push_back(e);
  }
  return IndexList(std::move(entries));
}

std::string IndexList::str() const {
  std::string out;
  for (std::size_t k = 0; k < m_entries.size(); ++k) {
    const IdxEntry& e = m_entries[k];
    if (k) out += ",";
    if (!e.isSlice) {
      out += partStr(e.start);
      continue;
    }
    out += partStr(e.start) + ":" + partStr(e.stop);
    if (e.step.kind != IdxPart::Kind::None) out += ":" + partStr(e.step);
  }
  return out;
}

std::vector<std::int64_t> IndexList::outputShape(const TensorType& x,
                                                 std::span<const VarPtr> scalars,
                                                 const std::string& op) const {
  if (static_cast<int>(m_entries.size()) > x.ndim())
    throw TypeError(op + ": " + std::to_string(m_entries.size()) + " indices for a " +
                    std::to_string(x.ndim()) + "-d input of type " + x.str());
  if (static_cast<int>(scalars.size()) != m_nInputs)
    throw TypeError(op + ": expected " + std::to_string(m_nInputs) + " index inputs, found " +
                    std::to_string(scalars.size()));
  for (std::size_t k = 0; k < scalars.size(); ++k) {
    const TensorType& t = scalars[k]->type();
    if (t.ndim() != 0 || !isInteger(t.dtype()))
      throw TypeError(op + ": index input " + std::to_string(k) +
                      (scalars[k]->name().empty() ? "" : " ('" + scalars[k]->name() + "')") +
                      ": expected a 0-d integer, found " + t.str());
  }
  std::vector<std::int64_t> out;
  for (std::size_t axis = 0; axis < static_cast<std::size_t>(x.ndim()); ++axis) {
    const std::int64_t n = x.shape()[axis];
    if (axis >= m_entries.size()) {
      out.push_back(n);
      continue;
    }
    const IdxEntry& e = m_entries[axis];
    if (!e.isSlice) {
      if (e.start.kind == IdxPart::Kind::Constant && n != kUnknownDim &&
          (e.start.value < -n || e.start.value >= n))
        throw TypeError(outOfBounds(op, e.start.value, static_cast<int>(axis), n) +
                        " (input type " + x.str() + ")");
      continue;
    }
    const bool constant = e.start.kind != IdxPart::Kind::Input &&
                          e.stop.kind != IdxPart::Kind::Input &&
                          e.step.kind != IdxPart::Kind::Input;
    if (n == kUnknownDim || !constant) {
      // x[:] and x[::1] keep the size even when it is unknown.
      const bool whole = e.start.kind == IdxPart::Kind::None &&
                         e.stop.kind == IdxPart::Kind::None &&
                         (e.step.kind == IdxPart::Kind::None ||
                          (e.step.kind == IdxPart::Kind::Constant && e.step.value == 1));
      out.push_back(whole ? n : kUnknownDim);
      continue;
    }
    auto value = [](const IdxPart& p) {
      return p.kind == IdxPart::Kind::Constant ? std::optional<std::int64_t>(p.value)
                                               : std::nullopt;
    };
    out.push_back(sliceLength(n, value(e.start), value(e.stop),
                              e.step.kind == IdxPart::Kind::None ? 1 : e.step.value));
  }
  return out;
}

Tensor IndexList::apply(const Tensor& x, std::span<const Tensor* const> scalars,
                        const std::string& op) const {
  if (static_cast<int>(m_entries.size()) > x.ndim())
    throw std::invalid_argument(op + ": " + std::to_string(m_entries.size()) +
                                " indices for a value of shape " + shapeToString(x.shape()));
  std::size_t next = 0;
  auto part = [&](const IdxPart& p, const char* what) -> std::optional<std::int64_t> {
    switch (p.kind) {
      case IdxPart::Kind::None:
        return std::nullopt;
      case IdxPart::Kind::Constant:
        return p.value;
      case IdxPart::Kind::Input:
        break;
    }
    return readIndex(*scalars[next++], op + ": " + what);
  };
  Tensor cur = x;
  int axis = 0;  // the axis of cur the entry applies to
  for (std::size_t k = 0; k < m_entries.size(); ++k) {
    const IdxEntry& e = m_entries[k];
    const std::int64_t n = cur.shape()[static_cast<std::size_t>(axis)];
    if (!e.isSlice) {
      const std::int64_t i = *part(e.start, "index");
      if (i < -n || i >= n) throw std::out_of_range(outOfBounds(op, i, static_cast<int>(k), n));
      cur = cur.select(axis, i < 0 ? i + n : i);
      continue;
    }
    auto start = part(e.start, "slice start");
    auto stop = part(e.stop, "slice stop");
    const std::int64_t step = part(e.step, "slice step").value_or(1);
    if (step == 0)
      throw std::invalid_argument(op + ": the slice step on axis " + std::to_string(k) +
                                  " is 0; it cannot be zero");
    // Absent bounds as Tensor::slice clamps them (Python's slice.indices()).
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
    cur = cur.slice(axis, start.value_or(step > 0 ? 0 : kMax),
                    stop.value_or(step > 0 ? kMax : kMin), step);
    ++axis;
  }
  return cur;
}

ShapeExpr IndexList::outputShape(const ShapeExpr& xShape, std::span<const VarPtr> scalars) const {
  std::size_t next = 0;
  auto part = [&](const IdxPart& p) -> VarPtr {
    switch (p.kind) {
      case IdxPart::Kind::None:
        return nullptr;
      case IdxPart::Kind::Constant:
        return constantInt(p.value);
      case IdxPart::Kind::Input:
        break;
    }
    return toInt64(scalars[next++]);
  };
  ShapeExpr out;
  for (std::size_t axis = 0; axis < xShape.size(); ++axis) {
    const VarPtr& n = xShape[axis];
    if (axis >= m_entries.size()) {
      out.push_back(n);
      continue;
    }
    const IdxEntry& e = m_entries[axis];
    if (!e.isSlice) {
      part(e.start);
      continue;
    }
    VarPtr start = part(e.start), stop = part(e.stop), step = part(e.step);
    if (!step) step = constantInt(1);
    const VarPtr zero = constantInt(0), one = constantInt(1), minusOne = constantInt(-1);
    // Python's slice.indices() clamping, for a positive and for a negative step.
    // A negative bound counts from the end; the result is clamped into [lo, hi].
    auto clamp = [&](const VarPtr& i, const VarPtr& lo, const VarPtr& hi) {
      if (auto c = constantIntValue(i)) return *c < 0 ? intMax(intAdd(i, n), lo) : intMin(i, hi);
      return intWhere(lt(i, zero), intMax(intAdd(i, n), lo), intMin(i, hi));
    };
    auto clampPos = [&](const VarPtr& i) { return clamp(i, zero, n); };
    auto clampNeg = [&](const VarPtr& i) { return clamp(i, minusOne, intSub(n, one)); };
    auto lengthPos = [&]() {
      VarPtr s = start ? clampPos(start) : zero;
      VarPtr e2 = stop ? clampPos(stop) : n;
      return intFloorDiv(intMax(intAdd(intSub(e2, s), intSub(step, one)), zero), step);
    };
    auto lengthNeg = [&]() {
      VarPtr s = start ? clampNeg(start) : intSub(n, one);
      VarPtr e2 = stop ? clampNeg(stop) : minusOne;
      VarPtr negStep = intSub(zero, step);
      return intFloorDiv(intMax(intAdd(intSub(s, e2), intSub(negStep, one)), zero), negStep);
    };
    if (!start && !stop && constantIntValue(step) == 1) {
      out.push_back(n);  // x[:]
    } else if (auto c = constantIntValue(step)) {
      out.push_back(*c > 0 ? lengthPos() : lengthNeg());
    } else {
      out.push_back(intWhere(gt(step, zero), lengthPos(), lengthNeg()));
    }
  }
  return out;
}

// --- Subtensor -----------------------------------------------------------------------------------

nlohmann::json Subtensor::props() const {
  return {{"idx_list", m_indices.toJson()}};
}

std::string Subtensor::str() const {
  return "Subtensor{" + m_indices.str() + "}";
}

std::vector<TensorType> Subtensor::outputTypes(std::span<const VarPtr> inputs) const {
  if (inputs.empty())
    throw TypeError(str() + ": expected x and " + std::to_string(m_indices.nInputs()) +
                    " index inputs, found none");
  const TensorType& x = inputs[0]->type();
  return {TensorType(x.dtype(), m_indices.outputShape(x, inputs.subspan(1), str()), x.device())};
}

void Subtensor::perform(const Apply&, std::span<const Tensor* const> inputs,
                        std::span<Tensor* const> outputs) const {
  *outputs[0] = m_indices.apply(*inputs[0], inputs.subspan(1), str());
}

std::vector<ShapeExpr> Subtensor::inferShape(const Apply& node,
                                             std::span<const ShapeExpr> inputShapes) const {
  std::vector<VarPtr> scalars(node.inputs().begin() + 1, node.inputs().end());
  ShapeExpr out = m_indices.outputShape(inputShapes[0], scalars);
  const auto& known = node.outputRef(0).type().shape();
  for (std::size_t i = 0; i < out.size(); ++i)
    if (known[i] != kUnknownDim) out[i] = constantInt(known[i]);
  return {out};
}

std::vector<Grad> Subtensor::pullback(const Apply& node,
                                      std::span<const VarPtr> outputGrads) const {
  std::vector<Grad> grads(static_cast<std::size_t>(node.nInputs()), Grad::disconnected());
  const VarPtr& x = node.input(0);
  std::vector<VarPtr> inputs{zerosLike(x), outputGrads[0]};
  inputs.insert(inputs.end(), node.inputs().begin() + 1, node.inputs().end());
  grads[0] = std::make_shared<IncSubtensor>(m_indices, false)->operator()(std::move(inputs));
  return grads;
}

std::optional<std::vector<VarPtr>> Subtensor::pushforward(const Apply& node,
                                                          std::span<const VarPtr> tangents) const {
  if (!tangents[0]) return std::vector<VarPtr>{nullptr};
  std::vector<VarPtr> inputs(node.inputs().begin(), node.inputs().end());
  inputs[0] = tangents[0];
  return std::vector<VarPtr>{operator()(std::move(inputs))};
}

std::vector<std::vector<bool>> Subtensor::connectionPattern(const Apply& node) const {
  std::vector<std::vector<bool>> pattern(static_cast<std::size_t>(node.nInputs()), {false});
  pattern[0] = {true};
  return pattern;
}

OpPtr Subtensor::fromProps(const nlohmann::json& props) {
  propKeys(props, "Subtensor", {"idx_list"});
  if (!props.contains("idx_list"))
    throw std::invalid_argument("Subtensor: props need \"idx_list\" (an array)");
  return std::make_shared<Subtensor>(IndexList::fromJson(props["idx_list"], "Subtensor"));
}

// --- Builders ------------------------------------------------------------------------------------

VarPtr subtensor(const VarPtr& x, const std::vector<Idx>& indices, std::source_location site) {
  auto [list, scalars] = IndexList::fromIdx(indices);
  std::vector<VarPtr> inputs{x};
  inputs.insert(inputs.end(), scalars.begin(), scalars.end());
  return std::make_shared<Subtensor>(std::move(list))->operator()(std::move(inputs), site);
}

namespace {
int normalizeAxisFor(const char* what, const VarPtr& x, int axis) {
  const int ndim = x->type().ndim();
  const int given = axis;
  if (axis < 0) axis += ndim;
  if (axis < 0 || axis >= ndim)
    throw TypeError(std::string(what) + ": axis " + std::to_string(given) +
                    " is out of range for " + x->type().str());
  return axis;
}
}  // namespace

VarPtr slice(const VarPtr& x, int axis, IdxBound start, IdxBound stop, IdxBound step,
             std::source_location site) {
  axis = normalizeAxisFor("slice", x, axis);
  std::vector<Idx> idx(static_cast<std::size_t>(axis), Idx::all());
  idx.push_back(Idx::slice(std::move(start), std::move(stop), std::move(step)));
  return subtensor(x, idx, site);
}

VarPtr select(const VarPtr& x, int axis, IdxBound index, std::source_location site) {
  axis = normalizeAxisFor("select", x, axis);
  std::vector<Idx> idx(static_cast<std::size_t>(axis), Idx::all());
  idx.push_back(Idx::at(std::move(index)));
  return subtensor(x, idx, site);
}

}  // namespace tscope::engine
