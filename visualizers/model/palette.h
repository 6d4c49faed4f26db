#pragma once
// The colours of the graph view: d3viz's (REFERENCE.md "d3viz") plus the view's own (selection,
// hover, clusters). One table, also shipped as resources/palette.json for users to read; a test
// checks the two agree.

#include "visualizers/model/view_model.h"

#include <QColor>
#include <QString>

namespace tscope::vis::palette {

// The fill of an Apply ellipse from the op's class name: Scan yellow, Shape cyan, IfElse magenta,
// Elemwise #FFAABB (Composite too: it is a fused Elemwise), Subtensor #FFAAFF, Alloc #FFAA22,
// GpuFromHost / HostFromGpu red, anything else white. The first rule whose word the name contains
// wins, in that order.
QColor opFamilyColor(const QString& opName);
// The family word of the first rule that matches ("Elemwise", "Subtensor", ...; a Composite is
// "Elemwise"), or an empty string for the ops drawn white. The legend names families with it.
QString opFamily(const QString& opName);
QColor variableColor(
    VariableRole role);           // limegreen, SpringGreen, YellowGreen, dodgerblue, lightgrey
QColor edgeColor(EdgeKind kind);  // black, dodgerblue, red
// Eight reds from #fff5f0 to #a50f15; share in [0, 1] of the slowest node's time.
QColor heatColor(double shareOfMax);
QColor clusterFill(int depth);  // shaded cluster backgrounds, darker with depth
QColor clusterBorder();
QColor collapsedGroupFill(GroupKind kind);
QColor selectionColor();
QColor hoverColor();
QColor searchHitColor();
QColor portColor();

// {"op_family": {...}, "variable": {...}, "edge": {...}, "heat": [...], ...}: the table above as
// JSON text (what resources/palette.json holds).
QString paletteJson();

}  // namespace tscope::vis::palette
