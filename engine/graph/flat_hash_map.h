#pragma once
// FlatHashMap: an open-addressing hash map (linear probing, backward-shift deletion) for small
// trivially copyable keys such as ids and pointers. Graph passes insert one entry per node; a
// node-based std::unordered_map allocates for each, which dominated cloning large graphs.

#include <cstdint>
#include <functional>
#include <optional>
#include <type_traits>
#include <vector>

namespace tscope::engine {

template <class Key, class Value>
class FlatHashMap {
  static_assert(std::is_trivially_copyable_v<Key>, "FlatHashMap keys are ids or pointers");

 public:
  FlatHashMap() = default;
  explicit FlatHashMap(std::size_t expected) { reserve(expected); }

  std::size_t size() const { return m_size; }
  bool empty() const { return m_size == 0; }

  void reserve(std::size_t n) {
    std::size_t want = 16;
    while (want < n + n / 2 + 1) want *= 2;
    if (want > m_slots.size()) rehash(want);
  }

  // Inserts (key, value) unless key is present; returns the stored value and whether it was added.
  std::pair<Value*, bool> tryEmplace(Key key, Value value = Value{}) {
    if ((m_size + 1) * 4 > m_slots.size() * 3) rehash(m_slots.empty() ? 16 : m_slots.size() * 2);
    std::size_t mask = m_slots.size() - 1;
    for (std::size_t i = hashOf(key) & mask;; i = (i + 1) & mask) {
      Slot& s = m_slots[i];
      if (!s.used) {
        s.used = true;
        s.key = key;
        s.value = std::move(value);
        ++m_size;
        return {&s.value, true};
      }
      if (s.key == key) return {&s.value, false};
    }
  }
  // Inserts or overwrites.
  void set(Key key, Value value) {
    auto [stored, added] = tryEmplace(key, value);
    if (!added) *stored = std::move(value);
  }

  Value* find(Key key) {
    std::size_t i = indexOf(key);
    return i == kNone ? nullptr : &m_slots[i].value;
  }
  const Value* find(Key key) const {
    std::size_t i = indexOf(key);
    return i == kNone ? nullptr : &m_slots[i].value;
  }
  bool contains(Key key) const { return indexOf(key) != kNone; }

  bool erase(Key key) {
    std::size_t i = indexOf(key);
    if (i == kNone) return false;
    // Backward-shift deletion: move later entries of the probe run into the hole.
    std::size_t mask = m_slots.size() - 1;
    for (std::size_t j = (i + 1) & mask; m_slots[j].used; j = (j + 1) & mask) {
      std::size_t home = hashOf(m_slots[j].key) & mask;
      // Entry j may fill hole i when its home is not in the cyclic range (i, j].
      bool between = i <= j ? (home > i && home <= j) : (home > i || home <= j);
      if (!between) {
        m_slots[i] = std::move(m_slots[j]);
        i = j;
      }
    }
    m_slots[i].used = false;
    m_slots[i].value = Value{};
    --m_size;
    return true;
  }

  void clear() {
    m_slots.clear();
    m_size = 0;
  }

  // Iteration in slot order (unspecified): for (const auto& [key, value] : map).
  class ConstIterator {
   public:
    ConstIterator(const FlatHashMap* map, std::size_t i) : m_map(map), m_i(i) { skip(); }
    std::pair<Key, const Value&> operator*() const {
      return {m_map->m_slots[m_i].key, m_map->m_slots[m_i].value};
    }
    ConstIterator& operator++() {
      ++m_i;
      skip();
      return *this;
    }
    bool operator!=(const ConstIterator& o) const { return m_i != o.m_i; }

   private:
    void skip() {
      while (m_i < m_map->m_slots.size() && !m_map->m_slots[m_i].used) ++m_i;
    }
    const FlatHashMap* m_map;
    std::size_t m_i;
  };
  ConstIterator begin() const { return ConstIterator(this, 0); }
  ConstIterator end() const { return ConstIterator(this, m_slots.size()); }

 private:
  static constexpr std::size_t kNone = ~std::size_t{0};
  struct Slot {
    Key key{};
    Value value{};
    bool used = false;
  };

  static std::size_t hashOf(Key key) {
    std::uint64_t x;
    if constexpr (std::is_pointer_v<Key>)
      x = reinterpret_cast<std::uintptr_t>(key);
    else
      x = static_cast<std::uint64_t>(key);
    // A 64-bit mix (splitmix64's finaliser): pointers and sequential ids spread evenly.
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return static_cast<std::size_t>(x);
  }

  std::size_t indexOf(Key key) const {
    if (m_slots.empty()) return kNone;
    std::size_t mask = m_slots.size() - 1;
    for (std::size_t i = hashOf(key) & mask;; i = (i + 1) & mask) {
      const Slot& s = m_slots[i];
      if (!s.used) return kNone;
      if (s.key == key) return i;
    }
  }

  void rehash(std::size_t capacity) {
    std::vector<Slot> old = std::move(m_slots);
    m_slots.assign(capacity, Slot{});
    m_size = 0;
    for (Slot& s : old)
      if (s.used) tryEmplace(s.key, std::move(s.value));
  }

  std::vector<Slot> m_slots;
  std::size_t m_size = 0;
};

}  // namespace tscope::engine
