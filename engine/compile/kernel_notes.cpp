#include "engine/compile/kernel_notes.h"

#include "engine/graph/apply.h"

#include <mutex>
#include <unordered_map>
#include <utility>

namespace tscope::engine {

namespace {
struct Note {
  std::int64_t id = -1;
  std::string text;
};
std::mutex g_mutex;
std::unordered_map<const Apply*, Note> g_notes;
}  // namespace

void setKernelNote(const Apply& node, std::string note) {
  std::lock_guard lock(g_mutex);
  g_notes[&node] = Note{node.id(), std::move(note)};
}

std::string kernelNote(const Apply& node) {
  std::lock_guard lock(g_mutex);
  auto it = g_notes.find(&node);
  return it != g_notes.end() && it->second.id == node.id() ? it->second.text : std::string();
}

void clearKernelNotes() {
  std::lock_guard lock(g_mutex);
  g_notes.clear();
}

}  // namespace tscope::engine
