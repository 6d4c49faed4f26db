#pragma once
// The debugger's dialogs (each opened with open(), never exec(): the window keeps running):
//   BreakpointDialog  node / variable / op type / scope, a condition, a hit count
//   InputsDialog      test values or random with a seed, a .npy file per input
//   NanGuardDialog    checks, "big" threshold, allow-list, action pause or collect
//   EditValueDialog   a new value for a computed variable: .npy, zeros, scaled by k, NaN at an
//                     index, one element set (editedValue() does the work, on any thread)

#include "engine/debug/breakpoints.h"
#include "engine/debug/nan_guard.h"
#include "engine/graph/function_graph.h"
#include "gui/app/debug/debug_controller.h"

#include <QDialog>

class QButtonGroup;
class QCheckBox;
class QComboBox;
class QLineEdit;
class QPlainTextEdit;
class QSpinBox;
class QTableWidget;

namespace tscope::gui {

class BreakpointDialog : public QDialog {
  Q_OBJECT
 public:
  // target: "node", "var", "op" or "scope"; key: its id, name, op or path.
  BreakpointDialog(QWidget* parent, const QString& target = QStringLiteral("node"),
                   const QString& key = {});
  // The breakpoint as given; throws std::invalid_argument naming what is wrong.
  engine::debug::BreakpointSpec spec() const;
  QString specText() const;  // its text form ("node:12@max>3#2")
  QComboBox* targetCombo() const { return m_target; }
  QLineEdit* keyEdit() const { return m_key; }
  QComboBox* conditionCombo() const { return m_condition; }
  QLineEdit* thresholdEdit() const { return m_k; }
  QSpinBox* hitCountSpin() const { return m_hits; }

 private:
  QComboBox* m_target;
  QLineEdit* m_key;
  QComboBox* m_condition;
  QLineEdit* m_k;
  QSpinBox* m_hits;
};

class InputsDialog : public QDialog {
  Q_OBJECT
 public:
  InputsDialog(QWidget* parent, const engine::FunctionGraph& graph, const DebugInputs& inputs);
  DebugInputs inputs() const;

 private:
  QComboBox* m_kind;
  QLineEdit* m_seed;
  QTableWidget* m_table;
};

class NanGuardDialog : public QDialog {
  Q_OBJECT
 public:
  NanGuardDialog(QWidget* parent, const engine::debug::NanGuardOptions& options, bool collect);
  // Throws std::invalid_argument (a bad threshold or allow rule, named).
  engine::debug::NanGuardOptions options() const;
  bool collect() const;

 private:
  std::vector<QCheckBox*> m_checks;  // nan, +inf, -inf, big
  QLineEdit* m_threshold;
  QPlainTextEdit* m_allow;
  QComboBox* m_action;
};

enum class ValueEdit { Npy, Zeros, Scale, NanAt, SetAt };

// "1, 2" or "[1, 2]" -> {1, 2}; throws std::invalid_argument naming the text.
std::vector<std::int64_t> parseIndex(const QString& text);
// The edited value (same dtype and shape as `current`, a new tensor): throws
// std::invalid_argument for an index outside the shape, a .npy of another shape or dtype, NaN in
// a tensor that cannot hold it.
engine::Tensor editedValue(const engine::Tensor& current, ValueEdit edit, double k = 0,
                           const std::vector<std::int64_t>& index = {},
                           const QString& npyPath = {});

class EditValueDialog : public QDialog {
  Q_OBJECT
 public:
  EditValueDialog(QWidget* parent, const QString& name, engine::Tensor current);
  // Throws std::invalid_argument (editedValue).
  engine::Tensor value() const;
  const QString& name() const { return m_name; }

 private:
  QString m_name;
  engine::Tensor m_current;
  QComboBox* m_kind;
  QLineEdit* m_path;
  QLineEdit* m_k;
  QLineEdit* m_index;
};

}  // namespace tscope::gui
