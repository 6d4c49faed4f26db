#pragma once
// JsonCursor: read access to a JSON value that knows its JSON-pointer path, so every complaint a
// loader makes names the place in the file ("/graphs/original/applies/3/inputs/1").

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace tscope::engine::io {

class JsonCursor {
 public:
  using Fail = std::function<void(const std::string& path, const std::string& message)>;

  // `fail` must throw; the cursor calls it for every violation.
  JsonCursor(const nlohmann::json& value, std::string path, const Fail* fail)
      : m_value(&value), m_path(std::move(path)), m_fail(fail) {}

  const nlohmann::json& value() const { return *m_value; }
  const std::string& path() const { return m_path; }
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
  const nlohmann::json* m_value;
  std::string m_path;
  const Fail* m_fail;
};

}  // namespace tscope::engine::io
