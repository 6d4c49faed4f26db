// A node's kernel note (profiling's NodeProfile::kernelNote, Note [Kernel notes] in
// engine/compile/kernel_notes.h: the cuDNN algorithm a convolution chose) in the window: a .tsg
// whose profile carries a note opens coloured, the Apply table writes the note after the op as the
// text report does (and in the op's tooltip), and the inspector shows it as the field "kernel" for
// the node selected on the graph, and no such field for a node without one.
#include "engine/graph/apply.h"
#include "engine/graph/op.h"
#include "engine/io/tsg.h"
#include "gui/app/graph_pane.h"
#include "gui/app/inspector/inspector_panel.h"
#include "gui/app/main_window.h"
#include "gui/app/profile/profile_panels.h"
#include "gui/app/profile/profile_ui.h"
#include "gui_test_main.h"
#include "profile_test_support.h"
#include "profiling/profile_io.h"

#include <QAbstractItemView>
#include <QSettings>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QStandardPaths>
#include <QTemporaryDir>

#include <map>

using namespace tscope;
using namespace tscope::gui;

namespace {
const QString kMlp = QStringLiteral(TSCOPE_SOURCE_DIR "/examples/graphs/mlp.tsg");
constexpr int kTimeout = 60000;
const std::string kNote = "cudnn fwd IMPLICIT_PRECOMP_GEMM (guess_once, ws 0 B)";
}  // namespace

class TestProfileKernelNote : public QObject {
  Q_OBJECT
  QTemporaryDir m_dir;

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QSettings().clear();
  }

  void kernelNoteInTablesAndInspector() {
    // The MLP with a hand-made profile of its original graph; its first Dot carries a note.
    engine::io::TsgDocument doc = engine::io::loadTsg(kMlp.toStdString());
    std::map<std::int64_t, double> seconds;
    for (const engine::Apply* a : doc.original->toposort()) seconds[a->id()] = 1e-3;
    prof::Profile profile = testing::handProfile(*doc.original, seconds);
    int noted = -1, plain = -1;
    for (std::size_t i = 0; i < profile.nodes.size(); ++i) {
      if (noted < 0 && profile.nodes[i].opClass == "Dot") {
        noted = static_cast<int>(i);
        profile.nodes[i].kernelNote = kNote;
      } else if (plain < 0) {
        plain = static_cast<int>(i);
      }
    }
    QVERIFY(noted >= 0 && plain >= 0);
    doc.profiles = nlohmann::json::array({prof::profileToJson(profile)});
    const QString path = m_dir.filePath("noted.tsg");
    engine::io::saveTsg(doc, path.toStdString());

    MainWindow window;
    window.resize(1400, 900);
    window.show();
    QSignalSpy shown(window.profileUi(), &ProfileUi::viewShown);
    window.openFile(path);
    QTRY_VERIFY_WITH_TIMEOUT(!shown.isEmpty(), kTimeout);
    QTRY_VERIFY_WITH_TIMEOUT(!window.isBusy(), kTimeout);
    ProfileUi* ui = window.profileUi();
    QVERIFY(ui->snapshot() && ui->snapshot()->fromFile);
    QCOMPARE(ui->view()->profile->nodes[static_cast<std::size_t>(noted)].kernelNote, kNote);

    // The Apply table: "<op> (scope) [shapes] {note}", and the note in the op's tooltip.
    ApplyTableModel* apply = ui->tablesPanel()->applyModel();
    const int row = apply->rowOfNode(noted);
    QVERIFY(row >= 0);
    const QModelIndex op = apply->index(row, ApplyTableModel::Op);
    const QString text = op.data().toString();
    QVERIFY2(text.endsWith(QStringLiteral(" {%1}").arg(QString::fromStdString(kNote))),
             qPrintable(text));
    QVERIFY(text.startsWith(QString::fromStdString(profile.nodes[size_t(noted)].op)));
    QCOMPARE(op.data(Qt::ToolTipRole).toString(),
             QStringLiteral("Kernel: %1").arg(QString::fromStdString(kNote)));
    const int plainRow = apply->rowOfNode(plain);
    if (plainRow >= 0)
      QVERIFY(!apply->index(plainRow, ApplyTableModel::Op)
                   .data()
                   .toString()
                   .contains(QStringLiteral("IMPLICIT_PRECOMP")));
    // The table's filter finds the row by its note.
    QSortFilterProxyModel* proxy = ui->tablesPanel()->proxy(ProfileTablesPanel::ApplyTab);
    proxy->setFilterFixedString(QStringLiteral("IMPLICIT_PRECOMP"));
    QCOMPARE(proxy->rowCount(), 1);
    proxy->setFilterFixedString(QString());

    // The inspector: the field "kernel" for the noted node, none for another.
    GraphPane* pane = ui->profilePane();
    QVERIFY(pane != nullptr);
    InspectorPanel* inspector = window.inspector();
    pane->selectNode(ui->viewNodeOf(noted));
    QTRY_COMPARE_WITH_TIMEOUT(inspector->node(), ui->viewNodeOf(noted), kTimeout);
    QCOMPARE(inspector->fieldText(QStringLiteral("kernel")), QString::fromStdString(kNote));
    pane->selectNode(ui->viewNodeOf(plain));
    QTRY_COMPARE_WITH_TIMEOUT(inspector->node(), ui->viewNodeOf(plain), kTimeout);
    QVERIFY(inspector->fieldText(QStringLiteral("kernel")).isEmpty());
    QVERIFY(!inspector->fieldText(QStringLiteral("op")).isEmpty());
  }
};

TSCOPE_GUI_TEST_MAIN(TestProfileKernelNote)
#include "tst_profile_kernel_note.moc"
