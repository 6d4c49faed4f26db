#include "profiling/cupti/buffer_queue.h"

#include <cstdlib>

namespace tscope::prof::cupti {

BufferQueue::BufferQueue(NextRecord next, Decoder decoder, std::int64_t maxRecords)
    : m_next(std::move(next)),
      m_decoder(std::move(decoder)),
      m_activity(maxRecords),
      m_worker([this] { run(); }) {}

BufferQueue::~BufferQueue() {
  {
    const std::lock_guard lock(m_mutex);
    m_quit = true;
  }
  m_changed.notify_all();
  m_worker.join();
}

void BufferQueue::enqueue(std::uint8_t* buffer, std::size_t validSize, std::size_t dropped) {
  {
    const std::lock_guard lock(m_mutex);
    m_queue.push_back({buffer, validSize, dropped});
  }
  m_changed.notify_all();
}

void BufferQueue::waitIdle() {
  std::unique_lock lock(m_mutex);
  m_changed.wait(lock, [&] { return m_queue.empty() && !m_decoding; });
}

GpuActivity BufferQueue::take() {
  const std::lock_guard lock(m_activityMutex);
  GpuActivity out(m_activity.maxRecords());
  std::swap(out, m_activity);
  return out;
}

void BufferQueue::run() {
  std::unique_lock lock(m_mutex);
  while (true) {
    m_changed.wait(lock, [&] { return m_quit || !m_queue.empty(); });
    if (m_queue.empty()) return;  // quitting, nothing left
    const Completed c = m_queue.front();
    m_queue.pop_front();
    m_decoding = true;
    lock.unlock();
    // Decoded into a chunk without a budget, merged under the capture's (GpuActivity::merge).
    GpuActivity chunk(INT64_MAX);
    CUpti_Activity* record = nullptr;
    if (c.buffer)
      while (c.validSize > 0 && m_next(c.buffer, c.validSize, record) && record)
        m_decoder.decode(*record, chunk);
    chunk.addDroppedBySource(static_cast<std::int64_t>(c.dropped));
    chunk.countBuffer();
    std::free(c.buffer);
    {
      const std::lock_guard activityLock(m_activityMutex);
      m_activity.merge(std::move(chunk));
    }
    lock.lock();
    m_decoding = false;
    m_changed.notify_all();
  }
}

}  // namespace tscope::prof::cupti
