// MainWindow: View > Parameters (boxes | badges | hidden), remembered per file (issue 24).
#include "gui/app/graph_pane.h"
#include "gui/app/main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QCryptographicHash>
#include <QFileInfo>
#include <QSettings>

namespace tscope::gui {

namespace {

struct ParameterAction {
  const char* name;
  vis::ParameterMode mode;
};
constexpr ParameterAction kParameterActions[] = {
    {"actionParametersBoxes", vis::ParameterMode::Boxes},
    {"actionParametersBadges", vis::ParameterMode::Badges},
    {"actionParametersHidden", vis::ParameterMode::Hidden},
};

}  // namespace

QString MainWindow::parameterModeKey(const QString& path) {
  const QByteArray hash = QCryptographicHash::hash(QFileInfo(path).absoluteFilePath().toUtf8(),
                                                   QCryptographicHash::Sha1)
                              .toHex()
                              .left(16);
  return QStringLiteral("parameters/%1").arg(QString::fromLatin1(hash));
}

std::vector<GraphPane*> MainWindow::windowPanes() const {
  return {m_originalPane, m_optimizedPane, m_stepPane, m_leftPane, m_rightPane};
}

void MainWindow::createParameterActions() {
  auto* group = new QActionGroup(this);
  group->setExclusive(true);
  const QString texts[] = {tr("As &Boxes"), tr("As B&adges"), tr("&Hidden")};
  const QString tips[] = {
      tr("Parameters as boxes with edges to their readers (d3viz)"),
      tr("Parameters as rows inside the nodes that read them (name, type, shape)"),
      tr("Parameters not drawn")};
  for (std::size_t i = 0; i < std::size(kParameterActions); ++i) {
    QAction* action = makeAction(QString::fromLatin1(kParameterActions[i].name), texts[i], {});
    action->setCheckable(true);
    action->setToolTip(tips[i]);
    group->addAction(action);
    const vis::ParameterMode mode = kParameterActions[i].mode;
    connect(action, &QAction::triggered, this, [this, mode] { setParameterMode(mode); });
  }
}

void MainWindow::setParameterMode(vis::ParameterMode mode) {
  for (GraphPane* pane : windowPanes()) pane->setParameterMode(mode);
  if (m_document)
    QSettings().setValue(parameterModeKey(m_document->path), vis::parameterModeName(mode));
  updateParameterActions();
}

void MainWindow::applyStoredParameterMode() {
  std::optional<vis::ParameterMode> mode;
  if (m_document)
    mode = vis::parameterModeFromName(
        QSettings().value(parameterModeKey(m_document->path)).toString());
  for (GraphPane* pane : windowPanes()) pane->setParameterMode(mode);
}

void MainWindow::updateParameterActions() {
  GraphPane* pane = currentPane();
  const bool shown = pane && pane->model();
  for (const ParameterAction& entry : kParameterActions) {
    QAction* action = m_actions.value(QString::fromLatin1(entry.name));
    if (!action) continue;
    action->setEnabled(shown);
    const QSignalBlocker blocker(action);
    action->setChecked(shown && pane->parameterMode() == entry.mode);
  }
}

}  // namespace tscope::gui
