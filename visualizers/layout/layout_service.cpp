#include "visualizers/layout/layout_service.h"

#include "visualizers/layout/graphviz_level.h"
#include "visualizers/layout/layout_assembly.h"
#include "visualizers/layout/level_cache.h"
#include "visualizers/threads/hand_off.h"

#include <QMetaType>

#include <cmath>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <optional>

namespace tscope::vis {

using layout::GraphvizLayouter;
using layout::LayoutCancelled;
using layout::LevelCache;
using layout::LevelLayout;
using layout::LevelSpec;

namespace {

using LayoutPtr = std::shared_ptr<const SceneLayout>;

struct Job {
  std::uint64_t id = 0;
  std::optional<int> channel;  // none: a layoutNow job, never made stale by a channel
  std::shared_ptr<const ViewModel> model;
  GroupState state;
  LayoutOptions options;
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
  std::shared_ptr<std::promise<LayoutPtr>> waiter;  // layoutNow jobs
};

// Options that would make dot misbehave are refused before any Graphviz call.
std::string checkOptions(const LayoutOptions& options) {
  auto bad = [](double value) { return !std::isfinite(value) || value < 0; };
  if (bad(options.nodeSep))
    return "LayoutOptions.nodeSep must be a finite distance >= 0 points, found " +
           std::to_string(options.nodeSep);
  if (bad(options.rankSep))
    return "LayoutOptions.rankSep must be a finite distance >= 0 points, found " +
           std::to_string(options.rankSep);
  return {};
}

}  // namespace

struct LayoutService::Impl {
  LayoutService* q = nullptr;
  std::thread worker;

  std::mutex mutex;
  std::optional<Mailbox> mail;  // to the service's thread (Note [Layout results])
  std::condition_variable wake;
  std::deque<Job> queue;
  bool stopping = false;
  std::uint64_t nextId = 1;
  std::map<int, std::uint64_t> latestOfChannel;
  std::optional<Job> running;  // shares the running job's cancelled flag
  LayoutStats stats;

  LevelCache cache;

  void dropLocked(const Job& job) {  // mutex held
    ++stats.jobsDropped;
    if (job.waiter)
      job.waiter->set_exception(
          std::make_exception_ptr(std::runtime_error("the layout was cancelled")));
  }

  // The worker loop: owns every Graphviz call of the process.
  void run() {
    std::unique_ptr<GraphvizLayouter> layouter;
    std::string startError;
    try {
      layouter = std::make_unique<GraphvizLayouter>();
    } catch (const std::exception& e) {
      startError = e.what();
    }
    {
      std::lock_guard lock(mutex);
      stats.graphvizThread = std::this_thread::get_id();
    }
    for (;;) {
      Job job;
      {
        std::unique_lock lock(mutex);
        wake.wait(lock, [&] { return stopping || !queue.empty(); });
        if (stopping) break;
        job = std::move(queue.front());
        queue.pop_front();
        running = job;
      }
      LayoutPtr result;
      std::string error;
      bool cancelled = false;
      try {
        if (!startError.empty()) throw std::runtime_error(startError);
        if (std::string bad = checkOptions(job.options); !bad.empty())
          throw std::runtime_error(bad);
        result = layout::assembleLayout(
            *job.model, job.state, job.options,
            [&](const LevelSpec& spec) { return runLevel(*layouter, spec); }, *job.cancelled);
      } catch (const LayoutCancelled&) {
        cancelled = true;
      } catch (const std::exception& e) {
        error = e.what();
      }
      finish(job, std::move(result), error, cancelled);
    }
  }

  std::shared_ptr<const LevelLayout> runLevel(GraphvizLayouter& layouter, const LevelSpec& spec) {
    std::string key = spec.cacheKey();
    if (auto cached = cache.find(key)) {
      std::lock_guard lock(mutex);
      ++stats.cacheHits;
      return cached;
    }
    auto laidOut = std::make_shared<const LevelLayout>(layouter.layout(spec));
    {
      std::lock_guard lock(mutex);
      ++stats.levelsLaidOut;
      stats.dotSeconds += laidOut->seconds;
    }
    cache.insert(std::move(key), laidOut);
    return laidOut;
  }

  bool staleLocked(std::uint64_t id, const std::optional<int>& channel,
                   const std::atomic<bool>& cancelled) {  // mutex held
    return cancelled.load() || (channel && latestOfChannel[*channel] != id);
  }

  // Note [Layout results]: the worker posts a result to the service's thread, which checks there,
  // when it is delivered, that the job is still wanted and emits it. cancel() and request() run on
  // that thread too, so a job cancelled or made stale before they return is never emitted.
  void finish(const Job& job, LayoutPtr result, const std::string& error, bool cancelled) {
    {
      std::lock_guard lock(mutex);
      running.reset();
      const bool stale = cancelled || staleLocked(job.id, job.channel, *job.cancelled);
      if (job.waiter) {
        if (stale)
          dropLocked(job);
        else if (!error.empty())
          job.waiter->set_exception(std::make_exception_ptr(std::runtime_error(error)));
        else
          job.waiter->set_value(std::move(result));
        return;
      }
      if (stale) {
        ++stats.jobsDropped;
        return;
      }
    }
    mail->post([this, id = job.id, channel = job.channel, flag = job.cancelled,
                result = std::move(result), error] {
      {
        std::lock_guard lock(mutex);
        if (staleLocked(id, channel, *flag)) {
          ++stats.jobsDropped;
          return;
        }
      }
      if (error.empty())
        emit q->layoutReady(id, result);
      else
        emit q->layoutFailed(id, QString::fromStdString(error));
    });
  }

  std::uint64_t enqueue(Job job) {
    std::uint64_t id;
    {
      std::lock_guard lock(mutex);
      if (stopping) throw std::logic_error("LayoutService: request after shutdown began");
      id = job.id = nextId++;
      if (job.channel) {
        const int channel = *job.channel;
        latestOfChannel[channel] = id;
        // Older jobs of the channel are stale: pending ones are dropped unrun, a running one is
        // told to stop at its next level.
        for (auto it = queue.begin(); it != queue.end();) {
          if (it->channel == channel) {
            dropLocked(*it);
            it = queue.erase(it);
          } else {
            ++it;
          }
        }
        if (running && running->channel == channel) running->cancelled->store(true);
      }
      queue.push_back(std::move(job));
    }
    wake.notify_one();
    return id;
  }
};

LayoutService::LayoutService(QObject* parent) : QObject(parent), m_impl(std::make_unique<Impl>()) {
  qRegisterMetaType<std::shared_ptr<const tscope::vis::SceneLayout>>();
  m_impl->q = this;
  m_impl->mail.emplace(this);
  m_impl->worker = std::thread([impl = m_impl.get()] { impl->run(); });
}

LayoutService::~LayoutService() {
  {
    std::lock_guard lock(m_impl->mutex);
    m_impl->stopping = true;
    if (m_impl->running) m_impl->running->cancelled->store(true);
    for (const Job& job : m_impl->queue) m_impl->dropLocked(job);
    m_impl->queue.clear();
  }
  m_impl->wake.notify_all();
  m_impl->worker.join();
}

std::uint64_t LayoutService::request(std::shared_ptr<const ViewModel> model, GroupState state,
                                     LayoutOptions options, int channel) {
  if (!model) throw std::invalid_argument("LayoutService::request: no view model");
  Job job;
  job.channel = channel;
  job.model = std::move(model);
  job.state = std::move(state);
  job.options = std::move(options);
  return m_impl->enqueue(std::move(job));
}

void LayoutService::cancel(std::uint64_t job) {
  std::lock_guard lock(m_impl->mutex);
  auto& queue = m_impl->queue;
  for (auto it = queue.begin(); it != queue.end(); ++it) {
    if (it->id == job) {
      m_impl->dropLocked(*it);
      queue.erase(it);
      return;
    }
  }
  if (m_impl->running && m_impl->running->id == job) m_impl->running->cancelled->store(true);
}

std::shared_ptr<const SceneLayout> LayoutService::layoutNow(std::shared_ptr<const ViewModel> model,
                                                            GroupState state,
                                                            LayoutOptions options) {
  if (!model) throw std::invalid_argument("LayoutService::layoutNow: no view model");
  if (std::this_thread::get_id() == m_impl->worker.get_id())
    throw std::logic_error("LayoutService::layoutNow called on the layout worker itself");
  Job job;
  job.model = std::move(model);
  job.state = std::move(state);
  job.options = std::move(options);
  job.waiter = std::make_shared<std::promise<LayoutPtr>>();
  auto result = job.waiter->get_future();
  m_impl->enqueue(std::move(job));
  // A plain future wait: works without any event loop, on any thread but the worker.
  return result.get();
}

LayoutStats LayoutService::stats() const {
  std::lock_guard lock(m_impl->mutex);
  return m_impl->stats;
}

void LayoutService::clearCache() {
  m_impl->cache.clear();
}

}  // namespace tscope::vis
