#pragma once
// The transfer ops the GPU placement phase inserts where a value crosses between host and device
// (engine/rewrite/rules/gpu_placement.h), Theano's GpuFromHost / HostFromGpu. The viewer draws
// them red (visualizers/model/palette.cpp).
//   GpuFromHost(x)  x on the CPU -> the same values in device memory (TensorType device cuda)
//   HostFromGpu(y)  y on the device -> the same values on the CPU
// perform copies through the DeviceMemory the CUDA backend registered (engine/tensor/
// device_memory.h) and throws a one-line error where none is; the backend also registers them as
// its kernels, so the linker runs them on the device's stream.

#include "engine/graph/op.h"

#include <source_location>

namespace tscope::engine {

class OpRegistry;

// One class for both directions: the device the output lives on is the only difference.
class TransferOp : public Op {
 public:
  explicit TransferOp(Device to) : m_to(to) {}
  Device to() const { return m_to; }
  Device from() const { return m_to == Device::Cpu ? Device::Cuda : Device::Cpu; }

  // Input: a tensor on from(); output: the same type on to().
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  OpCost cost(const Apply& node, std::span<const Shape> inputShapes) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  // The gradient goes back the other way.
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;

 private:
  Device m_to;
};

class GpuFromHost final : public TransferOp {
 public:
  GpuFromHost() : TransferOp(Device::Cuda) {}
  std::string name() const override { return "GpuFromHost"; }
};

class HostFromGpu final : public TransferOp {
 public:
  HostFromGpu() : TransferOp(Device::Cpu) {}
  std::string name() const override { return "HostFromGpu"; }
};

// Is op one of the two transfers?
bool isTransfer(const Op& op);

VarPtr gpuFromHost(const VarPtr& x, std::source_location site = std::source_location::current());
VarPtr hostFromGpu(const VarPtr& x, std::source_location site = std::source_location::current());

void registerTransferOps(OpRegistry& registry);

}  // namespace tscope::engine
