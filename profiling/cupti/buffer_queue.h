#pragma once
// BufferQueue: completed CUPTI activity buffers, decoded on one worker thread (Note [CUPTI
// buffers] in cupti_source.cpp). The record iterator is a parameter, so tst_cupti_decode drives
// the queue with buffers of structs packed in memory instead of cuptiActivityGetNextRecord.
// Internal to profiling/cupti/.

#include "profiling/cupti/cupti_decode.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace tscope::prof::cupti {

class BufferQueue {
 public:
  // Advances `record` to the next record of the buffer (null: the first); false at the end.
  // CUPTI's is cuptiActivityGetNextRecord(buffer, validSize, &record) == CUPTI_SUCCESS.
  using NextRecord =
      std::function<bool(std::uint8_t* buffer, std::size_t validSize, CUpti_Activity*& record)>;

  BufferQueue(NextRecord next, Decoder decoder, std::int64_t maxRecords);
  // Decodes what is queued, then stops the worker.
  ~BufferQueue();
  BufferQueue(const BufferQueue&) = delete;
  BufferQueue& operator=(const BufferQueue&) = delete;

  // Any thread (CUPTI's completion callback): queues the buffer, which the queue then owns and
  // frees (std::free); `dropped` is CUPTI's count of records that did not fit.
  void enqueue(std::uint8_t* buffer, std::size_t validSize, std::size_t dropped);
  // Waits until every queued buffer is decoded (Note [GPU flush]).
  void waitIdle();
  // The records decoded so far, moved out (the capture budget is maxRecords).
  GpuActivity take();

 private:
  struct Completed {
    std::uint8_t* buffer;
    std::size_t validSize;
    std::size_t dropped;
  };
  void run();

  NextRecord m_next;
  Decoder m_decoder;
  std::mutex m_activityMutex;
  GpuActivity m_activity;
  std::mutex m_mutex;
  std::condition_variable m_changed;
  std::deque<Completed> m_queue;
  bool m_decoding = false;
  bool m_quit = false;
  std::thread m_worker;  // last: started once everything above exists
};

}  // namespace tscope::prof::cupti
