#include "engine/backends/cpu/dnnl_conv.h"

#include "engine/backends/cpu/threads.h"

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <tuple>
#include <vector>

#ifdef TSCOPE_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>

// libgomp's, which oneDNN's OpenMP runtime runs on (declared here so that only this file depends
// on OpenMP; the build links libgomp with it).
extern "C" void omp_set_num_threads(int n);
#endif

namespace tscope::engine::cpu {

#ifndef TSCOPE_HAVE_DNNL

bool dnnlAvailable() {
  return false;
}
bool dnnlBlockedConvolutions() {
  return false;
}
void setDnnlBlockedConvolutions(bool) {}
std::string dnnlDescription() {
  return "not built with oneDNN";
}
bool dnnlConv2dForward(const Conv2dGeometry&, const float*, const float*, const ConvEpilogue&,
                       float*, const std::shared_ptr<const void>&, std::uint64_t) {
  return false;
}
std::size_t dnnlPackedFilterCount() {
  return 0;
}

#else

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using Dt = memory::data_type;

// Note [Channel-last inside the kernel]: the engine's tensors are NCHW; oneDNN's fast kernels
// (brgconv, brdgmm_dw) want channel-last activations. Each call reorders the input to NHWC,
// convolves, and reorders the output back: two passes over the activations, a small price next to
// the convolution (0.06 ms each way for 64x56x56 here, against 1.0 ms for its 3x3 convolution).
// Note [oneDNN threads per plan]: oneDNN's JIT convolutions fix their thread count when the
// primitive is created (omp_get_max_threads() then, on the creating thread) and split every later
// execution among that many threads, whatever omp_set_num_threads says by then. So the count is
// set before a primitive is made and is part of its key. Before this, the process's first plan was
// made at OpenMP's default (every CPU) and kept it: with TSCOPE_NUM_THREADS=1, MobileNetV2's first
// convolution ran on two threads, and while another process used the second CPU its barrier waits
// made that one convolution 6-12 ms instead of 0.26 ms (the inference 32.7 ms against 10.9 ms
// with OMP_NUM_THREADS=1 as well).
struct Key {
  std::int64_t n, c, h, w, o, kh, kw, sh, sw, ph, pw, dh, dw, groups;
  bool bias, sum;
  int threads;
  bool blocked;  // Note [Blocked direct convolutions]
  auto tie() const {
    return std::tie(n, c, h, w, o, kh, kw, sh, sw, ph, pw, dh, dw, groups, bias, sum, threads,
                    blocked);
  }
  bool operator<(const Key& k) const { return tie() < k.tie(); }
};

Key keyOf(const Conv2dGeometry& g, const ConvEpilogue& e) {
  return {g.n,
          g.c,
          g.h,
          g.w,
          g.o,
          g.kh,
          g.kw,
          g.sh,
          g.sw,
          g.ph,
          g.pw,
          g.dh,
          g.dw,
          g.groups,
          e.bias != nullptr,
          e.sum,
          intraOpThreads(),
          e.blocked || (dnnlBlockedConvolutions() && g.groups == 1 && (g.kh > 1 || g.kw > 1) &&
                        g.c % 8 == 0 && g.o % 8 == 0)};
}

// The user descs are the engine's layouts: NCHW, and channel-last (NHWC, Note [Channel-last
// activations]); the conv descs are the convolution's own (NHWC, or nChw8c for a blocked plan).
// A reorder per direction and user layout that differs from the convolution's; a null reorder
// where they agree (the buffer is handed to oneDNN as it is).
struct Plan {
  dnnl::convolution_forward conv;
  memory::desc srcUser, srcUserCl, srcConv, dstConv, dstUser, dstUserCl, weiUser, weiConv, biasDesc;
  dnnl::reorder toConvSrc, toConvSrcCl, toUserDst, toUserDstCl, toConvDst, toConvDstCl;
  std::string impl;
};

dnnl::reorder reorderBetween(const memory::desc& from, const memory::desc& to);

dnnl::engine& cpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

memory::dims dims(std::initializer_list<std::int64_t> d) {
  return memory::dims(d);
}

Plan makePlan(const Key& key, const Conv2dGeometry& g, const ConvEpilogue& e) {
  Plan p;
  const memory::dims src = dims({g.n, g.c, g.h, g.w}), dst = dims({g.n, g.o, g.oh, g.ow});
  const memory::dims wei = g.groups == 1
                               ? dims({g.o, g.c, g.kh, g.kw})
                               : dims({g.groups, g.oPerGroup(), g.cPerGroup(), g.kh, g.kw});
  const Tag convTag = key.blocked ? Tag::nChw8c : Tag::nhwc;
  p.srcUser = memory::desc(src, Dt::f32, Tag::nchw);
  p.srcUserCl = memory::desc(src, Dt::f32, Tag::nhwc);
  p.srcConv = memory::desc(src, Dt::f32, convTag);
  p.dstUser = memory::desc(dst, Dt::f32, Tag::nchw);
  p.dstUserCl = memory::desc(dst, Dt::f32, Tag::nhwc);
  p.dstConv = memory::desc(dst, Dt::f32, convTag);
  p.weiUser = memory::desc(wei, Dt::f32, g.groups == 1 ? Tag::oihw : Tag::goihw);
  const memory::desc weiAny(wei, Dt::f32, Tag::any);
  p.biasDesc = memory::desc(dims({g.o}), Dt::f32, Tag::a);
  // No activation post-ops (Note [No oneDNN activations]); the residual's sum (Note [Residual
  // sum]) is one.
  // oneDNN's dilation counts the holes: 0 is a dense filter.
  const memory::dims strides = dims({g.sh, g.sw}), dil = dims({g.dh - 1, g.dw - 1}),
                     pad = dims({g.ph, g.pw});
  const auto desc =
      e.bias ? dnnl::convolution_forward::desc(
                   dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                   p.srcConv, weiAny, p.biasDesc, p.dstConv, strides, dil, pad, pad)
             : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                               dnnl::algorithm::convolution_direct, p.srcConv,
                                               weiAny, p.dstConv, strides, dil, pad, pad);
  dnnl::primitive_attr attr;
  if (e.sum) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);
    attr.set_post_ops(ops);
  }
  const dnnl::convolution_forward::primitive_desc pd(desc, attr, cpuEngine());
  p.conv = dnnl::convolution_forward(pd);
  p.weiConv = pd.weights_desc();
  p.impl = std::string(pd.impl_info_str()) + (key.blocked ? " nChw8c" : "");
  p.toConvSrc = reorderBetween(p.srcUser, p.srcConv);
  p.toConvSrcCl = reorderBetween(p.srcUserCl, p.srcConv);
  p.toUserDst = reorderBetween(p.dstConv, p.dstUser);
  p.toUserDstCl = reorderBetween(p.dstConv, p.dstUserCl);
  if (e.sum) {  // the residual goes into the convolution's destination first
    p.toConvDst = reorderBetween(p.dstUser, p.dstConv);
    p.toConvDstCl = reorderBetween(p.dstUserCl, p.dstConv);
  }
  return p;
}

dnnl::reorder reorderBetween(const memory::desc& from, const memory::desc& to) {
  if (from == to) return {};
  return dnnl::reorder(dnnl::reorder::primitive_desc(cpuEngine(), from, cpuEngine(), to));
}

struct PackedFilters {
  std::weak_ptr<const void> owner;
  std::uint64_t version = 0;
  memory packed;
};

// Plans and packed filters, shared by every thread (a convolution primitive may run on several
// threads at once; memory objects and streams are made per call).
struct Caches {
  std::mutex mutex;
  std::map<Key, std::shared_ptr<const Plan>> plans;
  std::map<std::pair<const float*, Key>, PackedFilters> filters;
  std::vector<std::string> impls;
};

Caches& caches() {
  static Caches* c = new Caches;  // never destroyed: a worker may convolve during exit
  return *c;
}

std::shared_ptr<const Plan> planFor(const Key& key, const Conv2dGeometry& g,
                                    const ConvEpilogue& e) {
  Caches& c = caches();
  {
    std::lock_guard lock(c.mutex);
    if (auto it = c.plans.find(key); it != c.plans.end()) return it->second;
  }
  auto plan = std::make_shared<const Plan>(makePlan(key, g, e));
  std::lock_guard lock(c.mutex);
  auto [it, added] = c.plans.emplace(key, plan);
  if (added && c.impls.size() < 32) {
    bool seen = false;
    for (const std::string& s : c.impls) seen = seen || s == plan->impl;
    if (!seen) c.impls.push_back(plan->impl);
  }
  return it->second;
}

memory packFilters(const Plan& p, const float* w, dnnl::stream& stream) {
  memory user(p.weiUser, cpuEngine(), const_cast<float*>(w));
  memory packed(p.weiConv, cpuEngine());
  dnnl::reorder(user, packed).execute(stream, user, packed);
  return packed;
}

memory filtersFor(const Key& key, const Plan& p, const float* w,
                  const std::shared_ptr<const void>& owner, std::uint64_t version,
                  dnnl::stream& stream) {
  if (!owner) return packFilters(p, w, stream);
  Caches& c = caches();
  const auto filterKey = std::make_pair(w, key);
  {
    std::lock_guard lock(c.mutex);
    auto it = c.filters.find(filterKey);
    if (it != c.filters.end()) {
      if (it->second.owner.lock() == owner && it->second.version == version)
        return it->second.packed;
      c.filters.erase(it);  // another tensor at this address, or the values changed
    }
  }
  memory packed = packFilters(p, w, stream);
  stream.wait();
  std::lock_guard lock(c.mutex);
  // Drop the packed copies of filters that no longer exist.
  for (auto it = c.filters.begin(); it != c.filters.end();)
    it = it->second.owner.expired() ? c.filters.erase(it) : std::next(it);
  c.filters.insert_or_assign(filterKey, PackedFilters{owner, version, packed});
  return packed;
}

// Note [Kept scratch]: the channel-last copies of the input and the output live in buffers each
// thread keeps and only grows. Fresh buffers per call (oneDNN's own memory objects) cost a page
// fault per 4 KiB on first touch, which on this class of virtual machine made a 3.2 MB reorder
// take 12 ms instead of 0.1 ms.
struct Scratch {
  std::unique_ptr<float, decltype(&std::free)> data{nullptr, &std::free};
  std::size_t floats = 0;
  float* get(std::size_t n) {
    if (n > floats) {
      const std::size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
      data.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
      if (!data) throw std::bad_alloc();
      floats = bytes / sizeof(float);
    }
    return data.get();
  }
};

std::size_t floatsOf(const memory::desc& d) {
  return d.get_size() / sizeof(float);
}

std::string geometryText(const Conv2dGeometry& g) {
  return "input (" + std::to_string(g.n) + ", " + std::to_string(g.c) + ", " + std::to_string(g.h) +
         ", " + std::to_string(g.w) + "), filters (" + std::to_string(g.o) + ", " +
         std::to_string(g.cPerGroup()) + ", " + std::to_string(g.kh) + ", " + std::to_string(g.kw) +
         "), groups " + std::to_string(g.groups);
}

}  // namespace

bool dnnlAvailable() {
  // TSCOPE_DNNL_CONV=0 sends convolutions to im2col + GEMM (conv.h), to compare the two.
  static const bool on = [] {
    const char* v = std::getenv("TSCOPE_DNNL_CONV");
    return v == nullptr || std::string_view(v) != "0";
  }();
  return on;
}

namespace {
std::atomic<int>& blockedSetting() {
  static std::atomic<int> setting = [] {
    const char* v = std::getenv("TSCOPE_DNNL_BLOCKED");
    if (v != nullptr && std::string_view(v) == "0") return 0;
    if (v != nullptr && std::string_view(v) == "1") return 1;
    const int isa = static_cast<int>(dnnl::get_effective_cpu_isa());
    return (isa & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core ? 0 : 1;
  }();
  return setting;
}
}  // namespace

bool dnnlBlockedConvolutions() {
  return blockedSetting().load(std::memory_order_relaxed) != 0;
}

void setDnnlBlockedConvolutions(bool on) {
  blockedSetting().store(on ? 1 : 0, std::memory_order_relaxed);
}

std::string dnnlDescription() {
  const dnnl_version_t* v = dnnl_version();
  std::string s = "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                  std::to_string(v->patch);
  Caches& c = caches();
  std::lock_guard lock(c.mutex);
  if (!c.impls.empty()) {
    s += " (";
    for (std::size_t i = 0; i < c.impls.size(); ++i) s += (i ? ", " : "") + c.impls[i];
    s += ")";
  }
  return s;
}

bool dnnlConv2dForward(const Conv2dGeometry& g, const float* x, const float* w,
                       const ConvEpilogue& epilogue, float* y,
                       const std::shared_ptr<const void>& weightsOwner,
                       std::uint64_t weightsVersion) {
  if (g.n == 0 || g.o == 0 || g.oh <= 0 || g.ow <= 0) return false;  // nothing to convolve
  try {
    const Key key = keyOf(g, epilogue);
    // oneDNN's OpenMP threads: the engine's count (engine/backends/cpu/threads.h), set on this
    // thread (OpenMP's count is per calling thread) before the plan is made (Note [oneDNN threads
    // per plan]).
    omp_set_num_threads(key.threads);
    const std::shared_ptr<const Plan> plan = planFor(key, g, epilogue);
    dnnl::stream stream(cpuEngine());
    memory filters = filtersFor(key, *plan, w, weightsOwner, weightsVersion, stream);
    // Blocked tensors are the kernel's own layout: no reorder either way.
    const dnnl::reorder none;
    const dnnl::reorder& toSrc = epilogue.blocked            ? none
                                 : epilogue.inputChannelLast ? plan->toConvSrcCl
                                                             : plan->toConvSrc;
    const dnnl::reorder& toDst = epilogue.blocked             ? none
                                 : epilogue.outputChannelLast ? plan->toConvDstCl
                                                              : plan->toConvDst;
    const dnnl::reorder& fromDst = epilogue.blocked             ? none
                                   : epilogue.outputChannelLast ? plan->toUserDstCl
                                                                : plan->toUserDst;
    memory srcUser(epilogue.inputChannelLast ? plan->srcUserCl : plan->srcUser, cpuEngine(),
                   const_cast<float*>(x));
    memory dstUser(epilogue.outputChannelLast ? plan->dstUserCl : plan->dstUser, cpuEngine(), y);
    thread_local Scratch srcScratch, dstScratch;  // Note [Kept scratch]
    const bool dstDirect = !fromDst;              // the engine's layout is the convolution's
    memory src(plan->srcConv, cpuEngine(),
               toSrc ? srcScratch.get(floatsOf(plan->srcConv)) : const_cast<float*>(x));
    memory dst(plan->dstConv, cpuEngine(), dstDirect ? y : dstScratch.get(floatsOf(plan->dstConv)));
    if (toSrc) toSrc.execute(stream, srcUser, src);
    if (epilogue.sum && !dstDirect) toDst.execute(stream, dstUser, dst);
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, filters}, {DNNL_ARG_DST, dst}};
    if (epilogue.bias)
      args.emplace(DNNL_ARG_BIAS,
                   memory(plan->biasDesc, cpuEngine(), const_cast<float*>(epilogue.bias)));
    plan->conv.execute(stream, args);
    if (!dstDirect) fromDst.execute(stream, dst, dstUser);
    stream.wait();
  } catch (const dnnl::error& e) {
    throw std::runtime_error("oneDNN refused the convolution of " + geometryText(g) + ": " +
                             e.what());
  }
  return true;
}

std::size_t dnnlPackedFilterCount() {
  Caches& c = caches();
  std::lock_guard lock(c.mutex);
  return c.filters.size();
}

#endif

}  // namespace tscope::engine::cpu
