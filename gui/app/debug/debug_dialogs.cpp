#include "gui/app/debug/debug_dialogs.h"

#include "engine/io/npy.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace tscope::gui {

namespace debug = engine::debug;

namespace {

QDialogButtonBox* okCancel(QDialog* dialog, const std::function<bool()>& check) {
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  QObject::connect(buttons, &QDialogButtonBox::accepted, dialog, [dialog, check] {
    if (check()) dialog->accept();
  });
  QObject::connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::reject);
  return buttons;
}

// Runs `f`; a std::exception becomes a (non-blocking) message box over the dialog.
template <class F>
bool checked(QDialog* dialog, F&& f) {
  try {
    f();
    return true;
  } catch (const std::exception& e) {
    auto* box = new QMessageBox(QMessageBox::Warning, dialog->windowTitle(),
                                QString::fromUtf8(e.what()), QMessageBox::Ok, dialog);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
    return false;
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------

BreakpointDialog::BreakpointDialog(QWidget* parent, const QString& target, const QString& key)
    : QDialog(parent) {
  setWindowTitle(tr("Breakpoint"));
  setObjectName(QStringLiteral("breakpointDialog"));
  auto* form = new QFormLayout;
  m_target = new QComboBox;
  m_target->addItem(tr("Node (id)"), QStringLiteral("node"));
  m_target->addItem(tr("Variable (name)"), QStringLiteral("var"));
  m_target->addItem(tr("Op type"), QStringLiteral("op"));
  m_target->addItem(tr("Scope (prefix)"), QStringLiteral("scope"));
  m_target->setCurrentIndex(std::max(0, m_target->findData(target)));
  m_key = new QLineEdit(key);
  m_condition = new QComboBox;
  m_condition->addItem(tr("Always"), QString());
  m_condition->addItem(tr("Any NaN"), QStringLiteral("@nan"));
  m_condition->addItem(tr("Any Inf"), QStringLiteral("@inf"));
  m_condition->addItem(tr("max > k"), QStringLiteral("@max>"));
  m_condition->addItem(tr("min < k"), QStringLiteral("@min<"));
  m_condition->addItem(tr("norm > k"), QStringLiteral("@norm>"));
  m_condition->addItem(tr("changed since the last run by > k"), QStringLiteral("@changed>"));
  m_k = new QLineEdit(QStringLiteral("0"));
  m_hits = new QSpinBox;
  m_hits->setRange(1, 1000000);
  form->addRow(tr("Break on"), m_target);
  form->addRow(tr("Target"), m_key);
  form->addRow(tr("Condition"), m_condition);
  form->addRow(tr("k"), m_k);
  form->addRow(tr("Hit count"), m_hits);
  auto update = [this] {
    m_k->setEnabled(m_condition->currentData().toString().endsWith('>') ||
                    m_condition->currentData().toString().endsWith('<'));
  };
  connect(m_condition, &QComboBox::currentIndexChanged, this, update);
  update();
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(okCancel(this, [this] { return checked(this, [this] { spec(); }); }));
}

QString BreakpointDialog::specText() const {
  QString text = m_target->currentData().toString() + ':' + m_key->text().trimmed();
  const QString condition = m_condition->currentData().toString();
  text += condition;
  if (condition.endsWith('>') || condition.endsWith('<')) text += m_k->text().trimmed();
  if (m_hits->value() > 1) text += QStringLiteral("#%1").arg(m_hits->value());
  return text;
}

debug::BreakpointSpec BreakpointDialog::spec() const {
  if (m_key->text().trimmed().isEmpty())
    throw std::invalid_argument(
        "the breakpoint needs a target (a node id, variable name, op or "
        "scope), found nothing");
  return debug::parseBreakSpec(specText().toStdString());
}

// ---------------------------------------------------------------------------------------------

InputsDialog::InputsDialog(QWidget* parent, const engine::FunctionGraph& graph,
                           const DebugInputs& inputs)
    : QDialog(parent) {
  setWindowTitle(tr("Run Inputs"));
  setObjectName(QStringLiteral("inputsDialog"));
  auto* form = new QFormLayout;
  m_kind = new QComboBox;
  m_kind->addItem(tr("Test values (random where there is none)"), 0);
  m_kind->addItem(tr("Random values"), 1);
  m_kind->setCurrentIndex(inputs.kind == DebugInputs::Kind::Random ? 1 : 0);
  m_seed = new QLineEdit(QString::number(inputs.seed));
  form->addRow(tr("Values"), m_kind);
  form->addRow(tr("Random seed"), m_seed);
  m_table = new QTableWidget(0, 3);
  m_table->setHorizontalHeaderLabels({tr("Input"), tr("Type"), tr(".npy file (optional)")});
  m_table->horizontalHeader()->setStretchLastSection(true);
  for (const engine::VarPtr& v : graph.inputs()) {
    if (dynamic_cast<const engine::SharedVariable*>(v.get()) ||
        dynamic_cast<const engine::Constant*>(v.get()))
      continue;
    const int row = m_table->rowCount();
    m_table->insertRow(row);
    const QString name = QString::fromStdString(v->name());
    auto* nameItem = new QTableWidgetItem(name);
    nameItem->setFlags(Qt::ItemIsEnabled);
    auto* typeItem = new QTableWidgetItem(QString::fromStdString(v->type().str()) +
                                          (v->testValue() ? tr(", test value") : QString()));
    typeItem->setFlags(Qt::ItemIsEnabled);
    auto it = inputs.npy.find(name);
    m_table->setItem(row, 0, nameItem);
    m_table->setItem(row, 1, typeItem);
    m_table->setItem(row, 2, new QTableWidgetItem(it == inputs.npy.end() ? QString() : it->second));
  }
  auto* browse = new QPushButton(tr("Choose .npy for the selected input…"));
  connect(browse, &QPushButton::clicked, this, [this] {
    const int row = m_table->currentRow();
    if (row < 0) return;
    auto* dialog = new QFileDialog(this, tr("Value of %1").arg(m_table->item(row, 0)->text()),
                                   QString(), tr("NumPy arrays (*.npy)"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QFileDialog::fileSelected, this,
            [this, row](const QString& path) { m_table->item(row, 2)->setText(path); });
    dialog->open();
  });
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(m_table, 1);
  layout->addWidget(browse);
  layout->addWidget(okCancel(this, [this] { return checked(this, [this] { this->inputs(); }); }));
  resize(560, 360);
}

DebugInputs InputsDialog::inputs() const {
  DebugInputs in;
  in.kind = m_kind->currentData().toInt() == 1 ? DebugInputs::Kind::Random
                                               : DebugInputs::Kind::TestValues;
  bool ok = false;
  in.seed = m_seed->text().trimmed().toULongLong(&ok);
  if (!ok)
    throw std::invalid_argument("the seed must be a non-negative integer, found '" +
                                m_seed->text().toStdString() + "'");
  for (int row = 0; row < m_table->rowCount(); ++row) {
    const QString path = m_table->item(row, 2)->text().trimmed();
    if (!path.isEmpty()) in.npy[m_table->item(row, 0)->text()] = path;
  }
  return in;
}

// ---------------------------------------------------------------------------------------------

NanGuardDialog::NanGuardDialog(QWidget* parent, const debug::NanGuardOptions& options, bool collect)
    : QDialog(parent) {
  setWindowTitle(tr("NanGuard Settings"));
  setObjectName(QStringLiteral("nanGuardDialog"));
  auto* form = new QFormLayout;
  auto* checks = new QHBoxLayout;
  for (debug::NanCheck c : {debug::NanCheck::NaN, debug::NanCheck::PosInf, debug::NanCheck::NegInf,
                            debug::NanCheck::Big}) {
    auto* box = new QCheckBox(qstr(debug::checkName(c)));
    box->setChecked(options.checks & debug::bit(c));
    checks->addWidget(box);
    m_checks.push_back(box);
  }
  m_threshold = new QLineEdit(QString::number(options.bigThreshold, 'g', 6));
  m_allow = new QPlainTextEdit;
  QStringList rules;
  for (const debug::AllowRule& r : options.allow) rules << QString::fromStdString(r.str());
  m_allow->setPlainText(rules.join('\n'));
  m_allow->setPlaceholderText(tr("One rule a line: scope:attention/mask:-inf, node:42:nan, ..."));
  m_action = new QComboBox;
  m_action->addItem(tr("Pause at the first event"), 0);
  m_action->addItem(tr("Collect every event and go on"), 1);
  m_action->setCurrentIndex(collect ? 1 : 0);
  form->addRow(tr("Checks"), checks);
  form->addRow(tr("Big: max|x| >"), m_threshold);
  form->addRow(tr("Allowed"), m_allow);
  form->addRow(tr("Action"), m_action);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(okCancel(this, [this] { return checked(this, [this] { this->options(); }); }));
}

debug::NanGuardOptions NanGuardDialog::options() const {
  debug::NanGuardOptions o;
  o.checks = 0;
  const debug::NanCheck kinds[] = {debug::NanCheck::NaN, debug::NanCheck::PosInf,
                                   debug::NanCheck::NegInf, debug::NanCheck::Big};
  for (std::size_t i = 0; i < m_checks.size(); ++i)
    if (m_checks[i]->isChecked()) o.checks |= debug::bit(kinds[i]);
  bool ok = false;
  o.bigThreshold = m_threshold->text().trimmed().toDouble(&ok);
  if (!ok)
    throw std::invalid_argument("the big threshold must be a number, found '" +
                                m_threshold->text().toStdString() + "'");
  for (const QString& line : m_allow->toPlainText().split('\n', Qt::SkipEmptyParts))
    if (!line.trimmed().isEmpty())
      o.allow.push_back(debug::AllowRule::parse(line.trimmed().toStdString()));
  o.action = debug::NanAction::Pause;
  o.validate();
  return o;
}

bool NanGuardDialog::collect() const {
  return m_action->currentData().toInt() == 1;
}

// ---------------------------------------------------------------------------------------------

std::vector<std::int64_t> parseIndex(const QString& text) {
  QString t = text.trimmed();
  if (t.startsWith('[') || t.startsWith('(')) t = t.mid(1);
  if (t.endsWith(']') || t.endsWith(')')) t.chop(1);
  std::vector<std::int64_t> index;
  for (const QString& part : t.split(',', Qt::SkipEmptyParts)) {
    bool ok = false;
    const qlonglong i = part.trimmed().toLongLong(&ok);
    if (!ok)
      throw std::invalid_argument("an index is integers separated by commas (\"1, 2\"), found '" +
                                  text.toStdString() + "'");
    index.push_back(i);
  }
  return index;
}

namespace {
std::string shapeString(const engine::Shape& shape) {
  return engine::shapeToString(shape);
}
}  // namespace

engine::Tensor editedValue(const engine::Tensor& current, ValueEdit edit, double k,
                           const std::vector<std::int64_t>& index, const QString& npyPath) {
  if (!current.defined()) throw std::invalid_argument("the value is not computed yet");
  const engine::DType dtype = current.dtype();
  auto checkIndex = [&] {
    if (index.size() != current.shape().size())
      throw std::invalid_argument("the index " + debug::indexText(index) + " has " +
                                  std::to_string(index.size()) + " dimensions; the value " +
                                  shapeString(current.shape()) + " has " +
                                  std::to_string(current.shape().size()));
    for (std::size_t i = 0; i < index.size(); ++i)
      if (index[i] < 0 || index[i] >= current.shape()[i])
        throw std::invalid_argument("the index " + debug::indexText(index) +
                                    " is outside the shape " + shapeString(current.shape()));
  };
  switch (edit) {
    case ValueEdit::Npy: {
      engine::Tensor t;
      try {
        t = engine::io::loadNpy(npyPath.toStdString());
      } catch (const std::exception& e) {
        throw std::invalid_argument("cannot read " + npyPath.toStdString() + ": " + e.what());
      }
      if (t.shape() != current.shape())
        throw std::invalid_argument(npyPath.toStdString() + " holds a value of shape " +
                                    shapeString(t.shape()) + ", expected " +
                                    shapeString(current.shape()));
      return t.dtype() == dtype ? t : t.astype(dtype);
    }
    case ValueEdit::Zeros:
      return engine::Tensor::zeros(dtype, current.shape());
    case ValueEdit::Scale: {
      engine::Tensor d = current.astype(engine::DType::Float64);
      double* p = d.data<double>();
      for (std::int64_t i = 0; i < d.numel(); ++i) p[i] *= k;
      return d.astype(dtype);
    }
    case ValueEdit::NanAt:
    case ValueEdit::SetAt: {
      checkIndex();
      if (edit == ValueEdit::NanAt && !engine::isFloat(dtype))
        throw std::invalid_argument("a " + std::string(engine::dtypeName(dtype)) +
                                    " value cannot hold NaN");
      engine::Tensor t = current.clone();
      t.set(index, edit == ValueEdit::NanAt ? std::numeric_limits<double>::quiet_NaN() : k);
      return t;
    }
  }
  return current.clone();
}

EditValueDialog::EditValueDialog(QWidget* parent, const QString& name, engine::Tensor current)
    : QDialog(parent), m_name(name), m_current(std::move(current)) {
  setWindowTitle(tr("Edit %1").arg(name));
  setObjectName(QStringLiteral("editValueDialog"));
  auto* form = new QFormLayout;
  m_kind = new QComboBox;
  m_kind->addItem(tr("From a .npy file"), int(ValueEdit::Npy));
  m_kind->addItem(tr("Zeros"), int(ValueEdit::Zeros));
  m_kind->addItem(tr("Scaled by k"), int(ValueEdit::Scale));
  m_kind->addItem(tr("NaN at an index"), int(ValueEdit::NanAt));
  m_kind->addItem(tr("One element set to k"), int(ValueEdit::SetAt));
  m_path = new QLineEdit;
  auto* browse = new QPushButton(tr("Browse…"));
  connect(browse, &QPushButton::clicked, this, [this] {
    auto* dialog = new QFileDialog(this, tr("New value"), QString(), tr("NumPy arrays (*.npy)"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QFileDialog::fileSelected, m_path, &QLineEdit::setText);
    dialog->open();
  });
  auto* pathRow = new QHBoxLayout;
  pathRow->addWidget(m_path, 1);
  pathRow->addWidget(browse);
  m_k = new QLineEdit(QStringLiteral("1"));
  m_index = new QLineEdit;
  m_index->setPlaceholderText(tr("e.g. 0, 3"));
  form->addRow(new QLabel(tr("%1: %2 %3")
                              .arg(name, qstr(engine::dtypeName(m_current.dtype())),
                                   QString::fromStdString(shapeString(m_current.shape())))));
  form->addRow(tr("New value"), m_kind);
  form->addRow(tr(".npy file"), pathRow);
  form->addRow(tr("k"), m_k);
  form->addRow(tr("Index"), m_index);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(okCancel(this, [this] { return checked(this, [this] { value(); }); }));
}

engine::Tensor EditValueDialog::value() const {
  const auto edit = static_cast<ValueEdit>(m_kind->currentData().toInt());
  double k = 0;
  if (edit == ValueEdit::Scale || edit == ValueEdit::SetAt) {
    bool ok = false;
    k = m_k->text().trimmed().toDouble(&ok);
    if (!ok)
      throw std::invalid_argument("k must be a number, found '" + m_k->text().toStdString() + "'");
  }
  std::vector<std::int64_t> index;
  if (edit == ValueEdit::NanAt || edit == ValueEdit::SetAt) index = parseIndex(m_index->text());
  return editedValue(m_current, edit, k, index, m_path->text().trimmed());
}

}  // namespace tscope::gui
