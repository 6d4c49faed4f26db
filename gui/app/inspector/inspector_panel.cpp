#include "gui/app/inspector/inspector_panel.h"

#include "engine/graph/apply.h"
#include "engine/graph/op.h"
#include "gui/app/inspector/value_view.h"

#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTreeWidget>
#include <QTreeWidgetItemIterator>
#include <QVBoxLayout>

#include <algorithm>

namespace tscope::gui {

namespace {

QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

// "(?, 784)": the static shape with unknown dimensions as '?'.
QString staticShape(const engine::TensorType& type) {
  QStringList dims;
  for (std::int64_t d : type.shape())
    dims << (d == engine::kUnknownDim ? QStringLiteral("?") : QString::number(d));
  return "(" + dims.join(", ") + (dims.size() == 1 ? ",)" : ")");
}

// "x  fmatrix (?, 3)  · test value (2, 3)".
QString describeValue(const engine::Variable& v) {
  QString s = qs(v.displayName()) + "  " + qs(v.type().shortStr()) + " " + staticShape(v.type());
  if (v.testValue()) s += "  · test value " + qs(engine::shapeToString(v.testValue()->shape()));
  return s;
}

QString scopeText(const std::string& scope) {
  return scope.empty() ? QObject::tr("(top level)") : qs(scope);
}
QString siteText(const engine::SourceSite& site) {
  return site.empty() ? QObject::tr("unknown") : qs(site.str());
}

// A JSON value as tree items: objects and arrays nest, scalars are one line.
void addJson(QTreeWidgetItem* parent, const QString& key, const nlohmann::json& value) {
  auto* item = new QTreeWidgetItem(parent, {key, qs(value.dump())});
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it) addJson(item, qs(it.key()), it.value());
  } else if (value.is_array() && value.size() > 1 &&
             std::any_of(value.begin(), value.end(),
                         [](const auto& e) { return e.is_structured(); })) {
    // Arrays of scalars read best on one line; nested ones get an item per element.
    for (std::size_t i = 0; i < value.size(); ++i) addJson(item, QString::number(i), value[i]);
  }
}

}  // namespace

InspectorPanel::InspectorPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  m_title = new QLabel(this);
  m_title->setObjectName("inspectorTitle");
  m_title->setWordWrap(true);
  m_title->setTextInteractionFlags(Qt::TextSelectableByMouse);
  QFont bold = m_title->font();
  bold.setBold(true);
  m_title->setFont(bold);
  layout->addWidget(m_title);

  m_split = new QSplitter(Qt::Vertical, this);
  auto* split = m_split;
  m_fields = new QTreeWidget(split);
  m_fields->setObjectName("inspectorFields");
  m_fields->setColumnCount(2);
  m_fields->setHeaderLabels({tr("Field"), tr("Value")});
  m_fields->setAlternatingRowColors(true);
  m_fields->setUniformRowHeights(true);
  m_fields->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  m_values = new ValueView(split);
  m_values->setObjectName("inspectorValue");
  split->addWidget(m_fields);
  split->addWidget(m_values);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 2);
  layout->addWidget(split, 1);

  m_sources.push_back(std::make_shared<GraphValueSource>());
  showNode(nullptr, -1);
}

void InspectorPanel::setDocument(std::shared_ptr<const Document> document) {
  m_document = std::move(document);
  showNode(nullptr, -1);
}

void InspectorPanel::addValueSource(std::shared_ptr<const ValueSource> source) {
  if (source) m_sources.push_back(std::move(source));
}

void InspectorPanel::setKernelNotes(std::shared_ptr<const vis::ViewModel> model,
                                    std::unordered_map<int, QString> notes) {
  auto noteOf = [&](int node) {
    if (!m_notesModel || m_notesModel != m_model) return QString();
    auto it = m_notes.find(node);
    return it == m_notes.end() ? QString() : it->second;
  };
  const QString before = noteOf(m_node);
  m_notesModel = model ? std::move(model) : nullptr;
  m_notes = m_notesModel ? std::move(notes) : std::unordered_map<int, QString>{};
  if (m_model && m_node >= 0 && noteOf(m_node) != before) showNode(m_model, m_node);
}

QString InspectorPanel::title() const {
  return m_title->text();
}

QTreeWidgetItem* InspectorPanel::addField(const QString& field, const QString& value) {
  auto* item = new QTreeWidgetItem(m_fields, {field, value});
  item->setToolTip(1, value);
  return item;
}

QTreeWidgetItem* InspectorPanel::findField(const QString& field) const {
  for (int i = 0; i < m_fields->topLevelItemCount(); ++i)
    if (m_fields->topLevelItem(i)->text(0) == field) return m_fields->topLevelItem(i);
  return nullptr;
}

QString InspectorPanel::fieldText(const QString& field) const {
  const QTreeWidgetItem* item = findField(field);
  return item ? item->text(1) : QString();
}

QStringList InspectorPanel::fieldLines(const QString& field) const {
  QStringList lines;
  const QTreeWidgetItem* item = findField(field);
  for (int i = 0; item && i < item->childCount(); ++i) {
    const QTreeWidgetItem* c = item->child(i);
    lines << (c->text(1).isEmpty() ? c->text(0) : c->text(0) + ": " + c->text(1));
  }
  return lines;
}

void InspectorPanel::showNode(std::shared_ptr<const vis::ViewModel> model, int node) {
  m_fields->clear();
  if (!model || node < 0 || node >= static_cast<int>(model->nodes().size())) {
    m_model.reset();
    m_node = -1;
    m_title->setText(tr("Select a node in the graph to inspect it."));
    m_values->setValues({});
    m_values->hide();
    return;
  }
  m_model = std::move(model);
  m_node = node;
  const vis::ViewNode& n = m_model->nodes()[static_cast<std::size_t>(node)];
  const engine::FunctionGraph& graph = n.graph ? *n.graph : m_model->graph();
  if (n.kind == vis::NodeKind::Apply && n.apply)
    showApply(*n.apply, graph);
  else if (n.variable)
    showVariable(n);
  m_fields->expandToDepth(0);
  fitFieldsToContents();
}

void InspectorPanel::fitFieldsToContents() {
  if (m_values->isHidden()) return;
  // The fields get the height of their rows (up to half the panel), the value view the rest.
  int rows = 0;
  for (QTreeWidgetItemIterator it(m_fields, QTreeWidgetItemIterator::NotHidden); *it; ++it)
    if (!(*it)->parent() || (*it)->parent()->isExpanded()) ++rows;
  const int rowHeight =
      m_fields->sizeHintForRow(0) > 0 ? m_fields->sizeHintForRow(0) : fontMetrics().height() + 4;
  const int wanted =
      rows * rowHeight + m_fields->header()->sizeHint().height() + 2 * m_fields->frameWidth() + 4;
  const int total = m_split->height();
  if (total <= 0) return;  // not laid out yet: the stretch factors decide
  const int fields = std::min(wanted, total / 2);
  m_split->setSizes({fields, std::max(0, total - fields)});
}

void InspectorPanel::showApply(const engine::Apply& apply, const engine::FunctionGraph& graph) {
  const engine::Op& op = apply.op();
  m_title->setText(tr("Apply %1: %2").arg(apply.id()).arg(qs(op.str())));
  addField(tr("op"), qs(op.str()));
  addField(tr("id"), QString::number(apply.id()));
  const nlohmann::json props = op.props();
  QTreeWidgetItem* propsItem = addField(tr("props"), props.empty() ? tr("none") : qs(props.dump()));
  if (props.is_object())
    for (auto it = props.begin(); it != props.end(); ++it)
      addJson(propsItem, qs(it.key()), it.value());

  QTreeWidgetItem* inputs = addField(tr("inputs"), QString::number(apply.nInputs()));
  for (int i = 0; i < apply.nInputs(); ++i)
    new QTreeWidgetItem(inputs, {QString::number(i), describeValue(*apply.input(i))});
  QTreeWidgetItem* outputs = addField(tr("outputs"), QString::number(apply.nOutputs()));
  for (int o = 0; o < apply.nOutputs(); ++o) {
    const engine::Variable& out = apply.outputRef(o);
    const std::size_t clients = graph.contains(out) ? graph.clients(out).size() : 0;
    new QTreeWidgetItem(
        outputs, {QString::number(o),
                  describeValue(out) + tr("  · %n client(s)", "", static_cast<int>(clients))});
  }

  // d3viz draws these as blue (view) and red (destroy) edges; here they are spelled out.
  QStringList relations;
  for (const auto& [output, ins] : op.viewMap())
    for (int in : ins) relations << tr("output %1 views input %2").arg(output).arg(in);
  for (const auto& [output, ins] : op.destroyMap())
    for (int in : ins) relations << tr("output %1 destroys input %2").arg(output).arg(in);
  QTreeWidgetItem* rel =
      addField(tr("relations"), relations.isEmpty() ? tr("none") : relations.join("; "));
  for (const QString& r : relations) new QTreeWidgetItem(rel, {r});

  addField(tr("scope"), scopeText(apply.scope()));
  addField(tr("created at"), siteText(apply.site()));
  // The profile's word on how the node's kernel ran it (setKernelNotes).
  if (m_notesModel && m_notesModel == m_model)
    if (auto it = m_notes.find(m_node); it != m_notes.end() && !it->second.isEmpty())
      addField(tr("kernel"), it->second);

  std::vector<std::pair<QString, const engine::Variable*>> vars;
  for (int o = 0; o < apply.nOutputs(); ++o)
    vars.emplace_back(tr("output %1").arg(o), &apply.outputRef(o));
  showValues(vars);
}

void InspectorPanel::showVariable(const vis::ViewNode& node) {
  const engine::Variable& v = *node.variable;
  const engine::FunctionGraph& graph = node.graph ? *node.graph : m_model->graph();
  m_title->setText(tr("Variable %1: %2").arg(v.id()).arg(qs(v.displayName())));
  addField(tr("name"), v.name().empty() ? tr("(unnamed)") : qs(v.name()));
  addField(tr("id"), QString::number(v.id()));
  addField(tr("type"), qs(v.type().shortStr()) + "  " + qs(v.type().str()));
  addField(tr("role"), vis::roleText(node.role));
  if (const engine::Apply* owner = v.owner())
    addField(
        tr("owner"),
        tr("Apply %1: %2, output %3").arg(owner->id()).arg(qs(owner->op().str())).arg(v.index()));
  else
    addField(tr("owner"), tr("none"));
  addField(tr("clients"), QString::number(graph.contains(v) ? graph.clients(v).size() : 0));
  addField(tr("scope"), scopeText(v.scope()));
  addField(tr("created at"), siteText(v.site()));
  showValues({{QString(), &v}});
}

void InspectorPanel::showValues(
    const std::vector<std::pair<QString, const engine::Variable*>>& variables) {
  std::vector<InspectedValue> values;
  for (const auto& [prefix, var] : variables)
    for (const auto& source : m_sources)
      for (InspectedValue& v : source->valuesOf(*var)) {
        if (!prefix.isEmpty()) v.label = prefix + ": " + v.label;
        values.push_back(std::move(v));
      }
  m_values->setVisible(!values.empty());
  m_values->setValues(std::move(values));
}

}  // namespace tscope::gui
