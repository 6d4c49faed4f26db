#include "visualizers/layout/dot_mark_wrap.h"

#include <cstdlib>
#include <dlfcn.h>

// Graphviz last: its headers define short macros (TRUE, FALSE, MIN, MAX, ND_*, GD_*).
#include <graphviz/cgraph.h>
#include <graphviz/types.h>

namespace tscope::vis::layout {

struct DecomposeMarkGuard::State {
  using Decompose = void (*)(Agraph_t*, int);
  Decompose decompose = nullptr;
  Agraph_t* graph = nullptr;
  Agnode_t* node = nullptr;

  ~State() {
    if (!graph) return;
    // decompose() allocates the component list; agclose() frees the records, not the list.
    std::free(GD_comp(graph).list);
    GD_comp(graph).list = nullptr;
    agclose(graph);
  }
};

DecomposeMarkGuard::DecomposeMarkGuard(void* dotPlugin) {
  if (!dotPlugin) return;
  auto state = std::make_unique<State>();
  void* symbol = dlsym(dotPlugin, "decompose");
  if (!symbol) return;
  state->decompose = reinterpret_cast<State::Decompose>(symbol);

  char name[] = "tscope_decompose_probe";
  char graphRecord[] = "Agraphinfo_t";
  char nodeRecord[] = "Agnodeinfo_t";
  char nodeName[] = "probe";
  state->graph = agopen(name, Agdirected, nullptr);
  if (!state->graph) return;
  // The records dot binds to every graph and node: decompose() reads them through GD_*/ND_*.
  agbindrec(state->graph, graphRecord, sizeof(Agraphinfo_t), TRUE);
  state->node = agnode(state->graph, nodeName, 1);
  agbindrec(state->node, nodeRecord, sizeof(Agnodeinfo_t), TRUE);

  m_state = std::move(state);
  // The probe must find exactly our node as one component and leave a non-zero mark; anything
  // else means the plugin's decompose() is not the one this guard was written for.
  const int mark = probe();
  if (mark == 0 || GD_comp(m_state->graph).size != 1 ||
      GD_comp(m_state->graph).list[0] != m_state->node) {
    m_state.reset();
    m_lastMark = 0;
  }
}

DecomposeMarkGuard::~DecomposeMarkGuard() = default;

int DecomposeMarkGuard::probe() {
  // A mark of 0 is never Cmark, so the node is always visited and takes the new Cmark.
  ND_mark(m_state->node) = 0;
  ND_next(m_state->node) = nullptr;
  ND_prev(m_state->node) = nullptr;
  m_state->decompose(m_state->graph, 0);
  m_lastMark = static_cast<unsigned char>(ND_mark(m_state->node));
  return m_lastMark;
}

void DecomposeMarkGuard::beforeLayout() {
  if (!m_state) return;
  // Cmark runs 1..255. While the layout's calls could carry it past 255, spend calls here: the
  // last probe is then the one that wraps, and the layout starts just after it.
  int mark = probe();
  while (mark > 255 - kCallsPerLayout) mark = probe();
}

}  // namespace tscope::vis::layout
