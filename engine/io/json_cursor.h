#pragma once
// JsonCursor: read access to a JSON value that can name its JSON-pointer path, so every complaint a
// loader makes names the place in the file ("/graphs/original/applies/3/inputs/1").
//
// The path is not carried along (building strings for every step made loading twice as slow): a
// cursor holds the value and the document's root, and path() finds the value in the root only
// when a complaint needs it.

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace tscope::engine::io {

class JsonCursor {
 public:
  using Fail = std::function<void(const std::string& path, const std::string& message)>;

  // A cursor on the root of a document. `fail` must throw; the cursor calls it for every violation.
  JsonCursor(const nlohmann::json& root, const Fail* fail)
      : m_value(&root), m_root(&root), m_fail(fail) {}

  const nlohmann::json& value() const { return *m_value; }
  // The JSON pointer of the value ("" for the root); linear in the document's size.
  std::string path() const;
  [[noreturn]] void fail(const std::string& message) const;

  // The member `key` of an object (the cursor must be an object; a missing key fails).
  JsonCursor at(const char* key) const;
  std::optional<JsonCursor> find(const char* key) const;
  // Element i of an array.
  JsonCursor at(std::size_t index) const;

  void expectObject() const;
  std::size_t arraySize() const;  // fails unless an array
  std::string string() const;
  bool boolean() const;
  // An integer in [min, max].
  std::int64_t integer(std::int64_t min, std::int64_t max) const;
  // A short description of what the value is, for messages: "the string \"abc\"", "an object".
  std::string describe() const;

 private:
  JsonCursor(const nlohmann::json* value, const JsonCursor& parent)
      : m_value(value), m_root(parent.m_root), m_fail(parent.m_fail) {}

  const nlohmann::json* m_value;
  const nlohmann::json* m_root;
  const Fail* m_fail;
};

}  // namespace tscope::engine::io
