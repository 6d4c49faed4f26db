// The AVX2 + FMA row tables (Note [Kernel instruction sets] in elemwise_rows_impl.h). CMake
// compiles this unit with -mavx2 -mfma -ffp-contract=off on x86-64 and defines
// TSCOPE_HAVE_AVX2_KERNELS; elsewhere it is empty.
#if defined(TSCOPE_HAVE_AVX2_KERNELS)
// Before any header can include Eigen: this unit's Eigen lives in a namespace of its own.
#define Eigen tscope_eigen_avx2
#define TSCOPE_ROWS_NS rows_avx2
#include "engine/ops/elemwise/elemwise_rows_impl.h"
#endif
