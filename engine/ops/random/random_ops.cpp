#include "engine/ops/random/random_ops.h"

#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/basic.h"
#include "engine/ops/random/philox.h"
#include "engine/tensor/tensor.h"

#include <cmath>
#include <limits>
#include <numbers>
#include <type_traits>
#include <utility>

namespace tscope::engine {

namespace {

constexpr std::int64_t U = kUnknownDim;

std::string_view distributionName(RandomDistribution d) {
  switch (d) {
    case RandomDistribution::Uniform:
      return "RandomUniform";
    case RandomDistribution::Normal:
      return "RandomNormal";
    case RandomDistribution::Integers:
      break;
  }
  return "RandomIntegers";
}

bool isStateType(const TensorType& t) {
  return t.dtype() == DType::Int64 && t.ndim() == 1 && (t.shape()[0] == U || t.shape()[0] == 2);
}
bool isScalarInt64(const TensorType& t) {
  return t.dtype() == DType::Int64 && t.ndim() == 0;
}
bool isNumericScalar(const TensorType& t) {
  return t.ndim() == 0 && t.dtype() != DType::Bool;
}

// The value of a 0-d integer tensor, exactly (item() would round beyond 2^53).
std::int64_t exactInt(const Tensor& t) {
  return t.astype(DType::Int64).data<std::int64_t>()[0];
}

// 2^-24 and 2^-53: the spacing of uniforms built from 24 and 53 random bits.
constexpr double kTwoPowMinus24 = 1.0 / 16777216.0;
constexpr double kTwoPowMinus53 = 1.0 / 9007199254740992.0;

// u in [0, 1) from 53 bits of two words.
double uniform53(std::uint32_t a, std::uint32_t b) {
  const std::uint64_t bits = ((static_cast<std::uint64_t>(a) << 32) | b) >> 11;
  return static_cast<double>(bits) * kTwoPowMinus53;
}

template <class T>
void storeAs(T* out, std::int64_t i, double v) {
  if constexpr (std::is_same_v<T, Half>)
    out[i] = floatToHalf(static_cast<float>(v));
  else
    out[i] = static_cast<T>(v);
}

// The stream words for a draw: `blocks` Philox blocks starting at the counter.
std::vector<std::uint32_t> streamWords(std::uint64_t key, std::uint64_t counter,
                                       std::uint64_t blocks) {
  std::vector<std::uint32_t> words(static_cast<std::size_t>(blocks * 4));
  for (std::uint64_t b = 0; b < blocks; ++b) {
    const philox::Counter r = philox::block(key, counter + b);
    for (int j = 0; j < 4; ++j)
      words[static_cast<std::size_t>(b * 4 + static_cast<std::uint64_t>(j))] =
          r[static_cast<std::size_t>(j)];
  }
  return words;
}

}  // namespace

RandomOp::RandomOp(RandomDistribution distribution, DType dtype, int ndim)
    : m_distribution(distribution), m_dtype(dtype), m_ndim(ndim) {
  const std::string op(distributionName(distribution));
  if (ndim < 0 || ndim > 32)
    throw std::invalid_argument(op + ": ndim must be in 0..32, found " + std::to_string(ndim));
  const bool integers = distribution == RandomDistribution::Integers;
  if (integers ? !isInteger(dtype) : !isFloat(dtype))
    throw std::invalid_argument(op + ": dtype must be " + (integers ? "an integer" : "a float") +
                                " dtype, found " + std::string(dtypeName(dtype)));
}

std::string RandomOp::name() const {
  return std::string(distributionName(m_distribution));
}

nlohmann::json RandomOp::props() const {
  return {{"dtype", std::string(dtypeName(m_dtype))}, {"ndim", m_ndim}};
}

std::vector<TensorType> RandomOp::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, static_cast<std::size_t>(m_ndim) + 3);
  if (!isStateType(inputs[0]->type()))
    throwInputError(inputs, 0, "a generator state (an int64 tensor of shape (2,))");
  std::vector<std::int64_t> shape;
  for (int i = 1; i <= m_ndim; ++i) {
    if (!isScalarInt64(inputs[static_cast<std::size_t>(i)]->type()))
      throwInputError(inputs, i,
                      "the size of sample axis " + std::to_string(i - 1) + " (a 0-d int64 tensor)");
    shape.push_back(constantIntValue(inputs[static_cast<std::size_t>(i)]).value_or(U));
  }
  const bool integers = m_distribution == RandomDistribution::Integers;
  const char* const names[3][2] = {{"low", "high"}, {"mean", "std"}, {"low", "high"}};
  for (int j = 0; j < 2; ++j) {
    const int i = m_ndim + 1 + j;
    const TensorType& t = inputs[static_cast<std::size_t>(i)]->type();
    if (!isNumericScalar(t) || (integers && !isInteger(t.dtype())))
      throwInputError(inputs, i,
                      std::string("the ") + names[static_cast<int>(m_distribution)][j] +
                          (integers ? " bound (a 0-d integer tensor)" : " (a 0-d number)"));
  }
  // The new state lives where the state does; the sample where its two parameters do (both on
  // the CPU, or both on a device when the CUDA backend places the draw: its kernel reads the
  // state and the sizes on the host, Note [Host values of device nodes]).
  const Device at = inputs[static_cast<std::size_t>(m_ndim) + 1]->type().device();
  if (inputs[static_cast<std::size_t>(m_ndim) + 2]->type().device() != at)
    throwInputError(
        inputs, m_ndim + 2,
        std::string("a parameter on ") + std::string(deviceName(at)) + ", where the other one is");
  return {TensorType(DType::Int64, {2}, inputs[0]->type().device()),
          TensorType(m_dtype, std::move(shape), at)};
}

void RandomOp::perform(const Apply&, std::span<const Tensor* const> inputs,
                       std::span<Tensor* const> outputs) const {
  const Tensor& stateIn = *inputs[0];
  if (stateIn.shape() != Shape{2})
    throw std::invalid_argument(str() + ": the generator state must have shape (2,), found " +
                                shapeToString(stateIn.shape()));
  const Tensor state = stateIn.contiguous();
  const auto key = static_cast<std::uint64_t>(state.data<std::int64_t>()[0]);
  const auto counter = static_cast<std::uint64_t>(state.data<std::int64_t>()[1]);
  Shape shape;
  for (int i = 1; i <= m_ndim; ++i) {
    const std::int64_t d = exactInt(*inputs[static_cast<std::size_t>(i)]);
    if (d < 0)
      throw std::invalid_argument(str() + ": sample axis " + std::to_string(i - 1) +
                                  " has negative size " + std::to_string(d));
    shape.push_back(d);
  }
  const std::int64_t n = shapeNumel(shape);
  const Tensor& p0 = *inputs[static_cast<std::size_t>(m_ndim) + 1];
  const Tensor& p1 = *inputs[static_cast<std::size_t>(m_ndim) + 2];

  const std::uint64_t blocks = blocksFor(n);
  const std::vector<std::uint32_t> w = streamWords(key, counter, blocks);

  Tensor& sample = reuseOrAllocate(outputs[1], m_dtype, shape);
  switch (m_distribution) {
    case RandomDistribution::Uniform: {
      const double low = p0.item(), high = p1.item();
      if (!std::isfinite(low) || !std::isfinite(high) || low > high)
        throw std::invalid_argument(
            str() + ": expected finite bounds with low <= high, found low=" + std::to_string(low) +
            ", high=" + std::to_string(high));
      dispatchDType(m_dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float> ||
                      std::is_same_v<T, Half>) {
          T* out = sample.data<T>();
          const double span = high - low;
          for (std::int64_t i = 0; i < n; ++i) {
            const auto iu = static_cast<std::size_t>(i);
            double u = std::is_same_v<T, double> ? uniform53(w[2 * iu], w[2 * iu + 1])
                                                 : (w[iu] >> 8) * kTwoPowMinus24;
            double v = low + span * u;
            // Rounding low + span*u may land on high itself; the interval is half-open.
            if constexpr (std::is_same_v<T, float>) {
              if (span > 0 && static_cast<float>(v) >= static_cast<float>(high))
                v = std::nextafter(static_cast<float>(high), static_cast<float>(low));
            } else if constexpr (std::is_same_v<T, double>) {
              if (span > 0 && v >= high) v = std::nextafter(high, low);
            }
            storeAs(out, i, v);
          }
        }
      });
      break;
    }
    case RandomDistribution::Normal: {
      const double mean = p0.item(), sd = p1.item();
      if (!std::isfinite(mean) || !std::isfinite(sd) || sd < 0)
        throw std::invalid_argument(str() + ": expected a finite mean and std >= 0, found mean=" +
                                    std::to_string(mean) + ", std=" + std::to_string(sd));
      dispatchDType(m_dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float> ||
                      std::is_same_v<T, Half>) {
          T* out = sample.data<T>();
          // Box-Muller on pairs: u1 in (0, 1] keeps log finite.
          for (std::int64_t i = 0; i < n; i += 2) {
            const auto b = static_cast<std::size_t>(2 * i);  // 4 words per pair
            const double u1 = 1.0 - uniform53(w[b], w[b + 1]);
            const double u2 = uniform53(w[b + 2], w[b + 3]);
            const double r = std::sqrt(-2.0 * std::log(u1));
            const double theta = 2.0 * std::numbers::pi * u2;
            storeAs(out, i, mean + sd * r * std::cos(theta));
            if (i + 1 < n) storeAs(out, i + 1, mean + sd * r * std::sin(theta));
          }
        }
      });
      break;
    }
    case RandomDistribution::Integers: {
      const std::int64_t low = exactInt(p0), high = exactInt(p1);
      if (low >= high)
        throw std::invalid_argument(str() + ": expected low < high, found low=" +
                                    std::to_string(low) + ", high=" + std::to_string(high));
      dispatchDType(m_dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          // std::cmp_*: uint64's max() does not fit int64 (a cast made it -1 and refused every
          // uint64 range).
          if (std::cmp_less(low, std::numeric_limits<T>::min()) ||
              std::cmp_greater(high - 1, std::numeric_limits<T>::max()))
            throw std::invalid_argument(str() + ": the range [" + std::to_string(low) + ", " +
                                        std::to_string(high) + ") does not fit " +
                                        std::string(dtypeName(m_dtype)));
          T* out = sample.data<T>();
          const std::uint64_t range =
              static_cast<std::uint64_t>(high) - static_cast<std::uint64_t>(low);
          for (std::int64_t i = 0; i < n; ++i) {
            const auto iu = static_cast<std::size_t>(i);
            const std::uint64_t bits =
                (static_cast<std::uint64_t>(w[2 * iu]) << 32) | w[2 * iu + 1];
            // Lemire's multiply-shift: bits * range / 2^64, bias below range / 2^64.
            const auto offset =
                static_cast<std::uint64_t>((static_cast<unsigned __int128>(bits) * range) >> 64);
            out[i] =
                static_cast<T>(static_cast<std::int64_t>(static_cast<std::uint64_t>(low) + offset));
          }
        }
      });
      break;
    }
  }

  Tensor& newState = reuseOrAllocate(outputs[0], DType::Int64, Shape{2});
  newState.data<std::int64_t>()[0] = static_cast<std::int64_t>(key);
  newState.data<std::int64_t>()[1] = static_cast<std::int64_t>(counter + blocks);
}

std::uint64_t RandomOp::blocksFor(std::int64_t n) const {
  // Note [Random state]: words per element, then whole blocks.
  std::uint64_t words = 0;
  switch (m_distribution) {
    case RandomDistribution::Uniform:
      words = static_cast<std::uint64_t>(n) * (m_dtype == DType::Float64 ? 2 : 1);
      break;
    case RandomDistribution::Normal:
      words = 4 * ((static_cast<std::uint64_t>(n) + 1) / 2);
      break;
    case RandomDistribution::Integers:
      words = 2 * static_cast<std::uint64_t>(n);
      break;
  }
  return (words + 3) / 4;
}

std::vector<ShapeExpr> RandomOp::inferShape(const Apply& node, std::span<const ShapeExpr>) const {
  ShapeExpr sample;
  for (int i = 1; i <= m_ndim; ++i) sample.push_back(node.input(i));
  return {ShapeExpr{constantInt(2)}, sample};
}

std::vector<Grad> RandomOp::pullback(const Apply& node, std::span<const VarPtr>) const {
  std::vector<Grad> out(static_cast<std::size_t>(node.nInputs()), Grad::disconnected());
  if (m_distribution == RandomDistribution::Integers) return out;  // integer bounds
  const std::string why =
      str() +
      ": the sample has no gradient wrt its distribution parameters; write low + (high - "
      "low) * uniform(0, 1) or mean + std * normal(0, 1) for a reparameterised gradient";
  out[static_cast<std::size_t>(m_ndim) + 1] = Grad::undefined(why);
  out[static_cast<std::size_t>(m_ndim) + 2] = Grad::undefined(why);
  return out;
}

// Moving the state or the sizes moves nothing continuous; a parameter's tangent has no answer.
std::optional<std::vector<VarPtr>> RandomOp::pushforward(const Apply&,
                                                         std::span<const VarPtr> tangents) const {
  if (tangents[static_cast<std::size_t>(m_ndim) + 1] ||
      tangents[static_cast<std::size_t>(m_ndim) + 2])
    return std::nullopt;
  return std::vector<VarPtr>{nullptr, nullptr};
}

std::vector<std::vector<bool>> RandomOp::connectionPattern(const Apply& node) const {
  std::vector<std::vector<bool>> pattern(static_cast<std::size_t>(node.nInputs()), {false, true});
  pattern[0] = {true, true};  // only the state flows into the new state
  return pattern;
}

OpPtr RandomOp::fromProps(RandomDistribution distribution, const nlohmann::json& props) {
  const std::string op(distributionName(distribution));
  if (!props.is_object() || !props.contains("dtype") || !props["dtype"].is_string())
    throw std::invalid_argument(op + ": props need \"dtype\" (a dtype name)");
  auto dtype = dtypeFromName(props["dtype"].get<std::string>());
  if (!dtype) throw std::invalid_argument(op + ": unknown dtype " + props["dtype"].dump());
  if (!props.contains("ndim") || !props["ndim"].is_number_integer())
    throw std::invalid_argument(op + ": props need \"ndim\" (an integer in 0..32)");
  const auto ndim = props["ndim"].get<std::int64_t>();
  if (ndim < 0 || ndim > 32)
    throw std::invalid_argument(op + ": ndim must be in 0..32, found " + props["ndim"].dump());
  for (const auto& [k, v] : props.items())
    if (k != "dtype" && k != "ndim")
      throw std::invalid_argument(op + ": unknown prop \"" + k + "\"");
  return std::make_shared<RandomOp>(distribution, *dtype, static_cast<int>(ndim));
}

Tensor randomState(std::uint64_t seed) {
  Tensor t(DType::Int64, Shape{2});
  t.data<std::int64_t>()[0] = static_cast<std::int64_t>(philox::mixSeed(seed));
  t.data<std::int64_t>()[1] = 0;
  return t;
}

namespace {
std::vector<VarPtr> makeDraw(RandomDistribution d, const VarPtr& state,
                             const std::vector<VarPtr>& dims, const VarPtr& a, const VarPtr& b,
                             DType dtype, std::source_location site) {
  std::vector<VarPtr> inputs{state};
  inputs.insert(inputs.end(), dims.begin(), dims.end());
  inputs.push_back(a);
  inputs.push_back(b);
  auto op = std::make_shared<RandomOp>(d, dtype, static_cast<int>(dims.size()));
  return op->makeNode(std::move(inputs), site)->outputs();
}
}  // namespace

std::vector<VarPtr> randomUniform(const VarPtr& state, const std::vector<VarPtr>& dims,
                                  const VarPtr& low, const VarPtr& high, DType dtype,
                                  std::source_location site) {
  return makeDraw(RandomDistribution::Uniform, state, dims, low, high, dtype, site);
}
std::vector<VarPtr> randomNormal(const VarPtr& state, const std::vector<VarPtr>& dims,
                                 const VarPtr& mean, const VarPtr& std, DType dtype,
                                 std::source_location site) {
  return makeDraw(RandomDistribution::Normal, state, dims, mean, std, dtype, site);
}
std::vector<VarPtr> randomIntegers(const VarPtr& state, const std::vector<VarPtr>& dims,
                                   const VarPtr& low, const VarPtr& high, DType dtype,
                                   std::source_location site) {
  return makeDraw(RandomDistribution::Integers, state, dims, low, high, dtype, site);
}

void registerRandomOps(OpRegistry& registry) {
  registry.add("RandomUniform", [](const nlohmann::json& p) {
    return RandomOp::fromProps(RandomDistribution::Uniform, p);
  });
  registry.add("RandomNormal", [](const nlohmann::json& p) {
    return RandomOp::fromProps(RandomDistribution::Normal, p);
  });
  registry.add("RandomIntegers", [](const nlohmann::json& p) {
    return RandomOp::fromProps(RandomDistribution::Integers, p);
  });
}

}  // namespace tscope::engine
