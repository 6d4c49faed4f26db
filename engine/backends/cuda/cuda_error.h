#pragma once
// Errors of the CUDA libraries as exceptions that name the call, the node and the library's own
// error string (tests/engine/cuda/tst_cuda_codegen.cpp checks them with fake error codes; the
// error-string functions need no device). Codes are ints here so that no CUDA type leaks.
//
//   TSCOPE_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, stream));
//   -> CudaError "cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, stream) failed:
//      invalid argument (cudaErrorInvalidValue, code 1) at node 12 Elemwise{add}"

#include <stdexcept>
#include <string>
#include <string_view>

namespace tscope::engine {
class Apply;
}

namespace tscope::engine::cuda {

class CudaError : public std::runtime_error {
 public:
  CudaError(const std::string& what, std::string library, int code)
      : std::runtime_error(what), m_library(std::move(library)), m_code(code) {}
  const std::string& library() const { return m_library; }  // "CUDA", "NVRTC", "cuBLAS", "cuDNN"
  int code() const { return m_code; }

 private:
  std::string m_library;
  int m_code;
};

// The node whose kernel is running on this thread, for messages (the kernels set it).
class NodeScope {
 public:
  explicit NodeScope(const Apply* node);
  ~NodeScope();
  NodeScope(const NodeScope&) = delete;
  NodeScope& operator=(const NodeScope&) = delete;
  static const Apply* current();

 private:
  const Apply* m_previous;
};

// "<call> failed: <error> (<name>, code <code>)[ at node <id> <op>]".
std::string errorMessage(std::string_view call, std::string_view error, std::string_view name,
                         int code, const Apply* node);

// Throw CudaError when code is not the library's success value; the message uses
// cudaGetErrorString/Name, nvrtcGetErrorString, cublasGetStatusString, cudnnGetErrorString.
void checkCuda(int code, std::string_view call);
void checkNvrtc(int code, std::string_view call);
void checkCublas(int code, std::string_view call);
void checkCudnn(int code, std::string_view call);

}  // namespace tscope::engine::cuda

#define TSCOPE_CUDA_CHECK(call) ::tscope::engine::cuda::checkCuda(static_cast<int>(call), #call)
#define TSCOPE_NVRTC_CHECK(call) ::tscope::engine::cuda::checkNvrtc(static_cast<int>(call), #call)
#define TSCOPE_CUBLAS_CHECK(call) ::tscope::engine::cuda::checkCublas(static_cast<int>(call), #call)
