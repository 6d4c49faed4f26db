// The cost of running through a DebugSession (engine/debug/debug_session.h) when no breakpoint
// hits: one SGD step of the MLP 784-500-10 at batch 128 (fast_run, buffers kept, as bench_vm's
// BM_MlpSgdStep) called as Function::operator() and as start + run + finish on a session, paired
// in one run: the variants alternate in rounds and each keeps its median, so a machine whose
// load changes during the run affects every variant alike.
//   bench_session [rounds (default 15)] [steps per round (default 10)]
//
// Note [Session cost]: the variants are
//   plain      Function::operator()
//   safe       Function::operator() with an observer that does nothing: the VM is handed copies
//              of the parameters it updates in place (Note [Parameters stay whole]), as in every
//              session, so safe - plain is the cost of keeping the parameters whole and
//              session - safe the session's own (the worker hand-offs of start, run, finish)
//   session    DebugSession with Retain::AfterLastUse (the VM frees as a plain call does);
//              each step is run(args) then finish(): two hand-offs to the worker
//   retained   DebugSession with Retain::All (the debugger's default: every value kept, in-place
//              updates write into a copy; this is also what keeps the parameters whole)
//   watched    retained, plus a breakpoint on the loss that never hits (the observer runs after
//              every node and evaluates its condition on the loss)
//   call       session, each step one call(args) (start + run + finish as one command; with
//              the session idle it runs on the caller's thread, Note [Inline call], and as a
//              committed run, Note [Committed runs] in vm.h: no hand-off and no copy of W)
//   call-all   retained, each step one call(args)
//   plain@call Function::operator() on the call variant's own Function (its session idle):
//              call - plain@call is the session's cost with the same buffers and parameters
// Target: session <= 5 % over plain (the issue); see the note's split of the cost.

#include "engine/backends/cpu/gemm.h"
#include "engine/compile/function.h"
#include "engine/debug/debug_session.h"
#include "engine/grad/grad.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/nn/crossentropy.h"
#include "engine/ops/reduce/reduce.h"
#include "mlp_step.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

using namespace tscope::engine;
using namespace tscope::engine::debug;

namespace {

// A tiny learning rate: the parameters barely move, so every step costs the same.
struct Mlp {
  tscope::bench::MlpStep model{1e-6};
  Function step = model.compile({.mode = Mode::FastRun, .keepBuffers = true});
  std::vector<Tensor>& args = model.args;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class F>
double timeSteps(int steps, F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
         steps;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 15;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 10;
  cpu::setGemmThreads(1);
  std::printf("GEMM backend: %s, 1 thread; %d rounds of %d steps\n", cpu::gemmBackendName().c_str(),
              rounds, steps);

  Mlp plain, safe, lean, kept, watched, leanCall, keptCall;
  struct Nothing : ExecutionObserver {};
  safe.step.vm().addObserver(std::make_shared<Nothing>());
  DebugSessionOptions leanOptions;
  leanOptions.retain = Retain::AfterLastUse;
  DebugSession leanSession(lean.step, leanOptions);
  DebugSession keptSession(kept.step);
  DebugSession watchedSession(watched.step);
  DebugSession leanCallSession(leanCall.step, leanOptions);
  DebugSession keptCallSession(keptCall.step);
  watchedSession.addBreakpoint(parseBreakSpec("var:loss@nan")).get();

  auto viaSession = [](DebugSession& s, const std::vector<Tensor>& args) {
    const SessionState st = s.run(args).get();  // start + run: one hand-off
    if (st.phase != SessionPhase::Finished) {
      std::fprintf(stderr, "unexpected pause: %s\n", st.message.c_str());
      std::exit(1);
    }
    return s.finish().get();
  };
  auto viaCall = [](DebugSession& s, const std::vector<Tensor>& args) {
    std::optional<std::vector<Tensor>> out = s.call(args).get();
    if (!out) {
      std::fprintf(stderr, "unexpected pause: %s\n", s.state().message.c_str());
      std::exit(1);
    }
    return std::move(*out);
  };
  struct Variant {
    const char* name;
    std::function<void()> step;
    std::vector<double> ms;
  };
  std::vector<Variant> variants;
  variants.push_back({"plain", [&] { plain.step(plain.args); }, {}});
  variants.push_back({"safe", [&] { safe.step(safe.args); }, {}});
  variants.push_back({"session", [&] { viaSession(leanSession, lean.args); }, {}});
  variants.push_back({"retained", [&] { viaSession(keptSession, kept.args); }, {}});
  variants.push_back({"watched", [&] { viaSession(watchedSession, watched.args); }, {}});
  variants.push_back({"call", [&] { viaCall(leanCallSession, leanCall.args); }, {}});
  variants.push_back({"call-all", [&] { viaCall(keptCallSession, keptCall.args); }, {}});
  // Plain calls on the very Function (buffers, W) the call variant runs through its idle session:
  // call against this row is the session's own cost, with no difference of memory placement.
  variants.push_back({"plain@call", [&] { leanCall.step(leanCall.args); }, {}});
  // TSCOPE_BENCH_ONLY=call-all,watched keeps plain and the variants named (for perf record).
  if (const char* only = std::getenv("TSCOPE_BENCH_ONLY")) {
    const std::string keep = std::string(",") + only + ",";
    std::erase_if(variants, [&](const Variant& v) {
      return std::string_view(v.name) != "plain" &&
             keep.find("," + std::string(v.name) + ",") == std::string::npos;
    });
  }
  for (Variant& v : variants) timeSteps(3, v.step);  // warm the buffers and the caches
  for (int r = 0; r < rounds; ++r)
    for (Variant& v : variants) v.ms.push_back(timeSteps(steps, v.step));

  // Medians, and the fastest round of each variant: on a machine shared with other work (builds
  // on the same cores) the medians move with the load, the minima much less.
  const double base = median(variants[0].ms);
  const double baseMin = *std::min_element(variants[0].ms.begin(), variants[0].ms.end());
  std::printf("%-10s %10s %10s %10s %10s\n", "variant", "ms/step", "overhead", "min ms",
              "overhead");
  for (const Variant& v : variants) {
    const double m = median(v.ms);
    const double lo = *std::min_element(v.ms.begin(), v.ms.end());
    std::printf("%-10s %10.3f %+9.1f%% %10.3f %+9.1f%%\n", v.name, m, 100.0 * (m - base) / base, lo,
                100.0 * (lo - baseMin) / baseMin);
  }
  return 0;
}
