#include "gui/app/inspector/value_view.h"

#include "engine/io/npy.h"
#include "gui/app/inspector/histogram_widget.h"
#include "gui/app/inspector/slice_table_model.h"
#include "visualizers/threads/hand_off.h"

#include <QComboBox>
#include <QFile>
#include <QFileDialog>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSpinBox>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>
#include <climits>
#include <cmath>

namespace tscope::gui {

void saveValueAsNpy(const engine::Tensor& value, const QString& path) {
  engine::io::saveNpy(value, std::filesystem::path(QFile::encodeName(path).toStdString()));
}

namespace {
const char* const kFieldOrder[] = {"dtype", "shape", "elements", "min", "max",
                                   "mean",  "std",   "nan",      "inf"};

QString statNumber(double v, engine::DType dtype) {
  if (std::isnan(v)) return QStringLiteral("–");
  return formatElement(v, engine::isFloat(dtype) ? engine::DType::Float64 : dtype);
}
}  // namespace

ValueView::ValueView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);

  auto* top = new QHBoxLayout;
  m_chooser = new QComboBox(this);
  m_chooser->setObjectName("valueChooser");
  m_chooser->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  m_save = new QPushButton(tr("Save value as .npy…"), this);
  m_save->setObjectName("saveValueButton");
  top->addWidget(m_chooser, 1);
  top->addWidget(m_save);
  layout->addLayout(top);

  // Two label/value pairs per row keep the statistics compact in a narrow dock.
  auto* grid = new QGridLayout;
  const QStringList titles = {tr("dtype"), tr("shape"), tr("elements"), tr("min"), tr("max"),
                              tr("mean"),  tr("std"),   tr("NaN"),      tr("Inf")};
  for (int i = 0; i < static_cast<int>(std::size(kFieldOrder)); ++i) {
    auto* title = new QLabel(titles[i] + ":", this);
    auto* value = new QLabel(this);
    value->setTextInteractionFlags(Qt::TextSelectableByMouse);
    value->setObjectName(QString("stat_") + kFieldOrder[i]);
    grid->addWidget(title, i / 2, (i % 2) * 2);
    grid->addWidget(value, i / 2, (i % 2) * 2 + 1);
    m_fields[kFieldOrder[i]] = value;
  }
  grid->setColumnStretch(1, 1);
  grid->setColumnStretch(3, 1);
  layout->addLayout(grid);

  m_histogram = new HistogramWidget(this);
  layout->addWidget(m_histogram);

  m_indexRow = new QHBoxLayout;
  layout->addLayout(m_indexRow);
  m_sliceModel = new SliceTableModel(this);
  m_table = new QTableView(this);
  m_table->setObjectName("sliceTable");
  m_table->setModel(m_sliceModel);
  m_table->horizontalHeader()->setDefaultSectionSize(88);
  m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
  layout->addWidget(m_table, 1);

  connect(m_chooser, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (i != m_current) showValue(i);
  });
  connect(m_save, &QPushButton::clicked, this, &ValueView::saveCurrentValue);
  setValues({});
}

void ValueView::setValues(std::vector<InspectedValue> values) {
  m_values = std::move(values);
  m_current = -1;
  {
    const QSignalBlocker block(m_chooser);
    m_chooser->clear();
    for (const auto& v : m_values) m_chooser->addItem(v.label);
  }
  m_chooser->setEnabled(m_values.size() > 1);
  showValue(m_values.empty() ? -1 : 0);
}

void ValueView::showValue(int index) {
  ++m_statsJob;
  m_stats.reset();
  m_histogram->clear();
  for (auto& [name, label] : m_fields) label->clear();
  if (index < 0 || index >= static_cast<int>(m_values.size())) {
    m_current = -1;
    m_sliceModel->setTensor({});
    rebuildIndexSpinBoxes();
    m_save->setEnabled(false);
    return;
  }
  m_current = index;
  {
    const QSignalBlocker block(m_chooser);
    m_chooser->setCurrentIndex(index);
  }
  const engine::Tensor tensor = m_values[static_cast<std::size_t>(index)].tensor;
  m_fields["dtype"]->setText(
      QString::fromStdString(std::string(engine::dtypeName(tensor.dtype()))));
  m_fields["shape"]->setText(QString::fromStdString(engine::shapeToString(tensor.shape())));
  m_fields["elements"]->setText(QString::number(tensor.numel()));
  m_sliceModel->setTensor(tensor);
  rebuildIndexSpinBoxes();
  m_save->setEnabled(true);
  const quint64 job = m_statsJob;
  // The worker holds its own handle to the tensor (storage shared, never written while shown).
  vis::runOnWorker(
      this, [tensor] { return computeValueStats(tensor); },
      [this, job](ValueStats s) {
        if (job != m_statsJob) return;  // another value is shown by now
        m_fields["min"]->setText(statNumber(s.min, s.dtype));
        m_fields["max"]->setText(statNumber(s.max, s.dtype));
        m_fields["mean"]->setText(statNumber(s.mean, engine::DType::Float64));
        m_fields["std"]->setText(statNumber(s.std, engine::DType::Float64));
        m_fields["nan"]->setText(QString::number(s.nanCount));
        m_fields["inf"]->setText(s.posInfCount + s.negInfCount == 0
                                     ? QStringLiteral("0")
                                     : tr("%1 (+%2, −%3)")
                                           .arg(s.posInfCount + s.negInfCount)
                                           .arg(s.posInfCount)
                                           .arg(s.negInfCount));
        m_histogram->setStats(s);
        m_stats = std::move(s);
        emit statsReady();
      });
}

QString ValueView::statText(const QString& field) const {
  auto it = m_fields.find(field);
  return it == m_fields.end() ? QString() : it->second->text();
}

void ValueView::rebuildIndexSpinBoxes() {
  while (QLayoutItem* item = m_indexRow->takeAt(0)) {
    delete item->widget();
    delete item;
  }
  m_indexSpins.clear();
  const std::vector<int> axes = m_sliceModel->fixedAxes();
  if (axes.empty()) return;
  auto* label = new QLabel(tr("slice at"), this);
  m_indexRow->addWidget(label);
  const engine::Tensor& t = m_sliceModel->tensor();
  for (int axis : axes) {
    auto* spin = new QSpinBox(this);
    spin->setObjectName(QString("sliceIndex%1").arg(axis));
    spin->setPrefix(tr("axis %1: ").arg(axis));
    spin->setRange(0, static_cast<int>(std::clamp<std::int64_t>(t.shape()[axis] - 1, 0, INT_MAX)));
    connect(spin, &QSpinBox::valueChanged, this,
            [this, axis](int v) { m_sliceModel->setFixedIndex(axis, v); });
    m_indexRow->addWidget(spin);
    m_indexSpins.push_back(spin);
  }
  m_indexRow->addStretch(1);
}

void ValueView::saveCurrentValue() {
  if (m_current < 0) return;
  const QString path = QFileDialog::getSaveFileName(this, tr("Save value as .npy"), QString(),
                                                    tr("NumPy arrays (*.npy)"));
  if (path.isEmpty()) return;
  try {
    saveValueAsNpy(m_values[static_cast<std::size_t>(m_current)].tensor, path);
  } catch (const std::exception& e) {
    QMessageBox::critical(this, tr("Could not save the value"), QString::fromStdString(e.what()));
  }
}

}  // namespace tscope::gui
