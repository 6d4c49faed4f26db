#pragma once
// LevelCache: laid-out levels keyed by the full text that determines them (LevelSpec::cacheKey),
// least recently used first out when the memory bound is passed. Thread-safe (the worker fills it,
// clearCache may come from any thread).

#include "visualizers/layout/graphviz_level.h"

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace tscope::vis::layout {

class LevelCache {
 public:
  explicit LevelCache(std::size_t maxBytes = std::size_t(128) << 20) : m_maxBytes(maxBytes) {}

  // The cached layout for `key` (and marks it most recently used), or null.
  std::shared_ptr<const LevelLayout> find(const std::string& key);
  // Stores a layout; evicts the least recently used entries while over the bound (the newest entry
  // always stays, even when it alone is over the bound).
  void insert(std::string key, std::shared_ptr<const LevelLayout> layout);
  void clear();
  std::size_t bytes() const;
  std::size_t size() const;

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<const LevelLayout> layout;
    std::size_t bytes = 0;
  };
  mutable std::mutex m_mutex;
  std::list<Entry> m_entries;  // most recently used first; list nodes never move
  std::unordered_map<std::string_view, std::list<Entry>::iterator> m_index;  // views into keys
  std::size_t m_bytes = 0;
  std::size_t m_maxBytes;
};

}  // namespace tscope::vis::layout
