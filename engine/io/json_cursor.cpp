#include "engine/io/json_cursor.h"

#include <vector>

namespace tscope::engine::io {

namespace {
// JSON pointer escaping (RFC 6901): '~' -> "~0", '/' -> "~1".
std::string escapeKey(const char* key) {
  std::string out;
  for (const char* c = key; *c; ++c) {
    if (*c == '~')
      out += "~0";
    else if (*c == '/')
      out += "~1";
    else
      out += *c;
  }
  return out;
}
}  // namespace

std::string JsonCursor::path() const {
  // Depth-first search of the root for this value's address; each visited value remembers its
  // parent and its key so the path is rebuilt once found.
  struct Step {
    const nlohmann::json* value;
    std::size_t parent;
    std::string key;
  };
  std::vector<Step> steps{{m_root, 0, {}}};
  std::vector<std::size_t> stack{0};
  while (!stack.empty()) {
    std::size_t at = stack.back();
    stack.pop_back();
    const nlohmann::json* v = steps[at].value;
    if (v == m_value) {
      std::vector<const std::string*> keys;
      for (std::size_t i = at; i != 0; i = steps[i].parent) keys.push_back(&steps[i].key);
      std::string out;
      for (auto it = keys.rbegin(); it != keys.rend(); ++it) out += "/" + **it;
      return out;
    }
    if (v->is_object()) {
      for (auto it = v->begin(); it != v->end(); ++it) {
        steps.push_back({&it.value(), at, escapeKey(it.key().c_str())});
        stack.push_back(steps.size() - 1);
      }
    } else if (v->is_array()) {
      for (std::size_t i = 0; i < v->size(); ++i) {
        steps.push_back({&(*v)[i], at, std::to_string(i)});
        stack.push_back(steps.size() - 1);
      }
    }
  }
  return "?";
}

void JsonCursor::fail(const std::string& message) const {
  std::string p = path();
  (*m_fail)(p.empty() ? "/" : p, message);
  throw std::logic_error("JsonCursor: the fail handler returned");
}

std::string JsonCursor::describe() const {
  const auto& v = *m_value;
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (s.size() > 40) {
      // Cut at a UTF-8 character boundary (not before a continuation byte 10xxxxxx).
      std::size_t cut = 40;
      while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xc0) == 0x80) --cut;
      s = s.substr(0, cut) + "...";
    }
    return "the string " +
           nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  if (v.is_number() || v.is_boolean() || v.is_null()) return v.dump();
  if (v.is_array()) return "an array of " + std::to_string(v.size()) + " elements";
  if (v.is_object()) return "an object";
  return v.type_name();
}

void JsonCursor::expectObject() const {
  if (!m_value->is_object()) fail("expected an object, found " + describe());
}

JsonCursor JsonCursor::at(const char* key) const {
  expectObject();
  auto it = m_value->find(key);
  if (it == m_value->end())
    fail(std::string("expected the member \"") + key + "\", which is missing");
  return JsonCursor(&*it, *this);
}

std::optional<JsonCursor> JsonCursor::find(const char* key) const {
  expectObject();
  auto it = m_value->find(key);
  if (it == m_value->end()) return std::nullopt;
  return JsonCursor(&*it, *this);
}

JsonCursor JsonCursor::at(std::size_t index) const {
  if (!m_value->is_array() || index >= m_value->size())
    fail("expected an array with an element " + std::to_string(index) + ", found " + describe());
  return JsonCursor(&(*m_value)[index], *this);
}

std::size_t JsonCursor::arraySize() const {
  if (!m_value->is_array()) fail("expected an array, found " + describe());
  return m_value->size();
}

std::string JsonCursor::string() const {
  if (!m_value->is_string()) fail("expected a string, found " + describe());
  return m_value->get<std::string>();
}

bool JsonCursor::boolean() const {
  if (!m_value->is_boolean()) fail("expected true or false, found " + describe());
  return m_value->get<bool>();
}

std::int64_t JsonCursor::integer(std::int64_t min, std::int64_t max) const {
  std::int64_t v = 0;
  if (m_value->is_number_unsigned()) {
    auto u = m_value->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(max))
      fail("expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
           "], found " + describe());
    v = static_cast<std::int64_t>(u);
  } else if (m_value->is_number_integer()) {
    v = m_value->get<std::int64_t>();
  } else {
    fail("expected an integer, found " + describe());
  }
  if (v < min || v > max)
    fail("expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
         "], found " + describe());
  return v;
}

}  // namespace tscope::engine::io
