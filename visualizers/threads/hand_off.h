#pragma once
// Hand-offs between threads: jobs on a QThreadPool, results posted back to an object's thread,
// made so that ThreadSanitizer sees them (Note [Hand-offs TSan can see]).
//
//   vis::startOnPool(pool, [=] { ... });          // runs the job on one of the pool's threads
//   vis::Mailbox mail(owner);                      // made on owner's thread
//   mail.post([=] { ... });                        // from any thread: runs on owner's thread,
//                                                  // after the current event; dropped once owner
//                                                  // is destroyed
//   vis::runOnWorker(context, work, done);         // work() on Qt's global pool, then
//                                                  // done(result) on context's thread, queued
//
// Note [Hand-offs TSan can see]: Qt's thread pool, event queue and futures synchronise inside Qt's
// libraries, through futexes that ThreadSanitizer does not see (Debian's Qt is not built with
// -fsanitize=thread). A value built on a worker and read on the GUI thread after a queued event, or
// a job's captures written on the GUI thread and read on the worker, then look like races, and so
// would a real race next to them. Every hand-off of ours therefore also passes through one mutex
// that TSan does see: the sending thread locks and unlocks it after writing what it hands over
// (handOffRelease), the receiving thread locks and unlocks it before reading (handOffAcquire), and
// the objects Qt carries between the threads (the QRunnable, the posted QEvent) touch what they
// hold only after the receiving side's acquire. At run time a hand-off costs one uncontended lock
// more. The mutex is shared by every hand-off, so TSan sees more order than each one has (a race
// between two hand-offs' threads may go unseen); races inside the engine, in the layout worker and
// between the GUI thread and a running job are still reported. Values handed over are immutable
// snapshots (DESIGN.md), so the order that matters is the one from their writer to their reader.

#include <QObject>
#include <QThreadPool>

#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

namespace tscope::vis {

// After writing what another thread will read (before handing it over).
void handOffRelease();
// Before reading what another thread handed over.
void handOffAcquire();

// Runs `job` on one of `pool`'s threads. An exception escaping the job is reported with
// qCritical and dropped (the pool has no caller to give it to).
void startOnPool(QThreadPool& pool, std::function<void()> job, int priority = 0);

namespace detail {
struct MailLink;
}

// Posts functions to run on an owner object's thread. Copies share one link; every Mailbox of
// one owner shares one receiver (a child of the owner).
class Mailbox {
 public:
  // On `owner`'s thread.
  explicit Mailbox(QObject* owner);
  // From any thread: `fn` runs on the owner's thread, after the event being handled, in the order
  // of the posts; it is dropped (destroyed unrun) once the owner is destroyed.
  void post(std::function<void()> fn) const;

 private:
  std::shared_ptr<detail::MailLink> m_link;
};

// Runs `work` on Qt's global pool and hands its result to `done` on `context`'s thread, always
// queued: it arrives after the current call returns, and never after `context` is destroyed.
// Call it on `context`'s thread.
template <typename Work, typename Done>
void runOnWorker(QObject* context, Work&& work, Done&& done) {
  using Result = std::invoke_result_t<std::decay_t<Work>&>;
  Mailbox mail(context);
  startOnPool(*QThreadPool::globalInstance(),
              [mail, work = std::forward<Work>(work), done = std::forward<Done>(done)]() mutable {
                auto result = std::make_shared<Result>(work());
                mail.post([done = std::move(done), result]() mutable { done(std::move(*result)); });
              });
}

}  // namespace tscope::vis
