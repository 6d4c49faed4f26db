#include "engine/backends/cpu/parallel.h"

#include "engine/backends/cpu/threads.h"

#include <algorithm>
#include <exception>
#include <vector>

#if defined(TSCOPE_HAVE_OPENMP) && !defined(__SANITIZE_THREAD__)
#define TSCOPE_PARALLEL_LOOPS 1
#endif

namespace tscope::engine::cpu {

bool parallelLoopsAvailable() {
#ifdef TSCOPE_PARALLEL_LOOPS
  return true;
#else
  return false;
#endif
}

void parallelFor(std::int64_t n, std::int64_t grain,
                 const std::function<void(std::int64_t begin, std::int64_t end)>& fn,
                 std::int64_t align) {
  if (n <= 0) return;
#ifdef TSCOPE_PARALLEL_LOOPS
  const std::int64_t chunks =
      std::min<std::int64_t>(intraOpThreads(), n / std::max<std::int64_t>(grain, 1));
  if (chunks >= 2) {
    // Range c: [start(c), start(c + 1)), every start but 0 and n a multiple of align.
    const std::int64_t a = std::max<std::int64_t>(align, 1);
    auto start = [&](std::int64_t c) { return c >= chunks ? n : (n * c / chunks) / a * a; };
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(chunks));
#pragma omp parallel for num_threads(static_cast <int>(chunks)) schedule(static, 1)
    for (std::int64_t c = 0; c < chunks; ++c) {
      try {
        if (start(c) < start(c + 1)) fn(start(c), start(c + 1));
      } catch (...) {
        errors[static_cast<std::size_t>(c)] = std::current_exception();
      }
    }
    for (const std::exception_ptr& e : errors)
      if (e) std::rethrow_exception(e);
    return;
  }
#else
  (void)grain;
  (void)align;
#endif
  fn(0, n);
}

}  // namespace tscope::engine::cpu
