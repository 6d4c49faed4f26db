#pragma once
// Force-included (-include) into every translation unit of a TSCOPE_FUZZ build when the compiler is
// clang < 15 on libstdc++ (tests/fuzz/CMakeLists.txt). libstdc++'s <source_location> needs
// __builtin_source_location, which clang gained only in version 15; without it the header is empty
// and the engine, which takes std::source_location default arguments, does not compile. This
// supplies the same interface from the older __builtin_FILE/LINE/COLUMN/FUNCTION builtins. It is
// not used by any other build.

#include <version>

#if defined(__GLIBCXX__) && !defined(__cpp_lib_source_location) && \
    !__has_builtin(__builtin_source_location)
#include <cstdint>
#include <source_location>  // empty here, but its include guard stops it from being read again

namespace std {

struct source_location {
  static constexpr source_location current(const char* file = __builtin_FILE(),
                                           const char* function = __builtin_FUNCTION(),
                                           uint_least32_t line = __builtin_LINE(),
                                           uint_least32_t column = __builtin_COLUMN()) noexcept {
    source_location s;
    s.m_file = file;
    s.m_function = function;
    s.m_line = line;
    s.m_column = column;
    return s;
  }
  constexpr source_location() noexcept = default;
  constexpr uint_least32_t line() const noexcept { return m_line; }
  constexpr uint_least32_t column() const noexcept { return m_column; }
  constexpr const char* file_name() const noexcept { return m_file; }
  constexpr const char* function_name() const noexcept { return m_function; }

 private:
  const char* m_file = "";
  const char* m_function = "";
  uint_least32_t m_line = 0;
  uint_least32_t m_column = 0;
};

}  // namespace std
#endif
