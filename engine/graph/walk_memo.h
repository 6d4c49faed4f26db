#pragma once
// WalkMemo: what a walk over a free graph remembers per node and variable (Note [Walk marks] in
// walk_marks.h).

#include "engine/graph/apply.h"
#include "engine/graph/flat_hash_map.h"
#include "engine/graph/variable.h"

#include <cstdint>

namespace tscope::engine {

// What a walk remembers per node and per variable: one 32-bit value, set when first seen.
class WalkMemo {
 public:
  WalkMemo();
  ~WalkMemo();
  WalkMemo(const WalkMemo&) = delete;
  WalkMemo& operator=(const WalkMemo&) = delete;

  // Records `value` for an object not seen yet and returns true; returns false (and changes
  // nothing) when the object was seen before.
  bool claim(const Apply& node, std::uint32_t value) { return claimIn(node, value, m_nodes); }
  bool claim(const Variable& var, std::uint32_t value) { return claimIn(var, value, m_variables); }
  // The value recorded for the object, or null when this walk has not seen it.
  std::uint32_t* find(const Apply& node) { return findIn(node, m_nodes); }
  std::uint32_t* find(const Variable& var) { return findIn(var, m_variables); }
  // True when this walk writes the objects' own marks (for tests).
  bool usesMarks() const { return m_epoch != 0; }

 private:
  template <class T>
  bool claimIn(const T& object, std::uint32_t value,
               FlatHashMap<const T*, std::uint32_t>& fallback) {
    if (m_epoch == 0) return fallback.tryEmplace(&object, value).second;
    WalkMark& mark = object.m_walk;
    if (mark.epoch == m_epoch) return false;
    mark = WalkMark{m_epoch, value};
    return true;
  }
  template <class T>
  std::uint32_t* findIn(const T& object, FlatHashMap<const T*, std::uint32_t>& fallback) {
    if (m_epoch == 0) return fallback.find(&object);
    WalkMark& mark = object.m_walk;
    return mark.epoch == m_epoch ? &mark.value : nullptr;
  }

  std::uint64_t m_epoch = 0;  // 0: the marks belong to another walk; the maps below serve
  FlatHashMap<const Apply*, std::uint32_t> m_nodes;
  FlatHashMap<const Variable*, std::uint32_t> m_variables;
};

}  // namespace tscope::engine
