#include "engine/graph/walk_memo.h"

#include <atomic>

namespace tscope::engine {

namespace {

// Note [Walk marks]: set while a walk owns the objects' marks. The acquire/release pair orders
// one owner's writes to the marks before the next owner's reads.
std::atomic<bool> g_marksTaken{false};
// The last epoch handed out; only the owner of the marks advances it.
std::uint64_t g_lastEpoch = 0;

}  // namespace

WalkMemo::WalkMemo() {
  if (!g_marksTaken.exchange(true, std::memory_order_acquire)) m_epoch = ++g_lastEpoch;
}

WalkMemo::~WalkMemo() {
  if (m_epoch != 0) g_marksTaken.store(false, std::memory_order_release);
}

}  // namespace tscope::engine
