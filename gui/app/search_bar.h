#pragma once
// SearchBar: the find bar under the graph (Ctrl+F): a line edit, previous / next buttons, the hit
// count ("3 of 12", "No matches") and a close button. It owns no search: the window runs the
// current pane's search on `searchRequested` and reports back with setResult.

#include <QWidget>

class QLabel;
class QLineEdit;
class QToolButton;

namespace tscope::gui {

class SearchBar : public QWidget {
  Q_OBJECT
 public:
  explicit SearchBar(QWidget* parent = nullptr);

  QString text() const;
  void setText(const QString& text);
  // Shows the bar, focuses the line edit and selects its text.
  void activate();
  // current: 0-based hit, -1 when none; count: number of hits.
  void setResult(int current, int count);
  QLineEdit* lineEdit() const { return m_edit; }
  QString resultText() const;

 signals:
  void searchRequested(
      QString text);  // the text changed (after a short pause) or Enter on new text
  void nextRequested();
  void previousRequested();
  void closed();

 protected:
  void keyPressEvent(QKeyEvent* event) override;

 private:
  QLineEdit* m_edit = nullptr;
  QToolButton* m_previous = nullptr;
  QToolButton* m_next = nullptr;
  QLabel* m_result = nullptr;
  QString m_searched;  // the text of the last searchRequested
};

}  // namespace tscope::gui
