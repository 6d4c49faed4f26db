#pragma once
// Assembly of a SceneLayout from per-level layouts (Note [Per-group layout] in scene_layout.h).
// Bottom-up: a level is laid out after its expanded children, whose sizes it needs. Top-down: each
// expanded child's level layout is translated into the rect dot gave its item, inside the margins
// and under the title bar. Runs on the layout worker.

#include "visualizers/layout/graphviz_level.h"
#include "visualizers/layout/layout_service.h"

#include <atomic>
#include <exception>
#include <functional>
#include <memory>

namespace tscope::vis::layout {

// Lays out one level: from the cache, else with Graphviz. Supplied by the service.
using LevelRunner = std::function<std::shared_ptr<const LevelLayout>(const LevelSpec&)>;

// Thrown between levels when the job was cancelled or went stale.
class LayoutCancelled : public std::exception {
 public:
  const char* what() const noexcept override { return "layout cancelled"; }
};

std::shared_ptr<const SceneLayout> assembleLayout(const ViewModel& model, const GroupState& state,
                                                  const LayoutOptions& options,
                                                  const LevelRunner& runLevel,
                                                  const std::atomic<bool>& cancelled);

}  // namespace tscope::vis::layout
