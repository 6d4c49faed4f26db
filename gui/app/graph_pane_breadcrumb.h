#pragma once
// The breadcrumb bar above a GraphPane's view: the root ("Graph") then each group on the path of
// the selected node, outermost first. Clicking a crumb asks to zoom to that group.

#include <QStringList>
#include <QWidget>

#include <vector>

class QHBoxLayout;

namespace tscope::gui {

class BreadcrumbBar : public QWidget {
  Q_OBJECT
 public:
  explicit BreadcrumbBar(QWidget* parent = nullptr);

  // `groups` are ViewModel group indices (root excluded), `names` their titles, root first.
  void setPath(const std::vector<int>& groups, const QStringList& names);
  QStringList names() const { return m_names; }

 signals:
  void groupClicked(int group);  // 0 for the root

 private:
  void clearCrumbs();
  QHBoxLayout* m_layout;
  QStringList m_names;
};

}  // namespace tscope::gui
