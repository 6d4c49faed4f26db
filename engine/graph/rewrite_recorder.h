#pragma once
// RewriteRecorder: the rewrite log. Every change of the graph (one replaceAll, one import, ...)
// becomes one record, in order, with its reason (the rewriter's name), the phase it ran in, the
// variables it replaced, the nodes it added and removed, and the time it took.

#include "engine/graph/feature.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tscope::engine {

struct RewriteRecord {
  std::size_t order = 0;  // 0, 1, 2, ... in the order the changes happened
  std::string phase;      // "canonicalize", ...; empty outside any phase
  std::string reason;     // the rewriter's name, or the edit's reason
  // (old variable id, new variable id), each pair once, in the order they were made.
  std::vector<std::pair<std::int64_t, std::int64_t>> replaced;
  // For replaced[i]: (id of the old variable's owner node, id of the new one's), -1 for a free
  // variable. Lets a reader follow a removed node to what replaced it (engine/debug/lineage.h);
  // empty in logs read from files written before it existed.
  std::vector<std::pair<std::int64_t, std::int64_t>> replacedOwners;
  std::vector<std::int64_t> addedNodes;    // ids of the nodes imported by the change
  std::vector<std::int64_t> removedNodes;  // ids of the nodes pruned by the change
  double seconds = 0;                      // wall time of the change itself
  friend bool operator==(const RewriteRecord&, const RewriteRecord&) = default;
};

class RewriteRecorder final : public Feature {
 public:
  // Records made from now on carry this phase name.
  void setPhase(std::string phase) { m_phase = std::move(phase); }
  const std::string& phase() const { return m_phase; }
  const std::vector<RewriteRecord>& records() const { return m_records; }
  // Hands the log over (a 100k-node compile makes over a hundred thousand records) and clears it.
  std::vector<RewriteRecord> takeRecords() { return std::exchange(m_records, {}); }
  void clear() { m_records.clear(); }

  void onChangeBegin(FunctionGraph& fg, std::string_view reason) override;
  void onChangeEnd(FunctionGraph& fg, std::string_view reason) override;
  void onImport(FunctionGraph& fg, Apply& node, std::string_view reason) override;
  void onPrune(FunctionGraph& fg, Apply& node, std::string_view reason) override;
  void onChangeInput(FunctionGraph& fg, Apply* node, int index, const VarPtr& oldVar,
                     const VarPtr& newVar, std::string_view reason) override;

 private:
  std::string m_phase;
  std::vector<RewriteRecord> m_records;
  RewriteRecord m_current;
  std::chrono::steady_clock::time_point m_start;
};

}  // namespace tscope::engine
