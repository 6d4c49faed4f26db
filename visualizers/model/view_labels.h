#pragma once
// Labels and tooltips of the view model's nodes and edges, in d3viz's words (REFERENCE.md "d3viz").
// Private to visualizers/model.

#include "engine/graph/apply.h"
#include "engine/graph/variable.h"
#include "visualizers/model/view_model.h"

#include <QString>

#include <cstdint>
#include <vector>

namespace tscope::vis::labels {

inline constexpr int kMaxOpLabel = 40;  // characters of an op's str() before it is elided with "…"

QString qs(const std::string& text);
// "fmatrix", "dvector", "iscalar".
QString shortType(const engine::TensorType& type);
// "(?, 784)".
QString shapeText(const std::vector<std::int64_t>& shape);
// text cut to `max` characters, the last one "…", when longer.
QString elided(const QString& text, int max);

// The op's str() (elided) and, on a second line, the names of its named outputs.
QString applyLabel(const engine::Apply& node);
// The name; else a constant's value (3 significant digits for a scalar, up to 4 elements for a
// small tensor, "[…] 2×3" for a bigger one); else the short type.
QString variableLabel(const engine::Variable& var);
// "1 fmatrix" when the consumer has several inputs, "fmatrix" otherwise (inputIndex -1: the
// edge from an Apply to its output box, prefixed with the output index when it has several).
QString edgeLabel(const engine::Variable& value, int position, int count);

// A parameter's badge row (Note [Parameters]): "name  ftensor4 (64, 3, 7, 7)", the name elided.
QString badgeText(const engine::Variable& var);
// The row of an Apply folded into its readers: "conv1.bias  DimShuffle{x,0,x,x}  ftensor4 (1, 64,
// 1, 1)", named after its first parameter input.
QString foldedBadgeText(const engine::Apply& node, const QString& name);

QString applyTooltip(const engine::Apply& node, const HeatEntry* heat);
QString variableTooltip(const engine::Variable& var, VariableRole role, bool graphOutput);

}  // namespace tscope::vis::labels
