#pragma once
// The tables of a Profile: per Apply, per Op (equal props: one row), per op class, and the scope
// tree with inclusive and exclusive time. The text report (report.h), its JSON form and the window
// all show these rows, so every front end shows the same numbers.
//
//   prof::Tables t = prof::aggregate(profile);
//   t.applies[0].selfSeconds;   // the slowest node's own time, per measured run
//   t.scopes[0].inclusive;      // the root scope: everything
//
// Note [Self and total time]: a node that runs an inner graph (an OpFromGraph, an IfElse) is
// timed around its whole frame, so its time includes its inner nodes'. Its *total* time is that
// measured time; its *self* time is the total minus the totals of the nodes of its frame (the
// dispatch of the frame, the copies in and out). Every other node's self time is its total time.
// The class, op and scope tables and every share ("% time") use self time, so each table adds up
// to the time in nodes exactly once. In the scope tree, a scope's *exclusive* time is the self
// time of the nodes whose scope is that scope itself, its *inclusive* time adds every scope below
// it.
//
// Times are seconds per measured run: a node's time summed over the runs, divided by the number of
// runs (FunctionSummary::measuredRuns). "Per call" divides the summed time by the calls.

#include "profiling/profile.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tscope::prof {

enum class SortKey { Total, Mean, P95, Calls };
// "total", "mean", "p95", "calls"; throws std::invalid_argument naming what it expected.
SortKey parseSortKey(const std::string& text);

struct ApplyRow {
  std::int64_t node = 0;  // index into Profile::nodes
  double selfSeconds = 0;
  double totalSeconds = 0;
  double perCall = 0;  // total time of the runs / calls
  double p95 = 0;      // the 95th percentile of the per-run time
  std::int64_t calls = 0;
  double share = 0;  // self / time in nodes
};

// A group of nodes: an op class ("Elemwise"), an op ("Elemwise{add}").
struct GroupRow {
  std::string name;
  double selfSeconds = 0;
  double perCall = 0;
  double p95 = 0;  // the largest p95 of its nodes (a bound, not a percentile of the group)
  std::int64_t calls = 0;
  std::int64_t applies = 0;
  double share = 0;
};

struct ScopeRow {
  std::string path;        // "encoder/layer1"; "" is the root (everything)
  std::string name;        // the last component ("layer1"); "(all)" for the root
  std::int32_t depth = 0;  // 0 for the root
  double inclusive = 0;
  double exclusive = 0;
  std::int64_t applies = 0;  // nodes in it or under it
  double share = 0;          // inclusive / time in nodes
};

struct Tables {
  double timeInNodes = 0;         // per run: the sum of every node's self time
  std::vector<ApplyRow> applies;  // sorted by the sort key, largest first
  std::vector<GroupRow> ops;
  std::vector<GroupRow> classes;
  std::vector<ScopeRow> scopes;  // depth-first, children by inclusive time, largest first
  // Self time per node (per run), by index into Profile::nodes.
  std::vector<double> selfSeconds;
};

Tables aggregate(const Profile& profile, SortKey sort = SortKey::Total);

// The scope path's components: "a/b/c" -> {"a", "b", "c"}; "" -> {}.
std::vector<std::string> scopeComponents(const std::string& scope);

}  // namespace tscope::prof
