#pragma once
// Note [Walk marks]: walks over graphs that no FunctionGraph indexes (the caller's graph that a
// FunctionGraph clones, the user graph compile() reads) must remember which nodes and variables
// they have seen. A hash map keyed by address does that, but its table is a random access per
// visit: at 100k nodes it outgrows the core's L2 and the walk pays a cache miss per edge on top of
// the node itself (FunctionGraph construction scaled 13x from 10k to 100k nodes with caches cold).
// So each Apply and Variable carries a small scratch mark, written on the object the walk already
// touches: a walk takes a fresh epoch and a mark counts only when it carries that epoch, so no walk
// ever clears marks. One walk at a time in the process owns the marks (an atomic flag); a walk
// that finds them taken (another thread, or a walk nested in one) keeps its own hash maps instead.
// WalkMemo (walk_memo.h) hides the choice.

#include <cstdint>

namespace tscope::engine {

// The scratch each Apply and Variable carries; only the walk that owns the marks reads or writes
// it.
struct WalkMark {
  std::uint64_t epoch = 0;
  std::uint32_t value = 0;
};

}  // namespace tscope::engine
