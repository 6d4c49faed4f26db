#pragma once
// The shape and indexing ops in one include: dimshuffle/transpose, shape vectors, reshape,
// join/split, basic and advanced indexing, alloc/arange, specifyShape, tile/repeat.

#include "engine/ops/shape/advanced_index.h"
#include "engine/ops/shape/advanced_subtensor.h"
#include "engine/ops/shape/alloc.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/ops/shape/join.h"
#include "engine/ops/shape/reshape.h"
#include "engine/ops/shape/shape_vector.h"
#include "engine/ops/shape/specify_shape.h"
#include "engine/ops/shape/subtensor.h"
#include "engine/ops/shape/tile_repeat.h"
