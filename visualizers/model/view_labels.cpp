#include "visualizers/model/view_labels.h"

#include "engine/graph/op.h"
#include "engine/tensor/dtype.h"

#include <QStringList>

#include <exception>

namespace tscope::vis::labels {
namespace {

constexpr int kMaxPropsText = 300;           // characters of the props JSON in a tooltip
constexpr std::int64_t kListedElements = 4;  // a constant tensor this small is labelled by value

QString number(double value) {
  return QString::number(value, 'g', 3);
}

QString tensorSummary(const engine::Tensor& value) {
  std::vector<std::int64_t> shape(value.shape().begin(), value.shape().end());
  return qs(std::string(engine::dtypeName(value.dtype()))) + QLatin1Char(' ') + shapeText(shape);
}

// A constant's value as d3viz labels it; empty when it cannot be read here (a device tensor).
QString constantText(const engine::Tensor& value) {
  if (!value.defined() || value.device() != engine::Device::Cpu) return {};
  try {
    if (value.ndim() == 0) return number(value.item());
    if (value.numel() <= kListedElements && value.ndim() == 1) {
      QStringList items;
      for (double x : value.toDoubles()) items << number(x);
      return QLatin1Char('[') + items.join(QLatin1Char(' ')) + QLatin1Char(']');
    }
  } catch (const std::exception&) {
    return {};
  }
  QStringList dims;
  for (std::int64_t d : value.shape()) dims << QString::number(d);
  return QStringLiteral("[…] ") + dims.join(QChar(0x00D7));
}

void addSite(QStringList& lines, const engine::SourceSite& site) {
  if (!site.empty()) lines << QStringLiteral("created at ") + qs(site.str());
}

void addScope(QStringList& lines, const std::string& scope) {
  if (!scope.empty()) lines << QStringLiteral("scope ") + qs(scope);
}

}  // namespace

QString qs(const std::string& text) {
  return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
}

QString shortType(const engine::TensorType& type) {
  return qs(type.shortStr());
}

QString shapeText(const std::vector<std::int64_t>& shape) {
  QStringList dims;
  for (std::int64_t d : shape)
    dims << (d == engine::kUnknownDim ? QStringLiteral("?") : QString::number(d));
  if (dims.size() == 1) return QLatin1Char('(') + dims.front() + QStringLiteral(",)");
  return QLatin1Char('(') + dims.join(QStringLiteral(", ")) + QLatin1Char(')');
}

QString elided(const QString& text, int max) {
  if (text.size() <= max) return text;
  return text.left(max - 1) + QChar(0x2026);
}

QString applyLabel(const engine::Apply& node) {
  QString label = elided(qs(node.op().str()), kMaxOpLabel);
  QStringList names;
  for (int k = 0; k < node.nOutputs(); ++k)
    if (!node.outputRef(k).name().empty()) names << qs(node.outputRef(k).name());
  if (!names.isEmpty())
    label += QLatin1Char('\n') + elided(names.join(QStringLiteral(", ")), kMaxOpLabel);
  return label;
}

QString variableLabel(const engine::Variable& var) {
  if (!var.name().empty()) return qs(var.name());
  if (var.kind() == engine::Variable::Kind::Constant) {
    const QString text = constantText(static_cast<const engine::Constant&>(var).value());
    if (!text.isEmpty()) return text;
  }
  return shortType(var.type());
}

QString badgeText(const engine::Variable& var) {
  constexpr int kMaxBadgeName = 28;
  std::vector<std::int64_t> shape(var.type().shape().begin(), var.type().shape().end());
  return elided(variableLabel(var), kMaxBadgeName) + QStringLiteral("  ") + shortType(var.type()) +
         QLatin1Char(' ') + shapeText(shape);
}

QString foldedBadgeText(const engine::Apply& node, const QString& name) {
  constexpr int kMaxBadgeName = 28, kMaxBadgeOp = 24;
  const engine::TensorType& type = node.outputRef(0).type();
  return elided(name, kMaxBadgeName) + QStringLiteral("  ") +
         elided(qs(node.op().str()), kMaxBadgeOp) + QStringLiteral("  ") + shortType(type) +
         QLatin1Char(' ') + shapeText(type.shape());
}

QString edgeLabel(const engine::Variable& value, int position, int count) {
  const QString type = shortType(value.type());
  return count > 1 ? QString::number(position) + QLatin1Char(' ') + type : type;
}

QString applyTooltip(const engine::Apply& node, const HeatEntry* heat) {
  QStringList lines;
  lines << qs(node.op().str());
  lines << QStringLiteral("node %1").arg(node.id());
  for (int k = 0; k < node.nOutputs(); ++k) {
    const engine::Variable& out = node.outputRef(k);
    lines << QStringLiteral("output %1: %2 %3")
                 .arg(k)
                 .arg(qs(out.displayName()), qs(out.type().str()));
    if (out.testValue()) lines << QStringLiteral("  test value ") + tensorSummary(*out.testValue());
  }
  addScope(lines, node.scope());
  addSite(lines, node.site());
  nlohmann::json props = node.op().props();
  if (props.is_object())
    props.erase("graph");  // an OpFromGraph's inner graph: its group shows it, the tooltip need not
  if (!props.empty()) lines << QStringLiteral("props ") + elided(qs(props.dump()), kMaxPropsText);
  if (heat)
    lines << QStringLiteral("Time: %1 ms / %2 %")
                 .arg(heat->seconds * 1e3, 0, 'f', 3)
                 .arg(heat->share * 100, 0, 'f', 1);
  return lines.join(QLatin1Char('\n'));
}

QString variableTooltip(const engine::Variable& var, VariableRole role, bool graphOutput) {
  QStringList lines;
  lines << qs(var.displayName());
  QString what = roleText(role);
  if (graphOutput && role != VariableRole::Output) what += QStringLiteral(", graph output");
  lines << what;
  lines << qs(var.type().str());
  if (var.kind() == engine::Variable::Kind::Constant)
    lines << QStringLiteral("value ") +
                 tensorSummary(static_cast<const engine::Constant&>(var).value());
  if (var.testValue()) lines << QStringLiteral("test value ") + tensorSummary(*var.testValue());
  addScope(lines, var.scope());
  addSite(lines, var.site());
  return lines.join(QLatin1Char('\n'));
}

}  // namespace tscope::vis::labels
