// ONNX forms of the shape and indexing family: DimShuffle, Reshape, Shape/ShapeI/MakeVector,
// SpecifyShape, Join/Split, Alloc/ARange, Tile/Repeat, Subtensor, integer-array indexing, TopK
// and NonZero.
#include "engine/io/onnx/onnx_export_emit.h"
#include "engine/ops/basic.h"
#include "engine/ops/shape/shape.h"
#include "engine/ops/shape/topk.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>

namespace tscope::engine::io::onnx_export {

namespace {

constexpr std::int64_t kEnd = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kBegin = std::numeric_limits<std::int64_t>::min();

// Runs a chain of single-input steps on `x`; only the last writes `result` (an Identity when
// there is no step).
class Chain {
 public:
  Chain(NodeExport& n, std::string x) : m_n(n), m_value(std::move(x)) {}
  // Adds step opType(value, extra...) with attributes set by `attrs`.
  template <class Attrs>
  void step(std::string_view opType, std::vector<std::string> extra, Attrs attrs) {
    m_steps.push_back({std::string(opType), std::move(extra), attrs});
  }
  void step(std::string_view opType, std::vector<std::string> extra = {}) {
    step(opType, std::move(extra), [](onnx::NodeProto&) {});
  }
  void finish(const std::string& result) {
    if (m_steps.empty()) {
      m_n.add("Identity", {m_value}, {result});
      return;
    }
    for (std::size_t i = 0; i < m_steps.size(); ++i) {
      Step& s = m_steps[i];
      std::vector<std::string> inputs{m_value};
      inputs.insert(inputs.end(), s.extra.begin(), s.extra.end());
      auto& node = m_n.add(
          s.opType, std::move(inputs),
          i + 1 == m_steps.size() ? std::vector<std::string>{result} : std::vector<std::string>{});
      s.attrs(node);
      m_value = node.output(0);
    }
  }

 private:
  struct Step {
    std::string opType;
    std::vector<std::string> extra;
    std::function<void(onnx::NodeProto&)> attrs;
  };
  NodeExport& m_n;
  std::string m_value;
  std::vector<Step> m_steps;
};

// A 1-d int64 vector from 0-d integer variables: a constant when every one is, else the Concat of
// their Unsqueezes.
std::string int64Vector(NodeExport& n, const std::vector<VarPtr>& scalars) {
  std::vector<std::int64_t> values;
  for (const VarPtr& s : scalars)
    if (auto c = constantIntValue(s))
      values.push_back(*c);
    else if (s->kind() == Variable::Kind::Constant && !isFloat(s->type().dtype()))
      values.push_back(static_cast<std::int64_t>(static_cast<const Constant&>(*s).value().item()));
  if (values.size() == scalars.size()) return n.ints(values);
  std::vector<std::string> parts;
  for (const VarPtr& s : scalars)
    parts.push_back(
        n.add1("Unsqueeze", {n.cast(n.value(s), s->type().dtype(), DType::Int64), n.ints({0})}));
  auto& concat = n.add("Concat", parts);
  attrInt(concat, "axis", 0);
  return concat.output(0);
}

// DimShuffle{order}: Squeeze the dropped axes, Transpose the kept ones, Unsqueeze the new ones.
void emitDimShuffle(NodeExport& n) {
  const auto& op = n.op<DimShuffle>();
  const std::vector<int>& order = op.order();
  std::vector<std::int64_t> dropped, newAxes;
  std::vector<int> kept;
  for (int a = 0; a < op.inputNdim(); ++a)
    if (std::find(order.begin(), order.end(), a) == order.end()) dropped.push_back(a);
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (order[i] == DimShuffle::kNewAxis)
      newAxes.push_back(static_cast<std::int64_t>(i));
    else
      kept.push_back(order[i]);
  }
  // After the Squeeze, input axis a sits at a minus the dropped axes before it.
  std::vector<std::int64_t> perm;
  for (int a : kept)
    perm.push_back(
        a - std::count_if(dropped.begin(), dropped.end(), [&](std::int64_t d) { return d < a; }));
  Chain chain(n, n.input(0));
  if (!dropped.empty()) chain.step("Squeeze", {n.ints(dropped)});
  bool identity = true;
  for (std::size_t i = 0; i < perm.size(); ++i)
    identity = identity && perm[i] == static_cast<std::int64_t>(i);
  if (!identity)
    chain.step("Transpose", {}, [perm](onnx::NodeProto& node) { attrInts(node, "perm", perm); });
  if (!newAxes.empty()) chain.step("Unsqueeze", {n.ints(newAxes)});
  chain.finish(n.output(0));
}

// Reshape: the engine's 0 is a size (allowzero=1 from opset 14), -1 is inferred as in ONNX.
void emitReshape(NodeExport& n) {
  auto& node = n.add("Reshape", {n.input(0), n.input(1, DType::Int64)}, {n.output(0)});
  if (const auto shape = n.constantInts(1);
      shape && std::count(shape->begin(), shape->end(), 0) > 0) {
    if (std::count(shape->begin(), shape->end(), -1) > 0)
      n.unsupported("a shape with both 0 and -1");
    if (n.opset() < 14)
      n.unsupported("a shape with a 0 needs opset 14 or later (Reshape's allowzero)");
    attrInt(node, "allowzero", 1);
  }
}

void emitShape(NodeExport& n) {
  n.add("Shape", {n.input(0)}, {n.output(0)});
}

// ShapeI{i}: Shape, then Gather of the 0-d index i (a 0-d result).
void emitShapeI(NodeExport& n) {
  const std::int64_t axis = n.op<ShapeI>().axis();
  const std::string index = n.tensor(Tensor::scalar(DType::Int64, static_cast<double>(axis)));
  n.add("Gather", {n.add1("Shape", {n.input(0)}), index}, {n.output(0)});
}

void emitMakeVector(NodeExport& n) {
  const DType dtype = n.op<MakeVector>().dtype();
  std::vector<double> values;
  for (int i = 0; i < n.nInputs(); ++i)
    if (const Tensor* c = n.constantInput(i)) values.push_back(c->item());
  if (static_cast<int>(values.size()) == n.nInputs()) {
    const std::string c = n.tensor(Tensor::fromDoubles(dtype, {n.nInputs()}, values));
    n.add("Identity", {c}, {n.output(0)});
    return;
  }
  std::vector<std::string> parts;
  for (int i = 0; i < n.nInputs(); ++i)
    parts.push_back(n.add1("Unsqueeze", {n.input(i, dtype), n.ints({0})}));
  attrInt(n.add("Concat", parts, {n.output(0)}), "axis", 0);
}

void emitSpecifyShape(NodeExport& n) {
  n.add("Identity", {n.input(0)}, {n.output(0)});
}

// AssertType: ONNX types may differ between an If's branches, so the branch that asserts another
// rank (Note [IfElse branches of another rank]) is an Identity again.
void emitAssertType(NodeExport& n) {
  n.add("Identity", {n.input(0)}, {n.output(0)});
}

// BreakPoint: one Identity per monitored value; the doc string (op str) keeps the name.
void emitBreakPoint(NodeExport& n) {
  for (int o = 0; o < n.node().nOutputs(); ++o) n.add("Identity", {n.input(o + 1)}, {n.output(o)});
}

void emitJoin(NodeExport& n) {
  const DType out = n.outType(0).dtype();
  std::vector<std::string> parts;
  for (int i = 0; i < n.nInputs(); ++i) parts.push_back(n.input(i, out));
  attrInt(n.add("Concat", parts, {n.output(0)}), "axis", n.op<Join>().axis());
}

void emitSplit(NodeExport& n) {
  std::vector<std::string> outputs;
  for (int k = 0; k < n.nOutputs(); ++k) outputs.push_back(n.output(k));
  attrInt(n.add("Split", {n.input(0), n.input(1, DType::Int64)}, outputs), "axis",
          n.op<Split>().axis());
}

// Alloc(value, d...): Expand of the value to the shape (the value broadcasts into it).
void emitAlloc(NodeExport& n) {
  std::vector<VarPtr> dims(n.node().inputs().begin() + 1, n.node().inputs().end());
  n.add("Expand", {n.input(0, n.outType(0).dtype()), int64Vector(n, dims)}, {n.output(0)});
}

void emitARange(NodeExport& n) {
  const DType dtype = n.op<ARange>().dtype();
  constexpr DTypeSet kRangeTypes =
      dtypeBit(DType::Float32) | dtypeBit(DType::Float64) | dtypeBit(DType::Int16) | kWideIntTypes;
  n.compute("Range",
            {{n.input(0), n.inType(0).dtype()},
             {n.input(1), n.inType(1).dtype()},
             {n.input(2), n.inType(2).dtype()}},
            dtype, kRangeTypes, dtype, n.output(0));
}

// Tile{reps} is numpy's tile: a longer reps gives x leading axes, a shorter one is padded with 1s.
void emitTile(NodeExport& n) {
  std::vector<std::int64_t> reps = n.op<Tile>().reps();
  const int ndim = n.inType(0).ndim();
  Chain chain(n, n.input(0));
  if (static_cast<int>(reps.size()) > ndim) {
    std::vector<std::int64_t> lead(reps.size() - static_cast<std::size_t>(ndim));
    std::iota(lead.begin(), lead.end(), 0);
    chain.step("Unsqueeze", {n.ints(lead)});
  }
  reps.insert(reps.begin(),
              std::max<std::size_t>(reps.size(), static_cast<std::size_t>(ndim)) - reps.size(), 1);
  if (std::any_of(reps.begin(), reps.end(), [](std::int64_t r) { return r != 1; }))
    chain.step("Tile", {n.ints(reps)});
  chain.finish(n.output(0));
}

// Repeat: per-element counts gather the repeated indices along the axis; a uniform count r
// inserts an axis after it, tiles it r times and merges the two.
void emitRepeat(NodeExport& n) {
  const auto& op = n.op<Repeat>();
  const TensorType& x = n.inType(0);
  const int axis = op.axis();
  std::vector<std::int64_t> counts = op.repeats();
  if (counts.size() == 1 && x.isDimKnown(axis))
    counts.assign(static_cast<std::size_t>(x.shape()[axis]), counts[0]);
  if (counts.size() != 1 || !x.isDimKnown(axis)) {
    std::vector<std::int64_t> indices;
    for (std::size_t j = 0; j < counts.size(); ++j)
      indices.insert(indices.end(), counts[j], static_cast<std::int64_t>(j));
    attrInt(n.add("Gather", {n.input(0), n.ints(indices)}, {n.output(0)}), "axis", axis);
    return;
  }
  const std::int64_t r = counts[0];
  std::vector<std::int64_t> reps(static_cast<std::size_t>(x.ndim()) + 1, 1);
  reps[static_cast<std::size_t>(axis) + 1] = r;
  const std::string tiled =
      n.add1("Tile", {n.add1("Unsqueeze", {n.input(0), n.ints({axis + 1})}), n.ints(reps)});
  // The merged shape: x's shape with axis multiplied by r.
  const std::string shape = n.add1("Shape", {n.input(0)});
  auto part = [&](std::int64_t from, std::int64_t to) {
    return n.add1("Slice", {shape, n.ints({from}), n.ints({to})});
  };
  std::vector<std::string> parts;
  if (axis > 0) parts.push_back(part(0, axis));
  parts.push_back(n.add1("Mul", {part(axis, axis + 1), n.ints({r})}));
  if (axis + 1 < x.ndim()) parts.push_back(part(axis + 1, x.ndim()));
  auto& concat = n.add("Concat", parts);
  attrInt(concat, "axis", 0);
  n.add("Reshape", {tiled, concat.output(0)}, {n.output(0)});
}

// Note [Subtensor in ONNX]: one Slice takes every slice entry and every constant index i (as
// i:i+1, the end open when i is -1); a Squeeze then drops the constant-index axes, and each
// symbolic index is a Gather of a 0-d index (which drops its axis and, unlike i:i+1, is right for
// i = -1), from the last axis back. An absent start or stop is the end the step runs from or to
// (ONNX clamps INT64_MAX/MIN to the axis), chosen at run time for a symbolic step.
void emitSubtensor(NodeExport& n) {
  const IndexList& list = n.op<Subtensor>().indices();
  int nextInput = 1;
  auto symbolic = [&]() { return n.node().input(nextInput++); };
  struct Part {
    std::optional<std::int64_t> constant;
    VarPtr var;
  };
  auto read = [&](const IdxPart& p) -> std::optional<Part> {
    if (p.kind == IdxPart::Kind::None) return std::nullopt;
    if (p.kind == IdxPart::Kind::Constant) return Part{p.value, nullptr};
    return Part{std::nullopt, symbolic()};
  };
  std::vector<Part> starts, ends, steps;
  std::vector<std::int64_t> axes, squeezeAxes;
  std::vector<std::pair<int, VarPtr>> gathers;  // (axis, index)
  const auto& entries = list.entries();
  for (std::size_t a = 0; a < entries.size(); ++a) {
    const IdxEntry& e = entries[a];
    const auto axis = static_cast<std::int64_t>(a);
    if (!e.isSlice) {
      std::optional<Part> i = read(e.start);
      if (i->var) {
        gathers.emplace_back(static_cast<int>(a), i->var);
        continue;
      }
      starts.push_back(*i);
      ends.push_back(Part{*i->constant == -1 ? kEnd : *i->constant + 1, nullptr});
      steps.push_back(Part{1, nullptr});
      axes.push_back(axis);
      squeezeAxes.push_back(axis);
      continue;
    }
    std::optional<Part> start = read(e.start), stop = read(e.stop), step = read(e.step);
    if (!start && !stop && (!step || (step->constant && *step->constant == 1)))
      continue;  // whole axis
    const Part s = step.value_or(Part{1, nullptr});
    auto open = [&](bool isStart) -> Part {  // an absent bound, by the step's sign
      const std::int64_t forward = isStart ? 0 : kEnd, backward = isStart ? kEnd : kBegin;
      if (s.constant) return Part{*s.constant > 0 ? forward : backward, nullptr};
      return Part{std::nullopt, nullptr};  // symbolic step: resolved below
    };
    starts.push_back(start.value_or(open(true)));
    ends.push_back(stop.value_or(open(false)));
    steps.push_back(s);
    axes.push_back(axis);
  }
  // One int64 vector per Slice input: constants, symbolic parts, and the open bounds of a symbolic
  // step chosen by Where(step < 0, backward end, forward end).
  auto vector = [&](const std::vector<Part>& parts, bool isStart) {
    bool allConstant = std::all_of(parts.begin(), parts.end(),
                                   [](const Part& p) { return p.constant.has_value(); });
    if (allConstant) {
      std::vector<std::int64_t> values;
      for (const Part& p : parts) values.push_back(*p.constant);
      return n.ints(values);
    }
    std::vector<std::string> pieces;
    for (std::size_t k = 0; k < parts.size(); ++k) {
      const Part& p = parts[k];
      if (p.constant) {
        pieces.push_back(n.ints({*p.constant}));
      } else if (p.var) {
        pieces.push_back(
            n.add1("Unsqueeze",
                   {n.cast(n.value(p.var), p.var->type().dtype(), DType::Int64), n.ints({0})}));
      } else {
        const VarPtr& stepVar = steps[k].var;
        const std::string negative =
            n.add1("Less", {n.cast(n.value(stepVar), stepVar->type().dtype(), DType::Int64),
                            n.tensor(Tensor::scalar(DType::Int64, 0))});
        const std::string choice = n.add1(
            "Where", {negative, n.ints({isStart ? kEnd : kBegin}), n.ints({isStart ? 0 : kEnd})});
        pieces.push_back(choice);
      }
    }
    auto& concat = n.add("Concat", pieces);
    attrInt(concat, "axis", 0);
    return concat.output(0);
  };
  Chain chain(n, n.input(0));
  if (!axes.empty())
    chain.step("Slice",
               {vector(starts, true), vector(ends, false), n.ints(axes), vector(steps, true)});
  if (!squeezeAxes.empty()) chain.step("Squeeze", {n.ints(squeezeAxes)});
  for (auto it = gathers.rbegin(); it != gathers.rend(); ++it) {
    const int axis =
        it->first - static_cast<int>(std::count_if(squeezeAxes.begin(), squeezeAxes.end(),
                                                   [&](std::int64_t s) { return s < it->first; }));
    const std::string index = n.cast(n.value(it->second), it->second->type().dtype(), DType::Int64);
    chain.step("Gather", {index}, [axis](onnx::NodeProto& node) { attrInt(node, "axis", axis); });
  }
  chain.finish(n.output(0));
}

// An integer index as ONNX's Gather takes it (int32 or int64).
std::string gatherIndex(NodeExport& n, const VarPtr& index) {
  const DType d = index->type().dtype();
  return n.cast(n.value(index), d, d == DType::Int32 ? DType::Int32 : DType::Int64);
}

void emitAdvancedSubtensor1(NodeExport& n) {
  attrInt(n.add("Gather", {n.input(0), gatherIndex(n, n.node().input(1))}, {n.output(0)}), "axis",
          0);
}

// Note [Advanced indexing in ONNX]: x[entries] with integer arrays on some axes A and constant
// slices on the others. The slices are one Slice; the array axes are moved to the front
// (Transpose) and, with several arrays, folded into one axis (Reshape), which the arrays index
// with the row-major linear index ((a0 d1 + a1) d2 + a2 ...) after negative indices are wrapped;
// broadcasting the arrays together is then numpy's own, done by the Mul and Add. One Gather on
// the front axis gives B + the other axes, and when the array axes were adjacent B moves to where
// the first one was (numpy's rule, Note [Advanced index layout]). Only standard ops are used, so
// runtimes and the importer read it.
void emitAdvancedSubtensor(NodeExport& n) {
  const auto& entries = n.op<AdvancedSubtensor>().index().entries();
  const TensorType& xt = n.inType(0);
  const int rank = xt.ndim();
  std::vector<int> arrays, others;
  std::vector<std::int64_t> starts, ends, axes, steps;
  for (int a = 0; a < rank; ++a) {
    if (a < static_cast<int>(entries.size()) && entries[static_cast<std::size_t>(a)].isArray) {
      arrays.push_back(a);
      continue;
    }
    others.push_back(a);
    if (a >= static_cast<int>(entries.size())) continue;
    const AdvEntry& e = entries[static_cast<std::size_t>(a)];
    const std::int64_t step = e.step.kind == IdxPart::Kind::None ? 1 : e.step.value;
    if (e.start.kind == IdxPart::Kind::None && e.stop.kind == IdxPart::Kind::None && step == 1)
      continue;
    starts.push_back(e.start.kind != IdxPart::Kind::None ? e.start.value : step > 0 ? 0 : kEnd);
    ends.push_back(e.stop.kind != IdxPart::Kind::None ? e.stop.value : step > 0 ? kEnd : kBegin);
    axes.push_back(a);
    steps.push_back(step);
  }
  std::string x = n.input(0);
  if (!axes.empty())
    x = n.add1("Slice", {x, n.ints(starts), n.ints(ends), n.ints(axes), n.ints(steps)});
  std::vector<std::int64_t> perm;
  for (int a : arrays) perm.push_back(a);
  for (int a : others) perm.push_back(a);
  if (!std::is_sorted(perm.begin(), perm.end())) {
    auto& t = n.add("Transpose", {x});
    attrInts(t, "perm", perm);
    x = t.output(0);
  }
  const auto m = static_cast<int>(arrays.size());
  // The size of array axis j (after the Slice, which leaves array axes alone).
  std::string shape;
  auto size = [&](int j) {
    const int a = arrays[static_cast<std::size_t>(j)];
    if (xt.isDimKnown(a))
      return n.tensor(Tensor::scalar(DType::Int64, static_cast<double>(xt.shape()[a])));
    if (shape.empty()) shape = n.add1("Shape", {x});
    return n.add1("Gather", {shape, n.tensor(Tensor::scalar(DType::Int64, j))});
  };
  int nb = 0;  // the rank of B, the arrays' broadcast shape
  std::string index;
  for (int j = 0; j < m; ++j) {
    const VarPtr& arr = n.node().input(j + 1);
    nb = std::max(nb, arr->type().ndim());
    std::string a = n.cast(n.value(arr), arr->type().dtype(), DType::Int64);
    if (m == 1) {  // Gather wraps negative indices itself
      index = a;
      break;
    }
    const std::string d = size(j);
    a = n.add1("Where", {n.add1("Less", {a, n.tensor(Tensor::scalar(DType::Int64, 0))}),
                         n.add1("Add", {a, d}), a});
    index = j == 0 ? a : n.add1("Add", {n.add1("Mul", {index, d}), a});
  }
  if (m > 1) {  // fold the array axes into one
    if (shape.empty()) shape = n.add1("Shape", {x});
    auto& concat =
        n.add("Concat", {n.ints({-1}), n.add1("Slice", {shape, n.ints({m}), n.ints({kEnd})})});
    attrInt(concat, "axis", 0);
    x = n.add1("Reshape", {x, concat.output(0)});
  }
  const bool adjacent = arrays.back() - arrays.front() == m - 1;
  const int first = arrays.front();
  const bool moveBack = adjacent && first > 0 && nb > 0;
  auto& gather =
      n.add("Gather", {x, index},
            moveBack ? std::vector<std::string>{} : std::vector<std::string>{n.output(0)});
  attrInt(gather, "axis", 0);
  if (!moveBack) return;
  // B + others -> others[:first] + B + others[first:].
  const int outRank = nb + static_cast<int>(others.size());
  std::vector<std::int64_t> back;
  for (int i = 0; i < first; ++i) back.push_back(nb + i);
  for (int i = 0; i < nb; ++i) back.push_back(i);
  for (int i = nb + first; i < outRank; ++i) back.push_back(i);
  attrInts(n.add("Transpose", {gather.output(0)}, {n.output(0)}), "perm", back);
}

// Note [IncSubtensor in ONNX]: x with the region x[entries] incremented by (set to) y, for
// constant entries with step 1 (an index i is the slice i:i+1 that y lacks): y is broadcast to the
// region (whose shape a Slice of x gives) and padded with zeros to x's shape (Pad); the increment
// adds it, the assignment picks it where a padded mask of ones is set (Where). The pads are the
// region's distance from each end: a start and a negative stop need no size, other bounds need the
// axis's static size.
void emitIncSubtensor(NodeExport& n) {
  const auto& op = n.op<IncSubtensor>();
  if (op.indices().nInputs() > 0) n.unsupported("an inc/set-subtensor with symbolic bounds");
  const TensorType& xt = n.inType(0);
  const int rank = xt.ndim();
  const auto& entries = op.indices().entries();
  std::vector<std::int64_t> begin(static_cast<std::size_t>(rank), 0), end(begin), starts, ends,
      axes, indexAxes;
  for (std::size_t a = 0; a < entries.size(); ++a) {
    const IdxEntry& e = entries[a];
    const std::int64_t d = xt.shape()[a];
    std::int64_t start = 0, stop = kEnd;
    if (!e.isSlice) {
      start = e.start.value;
      stop = start == -1 ? kEnd : start + 1;
      indexAxes.push_back(static_cast<std::int64_t>(a));
    } else {
      if (e.step.kind == IdxPart::Kind::Constant && e.step.value != 1)
        n.unsupported("an inc/set-subtensor with a slice step other than 1");
      if (e.start.kind == IdxPart::Kind::Constant) start = e.start.value;
      if (e.stop.kind == IdxPart::Kind::Constant) stop = e.stop.value;
    }
    auto needSize = [&] {
      if (d == kUnknownDim)
        n.unsupported("an inc/set-subtensor whose bounds need the unknown size of axis " +
                      std::to_string(a));
    };
    if (start < 0) {
      needSize();
      start = std::max<std::int64_t>(0, start + d);
    }
    std::int64_t after = 0;
    if (stop < 0) {
      after = -stop;
    } else if (stop != kEnd) {
      needSize();
      after = std::max<std::int64_t>(0, d - stop);
    }
    if (start == 0 && after == 0) continue;
    begin[a] = start;
    end[a] = after;
    starts.push_back(start);
    ends.push_back(stop);
    axes.push_back(static_cast<std::int64_t>(a));
  }
  const DType dtype = xt.dtype();
  const std::string x = n.input(0);
  const std::string region =
      axes.empty() ? x : n.add1("Slice", {x, n.ints(starts), n.ints(ends), n.ints(axes)});
  const std::string regionShape = n.add1("Shape", {region});
  // y aligned with the region: leading axes up to the region's rank less the index axes, then the
  // index axes themselves.
  std::string y = n.input(1, dtype);
  const int lead = rank - static_cast<int>(indexAxes.size()) - n.inType(1).ndim();
  std::vector<std::int64_t> unsqueeze;
  for (int i = 0; i < lead; ++i) unsqueeze.push_back(i);
  if (!unsqueeze.empty()) y = n.add1("Unsqueeze", {y, n.ints(unsqueeze)});
  if (!indexAxes.empty()) y = n.add1("Unsqueeze", {y, n.ints(indexAxes)});
  y = n.add1("Expand", {y, regionShape});
  std::vector<std::int64_t> pads(begin);
  pads.insert(pads.end(), end.begin(), end.end());
  const std::string padsValue = n.ints(pads);
  const std::string padded = axes.empty() ? y : n.add1("Pad", {y, padsValue, n.scalar(0, dtype)});
  if (!op.setInsteadOfInc()) {
    n.compute("Add", {{x, dtype}, {padded, dtype}}, dtype, kNumericTypes, dtype, n.output(0));
    return;
  }
  if (axes.empty()) {
    n.add("Identity", {padded}, {n.output(0)});
    return;
  }
  auto& ones = n.add("ConstantOfShape", {regionShape});
  onnx::AttributeProto* value = ones.add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  tensorToOnnx(Tensor::full(DType::UInt8, {1}, 1), {}, *value->mutable_t());
  value->mutable_t()->clear_name();
  const std::string mask =
      n.cast(n.add1("Pad", {ones.output(0), padsValue, n.tensor(Tensor::scalar(DType::UInt8, 0))}),
             DType::UInt8, DType::Bool);
  n.add("Where", {mask, padded, x}, {n.output(0)});
}

// TopK{axis,k,largest}: ONNX's TopK, sorted, with k as a 1-d input (bool values compare as uint8).
void emitTopK(NodeExport& n) {
  const auto& op = n.op<TopK>();
  const DType dtype = n.inType(0).dtype();
  const std::optional<DType> c = computeDTypeFor(dtype, kNumericTypes);
  const bool direct = *c == dtype;
  auto& node = n.add("TopK", {n.input(0, *c), n.ints({op.k()})},
                     {direct ? n.output(0) : n.newValue("TopK_values"), n.output(1)});
  attrInt(node, "axis", op.axis());
  attrInt(node, "largest", op.largest() ? 1 : 0);
  attrInt(node, "sorted", 1);
  if (!direct)
    attrInt(n.add("Cast", {node.output(0)}, {n.output(0)}), "to", onnx_import::dtypeToOnnx(dtype));
}

// NonZero: ONNX's NonZero (every dtype).
void emitNonZero(NodeExport& n) {
  n.add("NonZero", {n.input(0)}, {n.output(0)});
}

}  // namespace

void registerShapeEmitters(EmitterTable& table) {
  table.add("DimShuffle", &emitDimShuffle);
  table.add("Reshape", &emitReshape);
  table.add("Shape", &emitShape);
  table.add("ShapeI", &emitShapeI);
  table.add("MakeVector", &emitMakeVector);
  table.add("SpecifyShape", &emitSpecifyShape);
  table.add("AssertType", &emitAssertType);
  table.add("BreakPoint", &emitBreakPoint);
  table.add("Join", &emitJoin);
  table.add("Split", &emitSplit);
  table.add("Alloc", &emitAlloc);
  table.add("ARange", &emitARange);
  table.add("Tile", &emitTile);
  table.add("Repeat", &emitRepeat);
  table.add("Subtensor", &emitSubtensor);
  table.add("AdvancedSubtensor1", &emitAdvancedSubtensor1);
  table.add("AdvancedSubtensor", &emitAdvancedSubtensor);
  table.add("TopK", &emitTopK);
  table.add("NonZero", &emitNonZero);
  table.add("IncSubtensor", &emitIncSubtensor);
}

}  // namespace tscope::engine::io::onnx_export
