#pragma once
// CorrelationSink: tells a GPU event source which node is launching work, so every GPU record
// (kernel, memcpy, memset) the node's launches produce maps back to it (the CUPTI source pushes
// an external correlation id per node). No CUDA types here.
//
//   auto sink = std::make_shared<MySink>();
//   vm.setCorrelationSink(sink);      // or from an observer's onStart(VM&)
//   vm.run();                         // push(path, id) ... pop() around every node's work
//
// Note [Correlation]: around each node it runs, a VM with a correlation sink calls
// push(frame path, node id) before the node's kernel and pop() after it (inner frames included),
// so every GPU record a node's launches produce maps back to it (the CUPTI source pushes an
// external correlation id, kind CUSTOM0). The brackets are self-contained: each opens and closes
// inside one VM member, so a pause, a stop or a failure never leaves one open:
// - a node without an inner graph: one bracket around its kernel, the copy-on-destroy copies of
//   Retain::All included (they are the node's device work too);
// - a node with an inner graph (OpFromGraph, IfElse): no bracket spans its frame (the VM may pause
//   inside it). The frame's own nodes get their brackets, with the frame path; the caller gets a
//   bracket around choosing its body (IfElse reads its condition) and one around handing the
//   frame's outputs back (an output that aliases an input is copied);
// - a kernel that throws, or a stop inside a long kernel, still pops (a scope guard).
// push and pop run on the VM's thread, the thread that launches the node's work, which is what
// CUPTI's per-thread correlation stack needs. Without a sink the hot loop (VM::runFast) is the
// loop without brackets (instantiated both ways) and the observed path tests one pointer per
// node; with a sink that does nothing a bracket costs ~2 ns per node (bench_vm /3,
// docs/profiling.md).

#include <cstdint>
#include <span>

namespace tscope::engine {

class CorrelationSink {
 public:
  virtual ~CorrelationSink() = default;
  // The node (framePath: the outer node ids of its frames, outermost first; empty at the top
  // level) is about to launch its work on this thread.
  virtual void push(std::span<const std::int64_t> framePath, std::int64_t nodeId) = 0;
  // The work of the node pushed last is launched.
  virtual void pop() = 0;
};

// A push/pop bracket; pops when it goes out of scope (an exception included). A null sink makes
// it a no-op.
class CorrelationScope {
 public:
  CorrelationScope(CorrelationSink* sink, std::span<const std::int64_t> framePath,
                   std::int64_t nodeId)
      : m_sink(sink) {
    if (m_sink) m_sink->push(framePath, nodeId);
  }
  ~CorrelationScope() {
    if (m_sink) m_sink->pop();
  }
  CorrelationScope(const CorrelationScope&) = delete;
  CorrelationScope& operator=(const CorrelationScope&) = delete;

 private:
  CorrelationSink* m_sink;
};

}  // namespace tscope::engine
