#include "engine/compile/debug_mode.h"

#include "engine/graph/op.h"
#include "engine/graph/type.h"
#include "engine/vm/vm.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <type_traits>

namespace tscope::engine {

namespace {

constexpr std::array<std::string_view, kDebugCheckCount> kCheckNames = {
    "perform_again", "garbage_outputs", "strides", "inputs_unchanged",
    "aliasing",      "types",           "nan_inf",
};
static_assert(static_cast<std::size_t>(DebugCheck::NanInf) + 1 == kCheckNames.size());

// How many differing elements a report lists.
constexpr int kShownDifferences = 3;

template <class T>
double toDouble(T v) {
  if constexpr (std::is_same_v<T, Half>)
    return static_cast<double>(halfToFloat(v));
  else
    return static_cast<double>(v);
}
template <class T>
constexpr bool kIsFloat = std::is_floating_point_v<T> || std::is_same_v<T, Half>;

template <class T>
std::string formatValue(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (kIsFloat<T>) {
    char buf[40];
    const int digits = std::is_same_v<T, double> ? 17 : std::is_same_v<T, float> ? 9 : 5;
    std::snprintf(buf, sizeof buf, "%.*g", digits, toDouble(v));
    return buf;
  } else if constexpr (std::is_signed_v<T>) {
    return std::to_string(static_cast<long long>(v));
  } else {
    return std::to_string(static_cast<unsigned long long>(v));
  }
}

std::string shortNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string describe(const Tensor& t) {
  if (!t.defined()) return "(undefined)";
  std::string s = std::string(dtypeName(t.dtype())) + " " + shapeToString(t.shape());
  if (!t.isContiguous()) s += " strides " + shapeToString(t.strides());
  return s;
}

// "[1, 2]" for the row-major position `flat` of `shape`.
std::string indexString(std::int64_t flat, const Shape& shape) {
  std::vector<std::int64_t> index(shape.size());
  for (std::size_t a = shape.size(); a-- > 0;) {
    index[a] = shape[a] == 0 ? 0 : flat % shape[a];
    flat = shape[a] == 0 ? 0 : flat / shape[a];
  }
  std::string s = "[";
  for (std::size_t a = 0; a < index.size(); ++a) s += (a ? ", " : "") + std::to_string(index[a]);
  return s + "]";
}

struct Tolerance {
  double rtol = 0, atol = 0;
};

Tolerance toleranceFor(DType dtype, const DebugModeOptions& o) {
  switch (dtype) {
    case DType::Float64:
      return {o.rtol, o.atol};
    case DType::Float32:
      return {o.float32Rtol, o.float32Atol};
    case DType::Float16:
      return {o.float16Rtol, o.float16Atol};
    default:
      return {};  // integers and bools: exact
  }
}

// Note [DebugMode tolerances] in debug_mode.h.
template <class T>
bool elementsMatch(T expected, T found, Tolerance tol) {
  if constexpr (kIsFloat<T>) {
    const double e = toDouble(expected), f = toDouble(found);
    if (std::isnan(e) || std::isnan(f)) return std::isnan(e) && std::isnan(f);
    if (std::isinf(e) || std::isinf(f)) return e == f;
    return std::abs(e - f) <= tol.atol + tol.rtol * std::abs(e);
  } else {
    return expected == found;
  }
}

// Empty when `found` matches `expected` (same dtype and shape, elements within the tolerance);
// otherwise what differs: both descriptions, the count and the first few elements.
std::string differences(const Tensor& expected, const Tensor& found, Tolerance tol,
                        const char* expectedName, const char* foundName) {
  const std::string both = std::string(expectedName) + " " + describe(expected) + ", " + foundName +
                           " " + describe(found);
  if (!expected.defined() || !found.defined()) return both;
  if (expected.dtype() != found.dtype() || expected.shape() != found.shape()) return both;
  const Tensor e = expected.contiguous(), f = found.contiguous();
  std::int64_t count = 0;
  std::string shown;
  dispatchDType(e.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* a = e.data<T>();
    const T* b = f.data<T>();
    const std::int64_t n = e.numel();
    for (std::int64_t i = 0; i < n; ++i) {
      if (elementsMatch(a[i], b[i], tol)) continue;
      if (count < kShownDifferences)
        shown += "; " + indexString(i, e.shape()) + ": " + expectedName + " " + formatValue(a[i]) +
                 ", " + foundName + " " + formatValue(b[i]);
      ++count;
    }
  });
  if (count == 0) return {};
  return both + "; " + std::to_string(count) + " of " + std::to_string(e.numel()) +
         " elements differ" +
         (tol.rtol > 0 || tol.atol > 0
              ? " (rtol " + shortNumber(tol.rtol) + ", atol " + shortNumber(tol.atol) + ")"
              : std::string(" (exact comparison)")) +
         shown;
}

// The first NaN/Inf of a float tensor ("[2, 0] is nan; 3 of 6 elements are not finite"), or empty.
std::string nonFinite(const Tensor& t) {
  if (!t.defined() || !isFloat(t.dtype())) return {};
  const Tensor c = t.contiguous();
  std::int64_t count = 0;
  std::string first;
  dispatchDType(c.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsFloat<T>) {
      const T* p = c.data<T>();
      for (std::int64_t i = 0; i < c.numel(); ++i) {
        if (std::isfinite(toDouble(p[i]))) continue;
        if (count++ == 0) first = indexString(i, c.shape()) + " is " + formatValue(p[i]);
      }
    }
  });
  if (count == 0) return {};
  return first + "; " + std::to_string(count) + " of " + std::to_string(c.numel()) +
         " elements are not finite";
}

// Contiguous, of this dtype and shape, every byte garbage: NaN for floats (arithmetic on it stays
// NaN), 0xCD bytes for integers (MSVC's uninitialised-heap pattern, far from small values), true
// for bools (a bool byte of 0xCD would be undefined behaviour to read).
Tensor garbage(DType dtype, const Shape& shape) {
  if (isFloat(dtype)) return Tensor::full(dtype, shape, std::numeric_limits<double>::quiet_NaN());
  if (dtype == DType::Bool) return Tensor::full(dtype, shape, 1.0);
  Tensor t = Tensor::empty(dtype, shape);
  std::memset(t.rawData(), 0xCD, t.nbytes());
  return t;
}

enum class Layout { Contiguous, Strided, Transposed };

// A copy of v's values in the given layout, sharing nothing with v.
Tensor copyIn(const Tensor& v, Layout layout) {
  switch (layout) {
    case Layout::Contiguous:
      return v.clone();
    case Layout::Strided: {
      // Every other element of a garbage buffer, starting one element in: an op that reads raw
      // memory as if contiguous reads garbage.
      Tensor base = garbage(v.dtype(), {2 * v.numel() + 1});
      Strides strides = contiguousStrides(v.shape());
      for (std::int64_t& s : strides) s *= 2;
      Tensor view = base.view(v.shape(), std::move(strides), 1);
      view.copyFrom(v);
      return view;
    }
    case Layout::Transposed:
      break;
  }
  const Shape reversed(v.shape().rbegin(), v.shape().rend());
  Tensor view = Tensor::empty(v.dtype(), reversed).transpose();
  view.copyFrom(v);
  return view;
}

// Whether a layout gives some input a memory order that differs from a contiguous copy's.
bool layoutMatters(std::span<const Tensor> inputs, Layout layout) {
  for (const Tensor& t : inputs) {
    if (layout == Layout::Strided && t.numel() > 1) return true;
    if (layout == Layout::Transposed) {
      int big = 0;
      for (std::int64_t d : t.shape()) big += d > 1 ? 1 : 0;
      if (big >= 2) return true;
    }
  }
  return false;
}

// Copies of the snapshot for one re-run. An input variable the node reads twice gets one copy, so
// the re-run sees the same aliasing between its inputs as the VM's run (an in-place x + x).
std::vector<Tensor> inputCopies(const Apply& node, std::span<const Tensor> snapshot,
                                Layout layout) {
  std::vector<Tensor> copies(snapshot.size());
  for (std::size_t i = 0; i < snapshot.size(); ++i) {
    for (std::size_t j = 0; j < i && !copies[i].defined(); ++j)
      if (node.inputs()[j].get() == node.inputs()[i].get()) copies[i] = copies[j];
    if (!copies[i].defined()) copies[i] = copyIn(snapshot[i], layout);
  }
  return copies;
}

bool contains(const std::map<int, std::vector<int>>& map, int output, int input) {
  const auto it = map.find(output);
  return it != map.end() &&
         std::find(it->second.begin(), it->second.end(), input) != it->second.end();
}

std::string inputName(const Apply& node, int i) {
  return "input " + std::to_string(i) + " (" + node.input(i)->displayName() + ")";
}

std::string outputName(const Apply& node, int o) {
  return "output " + std::to_string(o) + " (" + node.outputRef(o).displayName() + ")";
}

}  // namespace

std::string_view debugCheckName(DebugCheck check) {
  return kCheckNames[static_cast<std::size_t>(check)];
}

std::string DebugModeFinding::message() const {
  std::string msg = "DebugMode check '" + std::string(debugCheckName(check)) + "' failed on " + op +
                    " (node " + std::to_string(nodeId) + ")";
  if (!site.empty()) msg += ", created at " + site;
  if (!scope.empty()) msg += ", in scope '" + scope + "'";
  return msg + ": " + detail;
}

DebugModeError::DebugModeError(DebugModeFinding finding)
    : std::runtime_error(finding.message()), m_finding(std::move(finding)) {}

DebugModeObserver::DebugModeObserver(DebugModeOptions options) : m_options(options) {}

void DebugModeObserver::reset() {
  m_node = nullptr;
  m_live.clear();
  m_snapshot.clear();
}

void DebugModeObserver::onStart(VM&) {
  reset();
  m_outer.clear();
}
void DebugModeObserver::onFinish(VM&) {
  reset();
  m_outer.clear();
}

void DebugModeObserver::beforeNode(VM&, const NodeEvent& event) {
  const Apply& node = event.node;
  // A node with an inner graph is still pending while its frame's nodes run (Note [Node events]).
  if (m_node != nullptr)
    m_outer.push_back({m_node, std::move(m_live), std::move(m_snapshot), m_skipNode});
  m_node = &node;
  m_skipNode = false;
  const auto n = static_cast<std::size_t>(node.nInputs());
  m_live.assign(n, Tensor());
  m_snapshot.assign(n, Tensor());
  for (std::size_t i = 0; i < n; ++i) {
    const Tensor* value = event.inputs[i];
    if (value == nullptr || !value->defined()) {
      // Nothing to re-run on (a lazily skipped input): the node is not checked.
      m_skipNode = true;
      return;
    }
    m_live[i] = *value;
    for (std::size_t j = 0; j < i && !m_snapshot[i].defined(); ++j)
      if (node.inputs()[j].get() == node.inputs()[i].get()) m_snapshot[i] = m_snapshot[j];
    if (!m_snapshot[i].defined()) m_snapshot[i] = value->clone();
  }
}

void DebugModeObserver::afterNode(VM&, const NodeEvent& event) {
  const Apply& node = event.node;
  const bool checkIt = m_node == &node && !m_skipNode;
  const std::size_t first = m_findings.size();
  m_firstFindingOfNode = first;
  auto resume = [&] {
    reset();
    if (!m_outer.empty()) {
      Pending& outer = m_outer.back();
      m_node = outer.node;
      m_live = std::move(outer.live);
      m_snapshot = std::move(outer.snapshot);
      m_skipNode = outer.skip;
      m_outer.pop_back();
    }
  };
  if (checkIt) {
    // Handles to the outputs live only in this scope: Note [DebugMode never touches the VM's
    // storage].
    std::vector<Tensor> vmOutputs(static_cast<std::size_t>(node.nOutputs()));
    for (int o = 0; o < node.nOutputs(); ++o)
      if (const Tensor* t = event.outputs[static_cast<std::size_t>(o)]; t && t->defined())
        vmOutputs[static_cast<std::size_t>(o)] = *t;
    try {
      checkNode(node, vmOutputs);
    } catch (...) {
      reset();
      m_outer.clear();
      throw;
    }
    ++m_nodesChecked;
  }
  resume();
  if (m_options.raise && m_findings.size() > first) throw DebugModeError(m_findings[first]);
}

void DebugModeObserver::checkNode(const Apply& node, std::span<const Tensor> vmOutputs) {
  const std::size_t nOut = vmOutputs.size();
  if (m_options.checkInputsUnchanged) checkInputsUnchanged(node);
  m_inputsFinite = true;
  if (m_options.checkNanInf)
    for (const Tensor& in : m_snapshot) m_inputsFinite = m_inputsFinite && nonFinite(in).empty();

  // Every output is in its slot in afterNode (Note [Node events]); one that is not (a lazily
  // skipped output) is checked on the fresh re-run, which is also the reference for the others.
  bool missing = false;
  for (const Tensor& t : vmOutputs) missing = missing || !t.defined();
  std::vector<Tensor> freshInputs;
  std::vector<Tensor> fresh;
  if (m_options.checkPerformAgain || missing) {
    freshInputs = inputCopies(node, m_snapshot, Layout::Contiguous);
    fresh = rerun(node, DebugCheck::PerformAgain, "a re-run with fresh outputs", freshInputs,
                  std::vector<Tensor>(nOut));
  }
  std::vector<Tensor> reference(vmOutputs.begin(), vmOutputs.end());
  for (std::size_t o = 0; o < nOut; ++o) {
    if (vmOutputs[o].defined()) {
      checkOutputStructure(node, static_cast<int>(o), m_live, vmOutputs);
    } else if (!fresh.empty()) {
      reference[o] = fresh[o];
      checkOutputStructure(node, static_cast<int>(o), freshInputs, fresh);
    }
  }
  if (m_options.checkAliasing) {
    checkOutputPairs(node, m_live, vmOutputs);
    if (missing && !fresh.empty()) checkOutputPairs(node, freshInputs, fresh);
  }
  if (m_options.checkPerformAgain && !fresh.empty())
    compareWithReference(node, DebugCheck::PerformAgain,
                         "a re-run of perform on copies of the inputs with fresh outputs",
                         reference, fresh);
  // An in-place kernel against the same computation out of place: a kernel that reads what it
  // already overwrote agrees with itself on every re-run, but not with this reference.
  if (m_options.checkPerformAgain)
    if (const OpPtr outOfPlace = node.op().outOfPlace()) {
      std::vector<Tensor> inputs = inputCopies(node, m_snapshot, Layout::Contiguous);
      const std::string what = "the out-of-place form " + outOfPlace->str();
      std::vector<Tensor> outputs = rerun(node, DebugCheck::PerformAgain, what, inputs,
                                          std::vector<Tensor>(nOut), outOfPlace.get());
      compareWithReference(node, DebugCheck::PerformAgain, what, reference, outputs);
    }

  if (m_options.checkGarbageOutputs) {
    std::vector<Tensor> prefilled(nOut);
    for (std::size_t o = 0; o < nOut; ++o)
      if (reference[o].defined())
        prefilled[o] = garbage(reference[o].dtype(), reference[o].shape());
    std::vector<Tensor> inputs = inputCopies(node, m_snapshot, Layout::Contiguous);
    // prefilled moves in, so perform holds the only handle and may reuse the buffers.
    std::vector<Tensor> outputs =
        rerun(node, DebugCheck::GarbageOutputs, "a re-run with garbage-filled output buffers",
              inputs, std::move(prefilled));
    compareWithReference(
        node, DebugCheck::GarbageOutputs,
        "a re-run of perform with output buffers pre-filled with garbage (NaN / 0xCD bytes)",
        reference, outputs);
  }
  if (m_options.checkStrides) {
    for (Layout layout : {Layout::Strided, Layout::Transposed}) {
      if (!layoutMatters(m_snapshot, layout)) continue;
      const std::string what =
          layout == Layout::Strided
              ? "a re-run of perform on strided copies of the inputs (every other element, "
                "offset 1)"
              : "a re-run of perform on copies of the inputs with their axes laid out in "
                "reverse order";
      std::vector<Tensor> inputs = inputCopies(node, m_snapshot, layout);
      std::vector<Tensor> outputs =
          rerun(node, DebugCheck::Strides, what, inputs, std::vector<Tensor>(nOut));
      compareWithReference(node, DebugCheck::Strides, what, reference, outputs);
    }
  }
}

void DebugModeObserver::checkOutputPairs(const Apply& node, std::span<const Tensor> inputs,
                                         std::span<const Tensor> outputs) {
  // Two outputs that view no input must not share storage (outputs that view the same input,
  // like Split's pieces, may overlap that input and each other).
  const ViewMap views = node.op().viewMap();
  const DestroyMap destroys = node.op().destroyMap();
  auto viewsAnInput = [&](std::size_t o) {
    for (const Tensor& in : inputs)
      if (in.defined() && outputs[o].sharesStorageWith(in)) return true;
    return views.contains(static_cast<int>(o)) || destroys.contains(static_cast<int>(o));
  };
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    if (!outputs[o].defined() || viewsAnInput(o)) continue;
    for (std::size_t p = o + 1; p < outputs.size(); ++p) {
      if (!outputs[p].defined() || viewsAnInput(p) || !outputs[o].sharesStorageWith(outputs[p]))
        continue;
      addFinding(node, DebugCheck::Aliasing, static_cast<int>(o), -1,
                 outputName(node, static_cast<int>(o)) + " and " +
                     outputName(node, static_cast<int>(p)) +
                     " share storage although neither views an input: " + describe(outputs[o]) +
                     " and " + describe(outputs[p]));
    }
  }
}

void DebugModeObserver::checkOutputStructure(const Apply& node, int o,
                                             std::span<const Tensor> inputs,
                                             std::span<const Tensor> outputs) {
  const Tensor& out = outputs[static_cast<std::size_t>(o)];
  const TensorType& type = node.outputRef(o).type();
  if (m_options.checkTypes) {
    if (!out.defined()) {
      addFinding(
          node, DebugCheck::Types, o, -1,
          outputName(node, o) + ": perform left it undefined; expected a value of " + type.str());
      return;
    }
    if (!TensorType::ofValue(out).isSubtypeOf(type))
      addFinding(node, DebugCheck::Types, o, -1,
                 outputName(node, o) + ": expected a value of " + type.str() + ", found " +
                     describe(out) + (out.device() == type.device() ? "" : " on another device"));
  }
  if (!out.defined()) return;
  if (m_options.checkAliasing) {
    const ViewMap views = node.op().viewMap();
    const DestroyMap destroys = node.op().destroyMap();
    auto declared = [&](int i) { return contains(views, o, i) || contains(destroys, o, i); };
    for (int i = 0; i < static_cast<int>(inputs.size()); ++i) {
      const Tensor& in = inputs[static_cast<std::size_t>(i)];
      if (!in.defined() || declared(i) || !out.sharesStorageWith(in)) continue;
      // An undeclared input that is the same buffer as a declared one (x read twice) is covered by
      // the declaration.
      bool covered = false;
      for (int j = 0; j < static_cast<int>(inputs.size()) && !covered; ++j)
        covered =
            j != i && declared(j) && inputs[static_cast<std::size_t>(j)].sharesStorageWith(in);
      if (covered) continue;
      addFinding(node, DebugCheck::Aliasing, o, i,
                 outputName(node, o) + " shares storage with " + inputName(node, i) +
                     ", which neither viewMap() nor destroyMap() declares for that output (an op "
                     "must copy, or "
                     "declare the view so that no later in-place op overwrites the input through "
                     "it); output " +
                     describe(out) + ", input " + describe(in));
    }
  }
  // NaN/Inf that came in is not this node's doing.
  if (m_options.checkNanInf && m_inputsFinite && isFloat(out.dtype())) {
    const std::string bad = nonFinite(out);
    if (!bad.empty())
      addFinding(node, DebugCheck::NanInf, o, -1,
                 outputName(node, o) + " " + describe(out) +
                     " holds NaN/Inf although every input is finite: " + bad);
  }
}

void DebugModeObserver::checkInputsUnchanged(const Apply& node) {
  const DestroyMap destroys = node.op().destroyMap();
  std::vector<const Variable*> destroyed;
  for (const auto& [output, ins] : destroys)
    for (int i : ins)
      if (i >= 0 && i < node.nInputs()) destroyed.push_back(node.input(i).get());
  for (int i = 0; i < node.nInputs(); ++i) {
    // Declared, or the same variable as a declared input (x + x in place).
    if (std::find(destroyed.begin(), destroyed.end(), node.input(i).get()) != destroyed.end())
      continue;
    const auto k = static_cast<std::size_t>(i);
    if (m_live[k].bitwiseEqual(m_snapshot[k])) continue;
    std::string diff = differences(m_snapshot[k], m_live[k], Tolerance{}, "before", "after");
    if (diff.empty())
      diff = describe(m_live[k]) + "; the bytes differ (a NaN payload or the sign of a zero)";
    addFinding(node, DebugCheck::InputsUnchanged, -1, i,
               inputName(node, i) +
                   " was changed by the node although destroyMap() does not declare it: " + diff);
  }
}

std::vector<Tensor> DebugModeObserver::rerun(const Apply& node, DebugCheck check,
                                             const std::string& what,
                                             std::span<const Tensor> inputs,
                                             std::vector<Tensor> outputs, const Op* op) {
  std::vector<const Tensor*> in(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) in[i] = &inputs[i];
  std::vector<Tensor*> out(outputs.size());
  for (std::size_t o = 0; o < outputs.size(); ++o) out[o] = &outputs[o];
  ++m_reruns;
  try {
    (op ? *op : node.op()).perform(node, in, out);
  } catch (const std::exception& e) {
    std::string shapes;
    for (std::size_t i = 0; i < inputs.size(); ++i) shapes += (i ? ", " : "") + describe(inputs[i]);
    addFinding(node, check, -1, -1,
               "perform threw on " + what + " although the VM's run succeeded: " + e.what() +
                   "; inputs " + shapes);
    return {};
  }
  return outputs;
}

void DebugModeObserver::compareWithReference(const Apply& node, DebugCheck check,
                                             const std::string& what,
                                             std::span<const Tensor> reference,
                                             std::span<const Tensor> outputs) {
  if (outputs.empty()) return;  // perform threw: already a finding
  for (std::size_t o = 0; o < reference.size(); ++o) {
    if (!reference[o].defined()) continue;  // nothing to compare with (the fresh run threw)
    const std::string diff =
        differences(reference[o], outputs[o], toleranceFor(reference[o].dtype(), m_options),
                    "VM's run", "re-run");
    if (!diff.empty())
      addFinding(node, check, static_cast<int>(o), -1,
                 outputName(node, static_cast<int>(o)) + " of " + what +
                     " differs from the VM's run: " + diff);
  }
}

void DebugModeObserver::addFinding(const Apply& node, DebugCheck check, int output, int input,
                                   std::string detail) {
  // One finding per check, output and input on a node: the later re-runs of a broken op would
  // repeat it.
  for (std::size_t f = m_firstFindingOfNode; f < m_findings.size(); ++f) {
    const DebugModeFinding& seen = m_findings[f];
    if (seen.nodeId == node.id() && seen.check == check && seen.output == output &&
        seen.input == input)
      return;
  }
  DebugModeFinding finding;
  finding.check = check;
  finding.nodeId = node.id();
  finding.op = node.op().str();
  if (!node.site().empty()) finding.site = node.site().str();
  finding.scope = node.scope();
  finding.output = output;
  finding.input = input;
  finding.detail = std::move(detail);
  m_findings.push_back(std::move(finding));
}

}  // namespace tscope::engine
