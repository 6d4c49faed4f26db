#pragma once
// Exporters: exactly what the scene shows, without a window. DOT with positions (pos, width,
// height, bb; clusters as subgraphs, edge colours and labels), SVG (QSvgGenerator rendering the
// scene) and PNG (QImage rendering the scene at a scale). Each writes atomically (temporary file +
// rename) and throws std::runtime_error naming the path on I/O errors.

#include "visualizers/layout/scene_layout.h"

#include <QString>

#include <memory>

namespace tscope::vis {

class GraphScene;

QString sceneToDot(const ViewModel& model, const SceneLayout& layout);
void exportDot(const ViewModel& model, const SceneLayout& layout, const QString& path);
void exportSvg(GraphScene& scene, const QString& path);
// scale: pixels per point (2 = sharp on high-DPI screens); the image is capped at 16384 px a side
// and 30 Mpx in all.
void exportPng(GraphScene& scene, const QString& path, double scale = 1.0);

}  // namespace tscope::vis
