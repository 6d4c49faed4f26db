#pragma once
// A workaround for a Graphviz 2.42 crash that depends on the layouts a process ran before:
// Note [dot's decompose mark wraps]. Used by GraphvizLayouter on the thread that owns Graphviz.
//
// Note [dot's decompose mark wraps]
// dot's decompose() (lib/dotgen/decomp.c) tells visited nodes apart with a process-wide
// `static char Cmark`, incremented on every call and wrapped from 255 to 1 (0 is skipped).
// acyclic() leaves every node marked TRUE (1). When a level has rank=source/sink sets (our ports)
// and some node needs an extra edge to them, dot1_rank() calls decompose() a second time, after
// acyclic(). If that call is the one where Cmark wraps to 1, every node already carries the mark:
// no component is found, cleanup1() frees the rank phase's virtual edges without clearing the
// nodes' edge lists, and the decompose() at the start of dot_mincross() follows a freed edge:
// SIGSEGV. It hits one layout in every 255 decompose() calls or so, whichever level that is, so it
// looked like state leaking from the previous layouts; `dot` itself crashes on the same sequence of
// graphs written into one file. A fresh GVC_t does not help (Cmark lives in the plugin).
//
// The guard steers the counter: before each layout it calls the plugin's exported decompose() on a
// one-node graph of its own, which marks that node with the current Cmark; when the layout's own
// calls could reach the wrap, it spends the wrap on that graph instead (a fresh node has mark 0,
// so the wrap is harmless there).

#include <memory>

namespace tscope::vis::layout {

class DecomposeMarkGuard {
 public:
  // `dotPlugin`: our dlopen handle of libgvplugin_dot_layout. Without one (Graphviz loaded the
  // plugin through its configuration), when the plugin does not export decompose(), or when the
  // probe does not behave as 2.42's does, the guard stays inactive and beforeLayout() does nothing.
  explicit DecomposeMarkGuard(void* dotPlugin);
  ~DecomposeMarkGuard();
  DecomposeMarkGuard(const DecomposeMarkGuard&) = delete;
  DecomposeMarkGuard& operator=(const DecomposeMarkGuard&) = delete;

  bool active() const { return m_state != nullptr; }
  // Makes sure the next kCallsPerLayout decompose() calls do not wrap Cmark.
  void beforeLayout();
  // Cmark as of the last probe (1..255; 0 when inactive): for tests.
  int lastMark() const { return m_lastMark; }

  // decompose() calls of one level's layout, with room to spare: dot1_rank() makes one or two,
  // dot_mincross() one; levels have no clusters (expanded groups are levels of their own).
  static constexpr int kCallsPerLayout = 8;

 private:
  struct State;
  int probe();

  std::unique_ptr<State> m_state;
  int m_lastMark = 0;
};

}  // namespace tscope::vis::layout
