#include "visualizers/layout/scene_layout.h"

namespace tscope::vis {

int SceneLayout::placedNode(int node) const {
  if (node < 0 || node >= static_cast<int>(m_nodeIndex.size())) return -1;
  return m_nodeIndex[static_cast<std::size_t>(node)];
}

int SceneLayout::placedGroup(int group) const {
  if (group < 0 || group >= static_cast<int>(m_groupIndex.size())) return -1;
  return m_groupIndex[static_cast<std::size_t>(group)];
}

}  // namespace tscope::vis
