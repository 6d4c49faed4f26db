#include "gui/app/search_bar.h"

#include <QHBoxLayout>
#include <QIcon>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QTimer>
#include <QToolButton>

namespace tscope::gui {

SearchBar::SearchBar(QWidget* parent) : QWidget(parent) {
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(6, 3, 6, 3);
  layout->setSpacing(4);

  auto* label = new QLabel(tr("Find:"), this);
  m_edit = new QLineEdit(this);
  m_edit->setPlaceholderText(tr("Name, op, scope or id:N"));
  m_edit->setClearButtonEnabled(true);
  m_edit->setMinimumWidth(260);
  label->setBuddy(m_edit);

  m_previous = new QToolButton(this);
  m_previous->setIcon(QIcon(QStringLiteral(":/icons/find_previous.svg")));
  m_previous->setToolTip(tr("Previous match (Shift+F3)"));
  m_previous->setAutoRaise(true);
  m_next = new QToolButton(this);
  m_next->setIcon(QIcon(QStringLiteral(":/icons/find_next.svg")));
  m_next->setToolTip(tr("Next match (F3)"));
  m_next->setAutoRaise(true);
  m_result = new QLabel(this);
  m_result->setMinimumWidth(90);
  auto* close = new QToolButton(this);
  close->setIcon(QIcon(QStringLiteral(":/icons/close.svg")));
  close->setToolTip(tr("Close (Escape)"));
  close->setAutoRaise(true);

  layout->addWidget(label);
  layout->addWidget(m_edit);
  layout->addWidget(m_previous);
  layout->addWidget(m_next);
  layout->addWidget(m_result);
  layout->addStretch(1);
  layout->addWidget(close);

  // Search as the user types, but not on every keystroke of a fast typist: each search selects
  // and scrolls, and on a big graph expands groups.
  auto* debounce = new QTimer(this);
  debounce->setSingleShot(true);
  debounce->setInterval(250);
  connect(m_edit, &QLineEdit::textEdited, debounce, qOverload<>(&QTimer::start));
  connect(debounce, &QTimer::timeout, this, [this] {
    m_searched = m_edit->text();
    emit searchRequested(m_searched);
  });
  connect(m_edit, &QLineEdit::returnPressed, this, [this, debounce] {
    debounce->stop();
    if (m_edit->text() != m_searched) {
      m_searched = m_edit->text();
      emit searchRequested(m_searched);
    } else {
      emit nextRequested();
    }
  });
  connect(m_next, &QToolButton::clicked, this, &SearchBar::nextRequested);
  connect(m_previous, &QToolButton::clicked, this, &SearchBar::previousRequested);
  connect(close, &QToolButton::clicked, this, [this] {
    hide();
    emit closed();
  });
  setResult(-1, 0);
  m_result->clear();
}

QString SearchBar::text() const {
  return m_edit->text();
}

void SearchBar::setText(const QString& text) {
  m_edit->setText(text);
  m_searched = text;
  emit searchRequested(text);
}

void SearchBar::activate() {
  show();
  m_edit->setFocus(Qt::ShortcutFocusReason);
  m_edit->selectAll();
}

void SearchBar::setResult(int current, int count) {
  m_previous->setEnabled(count > 0);
  m_next->setEnabled(count > 0);
  if (m_searched.isEmpty()) {
    m_result->clear();
  } else if (count == 0) {
    m_result->setText(tr("No matches"));
  } else {
    m_result->setText(tr("%1 of %2")
                          .arg(current >= 0 ? QString::number(current + 1) : QStringLiteral("–"))
                          .arg(count));
  }
  // A failed search tints the field, as editors do.
  m_edit->setStyleSheet(!m_searched.isEmpty() && count == 0
                            ? QStringLiteral("QLineEdit { background: #ffe0e0; }")
                            : QString());
}

QString SearchBar::resultText() const {
  return m_result->text();
}

void SearchBar::keyPressEvent(QKeyEvent* event) {
  if (event->key() == Qt::Key_Escape) {
    hide();
    emit closed();
    return;
  }
  QWidget::keyPressEvent(event);
}

}  // namespace tscope::gui
