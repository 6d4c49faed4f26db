// The AVX-512 row tables (Note [Kernel instruction sets] in elemwise_rows_impl.h). CMake compiles
// this unit with -mavx512f -mavx512dq -mavx512vl -mavx512bw -mavx2 -mfma -ffp-contract=off on
// x86-64 and defines TSCOPE_HAVE_AVX512_KERNELS; elsewhere it is empty.
#if defined(TSCOPE_HAVE_AVX512_KERNELS)
// Before any header can include Eigen: this unit's Eigen lives in a namespace of its own.
#define Eigen tscope_eigen_avx512
#define TSCOPE_ROWS_NS rows_avx512
#include "engine/ops/elemwise/elemwise_rows_impl.h"
#endif
