#pragma once
// IdIndex: id -> object for a graph's node or variable ids (Note [Node ids]).
//
// The ids a graph hands out are dense (0, 1, 2, ... in import order), so they index a vector: a
// lookup is one array access and a graph walk in import order touches the index sequentially. A
// hash map, even a flat one, spread those accesses at random over a table larger than the caches
// (three misses per object while building a 100k-node graph). Ids far beyond the dense range
// (preset by a file, which may use any numbers) go to a hash map, so no id can make the vector
// grow out of proportion to the number of entries.

#include "engine/graph/flat_hash_map.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace tscope::engine {

template <class T>
class IdIndex {
 public:
  void reserve(std::size_t n) { m_dense.reserve(n); }

  T* find(std::int64_t id) const {
    if (inDense(id))
      if (T* object = m_dense[static_cast<std::size_t>(id)]) return object;
    if (m_sparse.empty()) return nullptr;
    T* const* found = m_sparse.find(id);
    return found ? *found : nullptr;
  }
  bool contains(std::int64_t id) const { return find(id) != nullptr; }

  // Sets the entry of id (object must not be null).
  void set(std::int64_t id, T* object) {
    // The dense range grows to ids near it: at most a few empty entries per entry held.
    const std::uint64_t limit = 2 * (m_dense.size() + m_sparse.size()) + 4096;
    if (!inDense(id) && id >= 0 && static_cast<std::uint64_t>(id) < limit) {
      const auto want = static_cast<std::size_t>(id) + 1;
      if (want > m_dense.capacity()) m_dense.reserve(std::max(want, m_dense.capacity() * 3 / 2));
      m_dense.resize(want, nullptr);
    }
    if (!inDense(id)) {
      m_sparse.set(id, object);
      return;
    }
    m_dense[static_cast<std::size_t>(id)] = object;
    // An id set while the dense range was smaller may still be in the map: one entry per id.
    if (!m_sparse.empty()) m_sparse.erase(id);
  }

  void erase(std::int64_t id) {
    if (inDense(id)) m_dense[static_cast<std::size_t>(id)] = nullptr;
    if (!m_sparse.empty()) m_sparse.erase(id);
  }

 private:
  bool inDense(std::int64_t id) const {
    return id >= 0 && static_cast<std::uint64_t>(id) < m_dense.size();
  }

  std::vector<T*> m_dense;
  FlatHashMap<std::int64_t, T*> m_sparse;
};

}  // namespace tscope::engine
