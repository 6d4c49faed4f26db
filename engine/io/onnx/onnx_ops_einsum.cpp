// ONNX's Einsum (torch.einsum), lowered at import time onto the engine's ops (Note [Einsum
// lowering]) so the optimizer sees ordinary transposes, sums and matrix products.

#include "engine/io/onnx/onnx_ops_common.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/shape.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace tscope::engine::io::onnx_import {

namespace {

// A label is a letter's character code, or kEllipsisLabel + k for the k-th axis of the
// broadcast ellipsis (counted from its left), so sorting puts letters in ASCII order.
constexpr int kEllipsisLabel = 256;

using Labels = std::vector<int>;

std::string labelText(int label) {
  if (label >= kEllipsisLabel) return "... axis " + std::to_string(label - kEllipsisLabel);
  return std::string("'") + static_cast<char>(label) + "'";
}

// One subscript term as written: its letters, and where its "..." stands (npos when absent).
struct Term {
  std::string letters;
  std::size_t ellipsisAt = std::string::npos;
};

Term parseTerm(const NodeContext& ctx, const std::string& text, const std::string& what,
               const std::string& equation) {
  Term term;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '.') {
      if (text.compare(i, 3, "...") != 0 || term.ellipsisAt != std::string::npos)
        ctx.fail("expected at most one \"...\" and letters in " + what + " of equation '" +
                 equation + "', found '" + text + "'");
      term.ellipsisAt = term.letters.size();
      i += 3;
      continue;
    }
    if (!std::isalpha(static_cast<unsigned char>(c)))
      ctx.fail("expected letters (and one \"...\") in " + what + " of equation '" + equation +
               "', found '" + std::string(1, c) + "' in '" + text + "'");
    term.letters += c;
    ++i;
  }
  return term;
}

// The labels of a term whose ellipsis covers `ellipsisRank` axes, right-aligned in a broadcast
// ellipsis of `broadcastRank` axes.
Labels termLabels(const Term& term, int ellipsisRank, int broadcastRank) {
  Labels out;
  for (std::size_t i = 0; i <= term.letters.size(); ++i) {
    if (i == term.ellipsisAt)
      for (int k = 0; k < ellipsisRank; ++k)
        out.push_back(kEllipsisLabel + broadcastRank - ellipsisRank + k);
    if (i < term.letters.size()) out.push_back(static_cast<unsigned char>(term.letters[i]));
  }
  return out;
}

struct Spec {
  std::vector<Labels> inputs;
  Labels output;
};

// Note [Einsum equations]: "term,term,...->term", spaces ignored; a term holds letters and at
// most one "...", which stands for the operand's axes the letters leave over; the ellipses of the
// operands broadcast together right-aligned, as numpy's do. Without "->" the output is the
// ellipsis axes, then the letters that occur exactly once in the whole equation in ASCII order
// (numpy's implicit mode, so "ii" is a trace and "ij,jk" a matrix product).
Spec parseEquation(const NodeContext& ctx, std::string equation) {
  std::erase(equation, ' ');
  const std::size_t arrow = equation.find("->");
  if (arrow != std::string::npos && equation.find("->", arrow + 2) != std::string::npos)
    ctx.fail("expected at most one \"->\" in equation '" + equation + "'");
  const std::string lhs = equation.substr(0, arrow);
  std::vector<std::string> texts;
  for (std::size_t start = 0;;) {
    const std::size_t comma = lhs.find(',', start);
    texts.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (static_cast<int>(texts.size()) != ctx.nInputs())
    ctx.fail("expected one subscript term per input (" + std::to_string(ctx.nInputs()) +
             ") in equation '" + equation + "', found " + std::to_string(texts.size()));

  Spec spec;
  std::vector<Term> terms;
  std::vector<int> ellipsisRanks;
  int broadcastRank = 0;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const std::string what = "term " + std::to_string(i);
    terms.push_back(parseTerm(ctx, texts[i], what, equation));
    const int rank = ctx.rank(static_cast<int>(i));
    const int letters = static_cast<int>(terms[i].letters.size());
    const bool ellipsis = terms[i].ellipsisAt != std::string::npos;
    if (ellipsis ? letters > rank : letters != rank)
      ctx.fail("expected " + what + " '" + texts[i] + "' of equation '" + equation +
               "' to name the " + std::to_string(rank) + " axes of input " + std::to_string(i) +
               " " + ctx.input(static_cast<int>(i))->type().str() + ", found " +
               std::to_string(letters) + " letters" + (ellipsis ? " and \"...\"" : ""));
    ellipsisRanks.push_back(ellipsis ? rank - letters : 0);
    broadcastRank = std::max(broadcastRank, ellipsisRanks.back());
  }
  std::map<int, int> occurrences;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    spec.inputs.push_back(termLabels(terms[i], ellipsisRanks[i], broadcastRank));
    for (int label : spec.inputs.back()) ++occurrences[label];
  }

  if (arrow == std::string::npos) {
    for (int k = 0; k < broadcastRank; ++k) spec.output.push_back(kEllipsisLabel + k);
    for (const auto& [label, count] : occurrences)
      if (count == 1 && label < kEllipsisLabel) spec.output.push_back(label);
    std::sort(spec.output.begin(), spec.output.end(), [](int a, int b) {
      return (a >= kEllipsisLabel) != (b >= kEllipsisLabel) ? a >= kEllipsisLabel : a < b;
    });
    return spec;
  }
  const std::string rhs = equation.substr(arrow + 2);
  const Term out = parseTerm(ctx, rhs, "the output", equation);
  spec.output = termLabels(out, broadcastRank, broadcastRank);
  std::set<int> seen;
  for (int label : spec.output) {
    if (!seen.insert(label).second)
      ctx.fail("expected distinct output subscripts in equation '" + equation + "', found " +
               labelText(label) + " twice");
    if (label < kEllipsisLabel && !occurrences.count(label))
      ctx.fail("expected output subscripts that occur in an input term of equation '" + equation +
               "', found " + labelText(label) + " in the output only");
  }
  return spec;
}

// An operand in the middle of the lowering: a variable and the label of each of its axes.
struct Operand {
  VarPtr x;
  Labels labels;
};

bool contains(const Labels& labels, int label) {
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

int position(const Labels& labels, int label) {
  return static_cast<int>(std::find(labels.begin(), labels.end(), label) - labels.begin());
}

// x with its axes reordered to `order` (labels of x); no node when the order is x's.
Operand permuted(const Operand& a, const Labels& order) {
  if (order == a.labels) return a;
  std::vector<int> perm;
  for (int label : order) perm.push_back(position(a.labels, label));
  return {transpose(a.x, perm), order};
}

// a summed over the axes labelled `labels` (in a's dtype: integer einsums stay integer).
Operand summedOver(const Operand& a, const std::set<int>& labels) {
  Axes axes;
  Labels rest;
  for (std::size_t i = 0; i < a.labels.size(); ++i) {
    if (labels.count(a.labels[i]))
      axes.push_back(static_cast<int>(i));
    else
      rest.push_back(a.labels[i]);
  }
  if (axes.empty()) return a;
  return {sum(a.x, axes, false, a.x->type().dtype()), rest};
}

// Note [Einsum diagonals]: a label repeated within one term ("ii", "bii->bi") reads the
// diagonal: the repeated axes move to the front and one advanced index arange(n) per axis picks
// the entries where they agree, leaving one axis of that label in front.
Operand diagonals(const NodeContext& ctx, Operand a) {
  for (;;) {
    int repeated = -1;
    for (int label : a.labels)
      if (std::count(a.labels.begin(), a.labels.end(), label) > 1) {
        repeated = label;
        break;
      }
    if (repeated < 0) return a;
    std::vector<int> perm, restAxes;
    Labels rest;
    std::int64_t size = kUnknownDim;
    for (std::size_t i = 0; i < a.labels.size(); ++i) {
      if (a.labels[i] != repeated) {
        rest.push_back(a.labels[i]);
        restAxes.push_back(static_cast<int>(i));
        continue;
      }
      const std::int64_t d = a.x->type().shape()[i];
      if (d != kUnknownDim && size != kUnknownDim && d != size)
        ctx.fail("expected the axes of repeated subscript " + labelText(repeated) +
                 " to have one size, found " + std::to_string(size) + " and " + std::to_string(d) +
                 " in " + a.x->type().str());
      if (d != kUnknownDim) size = d;
      perm.push_back(static_cast<int>(i));
    }
    const std::size_t n = perm.size();
    perm.insert(perm.end(), restAxes.begin(), restAxes.end());
    const VarPtr moved = transpose(a.x, perm);
    const VarPtr range = arange(shapeI(moved, 0));
    std::vector<AdvIdx> index(n, AdvIdx(range));
    for (std::size_t i = 0; i < rest.size(); ++i) index.emplace_back(Idx::all());
    rest.insert(rest.begin(), repeated);
    a = {advancedSubtensor(moved, index), rest};
  }
}

// x with the axes from `first` on, `count` of them, merged into one (a new axis of size 1 when
// count is 0); no node when count is 1.
VarPtr mergeAxes(const VarPtr& x, int first, int count) {
  if (count == 1) return x;
  const int rank = x->type().ndim();
  if (count == 0) return expandDims(x, first);
  ShapeExpr shape;
  for (int i = 0; i < first; ++i) shape.push_back(shapeI(x, i));
  ShapeExpr merged;
  for (int i = first; i < first + count; ++i) merged.push_back(shapeI(x, i));
  shape.push_back(sizeProduct(merged));
  for (int i = first + count; i < rank; ++i) shape.push_back(shapeI(x, i));
  return reshape(x, shape);
}

// Note [Einsum lowering]: a product of two operands whose labels are unique per operand. Labels
// in both that a later operand or the output needs are batch axes; the others in both are
// contracted; the rest belong to one side. With contracted labels the operands become
// (batch, rows, k) and (batch, k, cols) (transpose, then reshape where a group is not one axis)
// and one batched Dot multiplies them; without, a broadcast multiply forms the outer product.
// The result's labels are batch, a's own, b's own.
Operand contract(Operand a, Operand b, const std::set<int>& keep) {
  auto ownUnneeded = [&](const Operand& x, const Operand& other) {
    std::set<int> out;
    for (int label : x.labels)
      if (!contains(other.labels, label) && !keep.count(label)) out.insert(label);
    return out;
  };
  a = summedOver(a, ownUnneeded(a, b));
  b = summedOver(b, ownUnneeded(b, a));
  Labels batch, contracted, aOwn, bOwn;
  for (int label : a.labels) {
    if (!contains(b.labels, label))
      aOwn.push_back(label);
    else if (keep.count(label))
      batch.push_back(label);
    else
      contracted.push_back(label);
  }
  for (int label : b.labels)
    if (!contains(a.labels, label)) bOwn.push_back(label);
  Labels result = batch;
  result.insert(result.end(), aOwn.begin(), aOwn.end());
  result.insert(result.end(), bOwn.begin(), bOwn.end());

  if (contracted.empty()) {
    std::vector<int> aOrder, bOrder;
    for (int label : batch) {
      aOrder.push_back(position(a.labels, label));
      bOrder.push_back(position(b.labels, label));
    }
    for (int label : aOwn) {
      aOrder.push_back(position(a.labels, label));
      bOrder.push_back(DimShuffle::kNewAxis);
    }
    for (int label : bOwn) {
      aOrder.push_back(DimShuffle::kNewAxis);
      bOrder.push_back(position(b.labels, label));
    }
    return {mul(dimshuffle(a.x, aOrder), dimshuffle(b.x, bOrder)), result};
  }

  const int nBatch = static_cast<int>(batch.size());
  Labels aOrder = batch, bOrder = batch;
  aOrder.insert(aOrder.end(), aOwn.begin(), aOwn.end());
  aOrder.insert(aOrder.end(), contracted.begin(), contracted.end());
  bOrder.insert(bOrder.end(), contracted.begin(), contracted.end());
  bOrder.insert(bOrder.end(), bOwn.begin(), bOwn.end());
  const Operand at = permuted(a, aOrder), bt = permuted(b, bOrder);
  const int nA = static_cast<int>(aOwn.size()), nB = static_cast<int>(bOwn.size());
  const int nK = static_cast<int>(contracted.size());
  const VarPtr lhs = mergeAxes(mergeAxes(at.x, nBatch + nA, nK), nBatch, nA);
  const VarPtr rhs = mergeAxes(mergeAxes(bt.x, nBatch + nK, nB), nBatch, nK);
  const VarPtr product = dot(lhs, rhs);
  if (nA == 1 && nB == 1) return {product, result};
  // Split the rows and columns back into a's and b's own axes.
  ShapeExpr shape;
  for (int i = 0; i < nBatch; ++i) shape.push_back(shapeI(product, i));
  for (int i = 0; i < nA; ++i) shape.push_back(shapeI(at.x, nBatch + i));
  for (int i = 0; i < nB; ++i) shape.push_back(shapeI(bt.x, nBatch + nK + i));
  return {reshape(product, shape), result};
}

// Note [Einsum broadcasting]: an axis of static size 1 whose label has another static size in
// another operand broadcasts (numpy and torch allow it for ellipsis axes and letters alike): it
// is dropped, so the other operand alone carries the label.
std::vector<Operand> dropBroadcastAxes(const NodeContext& ctx, std::vector<Operand> operands) {
  std::map<int, std::int64_t> sizes;  // label -> a static size other than 1
  for (std::size_t i = 0; i < operands.size(); ++i) {
    const Operand& op = operands[i];
    for (std::size_t k = 0; k < op.labels.size(); ++k) {
      const std::int64_t d = op.x->type().shape()[k];
      if (d == kUnknownDim || d == 1) continue;
      auto [it, fresh] = sizes.emplace(op.labels[k], d);
      if (!fresh && it->second != d)
        ctx.fail("expected subscript " + labelText(op.labels[k]) +
                 " to have one size (or 1) in every input, found " + std::to_string(it->second) +
                 " and " + std::to_string(d) + " (input " + std::to_string(i) + " " +
                 op.x->type().str() + ")");
    }
  }
  for (Operand& op : operands) {
    std::vector<int> order;
    Labels kept;
    for (std::size_t k = 0; k < op.labels.size(); ++k) {
      if (op.x->type().shape()[k] == 1 && sizes.count(op.labels[k])) continue;
      order.push_back(static_cast<int>(k));
      kept.push_back(op.labels[k]);
    }
    if (kept.size() != op.labels.size()) op = {dimshuffle(op.x, order), kept};
  }
  return operands;
}

// Note [Einsum lowering] (the whole): each operand first takes its diagonals, drops broadcast
// axes and sums the labels no other operand and not the output has; then the operands are
// multiplied pairwise from the left, each product keeping the labels a later operand or the
// output needs; the result is transposed to the output's order.
std::vector<VarPtr> convertEinsum(NodeContext& ctx) {
  if (ctx.nInputs() < 1) ctx.fail("expected at least one input, found none");
  const Spec spec = parseEquation(ctx, ctx.attrString("equation"));
  const DType dtype = ctx.input(0)->type().dtype();
  std::vector<Operand> operands;
  for (int i = 0; i < ctx.nInputs(); ++i) {
    if (ctx.input(i)->type().dtype() != dtype)
      ctx.fail("expected inputs of one dtype, found " + ctx.input(0)->type().str() +
               " and (input " + std::to_string(i) + ") " + ctx.input(i)->type().str());
    operands.push_back(diagonals(ctx, {ctx.input(i), spec.inputs[static_cast<std::size_t>(i)]}));
  }
  operands = dropBroadcastAxes(ctx, std::move(operands));
  const std::set<int> output(spec.output.begin(), spec.output.end());
  for (std::size_t i = 0; i < operands.size(); ++i) {
    std::set<int> alone;
    for (int label : operands[i].labels) {
      bool elsewhere = output.count(label) > 0;
      for (std::size_t j = 0; j < operands.size() && !elsewhere; ++j)
        elsewhere = j != i && contains(operands[j].labels, label);
      if (!elsewhere) alone.insert(label);
    }
    operands[i] = summedOver(operands[i], alone);
  }
  Operand result = operands[0];
  for (std::size_t i = 1; i < operands.size(); ++i) {
    std::set<int> keep = output;
    for (std::size_t j = i + 1; j < operands.size(); ++j)
      keep.insert(operands[j].labels.begin(), operands[j].labels.end());
    result = contract(result, operands[i], keep);
  }
  result = summedOver(result, [&] {
    std::set<int> extra;
    for (int label : result.labels)
      if (!output.count(label)) extra.insert(label);
    return extra;
  }());
  // Every output label is still carried: no step drops or sums one (Note [Einsum broadcasting]
  // keeps the label on the operand with the larger size).
  result = permuted(result, spec.output);
  if (result.x == ctx.input(0)) result.x = identity(result.x);
  return {result.x};
}

}  // namespace

void registerEinsumConverters(ConverterTable& table) {
  table.add("Einsum", &convertEinsum);
}

}  // namespace tscope::engine::io::onnx_import
