#include "engine/backends/cuda/cudnn_options.h"

#include <array>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>

namespace tscope::engine::cuda {

namespace {
constexpr std::array<std::string_view, kConvAlgoModeCount> kModeNames = {
    "guess_once", "guess_on_shape_change", "time_once", "time_on_shape_change"};
static_assert(kModeNames.size() == static_cast<std::size_t>(ConvAlgoMode::TimeOnShapeChange) + 1);

std::mutex g_mutex;
std::optional<CudnnOptions> g_options;
std::vector<ConvAlgoChoice> g_choices;
std::atomic<std::uint64_t> g_generation{1};

std::string formatBytes(std::size_t n) {
  if (n >= (std::size_t(1) << 20)) return std::to_string(n >> 20) + " MiB";
  if (n >= 1024) return std::to_string(n >> 10) + " KiB";
  return std::to_string(n) + " B";
}
}  // namespace

std::string_view convAlgoModeName(ConvAlgoMode mode) {
  return kModeNames[static_cast<std::size_t>(mode)];
}

ConvAlgoMode parseConvAlgoMode(std::string_view text, std::string_view what) {
  for (std::size_t i = 0; i < kModeNames.size(); ++i)
    if (text == kModeNames[i]) return static_cast<ConvAlgoMode>(i);
  std::string expected;
  for (std::string_view n : kModeNames) expected += (expected.empty() ? "" : ", ") + std::string(n);
  throw std::invalid_argument(std::string(what) + ": expected one of " + expected + ", found '" +
                              std::string(text) + "'");
}

std::size_t parseByteCount(std::string_view text, std::string_view what) {
  auto bad = [&] {
    return std::invalid_argument(std::string(what) +
                                 ": expected a byte count (digits, optionally followed by K, M or "
                                 "G), found '" +
                                 std::string(text) + "'");
  };
  std::size_t i = 0, value = 0;
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    const std::size_t digit = static_cast<std::size_t>(text[i] - '0');
    if (value > (kMax - digit) / 10) throw bad();
    value = value * 10 + digit;
  }
  if (i == 0) throw bad();
  int shift = 0;
  if (i + 1 == text.size()) {
    switch (std::toupper(static_cast<unsigned char>(text[i]))) {
      case 'K':
        shift = 10;
        break;
      case 'M':
        shift = 20;
        break;
      case 'G':
        shift = 30;
        break;
      default:
        throw bad();
    }
  } else if (i != text.size()) {
    throw bad();
  }
  if (shift > 0 && value > (kMax >> shift)) throw bad();
  return value << shift;
}

CudnnOptions CudnnOptions::fromEnvironment() {
  CudnnOptions o;
  if (const char* mode = std::getenv("TSCOPE_CUDNN_CONV_ALGO"); mode && *mode)
    o.algoMode = parseConvAlgoMode(mode, "TSCOPE_CUDNN_CONV_ALGO");
  if (const char* limit = std::getenv("TSCOPE_CUDNN_WORKSPACE_LIMIT"); limit && *limit)
    o.workspaceLimit = parseByteCount(limit, "TSCOPE_CUDNN_WORKSPACE_LIMIT");
  return o;
}

CudnnOptions cudnnOptions() {
  std::lock_guard lock(g_mutex);
  if (!g_options) g_options = CudnnOptions::fromEnvironment();
  return *g_options;
}

void setCudnnOptions(const CudnnOptions& options) {
  std::lock_guard lock(g_mutex);
  g_options = options;
  ++g_generation;
}

std::vector<ConvAlgoChoice> cudnnConvAlgoChoices() {
  std::lock_guard lock(g_mutex);
  return g_choices;
}

std::string convAlgoNote(std::int64_t nodeId) {
  std::lock_guard lock(g_mutex);
  for (auto it = g_choices.rbegin(); it != g_choices.rend(); ++it)
    if (it->nodeId == nodeId)
      return "cudnn " + it->direction + " " + it->algorithm + " (" +
             std::string(convAlgoModeName(it->mode)) + ", ws " + formatBytes(it->workspaceBytes) +
             ")";
  return {};
}

void recordConvAlgoChoice(ConvAlgoChoice choice) {
  std::lock_guard lock(g_mutex);
  // A bounded record: a long session with time_on_shape_change and changing shapes keeps the
  // newest choices.
  constexpr std::size_t kKeep = 4096;
  if (g_choices.size() >= kKeep) g_choices.erase(g_choices.begin(), g_choices.begin() + kKeep / 2);
  g_choices.push_back(std::move(choice));
}

void forgetConvAlgoChoices() {
  std::lock_guard lock(g_mutex);
  g_choices.clear();
  ++g_generation;
}

std::uint64_t convAlgoGeneration() {
  return g_generation.load();
}

}  // namespace tscope::engine::cuda
