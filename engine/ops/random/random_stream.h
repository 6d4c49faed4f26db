#pragma once
// RandomStream: the user-facing way to draw random numbers in a graph (Theano's RandomStreams).
// Each draw gets its own generator state, a SharedVariable seeded from the stream's seed and the
// draw's number, and registers the update state <- new_state; pass updates() to compile() so every
// call of the function advances the states and draws new numbers:
//
//   RandomStream rng(42);
//   VarPtr noise = rng.normal({64, 10});
//   VarPtr h = rng.dropout(relu(dot(x, W)), 0.5);
//   Function f = compile({x}, {h + noise}, rng.updates());
//
// The same seed gives the same numbers in every run; different seeds (and different draws of one
// stream) give independent streams (Note [Random state] in random_ops.h).

#include "engine/compile/function.h"
#include "engine/graph/op.h"

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <source_location>
#include <vector>

namespace tscope::engine {

class RandomStream {
 public:
  explicit RandomStream(std::uint64_t seed);

  // Samples of a static shape or of a symbolic one (0-d int64 variables, e.g. shapeOf(x)).
  VarPtr uniform(const std::vector<std::int64_t>& shape, double low = 0.0, double high = 1.0,
                 DType dtype = DType::Float32,
                 std::source_location site = std::source_location::current());
  VarPtr uniform(const ShapeExpr& shape, double low = 0.0, double high = 1.0,
                 DType dtype = DType::Float32,
                 std::source_location site = std::source_location::current());
  VarPtr normal(const std::vector<std::int64_t>& shape, double mean = 0.0, double std = 1.0,
                DType dtype = DType::Float32,
                std::source_location site = std::source_location::current());
  VarPtr normal(const ShapeExpr& shape, double mean = 0.0, double std = 1.0,
                DType dtype = DType::Float32,
                std::source_location site = std::source_location::current());
  // Integers in [low, high).
  VarPtr integers(const std::vector<std::int64_t>& shape, std::int64_t low, std::int64_t high,
                  DType dtype = DType::Int64,
                  std::source_location site = std::source_location::current());
  VarPtr integers(const ShapeExpr& shape, std::int64_t low, std::int64_t high,
                  DType dtype = DType::Int64,
                  std::source_location site = std::source_location::current());
  // Braced static shapes, rng.uniform({64, 10}): without these, {50} would also read as a ShapeExpr
  // of 50 null variables.
  VarPtr uniform(std::initializer_list<std::int64_t> shape, double low = 0.0, double high = 1.0,
                 DType dtype = DType::Float32,
                 std::source_location site = std::source_location::current()) {
    return uniform(std::vector<std::int64_t>(shape), low, high, dtype, site);
  }
  VarPtr normal(std::initializer_list<std::int64_t> shape, double mean = 0.0, double std = 1.0,
                DType dtype = DType::Float32,
                std::source_location site = std::source_location::current()) {
    return normal(std::vector<std::int64_t>(shape), mean, std, dtype, site);
  }
  VarPtr integers(std::initializer_list<std::int64_t> shape, std::int64_t low, std::int64_t high,
                  DType dtype = DType::Int64,
                  std::source_location site = std::source_location::current()) {
    return integers(std::vector<std::int64_t>(shape), low, high, dtype, site);
  }
  // Inverted dropout: x * mask / (1 - p) with mask = uniform(shape(x)) < 1 - p, so the expected
  // value is x. 0 <= p < 1; p == 0 returns x. The gradient flows through x only.
  VarPtr dropout(const VarPtr& x, double p,
                 std::source_location site = std::source_location::current());

  // One update per draw (state <- new state), for compile().
  const std::vector<Update>& updates() const { return m_updates; }
  // The generator states, one per draw, in draw order.
  std::vector<std::shared_ptr<SharedVariable>> states() const;
  // Reseeds every state of this stream as if it had been created with this seed.
  void seed(std::uint64_t seed);
  std::uint64_t currentSeed() const { return m_seed; }

 private:
  VarPtr draw(int distribution, const ShapeExpr& shape, const VarPtr& a, const VarPtr& b,
              DType dtype, std::source_location site);

  std::uint64_t m_seed;
  std::vector<std::shared_ptr<SharedVariable>> m_states;
  std::vector<Update> m_updates;
};

}  // namespace tscope::engine
