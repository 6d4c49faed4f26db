#include "gui/app/profile/heat_map.h"

#include "profiling/report.h"
#include "profiling/roofline.h"
#include "visualizers/model/palette.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace tscope::gui {

namespace {

constexpr std::array<const char*, kHeatMetricCount> kMetricNames = {
    "Time",    "Share of the run",  "Mean per call", "p95",
    "GFLOP/s", "Roofline fraction", "Output bytes",  "Allocated bytes"};
static_assert(kMetricNames.size() == kHeatMetricCount);

// Viridis (matplotlib) at 1.0, 0.9, ..., 0.3: light to dark, the darkest steps left out so the
// black labels stay legible (Note [Heat map scales]).
constexpr std::array<unsigned, 8> kPerceptual = {0xfde725, 0xb5de2b, 0x6ece58, 0x35b779,
                                                 0x1f9e89, 0x26828e, 0x31688e, 0x3e4989};
// ColorBrewer's RdBu, blue (faster) to red (slower).
constexpr std::array<unsigned, 9> kDiverging = {0x2166ac, 0x4393c3, 0x92c5de, 0xd1e5f0, 0xf7f7f7,
                                                0xfddbc7, 0xf4a582, 0xd6604d, 0xb2182b};

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

QString share(double fraction) {
  return QString::fromStdString(prof::formatShare(fraction))
      .replace(QLatin1String("%"), QLatin1String(" %"));
}
QString seconds(double s) {
  return QString::fromStdString(prof::formatSeconds(s));
}

// The figures a group sums (Note [Heat map scales]).
struct GroupSum {
  bool any = false;
  double self = 0, share = 0, mean = 0, p95 = 0, flops = 0, bound = 0, roofTime = 0;
  double outputBytes = 0, allocatedBytes = 0;
  void add(const NodeFigures& f) {
    if (!f.ran) return;
    any = true;
    self += f.self;
    share += f.share;
    mean += f.mean;
    p95 += f.p95;
    flops += f.flops;
    if (f.roofKnown) {
      bound += f.boundSeconds;
      roofTime += f.self;
    }
    outputBytes += f.outputBytes;
    allocatedBytes += f.allocatedBytes;
  }
  NodeFigures figures() const {
    NodeFigures f;
    f.ran = any;
    f.self = f.total = self;
    f.share = share;
    f.mean = mean;
    f.p95 = p95;
    f.gflops = self > 0 ? flops / self * 1e-9 : 0;
    f.roofKnown = roofTime > 0;
    f.roofFraction = roofTime > 0 ? bound / roofTime : 0;
    f.outputBytes = outputBytes;
    f.allocatedBytes = allocatedBytes;
    return f;
  }
};

// The sums of every group over its subtree; an OpFromGraph group also holds its caller node.
template <typename Add>
void forEachGroupOf(const vis::ViewModel& model, int viewNode, Add&& add) {
  const auto& groups = model.groups();
  for (int g = model.nodes()[static_cast<std::size_t>(viewNode)].group; g > 0;
       g = groups[static_cast<std::size_t>(g)].parent)
    add(g);
}

std::vector<GroupSum> groupSums(const ProfileView& view, const std::vector<NodeFigures>& figures) {
  const vis::ViewModel& model = *view.snapshot->model;
  std::vector<GroupSum> sums(model.groups().size());
  std::unordered_map<int, int> ofgGroup;  // caller's ViewModel node -> its group
  for (std::size_t g = 0; g < model.groups().size(); ++g)
    if (model.groups()[g].kind == vis::GroupKind::OpFromGraph)
      ofgGroup.emplace(model.groups()[g].ofgViewNode, static_cast<int>(g));
  for (std::size_t i = 0; i < figures.size(); ++i) {
    const int v = view.viewNode[i];
    if (v < 0) continue;
    forEachGroupOf(model, v, [&](int g) { sums[static_cast<std::size_t>(g)].add(figures[i]); });
    if (auto it = ofgGroup.find(v); it != ofgGroup.end())
      sums[static_cast<std::size_t>(it->second)].add(figures[i]);
  }
  return sums;
}

vis::LegendRow scaleRow(std::vector<QColor> steps, QString text) {
  vis::LegendRow row{vis::LegendRow::Swatch::Scale, steps.empty() ? QColor() : steps.back(),
                     std::move(text)};
  row.steps = std::move(steps);
  return row;
}

}  // namespace

QString heatMetricName(HeatMetric metric) {
  return QString::fromLatin1(kMetricNames.at(static_cast<std::size_t>(metric)));
}

std::vector<QColor> heatScaleSteps(HeatScale scale) {
  std::vector<QColor> steps;
  for (int i = 0; i < 8; ++i)
    steps.push_back(scale == HeatScale::Reds ? vis::palette::heatColor((i + 0.5) / 8.0)
                                             : QColor::fromRgb(kPerceptual[std::size_t(i)]));
  return steps;
}

QColor heatScaleColor(HeatScale scale, double fraction) {
  if (scale == HeatScale::Reds) return vis::palette::heatColor(fraction);
  const double f = std::isfinite(fraction) ? std::clamp(fraction, 0.0, 1.0) : 0.0;
  return QColor::fromRgb(kPerceptual[std::min<std::size_t>(7, static_cast<std::size_t>(f * 8))]);
}

NodeFigures figuresOf(const ProfileView& view, int profileNode) {
  NodeFigures f;
  const auto i = static_cast<std::size_t>(profileNode);
  const prof::NodeProfile& node = view.profile->nodes[i];
  if (node.calls == 0) return f;
  const double runs =
      static_cast<double>(std::max<std::int64_t>(view.profile->function.measuredRuns, 1));
  f.ran = true;
  f.self = view.tables.selfSeconds[i];
  f.total = node.time.total / runs;
  f.share = view.tables.timeInNodes > 0 ? f.self / view.tables.timeInNodes : 0;
  f.mean = node.time.total / static_cast<double>(node.calls);
  f.p95 = node.time.p95;
  const double callsPerRun = static_cast<double>(node.calls) / runs;
  if (node.cost.known) f.flops = node.cost.flops * callsPerRun;
  if (view.calibration && node.cost.known && !node.hasInnerGraph) {
    const prof::RooflinePoint p =
        prof::roofline(node.cost, f.mean, *view.calibration, view.profile->function.threads != 1);
    if (p.known) {
      f.roofKnown = true;
      f.gflops = p.gflops;
      f.roofFraction = p.fraction;
      f.boundSeconds = p.boundSeconds * callsPerRun;
    }
  }
  for (const prof::OutputInfo& o : node.outputs) f.outputBytes += static_cast<double>(o.bytes);
  f.allocatedBytes = static_cast<double>(node.allocatedBytes);
  return f;
}

double metricValue(const NodeFigures& f, HeatMetric metric) {
  if (!f.ran) return kNaN;
  switch (metric) {
    case HeatMetric::Time:
      return f.self;
    case HeatMetric::Share:
      return f.share;
    case HeatMetric::Mean:
      return f.mean;
    case HeatMetric::P95:
      return f.p95;
    case HeatMetric::Gflops:
      return f.roofKnown || f.flops > 0 ? f.gflops : kNaN;
    case HeatMetric::Roofline:
      return f.roofKnown ? f.roofFraction : kNaN;
    case HeatMetric::OutputBytes:
      return f.outputBytes;
    case HeatMetric::AllocatedBytes:
      return f.allocatedBytes;
  }
  return kNaN;
}

QString formatMetric(HeatMetric metric, double value) {
  switch (metric) {
    case HeatMetric::Time:
    case HeatMetric::Mean:
    case HeatMetric::P95:
      return seconds(value);
    case HeatMetric::Share:
    case HeatMetric::Roofline:
      return share(value);
    case HeatMetric::Gflops:
      return QString::number(value, 'f', value < 10 ? 2 : 1);
    case HeatMetric::OutputBytes:
    case HeatMetric::AllocatedBytes:
      return QString::fromStdString(prof::formatBytes(value));
  }
  return {};
}

QString heatTooltip(const NodeFigures& f) {
  if (!f.ran) return QStringLiteral("Not run in the measured calls");
  QString text =
      QStringLiteral("Time: %1 (%2), p95 %3").arg(seconds(f.self), share(f.share), seconds(f.p95));
  if (f.roofKnown)
    text += QStringLiteral(", %1 GFLOP/s, %2 of roofline")
                .arg(QString::number(f.gflops, 'f', f.gflops < 10 ? 2 : 0), share(f.roofFraction));
  if (f.total > f.self)
    text += QStringLiteral("\nTotal (with its inner graph): %1").arg(seconds(f.total));
  if (f.outputBytes > 0 || f.allocatedBytes > 0)
    text += QStringLiteral("\nOutputs %1, allocated %2")
                .arg(QString::fromStdString(prof::formatBytes(f.outputBytes)),
                     QString::fromStdString(prof::formatBytes(f.allocatedBytes)));
  return text;
}

HeatMap buildHeatMap(const ProfileView& view, const HeatOptions& options) {
  HeatMap heat;
  auto d = std::make_shared<vis::Decorations>();
  d->model = view.snapshot->model;
  const std::size_t n = view.profile->nodes.size();
  heat.nodeColors.assign(n, QColor());
  std::vector<NodeFigures> figures(n);
  std::vector<double> values(n, kNaN);
  for (std::size_t i = 0; i < n; ++i) {
    figures[i] = figuresOf(view, static_cast<int>(i));
    values[i] = metricValue(figures[i], options.metric);
    if (std::isfinite(values[i])) heat.maxNode = std::max(heat.maxNode, values[i]);
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(values[i])) continue;
    const QColor c =
        heatScaleColor(options.scale, heat.maxNode > 0 ? values[i] / heat.maxNode : 0.0);
    heat.nodeColors[i] = c;
    const int v = view.viewNode[i];
    if (v < 0 || !d->model) continue;
    vis::NodeDecoration& nd = d->nodes[v];
    nd.fill = c;
    nd.tooltip = heatTooltip(figures[i]);
  }
  if (d->model) {
    const std::vector<GroupSum> sums = groupSums(view, figures);
    std::vector<double> groupValues(sums.size(), kNaN);
    for (std::size_t g = 1; g < sums.size(); ++g) {
      if (!sums[g].any) continue;
      groupValues[g] = metricValue(sums[g].figures(), options.metric);
      if (std::isfinite(groupValues[g])) heat.maxGroup = std::max(heat.maxGroup, groupValues[g]);
    }
    for (std::size_t g = 1; g < sums.size(); ++g) {
      if (!std::isfinite(groupValues[g])) continue;
      vis::NodeDecoration& gd = d->groups[static_cast<int>(g)];
      gd.fill =
          heatScaleColor(options.scale, heat.maxGroup > 0 ? groupValues[g] / heat.maxGroup : 0.0);
      gd.tooltip = QStringLiteral("Inclusive: ") + heatTooltip(sums[g].figures());
    }
  }
  QString text =
      QStringLiteral("%1: 0 – %2")
          .arg(heatMetricName(options.metric), formatMetric(options.metric, heat.maxNode));
  if (view.range) text += QStringLiteral(" (time range)");
  d->legend.push_back(scaleRow(heatScaleSteps(options.scale), text));
  if (heat.maxGroup > 0)
    d->legend.push_back(scaleRow(heatScaleSteps(options.scale),
                                 QStringLiteral("Collapsed groups, inclusive: 0 – %1")
                                     .arg(formatMetric(options.metric, heat.maxGroup))));
  heat.decorations = std::move(d);
  return heat;
}

std::vector<QColor> diffScaleSteps() {
  std::vector<QColor> steps;
  for (unsigned c : kDiverging) steps.push_back(QColor::fromRgb(c));
  return steps;
}

QColor diffColor(double secondsA, double secondsB) {
  if (secondsA <= 0 && secondsB <= 0) return QColor::fromRgb(kDiverging[4]);
  if (secondsA <= 0) return QColor::fromRgb(kDiverging[8]);  // added
  if (secondsB <= 0) return QColor::fromRgb(kDiverging[0]);
  const double change = std::clamp(std::log2(secondsB / secondsA), -2.0, 2.0);  // 4x either way
  // Nine steps over [-2, 2]: the middle one is within +-1/4 of a doubling (about +-19 %).
  const int step = std::clamp(static_cast<int>(std::lround(change * 2.0)) + 4, 0, 8);
  return QColor::fromRgb(kDiverging[static_cast<std::size_t>(step)]);
}

HeatMap buildDiffMap(const ProfileView& view, const prof::ProfileDiff& diff) {
  HeatMap heat;
  auto d = std::make_shared<vis::Decorations>();
  d->model = view.snapshot->model;
  heat.nodeColors.assign(view.profile->nodes.size(), QColor());
  const vis::ViewModel* model = d->model.get();
  struct Sides {
    double a = 0, b = 0;
  };
  std::vector<Sides> groups(model ? model->groups().size() : 0);
  auto changeText = [](double a, double b) {
    if (a <= 0) return QStringLiteral("added: %1").arg(seconds(b));
    if (b <= 0) return QStringLiteral("%1 -> 0").arg(seconds(a));
    const double ratio = b / a;
    return QStringLiteral("%1 -> %2 (%3%4 %, %5x %6)")
        .arg(seconds(a), seconds(b), ratio >= 1 ? QStringLiteral("+") : QString())
        .arg(QString::number((ratio - 1) * 100, 'f', 0))
        .arg(QString::number(ratio >= 1 ? ratio : 1 / ratio, 'f', 2),
             ratio >= 1 ? QStringLiteral("slower") : QStringLiteral("faster"));
  };
  int removed = 0;
  for (const prof::DiffRow& row : diff.rows) {
    if (row.nodesB.empty()) {
      ++removed;
      continue;
    }
    const QColor c = diffColor(row.secondsA, row.secondsB);
    const QString tip =
        QStringLiteral("%1 vs %2: %3\n%4")
            .arg(QString::fromStdString(diff.labelB), QString::fromStdString(diff.labelA),
                 changeText(row.secondsA, row.secondsB), QString::fromStdString(row.label));
    bool counted = false;
    for (std::int64_t b : row.nodesB) {
      if (b < 0 || static_cast<std::size_t>(b) >= heat.nodeColors.size()) continue;
      heat.nodeColors[static_cast<std::size_t>(b)] = c;
      const int v = view.viewNode[static_cast<std::size_t>(b)];
      if (v < 0 || !model) continue;
      d->nodes[v].fill = c;
      d->nodes[v].tooltip = tip;
      if (counted) continue;  // a row counts once per group, on its first drawn node
      counted = true;
      forEachGroupOf(*model, v, [&](int g) {
        groups[static_cast<std::size_t>(g)].a += row.secondsA;
        groups[static_cast<std::size_t>(g)].b += row.secondsB;
      });
    }
  }
  for (std::size_t g = 1; g < groups.size(); ++g) {
    if (groups[g].a <= 0 && groups[g].b <= 0) continue;
    vis::NodeDecoration& gd = d->groups[static_cast<int>(g)];
    gd.fill = diffColor(groups[g].a, groups[g].b);
    gd.tooltip = QStringLiteral("Inclusive, %1 vs %2: %3")
                     .arg(QString::fromStdString(diff.labelB), QString::fromStdString(diff.labelA),
                          changeText(groups[g].a, groups[g].b));
  }
  // Two short rows (the legend sits on the graph; a long one shrinks the fitted zoom).
  d->legend.push_back(
      scaleRow(diffScaleSteps(), QStringLiteral("Change vs %1: 4x faster (blue) – 4x slower (red)")
                                     .arg(QString::fromStdString(diff.labelA))));
  QString text =
      QStringLiteral("In nodes: %1 -> %2 per run").arg(seconds(diff.nodesA), seconds(diff.nodesB));
  if (removed > 0) text += QStringLiteral("; %1 rows gone").arg(removed);
  vis::LegendRow totals{vis::LegendRow::Swatch::Dot, QColor::fromRgb(kDiverging[4]), text};
  d->legend.push_back(totals);
  heat.decorations = std::move(d);
  return heat;
}

}  // namespace tscope::gui
