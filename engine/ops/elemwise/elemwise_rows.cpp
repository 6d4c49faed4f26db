// The baseline row tables (Note [Kernel instruction sets] in elemwise_rows_impl.h).
#define TSCOPE_ROWS_NS rows_base
#include "engine/ops/elemwise/elemwise_rows_impl.h"
