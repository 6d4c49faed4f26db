#pragma once
// Symbolic differentiation: reverse mode (grad, Lop) through each op's pullback, forward mode
// (Rop) through each op's pushforward or, where an op has none, the double-pullback trick;
// jacobian and hessian on top.

#include "engine/graph/op.h"
#include "engine/graph/variable.h"

#include <source_location>
#include <stdexcept>
#include <vector>

namespace tscope::engine {

// A gradient was asked for but cannot be built: disconnected input (in raise mode), undefined
// gradient reaching a requested input, a cost that is not a scalar.
class GradientError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What grad() does when a requested input does not influence the cost (Theano's
// disconnected_inputs).
enum class DisconnectedPolicy { Raise, Warn, Ignore };

struct GradOptions {
  DisconnectedPolicy disconnected = DisconnectedPolicy::Raise;
  // When true, an undefined gradient (Grad::undefined) reaching a requested input returns null for
  // that input instead of raising.
  bool allowUndefined = false;
};

// d cost / d wrt[i] for a 0-d cost. A disconnected input (policy Warn/Ignore) gets zeros of its
// type.
std::vector<VarPtr> grad(const VarPtr& cost, const std::vector<VarPtr>& wrt,
                         GradOptions options = {});
VarPtr grad(const VarPtr& cost, const VarPtr& wrt, GradOptions options = {});
// Reverse mode from given output gradients: sum_o (d f_o/d wrt_i)^T . outputGrads_o for every i.
std::vector<VarPtr> grad(const std::vector<VarPtr>& outputs, const std::vector<VarPtr>& outputGrads,
                         const std::vector<VarPtr>& wrt, GradOptions options = {});
// L-operator: eval points times the Jacobian of f with respect to wrt (the same as the grad above).
std::vector<VarPtr> Lop(const std::vector<VarPtr>& f, const std::vector<VarPtr>& wrt,
                        const std::vector<VarPtr>& evalPoints, GradOptions options = {});
// R-operator: the Jacobian of f with respect to wrt times eval points (one per wrt), one result
// per f. Uses each op's pushforward, or derives it from the pullback when an op has none.
std::vector<VarPtr> Rop(const std::vector<VarPtr>& f, const std::vector<VarPtr>& wrt,
                        const std::vector<VarPtr>& evalPoints);
// d expression / d wrt with shape expression.shape + wrt.shape; the expression's shape must be
// static (one gradient per element).
VarPtr jacobian(const VarPtr& expression, const VarPtr& wrt);
// The Hessian of a 0-d cost: jacobian(grad(cost, wrt), wrt).
VarPtr hessian(const VarPtr& cost, const VarPtr& wrt);

}  // namespace tscope::engine
