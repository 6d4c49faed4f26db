#include "engine/graph/config.h"

#include <atomic>
#include <iostream>
#include <mutex>

namespace tscope::engine {

namespace {
std::atomic<TestValueMode> g_testValueMode{TestValueMode::Off};
std::mutex g_warningMutex;
WarningHandler g_warningHandler;
thread_local int t_testValuesSuspended = 0;
}  // namespace

TestValueMode testValueMode() {
  if (t_testValuesSuspended > 0) return TestValueMode::Off;
  return g_testValueMode.load(std::memory_order_relaxed);
}

TestValueMode globalTestValueMode() {
  return g_testValueMode.load(std::memory_order_relaxed);
}

TestValuesSuspended::TestValuesSuspended() {
  ++t_testValuesSuspended;
}
TestValuesSuspended::~TestValuesSuspended() {
  --t_testValuesSuspended;
}
void setTestValueMode(TestValueMode mode) {
  g_testValueMode.store(mode, std::memory_order_relaxed);
}

std::string_view testValueModeName(TestValueMode mode) {
  switch (mode) {
    case TestValueMode::Off:
      return "off";
    case TestValueMode::Warn:
      return "warn";
    case TestValueMode::Raise:
      break;
  }
  return "raise";
}

void warn(const std::string& message) {
  std::lock_guard lock(g_warningMutex);
  if (g_warningHandler) {
    g_warningHandler(message);
    return;
  }
  std::cerr << "tensorscope: warning: " << message << '\n';
}

WarningHandler setWarningHandler(WarningHandler handler) {
  std::lock_guard lock(g_warningMutex);
  WarningHandler previous = std::move(g_warningHandler);
  g_warningHandler = std::move(handler);
  return previous;
}

}  // namespace tscope::engine
