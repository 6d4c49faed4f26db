#include "engine/ops/blas/dot.h"

#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/elemwise/elemwise.h"

namespace tscope::engine {

namespace {
std::string dimStr(std::int64_t d) { return d == kUnknownDim ? "?" : std::to_string(d); }
}  // namespace

std::vector<TensorType> Dot::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 2);
  const TensorType& a = inputs[0]->type();
  const TensorType& b = inputs[1]->type();
  if (a.ndim() == 0) throwInputError(inputs, 0, "a tensor of rank 1 or more (use Elemwise{mul} for scalars)");
  if (b.ndim() == 0) throwInputError(inputs, 1, "a tensor of rank 1 or more (use Elemwise{mul} for scalars)");
  if (a.dtype() == DType::Bool) throwInputError(inputs, 0, "a numeric tensor");
  if (b.dtype() == DType::Bool) throwInputError(inputs, 1, "a numeric tensor");
  if (a.device() != b.device()) throwInputError(inputs, 1, "a tensor on " + std::string(deviceName(a.device())));
  // Promote vectors to matrices as numpy does, then drop the added axes again.
  std::vector<std::int64_t> sa = a.shape(), sb = b.shape();
  bool aVector = sa.size() == 1, bVector = sb.size() == 1;
  if (aVector) sa.insert(sa.begin(), 1);
  if (bVector) sb.push_back(1);
  std::int64_t ka = sa.back(), kb = sb[sb.size() - 2];
  if (ka != kUnknownDim && kb != kUnknownDim && ka != kb)
    throw TypeError(str() + ": the inner dimensions differ: " + a.str() + " . " + b.str() + " (" + dimStr(ka) +
                    " vs " + dimStr(kb) + ")" +
                    (inputs[0]->site().empty() ? "" : "; input 0 was created at " + inputs[0]->site().str()));
  std::vector<std::int64_t> batchA(sa.begin(), sa.end() - 2), batchB(sb.begin(), sb.end() - 2);
  std::vector<std::vector<std::int64_t>> batches{batchA, batchB};
  auto batch = broadcastStaticShapes(batches);
  if (!batch) throw TypeError(str() + ": the batch dimensions cannot be broadcast: " + a.str() + " . " + b.str());
  std::vector<std::int64_t> shape = *batch;
  if (!aVector) shape.push_back(sa[sa.size() - 2]);
  if (!bVector) shape.push_back(sb.back());
  return {TensorType(promoteTypes(a.dtype(), b.dtype()), std::move(shape), a.device())};
}

OpPtr Dot::fromProps(const nlohmann::json& props) {
  if (!props.empty()) throw std::invalid_argument("Dot: takes no props, found " + props.dump());
  return std::make_shared<Dot>();
}

VarPtr dot(const VarPtr& a, const VarPtr& b, std::source_location site) {
  return std::make_shared<Dot>()->operator()({a, b}, site);
}

void registerBlasOps(OpRegistry& registry) { registry.add("Dot", &Dot::fromProps); }

}  // namespace tscope::engine
