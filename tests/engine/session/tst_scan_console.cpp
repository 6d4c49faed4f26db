// `tensorscope debug` over a Scan: `iter NODE K` runs to the start of iteration K, and the frame
// lines of `where` show the iteration (Note [Loop frames] in engine/vm/vm.h).
#include "engine/compile/function.h"
#include "engine/debug/debug_session.h"
#include "engine/ops/basic.h"
#include "engine/ops/control/scan.h"
#include "engine/session/debug_console.h"
#include "test_main.h"

#include <sstream>

using namespace tscope::engine;
using tscope::engine::session::DebugConsole;

class TestScanConsole : public QObject {
  Q_OBJECT

 private slots:
  void testIterCommand() {
    auto x = Variable::create(TensorType(DType::Float64, {5}), "x");
    auto y0 = Variable::create(TensorType(DType::Float64, {}), "y0");
    VarPtr y =
        scan([](const std::vector<VarPtr>& a) { return std::vector<VarPtr>{a[1] + exp(a[0])}; },
             {x}, {y0}, {}, {}, -1, {.label = "acc"})[0];
    Function f = compile({x, y0}, {y * 2.0});
    std::int64_t scanId = -1;
    for (const Apply* n : f.vm().schedule())
      if (n->op().name() == "Scan") scanId = n->id();
    QVERIFY(scanId >= 0);
    debug::DebugSession s(f);
    std::ostringstream out;
    DebugConsole console(s,
                         {Tensor::fromDoubles(DType::Float64, {5}, {0, 1, 2, 3, 4}),
                          Tensor::scalar(DType::Float64, 0)},
                         out);
    console.execute("iter " + std::to_string(scanId) + " 3");
    console.execute("where");
    const std::string text = out.str();
    QVERIFY2(text.find("Scan{acc}") != std::string::npos, text.c_str());
    QVERIFY2(text.find("iteration 3/5") != std::string::npos, text.c_str());
    out.str("");
    console.execute("iter " + std::to_string(scanId));
    QVERIFY2(out.str().find("iter NODE K") != std::string::npos, out.str().c_str());
  }
};

TSCOPE_TEST_MAIN(TestScanConsole)
#include "tst_scan_console.moc"
