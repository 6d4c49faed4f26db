#pragma once
// A counter that every change of a shared variable's value advances (SharedVariable::setValue and
// setValueBorrowed, through which compiled functions apply their updates, in place or not). A
// kernel that keeps something derived from a shared value (the packed filters of
// engine/backends/cpu/dnnl_conv.h) keeps it only while the counter stands still: in a loop that
// only infers it never moves; a training step moves it once per call.

#include <cstdint>

namespace tscope::engine {

std::uint64_t sharedValueEpoch();

}  // namespace tscope::engine
