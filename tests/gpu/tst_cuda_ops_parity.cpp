// The shape, indexing, SumToShape, argmax/argmin, all/any, cross-entropy and random kernels on a
// real GPU (issue 22; label `gpu`, no Qt): each graph compiled for the CPU and for Device::Cuda on
// the same inputs and compared, with the errors the kernels raise compared with the CPU's messages;
// the random ops by the statistics of large samples from fixed seeds (bounds many standard errors
// wide, so no run can flake) and by the generator state, which must walk the CPU's states. Skips
// (77) without a device. Ends with "N passed, N failed" (one per section).
#include "engine/backends/cuda/cuda_backend.h"
#include "engine/compile/function.h"
#include "engine/compile/program.h"
#include "engine/grad/grad.h"
#include "engine/graph/apply.h"
#include "engine/graph/variable.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/elemwise/sum_to_shape.h"
#include "engine/ops/nn/crossentropy.h"
#include "engine/ops/nn/softmax.h"
#include "engine/ops/random/random_stream.h"
#include "engine/ops/reduce/argreduce.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/shape.h"
#include "engine/tensor/device_memory.h"
#include "gpu_check.h"
#include "gpu_device.h"
#include "gpu_values.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

using namespace tscope::engine;
namespace cuda = tscope::engine::cuda;

namespace {
using tscope::gputest::random;
using tscope::gputest::section;

VarPtr var(DType d, Shape shape, const char* name) {
  return Variable::create(TensorType(d, std::move(shape)), name);
}

struct Counts {
  int deviceNodes = 0;  // nodes run by device kernels, transfers not counted
  int toHost = 0;       // HostFromGpu nodes
};

Counts countsOf(const Function& f) {
  Counts c;
  for (const LinkedNode& n : f.program().nodes()) {
    const std::string name = n.op->name();
    if (name == "HostFromGpu") ++c.toHost;
    if (name != "HostFromGpu" && name != "GpuFromHost" && n.kernel.device == Device::Cuda)
      ++c.deviceNodes;
  }
  return c;
}

// Compiles outputs for the CPU and for the GPU (same mode), runs both on args, compares
// (rtol/atol; 0 and 0: bitwise).
bool sameOnBoth(const std::vector<VarPtr>& in, const std::vector<VarPtr>& out,
                const std::vector<Tensor>& args, double rtol, double atol, Mode mode = Mode::None,
                Counts* counts = nullptr) {
  CompileOptions cpuOptions;
  cpuOptions.mode = mode;
  CompileOptions gpuOptions = cpuOptions;
  gpuOptions.device = Device::Cuda;
  Function cpu = compile(in, out, {}, cpuOptions);
  Function gpu = compile(in, out, {}, gpuOptions);
  if (counts) *counts = countsOf(gpu);
  const std::vector<Tensor> a = cpu(args), b = gpu(args);
  bool ok = a.size() == b.size();
  for (std::size_t i = 0; ok && i < a.size(); ++i) {
    const bool close =
        b[i].device() == Device::Cpu && b[i].dtype() == a[i].dtype() &&
        b[i].shape() == a[i].shape() &&
        (rtol == 0 && atol == 0 ? b[i].bitwiseEqual(a[i]) : b[i].allClose(a[i], rtol, atol));
    if (!close)
      std::fprintf(stderr, "output %zu differs:\ncpu %s\ngpu %s\n", i, a[i].toString().c_str(),
                   b[i].toString().c_str());
    ok = ok && close;
  }
  return ok;
}

// Both devices throw, with the same message.
bool sameError(const std::vector<VarPtr>& in, const std::vector<VarPtr>& out,
               const std::vector<Tensor>& args) {
  auto message = [&](Device d) {
    CompileOptions o;
    o.mode = Mode::None;
    o.device = d;
    Function f = compile(in, out, {}, o);
    try {
      f(args);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const std::string a = message(Device::Cpu), b = message(Device::Cuda);
  if (a.find(b) == std::string::npos && b.find(a) == std::string::npos) {
    std::fprintf(stderr, "errors differ:\ncpu %s\ngpu %s\n", a.c_str(), b.c_str());
    return false;
  }
  return a != "(no error)";
}

Tensor ints(DType d, Shape shape, std::vector<double> values) {
  return Tensor::fromDoubles(d, std::move(shape), values);
}

void reshapes() {
  // A view of a contiguous value, a copy of a transposed one, a symbolic flatten, and the chain
  // relu -> flatten -> dot with no round trip through the host.
  const VarPtr x = var(DType::Float32, {6, 4, 5}, "x");
  const Tensor v = random(DType::Float32, {6, 4, 5}, 1);
  CHECK(sameOnBoth({x}, {reshape(x, {4, -1}), reshape(transpose(x), {20, 6}), flatten(x, 2)}, {v},
                   0, 0));
  const VarPtr b = Variable::create(TensorType(DType::Float32, {kUnknownDim, 3, 4, 4}), "b");
  const VarPtr W = var(DType::Float32, {48, 7}, "W");
  Counts c;
  CHECK(sameOnBoth({b, W}, {dot(flatten(relu(b), 2), W)},
                   {random(DType::Float32, {5, 3, 4, 4}, 2), random(DType::Float32, {48, 7}, 3)},
                   1e-5, 1e-5, Mode::FastRun, &c));
  CHECK(c.toHost == 1);  // the output only
  // int32 and bool reshape copies.
  const VarPtr i = var(DType::Int32, {3, 4}, "i"), k = var(DType::Bool, {3, 4}, "k");
  CHECK(sameOnBoth(
      {i, k}, {reshape(transpose(i), {2, 6}), reshape(transpose(k), std::vector<std::int64_t>{12})},
      {random(DType::Int32, {3, 4}, 4), random(DType::Bool, {3, 4}, 5)}, 0, 0));
  // A wrong size (a runtime shape vector, read on the host): the CPU's message.
  const VarPtr sv = var(DType::Int64, {2}, "sv");
  CHECK(sameOnBoth({x, sv}, {reshape(x, sv)}, {v, ints(DType::Int64, {2}, {-1, 8})}, 0, 0));
  CHECK(sameError({x, sv}, {reshape(x, sv)}, {v, ints(DType::Int64, {2}, {7, -1})}));
}

void subtensors() {
  const VarPtr x = var(DType::Float32, {7, 6, 5}, "x");
  const VarPtr i = var(DType::Int64, {}, "i");
  const Tensor v = random(DType::Float32, {7, 6, 5}, 10);
  const Tensor iv = Tensor::scalar(DType::Int64, -2);
  // Views: slices with steps, negative steps, a symbolic index; split into views.
  CHECK(sameOnBoth({x, i},
                   {subtensor(x, {Idx::slice(1, std::nullopt, 2), Idx::at(i)}),
                    subtensor(x, {Idx::all(), Idx::slice(std::nullopt, std::nullopt, -1)}),
                    select(x, 2, i), split(x, {2, 4, 1}, 0)[1]},
                   {v, iv}, 0, 0));
  // Set and increment a region: broadcast y, another dtype for y, a symbolic index, int32 and
  // bool values.
  const VarPtr y = var(DType::Float32, {5}, "y"), yi = var(DType::Int16, {6, 5}, "yi");
  const Tensor yv = random(DType::Float32, {5}, 11), yiv = random(DType::Int16, {6, 5}, 12);
  CHECK(sameOnBoth({x, i, y, yi},
                   {setSubtensor(x, y, {Idx::slice(1, 4)}), incSubtensor(x, yi, {Idx::at(i)}),
                    incSubtensor(x, exp(select(x, 1, i)), {Idx::all(), Idx::at(3)}),
                    setSubtensor(transpose(x), constant(0.5, DType::Float32),
                                 {Idx::slice(std::nullopt, std::nullopt, -2)})},
                   {v, iv, yv, yiv}, 1e-6, 1e-6));
  const VarPtr n = var(DType::Int32, {4, 3}, "n"), m = var(DType::Bool, {4, 3}, "m");
  CHECK(sameOnBoth({n, m},
                   {incSubtensor(n, constant(7.0, DType::Int32), {Idx::slice(1, 3)}),
                    setSubtensor(m, constant(1.0, DType::Bool), {Idx::all(), Idx::at(1)})},
                   {random(DType::Int32, {4, 3}, 13), random(DType::Bool, {4, 3}, 14)}, 0, 0));
  // An index out of range: the CPU's message.
  CHECK(sameError({x, i}, {select(x, 0, i)}, {v, Tensor::scalar(DType::Int64, 9)}));
}

void takes() {
  // Rows by index (int64 and int32 indices, negative ones, a strided x), their increment with
  // duplicates (they accumulate), their set with duplicates (the last one wins).
  const VarPtr E = var(DType::Float32, {10, 4}, "E");
  const VarPtr ids = var(DType::Int64, {6}, "ids"), ids32 = var(DType::Int32, {3}, "ids32");
  const VarPtr y = var(DType::Float32, {6, 4}, "y");
  const Tensor ev = random(DType::Float32, {10, 4}, 20), yv = random(DType::Float32, {6, 4}, 21);
  const VarPtr ids4 = var(DType::UInt8, {3}, "ids4");
  const Tensor idv = ints(DType::Int64, {6}, {3, -1, 0, 3, 9, 3});
  const Tensor id32 = ints(DType::Int32, {3}, {2, 2, -10});
  const Tensor id4 = ints(DType::UInt8, {3}, {1, 0, 3});
  CHECK(sameOnBoth({E, ids, ids32, ids4},
                   {advancedSubtensor1(E, ids), advancedSubtensor1(E, ids32),
                    advancedSubtensor1(transpose(E), ids4), take(E, ids4, 1)},
                   {ev, idv, id32, id4}, 0, 0));
  CHECK(sameOnBoth({E, ids, y},
                   {advancedIncSubtensor1(E, y, ids), advancedSetSubtensor1(E, y, ids),
                    advancedIncSubtensor1(E, constant(1.0, DType::Float32), ids)},
                   {ev, idv, yv}, 1e-5, 1e-5));
  // int64 and int32 increments, bool set.
  const VarPtr L = var(DType::Int64, {5, 2}, "L"), I = var(DType::Int32, {5}, "I");
  const VarPtr B = var(DType::Bool, {5, 3}, "B");
  const Tensor small = ints(DType::Int64, {6}, {4, 4, 0, 1, 4, -5});
  CHECK(sameOnBoth({L, I, B, ids},
                   {advancedIncSubtensor1(L, constant(3.0, DType::Int64), ids),
                    advancedIncSubtensor1(I, constant(-2.0, DType::Int32), ids),
                    advancedSetSubtensor1(B, constant(1.0, DType::Bool), ids)},
                   {random(DType::Int64, {5, 2}, 22), random(DType::Int32, {5}, 23),
                    random(DType::Bool, {5, 3}, 24), small},
                   0, 0));
  // Out of range, before anything is written: the CPU's message.
  const Tensor bad = ints(DType::Int64, {6}, {0, 1, 2, 10, 3, -11});
  CHECK(sameError({E, ids}, {advancedSubtensor1(E, ids)}, {ev, bad}));
  CHECK(sameError({E, ids, y}, {advancedIncSubtensor1(E, y, ids)}, {ev, bad, yv}));
}

void joinsAndAllocs() {
  const VarPtr a = var(DType::Float32, {3, 4, 2}, "a"), b = var(DType::Float32, {3, 1, 2}, "b");
  const VarPtr c = var(DType::Int32, {3, 5, 2}, "c");
  const VarPtr d = var(DType::Float32, {2, 4, 3}, "d");
  const Tensor av = random(DType::Float32, {3, 4, 2}, 30),
               bv = random(DType::Float32, {3, 1, 2}, 31), cv = random(DType::Int32, {3, 5, 2}, 32),
               dv = random(DType::Float32, {2, 4, 3}, 34);
  // Same dtypes (2-d copies), a promoted one (the copy kernel), a transposed input, axis 0 and 2.
  CHECK(sameOnBoth({a, b, c, d},
                   {concatenate({a, b}, 1), concatenate({a, b, c}, 1), concatenate({a, a}, 0),
                    concatenate({a, transpose(d, {2, 1, 0})}, 2), stack({a, a}, 1)},
                   {av, bv, cv, dv}, 0, 0));
  // Alloc: a scalar, a broadcast row, symbolic sizes read on the host.
  const VarPtr r = var(DType::Float32, {4}, "r");
  const VarPtr n = var(DType::Int64, {}, "n");
  CHECK(sameOnBoth({r, n, a},
                   {alloc(sum(r), {n, constantInt(3)}), alloc(r, {n, constantInt(4)}),
                    zeros(shapeOf(a), DType::Float32) + a},
                   {random(DType::Float32, {4}, 33), Tensor::scalar(DType::Int64, 5), av}, 1e-6,
                   1e-6));
}

void argReductions() {
  // Ties go to the first, NaN wins (the first NaN), any axis and the flattened tensor, strided
  // inputs, int32 and bool.
  const VarPtr x = var(DType::Float32, {4, 5}, "x");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor xv =
      Tensor::fromDoubles(DType::Float32, {4, 5},
                          {1, 3, 3, 0, 3, -1, -1, -2, -2, 5, 2, nan, 7, nan, -9, 0, 0, 0, 0, 0});
  auto arg = [](ArgReduce::Kind k, std::optional<int> axis, const VarPtr& v) {
    return std::make_shared<ArgReduce>(k, axis)->operator()({v});
  };
  using K = ArgReduce::Kind;
  std::vector<VarPtr> outs;
  for (K k : {K::Max, K::Min})
    for (std::optional<int> axis :
         {std::optional<int>{0}, std::optional<int>{1}, std::optional<int>{}}) {
      outs.push_back(arg(k, axis, x));
      outs.push_back(arg(k, axis, transpose(x)));
    }
  CHECK(sameOnBoth({x}, outs, {xv}, 0, 0));
  const VarPtr big = var(DType::Float32, {3, 7, 1000}, "big");
  CHECK(sameOnBoth({big},
                   {arg(K::Max, 2, big), arg(K::Min, 0, big), arg(K::Max, std::nullopt, big)},
                   {random(DType::Float32, {3, 7, 1000}, 40)}, 0, 0));
  const VarPtr i = var(DType::Int32, {50, 40}, "i"), b = var(DType::Bool, {6, 9}, "b");
  CHECK(sameOnBoth({i, b}, {arg(K::Max, 1, i), arg(K::Min, 0, i), arg(K::Max, 1, b)},
                   {random(DType::Int32, {50, 40}, 41), random(DType::Bool, {6, 9}, 42)}, 0, 0));
  // An empty axis: the CPU's message.
  const VarPtr e = var(DType::Float32, {3, 0}, "e");
  CHECK(sameError({e}, {arg(K::Max, 1, e)}, {Tensor(DType::Float32, {3, 0})}));
}

void allAndAny() {
  const VarPtr x = var(DType::Float32, {6, 7, 40}, "x");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor xv = random(DType::Float32, {6, 7, 40}, 50, 0, 3);
  for (std::int64_t j = 0; j < 40; j += 3) xv.set({1, 2, j}, 0);
  xv.set({2, 3, 4}, nan);
  std::vector<VarPtr> outs;
  for (const Axes& axes : std::vector<Axes>{{}, {0}, {2}, {0, 2}}) {
    outs.push_back(all(x, axes));
    outs.push_back(any(gt(x, constant(2.9, DType::Float32)), axes));
  }
  outs.push_back(all(transpose(x, {2, 0, 1}), {1}));
  const VarPtr i = var(DType::Int8, {9, 11}, "i");
  outs.push_back(any(i, {0}));
  outs.push_back(all(i, {1}));
  CHECK(sameOnBoth({x, i}, outs, {xv, random(DType::Int8, {9, 11}, 51, -0.2, 0.2)}, 0, 0));
}

void sumsToShape() {
  // Broadcast gradients summed back: leading axes, stretched axes, both, nothing (a view), int32.
  const VarPtr g = var(DType::Float32, {6, 4, 5}, "g"), i = var(DType::Int32, {3, 7}, "i");
  const VarPtr a = var(DType::Float32, {5}, "a"), b = var(DType::Float32, {4, 1}, "b"),
               c = var(DType::Float32, {1, 4, 5}, "c"), d = var(DType::Float32, {6, 4, 5}, "d");
  const VarPtr e = var(DType::Int32, {1, 7}, "e");
  CHECK(sameOnBoth(
      {g, a, b, c, d, i, e},
      {sumToShape(g, a), sumToShape(g, b), sumToShape(g, c), sumToShape(g, d), sumToShape(i, e)},
      {random(DType::Float32, {6, 4, 5}, 55), random(DType::Float32, {5}, 56),
       random(DType::Float32, {4, 1}, 57), random(DType::Float32, {1, 4, 5}, 58),
       random(DType::Float32, {6, 4, 5}, 59), random(DType::Int32, {3, 7}, 60),
       random(DType::Int32, {1, 7}, 61)},
      1e-5, 1e-5));
}

void crossEntropies() {
  const VarPtr z = var(DType::Float32, {16, 10}, "z"), g = var(DType::Float32, {16}, "g");
  const VarPtr t = var(DType::Int32, {16}, "t"), q = var(DType::Float32, {16, 10}, "q");
  std::vector<double> tv;
  for (int r = 0; r < 16; ++r) tv.push_back((r * 7) % 10);
  const Tensor zv = random(DType::Float32, {16, 10}, 60, -8, 8),
               gv = random(DType::Float32, {16}, 61),
               qv = random(DType::Float32, {16, 10}, 62, 0, 1), ttv = ints(DType::Int32, {16}, tv);
  const std::vector<VarPtr> cls = softmaxCrossEntropyWithLogitsAndSoftmax(z, t);
  const std::vector<VarPtr> dist = softmaxCrossEntropyWithLogitsAndSoftmax(z, q);
  const VarPtr p = softmax(z, 1);
  CHECK(sameOnBoth({z, t, q, g},
                   {cls[0], cls[1], dist[0], dist[1], softmaxCrossEntropyGrad(g, cls[1], t),
                    softmaxCrossEntropyGrad(g, dist[1], q), categoricalCrossEntropy(p, t),
                    categoricalCrossEntropy(p, q), oneHot(t, constantInt(12), DType::Float32),
                    oneHot(t, constantInt(10), DType::Int64)},
                   {zv, ttv, qv, gv}, 2e-5, 2e-5));
  // float64, int64 targets, a wide row (several warps), and the whole training gradient.
  const VarPtr w = var(DType::Float64, {5, 1000}, "w"), t64 = var(DType::Int64, {5}, "t64");
  const VarPtr loss = sum(softmaxCrossEntropyWithLogits(w, t64));
  CHECK(sameOnBoth(
      {w, t64}, {loss, grad(loss, w)},
      {random(DType::Float64, {5, 1000}, 63, -4, 4), ints(DType::Int64, {5}, {0, 999, 500, 3, 77})},
      1e-10, 1e-12));
  // A class index out of range: the CPU's message.
  CHECK(
      sameError({z, t}, {cls[0]},
                {zv, ints(DType::Int32, {16}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0, 0, 0, 0, 0})}));
}

// Mean, variance, minimum and maximum of a host tensor.
struct Stats {
  double mean = 0, var = 0, lo = 0, hi = 0;
};
Stats statsOf(const Tensor& t) {
  const std::vector<double> v = t.toDoubles();
  Stats s;
  s.lo = s.hi = v.at(0);
  for (double x : v) {
    s.mean += x;
    s.lo = std::min(s.lo, x);
    s.hi = std::max(s.hi, x);
  }
  s.mean /= static_cast<double>(v.size());
  for (double x : v) s.var += (x - s.mean) * (x - s.mean);
  s.var /= static_cast<double>(v.size());
  return s;
}

void randomDistributions() {
  // One million draws each; the bounds are about ten standard errors of the statistic wide, and
  // the seeds are fixed, so the check is deterministic.
  RandomStream rng(1234);
  const std::int64_t n = 1000000;
  const VarPtr u32 = rng.uniform({1000, 1000}, 2.0, 5.0, DType::Float32);
  const VarPtr u64 = rng.uniform({n}, -1.0, 1.0, DType::Float64);
  const VarPtr n32 = rng.normal({n + 1}, 1.0, 2.0, DType::Float32);  // an odd count
  const VarPtr n64 = rng.normal({n}, -3.0, 0.5, DType::Float64);
  const VarPtr i32 = rng.integers({n}, -3, 7, DType::Int32);
  const VarPtr i8 = rng.integers({n}, -128, 128, DType::Int8);
  CompileOptions o;
  o.device = Device::Cuda;
  Function f = compile({}, {u32, u64, n32, n64, i32, i8}, rng.updates(), o);
  const Counts c = countsOf(f);
  CHECK(c.deviceNodes >= 6);
  const std::vector<Tensor> r = f({});
  const Stats su = statsOf(r[0]);
  std::printf("  uniform32 mean %.5f var %.5f [%.6f, %.6f]\n", su.mean, su.var, su.lo, su.hi);
  CHECK(std::abs(su.mean - 3.5) < 0.01 && std::abs(su.var - 0.75) < 0.01);
  CHECK(su.lo >= 2.0 && su.hi < 5.0 && su.lo < 2.001 && su.hi > 4.999);
  const Stats sv = statsOf(r[1]);
  CHECK(std::abs(sv.mean) < 0.006 && std::abs(sv.var - 1.0 / 3.0) < 0.005);
  CHECK(sv.lo >= -1.0 && sv.hi < 1.0);
  const Stats sn = statsOf(r[2]);
  std::printf("  normal32 mean %.5f var %.5f\n", sn.mean, sn.var);
  CHECK(r[2].shape() == Shape{n + 1});
  CHECK(std::abs(sn.mean - 1.0) < 0.02 && std::abs(sn.var - 4.0) < 0.06);
  const Stats sm = statsOf(r[3]);
  CHECK(std::abs(sm.mean + 3.0) < 0.005 && std::abs(sm.var - 0.25) < 0.004);
  const Stats si = statsOf(r[4]);
  CHECK(si.lo == -3 && si.hi == 6);
  std::vector<double> freq(10, 0);
  for (double v : r[4].toDoubles()) freq[static_cast<std::size_t>(v + 3)] += 1.0 / n;
  for (double p : freq) CHECK(std::abs(p - 0.1) < 0.003);
  const Stats s8 = statsOf(r[5]);
  CHECK(s8.lo == -128 && s8.hi == 127 && std::abs(s8.mean + 0.5) < 0.8);
}

void randomStates() {
  // The generator state walks the CPU's states call after call (Note [Device random numbers]);
  // successive draws differ; a state set back gives the same sample again.
  RandomStream cpuRng(77), gpuRng(77);
  auto build = [](RandomStream& rng, Device d) {
    CompileOptions o;
    o.device = d;
    return compile({}, {rng.normal({3, 5}), rng.uniform({7}), rng.integers({4}, 0, 100)},
                   rng.updates(), o);
  };
  Function cpu = build(cpuRng, Device::Cpu), gpu = build(gpuRng, Device::Cuda);
  std::vector<Tensor> first;
  for (int call = 0; call < 3; ++call) {
    cpu({});
    const std::vector<Tensor> r = gpu({});
    if (call == 0) first = r;
    const auto a = cpuRng.states(), b = gpuRng.states();
    CHECK(a.size() == b.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
      CHECK(b[k]->value().device() == Device::Cpu);
      CHECK(b[k]->value().bitwiseEqual(a[k]->value()));
    }
    if (call > 0) CHECK(!r[0].bitwiseEqual(first[0]));
  }
  gpuRng.seed(77);
  const std::vector<Tensor> again = gpu({});
  for (std::size_t k = 0; k < again.size(); ++k) CHECK(again[k].bitwiseEqual(first[k]));
  // A dropout mask on the device is 0 or 1 / (1 - p) times x.
  RandomStream d(5);
  const VarPtr x = var(DType::Float32, {200, 100}, "x");
  CompileOptions o;
  o.device = Device::Cuda;
  Function drop = compile({x}, {d.dropout(x, 0.25)}, d.updates(), o);
  const Tensor ones = Tensor::full(DType::Float32, {200, 100}, 1.0);
  const Stats s = statsOf(drop({ones})[0]);
  CHECK(s.lo == 0 && std::abs(s.hi - 4.0 / 3.0) < 1e-6 && std::abs(s.mean - 1.0) < 0.03);
}
}  // namespace

int main() {
  tscope::gputest::startDevice();
  section("reshape and flatten", reshapes);
  section("subtensor and inc subtensor", subtensors);
  section("take and its increment", takes);
  section("join and alloc", joinsAndAllocs);
  section("argmax and argmin", argReductions);
  section("all and any", allAndAny);
  section("sum to shape", sumsToShape);
  section("cross entropy", crossEntropies);
  section("random distributions", randomDistributions);
  section("random states", randomStates);
  tscope::gputest::sectionSummary();
  return tscope::gputest::result();
}
