#pragma once
// What the NanGuard tests share: float32 variables and tensors in one line, and a call that must
// raise NanGuardError.

#include "engine/compile/function.h"
#include "engine/debug/nan_guard.h"

#include <QtTest/QtTest>

#include <initializer_list>
#include <string>
#include <vector>

namespace tscope::engine::debug::testing {

constexpr std::int64_t U = kUnknownDim;

inline VarPtr fvar(const std::string& name, std::vector<std::int64_t> shape = {U}) {
  return Variable::create(TensorType(DType::Float32, std::move(shape)), name);
}

inline Tensor ft(Shape shape, std::initializer_list<double> v) {
  return Tensor::fromDoubles(DType::Float32, std::move(shape), v);
}

// Runs f on args expecting NanGuardError; returns its report (and fails the test without one).
inline NanReport raised(Function& f, const std::vector<Tensor>& args) {
  try {
    f(args);
  } catch (const NanGuardError& e) {
    return e.report();
  }
  QTest::qFail("expected a NanGuardError", __FILE__, __LINE__);
  return {};
}

}  // namespace tscope::engine::debug::testing
