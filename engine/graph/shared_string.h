#pragma once
// SharedString: an immutable string whose copies share one buffer. Scope paths and creation sites
// repeat across thousands of nodes; copying them must not allocate (cloning a 100k-node graph
// spent most of its time in malloc before).

#include <memory>
#include <string>
#include <string_view>

namespace tscope::engine {

class SharedString {
 public:
  SharedString() = default;
  SharedString(std::string text)  // NOLINT: implicit, it is a string
      : m_text(text.empty() ? nullptr : std::make_shared<const std::string>(std::move(text))) {}
  SharedString(const char* text) : SharedString(std::string(text ? text : "")) {}  // NOLINT

  const std::string& str() const { return m_text ? *m_text : empty_(); }
  operator const std::string&() const { return str(); }  // NOLINT: reads like a std::string
  operator std::string_view() const { return str(); }    // NOLINT
  const char* c_str() const { return str().c_str(); }
  bool empty() const { return !m_text; }
  std::size_t size() const { return str().size(); }
  std::size_t find(std::string_view what, std::size_t pos = 0) const {
    return str().find(what, pos);
  }

  friend bool operator==(const SharedString& a, const SharedString& b) {
    return a.m_text == b.m_text || a.str() == b.str();
  }
  friend bool operator==(const SharedString& a, std::string_view b) { return a.str() == b; }
  friend std::string operator+(const std::string& a, const SharedString& b) { return a + b.str(); }
  friend std::string operator+(const SharedString& a, const std::string& b) { return a.str() + b; }

 private:
  static const std::string& empty_() {
    static const std::string kEmpty;
    return kEmpty;
  }
  std::shared_ptr<const std::string> m_text;
};

}  // namespace tscope::engine
