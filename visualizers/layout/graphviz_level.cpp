#include "visualizers/layout/graphviz_level.h"

#include "visualizers/layout/dot_mark_wrap.h"
#include "visualizers/layout/level_hubs.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <clocale>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <dlfcn.h>
#include <filesystem>
#include <locale.h>
#include <mutex>
#include <string_view>

// Graphviz last: its headers define short macros (TRUE, FALSE, MIN, MAX, ND_*, ED_*).
#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>
#include <graphviz/gvplugin.h>
#include <graphviz/types.h>

namespace tscope::vis::layout {
namespace {

constexpr double kPointsPerInch = 72.0;
// Fast levels with more edges route them as polylines: Note [Fast settings for big levels].
constexpr std::size_t kPolylinesAbove = 4000;

// Graphviz takes char* for strings it only reads (and copies): hand it mutable copies that outlive
// the call. A deque never moves its elements, so the pointers stay valid.
class AgStrings {
 public:
  char* operator()(std::string_view text) {
    m_store.emplace_back(text);
    return m_store.back().data();
  }

 private:
  std::deque<std::string> m_store;
};

// Numbers for attributes, always with a '.' whatever the process locale says.
std::string number(double value, int decimals = 4) {
  char buffer[64];
  auto [end, ec] =
      std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::fixed, decimals);
  if (ec != std::errc()) return "0";
  return std::string(buffer, end);
}

// Graphviz parses attribute numbers with strtod, which follows LC_NUMERIC, and some of its entry
// points switch the global LC_NUMERIC themselves. The guard gives this thread the "C" locale for
// the duration of a layout (uselocale is per thread, so nothing leaks to other threads) and puts
// the global LC_NUMERIC back if Graphviz changed it.
class NumericLocaleGuard {
 public:
  NumericLocaleGuard() {
    if (const char* global = std::setlocale(LC_NUMERIC, nullptr)) m_global = global;
    m_cLocale = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(nullptr));
    if (m_cLocale) m_previous = uselocale(m_cLocale);
  }
  ~NumericLocaleGuard() {
    if (m_cLocale) {
      uselocale(m_previous);
      freelocale(m_cLocale);
    }
    const char* now = std::setlocale(LC_NUMERIC, nullptr);
    if (!m_global.empty() && (!now || m_global != now))
      std::setlocale(LC_NUMERIC, m_global.c_str());
  }
  NumericLocaleGuard(const NumericLocaleGuard&) = delete;
  NumericLocaleGuard& operator=(const NumericLocaleGuard&) = delete;

 private:
  std::string m_global;
  locale_t m_cLocale = static_cast<locale_t>(nullptr);
  locale_t m_previous = static_cast<locale_t>(nullptr);
};

// Graphviz reports problems through agerr(); the installed callback collects them for the layout
// running on this thread instead of printing them to stderr.
thread_local std::string* t_messages = nullptr;

int collectMessage(char* message) {
  if (t_messages && message) t_messages->append(message);
  return 0;
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// The dot layout plugin, loaded from Graphviz's plugin folder. Loading it ourselves (instead of
// gvContext()'s configuration file) keeps the pango/gtk plugins out of the process: text sizes
// come from Qt anyway.
struct DotPlugin {
  gvplugin_library_t* library = nullptr;
  void* handle = nullptr;  // dlopen handle, kept open for the life of the process
};

DotPlugin dotPlugin() {
  static DotPlugin plugin;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::string> candidates;
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&gvContextPlugins), &info) && info.dli_fname) {
      const auto dir = std::filesystem::path(info.dli_fname).parent_path() / "graphviz";
      candidates.push_back((dir / "libgvplugin_dot_layout.so.6").string());
      candidates.push_back((dir / "libgvplugin_dot_layout.so").string());
    }
    candidates.push_back("libgvplugin_dot_layout.so.6");
    candidates.push_back("libgvplugin_dot_layout.so");
    for (const auto& path : candidates) {
      void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) {
        failure += "\n  " + path + ": " + dlerror();
        continue;
      }
      // Kept open for the life of the process: Graphviz keeps pointers into it.
      if (void* symbol = dlsym(handle, "gvplugin_dot_layout_LTX_library")) {
        plugin = {static_cast<gvplugin_library_t*>(symbol), handle};
        return;
      }
      failure += "\n  " + path + ": no symbol gvplugin_dot_layout_LTX_library";
    }
  });
  if (!plugin.library)
    throw GraphvizError("Graphviz's dot layout plugin could not be loaded; tried:" + failure);
  return plugin;
}

QPointF toLocal(pointf p, const boxf& bb) {
  return {p.x - bb.LL.x, bb.UR.y - p.y};
}

// <TABLE> labels are the one way to give dot an exact label size: plain text would be measured
// with Graphviz's own font estimates, which disagree with Qt's.
std::string sizedHtmlLabel(QSizeF size) {
  const int w = std::max(1, static_cast<int>(std::ceil(size.width())));
  const int h = std::max(1, static_cast<int>(std::ceil(size.height())));
  return "<TABLE BORDER=\"0\" CELLBORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"0\" "
         "FIXEDSIZE=\"TRUE\""
         " WIDTH=\"" +
         std::to_string(w) + "\" HEIGHT=\"" + std::to_string(h) + "\"><TR><TD></TD></TR></TABLE>";
}

LevelEdgeGeometry readEdge(Agedge_t* edge, const boxf& bb, bool hasLabel) {
  LevelEdgeGeometry geometry;
  const splines* spl = ED_spl(edge);
  if (spl) {
    for (int b = 0; b < spl->size; ++b) {
      const bezier& bz = spl->list[b];
      if (bz.size < 1) continue;
      geometry.path.moveTo(toLocal(bz.list[0], bb));
      // A bezier's points are p0 c1 c2 p1 c3 c4 p2 ...: one cubic per three points after the first.
      for (int i = 1; i + 2 < bz.size; i += 3)
        geometry.path.cubicTo(toLocal(bz.list[i], bb), toLocal(bz.list[i + 1], bb),
                              toLocal(bz.list[i + 2], bb));
    }
    const bezier& last = spl->list[spl->size - 1];
    if (last.eflag && last.size > 0) {
      geometry.arrowBase = toLocal(last.list[last.size - 1], bb);
      geometry.arrowTip = toLocal(last.ep, bb);
    } else if (last.size > 1) {
      // No arrow head: the spline's own end and direction, so a drawn head still points right.
      geometry.arrowBase = toLocal(last.list[last.size - 2], bb);
      geometry.arrowTip = toLocal(last.list[last.size - 1], bb);
    }
  }
  if (hasLabel) {
    if (ED_label(edge) && ED_label(edge)->set)
      geometry.labelPos = toLocal(ED_label(edge)->pos, bb);
    else if (ED_xlabel(edge) && ED_xlabel(edge)->set)
      geometry.labelPos = toLocal(ED_xlabel(edge)->pos, bb);
    else
      geometry.labelPos = geometry.path.pointAtPercent(0.5);
  }
  return geometry;
}

}  // namespace

// Note [Fast settings for big levels]
// Measured on bench_gui's 2,000-node flat graph (2,164 items, 3,463 edges, 2,001 ranks; its long
// skip edges give dot_position an auxiliary graph of 25,752 nodes), CPU seconds of `dot` 2.42:
//   nslimit=0.2, mclimit=0.05, xlabels (the old fast settings)            6.8
//     of which the x-coordinate network simplex (433 iterations + its feasible tree)  ~5
//   nslimit=0: dot_position keeps init_rank's packing, no simplex            2.9
//   ... and labels on midpoints instead of xlabels                           1.7
//   ... and newrank=true (dot1_rank's cleanup1 is quadratic in the edges)    0.7
// Spline routing is then the largest part (0.4 s here; 2.3 of 4.3 s for 5,436 items and 8,694
// edges in 32 chains, where polylines take 1.1 s): above kPolylinesAbove edges, polylines.
// nslimit=0 leaves nodes packed towards the left instead of centred over their neighbours; for the
// long chains of a big graph that is barely visible, while an unlimited simplex took 62 s.
// newrank gives these levels the same ranks, but it puts rank=sink nodes on the last rank beside
// the others instead of below them: levels with ports keep dot's own ranking. Small levels keep
// dot's defaults.

std::string LevelSpec::cacheKey() const {
  std::string key;
  key.reserve(32 * (nodes.size() + edges.size()) + 64);
  key += "level v3 " + number(nodeSep, 2) + ' ' + number(rankSep, 2) + (fast ? " fast" : " full") +
         " labels" + std::to_string(static_cast<int>(labels)) + '\n';
  for (const auto& node : nodes) {
    key += node.key.toStdString();
    key += ' ' + number(node.width, 2) + ' ' + number(node.height, 2) + ' ' +
           std::to_string(static_cast<int>(node.rank)) +
           std::to_string(static_cast<int>(node.shape)) + '\n';
  }
  for (const auto& edge : edges) {
    key += std::to_string(edge.from) + '>' + std::to_string(edge.to);
    if (!edge.labelSize.isEmpty())
      key += ' ' + number(edge.labelSize.width(), 1) + 'x' + number(edge.labelSize.height(), 1);
    key += '\n';
  }
  return key;
}

std::size_t LevelLayout::approximateBytes() const {
  std::size_t bytes = sizeof(LevelLayout) + nodes.size() * sizeof(QRectF);
  for (const auto& edge : edges)
    bytes +=
        sizeof(LevelEdgeGeometry) + 64 + static_cast<std::size_t>(edge.path.elementCount()) * 24;
  return bytes;
}

struct GraphvizLayouter::Context {
  GVC_t* gvc = nullptr;
  std::unique_ptr<DecomposeMarkGuard> markGuard;  // Note [dot's decompose mark wraps]
  std::string tracePath;                          // TSCOPE_DOT_TRACE
};

static bool hasDotLayout(GVC_t* gvc) {
  int count = 0;
  char** names = gvPluginList(gvc, "layout", &count, nullptr);
  bool found = false;
  for (int i = 0; i < count; ++i) {
    if (names[i] && std::strcmp(names[i], "dot") == 0) found = true;
    std::free(names[i]);
  }
  std::free(names);
  return found;
}

GraphvizLayouter::GraphvizLayouter() : m_context(std::make_unique<Context>()) {
  m_owner = std::this_thread::get_id();
  NumericLocaleGuard locale;
  agseterrf(&collectMessage);
  void* pluginHandle = nullptr;
  try {
    const DotPlugin plugin = dotPlugin();
    pluginHandle = plugin.handle;
    const lt_symlist_t builtins[] = {
        {"gvplugin_dot_layout_LTX_library", plugin.library},
        {nullptr, nullptr},
    };
    // demand_loading = 0: only the builtins above, no configuration file.
    m_context->gvc = gvContextPlugins(builtins, 0);
  } catch (const GraphvizError& e) {
    // No plugin library where we looked: let Graphviz's own configuration find one.
    m_context->gvc = gvContext();
    if (m_context->gvc && !hasDotLayout(m_context->gvc)) {
      gvFreeContext(m_context->gvc);
      throw GraphvizError(std::string(e.what()) +
                          "\nand Graphviz's plugin configuration has no \"dot\" layout either "
                          "(run `dot -c` as root to rebuild it)");
    }
  }
  if (!m_context->gvc) throw GraphvizError("Graphviz: creating the layout context failed");
  m_context->markGuard = std::make_unique<DecomposeMarkGuard>(pluginHandle);
  if (const char* trace = std::getenv("TSCOPE_DOT_TRACE")) m_context->tracePath = trace;
}

bool GraphvizLayouter::guardsMarkWrap() const {
  return m_context->markGuard && m_context->markGuard->active();
}

GraphvizLayouter::~GraphvizLayouter() {
  if (m_context->gvc) gvFreeContext(m_context->gvc);
}

LevelLayout GraphvizLayouter::layout(const LevelSpec& spec, const char* engine) {
  if (std::this_thread::get_id() != m_owner)
    throw std::logic_error(
        "GraphvizLayouter::layout called from a thread that does not own "
        "Graphviz (Graphviz is not thread-safe)");
  for (const auto& edge : spec.edges)
    if (edge.from < 0 || edge.to < 0 || edge.from >= static_cast<int>(spec.nodes.size()) ||
        edge.to >= static_cast<int>(spec.nodes.size()))
      throw std::invalid_argument("LevelSpec: edge " + std::to_string(edge.from) + "->" +
                                  std::to_string(edge.to) + " has an end outside the " +
                                  std::to_string(spec.nodes.size()) + " nodes");
  // Note [Detached hubs] (level_hubs.cpp)
  if (const HubSplit split = splitHubs(spec); split.active())
    return placeHubs(spec, split, layoutWithDot(split.rest, engine));
  return layoutWithDot(spec, engine);
}

LevelLayout GraphvizLayouter::layoutWithDot(const LevelSpec& spec, const char* engine) {
  const auto start = std::chrono::steady_clock::now();
  NumericLocaleGuard locale;
  std::string messages;
  t_messages = &messages;
  agreseterrors();
  AgStrings s;

  Agraph_t* g = agopen(s("level"), Agdirected, nullptr);
  bool laidOut = false;
  auto release = [&] {
    if (laidOut) gvFreeLayout(m_context->gvc, g);
    agclose(g);
    t_messages = nullptr;
  };

  try {
    agattr(g, AGRAPH, s("rankdir"), s("TB"));
    agattr(g, AGRAPH, s("nodesep"), s(number(spec.nodeSep / kPointsPerInch)));
    agattr(g, AGRAPH, s("ranksep"), s(number(spec.rankSep / kPointsPerInch)));
    if (spec.fast) {
      // Note [Fast settings for big levels]
      const bool ports = std::any_of(spec.nodes.begin(), spec.nodes.end(), [](const auto& node) {
        return node.rank != LevelNodeSpec::Rank::Normal;
      });
      if (!ports) agattr(g, AGRAPH, s("newrank"), s("true"));
      agattr(g, AGRAPH, s("nslimit"), s("0"));
      agattr(g, AGRAPH, s("nslimit1"), s("0.2"));
      agattr(g, AGRAPH, s("mclimit"), s("0.05"));
      if (spec.edges.size() > kPolylinesAbove) agattr(g, AGRAPH, s("splines"), s("polyline"));
    }
    Agsym_t* shape = agattr(g, AGNODE, s("shape"), s("box"));
    agattr(g, AGNODE, s("fixedsize"), s("true"));
    agattr(g, AGNODE, s("label"), s(""));
    Agsym_t* width = agattr(g, AGNODE, s("width"), s("0.75"));
    Agsym_t* height = agattr(g, AGNODE, s("height"), s("0.5"));
    using LabelPlacement = LevelSpec::LabelPlacement;
    Agsym_t* label =
        spec.labels == LabelPlacement::Midpoint
            ? nullptr
            : agattr(g, AGEDGE, s(spec.labels == LabelPlacement::External ? "xlabel" : "label"),
                     s(""));

    Agraph_t* sources = nullptr;
    Agraph_t* sinks = nullptr;
    std::vector<Agnode_t*> nodes;
    nodes.reserve(spec.nodes.size());
    for (const auto& node : spec.nodes) {
      Agnode_t* n = agnode(g, s(node.key.toStdString()), 1);
      // dot keeps node sizes in whole points: round up so the space it reserves holds the node.
      agxset(n, width, s(number(std::ceil(std::max(node.width, 1.0)) / kPointsPerInch)));
      agxset(n, height, s(number(std::ceil(std::max(node.height, 1.0)) / kPointsPerInch)));
      if (node.shape == LevelNodeSpec::Shape::Ellipse) agxset(n, shape, s("ellipse"));
      if (node.rank != LevelNodeSpec::Rank::Normal) {
        const bool source = node.rank == LevelNodeSpec::Rank::Source;
        Agraph_t*& sub = source ? sources : sinks;
        if (!sub) {
          sub = agsubg(g, s(source ? "ports_in" : "ports_out"), 1);
          agsafeset(sub, s("rank"), s(source ? "source" : "sink"), s(""));
        }
        agsubnode(sub, n, 1);
      }
      nodes.push_back(n);
    }
    if (static_cast<int>(nodes.size()) != agnnodes(g))
      throw GraphvizError("LevelSpec: node keys are not unique (" + std::to_string(nodes.size()) +
                          " nodes, " + std::to_string(agnnodes(g)) + " distinct keys)");
    std::vector<Agedge_t*> edges;
    edges.reserve(spec.edges.size());
    for (const auto& edge : spec.edges) {
      Agedge_t* e = agedge(g, nodes[edge.from], nodes[edge.to], nullptr, 1);
      if (label && !edge.labelSize.isEmpty())
        agxset(e, label, agstrdup_html(g, s(sizedHtmlLabel(edge.labelSize))));
      edges.push_back(e);
    }

    if (!m_context->tracePath.empty()) {
      if (FILE* file = std::fopen(m_context->tracePath.c_str(), "a")) {
        agwrite(g, file);
        std::fclose(file);
      }
    }
    m_context->markGuard->beforeLayout();
    const int rc = gvLayout(m_context->gvc, g, engine);
    laidOut = rc == 0;
    if (rc != 0 || agerrors() >= AGERR) {
      std::string message = trimmed(messages);
      if (message.empty() && aglasterr()) message = trimmed(aglasterr());
      if (message.empty()) message = "gvLayout returned " + std::to_string(rc);
      throw GraphvizError("Graphviz could not lay out a level of " +
                          std::to_string(spec.nodes.size()) + " nodes with \"" + engine +
                          "\": " + message);
    }

    LevelLayout result;
    const boxf bb = GD_bb(g);
    result.size = QSizeF(bb.UR.x - bb.LL.x, bb.UR.y - bb.LL.y);
    result.nodes.reserve(nodes.size());
    // The rects have the sizes asked for (dot's own are rounded up to whole points), centred where
    // dot put the nodes.
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const QPointF centre = toLocal(ND_coord(nodes[i]), bb);
      const double w = std::max(spec.nodes[i].width, 1.0);
      const double h = std::max(spec.nodes[i].height, 1.0);
      result.nodes.emplace_back(centre.x() - w / 2, centre.y() - h / 2, w, h);
    }
    result.edges.reserve(edges.size());
    for (std::size_t i = 0; i < edges.size(); ++i)
      result.edges.push_back(readEdge(edges[i], bb, !spec.edges[i].labelSize.isEmpty()));
    release();
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  } catch (...) {
    release();
    throw;
  }
}

}  // namespace tscope::vis::layout
