#include "visualizers/model/value_summary.h"

#include "engine/tensor/tensor.h"

#include <cmath>
#include <exception>
#include <limits>

namespace tscope::vis {
namespace {

QString number(double value) {
  return QString::number(value, 'g', 4);
}

const engine::Tensor* valueOf(const engine::Variable& var) {
  switch (var.kind()) {
    case engine::Variable::Kind::Constant:
      return &static_cast<const engine::Constant&>(var).value();
    case engine::Variable::Kind::Shared:
      return &static_cast<const engine::SharedVariable&>(var).value();
    case engine::Variable::Kind::Regular:
      break;
  }
  return nullptr;
}

}  // namespace

QString valueStatistics(const engine::Variable& var) {
  const engine::Tensor* value = valueOf(var);
  if (!value) return QStringLiteral("no stored value (computed when the graph runs)");
  if (!value->defined()) return QStringLiteral("no value");
  if (value->device() != engine::Device::Cpu)
    return QStringLiteral("value on a device: select it to see its statistics");
  if (value->numel() > kMaxSummarisedElements)
    return QStringLiteral("%1 elements: select it to see its statistics").arg(value->numel());
  try {
    const std::vector<double> xs = value->toDoubles();
    double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0;
    std::int64_t finite = 0, nans = 0, infs = 0;
    for (double x : xs) {
      if (std::isnan(x)) {
        ++nans;
      } else if (std::isinf(x)) {
        ++infs;
      } else {
        ++finite;
        lo = std::min(lo, x);
        hi = std::max(hi, x);
        sum += x;
      }
    }
    QString text;
    if (finite > 0) {
      const double mean = sum / double(finite);
      double squares = 0;
      for (double x : xs)
        if (std::isfinite(x)) squares += (x - mean) * (x - mean);
      text = QStringLiteral("min %1  max %2  mean %3  std %4")
                 .arg(number(lo), number(hi), number(mean),
                      number(std::sqrt(squares / double(finite))));
    } else {
      text = QStringLiteral("no finite element");
    }
    if (nans > 0) text += QStringLiteral("  NaN %1").arg(nans);
    if (infs > 0) text += QStringLiteral("  Inf %1").arg(infs);
    return text;
  } catch (const std::exception& e) {
    return QStringLiteral("statistics unavailable: ") + QString::fromUtf8(e.what());
  }
}

}  // namespace tscope::vis
