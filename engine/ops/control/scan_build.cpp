// Building a Scan (scan(), Note [Scan layout] in scan.h) and reading one from a file's props.
#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/graph/traversal.h"
#include "engine/io/graph_json.h"
#include "engine/ops/basic.h"
#include "engine/ops/control/scan.h"
#include "engine/ops/control/scan_internal.h"
#include "engine/ops/register_ops.h"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace tscope::engine {

namespace {

std::string describe(const Variable& v) {
  std::string s = v.name().empty() ? v.type().str() : "'" + v.name() + "' (" + v.type().str() + ")";
  if (!v.site().empty()) s += ", created at " + v.site().str();
  return s;
}

TensorType rowType(const TensorType& t) {
  std::vector<std::int64_t> shape(t.shape().begin() + 1, t.shape().end());
  return TensorType(t.dtype(), std::move(shape), t.device());
}

bool sameKind(const TensorType& a, const TensorType& b) {
  return a.dtype() == b.dtype() && a.ndim() == b.ndim() && a.device() == b.device() &&
         a.isCompatibleWith(b);
}

}  // namespace

// ---- Building (Note [Scan layout]) --------------------------------------------------------------

std::vector<VarPtr> scan(const ScanFn& fn, const std::vector<ScanSequence>& sequences,
                         const std::vector<ScanOutputInfo>& outputsInfo,
                         const std::vector<VarPtr>& nonSequences, ScanSteps nSteps,
                         int truncateGradient, const ScanOptions& options,
                         std::source_location site) {
  return buildScan(fn, sequences, outputsInfo, nonSequences, std::move(nSteps), truncateGradient,
                   options, site, {});
}

std::vector<VarPtr> buildScan(const ScanFn& fn, const std::vector<ScanSequence>& sequences,
                              const std::vector<ScanOutputInfo>& outputsInfo,
                              const std::vector<VarPtr>& nonSequences, ScanSteps nSteps,
                              int truncateGradient, const ScanOptions& options,
                              std::source_location site, const std::vector<Scan::Store>& stores) {
  const std::string op = "Scan{" + options.label + "}";
  if (!fn) throw GraphError(op + ": the body function is empty");
  if (outputsInfo.empty()) throw GraphError(op + ": outputsInfo is empty; expected an output");
  if (truncateGradient == 0 || truncateGradient < -1)
    throw GraphError(op + ": truncateGradient is " + std::to_string(truncateGradient) +
                     "; expected -1 (the whole sequence) or a number of steps > 0");
  Scan::Layout layout;
  layout.truncateGradient = truncateGradient;
  layout.outStore = stores;
  std::vector<VarPtr> nodeInputs;
  // nSteps.
  if (nSteps.var) {
    const TensorType& t = nSteps.var->type();
    if (t.ndim() != 0 || !isInteger(t.dtype()))
      throw TypeError(op + ": nSteps " + describe(*nSteps.var) + " must be a 0-d integer variable");
    nodeInputs.push_back(nSteps.var);
  } else if (nSteps.value) {
    if (*nSteps.value < 0)
      throw GraphError(op + ": nSteps is " + std::to_string(*nSteps.value) +
                       "; expected a number of steps >= 0");
    nodeInputs.push_back(constantInt(*nSteps.value));
  } else {
    if (sequences.empty())
      throw GraphError(op + ": no sequences and no nSteps; give the number of steps");
    nodeInputs.push_back(constantInt(-1));
  }
  std::unordered_map<const Variable*, VarPtr> map;  // outer (or fresh) -> inner
  std::vector<VarPtr> args;                         // the fresh inner inputs, in body order
  for (std::size_t i = 0; i < sequences.size(); ++i) {
    const ScanSequence& seq = sequences[i];
    const std::string what = "sequence " + std::to_string(i);
    if (!seq.input) throw GraphError(op + ": " + what + " is null");
    if (seq.input->type().ndim() == 0)
      throw TypeError(op + ": " + what + " " + describe(*seq.input) +
                      " is 0-d; a sequence needs a leading axis to iterate over");
    checkScanTaps(op, seq.taps, what, false);
    layout.seqTaps.push_back(seq.taps);
    nodeInputs.push_back(seq.input);
    const std::string base =
        seq.input->name().empty() ? "x" + std::to_string(i) : seq.input->name();
    for (int d : seq.taps) {
      const std::string name =
          base + "[t" + (d == 0 ? "" : (d > 0 ? "+" : "") + std::to_string(d)) + "]";
      args.push_back(Variable::create(rowType(seq.input->type()), name));
    }
  }
  for (std::size_t o = 0; o < outputsInfo.size(); ++o) {
    const ScanOutputInfo& info = outputsInfo[o];
    const std::string what = "output " + std::to_string(o);
    if (!info.initial) {
      layout.outTaps.emplace_back();
      continue;
    }
    checkScanTaps(op, info.taps, what, true);
    const TensorType& t = info.initial->type();
    const bool stateInit = info.taps == std::vector<int>{-1};
    const int rows = -*std::min_element(info.taps.begin(), info.taps.end());
    if (!stateInit) {
      if (t.ndim() == 0)
        throw TypeError(op + ": the initial value of " + what + " " + describe(*info.initial) +
                        " is 0-d; taps " + scanTapsText(info.taps) + " need " +
                        std::to_string(rows) + " leading rows (the oldest first)");
      if (t.isDimKnown(0) && t.shape()[0] != rows)
        throw TypeError(op + ": the initial value of " + what + " " + describe(*info.initial) +
                        " has " + std::to_string(t.shape()[0]) + " leading rows; taps " +
                        scanTapsText(info.taps) + " need " + std::to_string(rows));
    }
    layout.outTaps.push_back(info.taps);
    const TensorType state = stateInit ? t : rowType(t);
    const std::string base =
        info.initial->name().empty() ? "out" + std::to_string(o) : info.initial->name();
    for (int d : info.taps)
      args.push_back(Variable::create(state, base + "[t" + std::to_string(d) + "]"));
  }
  for (std::size_t o = 0; o < outputsInfo.size(); ++o)
    if (outputsInfo[o].initial) nodeInputs.push_back(outputsInfo[o].initial);
  for (const VarPtr& v : args) map.emplace(v.get(), v);
  std::vector<VarPtr> nonSeqInner;
  for (std::size_t k = 0; k < nonSequences.size(); ++k) {
    const VarPtr& w = nonSequences[k];
    if (!w) throw GraphError(op + ": non-sequence " + std::to_string(k) + " is null");
    VarPtr inner = Variable::create(w->type(), w->name());
    nonSeqInner.push_back(inner);
    args.push_back(inner);
    map.emplace(inner.get(), inner);
    map.emplace(w.get(), inner);  // a body that uses the outer variable directly
    nodeInputs.push_back(w);
  }
  std::vector<VarPtr> outs = fn(args);
  if (outs.size() != outputsInfo.size())
    throw GraphError(op + ": the body returned " + std::to_string(outs.size()) +
                     " values; expected one per outputsInfo entry (" +
                     std::to_string(outputsInfo.size()) + ")");
  for (std::size_t o = 0; o < outs.size(); ++o)
    if (!outs[o]) throw GraphError(op + ": the body's output " + std::to_string(o) + " is null");
  // The body: every node between the inner inputs (and the variables it uses) and the outputs,
  // rebuilt on inner variables; other free and shared variables become non-sequences.
  std::vector<VarPtr> implicitInner;
  auto innerFor = [&](const VarPtr& in, const Apply* user) -> VarPtr {
    if (auto it = map.find(in.get()); it != map.end()) return it->second;
    if (in->kind() == Variable::Kind::Constant) return in;
    if (options.strict)
      throw GraphError(op + ": the body uses " + describe(*in) +
                       (user ? " (input of " + user->op().str() + ")" : std::string()) +
                       ", which is not a sequence, an initial value or a non-sequence (strict "
                       "mode: pass it as a non-sequence)");
    VarPtr inner = Variable::create(in->type(), in->name());
    map.emplace(in.get(), inner);
    implicitInner.push_back(inner);
    nodeInputs.push_back(in);
    return inner;
  };
  for (Apply* node :
       ancestorNodes(outs, [&](const Variable& v) { return map.count(&v) > 0 || (!v.owner()); })) {
    std::vector<VarPtr> ins;
    for (const VarPtr& in : node->inputs()) ins.push_back(innerFor(in, node));
    std::vector<TensorType> types = node->op().outputTypes(ins);
    ApplyPtr copy = Apply::create(node->opPtr(), std::move(ins), std::move(types), node->site());
    copy->setScope(node->scope());
    for (int o = 0; o < node->nOutputs(); ++o) {
      copy->outputRef(o).setName(node->outputRef(o).name());
      map.emplace(&node->outputRef(o), copy->output(o));
    }
  }
  std::vector<VarPtr> innerOuts;
  for (const VarPtr& v : outs) innerOuts.push_back(innerFor(v, nullptr));
  args.insert(args.end(), implicitInner.begin(), implicitInner.end());
  layout.nNonSeqs = static_cast<int>(nonSequences.size() + implicitInner.size());
  // Output types against the initial values, with the scan and the argument named.
  {
    std::size_t p = 0;
    for (const auto& taps : layout.seqTaps) p += taps.size();
    for (std::size_t o = 0; o < outputsInfo.size(); ++o) {
      if (!outputsInfo[o].initial) continue;
      const TensorType& state = args[p]->type();
      const TensorType& got = innerOuts[o]->type();
      if (!sameKind(got, state))
        throw TypeError(op + ": the body's output " + std::to_string(o) + " is " + got.str() +
                        " but its initial value (outputsInfo[" + std::to_string(o) + "].initial " +
                        describe(*outputsInfo[o].initial) + ") gives states of type " +
                        state.str() + "; expected the same dtype and shape");
      p += outputsInfo[o].taps.size();
    }
  }
  auto body = std::make_shared<FunctionGraph>(args, innerOuts);
  for (Variable* v : body->variables()) v->clearTestValue();
  auto scanOp = std::make_shared<const Scan>(std::move(body), std::move(layout), options.label);
  return scanOp->makeNode(std::move(nodeInputs), site)->outputs();
}

// ---- Files --------------------------------------------------------------------------------------

OpPtr Scan::fromProps(const nlohmann::json& props) {
  const char* expected =
      "Scan: expected props {\"label\": string, \"body\": GRAPH, \"seq_taps\": [[int]], "
      "\"out_taps\": [[int] | null], \"out_last\": [bool], \"n_nonseqs\": int, "
      "\"truncate_gradient\": int}";
  static const std::set<std::string> keys{"label",    "body",      "seq_taps",         "out_taps",
                                          "out_last", "n_nonseqs", "truncate_gradient"};
  if (!props.is_object())
    throw std::invalid_argument(std::string(expected) + ", found " + props.type_name());
  for (const auto& [key, value] : props.items())
    if (!keys.count(key))
      throw std::invalid_argument("Scan: unknown prop \"" + key + "\"; " + expected);
  for (const std::string& key : keys)
    if (!props.contains(key))
      throw std::invalid_argument("Scan: missing prop \"" + key + "\"; " + expected);
  try {
    const std::string label = props["label"].get<std::string>();
    Layout layout;
    layout.seqTaps = props["seq_taps"].get<std::vector<std::vector<int>>>();
    for (const auto& t : props["out_taps"])
      layout.outTaps.push_back(t.is_null() ? std::vector<int>{} : t.get<std::vector<int>>());
    for (const auto& l : props["out_last"])
      layout.outStore.push_back(l.get<bool>() ? Store::Last : Store::All);
    layout.nNonSeqs = props["n_nonseqs"].get<int>();
    layout.truncateGradient = props["truncate_gradient"].get<int>();
    std::shared_ptr<const FunctionGraph> body =
        io::graphFromJson(props["body"], defaultOpRegistry(), "Scan{" + label + "} prop \"body\"");
    return std::make_shared<const Scan>(std::move(body), std::move(layout), label);
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception& e) {
    throw std::invalid_argument(std::string("Scan: ") + e.what());
  }
}

void registerScanOps(OpRegistry& registry) {
  registry.add("Scan", &Scan::fromProps);
}

}  // namespace tscope::engine
