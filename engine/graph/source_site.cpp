#include "engine/graph/source_site.h"

#include <stdexcept>
#include <string_view>
#include <unordered_map>

namespace tscope::engine {

namespace {
thread_local std::string t_scope;
thread_local SharedString t_scopeShared;  // t_scope, shared by the nodes created under it

// source_location's strings are static: one SharedString per distinct pointer and thread.
const SharedString& sharedLiteral(const char* text) {
  thread_local std::unordered_map<const char*, SharedString> cache;
  auto [it, added] = cache.try_emplace(text);
  if (added) it->second = SharedString(text);
  return it->second;
}

// Note [Repository-relative sites]: -fmacro-prefix-map strips the source directory from absolute
// paths; a compiler handed relative ones (ccache's base_dir, a build that names sources as
// ../engine/x.cpp) gives "../engine/x.cpp", which the map does not touch. The leading ./ and ../
// go too, so a site reads the same however the build named its sources.
const SharedString& sharedFile(const char* path) {
  thread_local std::unordered_map<const char*, SharedString> cache;
  auto [it, added] = cache.try_emplace(path);
  if (added) {
    std::string_view v = path ? path : "";
    for (;;) {
      if (v.starts_with("../"))
        v.remove_prefix(3);
      else if (v.starts_with("./"))
        v.remove_prefix(2);
      else
        break;
    }
    it->second = SharedString(std::string(v));
  }
  return it->second;
}
}  // namespace

SourceSite SourceSite::from(const std::source_location& loc) {
  return SourceSite{sharedFile(loc.file_name()), static_cast<std::uint32_t>(loc.line()),
                    sharedLiteral(loc.function_name())};
}

std::string SourceSite::str() const {
  if (file.empty()) return "<unknown site>";
  std::string_view name = file.str();
  if (auto slash = name.find_last_of('/'); slash != std::string_view::npos)
    name.remove_prefix(slash + 1);
  std::string out = std::string(name) + ":" + std::to_string(line);
  if (!function.empty()) {
    // source_location gives the full signature; keep the unqualified name for display.
    std::string_view fn = function.str();
    if (auto paren = fn.find('('); paren != std::string_view::npos) fn = fn.substr(0, paren);
    if (auto space = fn.find_last_of(' '); space != std::string_view::npos)
      fn.remove_prefix(space + 1);
    out += " (" + std::string(fn) + ")";
  }
  return out;
}

const SharedString& currentScope() {
  return t_scopeShared;
}

NameScope::NameScope(std::string_view name) : m_previousLength(t_scope.size()) {
  if (name.empty()) throw std::invalid_argument("NameScope: the scope name is empty");
  if (name.find(kScopeSeparator) != std::string_view::npos)
    throw std::invalid_argument("NameScope: the scope name '" + std::string(name) +
                                "' contains the separator '/'; nest two NameScope guards instead");
  if (!t_scope.empty()) t_scope += kScopeSeparator;
  t_scope += name;
  t_scopeShared = SharedString(t_scope);
}

NameScope::~NameScope() {
  t_scope.resize(m_previousLength);
  t_scopeShared = SharedString(t_scope);
}

}  // namespace tscope::engine
