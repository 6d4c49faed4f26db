#include "gui/app/graph_pane_breadcrumb.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QToolButton>

namespace tscope::gui {

BreadcrumbBar::BreadcrumbBar(QWidget* parent) : QWidget(parent), m_layout(new QHBoxLayout(this)) {
  m_layout->setContentsMargins(4, 2, 4, 2);
  m_layout->setSpacing(2);
  setPath({}, {});
}

void BreadcrumbBar::clearCrumbs() {
  while (QLayoutItem* item = m_layout->takeAt(0)) {
    if (QWidget* widget = item->widget()) widget->deleteLater();
    delete item;
  }
}

void BreadcrumbBar::setPath(const std::vector<int>& groups, const QStringList& names) {
  clearCrumbs();
  m_names = names;
  auto addCrumb = [this](const QString& text, int group, bool current) {
    auto* button = new QToolButton(this);
    button->setText(text);
    button->setAutoRaise(true);
    button->setToolTip(group == 0 ? tr("Zoom to the whole graph")
                                  : tr("Zoom to group %1").arg(text));
    QFont font = button->font();
    font.setBold(current);
    button->setFont(font);
    connect(button, &QToolButton::clicked, this, [this, group] { emit groupClicked(group); });
    m_layout->addWidget(button);
  };
  addCrumb(tr("Graph"), 0, groups.empty());
  for (std::size_t i = 0; i < groups.size() && i < static_cast<std::size_t>(names.size()); ++i) {
    m_layout->addWidget(new QLabel(QStringLiteral("›"), this));
    addCrumb(names[static_cast<int>(i)], groups[i], i + 1 == groups.size());
  }
  m_layout->addStretch(1);
}

}  // namespace tscope::gui
