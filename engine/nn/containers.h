#pragma once
// Module containers, as in PyTorch: Sequential (calls its children in order, each one's outputs
// the next one's inputs), ModuleList (children "0", "1", ... by index) and ModuleDict (children by
// name). ModuleList and ModuleDict only hold modules: calling one throws, as in PyTorch.
//
//   auto features = std::make_shared<nn::Sequential>(std::vector<nn::ModulePtr>{
//       std::make_shared<nn::Conv2d>(3, 16, 3), std::make_shared<nn::ReLU>()});
//   VarPtr y = (*features)(x);   // nodes scoped "0" and "1" (under the Sequential's own name)

#include "engine/nn/module.h"

namespace tscope::engine::nn {

class Sequential final : public Module {
 public:
  Sequential() : Module("Sequential") {}
  explicit Sequential(const std::vector<ModulePtr>& modules);
  // Adds a child named by its position ("3").
  void append(ModulePtr module);
  std::size_t size() const { return namedChildren().size(); }
  ModulePtr operator[](std::size_t i) const;

 protected:
  std::vector<VarPtr> forward(const std::vector<VarPtr>& inputs) override;
};

class ModuleList final : public Module {
 public:
  ModuleList() : Module("ModuleList") {}
  explicit ModuleList(const std::vector<ModulePtr>& modules);
  void append(ModulePtr module);
  std::size_t size() const { return namedChildren().size(); }
  // Throws std::out_of_range naming the index and the size.
  ModulePtr operator[](std::size_t i) const;

 protected:
  std::vector<VarPtr> forward(const std::vector<VarPtr>& inputs) override;
};

class ModuleDict final : public Module {
 public:
  ModuleDict() : Module("ModuleDict") {}
  // Adds or replaces the child of that name.
  void insert(const std::string& name, ModulePtr module);
  bool contains(const std::string& name) const { return child(name) != nullptr; }
  // Throws std::out_of_range naming the key and the keys there are.
  ModulePtr at(const std::string& name) const;
  std::vector<std::string> keys() const;

 protected:
  std::vector<VarPtr> forward(const std::vector<VarPtr>& inputs) override;
};

}  // namespace tscope::engine::nn
