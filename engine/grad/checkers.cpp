#include "engine/grad/checkers.h"

#include "engine/compile/function.h"
#include "engine/grad/grad.h"
#include "engine/graph/config.h"
#include "engine/graph/errors.h"
#include "engine/graph/op.h"
#include "engine/graph/traversal.h"
#include "engine/ops/basic.h"
#include "engine/ops/elemwise/elemwise.h"

#include <cmath>
#include <random>
#include <sstream>
#include <unordered_map>

namespace tscope::engine {

double defaultGradStep(DType dtype) {
  switch (dtype) {
    case DType::Float16:
      return 1e-1;
    case DType::Float32:
      return 3e-4;
    default:
      return 1e-7;
  }
}

double defaultGradTolerance(DType dtype) {
  switch (dtype) {
    case DType::Float16:
      return 5e-2;
    case DType::Float32:
      return 1e-2;
    default:
      return 1e-4;
  }
}

namespace {

// Symbolic inputs typed like the points: unknown dimensions except size-1 axes, which stay
// broadcastable (as Theano's checkers type their inputs).
std::vector<VarPtr> symbolicInputs(const std::vector<Tensor>& points) {
  std::vector<VarPtr> inputs;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (!points[i].defined())
      throw CheckError("checker: point " + std::to_string(i) + " is an undefined tensor");
    std::vector<std::int64_t> shape = points[i].shape();
    for (auto& d : shape)
      if (d != 1) d = kUnknownDim;
    inputs.push_back(
        Variable::create(TensorType(points[i].dtype(), shape), "x" + std::to_string(i)));
  }
  return inputs;
}

std::vector<VarPtr> buildChecked(const GraphBuilder& build, const std::vector<VarPtr>& inputs) {
  std::vector<VarPtr> outputs = build(inputs);
  if (outputs.empty()) throw CheckError("checker: the graph builder returned no outputs");
  for (std::size_t o = 0; o < outputs.size(); ++o)
    if (!outputs[o])
      throw CheckError("checker: output " + std::to_string(o) + " of the graph builder is null");
  return outputs;
}

Tensor randomLike(const Tensor& like, DType dtype, std::mt19937_64& rng, double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(like.numel()));
  for (double& x : v) x = dist(rng);
  return Tensor::fromDoubles(dtype, like.shape(), v);
}

double dotAll(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.toDoubles(), y = b.toDoubles();
  double s = 0;
  for (std::size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}

std::string opsOf(const std::vector<VarPtr>& outputs) {
  std::string s;
  for (const VarPtr& o : outputs) {
    if (!s.empty()) s += ", ";
    s += o->owner() ? o->owner()->op().str() : o->displayName();
  }
  return s;
}

std::string indexString(const Shape& shape, std::int64_t flat) {
  std::vector<std::int64_t> idx(shape.size());
  for (std::size_t a = shape.size(); a-- > 0;) {
    idx[a] = shape[a] ? flat % shape[a] : 0;
    flat = shape[a] ? flat / shape[a] : 0;
  }
  std::string s = "[";
  for (std::size_t a = 0; a < idx.size(); ++a) s += (a ? ", " : "") + std::to_string(idx[a]);
  return s + "]";
}

}  // namespace

void verifyGrad(const GraphBuilder& build, const std::vector<Tensor>& points,
                VerifyGradOptions options) {
  std::vector<VarPtr> inputs = symbolicInputs(points);
  std::vector<VarPtr> outputs = buildChecked(build, inputs);
  Function forward = compile(inputs, outputs);
  const std::vector<Tensor> base = forward(points);

  std::vector<std::size_t> wrtIndex;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const bool held = std::find(options.constantInputs.begin(), options.constantInputs.end(),
                                static_cast<int>(i)) != options.constantInputs.end();
    if (!held && isFloat(points[i].dtype())) wrtIndex.push_back(i);
  }
  if (wrtIndex.empty())
    throw CheckError("verifyGrad: no float input to differentiate with respect to");
  std::vector<VarPtr> floatOutputs;
  std::vector<std::size_t> floatOutputIndex;
  for (std::size_t o = 0; o < outputs.size(); ++o)
    if (isFloat(outputs[o]->type().dtype())) {
      floatOutputs.push_back(outputs[o]);
      floatOutputIndex.push_back(o);
    }
  if (floatOutputs.empty())
    throw CheckError("verifyGrad: the graph has no float output (" + opsOf(outputs) + ")");

  std::mt19937_64 rng(options.seed);
  for (int test = 0; test < std::max(1, options.nTests); ++test) {
    // cost = sum_o sum(out_o * w_o), w in [0.5, 1.5) (REFERENCE.md).
    std::vector<Tensor> weights;
    std::vector<VarPtr> weightVars;
    for (std::size_t k = 0; k < floatOutputs.size(); ++k) {
      const Tensor& out = base[floatOutputIndex[k]];
      weights.push_back(randomLike(out, out.dtype(), rng, 0.5, 1.5));
      weightVars.push_back(constant(weights.back()));
    }
    auto cost = [&](const std::vector<Tensor>& values) {
      double c = 0;
      for (std::size_t k = 0; k < floatOutputs.size(); ++k)
        c += dotAll(values[floatOutputIndex[k]], weights[k]);
      return c;
    };
    std::vector<VarPtr> wrt;
    for (std::size_t i : wrtIndex) wrt.push_back(inputs[i]);
    GradOptions gopts;
    gopts.disconnected = DisconnectedPolicy::Ignore;
    std::vector<VarPtr> grads = grad(floatOutputs, weightVars, wrt, gopts);
    Function gradFn = compile(inputs, grads);
    const std::vector<Tensor> analytic = gradFn(points);
    const double c0 = cost(base);

    for (std::size_t w = 0; w < wrtIndex.size(); ++w) {
      const std::size_t i = wrtIndex[w];
      const DType dtype = points[i].dtype();
      const double eps = options.eps > 0 ? options.eps : defaultGradStep(dtype);
      const double absTol = options.absTol > 0 ? options.absTol : defaultGradTolerance(dtype);
      const double relTol = options.relTol > 0 ? options.relTol : defaultGradTolerance(dtype);
      if (analytic[w].shape() != points[i].shape())
        throw CheckError("verifyGrad: the gradient with respect to input " + std::to_string(i) +
                         " has shape " + shapeToString(analytic[w].shape()) +
                         ", expected the input's shape " + shapeToString(points[i].shape()) + " (" +
                         opsOf(outputs) + ")");
      const std::vector<double> a = analytic[w].toDoubles();
      std::vector<Tensor> moved = points;
      moved[i] = points[i].clone();
      const std::vector<double> original = points[i].toDoubles();
      Tensor flat = moved[i].reshape({moved[i].numel()});
      double worstAbs = 0, worstRel = 0;
      std::int64_t worst = -1;
      double worstA = 0, worstN = 0;
      for (std::int64_t j = 0; j < points[i].numel(); ++j) {
        flat.set({j}, original[static_cast<std::size_t>(j)] + eps);
        const double n = (cost(forward(moved)) - c0) / eps;
        flat.set({j}, original[static_cast<std::size_t>(j)]);
        const double aj = a[static_cast<std::size_t>(j)];
        const double absErr = std::abs(aj - n);
        const double denom = std::abs(aj) + std::abs(n);
        const double relErr = denom > 0 ? absErr / denom : 0.0;
        if (std::isnan(aj) != std::isnan(n) || (absErr > absTol && relErr > relTol)) {
          if (worst < 0 || absErr > worstAbs || std::isnan(absErr)) {
            worst = j;
            worstAbs = absErr;
            worstRel = relErr;
            worstA = aj;
            worstN = n;
          }
        }
      }
      if (worst >= 0) {
        std::ostringstream msg;
        msg << "verifyGrad: the gradient of " << opsOf(outputs) << " with respect to input " << i
            << " (" << dtypeName(dtype) << " " << shapeToString(points[i].shape())
            << ") disagrees with finite differences at " << indexString(points[i].shape(), worst)
            << ": analytic " << worstA << ", numeric " << worstN << " (absolute error " << worstAbs
            << ", relative error " << worstRel << "; tolerance " << absTol << " absolute and "
            << relTol << " relative, step " << eps << ")";
        throw CheckError(msg.str());
      }
    }
  }
}

std::vector<ShapeExpr> inferShapesImpl(const std::vector<VarPtr>& outputs, bool strict) {
  std::unordered_map<const Variable*, ShapeExpr> shapes;
  auto shapeFor = [&](const VarPtr& v) -> const ShapeExpr& {
    auto found = shapes.find(v.get());
    if (found != shapes.end()) return found->second;
    return shapes.emplace(v.get(), shapeOf(v)).first->second;
  };
  for (Apply* node : ancestorNodes(outputs)) {
    std::vector<ShapeExpr> in;
    for (const VarPtr& v : node->inputs()) in.push_back(shapeFor(v));
    std::vector<ShapeExpr> out;
    try {
      out = node->op().inferShape(*node, in);
    } catch (const NotImplementedError& e) {
      if (strict) throw CheckError(std::string("inferShape: ") + e.what());
      for (int o = 0; o < node->nOutputs(); ++o) out.push_back(shapeOf(node->output(o)));
    }
    if (out.size() != static_cast<std::size_t>(node->nOutputs()))
      throw CheckError("inferShape: " + node->op().str() + " returned " +
                       std::to_string(out.size()) + " shapes for " +
                       std::to_string(node->nOutputs()) + " outputs");
    for (int o = 0; o < node->nOutputs(); ++o) {
      ShapeExpr& s = out[static_cast<std::size_t>(o)];
      if (static_cast<int>(s.size()) != node->outputRef(o).type().ndim())
        throw CheckError("inferShape: " + node->op().str() + " returned " +
                         std::to_string(s.size()) + " dimensions for output " + std::to_string(o) +
                         " of type " + node->outputRef(o).type().str());
      for (std::size_t d = 0; d < s.size(); ++d)
        if (!s[d] || s[d]->type().ndim() != 0 || !isInteger(s[d]->type().dtype()))
          throw CheckError("inferShape: " + node->op().str() + " returned a dimension " +
                           std::to_string(d) + " for output " + std::to_string(o) +
                           " that is not an integer scalar" +
                           (s[d] ? " (" + s[d]->type().str() + ")" : std::string(" (null)")));
      shapes[&node->outputRef(o)] = std::move(s);
    }
  }
  std::vector<ShapeExpr> result;
  for (const VarPtr& o : outputs) result.push_back(shapeFor(o));
  return result;
}

std::vector<ShapeExpr> inferShapes(const std::vector<VarPtr>& outputs) {
  return inferShapesImpl(outputs, false);
}

void checkInferShape(const GraphBuilder& build, const std::vector<Tensor>& points,
                     InferShapeOptions options) {
  if (options.warnOnSquareInputs) {
    for (std::size_t i = 0; i < points.size(); ++i) {
      const Shape& s = points[i].shape();
      for (std::size_t a = 0; a < s.size(); ++a)
        for (std::size_t b = a + 1; b < s.size(); ++b)
          if (s[a] == s[b] && s[a] > 1) {
            warn("checkInferShape: input " + std::to_string(i) + " has shape " + shapeToString(s) +
                 " with two equal dimensions, which can hide a shape bug (a transposed dimension); "
                 "use distinct sizes");
            a = s.size();
            break;
          }
    }
  }
  std::vector<VarPtr> inputs = symbolicInputs(points);
  std::vector<VarPtr> outputs = buildChecked(build, inputs);
  std::vector<ShapeExpr> shapes = inferShapesImpl(outputs, true);
  std::vector<VarPtr> dims;
  for (const ShapeExpr& s : shapes) dims.insert(dims.end(), s.begin(), s.end());
  Function shapeFn = compile(inputs, dims);
  for (const Apply* node : shapeFn.graph().nodes())
    for (const VarPtr& out : outputs)
      if (out->owner() && !dynamic_cast<const Elemwise*>(&out->owner()->op()) &&
          node->op().equals(out->owner()->op()))
        throw CheckError(
            "checkInferShape: the shape graph of " + out->owner()->op().str() +
            " computes the op itself; inferShape must work from the input shapes alone");
  const std::vector<Tensor> dimValues = shapeFn(points);
  Function valueFn = compile(inputs, outputs);
  const std::vector<Tensor> values = valueFn(points);
  std::size_t k = 0;
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    Shape inferred;
    for (std::size_t d = 0; d < shapes[o].size(); ++d)
      inferred.push_back(static_cast<std::int64_t>(dimValues[k++].item()));
    const std::string op =
        outputs[o]->owner() ? outputs[o]->owner()->op().str() : outputs[o]->displayName();
    if (inferred != values[o].shape())
      throw CheckError("checkInferShape: " + op + " output " + std::to_string(o) +
                       ": inferShape gives " + shapeToString(inferred) +
                       ", the computed value has shape " + shapeToString(values[o].shape()));
    const auto& declared = outputs[o]->type().shape();
    for (std::size_t d = 0; d < declared.size(); ++d)
      if (declared[d] != kUnknownDim && declared[d] != values[o].shape()[d])
        throw CheckError("checkInferShape: " + op + " output " + std::to_string(o) +
                         ": the static type " + outputs[o]->type().str() +
                         " disagrees with the computed shape " + shapeToString(values[o].shape()));
  }
}

void checkRopLop(const GraphBuilder& build, const std::vector<Tensor>& points, std::uint64_t seed,
                 double tolerance) {
  std::vector<VarPtr> inputs = symbolicInputs(points);
  std::vector<VarPtr> outputs = buildChecked(build, inputs);
  std::vector<VarPtr> wrt, tangents, directionVars;
  std::vector<std::size_t> wrtIndex;
  DType widest = DType::Float16;
  for (std::size_t i = 0; i < points.size(); ++i)
    if (isFloat(points[i].dtype())) {
      wrtIndex.push_back(i);
      wrt.push_back(inputs[i]);
      directionVars.push_back(Variable::create(inputs[i]->type(), "v" + std::to_string(i)));
      widest = promoteTypes(widest, points[i].dtype());
    }
  if (wrt.empty()) throw CheckError("checkRopLop: no float input");
  const double tol = tolerance > 0 ? tolerance : defaultGradTolerance(widest);
  Function forward = compile(inputs, outputs);
  const std::vector<Tensor> base = forward(points);

  std::mt19937_64 rng(seed);
  std::vector<Tensor> v;
  for (std::size_t k = 0; k < wrtIndex.size(); ++k)
    v.push_back(randomLike(points[wrtIndex[k]], points[wrtIndex[k]].dtype(), rng, -1.0, 1.0));
  std::vector<VarPtr> uVars;
  std::vector<Tensor> u;
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    uVars.push_back(Variable::create(outputs[o]->type(), "u" + std::to_string(o)));
    u.push_back(randomLike(base[o], base[o].dtype(), rng, -1.0, 1.0));
  }
  // J v
  std::vector<VarPtr> jv = Rop(outputs, wrt, directionVars);
  std::vector<VarPtr> ropInputs = inputs;
  ropInputs.insert(ropInputs.end(), directionVars.begin(), directionVars.end());
  std::vector<Tensor> ropArgs = points;
  ropArgs.insert(ropArgs.end(), v.begin(), v.end());
  const std::vector<Tensor> jvValues = compile(ropInputs, jv)(ropArgs);
  // u^T J
  GradOptions gopts;
  gopts.disconnected = DisconnectedPolicy::Ignore;
  std::vector<VarPtr> jtu = Lop(outputs, wrt, uVars, gopts);
  std::vector<VarPtr> lopInputs = inputs;
  lopInputs.insert(lopInputs.end(), uVars.begin(), uVars.end());
  std::vector<Tensor> lopArgs = points;
  lopArgs.insert(lopArgs.end(), u.begin(), u.end());
  const std::vector<Tensor> jtuValues = compile(lopInputs, jtu)(lopArgs);

  const std::string ops = opsOf(outputs);
  // Rop against central finite differences along v.
  const double eps = std::sqrt(defaultGradStep(widest)) * (widest == DType::Float64 ? 1.0 : 0.1);
  std::vector<Tensor> plus = points, minus = points;
  for (std::size_t k = 0; k < wrtIndex.size(); ++k) {
    const std::size_t i = wrtIndex[k];
    const std::vector<double> x = points[i].toDoubles(), dv = v[k].toDoubles();
    std::vector<double> xp(x.size()), xm(x.size());
    for (std::size_t j = 0; j < x.size(); ++j) {
      xp[j] = x[j] + eps * dv[j];
      xm[j] = x[j] - eps * dv[j];
    }
    plus[i] = Tensor::fromDoubles(points[i].dtype(), points[i].shape(), xp);
    minus[i] = Tensor::fromDoubles(points[i].dtype(), points[i].shape(), xm);
  }
  const std::vector<Tensor> fp = forward(plus), fm = forward(minus);
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    if (!isFloat(base[o].dtype())) continue;
    if (jvValues[o].shape() != base[o].shape())
      throw CheckError("checkRopLop: Rop of " + ops + " output " + std::to_string(o) +
                       " has shape " + shapeToString(jvValues[o].shape()) + ", expected " +
                       shapeToString(base[o].shape()));
    const std::vector<double> a = jvValues[o].toDoubles(), p = fp[o].toDoubles(),
                              m = fm[o].toDoubles();
    for (std::size_t j = 0; j < a.size(); ++j) {
      const double n = (p[j] - m[j]) / (2 * eps);
      const double absErr = std::abs(a[j] - n);
      const double denom = std::abs(a[j]) + std::abs(n);
      if (absErr > tol && (denom == 0 || absErr / denom > tol))
        throw CheckError("checkRopLop: Rop of " + ops + " output " + std::to_string(o) + " at " +
                         indexString(base[o].shape(), static_cast<std::int64_t>(j)) + " is " +
                         std::to_string(a[j]) + "; central finite differences give " +
                         std::to_string(n));
    }
  }
  // <u, J v> == <J^T u, v>
  double lhs = 0, rhs = 0;
  for (std::size_t o = 0; o < outputs.size(); ++o)
    if (isFloat(base[o].dtype())) lhs += dotAll(u[o], jvValues[o]);
  for (std::size_t k = 0; k < wrtIndex.size(); ++k) {
    rhs += dotAll(jtuValues[k], v[k]);
  }
  const double err = std::abs(lhs - rhs);
  if (err > tol * std::max({1.0, std::abs(lhs), std::abs(rhs)}))
    throw CheckError("checkRopLop: Rop and Lop of " + ops + " disagree: <u, J v> = " +
                     std::to_string(lhs) + ", <J^T u, v> = " + std::to_string(rhs));
}

}  // namespace tscope::engine
