#include "engine/ops/shape/advanced_index.h"

#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/shape/shape_common.h"
#include "engine/tensor/tensor.h"

#include <limits>

namespace tscope::engine {

using namespace shape_detail;

// --- Building ------------------------------------------------------------------------------------

AdvIdx::AdvIdx(VarPtr array) : m_array(std::move(array)) {
  if (!m_array) throw std::invalid_argument("AdvIdx: the index array is null");
}

AdvIdx::AdvIdx(Idx slice) : m_slice(std::move(slice)) {
  if (!m_slice.isSlice)
    throw std::invalid_argument(
        "AdvIdx: an integer index among index arrays must be given as a (0-d) array");
  for (const IdxBound* b : {&m_slice.start, &m_slice.stop, &m_slice.step})
    if (b->var())
      throw std::invalid_argument("AdvIdx: slices among index arrays need constant bounds");
}

// --- AdvancedIndex -------------------------------------------------------------------------------

AdvancedIndex::AdvancedIndex(std::vector<AdvEntry> entries) : m_entries(std::move(entries)) {
  if (m_entries.size() > 64) throw std::invalid_argument("AdvancedIndex: more than 64 entries");
  for (const AdvEntry& e : m_entries) {
    if (e.isArray) {
      ++m_nArrays;
      continue;
    }
    for (const IdxPart* p : {&e.start, &e.stop, &e.step})
      if (p->kind == IdxPart::Kind::Input)
        throw std::invalid_argument("AdvancedIndex: slices need constant bounds");
    if (e.step.kind == IdxPart::Kind::Constant && e.step.value == 0)
      throw std::invalid_argument("AdvancedIndex: a slice step cannot be 0");
  }
  if (m_nArrays == 0)
    throw std::invalid_argument(
        "AdvancedIndex: needs at least one index array (else use Subtensor)");
}

namespace {
nlohmann::json partJson(const IdxPart& p) {
  return p.kind == IdxPart::Kind::Constant ? nlohmann::json(p.value) : nlohmann::json(nullptr);
}

IdxPart partFromJson(const nlohmann::json& j, const std::string& op) {
  IdxPart p;
  if (j.is_null()) return p;
  if (!j.is_number_integer() ||
      (j.is_number_unsigned() &&
       j.get<std::uint64_t>() >
           static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())))
    throw std::invalid_argument(op + ": a slice bound must be null or an integer, found " +
                                j.dump());
  p.kind = IdxPart::Kind::Constant;
  p.value = j.get<std::int64_t>();
  return p;
}

std::optional<std::int64_t> partValue(const IdxPart& p) {
  return p.kind == IdxPart::Kind::Constant ? std::optional<std::int64_t>(p.value) : std::nullopt;
}
std::int64_t stepOf(const AdvEntry& e) {
  return e.step.kind == IdxPart::Kind::Constant ? e.step.value : 1;
}

// Note [Advanced index layout]: where the block of broadcast array axes goes in the output.
int insertPosition(const std::vector<AdvEntry>& entries) {
  int first = -1, last = -1, count = 0;
  for (std::size_t k = 0; k < entries.size(); ++k) {
    if (!entries[k].isArray) continue;
    if (first < 0) first = static_cast<int>(k);
    last = static_cast<int>(k);
    ++count;
  }
  return last - first + 1 == count ? first : 0;
}
}  // namespace

nlohmann::json AdvancedIndex::toJson() const {
  nlohmann::json list = nlohmann::json::array();
  for (const AdvEntry& e : m_entries) {
    if (e.isArray)
      list.push_back("array");
    else
      list.push_back(
          {{"start", partJson(e.start)}, {"stop", partJson(e.stop)}, {"step", partJson(e.step)}});
  }
  return list;
}

AdvancedIndex AdvancedIndex::fromJson(const nlohmann::json& list, const std::string& op) {
  if (!list.is_array() || list.size() > 64)
    throw std::invalid_argument(
        op + ": props \"idx_list\" must be an array of at most 64 entries, found " + list.dump());
  std::vector<AdvEntry> entries;
  for (const auto& j : list) {
    AdvEntry e;
    if (j.is_string() && j.get<std::string>() == "array") {
      e.isArray = true;
    } else if (j.is_object()) {
      for (const auto& [key, value] : j.items())
        if (key != "start" && key != "stop" && key != "step")
          throw std::invalid_argument(
              op + ": a slice entry has \"start\", \"stop\" and \"step\", found \"" + key + "\"");
      e.start = partFromJson(j.value("start", nlohmann::json()), op);
      e.stop = partFromJson(j.value("stop", nlohmann::json()), op);
      e.step = partFromJson(j.value("step", nlohmann::json()), op);
    } else {
      throw std::invalid_argument(
          op + ": each idx_list entry must be \"array\" or a slice object, found " + j.dump());
    }
    entries.push_back(e);
  }
  try {
    return AdvancedIndex(std::move(entries));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(op + ": " + e.what());
  }
}

std::string AdvancedIndex::str() const {
  std::string out;
  for (std::size_t k = 0; k < m_entries.size(); ++k) {
    const AdvEntry& e = m_entries[k];
    if (k) out += ",";
    if (e.isArray) {
      out += "[]";
      continue;
    }
    auto part = [](const IdxPart& p) {
      return p.kind == IdxPart::Kind::Constant ? std::to_string(p.value) : std::string();
    };
    out += part(e.start) + ":" + part(e.stop);
    if (e.step.kind != IdxPart::Kind::None) out += ":" + part(e.step);
  }
  return out;
}

std::vector<std::int64_t> AdvancedIndex::outputShape(const TensorType& x,
                                                     std::span<const VarPtr> arrays,
                                                     const std::string& op) const {
  if (static_cast<int>(m_entries.size()) > x.ndim())
    throw TypeError(op + ": " + std::to_string(m_entries.size()) + " indices for a " +
                    std::to_string(x.ndim()) + "-d input of type " + x.str());
  if (static_cast<int>(arrays.size()) != m_nArrays)
    throw TypeError(op + ": expected " + std::to_string(m_nArrays) + " index arrays, found " +
                    std::to_string(arrays.size()));
  std::vector<std::vector<std::int64_t>> shapes;
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    const TensorType& t = arrays[k]->type();
    if (!isInteger(t.dtype()))
      throw TypeError(op + ": index array " + std::to_string(k) +
                      (arrays[k]->name().empty() ? "" : " ('" + arrays[k]->name() + "')") +
                      ": expected an integer tensor, found " + t.str());
    shapes.push_back(t.shape());
  }
  auto broadcast = broadcastStaticShapes(shapes);
  if (!broadcast) {
    std::string found;
    for (const VarPtr& a : arrays) found += (found.empty() ? "" : ", ") + a->type().str();
    throw TypeError(op + ": the index arrays cannot be broadcast together: " + found);
  }
  std::vector<std::int64_t> rest;
  for (std::size_t axis = 0; axis < static_cast<std::size_t>(x.ndim()); ++axis) {
    const std::int64_t n = x.shape()[axis];
    if (axis >= m_entries.size()) {
      rest.push_back(n);
      continue;
    }
    const AdvEntry& e = m_entries[axis];
    if (e.isArray) continue;
    rest.push_back(n == kUnknownDim
                       ? (e.start.kind == IdxPart::Kind::None &&
                                  e.stop.kind == IdxPart::Kind::None && stepOf(e) == 1
                              ? n
                              : kUnknownDim)
                       : sliceLength(n, partValue(e.start), partValue(e.stop), stepOf(e)));
  }
  const int insert = insertPosition(m_entries);
  rest.insert(rest.begin() + insert, broadcast->begin(), broadcast->end());
  return rest;
}

ShapeExpr AdvancedIndex::outputShape(const ShapeExpr& xShape,
                                     std::span<const VarPtr> arrays) const {
  // The slices through Subtensor's symbolic lengths; the arrays' broadcast per axis: a size of 1
  // takes the other operand's size.
  std::vector<IdxEntry> slices;
  for (const AdvEntry& e : m_entries) {
    IdxEntry s;
    if (!e.isArray) {
      s.start = e.start;
      s.stop = e.stop;
      s.step = e.step;
    }
    slices.push_back(s);
  }
  ShapeExpr sliced = IndexList(std::move(slices)).outputShape(xShape, {});
  std::size_t ndim = 0;
  for (const VarPtr& a : arrays) ndim = std::max(ndim, static_cast<std::size_t>(a->type().ndim()));
  ShapeExpr b(ndim, constantInt(1));
  for (const VarPtr& a : arrays) {
    const ShapeExpr s = shapeOf(a);
    for (std::size_t i = 0; i < s.size(); ++i) {
      VarPtr& d = b[ndim - s.size() + i];
      auto dv = constantIntValue(d);
      if (dv == 1) {
        d = s[i];
      } else if (constantIntValue(s[i]) != 1 && !dv) {
        d = intWhere(eq(d, constantInt(1)), s[i], d);
      }
    }
  }
  ShapeExpr out;
  for (std::size_t axis = 0; axis < xShape.size(); ++axis)
    if (axis >= m_entries.size() || !m_entries[axis].isArray) out.push_back(sliced[axis]);
  const int insert = insertPosition(m_entries);
  out.insert(out.begin() + insert, b.begin(), b.end());
  return out;
}

// --- Runtime plan --------------------------------------------------------------------------------

namespace {
// Row-major values of an integer tensor of any rank.
std::vector<std::int64_t> readAll(const Tensor& t) {
  const Tensor c = t.contiguous();
  std::vector<std::int64_t> out(static_cast<std::size_t>(c.numel()));
  dispatchDType(c.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, Half> && !std::is_floating_point_v<T>) {
      const T* p = c.data<T>();
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::int64_t>(p[i]);
    }
  });
  return out;
}

// How x[index] maps onto a base tensor: for every element of the arrays' broadcast shape B, the
// offset of the selected block in the base, and the block's axes (the non-array axes).
struct Plan {
  Shape b;                                // broadcast shape of the arrays
  std::vector<std::int64_t> baseOffsets;  // per element of B (row-major), into base's storage
  Shape blockShape;                       // the non-array axes of the sliced base, in order
  Strides blockStrides;                   // their strides in the base
  Shape indexedShape;                     // the shape of x[index]
  int insert = 0;                         // where B sits in indexedShape
};

Plan makePlan(const AdvancedIndex& index, const Tensor& base, std::span<const Tensor* const> arrays,
              const std::string& op) {
  const auto& entries = index.entries();
  if (static_cast<int>(entries.size()) > base.ndim())
    throw std::invalid_argument(op + ": " + std::to_string(entries.size()) +
                                " indices for a value of shape " + shapeToString(base.shape()));
  Tensor xs = base;
  std::vector<int> arrayAxes;
  for (std::size_t k = 0; k < entries.size(); ++k) {
    const AdvEntry& e = entries[k];
    if (e.isArray) {
      arrayAxes.push_back(static_cast<int>(k));
      continue;
    }
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
    const std::int64_t step = stepOf(e);
    xs = xs.slice(static_cast<int>(k), partValue(e.start).value_or(step > 0 ? 0 : kMax),
                  partValue(e.stop).value_or(step > 0 ? kMax : kMin), step);
  }
  Plan plan;
  // numpy broadcasting of the arrays' runtime shapes.
  std::size_t ndim = 0;
  for (const Tensor* a : arrays) ndim = std::max(ndim, static_cast<std::size_t>(a->ndim()));
  plan.b.assign(ndim, 1);
  for (const Tensor* a : arrays) {
    for (std::size_t i = 0; i < static_cast<std::size_t>(a->ndim()); ++i) {
      std::int64_t& d = plan.b[ndim - static_cast<std::size_t>(a->ndim()) + i];
      const std::int64_t s = a->shape()[i];
      if (s == d || s == 1) continue;
      if (d != 1) {
        std::string found;
        for (const Tensor* t : arrays)
          found += (found.empty() ? "" : ", ") + shapeToString(t->shape());
        throw std::invalid_argument(op + ": the index arrays of shapes " + found +
                                    " cannot be broadcast together");
      }
      d = s;
    }
  }
  const std::int64_t count = shapeNumel(plan.b);
  plan.baseOffsets.assign(static_cast<std::size_t>(count), xs.offset());
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    const Tensor& a = *arrays[k];
    const std::vector<std::int64_t> values = readAll(a);
    const int axis = arrayAxes[k];
    const std::int64_t size = xs.shape()[static_cast<std::size_t>(axis)];
    const std::int64_t stride = xs.strides()[static_cast<std::size_t>(axis)];
    // The array's strides over B: row-major over its own shape, 0 where it broadcasts.
    Strides own = contiguousStrides(a.shape());
    Strides over(ndim, 0);
    for (std::size_t i = 0; i < static_cast<std::size_t>(a.ndim()); ++i)
      if (a.shape()[i] != 1) over[ndim - static_cast<std::size_t>(a.ndim()) + i] = own[i];
    std::vector<std::int64_t> counter(ndim, 0);
    std::int64_t pos = 0;
    for (std::int64_t flat = 0; flat < count; ++flat) {
      std::int64_t i = values[static_cast<std::size_t>(pos)];
      if (i < -size || i >= size)
        throw std::out_of_range(op + ": index " + std::to_string(i) +
                                " is out of bounds for axis " + std::to_string(axis) +
                                " with size " + std::to_string(size));
      if (i < 0) i += size;
      plan.baseOffsets[static_cast<std::size_t>(flat)] += i * stride;
      for (std::size_t d = ndim; d-- > 0;) {  // odometer over B
        pos += over[d];
        if (++counter[d] < plan.b[d]) break;
        pos -= over[d] * plan.b[d];
        counter[d] = 0;
      }
    }
  }
  for (int axis = 0; axis < xs.ndim(); ++axis) {
    if (std::find(arrayAxes.begin(), arrayAxes.end(), axis) != arrayAxes.end()) continue;
    plan.blockShape.push_back(xs.shape()[static_cast<std::size_t>(axis)]);
    plan.blockStrides.push_back(xs.strides()[static_cast<std::size_t>(axis)]);
  }
  plan.insert = insertPosition(entries);
  plan.indexedShape = plan.blockShape;
  plan.indexedShape.insert(plan.indexedShape.begin() + plan.insert, plan.b.begin(), plan.b.end());
  return plan;
}

// For a tensor shaped like x[index] (strides s): the offset of each B element's block, and the
// block's strides.
void indexedLayout(const Plan& plan, const Strides& s, std::int64_t offset,
                   std::vector<std::int64_t>& offsets, Strides& blockStrides) {
  const std::size_t nb = plan.b.size();
  const std::size_t insert = static_cast<std::size_t>(plan.insert);
  blockStrides.clear();
  for (std::size_t i = 0; i < s.size(); ++i)
    if (i < insert || i >= insert + nb) blockStrides.push_back(s[i]);
  const std::int64_t count = shapeNumel(plan.b);
  offsets.assign(static_cast<std::size_t>(count), offset);
  std::vector<std::int64_t> counter(nb, 0);
  std::int64_t pos = offset;
  for (std::int64_t flat = 0; flat < count; ++flat) {
    offsets[static_cast<std::size_t>(flat)] = pos;
    for (std::size_t d = nb; d-- > 0;) {
      pos += s[insert + d];
      if (++counter[d] < plan.b[d]) break;
      pos -= s[insert + d] * plan.b[d];
      counter[d] = 0;
    }
  }
}

std::vector<std::vector<bool>> indexPattern(const Apply& node, int connected) {
  std::vector<std::vector<bool>> pattern(static_cast<std::size_t>(node.nInputs()), {false});
  for (int i = 0; i < connected; ++i) pattern[static_cast<std::size_t>(i)] = {true};
  return pattern;
}
}  // namespace

// --- AdvancedSubtensor ---------------------------------------------------------------------------

std::vector<TensorType> AdvancedSubtensor::outputTypes(std::span<const VarPtr> inputs) const {
  if (inputs.empty())
    throw TypeError(str() + ": expected x and " + std::to_string(m_index.nArrays()) +
                    " index arrays");
  const TensorType& x = inputs[0]->type();
  return {TensorType(x.dtype(), m_index.outputShape(x, inputs.subspan(1), str()), x.device())};
}

void AdvancedSubtensor::perform(const Apply&, std::span<const Tensor* const> inputs,
                                std::span<Tensor* const> outputs) const {
  const Tensor& x = *inputs[0];
  const Plan plan = makePlan(m_index, x, inputs.subspan(1), str());
  Tensor& out = reuseOrAllocate(outputs[0], x.dtype(), plan.indexedShape);
  std::vector<std::int64_t> outOffsets;
  Strides outBlock;
  indexedLayout(plan, out.strides(), 0, outOffsets, outBlock);
  dispatchDType(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = reinterpret_cast<const T*>(x.storage()->data());
    T* dst = out.data<T>();
    for (std::size_t k = 0; k < outOffsets.size(); ++k)
      copyBlock<false>(dst + outOffsets[k], outBlock, src + plan.baseOffsets[k], plan.blockStrides,
                       plan.blockShape);
  });
}

std::vector<ShapeExpr> AdvancedSubtensor::inferShape(const Apply& node,
                                                     std::span<const ShapeExpr> inputShapes) const {
  std::vector<VarPtr> arrays(node.inputs().begin() + 1, node.inputs().end());
  ShapeExpr out = m_index.outputShape(inputShapes[0], arrays);
  const auto& known = node.outputRef(0).type().shape();
  for (std::size_t i = 0; i < out.size(); ++i)
    if (known[i] != kUnknownDim) out[i] = constantInt(known[i]);
  return {out};
}

std::vector<Grad> AdvancedSubtensor::pullback(const Apply& node,
                                              std::span<const VarPtr> outputGrads) const {
  std::vector<Grad> grads(static_cast<std::size_t>(node.nInputs()), Grad::disconnected());
  std::vector<VarPtr> inputs{zerosLike(node.input(0)), outputGrads[0]};
  inputs.insert(inputs.end(), node.inputs().begin() + 1, node.inputs().end());
  grads[0] = std::make_shared<AdvancedIncSubtensor>(m_index, false)->operator()(std::move(inputs));
  return grads;
}

std::optional<std::vector<VarPtr>> AdvancedSubtensor::pushforward(
    const Apply& node, std::span<const VarPtr> tangents) const {
  if (!tangents[0]) return std::vector<VarPtr>{nullptr};
  std::vector<VarPtr> inputs(node.inputs().begin(), node.inputs().end());
  inputs[0] = tangents[0];
  return std::vector<VarPtr>{operator()(std::move(inputs))};
}

std::vector<std::vector<bool>> AdvancedSubtensor::connectionPattern(const Apply& node) const {
  return indexPattern(node, 1);
}

OpPtr AdvancedSubtensor::fromProps(const nlohmann::json& props) {
  propKeys(props, "AdvancedSubtensor", {"idx_list"});
  if (!props.contains("idx_list"))
    throw std::invalid_argument("AdvancedSubtensor: props need \"idx_list\" (an array)");
  return std::make_shared<AdvancedSubtensor>(
      AdvancedIndex::fromJson(props["idx_list"], "AdvancedSubtensor"));
}

// --- AdvancedIncSubtensor ------------------------------------------------------------------------

nlohmann::json AdvancedIncSubtensor::props() const {
  return {{"idx_list", m_index.toJson()}, {"set_instead_of_inc", m_set}, {"inplace", m_inplace}};
}

std::string AdvancedIncSubtensor::str() const {
  return std::string(m_set ? "AdvancedSetSubtensor{" : "AdvancedIncSubtensor{") + m_index.str() +
         (m_inplace ? ",inplace}" : "}");
}

std::vector<TensorType> AdvancedIncSubtensor::outputTypes(std::span<const VarPtr> inputs) const {
  if (inputs.size() < 2)
    throw TypeError(str() + ": expected x, y and " + std::to_string(m_index.nArrays()) +
                    " index arrays, found " + std::to_string(inputs.size()) + " inputs");
  const TensorType& x = inputs[0]->type();
  const TensorType& y = inputs[1]->type();
  const std::vector<std::int64_t> region = m_index.outputShape(x, inputs.subspan(2), str());
  if (auto expected = incValueMismatch(x, y, region, "x[" + m_index.str() + "]"))
    throwInputError(inputs, 1, *expected);
  return {x};
}

void AdvancedIncSubtensor::perform(const Apply&, std::span<const Tensor* const> inputs,
                                   std::span<Tensor* const> outputs) const {
  const Tensor& x = *inputs[0];
  Tensor& out = prepareIncOutput(x, outputs[0], m_inplace);
  const Plan plan = makePlan(m_index, out, inputs.subspan(2), str());
  const Tensor y = broadcastOperand(*inputs[1], plan.indexedShape, str() + ": y");
  std::vector<std::int64_t> yOffsets;
  Strides yBlock;
  indexedLayout(plan, y.strides(), y.offset(), yOffsets, yBlock);
  dispatchDType(out.dtype(), [&](auto dTag) {
    using D = decltype(dTag);
    dispatchDType(y.dtype(), [&](auto sTag) {
      using S = decltype(sTag);
      D* dst = reinterpret_cast<D*>(out.storage()->data());
      const S* src = reinterpret_cast<const S*>(y.storage()->data());
      // Blocks in row-major order of B: duplicates accumulate (inc) or the last one wins (set).
      for (std::size_t k = 0; k < yOffsets.size(); ++k) {
        if (m_set)
          copyBlock<false>(dst + plan.baseOffsets[k], plan.blockStrides, src + yOffsets[k], yBlock,
                           plan.blockShape);
        else
          copyBlock<true>(dst + plan.baseOffsets[k], plan.blockStrides, src + yOffsets[k], yBlock,
                          plan.blockShape);
      }
    });
  });
}

std::vector<ShapeExpr> AdvancedIncSubtensor::inferShape(
    const Apply&, std::span<const ShapeExpr> inputShapes) const {
  return {inputShapes[0]};
}

std::vector<Grad> AdvancedIncSubtensor::pullback(const Apply& node,
                                                 std::span<const VarPtr> outputGrads) const {
  std::vector<Grad> grads(static_cast<std::size_t>(node.nInputs()), Grad::disconnected());
  const VarPtr& g = outputGrads[0];
  std::vector<VarPtr> arrays(node.inputs().begin() + 2, node.inputs().end());
  if (isFloat(node.input(0)->type().dtype())) {
    if (m_set) {
      std::vector<VarPtr> inputs{g, constant(0.0, g->type().dtype())};
      inputs.insert(inputs.end(), arrays.begin(), arrays.end());
      grads[0] =
          std::make_shared<AdvancedIncSubtensor>(m_index, true)->operator()(std::move(inputs));
    } else {
      grads[0] = g;
    }
  }
  const VarPtr& y = node.input(1);
  if (isFloat(y->type().dtype())) {
    std::vector<VarPtr> inputs{g};
    inputs.insert(inputs.end(), arrays.begin(), arrays.end());
    grads[1] = sumToShapeOf(
        std::make_shared<AdvancedSubtensor>(m_index)->operator()(std::move(inputs)), y);
  }
  return grads;
}

std::optional<std::vector<VarPtr>> AdvancedIncSubtensor::pushforward(
    const Apply& node, std::span<const VarPtr> tangents) const {
  if (!tangents[0] && !tangents[1]) return std::vector<VarPtr>{nullptr};
  std::vector<VarPtr> inputs(node.inputs().begin(), node.inputs().end());
  inputs[0] = tangents[0] ? tangents[0] : zerosLike(node.input(0));
  inputs[1] = tangents[1] ? tangents[1] : constant(0.0, node.input(1)->type().dtype());
  return std::vector<VarPtr>{
      std::make_shared<AdvancedIncSubtensor>(m_index, m_set)->operator()(std::move(inputs))};
}

std::vector<std::vector<bool>> AdvancedIncSubtensor::connectionPattern(const Apply& node) const {
  return indexPattern(node, 2);
}

DestroyMap AdvancedIncSubtensor::destroyMap() const {
  if (!m_inplace) return {};
  return {{0, {0}}};
}

OpPtr AdvancedIncSubtensor::fromProps(const nlohmann::json& props) {
  const std::string op = "AdvancedIncSubtensor";
  propKeys(props, op, {"idx_list", "set_instead_of_inc", "inplace"});
  if (!props.contains("idx_list"))
    throw std::invalid_argument(op + ": props need \"idx_list\" (an array)");
  return std::make_shared<AdvancedIncSubtensor>(AdvancedIndex::fromJson(props["idx_list"], op),
                                                propBool(props, op, "set_instead_of_inc", false),
                                                propBool(props, op, "inplace", false));
}

// --- Builders ------------------------------------------------------------------------------------

namespace {
std::pair<AdvancedIndex, std::vector<VarPtr>> split(const std::vector<AdvIdx>& index) {
  std::vector<AdvEntry> entries;
  std::vector<VarPtr> arrays;
  for (const AdvIdx& i : index) {
    AdvEntry e;
    if (i.array()) {
      e.isArray = true;
      arrays.push_back(i.array());
    } else {
      auto part = [](const IdxBound& b) {
        IdxPart p;
        if (b.value()) {
          p.kind = IdxPart::Kind::Constant;
          p.value = *b.value();
        }
        return p;
      };
      e.start = part(i.slice().start);
      e.stop = part(i.slice().stop);
      e.step = part(i.slice().step);
    }
    entries.push_back(e);
  }
  return {AdvancedIndex(std::move(entries)), std::move(arrays)};
}
}  // namespace

VarPtr advancedSubtensor(const VarPtr& x, const std::vector<AdvIdx>& index,
                         std::source_location site) {
  auto [pattern, arrays] = split(index);
  std::vector<VarPtr> inputs{x};
  inputs.insert(inputs.end(), arrays.begin(), arrays.end());
  return std::make_shared<AdvancedSubtensor>(std::move(pattern))
      ->
      operator()(std::move(inputs), site);
}

namespace {
VarPtr incOrSet(const VarPtr& x, const VarPtr& y, const std::vector<AdvIdx>& index, bool set,
                std::source_location site) {
  auto [pattern, arrays] = split(index);
  std::vector<VarPtr> inputs{x, y};
  inputs.insert(inputs.end(), arrays.begin(), arrays.end());
  return std::make_shared<AdvancedIncSubtensor>(std::move(pattern), set)
      ->
      operator()(std::move(inputs), site);
}
}  // namespace

VarPtr advancedIncSubtensor(const VarPtr& x, const VarPtr& y, const std::vector<AdvIdx>& index,
                            std::source_location site) {
  return incOrSet(x, y, index, false, site);
}

VarPtr advancedSetSubtensor(const VarPtr& x, const VarPtr& y, const std::vector<AdvIdx>& index,
                            std::source_location site) {
  return incOrSet(x, y, index, true, site);
}

}  // namespace tscope::engine
