#include "engine/graph/variable.h"

#include "engine/graph/apply.h"
#include "engine/graph/errors.h"
#include "engine/graph/op.h"
#include "engine/graph/shared_epoch.h"
#include "engine/tensor/device_memory.h"

#include <atomic>
#include <mutex>

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

// Note [Device-resident shared variables] (engine/rewrite/rules/gpu_placement.h): one value per
// shared variable, kept by all its clones and device twins, in up to two places: the host tensor
// and a device copy. `hostCurrent` says whether the host tensor is the newest value; when it is
// not, the device copy is (an update a device-resident Function applied), and value() copies it
// back, into the old host buffer when nobody else holds that one. The mutex makes the lazy copy
// and the uploads safe for readers on several threads (the window reads values while a session
// runs); it does not make a write race with a read any less of a race than it was.
struct SharedVariable::State {
  mutable std::mutex mutex;
  Tensor host;              // the newest value when hostCurrent
  Tensor device;            // the device copy, or undefined
  bool hostCurrent = true;  // else `device` holds the newest value
};

namespace {
std::atomic<std::uint64_t> g_sharedEpoch{1};

// filter() against the variable's type as if it lived where the value does.
Tensor filterWherever(const TensorType& type, const Tensor& value, const std::string& what) {
  if (!value.defined() || value.device() == type.device()) return type.filter(value, what);
  return TensorType(type.dtype(), type.shape(), value.device()).filter(value, what);
}
}  // namespace

SharedVariable::SharedVariable(TensorType type, std::shared_ptr<State> state, std::string name)
    : Variable(std::move(type), Kind::Shared, std::move(name)), m_state(std::move(state)) {}

std::shared_ptr<SharedVariable> SharedVariable::create(Tensor value, std::string name,
                                                       std::optional<TensorType> type,
                                                       std::source_location site) {
  TensorType t = type ? *type : TensorType::ofValue(value);
  if (!type && value.defined() && value.device() != Device::Cpu)
    t = TensorType(t.dtype(), t.shape(), Device::Cpu);  // a host variable with a device value
  Tensor filtered = filterWherever(t, value, "value of shared variable '" + name + "'");
  auto state = std::make_shared<State>();
  if (filtered.device() == Device::Cpu) {
    state->host = filtered.clone();
  } else {
    state->device = cloneOnDevice(filtered);
    state->hostCurrent = false;
  }
  std::shared_ptr<SharedVariable> s(
      new SharedVariable(std::move(t), std::move(state), std::move(name)));
  s->setSite(SourceSite::from(site));
  return s;
}

std::uint64_t sharedValueEpoch() {
  return g_sharedEpoch.load(std::memory_order_acquire);
}

std::shared_ptr<SharedVariable> SharedVariable::adopt(Tensor value, std::string name,
                                                      std::optional<TensorType> type) {
  TensorType t = type ? *type : TensorType::ofValue(value);
  if (!type && value.defined() && value.device() != Device::Cpu)
    t = TensorType(t.dtype(), t.shape(), Device::Cpu);
  Tensor filtered = filterWherever(t, value, "value of shared variable '" + name + "'");
  auto state = std::make_shared<State>();
  if (filtered.device() == Device::Cpu) {
    state->host = std::move(filtered);
  } else {
    state->device = std::move(filtered);
    state->hostCurrent = false;
  }
  return std::shared_ptr<SharedVariable>(
      new SharedVariable(std::move(t), std::move(state), std::move(name)));
}

const Tensor& SharedVariable::value() const {
  State& s = *m_state;
  std::lock_guard lock(s.mutex);
  if (!s.hostCurrent) {
    // The device copy is newer: bring it back, into the old host buffer when it is ours alone
    // (the same bytes a caller could hold are never written).
    const bool reuse = s.host.defined() && s.host.storage().use_count() == 1 &&
                       s.host.dtype() == s.device.dtype() && s.host.shape() == s.device.shape() &&
                       s.host.isContiguous() && s.host.device() == Device::Cpu;
    if (reuse)
      copyInto(s.host, s.device);
    else
      s.host = toHost(s.device);
    s.hostCurrent = true;
  }
  return s.host;
}

const Tensor& SharedVariable::placedValue() const {
  const Device where = type().device();
  if (where == Device::Cpu) return value();
  State& s = *m_state;
  std::lock_guard lock(s.mutex);
  if (!s.device.defined() || s.device.device() != where) {
    // First use on the device, or the host value was set since: upload it once.
    s.device = toDevice(s.host, where);
    s.hostCurrent = true;
  }
  return s.device;
}

bool SharedVariable::newestOnDevice() const {
  std::lock_guard lock(m_state->mutex);
  return !m_state->hostCurrent;
}

void SharedVariable::setValue(const Tensor& value) {
  Tensor filtered = filterWherever(type(), value, "new value of shared variable '" + name() + "'");
  State& s = *m_state;
  {
    std::lock_guard lock(s.mutex);
    if (filtered.device() == Device::Cpu) {
      s.host = filtered.clone();
      s.device = Tensor();  // replaced on the device's next use
      s.hostCurrent = true;
    } else {
      s.device = cloneOnDevice(filtered);
      s.hostCurrent = false;
    }
  }
  g_sharedEpoch.fetch_add(1, std::memory_order_acq_rel);
}

void SharedVariable::setValueBorrowed(Tensor value) {
  Tensor filtered = filterWherever(type(), value, "new value of shared variable '" + name() + "'");
  Tensor kept = filtered.sharesStorageWith(value) ? std::move(value) : std::move(filtered);
  State& s = *m_state;
  {
    std::lock_guard lock(s.mutex);
    if (kept.device() == Device::Cpu) {
      s.host = std::move(kept);
      s.device = Tensor();
      s.hostCurrent = true;
    } else {
      // The host buffer stays for the copy back (written only when nobody else holds it).
      s.device = std::move(kept);
      s.hostCurrent = false;
    }
  }
  g_sharedEpoch.fetch_add(1, std::memory_order_acq_rel);  // perhaps written in place
}

std::shared_ptr<SharedVariable> SharedVariable::onDevice(Device device) const {
  std::shared_ptr<SharedVariable> twin(
      new SharedVariable(TensorType(type().dtype(), type().shape(), device), m_state, name()));
  twin->copyMetadataFrom(*this);
  twin->clearTestValue();  // a test value is a host tensor
  return twin;
}

VarPtr SharedVariable::cloneDetached() const {
  std::shared_ptr<SharedVariable> copy(new SharedVariable(type(), m_state, name()));
  copy->copyMetadataFrom(*this);
  return copy;
}

}  // namespace tscope::engine
