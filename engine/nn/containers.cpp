#include "engine/nn/containers.h"

namespace tscope::engine::nn {

namespace {

ModulePtr indexed(const Module& m, const std::string& where, std::size_t i) {
  const auto& children = m.namedChildren();
  if (i >= children.size())
    throw std::out_of_range(where + ": index " + std::to_string(i) + " out of range, size " +
                            std::to_string(children.size()));
  return children[i].second;
}

}  // namespace

Sequential::Sequential(const std::vector<ModulePtr>& modules) : Module("Sequential") {
  for (const ModulePtr& m : modules) append(m);
}

void Sequential::append(ModulePtr module) {
  registerModule(std::to_string(size()), std::move(module));
}

ModulePtr Sequential::operator[](std::size_t i) const {
  return indexed(*this, where(), i);
}

std::vector<VarPtr> Sequential::forward(const std::vector<VarPtr>& inputs) {
  std::vector<VarPtr> values = inputs;
  for (const auto& [name, m] : namedChildren()) values = m->call(values);
  return values;
}

ModuleList::ModuleList(const std::vector<ModulePtr>& modules) : Module("ModuleList") {
  for (const ModulePtr& m : modules) append(m);
}

void ModuleList::append(ModulePtr module) {
  registerModule(std::to_string(size()), std::move(module));
}

ModulePtr ModuleList::operator[](std::size_t i) const {
  return indexed(*this, where(), i);
}

std::vector<VarPtr> ModuleList::forward(const std::vector<VarPtr>&) {
  throw std::logic_error(where() +
                         ": a ModuleList holds modules and is not called; call its items");
}

void ModuleDict::insert(const std::string& name, ModulePtr module) {
  registerModule(name, std::move(module));
}

ModulePtr ModuleDict::at(const std::string& name) const {
  if (ModulePtr m = child(name)) return m;
  std::string keys;
  for (const std::string& k : this->keys()) keys += (keys.empty() ? "'" : ", '") + k + "'";
  throw std::out_of_range(where() + ": no module '" + name +
                          "' (the keys: " + (keys.empty() ? "none" : keys) + ")");
}

std::vector<std::string> ModuleDict::keys() const {
  std::vector<std::string> out;
  for (const auto& [n, m] : namedChildren()) out.push_back(n);
  return out;
}

std::vector<VarPtr> ModuleDict::forward(const std::vector<VarPtr>&) {
  throw std::logic_error(where() +
                         ": a ModuleDict holds modules and is not called; call its items");
}

}  // namespace tscope::engine::nn
