#pragma once
// Creation sites and name scopes: every Variable and Apply records where the user's code built it
// and under which scope path, so errors and the viewer can point at the user's line and group
// nodes.

#include "engine/graph/shared_string.h"

#include <cstdint>
#include <source_location>
#include <string>
#include <string_view>

namespace tscope::engine {

struct SourceSite {
  SharedString file;
  std::uint32_t line = 0;
  SharedString function;

  static SourceSite from(const std::source_location& loc);
  bool empty() const { return file.empty(); }
  // "mlp.cpp:42 (buildModel)"; the file name without its directories.
  std::string str() const;
  friend bool operator==(const SourceSite&, const SourceSite&) = default;
};

// Note [Scope paths]: a scope path is the list of enclosing scope names joined with '/'
// ("encoder/layer1.0/attention"), as TensorBoard and ONNX exporters write them. '/' rather than
// '.' because PyTorch module names contain dots ("layer1.0"). The empty path is the top level.
inline constexpr char kScopeSeparator = '/';

// The scope path of the calling thread: the names of the live NameScope guards, outermost first.
const SharedString& currentScope();

// RAII guard: nodes and variables created while it lives get its name appended to their scope
// path. Guards nest and are per thread.
//   { NameScope layer("dense1"); auto h = tanh(dot(x, W) + b); }   // h's node: scope "dense1"
class NameScope {
 public:
  explicit NameScope(std::string_view name);
  ~NameScope();
  NameScope(const NameScope&) = delete;
  NameScope& operator=(const NameScope&) = delete;

 private:
  std::size_t m_previousLength;
};

}  // namespace tscope::engine
