// Note [Allocator]: built with mimalloc, the executables' malloc, operator new and the engine's
// graph objects all come from mimalloc's heap (the shared library interposes glibc's functions).
// Without it the test says so and checks nothing.
#include "engine/graph/function_graph.h"
#include "engine/ops/elemwise/elemwise.h"
#include "test_main.h"

#include <cstdlib>
#include <cstring>
#include <memory>

#ifdef TSCOPE_HAVE_MIMALLOC
#include <mimalloc.h>
#endif

using namespace tscope::engine;

class TestAllocator : public QObject {
  Q_OBJECT

 private slots:
  void allocationsComeFromMimalloc() {
#ifndef TSCOPE_HAVE_MIMALLOC
    QSKIP(
        "built without mimalloc (TSCOPE_USE_MIMALLOC off or libmimalloc-dev missing): glibc's "
        "malloc serves");
#else
    void* raw = std::malloc(48);
    QVERIFY(raw != nullptr);
    std::memset(raw, 1, 48);
    QVERIFY(mi_is_in_heap_region(raw));
    std::free(raw);
    auto object = std::make_unique<std::array<char, 64>>();
    QVERIFY(mi_is_in_heap_region(object.get()));
    // A graph's objects, allocated inside the engine library.
    auto x = Variable::create(TensorType(DType::Float32, {4}), "x");
    VarPtr y = elemwise(ScalarOp::Exp, {x});
    FunctionGraph fg({x}, {y}, FunctionGraph::Ownership::Clone);
    QVERIFY(mi_is_in_heap_region(fg.outputs()[0].get()));
    QVERIFY(mi_is_in_heap_region(fg.outputs()[0]->owner()));
    QVERIFY(mi_version() >= 200);
#endif
  }

  // cmake/allocator_options.cpp: freed memory stays committed for 10 s unless the environment
  // decides.
  void freedMemoryKeptForTenSeconds() {
#ifndef TSCOPE_HAVE_MIMALLOC
    QSKIP("built without mimalloc");
#else
    if (std::getenv("MIMALLOC_DECOMMIT_DELAY") || std::getenv("MIMALLOC_SEGMENT_DECOMMIT_DELAY"))
      QSKIP("MIMALLOC_DECOMMIT_DELAY or MIMALLOC_SEGMENT_DECOMMIT_DELAY is set and decides");
    QCOMPARE(mi_option_get(mi_option_decommit_delay), 10000L);
    QCOMPARE(mi_option_get(mi_option_segment_decommit_delay), 10000L);
#endif
  }
};

TSCOPE_TEST_MAIN(TestAllocator)
#include "tst_allocator.moc"
