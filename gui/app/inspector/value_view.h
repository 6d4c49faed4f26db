#pragma once
// ValueView: one tensor value in the inspector: which value (a chooser when the node has several),
// dtype and shape, statistics (computed on a worker), a histogram, a table of a 2-D slice with
// spin boxes for the other axes, and "Save value as .npy…".

#include "gui/app/inspector/value_source.h"
#include "gui/app/inspector/value_stats.h"

#include <QWidget>

#include <map>
#include <optional>
#include <vector>

class QComboBox;
class QHBoxLayout;
class QLabel;
class QPushButton;
class QSpinBox;
class QTableView;

namespace tscope::gui {

class HistogramWidget;
class SliceTableModel;

// Writes `value` as a .npy file at `path` (atomically); throws engine::io::NpyError naming the
// path when it cannot.
void saveValueAsNpy(const engine::Tensor& value, const QString& path);

class ValueView : public QWidget {
  Q_OBJECT

 public:
  explicit ValueView(QWidget* parent = nullptr);

  // The values of the inspected node, each labelled for the chooser ("output 0: test value").
  // Shows the first; an empty list clears.
  void setValues(std::vector<InspectedValue> values);
  const std::vector<InspectedValue>& values() const { return m_values; }
  void showValue(int index);
  int currentValue() const { return m_current; }

  // The statistics of the shown value once the worker delivered them (statsReady), else nullopt.
  const std::optional<ValueStats>& stats() const { return m_stats; }
  // The text of a statistics field: "dtype", "shape", "elements", "min", "max", "mean", "std",
  // "nan", "inf".
  QString statText(const QString& field) const;
  HistogramWidget* histogram() const { return m_histogram; }
  SliceTableModel* sliceModel() const { return m_sliceModel; }

  // Asks for a file name and saves the shown value (errors in a message box).
  void saveCurrentValue();

 signals:
  void statsReady();

 private:
  void rebuildIndexSpinBoxes();

  std::vector<InspectedValue> m_values;
  int m_current = -1;
  std::optional<ValueStats> m_stats;
  quint64 m_statsJob = 0;  // drops the results of values no longer shown
  QComboBox* m_chooser = nullptr;
  std::map<QString, QLabel*> m_fields;
  HistogramWidget* m_histogram = nullptr;
  QHBoxLayout* m_indexRow = nullptr;
  std::vector<QSpinBox*> m_indexSpins;
  SliceTableModel* m_sliceModel = nullptr;
  QTableView* m_table = nullptr;
  QPushButton* m_save = nullptr;
};

}  // namespace tscope::gui
