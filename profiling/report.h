#pragma once
// The profile report, in the spirit of Theano's ProfileStats (REFERENCE.md): the function summary;
// the Class, Ops and Apply tables sorted by time, each ending with what the remaining rows account
// for; the scope tree (inclusive and exclusive time); the memory profile; the rewrite profile.
// reportJson() holds every table in full (docs/profiling.md, "Report JSON"), for scripts.
//
//   std::string text = prof::reportText(profile, {.sort = prof::SortKey::P95, .rows = 15});
//   nlohmann::json tables = prof::reportJson(profile);
//
// Times in the tables are per measured run (Note [Self and total time] in aggregate.h).

#include "profiling/aggregate.h"
#include "profiling/profile.h"

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace tscope::prof {

struct ReportOptions {
  SortKey sort = SortKey::Total;
  std::size_t rows = 20;        // rows shown per table (the rest are summed in one line)
  bool memory = true;           // the memory profile
  std::size_t memoryRows = 10;  // nodes listed by output bytes
  bool rewrites = true;         // the rewrite profile
};

std::string reportText(const Profile& profile, const ReportOptions& options = {});

// {"schema": 1, "function": {...}, "classes": [...], "ops": [...], "applies": [...],
//  "scopes": [...], "memory": {...}, "rewrites": {...}, "capture": {...}}; every row, sorted as
// the text report sorts them.
nlohmann::json reportJson(const Profile& profile, const ReportOptions& options = {});

// "1.23 s", "12.3 ms", "45.6 us", "789 ns"; "0" for zero.
std::string formatSeconds(double seconds);
// "512 B", "1.5 KiB", "12.0 MiB", "1.25 GiB".
std::string formatBytes(double bytes);
// "12.3%"
std::string formatShare(double fraction);

}  // namespace tscope::prof
