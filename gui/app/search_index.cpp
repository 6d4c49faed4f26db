#include "gui/app/search_index.h"

#include "engine/graph/apply.h"
#include "engine/graph/op.h"
#include "engine/graph/variable.h"

namespace tscope::gui {

std::shared_ptr<const SearchIndex> SearchIndex::build(const vis::ViewModel& model) {
  auto index = std::make_shared<SearchIndex>();
  const auto& nodes = model.nodes();
  index->m_text.reserve(nodes.size());
  index->m_ids.reserve(nodes.size());
  for (const vis::ViewNode& node : nodes) {
    QString text = node.label;
    if (node.apply) {
      text += u'\n' + QString::fromStdString(node.apply->op().str());
      text += u'\n' + QString::fromStdString(node.apply->scope());
    } else if (node.variable) {
      text += u'\n' + QString::fromStdString(node.variable->name());
      text += u'\n' + QString::fromStdString(node.variable->scope());
    }
    text += QStringLiteral("\n#") + QString::number(node.graphId);
    index->m_text.push_back(text.toLower());
    index->m_ids.push_back(node.graphId);
  }
  return index;
}

std::vector<int> SearchIndex::find(const QString& query) const {
  std::vector<int> hits;
  QString needle = query.trimmed().toLower();
  if (needle.isEmpty()) return hits;
  if (needle.startsWith(QLatin1String("id:"))) {
    bool ok = false;
    qint64 id = QStringView(needle).mid(3).trimmed().toLongLong(&ok);
    if (!ok) return hits;  // "id:" with no number yet (typing in progress) matches nothing
    for (std::size_t i = 0; i < m_ids.size(); ++i)
      if (m_ids[i] == id) hits.push_back(static_cast<int>(i));
    return hits;
  }
  for (std::size_t i = 0; i < m_text.size(); ++i)
    if (m_text[i].contains(needle)) hits.push_back(static_cast<int>(i));
  return hits;
}

}  // namespace tscope::gui
