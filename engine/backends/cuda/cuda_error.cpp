#include "engine/backends/cuda/cuda_error.h"

#include "engine/graph/apply.h"
#include "engine/graph/op.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nvrtc.h>
#ifdef TSCOPE_HAVE_CUDNN
#include <cudnn.h>
#endif

namespace tscope::engine::cuda {

namespace {
thread_local const Apply* t_node = nullptr;

[[noreturn]] void fail(std::string_view library, std::string_view call, std::string_view error,
                       std::string_view name, int code) {
  throw CudaError(errorMessage(call, error, name, code, t_node), std::string(library), code);
}
}  // namespace

NodeScope::NodeScope(const Apply* node) : m_previous(t_node) {
  t_node = node;
}
NodeScope::~NodeScope() {
  t_node = m_previous;
}
const Apply* NodeScope::current() {
  return t_node;
}

std::string errorMessage(std::string_view call, std::string_view error, std::string_view name,
                         int code, const Apply* node) {
  std::string s = std::string(call) + " failed: " + std::string(error) + " (";
  if (!name.empty()) s += std::string(name) + ", ";
  s += "code " + std::to_string(code) + ")";
  if (node != nullptr) s += " at node " + std::to_string(node->id()) + " " + node->op().str();
  return s;
}

void checkCuda(int code, std::string_view call) {
  if (code == cudaSuccess) return;
  const auto e = static_cast<cudaError_t>(code);
  fail("CUDA", call, cudaGetErrorString(e), cudaGetErrorName(e), code);
}

void checkNvrtc(int code, std::string_view call) {
  if (code == NVRTC_SUCCESS) return;
  fail("NVRTC", call, nvrtcGetErrorString(static_cast<nvrtcResult>(code)), "", code);
}

void checkCublas(int code, std::string_view call) {
  if (code == CUBLAS_STATUS_SUCCESS) return;
  const auto s = static_cast<cublasStatus_t>(code);
  fail("cuBLAS", call, cublasGetStatusString(s), cublasGetStatusName(s), code);
}

void checkCudnn(int code, std::string_view call) {
#ifdef TSCOPE_HAVE_CUDNN
  if (code == CUDNN_STATUS_SUCCESS) return;
  fail("cuDNN", call, cudnnGetErrorString(static_cast<cudnnStatus_t>(code)), "", code);
#else
  if (code == 0) return;
  fail("cuDNN", call, "cuDNN error (this build has no cuDNN to name it)", "", code);
#endif
}

}  // namespace tscope::engine::cuda
