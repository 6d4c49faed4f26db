#pragma once
// The profile section of a .tsg document: a Profile (profiling/profile.h) as one entry of the
// document's "profiles" array, {"kind": "profile", "schema": 1, ...} (docs/tsg-format.md,
// "Profiles", and docs/profiling.md for every field). It loads back exactly: every double is
// written in its shortest round-trip form, so profileFromJson(profileToJson(p)) == p.
//
//   nlohmann::json section = prof::profileToJson(profile);
//   doc["profiles"].push_back(section);
//   ...
//   if (prof::isProfileJson(doc["profiles"][1]))
//     prof::Profile back = prof::profileFromJson(doc["profiles"][1], "/profiles/1");
//
// A section that does not fit is refused with a ProfileError (profile_record.h) whose message
// starts with the JSON path of what does not fit:
//   "/profiles/1/nodes/3/time/p95: expected a number of seconds (>= 0), found \"x\"".

#include "profiling/profile.h"
#include "profiling/profile_record.h"

#include <nlohmann/json.hpp>
#include <string>

namespace tscope::prof {

nlohmann::json profileToJson(const Profile& profile);
// `jsonPath` is the section's JSON pointer in its document (e.g. "/profiles/1"), for messages.
Profile profileFromJson(const nlohmann::json& value, const std::string& jsonPath);
// Whether `value` is a profile section (an object whose "kind" is "profile").
bool isProfileJson(const nlohmann::json& value);

}  // namespace tscope::prof
