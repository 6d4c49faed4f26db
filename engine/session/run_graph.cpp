#include "engine/session/run_graph.h"

#include "engine/compile/function.h"
#include "engine/graph/errors.h"
#include "engine/io/atomic_file.h"

#include <random>
#include <set>

namespace tscope::engine::session {

namespace {

// "'b' (float32 (4))", or "(unnamed, float32 (?, 8))".
std::string describe(const Variable& in) {
  return in.name().empty() ? "(unnamed, " + in.type().str() + ")"
                           : "'" + in.name() + "' (" + in.type().str() + ")";
}

Tensor randomValue(const Variable& in, std::mt19937_64& rng) {
  std::vector<std::int64_t> shape = in.type().shape();
  for (std::int64_t d : shape)
    if (d == kUnknownDim)
      throw MissingInputValue(
          "no value for input " + describe(in) +
              ": random values cannot be shaped to its unknown dimensions; give one",
          in.name(), false);
  const DType dtype = in.type().dtype();
  std::vector<double> values(static_cast<std::size_t>(shapeNumel(shape)));
  if (isFloat(dtype)) {
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    for (double& v : values) v = dist(rng);
  } else if (dtype == DType::Bool) {
    std::bernoulli_distribution dist(0.5);
    for (double& v : values) v = dist(rng) ? 1.0 : 0.0;
  } else {
    std::uniform_int_distribution<int> dist(0, 9);
    for (double& v : values) v = dist(rng);
  }
  return Tensor::fromDoubles(dtype, std::move(shape), values);
}

}  // namespace

PreparedRun prepareRun(const FunctionGraph& graph, const RunInputs& given) {
  PreparedRun run;
  std::vector<VarPtr>& inputs = run.inputs;
  std::set<std::string> names;
  std::string nameList;
  for (const VarPtr& in : graph.inputs()) {
    if (in->kind() == Variable::Kind::Shared) continue;
    inputs.push_back(in);
    nameList += (nameList.empty() ? "" : ", ") +
                (in->name().empty() ? "(unnamed " + in->type().str() + ")" : in->name());
    if (!in->name().empty() && !names.insert(in->name()).second)
      throw std::invalid_argument("the graph has two inputs named '" + in->name() +
                                  "'; values cannot be given by name");
  }
  for (const auto& [name, value] : given.byName)
    if (!names.count(name))
      throw std::invalid_argument("the graph has no input named '" + name + "'; its inputs are: " +
                                  (nameList.empty() ? std::string("none") : nameList));
  std::mt19937_64 rng(given.randomSeed.value_or(0));
  PreparedRun& result = run;
  std::vector<Tensor>& args = run.args;
  for (const VarPtr& in : inputs) {
    auto found = given.byName.find(in->name());
    if (found != given.byName.end() && !in->name().empty()) {
      try {
        args.push_back(
            in->type().filter(found->second, "the value given for input '" + in->name() + "'"));
      } catch (const TypeError& e) {
        throw std::invalid_argument(e.what());
      }
      result.inputSource.push_back("given");
    } else if (in->testValue()) {
      args.push_back(*in->testValue());
      result.inputSource.push_back("test value");
    } else if (given.randomSeed) {
      args.push_back(randomValue(*in, rng));
      result.inputSource.push_back("random");
    } else {
      throw MissingInputValue(
          "no value for input " + describe(*in) + ": give one, or use random inputs", in->name(),
          true);
    }
  }
  return run;
}

RunResult runGraph(const FunctionGraph& graph, const RunInputs& given) {
  PreparedRun run = prepareRun(graph, given);
  CompileOptions options;
  options.mode = given.mode;
  options.device = given.device;
  RunResult result;
  result.inputSource = std::move(run.inputSource);
  std::shared_ptr<debug::NanGuard> guard;
  if (given.nanGuard) {
    debug::NanGuardOptions o = *given.nanGuard;
    if (o.action == debug::NanAction::Pause) o.action = debug::NanAction::Warn;
    guard = std::make_shared<debug::NanGuard>(std::move(o));
    options.observers.push_back(guard);
  }
  if (!guard) {
    Function f = compile(run.inputs, graph.outputs(), {}, options);
    result.outputs = f(run.args);
    return result;
  }
  // Guarded, the graph's updates are compiled in as updates (not as plain outputs), so a replay
  // file (NanGuardOptions::saveFailure) runs the step as the failed call did; a raised call leaves
  // the shared values as they were. An update output's value in the result is the new value.
  std::vector<VarPtr> plainOutputs;
  std::vector<std::size_t> plainIndex;
  std::vector<Update> updates;
  const auto& mapping = graph.updateMapping();
  for (std::size_t o = 0; o < graph.outputs().size(); ++o) {
    auto up = mapping.find(o);
    if (up != mapping.end()) {
      updates.push_back({graph.inputs()[up->second], graph.outputs()[o]});
    } else {
      plainIndex.push_back(o);
      plainOutputs.push_back(graph.outputs()[o]);
    }
  }
  Function f = compile(run.inputs, plainOutputs, updates, options);
  guard->watch(f, &graph);
  auto writeReport = [&] {
    result.nanEvents = guard->events();
    if (given.reportJson.empty()) return;
    nlohmann::json events = nlohmann::json::array();
    for (const debug::NanReport& r : result.nanEvents) events.push_back(r.toJson());
    const nlohmann::json doc = {{"outcome", result.nanEvents.empty() ? "clean" : "nan"},
                                {"event_count", guard->eventCount()},
                                {"events", std::move(events)}};
    const std::string text = doc.dump(2) + "\n";
    if (auto error = io::writeFileAtomically(given.reportJson,
                                             std::as_bytes(std::span(text.data(), text.size()))))
      throw std::runtime_error("writing the NanGuard report " + given.reportJson + ": " + *error);
  };
  try {
    std::vector<Tensor> outs = f(run.args);
    result.outputs.resize(graph.outputs().size());
    for (std::size_t k = 0; k < plainIndex.size(); ++k) result.outputs[plainIndex[k]] = outs[k];
    for (const auto& [o, in] : mapping)
      result.outputs[o] = static_cast<const SharedVariable&>(*graph.inputs()[in]).value().clone();
  } catch (const debug::NanGuardError&) {
    writeReport();
    throw;
  }
  writeReport();
  return result;
}

}  // namespace tscope::engine::session
