#pragma once
// InspectorPanel: the node inspector dock's contents. For an Apply: the op and its props, inputs
// and outputs with types and static shapes (and test-value shapes), view/destroy relations, scope
// and creation site; for a variable box: type, role, owner, clients, scope, creation site. Below,
// the node's values (ValueView) from every ValueSource: the graph's own values (constants, shared
// values, test values) always, values from a run when a source for them is added.

#include "gui/app/document.h"
#include "gui/app/inspector/value_source.h"

#include <QStringList>
#include <QWidget>

#include <memory>
#include <unordered_map>
#include <vector>

class QLabel;
class QSplitter;
class QTreeWidget;
class QTreeWidgetItem;

namespace tscope::gui {

class ValueView;

class InspectorPanel : public QWidget {
  Q_OBJECT

 public:
  explicit InspectorPanel(QWidget* parent = nullptr);

  void setDocument(std::shared_ptr<const Document> document);
  // Shows `node` of `model` (-1 clears). The model is kept alive while it is shown.
  void showNode(std::shared_ptr<const vis::ViewModel> model, int node);

  // Values from another place (a run): asked for every node shown from now on, after the graph's.
  void addValueSource(std::shared_ptr<const ValueSource> source);
  // What the kernels of `model`'s nodes said about how they ran (profiling's
  // NodeProfile::kernelNote, e.g. the chosen cuDNN algorithm), by view node: an Apply with one
  // shows it as the field "kernel". ProfileUi sets it for the pane its profile is drawn on; a
  // null model clears it. The node shown is shown again when it gains or loses a note.
  void setKernelNotes(std::shared_ptr<const vis::ViewModel> model,
                      std::unordered_map<int, QString> notes);

  const std::shared_ptr<const vis::ViewModel>& model() const { return m_model; }
  int node() const { return m_node; }
  // The title line ("Apply 12: Elemwise{add}", "Variable 3: x").
  QString title() const;
  // The value of a top-level field ("op", "props", "inputs", "outputs", "relations", "scope",
  // "created at", "type", "role", "owner", "clients", "name", "id"); empty when absent.
  QString fieldText(const QString& field) const;
  // The field's sub-items as lines ("0: x  fmatrix (?, 3)", "output 0 views input 1").
  QStringList fieldLines(const QString& field) const;
  ValueView* valueView() const { return m_values; }

 private:
  QTreeWidgetItem* addField(const QString& field, const QString& value);
  void showApply(const engine::Apply& apply, const engine::FunctionGraph& graph);
  void showVariable(const vis::ViewNode& node);
  void showValues(const std::vector<std::pair<QString, const engine::Variable*>>& variables);
  QTreeWidgetItem* findField(const QString& field) const;
  void fitFieldsToContents();

  std::shared_ptr<const Document> m_document;
  std::shared_ptr<const vis::ViewModel> m_model;
  int m_node = -1;
  std::shared_ptr<const vis::ViewModel> m_notesModel;
  std::unordered_map<int, QString> m_notes;
  std::vector<std::shared_ptr<const ValueSource>> m_sources;
  QLabel* m_title = nullptr;
  QSplitter* m_split = nullptr;
  QTreeWidget* m_fields = nullptr;
  ValueView* m_values = nullptr;
};

}  // namespace tscope::gui
