#include "engine/graph/variable.h"

#include "engine/graph/apply.h"
#include "engine/graph/errors.h"
#include "engine/graph/op.h"
#include "engine/graph/shared_epoch.h"

#include <atomic>

namespace tscope::engine {

Variable::Variable(TensorType type, Kind kind, std::string name)
    : m_kind(kind), m_type(std::move(type)), m_name(std::move(name)), m_scope(currentScope()) {}

Variable::~Variable() = default;

VarPtr Variable::create(TensorType type, std::string name, std::source_location site) {
  VarPtr var(new Variable(std::move(type), Kind::Regular, std::move(name)));
  var->m_site = SourceSite::from(site);
  return var;
}

void Variable::presetId(std::int64_t id) {
  if (m_fgraph)
    throw GraphError("presetId: variable '" + displayName() + "' is already in a graph");
  m_id = id;
}

void Variable::setTestValue(const Tensor& value) {
  std::string what =
      "test value of " + (m_name.empty() ? std::string("variable") : "'" + m_name + "'");
  m_testValue = m_type.filter(value, what);
}

std::string Variable::displayName() const {
  if (!m_name.empty()) return m_name;
  if (m_owner) {
    std::string out = m_owner->op().str();
    if (m_owner->nOutputs() > 1) out += "." + std::to_string(m_index);
    return out;
  }
  return m_type.shortStr();
}

void Variable::copyMetadataFrom(const Variable& other) {
  m_scope = other.m_scope;
  m_site = other.m_site;
  m_testValue = other.m_testValue;
  m_id = other.m_id;
}

VarPtr Variable::cloneDetached() const {
  VarPtr copy(new Variable(m_type, m_kind, m_name));
  copy->copyMetadataFrom(*this);
  return copy;
}

Constant::Constant(Tensor value, std::string name)
    : Variable(TensorType::ofValue(value), Kind::Constant, std::move(name)),
      m_value(std::move(value)) {}

std::shared_ptr<Constant> Constant::create(Tensor value, std::string name,
                                           std::source_location site) {
  if (!value.defined()) throw TypeError("Constant: the value is undefined");
  // A constant owns its value: later writes to the caller's tensor must not change the graph.
  std::shared_ptr<Constant> c(new Constant(value.clone(), std::move(name)));
  c->setSite(SourceSite::from(site));
  return c;
}

std::shared_ptr<Constant> Constant::adopt(Tensor value, std::string name) {
  if (!value.defined()) throw TypeError("Constant: the value is undefined");
  return std::shared_ptr<Constant>(new Constant(std::move(value), std::move(name)));
}

VarPtr Constant::cloneDetached() const {
  std::shared_ptr<Constant> copy(new Constant(m_value, name()));
  copy->copyMetadataFrom(*this);
  return copy;
}

SharedVariable::SharedVariable(TensorType type, std::shared_ptr<Tensor> value, std::string name)
    : Variable(std::move(type), Kind::Shared, std::move(name)), m_value(std::move(value)) {}

std::shared_ptr<SharedVariable> SharedVariable::create(Tensor value, std::string name,
                                                       std::optional<TensorType> type,
                                                       std::source_location site) {
  TensorType t = type ? *type : TensorType::ofValue(value);
  Tensor filtered = t.filter(value, "value of shared variable '" + name + "'");
  std::shared_ptr<SharedVariable> s(new SharedVariable(
      std::move(t), std::make_shared<Tensor>(filtered.clone()), std::move(name)));
  s->setSite(SourceSite::from(site));
  return s;
}

namespace {
std::atomic<std::uint64_t> g_sharedEpoch{1};
}  // namespace

std::uint64_t sharedValueEpoch() {
  return g_sharedEpoch.load(std::memory_order_acquire);
}

std::shared_ptr<SharedVariable> SharedVariable::adopt(Tensor value, std::string name,
                                                      std::optional<TensorType> type) {
  TensorType t = type ? *type : TensorType::ofValue(value);
  Tensor filtered = t.filter(value, "value of shared variable '" + name + "'");
  return std::shared_ptr<SharedVariable>(new SharedVariable(
      std::move(t), std::make_shared<Tensor>(std::move(filtered)), std::move(name)));
}

void SharedVariable::setValue(const Tensor& value) {
  *m_value = type().filter(value, "new value of shared variable '" + name() + "'").clone();
  g_sharedEpoch.fetch_add(1, std::memory_order_acq_rel);
}

void SharedVariable::setValueBorrowed(Tensor value) {
  Tensor filtered = type().filter(value, "new value of shared variable '" + name() + "'");
  *m_value = filtered.sharesStorageWith(value) ? std::move(value) : std::move(filtered);
  g_sharedEpoch.fetch_add(1, std::memory_order_acq_rel);  // perhaps written in place
}

VarPtr SharedVariable::cloneDetached() const {
  std::shared_ptr<SharedVariable> copy(new SharedVariable(type(), m_value, name()));
  copy->copyMetadataFrom(*this);
  return copy;
}

}  // namespace tscope::engine
