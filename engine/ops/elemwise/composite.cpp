// Composite: the op's facts (props, types, shapes, gradients) and the expansion back into the
// unfused Elemwise chain. The block interpreter is in composite_kernel.cpp.

#include "engine/ops/elemwise/composite.h"

#include "engine/grad/grad.h"
#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/elemwise/elemwise.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace tscope::engine {

namespace {

std::string programKey(std::size_t j) {
  return "\"program\"[" + std::to_string(j) + "]";
}

[[noreturn]] void badProps(const std::string& what) {
  throw std::invalid_argument("Composite: " + what);
}

}  // namespace

Composite::Composite(std::vector<DType> inputDTypes, std::vector<CompositeInstruction> program,
                     std::vector<int> outputs, std::map<int, int> inplace)
    : m_inputDTypes(std::move(inputDTypes)),
      m_program(std::move(program)),
      m_outputs(std::move(outputs)),
      m_inplace(std::move(inplace)) {
  // The messages name the props keys: the registry reports them for bad props.
  const std::size_t nIn = m_inputDTypes.size();
  if (nIn == 0) badProps("\"inputs\" is empty; a Composite needs at least one input");
  if (m_program.empty())
    badProps("\"program\" is empty; a Composite needs at least one instruction");
  if (m_outputs.empty()) badProps("\"outputs\" is empty; a Composite needs at least one output");
  m_registerDTypes = m_inputDTypes;
  m_registerDTypes.reserve(nIn + m_program.size());
  std::vector<DType> argDTypes;
  for (std::size_t j = 0; j < m_program.size(); ++j) {
    const CompositeInstruction& ins = m_program[j];
    const ScalarOpInfo& info = scalarOpInfo(ins.op);
    const std::size_t defined = nIn + j;
    if (info.arity >= 0 && ins.args.size() != static_cast<std::size_t>(info.arity))
      badProps(programKey(j) + "[\"args\"]: " + std::string(info.name) + " takes " +
               std::to_string(info.arity) + " argument" + (info.arity == 1 ? "" : "s") +
               ", found " + std::to_string(ins.args.size()));
    if (info.arity < 0 && ins.args.size() < 2)
      badProps(programKey(j) + "[\"args\"]: " + std::string(info.name) +
               " takes two or more arguments, found " + std::to_string(ins.args.size()));
    argDTypes.clear();
    for (std::size_t k = 0; k < ins.args.size(); ++k) {
      const int r = ins.args[k];
      if (r < 0 || static_cast<std::size_t>(r) >= defined)
        badProps(programKey(j) + "[\"args\"][" + std::to_string(k) + "] is register " +
                 std::to_string(r) + "; expected a register defined before instruction " +
                 std::to_string(j) + " (0.." + std::to_string(defined - 1) + ")");
      argDTypes.push_back(m_registerDTypes[static_cast<std::size_t>(r)]);
    }
    m_registerDTypes.push_back(scalarOpOutputDType(ins.op, argDTypes, ins.target));
  }
  for (std::size_t o = 0; o < m_outputs.size(); ++o) {
    const int r = m_outputs[o];
    if (r < static_cast<int>(nIn) || r >= nRegisters())
      badProps("\"outputs\"[" + std::to_string(o) + "] is register " + std::to_string(r) +
               "; expected an instruction's register (" + std::to_string(nIn) + ".." +
               std::to_string(nRegisters() - 1) + ")");
  }
  std::vector<bool> destroyed(nIn, false);
  for (const auto& [o, i] : m_inplace) {
    if (o < 0 || o >= static_cast<int>(m_outputs.size()))
      badProps("\"inplace\": output " + std::to_string(o) + " does not exist (the program has " +
               std::to_string(m_outputs.size()) + " outputs)");
    if (i < 0 || i >= static_cast<int>(nIn))
      badProps("\"inplace\": output " + std::to_string(o) + " writes into input " +
               std::to_string(i) + ", which does not exist (" + std::to_string(nIn) + " inputs)");
    if (destroyed[static_cast<std::size_t>(i)])
      badProps("\"inplace\": two outputs write into input " + std::to_string(i));
    destroyed[static_cast<std::size_t>(i)] = true;
    const DType outDType = registerDType(m_outputs[static_cast<std::size_t>(o)]);
    if (outDType != m_inputDTypes[static_cast<std::size_t>(i)])
      badProps("\"inplace\": output " + std::to_string(o) + " (" +
               std::string(dtypeName(outDType)) + ") cannot be written into input " +
               std::to_string(i) + " (" +
               std::string(dtypeName(m_inputDTypes[static_cast<std::size_t>(i)])) + ")");
  }
  // Which inputs each register reads, as a bitset over the inputs.
  const std::size_t words = (nIn + 63) / 64;
  std::vector<std::uint64_t> deps(static_cast<std::size_t>(nRegisters()) * words, 0);
  for (std::size_t i = 0; i < nIn; ++i) deps[i * words + i / 64] |= std::uint64_t{1} << (i % 64);
  for (std::size_t j = 0; j < m_program.size(); ++j)
    for (int a : m_program[j].args)
      for (std::size_t w = 0; w < words; ++w)
        deps[(nIn + j) * words + w] |= deps[static_cast<std::size_t>(a) * words + w];
  for (int r : m_outputs) {
    std::vector<int> inputs;
    for (std::size_t i = 0; i < nIn; ++i)
      if (deps[static_cast<std::size_t>(r) * words + i / 64] >> (i % 64) & 1u)
        inputs.push_back(static_cast<int>(i));
    m_outputDeps.push_back(std::move(inputs));
  }
  m_plan = buildPlan(*this);
}

OpPtr Composite::outOfPlace() const {
  return inplacePattern().empty() ? nullptr : withInplace({});
}

std::shared_ptr<const Composite> Composite::withInplace(std::map<int, int> inplace) const {
  return std::make_shared<Composite>(m_inputDTypes, m_program, m_outputs, std::move(inplace));
}

// --- Props and text
// --------------------------------------------------------------------------------

nlohmann::json Composite::props() const {
  nlohmann::json inputs = nlohmann::json::array();
  for (DType d : m_inputDTypes) inputs.push_back(dtypeName(d));
  nlohmann::json program = nlohmann::json::array();
  for (const CompositeInstruction& ins : m_program) {
    nlohmann::json i = {{"op", scalarOpInfo(ins.op).name}, {"args", ins.args}};
    if (ins.op == ScalarOp::Cast) i["dtype"] = dtypeName(ins.target);
    program.push_back(std::move(i));
  }
  nlohmann::json p = {
      {"inputs", std::move(inputs)}, {"program", std::move(program)}, {"outputs", m_outputs}};
  if (!m_inplace.empty()) {
    nlohmann::json inplace = nlohmann::json::object();
    for (const auto& [o, i] : m_inplace) inplace[std::to_string(o)] = i;
    p["inplace"] = std::move(inplace);
  }
  return p;
}

namespace {
// Past this many characters the formula ends in "...": a fused graph of a hundred ops stays
// printable, and the expansion of a shared subexpression cannot grow the text without bound.
constexpr std::size_t kMaxFormulaChars = 120;

void appendFormula(const Composite& op, int reg, std::string& out) {
  if (out.size() > kMaxFormulaChars) return;
  if (reg < op.nInputs()) {
    out += "i" + std::to_string(reg);
    return;
  }
  // Each level writes at least "op(" before descending, so the depth stays below the limit.
  const CompositeInstruction& ins = op.program()[static_cast<std::size_t>(reg - op.nInputs())];
  out += scalarOpInfo(ins.op).name;
  if (ins.op == ScalarOp::Cast) out += "{" + std::string(dtypeName(ins.target)) + "}";
  out += "(";
  for (std::size_t k = 0; k < ins.args.size(); ++k) {
    if (k) out += ", ";
    appendFormula(op, ins.args[k], out);
    if (out.size() > kMaxFormulaChars) return;
  }
  out += ")";
}
}  // namespace

std::string Composite::str() const {
  std::string formula;
  for (std::size_t o = 0; o < m_outputs.size() && formula.size() <= kMaxFormulaChars; ++o) {
    if (o) formula += ", ";
    appendFormula(*this, m_outputs[o], formula);
  }
  if (formula.size() > kMaxFormulaChars) formula = formula.substr(0, kMaxFormulaChars) + "...";
  if (!m_inplace.empty()) formula += ",inplace";
  return "Composite{" + formula + "}";
}

OpPtr Composite::fromProps(const nlohmann::json& props) {
  if (!props.is_object())
    badProps("props must be an object with \"inputs\", \"program\" and \"outputs\"");
  auto index = [](const nlohmann::json& v, const std::string& key) -> int {
    if (!v.is_number_integer() || v.get<std::int64_t>() < std::numeric_limits<int>::min() ||
        v.get<std::int64_t>() > std::numeric_limits<int>::max())
      badProps(key + " must be an integer, found " + v.dump());
    return static_cast<int>(v.get<std::int64_t>());
  };
  auto dtypeAt = [](const nlohmann::json& v, const std::string& key) -> DType {
    std::optional<DType> d = v.is_string() ? dtypeFromName(v.get<std::string>()) : std::nullopt;
    if (!d) badProps(key + " must be a dtype name such as \"float32\", found " + v.dump());
    return *d;
  };
  for (const char* key : {"inputs", "program", "outputs"})
    if (!props.contains(key) || !props[key].is_array())
      badProps(std::string("props need \"") + key + "\" (an array)");

  std::vector<DType> inputs;
  for (std::size_t i = 0; i < props["inputs"].size(); ++i)
    inputs.push_back(dtypeAt(props["inputs"][i], "\"inputs\"[" + std::to_string(i) + "]"));

  std::vector<CompositeInstruction> program;
  const nlohmann::json& p = props["program"];
  for (std::size_t j = 0; j < p.size(); ++j) {
    const nlohmann::json& ins = p[j];
    const std::string key = programKey(j);
    if (!ins.is_object())
      badProps(key + " must be an object {\"op\", \"args\"}, found " + ins.dump());
    if (!ins.contains("op") || !ins["op"].is_string())
      badProps(key + "[\"op\"] must be a scalar op name such as \"add\"");
    std::optional<ScalarOp> op = scalarOpFromName(ins["op"].get<std::string>());
    if (!op) badProps(key + "[\"op\"]: unknown scalar op \"" + ins["op"].get<std::string>() + "\"");
    if (!ins.contains("args") || !ins["args"].is_array())
      badProps(key + "[\"args\"] must be an array of registers");
    CompositeInstruction instruction{*op, {}, DType::Float32};
    for (std::size_t k = 0; k < ins["args"].size(); ++k)
      instruction.args.push_back(
          index(ins["args"][k], key + "[\"args\"][" + std::to_string(k) + "]"));
    if (*op == ScalarOp::Cast) {
      if (!ins.contains("dtype")) badProps(key + "[\"dtype\"]: cast needs its target dtype");
      instruction.target = dtypeAt(ins["dtype"], key + "[\"dtype\"]");
    }
    program.push_back(std::move(instruction));
  }

  std::vector<int> outputs;
  for (std::size_t o = 0; o < props["outputs"].size(); ++o)
    outputs.push_back(index(props["outputs"][o], "\"outputs\"[" + std::to_string(o) + "]"));

  std::map<int, int> inplace;
  if (props.contains("inplace")) {
    const nlohmann::json& ip = props["inplace"];
    if (!ip.is_object()) badProps("\"inplace\" must be an object {\"<output>\": input}");
    for (const auto& [key, value] : ip.items()) {
      int o = 0;
      try {
        std::size_t used = 0;
        o = std::stoi(key, &used);
        if (used != key.size()) throw std::invalid_argument(key);
      } catch (const std::logic_error&) {
        badProps("\"inplace\": key \"" + key + "\" must be an output index");
      }
      inplace[o] = index(value, "\"inplace\"[\"" + key + "\"]");
    }
  }
  return std::make_shared<Composite>(std::move(inputs), std::move(program), std::move(outputs),
                                     std::move(inplace));
}

// --- Types and shapes
// ------------------------------------------------------------------------------

std::vector<TensorType> Composite::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, m_inputDTypes.size());
  const Device device = inputs[0]->type().device();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const TensorType& t = inputs[i]->type();
    if (t.device() != device)
      throwInputError(inputs, static_cast<int>(i),
                      "a tensor on " + std::string(deviceName(device)));
    if (t.dtype() != m_inputDTypes[i])
      throwInputError(inputs, static_cast<int>(i),
                      "a tensor of dtype " + std::string(dtypeName(m_inputDTypes[i])));
  }
  // The static shape of every register, as the unfused chain would type it.
  std::vector<std::vector<std::int64_t>> shapes(static_cast<std::size_t>(nRegisters()));
  for (std::size_t i = 0; i < inputs.size(); ++i) shapes[i] = inputs[i]->type().shape();
  std::vector<std::vector<std::int64_t>> operands;
  for (std::size_t j = 0; j < m_program.size(); ++j) {
    operands.clear();
    for (int a : m_program[j].args) operands.push_back(shapes[static_cast<std::size_t>(a)]);
    auto shape = broadcastStaticShapes(operands);
    if (!shape) {
      std::string found;
      for (std::size_t i = 0; i < inputs.size(); ++i)
        found += (i ? ", " : "") + inputs[i]->type().str();
      throw TypeError(str() + ": instruction " + std::to_string(j) + " (" +
                      std::string(scalarOpInfo(m_program[j].op).name) +
                      ") cannot broadcast its operands; the input types are " + found);
    }
    shapes[inputs.size() + j] = std::move(*shape);
  }
  std::vector<TensorType> out;
  for (int r : m_outputs)
    out.emplace_back(registerDType(r), shapes[static_cast<std::size_t>(r)], device);
  for (const auto& [o, in] : m_inplace) {
    const TensorType& target = inputs[static_cast<std::size_t>(in)]->type();
    TensorType& t = out[static_cast<std::size_t>(o)];
    if (!t.isSubtypeOf(target) || target.ndim() != t.ndim())
      throwInputError(inputs, in,
                      "the type " + t.str() + " of output " + std::to_string(o) +
                          " to write the result in place");
    t = target;
  }
  return out;
}

std::vector<ShapeExpr> Composite::inferShape(const Apply& node,
                                             std::span<const ShapeExpr> inputShapes) const {
  std::vector<ShapeExpr> out;
  std::vector<ShapeExpr> shapes;
  std::vector<const std::vector<std::int64_t>*> staticShapes;
  for (std::size_t o = 0; o < m_outputs.size(); ++o) {
    shapes.clear();
    staticShapes.clear();
    for (int i : m_outputDeps[o]) {
      shapes.push_back(inputShapes[static_cast<std::size_t>(i)]);
      staticShapes.push_back(&node.input(i)->type().shape());
    }
    out.push_back(
        broadcastShapeExpr(node.outputRef(static_cast<int>(o)).type(), shapes, staticShapes));
  }
  return out;
}

DestroyMap Composite::destroyMap() const {
  DestroyMap m;
  for (const auto& [o, i] : m_inplace) m[o].push_back(i);
  return m;
}

std::vector<std::vector<bool>> Composite::connectionPattern(const Apply&) const {
  std::vector<std::vector<bool>> pattern(m_inputDTypes.size(),
                                         std::vector<bool>(m_outputs.size(), false));
  for (std::size_t o = 0; o < m_outputs.size(); ++o)
    for (int i : m_outputDeps[o]) pattern[static_cast<std::size_t>(i)][o] = true;
  return pattern;
}

// --- Expansion and derivatives
// ---------------------------------------------------------------------

std::vector<VarPtr> expandComposite(const Composite& op, std::span<const VarPtr> inputs) {
  if (inputs.size() != static_cast<std::size_t>(op.nInputs()))
    throw TypeError(op.str() + ": expanding needs " + std::to_string(op.nInputs()) +
                    " inputs, found " + std::to_string(inputs.size()));
  std::vector<VarPtr> regs(inputs.begin(), inputs.end());
  regs.reserve(static_cast<std::size_t>(op.nRegisters()));
  for (const CompositeInstruction& ins : op.program()) {
    std::vector<VarPtr> args;
    for (int a : ins.args) args.push_back(regs[static_cast<std::size_t>(a)]);
    regs.push_back(ins.op == ScalarOp::Cast ? cast(args[0], ins.target)
                                            : elemwise(ins.op, std::move(args)));
  }
  std::vector<VarPtr> outputs;
  for (int r : op.outputRegisters()) outputs.push_back(regs[static_cast<std::size_t>(r)]);
  return outputs;
}

std::vector<VarPtr> expandComposite(const Apply& node) {
  const auto* op = dynamic_cast<const Composite*>(&node.op());
  if (op == nullptr)
    throw TypeError("expandComposite: expected a Composite node, found " + node.op().str());
  return expandComposite(*op, node.inputs());
}

namespace {

// The inputs of node, with a repeated variable replaced by identity(variable) after its first
// position: each input position then gets its own gradient (grad() sums the gradients of one
// variable over all its uses, which would count a repeated input twice).
std::vector<VarPtr> distinctInputs(const Apply& node) {
  std::vector<VarPtr> inputs = node.inputs();
  for (std::size_t i = 1; i < inputs.size(); ++i)
    if (std::find(inputs.begin(), inputs.begin() + static_cast<std::ptrdiff_t>(i), inputs[i]) !=
        inputs.begin() + static_cast<std::ptrdiff_t>(i))
      inputs[i] = identity(inputs[i]);
  return inputs;
}

// Which inputs carry a gradient to some output in the unfused chain (Note [Elemwise gradient
// conventions]): not through an integer or bool register, switch's condition or second's shape
// operand. The others are disconnected.
std::vector<bool> gradientConnected(const Composite& op) {
  std::vector<bool> needed(static_cast<std::size_t>(op.nRegisters()), false);
  for (int r : op.outputRegisters()) needed[static_cast<std::size_t>(r)] = true;
  for (std::size_t j = op.program().size(); j-- > 0;) {
    if (!needed[static_cast<std::size_t>(op.nInputs()) + j]) continue;
    const CompositeInstruction& ins = op.program()[j];
    for (std::size_t k = 0; k < ins.args.size(); ++k) {
      if (k == 0 && (ins.op == ScalarOp::Switch || ins.op == ScalarOp::Second)) continue;
      if (isFloat(op.registerDType(ins.args[k])))
        needed[static_cast<std::size_t>(ins.args[k])] = true;
    }
  }
  needed.resize(static_cast<std::size_t>(op.nInputs()));
  return needed;
}

}  // namespace

std::vector<Grad> Composite::pullback(const Apply& node,
                                      std::span<const VarPtr> outputGrads) const {
  const std::vector<bool> connected = gradientConnected(*this);
  const std::vector<VarPtr> inputs = distinctInputs(node);
  const std::vector<VarPtr> outputs = expandComposite(*this, inputs);
  std::vector<VarPtr> wrt;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (connected[i]) wrt.push_back(inputs[i]);
  std::vector<Grad> grads(inputs.size());
  if (wrt.empty()) return grads;  // all disconnected
  GradOptions options;
  options.disconnected = DisconnectedPolicy::Ignore;
  options.allowUndefined = true;
  const std::vector<VarPtr> g =
      grad(outputs, std::vector<VarPtr>(outputGrads.begin(), outputGrads.end()), wrt, options);
  std::size_t k = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!connected[i]) continue;
    const VarPtr& value = g[k++];
    grads[i] = value ? Grad(value)
                     : Grad::undefined(str() + ": the unfused chain has no gradient for input " +
                                       std::to_string(i));
  }
  return grads;
}

std::optional<std::vector<VarPtr>> Composite::pushforward(const Apply& node,
                                                          std::span<const VarPtr> tangents) const {
  const std::vector<bool> connected = gradientConnected(*this);
  const std::vector<VarPtr> inputs = distinctInputs(node);
  std::vector<VarPtr> wrt, directions;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!tangents[i] || !connected[i]) continue;
    wrt.push_back(inputs[i]);
    directions.push_back(tangents[i]);
  }
  std::vector<VarPtr> result(m_outputs.size());
  if (wrt.empty()) return result;
  std::vector<VarPtr> jv = Rop(expandComposite(*this, inputs), wrt, directions);
  for (std::size_t o = 0; o < m_outputs.size(); ++o)
    if (isFloat(registerDType(m_outputs[o]))) result[o] = jv[o];
  return result;
}

}  // namespace tscope::engine
