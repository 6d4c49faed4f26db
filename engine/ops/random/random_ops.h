#pragma once
// Random sampling ops with an explicit generator state, so a run is reproducible from its seed:
//   RandomUniform{dtype, ndim}(state, d0..d{ndim-1}, low, high)  -> (new_state, sample in [low,
//   high)) RandomNormal{dtype, ndim}(state, d0..d{ndim-1}, mean, std)   -> (new_state, sample)
//   RandomIntegers{dtype, ndim}(state, d0..d{ndim-1}, low, high) -> (new_state, sample in [low,
//   high))
// The dims are 0-d int64 variables (the sample's shape); low/high/mean/std are 0-d numbers.
//
// Note [Random state]: the state is an int64 tensor of shape (2,): [key, counter]. The generator is
// Philox4x32-10 (engine/ops/random/philox.h): block i of a draw is philox(counter + i, key), 128
// bits. A draw consumes whole blocks and returns [key, counter + blocks used], so the next draw
// from the new state never reuses a block. Element j of a sample always takes the same words of the
// stream (uniform float32: 1 word; float64: 2; normal: 4 words per pair via Box-Muller in double;
// integers: 2 words), so a sample's values do not depend on how it is computed. Gradients: none wrt
// the state and the dims (disconnected); undefined wrt the distribution parameters (write low +
// (high - low) * uniform(0, 1) for a reparameterised gradient).

#include "engine/graph/op.h"

#include <source_location>

namespace tscope::engine {

class OpRegistry;

enum class RandomDistribution : std::uint8_t { Uniform, Normal, Integers };

class RandomOp final : public Op {
 public:
  // dtype: a float dtype for Uniform and Normal, an integer dtype for Integers; ndim: 0..32.
  RandomOp(RandomDistribution distribution, DType dtype, int ndim);

  RandomDistribution distribution() const { return m_distribution; }
  DType dtype() const { return m_dtype; }
  int ndim() const { return m_ndim; }

  // "RandomUniform", "RandomNormal", "RandomIntegers".
  std::string name() const override;
  nlohmann::json props() const override;  // {"dtype": "float32", "ndim": 2}
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  OpCost cost(const Apply& node, std::span<const Shape> inputShapes) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  std::optional<std::vector<VarPtr>> pushforward(const Apply& node,
                                                 std::span<const VarPtr> tangents) const override;
  std::vector<std::vector<bool>> connectionPattern(const Apply& node) const override;

  static OpPtr fromProps(RandomDistribution distribution, const nlohmann::json& props);

  // Note [Random state]: the Philox blocks a draw of n elements consumes (the state's counter
  // advances by this many). The CUDA kernel advances the state by the same count.
  std::uint64_t blocksFor(std::int64_t n) const;

 private:
  RandomDistribution m_distribution;
  DType m_dtype;
  int m_ndim;
};

// The initial state for a seed: [mixSeed(seed), 0].
Tensor randomState(std::uint64_t seed);

// Each returns {new_state, sample}. dims: 0-d int64 variables; the parameters: 0-d variables.
std::vector<VarPtr> randomUniform(const VarPtr& state, const std::vector<VarPtr>& dims,
                                  const VarPtr& low, const VarPtr& high,
                                  DType dtype = DType::Float32,
                                  std::source_location site = std::source_location::current());
std::vector<VarPtr> randomNormal(const VarPtr& state, const std::vector<VarPtr>& dims,
                                 const VarPtr& mean, const VarPtr& std,
                                 DType dtype = DType::Float32,
                                 std::source_location site = std::source_location::current());
std::vector<VarPtr> randomIntegers(const VarPtr& state, const std::vector<VarPtr>& dims,
                                   const VarPtr& low, const VarPtr& high,
                                   DType dtype = DType::Int64,
                                   std::source_location site = std::source_location::current());

void registerRandomOps(OpRegistry& registry);

}  // namespace tscope::engine
