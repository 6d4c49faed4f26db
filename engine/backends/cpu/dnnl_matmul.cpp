#include "engine/backends/cpu/dnnl_matmul.h"

#include "engine/backends/cpu/threads.h"

#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>

#ifdef TSCOPE_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>
extern "C" void omp_set_num_threads(int n);  // libgomp's (dnnl_conv.cpp says why)
#endif

namespace tscope::engine::cpu {

#ifndef TSCOPE_HAVE_DNNL

bool dnnlGemmEnabled() {
  return false;
}

void setDnnlGemmAnyKernel(bool) {}

std::string dnnlGemmKernel(bool, bool, std::int64_t, std::int64_t, std::int64_t) {
  return {};
}

bool dnnlGemm(bool, bool, std::int64_t, std::int64_t, std::int64_t, float, const float*,
              std::int64_t, const float*, std::int64_t, float, float*, std::int64_t) {
  return false;
}

#else

namespace {

using dnnl::memory;

// A primitive per geometry, scale and layout: the shapes of a model's products repeat every call.
struct Key {
  bool transA, transB;
  std::int64_t m, n, k, lda, ldb, ldc;
  float alpha, beta;
  int threads;  // fixed when the primitive is made (Note [oneDNN threads per plan], dnnl_conv.cpp)
  auto tie() const {
    return std::tie(transA, transB, m, n, k, lda, ldb, ldc, alpha, beta, threads);
  }
  bool operator<(const Key& o) const { return tie() < o.tie(); }
};

struct Plan {
  dnnl::matmul matmul;
  memory::desc a, b, c;
  std::string kernel;  // oneDNN's implementation: "brg:avx512_core", "gemm:jit", ...
  bool brgemm = false;
};

dnnl::engine& cpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// A row-major (rows x cols) matrix with leading dimension ld, or (transposed) its transpose: the
// stored (cols x rows) matrix read column by column.
memory::desc matrix(std::int64_t rows, std::int64_t cols, std::int64_t ld, bool transposed) {
  return memory::desc({rows, cols}, memory::data_type::f32,
                      transposed ? memory::dims{1, ld} : memory::dims{ld, 1});
}

// TSCOPE_DNNL_GEMM=force, or setDnnlGemmAnyKernel(true): oneDNN takes the products whatever
// kernel it has for them (for comparing the two libraries on one machine, and for tests).
std::atomic<bool>& anyKernel() {
  static std::atomic<bool> any = [] {
    const char* v = std::getenv("TSCOPE_DNNL_GEMM");
    return v != nullptr && std::string_view(v) == "force";
  }();
  return any;
}

Plan makePlan(const Key& key) {
  Plan p;
  p.a = matrix(key.m, key.k, key.lda, key.transA);
  p.b = matrix(key.k, key.n, key.ldb, key.transB);
  p.c = matrix(key.m, key.n, key.ldc, false);
  dnnl::primitive_attr attr;
  if (key.alpha != 1.0f) attr.set_output_scales(0, {key.alpha});
  if (key.beta != 0.0f) {
    dnnl::post_ops ops;
    ops.append_sum(key.beta);
    attr.set_post_ops(ops);
  }
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p.a, p.b, p.c), attr, cpuEngine());
  p.kernel = pd.impl_info_str();
  p.brgemm = p.kernel.starts_with("brg");
  p.matmul = dnnl::matmul(pd);
  return p;
}

std::shared_ptr<const Plan> planFor(const Key& key) {
  static std::mutex mutex;
  static auto* plans = new std::map<Key, std::shared_ptr<const Plan>>;  // never destroyed
  {
    std::lock_guard lock(mutex);
    if (auto it = plans->find(key); it != plans->end()) return it->second;
  }
  auto plan = std::make_shared<const Plan>(makePlan(key));
  std::lock_guard lock(mutex);
  return plans->emplace(key, plan).first->second;
}

bool enabled() {
  static const bool on = [] {
    const char* v = std::getenv("TSCOPE_DNNL_GEMM");
    return v == nullptr || std::string_view(v) != "0";
  }();
  return on;
}

}  // namespace

bool dnnlGemmEnabled() {
  return enabled();
}

void setDnnlGemmAnyKernel(bool on) {
  anyKernel().store(on);
}

std::string dnnlGemmKernel(bool transA, bool transB, std::int64_t m, std::int64_t n,
                           std::int64_t k) {
  if (m <= 0 || n <= 0 || k <= 0) return {};
  const Key key{transA, transB,          m, n, k, transA ? m : k, transB ? k : n, n, 1.0f,
                0.0f,   intraOpThreads()};
  try {
    omp_set_num_threads(key.threads);
    return planFor(key)->kernel;
  } catch (const dnnl::error&) {
    return {};
  }
}

bool dnnlGemm(bool transA, bool transB, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
              const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta,
              float* C, std::int64_t ldc) {
  if (m <= 0 || n <= 0 || k <= 0 || !enabled()) return false;
  if (static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) < 32.0 * 32 * 32)
    return false;
  const Key key{transA, transB, m, n, k, lda, ldb, ldc, alpha, beta, intraOpThreads()};
  try {
    omp_set_num_threads(key.threads);
    const std::shared_ptr<const Plan> plan = planFor(key);
    // Note [oneDNN products] (dnnl_matmul.h): only its brgemm kernels beat OpenBLAS.
    if (!plan->brgemm && !anyKernel().load(std::memory_order_relaxed)) return false;
    thread_local dnnl::stream stream(cpuEngine());
    memory a(plan->a, cpuEngine(), const_cast<float*>(A));
    memory b(plan->b, cpuEngine(), const_cast<float*>(B));
    memory c(plan->c, cpuEngine(), C);
    plan->matmul.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    stream.wait();
  } catch (const dnnl::error& e) {
    throw std::runtime_error("oneDNN refused the product " + std::to_string(m) + "x" +
                             std::to_string(k) + " . " + std::to_string(k) + "x" +
                             std::to_string(n) + (transA ? " (A transposed)" : "") +
                             (transB ? " (B transposed)" : "") + ": " + e.what());
  }
  return true;
}

#endif

}  // namespace tscope::engine::cpu
