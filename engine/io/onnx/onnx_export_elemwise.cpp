// ONNX forms of the elementwise family: Elemwise (one scalar op each), Composite (its Elemwise
// chain), the reductions (CAReduce, Argmax/Argmin, CumSum) and SumToShape.
#include "engine/io/onnx/onnx_export_emit.h"
#include "engine/ops/elemwise/composite.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/dimshuffle.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace tscope::engine::io::onnx_export {

namespace {

using S = ScalarOp;
using Operand = std::pair<std::string, DType>;

// ONNX's type constraints at the opsets the exporter writes (13..17).
DTypeSet arithmeticTypes(int opset) {  // Add, Sub, Mul, Div: 8- and 16-bit integers from opset 14
  return opset >= 14 ? kNumericTypes : kFloatTypes | kWideIntTypes;
}
inline constexpr DTypeSet kNegTypes =
    kFloatTypes | kWideIntTypes | dtypeBit(DType::Int8) | dtypeBit(DType::Int16);
inline constexpr DTypeSet kPowTypes = kFloatTypes | kWideIntTypes;
inline constexpr DTypeSet kReduceSumTypes = kFloatTypes | kWideIntTypes;  // ReduceSum, ReduceProd
inline constexpr DTypeSet kReduceMaxTypes =
    kFloatTypes | kWideIntTypes | dtypeBit(DType::Int8) | dtypeBit(DType::UInt8);  // ReduceMax/Min

// The operands of node n: each input's ONNX value and dtype.
std::vector<Operand> operands(NodeExport& n) {
  std::vector<Operand> ops;
  for (int i = 0; i < n.nInputs(); ++i) ops.emplace_back(n.input(i), n.inType(i).dtype());
  return ops;
}

// Converts every operand to dtype k (Cast nodes where they differ).
std::vector<std::string> castAll(NodeExport& n, const std::vector<Operand>& ops, DType k) {
  std::vector<std::string> names;
  for (const auto& [name, d] : ops) names.push_back(n.cast(name, d, k));
  return names;
}

// Writes value (of dtype `from`) into `result` as dtype `to`: a Cast, or an Identity.
void finish(NodeExport& n, const std::string& value, DType from, DType to,
            const std::string& result) {
  if (from == to) {
    n.add("Identity", {value}, {result});
    return;
  }
  attrInt(n.add("Cast", {value}, {result}), "to", onnx_import::dtypeToOnnx(to));
}

// The binary opType folded left to right over the operands in dtype k (as Elemwise folds an n-ary
// add), the last node writing `result` with dtype `out`.
void fold(NodeExport& n, std::string_view opType, const std::vector<Operand>& ops, DType k,
          DTypeSet allowed, DType out, const std::string& result) {
  const std::optional<DType> c = computeDTypeFor(k, allowed);
  if (!c)
    n.unsupported("ONNX's " + std::string(opType) + " has no form for " +
                  std::string(dtypeName(k)) + " values");
  std::vector<std::string> names = castAll(n, ops, *c);
  std::string acc = names[0];
  for (std::size_t j = 1; j < names.size(); ++j) {
    const bool last = j + 1 == names.size() && *c == out;
    acc = n.add1(opType, {acc, names[j]}, last ? result : std::string());
  }
  if (*c != out || names.size() == 1) finish(n, acc, *c, out, result);
}

// Note [Bool arithmetic]: numpy's arithmetic on bool is logic (True + True is True), which the
// engine's kernels follow: add and maximum are or, mul and minimum and, sub xor (numpy refuses it),
// pow(a, b) is a or not b; the functions that keep a bool (abs, sign, the roundings, relu, neg,
// sqr) are the identity. ONNX's arithmetic refuses bool, so these export as logic.
bool emitBoolArithmetic(NodeExport& n, ScalarOp s, const std::string& result) {
  std::vector<std::string> in;
  for (int i = 0; i < n.nInputs(); ++i) in.push_back(n.input(i, DType::Bool));
  auto foldLogic = [&](std::string_view opType) {
    std::string acc = in[0];
    for (std::size_t j = 1; j < in.size(); ++j)
      acc = n.add1(opType, {acc, in[j]}, j + 1 == in.size() ? result : "");
  };
  switch (s) {
    case S::Add:
    case S::Maximum:
      foldLogic("Or");
      return true;
    case S::Mul:
    case S::Minimum:
    case S::IntDiv:
      foldLogic("And");
      return true;
    case S::Sub:
      foldLogic("Xor");
      return true;
    case S::Pow:
      n.add("Or", {in[0], n.add1("Not", {in[1]})}, {result});
      return true;
    case S::Clip:
      n.add("And", {n.add1("Or", {in[0], in[1]}), in[2]}, {result});
      return true;
    case S::Neg:
    case S::Abs:
    case S::Sign:
    case S::Sqr:
    case S::Floor:
    case S::Ceil:
    case S::Round:
    case S::Relu:
      n.add("Identity", {in[0]}, {result});
      return true;
    default:
      return false;
  }
}

// Note [Floor division and modulo]: the engine follows Python: the quotient rounds toward minus
// infinity and the remainder takes the divisor's sign. For integers ONNX's Mod with fmod=0 is
// that remainder, and a - mod(a, b) is a multiple of b, so ONNX's truncating Div of it is the
// exact floor quotient. For floats the remainder is fmod(a, b) plus b where the signs differ
// (Mod with fmod=1, corrected), and the quotient (a - fmod) / b less one there, rounded to the
// nearest integer, as the engine's kernel computes it. (Division by zero differs: the engine
// gives 0 for integers, ONNX leaves it undefined.)
void emitFloorDivMod(NodeExport& n, bool isDiv, DType k, DType out, const std::string& result) {
  const std::optional<DType> c = computeDTypeFor(k, arithmeticTypes(n.opset()));
  if (!c)
    n.unsupported("no ONNX form for integer division of " + std::string(dtypeName(k)) + " values");
  const std::string a = n.cast(n.input(0), n.inType(0).dtype(), *c);
  const std::string b = n.cast(n.input(1), n.inType(1).dtype(), *c);
  auto write = [&](const std::string& opType, std::vector<std::string> in) {
    if (*c == out) return n.add1(opType, std::move(in), result);
    const std::string v = n.add1(opType, std::move(in));
    finish(n, v, *c, out, result);
    return result;
  };
  if (!isFloat(*c)) {
    auto& modNode = n.add("Mod", {a, b});
    attrInt(modNode, "fmod", 0);
    const std::string mod = modNode.output(0);
    if (!isDiv) {
      if (*c == out)
        n.add("Identity", {mod}, {result});
      else
        finish(n, mod, *c, out, result);
      return;
    }
    write("Div", {n.add1("Sub", {a, mod}), b});
    return;
  }
  auto& fmodNode = n.add("Mod", {a, b});
  attrInt(fmodNode, "fmod", 1);
  const std::string fm = fmodNode.output(0);
  const std::string zero = n.scalar(0, *c);
  // The signs of the remainder and the divisor differ (and the remainder is not 0).
  const std::string differ =
      n.add1("And", {n.add1("Not", {n.add1("Equal", {fm, zero})}),
                     n.add1("Xor", {n.add1("Less", {fm, zero}), n.add1("Less", {b, zero})})});
  if (!isDiv) {
    write("Where", {differ, n.add1("Add", {fm, b}), fm});
    return;
  }
  const std::string q = n.add1("Div", {n.add1("Sub", {a, fm}), b});
  write("Round", {n.add1("Sub", {q, n.cast(differ, DType::Bool, *c)})});
}

// The scalar ops with a direct ONNX form, one rule per line. Fold: a binary op folded left to
// right over the operands (Elemwise's n-ary add); Each: one node over all operands (variadic
// Min/Max, unary functions); Compare: operands in their promoted dtype, a bool result (Not of it
// for neq). kArithmetic stands for arithmeticTypes(opset).
enum class Form : std::uint8_t { Fold, Each, Compare, CompareNot };
inline constexpr DTypeSet kArithmetic = 0;
struct DirectForm {
  ScalarOp op;
  const char* onnx;
  Form form;
  DTypeSet types;
};
constexpr DirectForm kDirectForms[] = {
    {S::Add, "Add", Form::Fold, kArithmetic},
    {S::Sub, "Sub", Form::Fold, kArithmetic},
    {S::Mul, "Mul", Form::Fold, kArithmetic},
    {S::TrueDiv, "Div", Form::Fold, kArithmetic},
    {S::Pow, "Pow", Form::Fold, kPowTypes},
    {S::Minimum, "Min", Form::Each, kNumericTypes},
    {S::Maximum, "Max", Form::Each, kNumericTypes},
    {S::Neg, "Neg", Form::Each, kNegTypes},
    {S::Abs, "Abs", Form::Each, kNumericTypes},
    {S::Sign, "Sign", Form::Each, kNumericTypes},
    {S::Exp, "Exp", Form::Each, kFloatTypes},
    {S::Log, "Log", Form::Each, kFloatTypes},
    {S::Sqrt, "Sqrt", Form::Each, kFloatTypes},
    {S::Tanh, "Tanh", Form::Each, kFloatTypes},
    {S::Sigmoid, "Sigmoid", Form::Each, kFloatTypes},
    {S::Softplus, "Softplus", Form::Each, kFloatTypes},
    {S::Sin, "Sin", Form::Each, kFloatTypes},
    {S::Cos, "Cos", Form::Each, kFloatTypes},
    {S::Erf, "Erf", Form::Each, kFloatTypes},
    {S::Eq, "Equal", Form::Compare, kAllTypes},
    {S::Neq, "Equal", Form::CompareNot, kAllTypes},
    {S::Lt, "Less", Form::Compare, kNumericTypes},
    {S::Le, "LessOrEqual", Form::Compare, kNumericTypes},
    {S::Gt, "Greater", Form::Compare, kNumericTypes},
    {S::Ge, "GreaterOrEqual", Form::Compare, kNumericTypes},
};

void emitElemwise(NodeExport& n) {
  const auto& op = n.op<Elemwise>();
  const S s = op.scalarOp();
  const ScalarOpInfo& info = scalarOpInfo(s);
  const DType out = n.outType(0).dtype();
  // Note [Elemwise kernel dtypes]: arithmetic computes in the output dtype, comparisons and logic
  // in the promoted operand dtype.
  DType k = out;
  if (info.rule == DTypeRule::Bool) {
    k = n.inType(0).dtype();
    for (int i = 1; i < n.nInputs(); ++i) k = promoteTypes(k, n.inType(i).dtype());
  }
  const std::string result = n.output(0);
  if (k == DType::Bool && info.rule != DTypeRule::Bool && s != S::Switch && s != S::Cast &&
      s != S::Identity && s != S::Second) {
    if (emitBoolArithmetic(n, s, result)) return;
    n.unsupported("ONNX has no form of " + std::string(info.name) + " on bool values");
  }
  const std::vector<Operand> ops = operands(n);
  const DTypeSet arithmetic = arithmeticTypes(n.opset());
  for (const DirectForm& f : kDirectForms) {
    if (f.op != s) continue;
    const DTypeSet types = f.types == kArithmetic ? arithmetic : f.types;
    if (f.form == Form::Fold) {
      fold(n, f.onnx, ops, k, types, out, result);
    } else if (f.form == Form::Each) {
      n.compute(f.onnx, ops, k, types, out, result);
    } else {
      const std::optional<DType> c = computeDTypeFor(k, types);
      if (!c)
        n.unsupported("ONNX's " + std::string(f.onnx) + " has no form for " +
                      std::string(dtypeName(k)));
      const std::vector<std::string> in = castAll(n, ops, *c);
      if (f.form == Form::CompareNot)
        n.add("Not", {n.add1(f.onnx, in)}, {result});
      else
        n.add(f.onnx, in, {result});
    }
    return;
  }
  // x in dtype k (a float for the functions below).
  auto x = [&] { return n.cast(ops[0].first, ops[0].second, k); };
  switch (s) {
    case S::IntDiv:
    case S::Mod:
      emitFloorDivMod(n, s == S::IntDiv, k, out, result);
      return;
    case S::Sqr: {  // x * x
      const std::optional<DType> c = computeDTypeFor(k, arithmetic);
      const std::string xc = n.cast(ops[0].first, ops[0].second, *c);
      n.compute("Mul", {{xc, *c}, {xc, *c}}, *c, arithmetic, out, result);
      return;
    }
    case S::Expm1:  // exp(x) - 1
      n.add("Sub", {n.add1("Exp", {x()}), n.scalar(1, k)}, {result});
      return;
    case S::Log1p:  // log(1 + x)
      n.add("Log", {n.add1("Add", {n.scalar(1, k), x()})}, {result});
      return;
    case S::Log2:  // log(x) / ln 2
    case S::Log10:
      n.add("Div",
            {n.add1("Log", {x()}),
             n.scalar(s == S::Log2 ? std::numbers::ln2 : std::numbers::ln10, k)},
            {result});
      return;
    case S::Floor:
    case S::Ceil:
    case S::Round:
      if (!isFloat(k)) {  // the identity on integers
        finish(n, x(), k, out, result);
        return;
      }
      n.compute(s == S::Floor  ? "Floor"
                : s == S::Ceil ? "Ceil"
                               : "Round",
                ops, k, kFloatTypes, out, result);
      return;
    case S::Relu:
      if (isFloat(k) || (n.opset() >= 14 && isSigned(k)))
        n.compute("Relu", ops, k, kFloatTypes | kNegTypes, out, result);
      else if (isSigned(k))  // max(x, 0) before opset 14's integer Relu
        n.compute("Max", {ops[0], {n.scalar(0, k), k}}, k, kNumericTypes, out, result);
      else  // unsigned: the identity
        finish(n, x(), k, out, result);
      return;
    case S::Clip:
      // ONNX's Clip takes 0-d bounds; others broadcast: minimum(maximum(x, lo), hi), as the engine.
      if (n.inType(1).ndim() == 0 && n.inType(2).ndim() == 0) {
        n.compute("Clip", ops, k, kNumericTypes, out, result);
      } else {
        const std::optional<DType> c = computeDTypeFor(k, kNumericTypes);
        const std::vector<std::string> in = castAll(n, ops, *c);
        n.compute("Min", {{n.add1("Max", {in[0], in[1]}), *c}, {in[2], *c}}, *c, kNumericTypes, out,
                  result);
      }
      return;
    // Logic reads each operand's truth (nonzero), which a Cast to bool gives.
    case S::And:
    case S::Or:
    case S::Xor:
      n.add(s == S::And  ? "And"
            : s == S::Or ? "Or"
                         : "Xor",
            {n.input(0, DType::Bool), n.input(1, DType::Bool)}, {result});
      return;
    case S::Not:
      n.add("Not", {n.input(0, DType::Bool)}, {result});
      return;
    case S::Switch:
      n.add("Where", {n.input(0, DType::Bool), n.input(1, out), n.input(2, out)}, {result});
      return;
    case S::Cast:
    case S::Identity:
      finish(n, ops[0].first, ops[0].second, out, result);
      return;
    case S::Second:  // b broadcast against a (Expand broadcasts both ways)
      n.add("Expand", {n.input(1, out), n.add1("Shape", {ops[0].first})}, {result});
      return;
    default:
      break;
  }
  n.unsupported("no ONNX form for the scalar op " + std::string(info.name));
}

void emitComposite(NodeExport& n) {
  const auto& op = n.op<Composite>();
  n.emitExpansion(expandComposite(op, n.node().inputs()));
}

// Note [Reductions in ONNX]: the engine's CAReduce drops the reduced axes (keepdims is a
// DimShuffle, Note [keepdims]), so every reduction writes keepdims=0. Sums and products accumulate
// in the engine's accumulator dtype and cast to its output dtype; all/any reduce the operands'
// truth as uint8 with ReduceMin/ReduceMax.
void emitCAReduce(NodeExport& n) {
  const auto& op = n.op<CAReduce>();
  const TensorType& in = n.inType(0);
  std::vector<int> axes = op.axesFor(in.ndim());
  if (axes.empty() && op.axes()) axes = CAReduce(op.scalarOp()).axesFor(in.ndim());  // [] means all
  const DType out = n.outType(0).dtype();
  const std::string result = n.output(0);
  if (axes.empty()) {  // a 0-d input: nothing to reduce
    finish(n, n.input(0), in.dtype(), out, result);
    return;
  }
  const std::vector<std::int64_t> axes64(axes.begin(), axes.end());
  auto reduce = [&](std::string_view opType, const std::string& x, DType k, DTypeSet allowed) {
    const std::optional<DType> c = computeDTypeFor(k, allowed);
    if (!c)
      n.unsupported("ONNX's " + std::string(opType) + " has no form for " +
                    std::string(dtypeName(k)));
    const std::string xc = n.cast(x, k, *c);
    std::vector<std::string> inputs{xc};
    if (opType == "ReduceSum") inputs.push_back(n.ints(axes64));  // an input from opset 13
    onnx::NodeProto& node = n.add(
        opType, inputs, *c == out ? std::vector<std::string>{result} : std::vector<std::string>{});
    if (opType != "ReduceSum") attrInts(node, "axes", axes64);
    attrInt(node, "keepdims", 0);
    if (*c != out) finish(n, node.output(0), *c, out, result);
  };
  switch (op.scalarOp()) {
    case S::Add:
    case S::Mul: {
      const DType acc = op.accDType(in.dtype());
      reduce(op.scalarOp() == S::Add ? "ReduceSum" : "ReduceProd", n.input(0, acc), acc,
             kReduceSumTypes);
      return;
    }
    case S::Maximum:
    case S::Minimum:
      reduce(op.scalarOp() == S::Maximum ? "ReduceMax" : "ReduceMin", n.input(0), in.dtype(),
             kReduceMaxTypes);
      return;
    case S::And:
    case S::Or: {
      const std::string truth = n.cast(n.input(0, DType::Bool), DType::Bool, DType::UInt8);
      reduce(op.scalarOp() == S::And ? "ReduceMin" : "ReduceMax", truth, DType::UInt8,
             kReduceMaxTypes);
      return;
    }
    default:
      n.unsupported("no ONNX reduction for " + op.str());
  }
}

// Note [ReduceMean]: the engine's mean(x, axes, keepdims) is true_div(sum(x, axes), count), the
// sum followed by a DimShuffle that restores the reduced axes when keepdims (reduce.cpp), and
// count a 0-d constant when the reduced sizes are static. That composition, in one float dtype,
// is ONNX's ReduceMean (Note [Export patterns]).
struct MeanParts {
  VarPtr x;
  std::vector<std::int64_t> axes;  // empty: every axis
  bool keepdims = false;
};

// The parts of a mean rooted at root; graph (when given) checks that the sum and the DimShuffle
// feed the division only.
std::optional<MeanParts> meanParts(const FunctionGraph* graph, const Apply& root,
                                   std::vector<const Apply*>* covered) {
  const auto* div = dynamic_cast<const Elemwise*>(&root.op());
  if (!div || div->scalarOp() != S::TrueDiv || root.nInputs() != 2) return std::nullopt;
  const Apply* sumNode = root.input(0)->owner();
  const Apply* keep = nullptr;
  if (sumNode && dynamic_cast<const DimShuffle*>(&sumNode->op())) {
    keep = sumNode;
    sumNode = keep->input(0)->owner();
  }
  const auto* reduce = sumNode ? dynamic_cast<const CAReduce*>(&sumNode->op()) : nullptr;
  if (!reduce || reduce->scalarOp() != S::Add) return std::nullopt;
  MeanParts parts;
  parts.x = sumNode->input(0);
  const TensorType& x = parts.x->type();
  const DType d = x.dtype();
  const VarPtr& count = root.input(1);
  if (!isFloat(d) || sumNode->outputRef(0).type().dtype() != d ||
      root.outputRef(0).type().dtype() != d || count->type() != TensorType(d, {}) ||
      count->kind() != Variable::Kind::Constant)
    return std::nullopt;
  std::vector<int> axes = reduce->axesFor(x.ndim());
  if (axes.empty()) axes = CAReduce(S::Add).axesFor(x.ndim());
  double elements = 1;
  for (int a : axes) {
    if (!x.isDimKnown(a)) return std::nullopt;
    elements *= static_cast<double>(x.shape()[static_cast<std::size_t>(a)]);
  }
  if (static_cast<const Constant&>(*count).value().item() != elements) return std::nullopt;
  if (keep) {  // exactly the reduced axes put back
    std::vector<int> restore;
    int next = 0;
    for (int a = 0; a < x.ndim(); ++a)
      restore.push_back(std::binary_search(axes.begin(), axes.end(), a) ? DimShuffle::kNewAxis
                                                                        : next++);
    if (static_cast<const DimShuffle&>(keep->op()).order() != restore) return std::nullopt;
    parts.keepdims = true;
  }
  if (graph) {
    if (!usedOnlyOnce(*graph, sumNode->outputRef(0)) ||
        (keep && !usedOnlyOnce(*graph, keep->outputRef(0))))
      return std::nullopt;
    covered->push_back(sumNode);
    if (keep) covered->push_back(keep);
  }
  if (static_cast<int>(axes.size()) < x.ndim()) parts.axes.assign(axes.begin(), axes.end());
  return parts;
}

bool matchMean(const FunctionGraph& graph, const Apply& root, std::vector<const Apply*>& covered) {
  return meanParts(&graph, root, &covered).has_value();
}

void emitMean(NodeExport& n) {
  const MeanParts parts = *meanParts(nullptr, n.node(), nullptr);
  auto& node = n.add("ReduceMean", {n.value(parts.x)}, {n.output(0)});
  if (!parts.axes.empty()) attrInts(node, "axes", parts.axes);
  attrInt(node, "keepdims", parts.keepdims ? 1 : 0);
}

void emitArgReduce(NodeExport& n) {
  const auto& op = n.op<ArgReduce>();
  const std::string opType = op.kind() == ArgReduce::Kind::Max ? "ArgMax" : "ArgMin";
  const auto c = computeDTypeFor(n.inType(0).dtype(), kNumericTypes);
  std::string x = n.input(0, *c);
  std::int64_t axis = 0;
  if (op.axis())
    axis = *op.axis();
  else
    x = n.add1("Reshape", {x, n.ints({-1})});  // the index into the flattened tensor
  onnx::NodeProto& node = n.add(opType, {x}, {n.output(0)});
  attrInt(node, "axis", axis);
  attrInt(node, "keepdims", 0);
}

// CumSum{axis,exclusive,reverse}: ONNX's CumSum (opset 11), the axis as a 0-d input. ONNX takes
// float16/32/64 and 32/64-bit integers: narrow integers run in int32 and are cast back, which
// wraps as the engine's int64 accumulation does.
void emitCumSum(NodeExport& n) {
  const auto& op = n.op<CumSum>();
  const DType dtype = n.inType(0).dtype();
  const std::optional<DType> c = computeDTypeFor(dtype, kFloatTypes | kWideIntTypes);
  const bool direct = *c == dtype;
  auto& node = n.add("CumSum", {n.input(0, *c), n.scalar(op.axis(), DType::Int64)},
                     {direct ? n.output(0) : n.newValue("CumSum")});
  attrInt(node, "exclusive", op.exclusive() ? 1 : 0);
  attrInt(node, "reverse", op.reverse() ? 1 : 0);
  if (!direct)
    attrInt(n.add("Cast", {node.output(0)}, {n.output(0)}), "to", onnx_import::dtypeToOnnx(dtype));
}

// SumToShape(g, d0..dk-1) sums g over its leading extra axes and over each axis whose target size
// is 1, keeping it. Summing an axis of size 1 changes nothing, so every axis whose target is the
// constant 1 is summed.
// Note [SumToShape with symbolic targets]: where a target t is symbolic and g's size n unknown,
// only run time knows whether t is 1 (sum) or n (keep). A Reshape splits the axis into (t, n / t)
// and the second part is summed away: (1, n) sums to 1, (n, 1) keeps n. The axes summed are then
// static and only the Reshape's shape is computed (Shape, Slice, Div, Concat).
void emitSumToShape(NodeExport& n) {
  const TensorType& g = n.inType(0);
  const int k = n.nInputs() - 1;
  const int lead = g.ndim() - k;
  const DType dtype = g.dtype();
  const std::string result = n.output(0);
  std::vector<bool> summed(static_cast<std::size_t>(g.ndim()), false), split(summed);
  for (int a = 0; a < lead; ++a) summed[static_cast<std::size_t>(a)] = true;
  for (int i = 0; i < k; ++i) {
    const auto axis = static_cast<std::size_t>(lead + i);
    if (const auto c = n.constantInts(i + 1))
      summed[axis] = (*c)[0] == 1 && g.shape()[axis] != 1;
    else
      split[axis] = !g.isDimKnown(static_cast<int>(axis));
  }
  if (std::find(summed.begin(), summed.end(), true) == summed.end() &&
      std::find(split.begin(), split.end(), true) == split.end()) {
    n.add("Identity", {n.input(0)}, {result});
    return;
  }
  const std::optional<DType> c = computeDTypeFor(dtype, kReduceSumTypes);
  if (!c) n.unsupported("ONNX's ReduceSum has no form for " + std::string(dtypeName(dtype)));
  std::string x = n.input(0, *c);
  // Positions after the split: each split axis is followed by its (n / t) part.
  std::vector<std::int64_t> reduceAxes, squeezeAxes;
  std::vector<std::string> shapeParts;
  const std::string shape = std::find(split.begin(), split.end(), true) == split.end()
                                ? std::string()
                                : n.add1("Shape", {x});
  auto dim = [&](int a) { return n.add1("Slice", {shape, n.ints({a}), n.ints({a + 1})}); };
  std::int64_t pos = 0;
  for (int a = 0; a < g.ndim(); ++a, ++pos) {
    const auto ua = static_cast<std::size_t>(a);
    if (summed[ua]) reduceAxes.push_back(pos);
    if (a < lead) squeezeAxes.push_back(pos);
    if (shape.empty()) continue;
    if (!split[ua]) {
      shapeParts.push_back(g.isDimKnown(a) ? n.ints({g.shape()[ua]}) : dim(a));
      continue;
    }
    const std::string t = n.add1("Unsqueeze", {n.input(a - lead + 1, DType::Int64), n.ints({0})});
    shapeParts.push_back(t);
    shapeParts.push_back(n.add1("Div", {dim(a), t}));
    ++pos;
    reduceAxes.push_back(pos);
    squeezeAxes.push_back(pos);
  }
  if (!shape.empty()) {
    auto& concat = n.add("Concat", shapeParts);
    attrInt(concat, "axis", 0);
    x = n.add1("Reshape", {x, concat.output(0)});
  }
  std::sort(squeezeAxes.begin(), squeezeAxes.end());
  const bool squeeze = !squeezeAxes.empty();
  const bool direct = !squeeze && *c == dtype;
  auto& sum = n.add("ReduceSum", {x, n.ints(reduceAxes)},
                    direct ? std::vector<std::string>{result} : std::vector<std::string>{});
  attrInt(sum, "keepdims", 1);
  if (direct) return;
  std::string v = sum.output(0);
  if (squeeze) {
    v = n.add1("Squeeze", {v, n.ints(squeezeAxes)}, *c == dtype ? result : std::string());
    if (*c == dtype) return;
  }
  finish(n, v, *c, dtype, result);
}

}  // namespace

void registerElemwiseEmitters(EmitterTable& table) {
  table.add("Elemwise", &emitElemwise);
  table.add("Composite", &emitComposite);
  table.add("CAReduce", &emitCAReduce);
  table.add("Argmax", &emitArgReduce);
  table.add("CumSum", &emitCumSum);
  table.add("Argmin", &emitArgReduce);
  table.add("SumToShape", &emitSumToShape);
  table.addPattern("Elemwise", {&matchMean, &emitMean});
}

}  // namespace tscope::engine::io::onnx_export
