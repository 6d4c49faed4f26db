// DebugUi, the view side: snapshots to decorations (on a worker), centring the current node,
// the banner, the NanGuard chain, the call stack's frames, the inspector's values.
#include "engine/graph/apply.h"
#include "engine/graph/variable.h"
#include "gui/app/debug/debug_dialogs.h"
#include "gui/app/debug/debug_models.h"
#include "gui/app/debug/debug_ui.h"
#include "gui/app/debug/debug_value_source.h"
#include "gui/app/graph_pane.h"
#include "gui/app/inspector/inspector_panel.h"
#include "gui/app/inspector/slice_table_model.h"
#include "gui/app/inspector/value_view.h"
#include "gui/app/main_window.h"
#include "visualizers/threads/hand_off.h"

#include <QComboBox>
#include <QDockWidget>
#include <QFrame>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QStatusBar>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

namespace tscope::gui {

namespace debug = engine::debug;
using debug::SessionPhase;

std::vector<InspectedValue> DebugValueSource::valuesOf(const engine::Variable& variable) const {
  if (!m_snapshot) return {};
  const DebugValue* found = nullptr;
  if (const engine::Apply* owner = variable.owner()) {
    // A value of a node the compile rewrote is not the original node's value.
    if (m_lineage && m_lineage->rewritten(owner->id())) return {};
    for (std::size_t f = 0; f < m_snapshot->frames.size() && !found; ++f)
      found = m_snapshot->find(f, owner->id(), variable.index());
  } else {
    found = m_snapshot->findByName(variable.displayName());
  }
  if (!found) return {};
  // The name the session knows the value by (Note [Session values]).
  QString name = QString::fromStdString(found->view.name);
  if (found->view.producerId >= 0 &&
      (variable.name().empty() || found->view.name != variable.name()))
    name = QStringLiteral("node:%1.%2").arg(found->view.producerId).arg(found->view.outputIndex);
  QString label = QStringLiteral("%1 at pause %2 (run %3)")
                      .arg(name)
                      .arg(m_snapshot->state.serial)
                      .arg(m_snapshot->run);
  if (found->view.edited) label += QStringLiteral(", edited");
  m_names[label] = {name, found->view.frame};
  return {{label, found->view.value}};
}

bool DebugValueSource::nameOf(const QString& label, QString& name, std::size_t& frame) const {
  for (const auto& [key, value] : m_names)
    if (label.endsWith(key)) {
      name = value.first;
      frame = value.second;
      return true;
    }
  return false;
}

void DebugUi::connectInspector() {
  ValueView* view = m_window->inspector()->valueView();
  connect(view, &ValueView::statsReady, this, &DebugUi::updateSliceEditing);
  connect(view->sliceModel(), &SliceTableModel::elementEdited, this,
          [this, view](const std::vector<std::int64_t>& index, double value) {
            const int current = view->currentValue();
            if (current < 0 || current >= static_cast<int>(view->values().size())) return;
            const InspectedValue& shown = view->values()[static_cast<std::size_t>(current)];
            QString name;
            std::size_t frame = 0;
            if (!m_values->nameOf(shown.label, name, frame)) return;
            try {
              m_controller->setValue(
                  name, editedValue(shown.tensor, ValueEdit::SetAt, value, index), frame);
            } catch (const std::exception& e) {
              m_window->statusBar()->showMessage(
                  tr("Edit %1: %2").arg(name, QString::fromUtf8(e.what())), 10000);
            }
          });
}

void DebugUi::updateSliceEditing() {
  ValueView* view = m_window->inspector()->valueView();
  const int current = view->currentValue();
  QString name;
  std::size_t frame = 0;
  const bool editable =
      m_controller->phase() == SessionPhase::Paused && current >= 0 &&
      current < static_cast<int>(view->values().size()) &&
      m_values->nameOf(view->values()[static_cast<std::size_t>(current)].label, name, frame);
  view->sliceModel()->setEditable(editable);
}

QString DebugUi::bannerText() const {
  return m_banner->isVisible() || !m_banner->isHidden() ? m_bannerLabel->text() : QString();
}

GraphPane* DebugUi::targetPane() const {
  GraphPane* current = m_window->currentPane();
  if (current && mapperFor(current)) return current;
  return m_window->originalPane();
}

std::shared_ptr<const DebugMapper> DebugUi::mapperFor(GraphPane* pane) const {
  if (!pane || !pane->model()) return nullptr;
  if (m_originalMapper && pane->model() == m_originalMapper->model()) return m_originalMapper;
  if (m_optimizedMapper && pane->model() == m_optimizedMapper->model()) return m_optimizedMapper;
  return nullptr;
}

bool DebugUi::isBusy() const {
  return m_controller->isBusy() || m_decorationJobs > 0;
}

QString DebugUi::valueName(GraphPane* pane, int node) const {
  const auto mapper = mapperFor(pane);
  if (!mapper || node < 0 || mapper->isInner(node)) return {};
  const vis::ViewNode& vn = mapper->model()->nodes()[static_cast<std::size_t>(node)];
  const engine::Variable* var = nullptr;
  std::int64_t compiled = -1;
  if (vn.kind == vis::NodeKind::Apply && vn.apply && vn.apply->nOutputs() > 0) {
    var = &vn.apply->outputRef(0);
    compiled = mapper->compiledNode(node);
  } else if (vn.variable) {
    var = vn.variable;
    if (var->owner()) {
      const int owner = mapper->model()->nodeOfApply(var->owner()->id());
      compiled = owner >= 0 ? mapper->compiledNode(owner) : -1;
    }
  }
  if (!var) return {};
  if (!var->name().empty()) return QString::fromStdString(var->name());
  if (!var->owner()) return QString::fromStdString(var->displayName());
  if (compiled < 0) return {};
  return QStringLiteral("node:%1.%2").arg(compiled).arg(var->index());
}

void DebugUi::createBanner() {
  m_banner = new QFrame;
  m_banner->setObjectName(QStringLiteral("debugBanner"));
  m_banner->setFrameShape(QFrame::StyledPanel);
  auto* layout = new QHBoxLayout(m_banner);
  layout->setContentsMargins(8, 4, 8, 4);
  m_bannerLabel = new QLabel;
  m_bannerLabel->setObjectName(QStringLiteral("debugBannerText"));
  m_bannerLabel->setWordWrap(true);
  m_bannerLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_bannerCreator = new QPushButton(tr("Go to Creator"));
  m_bannerSave = new QPushButton(tr("Save Failure…"));
  auto* close = new QPushButton(QStringLiteral("×"));
  close->setFlat(true);
  close->setToolTip(tr("Hide the banner"));
  layout->addWidget(m_bannerLabel, 1);
  layout->addWidget(m_bannerCreator);
  layout->addWidget(m_bannerSave);
  layout->addWidget(close);
  connect(close, &QPushButton::clicked, m_banner, &QWidget::hide);
  connect(m_bannerCreator, &QPushButton::clicked, this, [this] {
    if (m_shownEvent && !m_shownEvent->chain.empty())
      showChainLink(static_cast<int>(m_shownEvent->chain.size()) - 1);
  });
  connect(m_bannerSave, &QPushButton::clicked, m_window->action("actionDebugSaveFailure"),
          &QAction::trigger);
  m_banner->hide();
  // Above the graph: the central widget's column holds the panes and the search bar.
  if (auto* column = qobject_cast<QVBoxLayout*>(m_window->centralWidget()->layout()))
    column->insertWidget(0, m_banner);
}

void DebugUi::showBanner(const QString& text, bool nan) {
  m_bannerLabel->setText(text);
  m_banner->setStyleSheet(nan ? QStringLiteral("#debugBanner { background: #fde0dc; }")
                              : QStringLiteral("#debugBanner { background: #fff4ce; }"));
  m_bannerCreator->setVisible(nan);
  m_bannerSave->setVisible(nan);
  m_banner->show();
}

void DebugUi::onDocument() {
  const std::shared_ptr<const Document> doc = m_window->document();
  if (doc == m_controller->document()) return;
  m_banner->hide();
  m_shownEvent.reset();
  m_chainList->clear();
  m_documentLineage.reset();
  m_originalMapper.reset();
  m_optimizedMapper.reset();
  m_controller->setDocument(doc);
  {
    const QSignalBlocker block(m_modeCombo);
    m_modeCombo->setCurrentIndex(
        std::max(0, m_modeCombo->findData(static_cast<int>(m_controller->mode()))));
    const QSignalBlocker blockDevice(m_deviceCombo);
    m_deviceCombo->setCurrentIndex(
        std::max(0, m_deviceCombo->findData(static_cast<int>(m_controller->device()))));
  }
  rebuildMappers();
  updateActions();
}

void DebugUi::rebuildMappers() {
  const std::shared_ptr<const Document> doc = m_controller->document();
  if (!doc) return;
  const auto compiled = m_controller->lineage();
  ++m_decorationJobs;
  vis::runOnWorker(
      this,
      [doc, compiled] {
        std::shared_ptr<const debug::NodeLineage> docLineage;
        if (doc->optimized)
          docLineage = std::make_shared<const debug::NodeLineage>(*doc->optimized, doc->rewrites);
        auto original = std::make_shared<const DebugMapper>(doc->originalModel, compiled);
        std::shared_ptr<const DebugMapper> optimized;
        if (doc->optimizedModel)
          optimized =
              std::make_shared<const DebugMapper>(doc->optimizedModel, compiled, docLineage);
        return std::make_tuple(docLineage, original, optimized);
      },
      [this, doc](auto result) {
        --m_decorationJobs;
        if (doc != m_controller->document()) return;
        std::tie(m_documentLineage, m_originalMapper, m_optimizedMapper) = std::move(result);
        updateDecorations();
        // A pause that arrived before the mappers: navigate now.
        if (m_shownEvent && !m_shownEvent->chain.empty())
          showChainLink(static_cast<int>(m_shownEvent->chain.size()) - 1);
        else if (const auto s = m_controller->snapshot();
                 s && s->state.phase == SessionPhase::Paused && m_centredSerial == s->state.serial)
          centreCurrent(*s);
      });
}

void DebugUi::updateDecorations() {
  if (!m_originalMapper) return;
  const auto snapshot = m_controller->snapshot();
  const auto breakpoints = m_controller->breakpoints();
  const auto event = m_shownEvent;
  const std::uint64_t ticket = ++m_decorationTicket;
  for (const auto& mapper : {m_originalMapper, m_optimizedMapper}) {
    if (!mapper) continue;
    ++m_decorationJobs;
    vis::runOnWorker(
        this,
        [mapper, snapshot, breakpoints, event] {
          std::shared_ptr<const vis::Decorations> nan = event ? nanLayer(*mapper, *event) : nullptr;
          return std::pair{debugLayer(*mapper, snapshot.get(), breakpoints), nan};
        },
        [this, mapper, ticket](auto layers) {
          --m_decorationJobs;
          if (ticket == m_decorationTicket) {
            for (GraphPane* pane : {m_window->originalPane(), m_window->optimizedPane(),
                                    m_window->leftPane(), m_window->rightPane()}) {
              if (pane->model() != mapper->model()) continue;
              pane->setDecorations(QStringLiteral("debug"), layers.first, 10);
              pane->setDecorations(QStringLiteral("nan"), layers.second, 20);
            }
          }
          if (m_decorationJobs == 0) emit decorationsUpdated();
        });
  }
}

void DebugUi::refreshInspector() {
  InspectorPanel* inspector = m_window->inspector();
  if (inspector->model() && inspector->node() >= 0)
    inspector->showNode(inspector->model(), inspector->node());
}

void DebugUi::onSnapshot(const std::shared_ptr<const DebugSnapshot>& snapshot) {
  m_values->setSnapshot(snapshot, m_controller->lineage());
  updateActions();
  if (!snapshot) {
    updateDecorations();
    refreshInspector();
    return;
  }
  const debug::SessionState& st = snapshot->state;
  if (!st.message.empty())
    m_window->statusBar()->showMessage(QString::fromStdString(st.message), 15000);
  if (st.reason == debug::PauseKind::BreakPointOp) {
    // The op's outputs are its monitored values.
    QStringList values;
    for (const DebugValue& v :
         snapshot->frames.empty() ? std::vector<DebugValue>{} : snapshot->frames.back())
      if (v.view.producerId == st.breakOpNodeId)
        values << QStringLiteral("%1 min %2 max %3 mean %4")
                      .arg(QString::fromStdString(v.view.name),
                           formatElement(v.view.stats.min, engine::DType::Float64),
                           formatElement(v.view.stats.max, engine::DType::Float64),
                           formatElement(v.view.stats.mean, engine::DType::Float64));
    showBanner(tr("BreakPoint op '%1' paused the run. Monitored: %2")
                   .arg(QString::fromStdString(st.breakOpName),
                        values.isEmpty() ? tr("(no values)") : values.join(QStringLiteral("; "))),
               false);
  } else if (st.phase == SessionPhase::Failed) {
    showBanner(tr("The run failed at node %1: %2")
                   .arg(st.errorNodeId)
                   .arg(QString::fromStdString(st.error)),
               false);
  } else if (st.reason != debug::PauseKind::NanGuard && m_controller->nanEvents().empty()) {
    m_banner->hide();
  }
  // The paused node centred (once per pause: the user may look elsewhere afterwards).
  if (st.phase == SessionPhase::Paused && st.serial != m_centredSerial) {
    m_centredSerial = st.serial;
    centreCurrent(*snapshot);
    if (QDockWidget* d = m_window->dock(QStringLiteral("callStackDock")); d && d->isHidden())
      d->show();
  }
  updateDecorations();
  refreshInspector();
  updateSliceEditing();
}

void DebugUi::centreCurrent(const DebugSnapshot& snapshot) {
  const debug::SessionState& st = snapshot.state;
  if (st.reason == debug::PauseKind::NanGuard) return;  // the creator is selected instead
  GraphPane* pane = targetPane();
  const auto mapper = mapperFor(pane);
  if (!mapper) return;
  const std::int64_t current =
      st.reason == debug::PauseKind::Error ? st.errorNodeId : st.lastNodeId;
  for (std::size_t f = st.frames.size(); f-- > 0;) {
    const std::vector<int> nodes = mapper->viewNodes(current, callersOf(st, f));
    if (nodes.empty()) continue;
    pane->selectNode(nodes.front());
    return;
  }
}

void DebugUi::onNanEvents() {
  const auto& events = m_controller->nanEvents();
  if (events.empty()) {
    m_shownEvent.reset();
    m_chainList->clear();
    updateDecorations();
    return;
  }
  if (QDockWidget* d = m_window->dock(QStringLiteral("alertsDock"))) {
    d->show();
    d->raise();
  }
  // Pausing: the one event. Collecting: the last, nearest the outputs, whose chain runs back
  // through every propagating node to the creator.
  showNanEvent(m_controller->nanGuardCollects() ? static_cast<int>(events.size()) - 1 : 0);
}

void DebugUi::showNanEvent(int row) {
  const auto report = m_alertsModel->report(row);
  if (!report) return;
  m_shownEvent = report;
  m_alertsView->selectRow(row);
  m_chainList->clear();
  for (const debug::ChainLink& link : report->chain) {
    auto* item = new QListWidgetItem(
        QStringLiteral("%1: %2 — output %3 %4 = %5")
            .arg(qstr(debug::roleName(link.role)), QString::fromStdString(link.node.describe()))
            .arg(link.output)
            .arg(QString::fromStdString(debug::indexText(link.firstIndex)),
                 QString::fromStdString(debug::valueText(link.firstValue))));
    item->setForeground(link.role == debug::ChainLink::Role::Creator
                            ? kCreatorColor
                            : kPropagatorColor.darker(130));
    m_chainList->addItem(item);
  }
  const int count = static_cast<int>(m_controller->nanEvents().size());
  showBanner(tr("NanGuard%1: %2")
                 .arg(count > 1 ? tr(" (%1 events)").arg(count) : QString(),
                      QString::fromStdString(report->summary())),
             true);
  if (!report->chain.empty()) showChainLink(static_cast<int>(report->chain.size()) - 1);
  updateDecorations();
}

void DebugUi::showChainLink(int link) {
  if (!m_shownEvent || link < 0 || link >= static_cast<int>(m_shownEvent->chain.size())) return;
  GraphPane* pane = targetPane();
  const auto mapper = mapperFor(pane);
  if (!mapper) return;
  const std::vector<int> nodes =
      linkNodes(*mapper, m_shownEvent->chain[static_cast<std::size_t>(link)].node);
  if (!nodes.empty()) pane->selectNode(nodes.front());  // opens the groups that hide it
  if (m_chainList->currentRow() != link) m_chainList->setCurrentRow(link);
}

void DebugUi::showFrame(std::size_t frame) {
  const auto snapshot = m_controller->snapshot();
  GraphPane* pane = targetPane();
  const auto mapper = mapperFor(pane);
  if (!snapshot || !mapper || frame >= snapshot->state.frames.size()) return;
  const std::vector<std::int64_t> callers = callersOf(snapshot->state, frame);
  const int group = mapper->frameGroup(callers);
  if (group > 0) {
    vis::GroupState state = pane->groupState();
    const auto& groups = mapper->model()->groups();
    for (int g = group; g > 0; g = groups[static_cast<std::size_t>(g)].parent)
      state.setExpanded(groups[static_cast<std::size_t>(g)].path, true);
    pane->setGroupState(state, groups[static_cast<std::size_t>(group)].path);
  }
  const std::vector<int> next =
      mapper->viewNodes(snapshot->state.frames[frame].nextNodeId, callers);
  if (!next.empty()) pane->selectNode(next.front());
}

void DebugUi::onRecomputed(const debug::RecomputeResult& result) {
  const auto snapshot = m_controller->snapshot();
  if (!snapshot) return;
  // Small (the changed values only), so built here: the flash must start with the new values.
  for (const auto& mapper : {m_originalMapper, m_optimizedMapper}) {
    if (!mapper) continue;
    auto layer = flashLayer(*mapper, *snapshot, result);
    for (GraphPane* pane : {m_window->originalPane(), m_window->optimizedPane(),
                            m_window->leftPane(), m_window->rightPane()})
      if (pane->model() == mapper->model())
        pane->setDecorations(QStringLiteral("flash"), layer, 30);
  }
  m_flashTimer->start();
}

}  // namespace tscope::gui
