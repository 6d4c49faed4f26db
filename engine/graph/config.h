#pragma once
// Process-wide engine settings: the test-value mode (Theano's compute_test_value) and where the
// engine's warnings go.

#include <functional>
#include <string>
#include <string_view>

namespace tscope::engine {

// Note [Test values]: when the mode is not Off, Op::makeNode computes every new node's outputs on
// its inputs' test values at once, so a shape error surfaces at the line that built the node.
// Warn: a failure or a missing input value is reported through warn() and the node is built
// without test values. Raise: both throw TestValueError naming the op, the input shapes and the
// creation site.
enum class TestValueMode { Off, Warn, Raise };

// The mode in effect on this thread (Off inside TestValuesSuspended), and the process-wide one.
TestValueMode testValueMode();
TestValueMode globalTestValueMode();
void setTestValueMode(TestValueMode mode);
std::string_view testValueModeName(TestValueMode mode);

// Sets the mode for a scope and restores the previous one.
class TestValueModeGuard {
 public:
  explicit TestValueModeGuard(TestValueMode mode) : m_previous(globalTestValueMode()) {
    setTestValueMode(mode);
  }
  ~TestValueModeGuard() { setTestValueMode(m_previous); }
  TestValueModeGuard(const TestValueModeGuard&) = delete;
  TestValueModeGuard& operator=(const TestValueModeGuard&) = delete;

 private:
  TestValueMode m_previous;
};

// Test values off on this thread only, for a scope (nestable): compile rewrites an inner graph
// (an OpFromGraph body) under it, whose inputs carry no test values, while another thread may be
// building a graph with test values on.
class TestValuesSuspended {
 public:
  TestValuesSuspended();
  ~TestValuesSuspended();
  TestValuesSuspended(const TestValuesSuspended&) = delete;
  TestValuesSuspended& operator=(const TestValuesSuspended&) = delete;
};

// Engine warnings (test values in warn mode, checkers): written to stderr unless a handler is set.
using WarningHandler = std::function<void(const std::string&)>;
void warn(const std::string& message);
// Returns the previous handler; an empty handler restores stderr.
WarningHandler setWarningHandler(WarningHandler handler);

}  // namespace tscope::engine
