#include "engine/ops/random/random_stream.h"

#include "engine/ops/basic.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/random/philox.h"
#include "engine/ops/random/random_ops.h"
#include "engine/tensor/tensor.h"

#include <stdexcept>

namespace tscope::engine {

namespace {

// The seed of draw k of a stream: the stream's seed spread out, stepped by a Weyl constant so that
// draws get distinct keys (randomState mixes again).
Tensor drawState(std::uint64_t seed, std::size_t k) {
  return randomState(philox::mixSeed(seed) + 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(k));
}

ShapeExpr constantShape(const std::vector<std::int64_t>& shape) {
  ShapeExpr out;
  for (std::int64_t d : shape) {
    if (d < 0)
      throw std::invalid_argument("RandomStream: negative size " + std::to_string(d) +
                                  " in the sample shape");
    out.push_back(constantInt(d));
  }
  return out;
}

}  // namespace

RandomStream::RandomStream(std::uint64_t seed) : m_seed(seed) {}

VarPtr RandomStream::draw(int distribution, const ShapeExpr& shape, const VarPtr& a,
                          const VarPtr& b, DType dtype, std::source_location site) {
  const auto d = static_cast<RandomDistribution>(distribution);
  // Build the node before registering the state, so a refused draw leaves the stream unchanged.
  const std::size_t k = m_states.size();
  auto state = SharedVariable::create(drawState(m_seed, k), "rng_state_" + std::to_string(k),
                                      std::nullopt, site);
  std::vector<VarPtr> out;
  switch (d) {
    case RandomDistribution::Uniform:
      out = randomUniform(state, shape, a, b, dtype, site);
      break;
    case RandomDistribution::Normal:
      out = randomNormal(state, shape, a, b, dtype, site);
      break;
    case RandomDistribution::Integers:
      out = randomIntegers(state, shape, a, b, dtype, site);
      break;
  }
  m_states.push_back(state);
  m_updates.push_back(Update{state, out[0]});
  return out[1];
}

VarPtr RandomStream::uniform(const std::vector<std::int64_t>& shape, double low, double high,
                             DType dtype, std::source_location site) {
  return uniform(constantShape(shape), low, high, dtype, site);
}

VarPtr RandomStream::uniform(const ShapeExpr& shape, double low, double high, DType dtype,
                             std::source_location site) {
  return draw(static_cast<int>(RandomDistribution::Uniform), shape,
              constant(low, DType::Float64, site), constant(high, DType::Float64, site), dtype,
              site);
}

VarPtr RandomStream::normal(const std::vector<std::int64_t>& shape, double mean, double std,
                            DType dtype, std::source_location site) {
  return normal(constantShape(shape), mean, std, dtype, site);
}

VarPtr RandomStream::normal(const ShapeExpr& shape, double mean, double std, DType dtype,
                            std::source_location site) {
  return draw(static_cast<int>(RandomDistribution::Normal), shape,
              constant(mean, DType::Float64, site), constant(std, DType::Float64, site), dtype,
              site);
}

VarPtr RandomStream::integers(const std::vector<std::int64_t>& shape, std::int64_t low,
                              std::int64_t high, DType dtype, std::source_location site) {
  return integers(constantShape(shape), low, high, dtype, site);
}

VarPtr RandomStream::integers(const ShapeExpr& shape, std::int64_t low, std::int64_t high,
                              DType dtype, std::source_location site) {
  return draw(static_cast<int>(RandomDistribution::Integers), shape, constantInt(low, site),
              constantInt(high, site), dtype, site);
}

VarPtr RandomStream::dropout(const VarPtr& x, double p, std::source_location site) {
  if (!(p >= 0.0 && p < 1.0))
    throw std::invalid_argument(
        "RandomStream::dropout: the drop probability must be in [0, 1), found " +
        std::to_string(p));
  if (p == 0.0) return x;
  const DType dtype = x->type().dtype();
  if (!isFloat(dtype))
    throw std::invalid_argument("RandomStream::dropout: expected a float tensor, found " +
                                x->type().str());
  const VarPtr u = uniform(shapeOf(x, site), 0.0, 1.0, dtype, site);
  const VarPtr mask = cast(lt(u, constant(1.0 - p, dtype, site), site), dtype, site);
  return trueDiv(mul(x, mask, site), constant(1.0 - p, dtype, site), site);
}

std::vector<std::shared_ptr<SharedVariable>> RandomStream::states() const {
  return m_states;
}

void RandomStream::seed(std::uint64_t seed) {
  m_seed = seed;
  for (std::size_t k = 0; k < m_states.size(); ++k) m_states[k]->setValue(drawState(seed, k));
}

}  // namespace tscope::engine
