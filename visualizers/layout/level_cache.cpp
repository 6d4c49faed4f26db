#include "visualizers/layout/level_cache.h"

namespace tscope::vis::layout {

std::shared_ptr<const LevelLayout> LevelCache::find(const std::string& key) {
  std::lock_guard lock(m_mutex);
  const auto it = m_index.find(std::string_view(key));
  if (it == m_index.end()) return nullptr;
  m_entries.splice(m_entries.begin(), m_entries, it->second);
  return it->second->layout;
}

void LevelCache::insert(std::string key, std::shared_ptr<const LevelLayout> layout) {
  std::lock_guard lock(m_mutex);
  if (const auto it = m_index.find(std::string_view(key)); it != m_index.end()) {
    m_bytes -= it->second->bytes;
    m_entries.erase(it->second);
    m_index.erase(it);
  }
  const std::size_t bytes = key.size() + (layout ? layout->approximateBytes() : 0);
  m_entries.push_front(Entry{std::move(key), std::move(layout), bytes});
  m_index.emplace(std::string_view(m_entries.front().key), m_entries.begin());
  m_bytes += bytes;
  while (m_bytes > m_maxBytes && m_entries.size() > 1) {
    const Entry& oldest = m_entries.back();
    m_bytes -= oldest.bytes;
    m_index.erase(std::string_view(oldest.key));
    m_entries.pop_back();
  }
}

void LevelCache::clear() {
  std::lock_guard lock(m_mutex);
  m_index.clear();
  m_entries.clear();
  m_bytes = 0;
}

std::size_t LevelCache::bytes() const {
  std::lock_guard lock(m_mutex);
  return m_bytes;
}

std::size_t LevelCache::size() const {
  std::lock_guard lock(m_mutex);
  return m_entries.size();
}

}  // namespace tscope::vis::layout
