// The hand-offs between threads (visualizers/threads/hand_off.h): jobs on a pool, posts back to an
// owner's thread, runOnWorker. The `tsan` preset runs this suite under ThreadSanitizer too.
#include "gui_test_main.h"
#include "visualizers/threads/hand_off.h"

#include <QThread>
#include <QThreadPool>

#include <atomic>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

using namespace tscope::vis;

namespace {

// Counts its destructions: a dropped post must still destroy what it captured.
struct Tracked {
  explicit Tracked(std::shared_ptr<std::atomic<int>> d) : destroyed(std::move(d)) {}
  Tracked(const Tracked& o) : destroyed(o.destroyed) {}
  ~Tracked() { ++*destroyed; }
  std::shared_ptr<std::atomic<int>> destroyed;
};

}  // namespace

class TestHandOff : public QObject {
  Q_OBJECT

 private slots:
  // A job runs on one of the pool's threads and sees what the caller wrote before starting it.
  void jobRunsOnThePool() {
    QThreadPool pool;
    std::vector<int> data(1000);
    for (int i = 0; i < 1000; ++i) data[std::size_t(i)] = i;
    std::atomic<long> sum{0};
    std::atomic<QThread*> thread{nullptr};
    startOnPool(pool, [&] {
      long s = 0;
      for (int v : data) s += v;
      sum = s;
      thread = QThread::currentThread();
    });
    QVERIFY(pool.waitForDone(30000));
    QCOMPARE(sum.load(), 999L * 1000 / 2);
    QVERIFY(thread.load() != nullptr);
    QVERIFY(thread.load() != QThread::currentThread());
  }

  // An exception escaping a job is reported, not a crash, and the pool goes on.
  void jobExceptionIsReported() {
    QThreadPool pool;
    QTest::ignoreMessage(QtCriticalMsg, "a worker job failed: broken job");
    startOnPool(pool, [] { throw std::runtime_error("broken job"); });
    QVERIFY(pool.waitForDone(30000));
    std::atomic<bool> ran{false};
    startOnPool(pool, [&] { ran = true; });
    QVERIFY(pool.waitForDone(30000));
    QVERIFY(ran.load());
  }

  // Posts from a worker run on the owner's thread, in the order they were posted, after the
  // event being handled.
  void postsRunOnTheOwnersThreadInOrder() {
    QObject owner;
    const Mailbox mail(&owner);
    std::vector<int> seen;
    std::vector<QThread*> threads;
    QThreadPool pool;
    startOnPool(pool, [&, mail] {
      for (int i = 0; i < 50; ++i)
        mail.post([&, i] {
          seen.push_back(i);
          threads.push_back(QThread::currentThread());
        });
    });
    QVERIFY(pool.waitForDone(30000));
    QVERIFY(seen.empty());  // nothing runs until the event loop turns
    QTRY_COMPARE_WITH_TIMEOUT(seen.size(), std::size_t(50), 30000);
    for (int i = 0; i < 50; ++i) {
      QCOMPARE(seen[std::size_t(i)], i);
      QCOMPARE(threads[std::size_t(i)], QThread::currentThread());
    }
  }

  // Every Mailbox of one owner shares one receiver; a post made on the owner's own thread is
  // queued too.
  void oneReceiverPerOwner() {
    QObject owner;
    const Mailbox a(&owner), b(&owner);
    QCOMPARE(owner.children().size(), 1);
    int ran = 0;
    a.post([&] { ++ran; });
    b.post([&] { ++ran; });
    QCOMPARE(ran, 0);
    QTRY_COMPARE_WITH_TIMEOUT(ran, 2, 30000);
  }

  // Once the owner is destroyed, pending and later posts are dropped: never run, but what they
  // captured is destroyed.
  void postsAfterTheOwnerAreDropped() {
    auto destroyed = std::make_shared<std::atomic<int>>(0);
    std::atomic<int> ran{0};
    std::optional<Mailbox> mail;
    {
      QObject owner;
      mail.emplace(&owner);
      mail->post([&ran, t = Tracked(destroyed)] { ++ran; });  // pending when the owner goes
    }
    QCOMPARE(destroyed->load() >= 1, true);
    const int before = destroyed->load();
    QThreadPool pool;
    startOnPool(pool, [&, m = *mail] { m.post([&ran, t = Tracked(destroyed)] { ++ran; }); });
    QVERIFY(pool.waitForDone(30000));
    QCoreApplication::processEvents();
    QCOMPARE(ran.load(), 0);
    QVERIFY(destroyed->load() > before);
  }

  // runOnWorker: the work on a pool thread, its result to the context's thread, always queued,
  // dropped when the context is destroyed first.
  void runOnWorkerDeliversQueued() {
    QObject context;
    QThread* workThread = nullptr;
    QThread* doneThread = nullptr;
    std::optional<std::vector<int>> got;
    runOnWorker(
        &context,
        [&] {
          workThread = QThread::currentThread();
          return std::vector<int>{1, 2, 3};
        },
        [&](std::vector<int> v) {
          doneThread = QThread::currentThread();
          got = std::move(v);
        });
    QVERIFY(!got);
    QTRY_VERIFY_WITH_TIMEOUT(got.has_value(), 30000);
    QCOMPARE(*got, (std::vector<int>{1, 2, 3}));
    QVERIFY(workThread != QThread::currentThread());
    QCOMPARE(doneThread, QThread::currentThread());

    std::atomic<bool> started{false}, release{false};
    bool delivered = false;
    {
      QObject gone;
      runOnWorker(
          &gone,
          [&] {
            started = true;
            while (!release.load()) QThread::msleep(1);
            return 7;
          },
          [&](int) { delivered = true; });
      QTRY_VERIFY_WITH_TIMEOUT(started.load(), 30000);
    }
    release = true;
    QVERIFY(QThreadPool::globalInstance()->waitForDone(30000));
    QCoreApplication::processEvents();
    QVERIFY(!delivered);
  }
};

TSCOPE_GUI_TEST_MAIN(TestHandOff)
#include "tst_hand_off.moc"
