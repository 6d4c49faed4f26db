// Small GPU work for the GPU tests: a kernel with a known grid and block, a copy and a set.
#include <cuda_runtime.h>

__global__ void touchKernel(float* data, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * 2.0f + 1.0f;
}

// Launches touchKernel over n floats with 64-thread blocks; returns the cudaError_t.
int launchTouch(float* device, int n) {
  touchKernel<<<(n + 63) / 64, 64>>>(device, n);
  return static_cast<int>(cudaGetLastError());
}
