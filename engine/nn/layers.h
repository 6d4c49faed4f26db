#pragma once
// The dense, embedding, normalization, activation and dropout layers, with PyTorch's parameter
// names, shapes and default initialization, so a PyTorch state_dict loads into them:
//   Linear(in, out)         weight (out, in), bias (out); y = x weight^T + bias over the last axis
//   Embedding(n, dim)       weight (n, dim); y = weight[idx], idx int64 of any rank -> idx.shape +
//   (dim) LayerNorm(shape)        weight, bias of `shape`: normalizes over the trailing len(shape)
//   axes ReLU, GELU              GELU: exact (erf) or PyTorch's approximate="tanh" Dropout(p) Note
//   [Build mode] (module.h): inverted dropout in train mode, one
//                           generator state per call (an update), the identity in eval mode

#include "engine/nn/module.h"
#include "engine/ops/random/random_stream.h"

namespace tscope::engine::nn {

class Linear final : public Module {
 public:
  Linear(std::int64_t inFeatures, std::int64_t outFeatures, bool bias = true);
  std::shared_ptr<SharedVariable> weight, bias;  // bias null without one

 protected:
  std::vector<VarPtr> forward(const std::vector<VarPtr>& inputs) override;
  std::string extraRepr() const override;

 private:
  std::int64_t m_in, m_out;
};

class Embedding final : public Module {
 public:
  Embedding(std::int64_t numEmbeddings, std::int64_t embeddingDim);
  std::shared_ptr<SharedVariable> weight;

 protected:
  std::vector<VarPtr> forward(const std::vector<VarPtr>& inputs) override;
  std::string extraRepr() const override;

 private:
  std::int64_t m_num, m_dim;
};

class LayerNorm final : public Module {
 public:
  explicit LayerNorm(std::vector<std::int64_t> normalizedShape, double eps = 1e-5,
                     bool elementwiseAffine = true);
  std::shared_ptr<SharedVariable> weight, bias;  // null without the affine part

 protected:
  std::vector<VarPtr> forward(const std::vector<VarPtr>& inputs) override;
  std::string extraRepr() const override;

 private:
  std::vector<std::int64_t> m_shape;
  double m_eps;
};

class ReLU final : public Module {
 public:
  ReLU() : Module("ReLU") {}

 protected:
  std::vector<VarPtr> forward(const std::vector<VarPtr>& inputs) override;
};

class GELU final : public Module {
 public:
  enum class Approximate { None, Tanh };
  explicit GELU(Approximate approximate = Approximate::None)
      : Module("GELU"), m_approximate(approximate) {}

 protected:
  std::vector<VarPtr> forward(const std::vector<VarPtr>& inputs) override;
  std::string extraRepr() const override;

 private:
  Approximate m_approximate;
};

class Dropout final : public Module {
 public:
  // p in [0, 1); throws std::invalid_argument otherwise. The generator is seeded from the nn
  // generator (init.h).
  explicit Dropout(double p = 0.5);
  double p() const { return m_p; }

 protected:
  std::vector<VarPtr> forward(const std::vector<VarPtr>& inputs) override;
  std::string extraRepr() const override;

 private:
  double m_p;
  RandomStream m_rng;
};

// x weight^T (+ bias) over x's last axis, the product of every Linear-like layer (Linear, the
// projections of MultiheadAttention, the recurrent layers' input products).
VarPtr linear(const VarPtr& x, const VarPtr& weight, const VarPtr& bias);

}  // namespace tscope::engine::nn
