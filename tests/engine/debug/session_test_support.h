#pragma once
// DebugSession tests wait for every command's future with a bound, so a hang fails the test
// instead of the suite.
#include <QtGlobal>

#include <chrono>
#include <exception>
#include <future>
#include <string>

namespace tscope::test {

template <class T>
T get(std::future<T> f) {
  if (f.wait_for(std::chrono::seconds(120)) != std::future_status::ready)
    qFatal("a DebugSession command did not answer within 120 s");
  return f.get();
}

inline void get(std::future<void> f) {
  if (f.wait_for(std::chrono::seconds(120)) != std::future_status::ready)
    qFatal("a DebugSession command did not answer within 120 s");
  f.get();
}

// The message of the exception the command answered with; empty when it succeeded.
template <class T>
std::string errorOf(std::future<T> f) {
  if (f.wait_for(std::chrono::seconds(120)) != std::future_status::ready)
    qFatal("a DebugSession command did not answer within 120 s");
  try {
    f.get();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

}  // namespace tscope::test
