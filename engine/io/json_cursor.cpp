#include "engine/io/json_cursor.h"

namespace tscope::engine::io {

namespace {
// JSON pointer escaping (RFC 6901): '~' -> "~0", '/' -> "~1".
std::string escapeKey(const char* key) {
  std::string out;
  for (const char* c = key; *c; ++c) {
    if (*c == '~') out += "~0";
    else if (*c == '/') out += "~1";
    else out += *c;
  }
  return out;
}
}  // namespace

void JsonCursor::fail(const std::string& message) const {
  (*m_fail)(m_path.empty() ? "/" : m_path, message);
  throw std::logic_error("JsonCursor: the fail handler returned");
}

std::string JsonCursor::describe() const {
  const auto& v = *m_value;
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (s.size() > 40) s = s.substr(0, 40) + "...";
    return "the string " + nlohmann::json(s).dump();
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
  if (it == m_value->end()) fail(std::string("expected the member \"") + key + "\", which is missing");
  return JsonCursor(*it, m_path + "/" + escapeKey(key), m_fail);
}

std::optional<JsonCursor> JsonCursor::find(const char* key) const {
  expectObject();
  auto it = m_value->find(key);
  if (it == m_value->end()) return std::nullopt;
  return JsonCursor(*it, m_path + "/" + escapeKey(key), m_fail);
}

JsonCursor JsonCursor::at(std::size_t index) const {
  return JsonCursor((*m_value)[index], m_path + "/" + std::to_string(index), m_fail);
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
      fail("expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "], found " + describe());
    v = static_cast<std::int64_t>(u);
  } else if (m_value->is_number_integer()) {
    v = m_value->get<std::int64_t>();
  } else {
    fail("expected an integer, found " + describe());
  }
  if (v < min || v > max)
    fail("expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "], found " + describe());
  return v;
}

}  // namespace tscope::engine::io
