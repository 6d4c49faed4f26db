#include "engine/ops/transfer/transfer.h"

#include "engine/graph/apply.h"
#include "engine/graph/op_registry.h"
#include "engine/graph/variable.h"
#include "engine/tensor/device_memory.h"

namespace tscope::engine {

std::vector<TensorType> TransferOp::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 1);
  const TensorType& t = inputs[0]->type();
  if (t.device() != from())
    throwInputError(inputs, 0, "a tensor on " + std::string(deviceName(from())));
  return {TensorType(t.dtype(), t.shape(), m_to)};
}

OpCost TransferOp::cost(const Apply& node, std::span<const Shape> inputShapes) const {
  const double bytes = static_cast<double>(shapeNumel(inputShapes[0])) *
                       static_cast<double>(dtypeSize(node.input(0)->type().dtype()));
  return OpCost{.flops = 0, .bytesRead = bytes, .bytesWritten = bytes, .known = true};
}

void TransferOp::perform(const Apply& node, std::span<const Tensor* const> inputs,
                         std::span<Tensor* const> outputs) const {
  const Tensor& x = *inputs[0];
  if (x.device() != from())
    throw std::runtime_error(name() + " (node " + std::to_string(node.id()) +
                             "): expected its input on " + std::string(deviceName(from())) +
                             ", found it on " + std::string(deviceName(x.device())));
  *outputs[0] = toDevice(x, m_to);
}

std::vector<ShapeExpr> TransferOp::inferShape(const Apply&,
                                              std::span<const ShapeExpr> inputShapes) const {
  return {inputShapes[0]};
}

std::vector<Grad> TransferOp::pullback(const Apply&, std::span<const VarPtr> outputGrads) const {
  const VarPtr& g = outputGrads[0];
  if (g->type().device() == from()) return {Grad(g)};
  return {Grad(m_to == Device::Cpu ? gpuFromHost(g) : hostFromGpu(g))};
}

bool isTransfer(const Op& op) {
  return dynamic_cast<const TransferOp*>(&op) != nullptr;
}

VarPtr gpuFromHost(const VarPtr& x, std::source_location site) {
  static const auto op = std::make_shared<GpuFromHost>();
  return (*op)({x}, site);
}

VarPtr hostFromGpu(const VarPtr& x, std::source_location site) {
  static const auto op = std::make_shared<HostFromGpu>();
  return (*op)({x}, site);
}

void registerTransferOps(OpRegistry& registry) {
  registry.add("GpuFromHost",
               [](const nlohmann::json&) -> OpPtr { return std::make_shared<GpuFromHost>(); });
  registry.add("HostFromGpu",
               [](const nlohmann::json&) -> OpPtr { return std::make_shared<HostFromGpu>(); });
}

}  // namespace tscope::engine
