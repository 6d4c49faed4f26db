#pragma once
// NanReport: what NanGuard found (engine/debug/nan_guard.h), as a value: the check that fired,
// where (a node's output, an input, a shared value, an update), the first offending element and
// the counts, and the root-cause chain back to the node that created the bad value.
//
//   try { f({x}); } catch (const debug::NanGuardError& e) {
//     std::cout << e.report().toText();         // the chain, the creator marked
//     save(e.report().toJson().dump(2));        // the same as JSON
//   }
//
// Note [Root-cause chain]: chain[0] is the reported value; each next link is an input of the one
// before that already held a bad value (non-finite, or big when that check is on) when the node
// ran, up to a node whose inputs were all finite: the creator, always last. A link whose inputs
// held bad values of other kinds only (an allowed -inf mask that turns into NaN) is a converter:
// it created the kind it reports ("nan from -inf"); the chain goes on to the -inf's creator.
// Everything else is a propagator. Links are named by the graph the user built: a node fused into
// a Composite is named as the original op with "fused into Composite{...} node N", a gradient node
// as "gradient of <forward op> at <scope> (created at <site>)" (Note [Gradient origin]).

#include "engine/graph/source_site.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tscope::engine::debug {

// The checks, as bits of a NanChecks mask.
enum class NanCheck : unsigned { NaN = 1, PosInf = 2, NegInf = 4, Big = 8 };
using NanChecks = unsigned;
inline constexpr NanChecks kAllNanChecks = 15;
inline constexpr NanChecks bit(NanCheck c) {
  return static_cast<NanChecks>(c);
}
// "nan", "+inf", "-inf", "big".
std::string_view checkName(NanCheck check);
// "nan,+inf,-inf"; "none" for 0.
std::string checksText(NanChecks checks);
// A comma-separated list of "nan", "inf" (both infinities), "+inf", "-inf", "big", "all".
// Throws std::invalid_argument naming the bad item and the accepted ones.
NanChecks parseChecks(std::string_view text);

// Counts of the bad elements of one value.
struct BadCounts {
  std::int64_t numel = 0;
  std::int64_t nan = 0, posInf = 0, negInf = 0, big = 0;
  bool any() const { return nan + posInf + negInf + big > 0; }
  // The kinds present, as a mask.
  NanChecks kinds() const;
  friend bool operator==(const BadCounts&, const BadCounts&) = default;
};

// A node as the user knows it.
struct NodeRef {
  std::int64_t id = -1;              // in the graph that ran (-1: no node, an input)
  std::string op;                    // "Elemwise{log}"
  std::string scope;                 // "layer3/fc"
  std::string site;                  // "model.cpp:88 (build)", or "model.onnx: node 'Log_3'"
  std::vector<std::int64_t> frames;  // outer node ids of the frames it ran in (NodeEvent)
  // One per frames entry: the loop iteration of that frame (NodeEvent::iterations), -1 when the
  // frame is not a loop's; describe() names it ("in iteration 7 of Scan{rnn} node 9").
  std::vector<std::int64_t> iterations;
  // Set when the node stands for a node of the original graph that a rewrite fused: the
  // Composite that ran ("Composite{tanh(log(i0))} node 41") and the original node's id.
  std::string fusedInto;
  std::int64_t originalId = -1;
  // A node a rewrite made (not a Composite: those get fusedInto): what it was made from, e.g.
  // "Elemwise{mul} (node 40) at layer2 (created at mlp.cpp:30) by specialize/gemm"; the scope and
  // site above are then the original node's, not the rewrite's.
  std::string rewrittenFrom;
  // Note [Gradient origin]: "gradient of Elemwise{exp} at encoder/attn (created at model.cpp:88)".
  std::string gradientOf;
  // "Elemwise{log} at layer3/fc (created at model.cpp:12)", with the fused/gradient notes.
  std::string describe() const;
  nlohmann::json toJson() const;
};

// An input of a chain link at the offending element (a creator), or as a summary (an input that
// is not elementwise-aligned with the output).
struct InputSample {
  int input = 0;
  std::string variable;             // its display name
  std::vector<std::int64_t> index;  // the element read for the offending output element
  std::optional<double> value;      // set with index
  std::string summary;              // "min -3, max 7, 0 non-finite" when not aligned
  bool bad = false;                 // held bad values when the node ran
  nlohmann::json toJson() const;
};

struct ChainLink {
  enum class Role { Creator, Converter, Propagator };
  Role role = Role::Propagator;
  NodeRef node;
  int output = 0;
  std::string variable;  // the output's display name
  BadCounts counts;
  NanCheck firstKind = NanCheck::NaN;
  std::vector<std::int64_t> firstIndex;
  double firstValue = 0;
  std::vector<InputSample> inputs;
  nlohmann::json toJson() const;
};
std::string_view roleName(ChainLink::Role role);  // "creator", "converter", "propagator"

struct NanReport {
  NanCheck check = NanCheck::NaN;  // the check that fired
  // "node" (a node's output), "input", "shared" (a shared value at the call's start), "update"
  // (the new value of a shared variable, before it is written).
  std::string where = "node";
  NodeRef node;          // the node whose output is bad (id -1 for an input or shared value)
  int output = 0;        // its output index
  std::string variable;  // the bad variable's display name
  std::string updateOf;  // for where == "update": the shared variable's name
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> firstIndex;  // the first offending element (row-major order)
  double firstValue = 0;
  BadCounts counts;
  double bigThreshold = 0;       // the threshold "big" used for this value
  std::vector<ChainLink> chain;  // Note [Root-cause chain]; empty for an input or shared value
  std::uint64_t call = 0;        // which call of the guard this was (1, 2, ...)

  // The creator (chain.back() when it is one), else null.
  const ChainLink* creator() const;
  // "nan in Elemwise{log} (node 12) at layer3/fc, output 0 [1, 4] = nan; created by ..."
  std::string summary() const;
  // The indented chain with the creator marked.
  std::string toText() const;
  nlohmann::json toJson() const;
};

// "[1, 4]".
std::string indexText(const std::vector<std::int64_t>& index);
// "nan", "inf", "-inf", "-0.37", "1.5e+12".
std::string valueText(double v);

}  // namespace tscope::engine::debug
