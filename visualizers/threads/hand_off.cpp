#include "visualizers/threads/hand_off.h"

#include <QCoreApplication>
#include <QEvent>
#include <QRunnable>
#include <QtGlobal>

#include <cstdlib>
#include <exception>
#include <mutex>

namespace tscope::vis {

namespace {

// Constant-initialized: no thread writes it before using it (Note [Hand-offs TSan can see]).
std::mutex g_handOff;

QEvent::Type deliveryType() {
  static const auto type = static_cast<QEvent::Type>(QEvent::registerEventType());
  return type;
}

class PoolJob final : public QRunnable {
 public:
  explicit PoolJob(std::function<void()> job) : m_job(std::move(job)) { setAutoDelete(true); }
  // Destroyed on the worker after run(), or unrun by QThreadPool::clear() on another thread.
  ~PoolJob() override { handOffAcquire(); }
  void run() override {
    handOffAcquire();
    try {
      m_job();
    } catch (const std::exception& e) {
      qCritical("a worker job failed: %s", e.what());
    } catch (...) {
      qCritical("a worker job failed with an exception that is not a std::exception");
    }
    handOffRelease();  // for the exit (startOnPool)
  }

 private:
  std::function<void()> m_job;
};

// A posted function; Qt deletes it on the receiver's thread (after delivery, or unrun when the
// receiver goes), so it reads what it holds only after an acquire.
class Delivery final : public QEvent {
 public:
  explicit Delivery(std::function<void()> fn) : QEvent(deliveryType()), m_fn(std::move(fn)) {}
  ~Delivery() override { handOffAcquire(); }
  void run() {
    handOffAcquire();
    std::function<void()> fn = std::move(m_fn);
    fn();
  }

 private:
  std::function<void()> m_fn;
};

class MailReceiver;

}  // namespace

namespace detail {
// The owner's receiver while it lives; its mutex makes "is it alive?" and the post one step.
struct MailLink {
  std::mutex mutex;
  QObject* receiver = nullptr;
};
}  // namespace detail

namespace {

class MailReceiver final : public QObject {
 public:
  explicit MailReceiver(QObject* owner)
      : QObject(owner), link(std::make_shared<detail::MailLink>()) {
    setObjectName(QStringLiteral("tscope_mailbox"));
    link->receiver = this;
  }
  ~MailReceiver() override {
    std::lock_guard lock(link->mutex);
    link->receiver = nullptr;
  }
  bool event(QEvent* e) override {
    handOffAcquire();  // before reading the event: a Delivery was made on the posting thread
    if (e->type() != deliveryType()) return QObject::event(e);
    static_cast<Delivery*>(e)->run();
    return true;
  }
  const std::shared_ptr<detail::MailLink> link;
};

}  // namespace

void handOffRelease() {
  std::lock_guard lock(g_handOff);
}

void handOffAcquire() {
  std::lock_guard lock(g_handOff);
}

void startOnPool(QThreadPool& pool, std::function<void()> job, int priority) {
  // What a job read stays read when the process exits: static objects (the op registry, say) are
  // destroyed after an acquire of every finished job's release, as Qt's pool threads end in a
  // way TSan does not see either.
  static const bool atExit = (std::atexit([] { handOffAcquire(); }), true);
  (void)atExit;
  auto* runnable = new PoolJob(std::move(job));
  handOffRelease();
  pool.start(runnable, priority);
}

Mailbox::Mailbox(QObject* owner) {
  Q_ASSERT(owner);
  auto* receiver = dynamic_cast<MailReceiver*>(
      owner->findChild<QObject*>(QStringLiteral("tscope_mailbox"), Qt::FindDirectChildrenOnly));
  if (!receiver) receiver = new MailReceiver(owner);
  m_link = receiver->link;
}

void Mailbox::post(std::function<void()> fn) const {
  auto* delivery = new Delivery(std::move(fn));
  std::unique_lock lock(m_link->mutex);
  if (!m_link->receiver) {
    lock.unlock();
    delete delivery;  // the owner is gone
    return;
  }
  handOffRelease();
  QCoreApplication::postEvent(m_link->receiver, delivery);
}

}  // namespace tscope::vis
