#include "gui/app/graph_pane.h"

#include "gui/app/graph_pane_breadcrumb.h"
#include "gui/app/search_index.h"
#include "visualizers/model/palette.h"
#include "visualizers/threads/hand_off.h"

#include <QThreadPool>
#include <QVBoxLayout>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>

namespace tscope::gui {

namespace {

// Each pane is its own LayoutService channel, so a newer request of one pane never makes another
// pane's job stale. Channel 0 is left to callers that pass none.
std::atomic<int> s_nextChannel{1};

// Back/forward steps kept per pane (each holds a GroupState: a few paths).
constexpr std::size_t kMaxHistory = 200;

struct HistoryEntry {
  int node = -1;
  vis::GroupState state;
  friend bool operator==(const HistoryEntry&, const HistoryEntry&) = default;
};

}  // namespace

struct GraphPane::Impl {
  GraphPane* q;
  vis::LayoutService* service;
  const int channel = s_nextChannel.fetch_add(1);
  vis::GraphView* view = nullptr;
  BreadcrumbBar* breadcrumb = nullptr;

  std::shared_ptr<const vis::ViewModel> model;
  vis::GroupState state;
  std::optional<vis::ParameterMode> parameters;      // null: the model's default
  std::shared_ptr<const vis::SceneLayout> layout;    // the one on screen
  std::shared_ptr<const vis::SceneLayout> building;  // handed to the view, its items coming
  quint64 job = 0;                                   // the layout awaited; 0 when none
  QString anchor;                                    // the group toggled by the awaited layout
  bool fitOnLayout = false;                          // the first layout of a model is fitted
  int pendingSelect = -1;                            // selected (and centred) once the layout lands
  int selected = -1;
  bool applying = false;  // selection changes made by the pane itself: no history entry

  std::shared_future<std::shared_ptr<const SearchIndex>> indexFuture;
  std::shared_ptr<const SearchIndex> index;
  std::vector<int> hits;
  int currentHit = -1;
  QSet<int> highlight;  // set by setHighlight (rewrite history); search hits take precedence
  QColor highlightColor;

  std::vector<HistoryEntry> history;
  int historyPos = -1;

  vis::GraphScene* scene() const { return view->graphScene(); }
  vis::ParameterMode parameterMode() const {
    if (parameters) return *parameters;
    return model ? model->defaultParameterMode() : vis::ParameterMode::Boxes;
  }

  void requestLayout(const QString& anchorGroup) {
    if (job) service->cancel(job);
    job = 0;
    if (!model) return;
    anchor = anchorGroup;
    vis::LayoutOptions options;
    options.font = scene()->font();
    options.parameters = parameterMode();
    job = service->request(model, state, options, channel);
    emit q->layoutStarted();
  }

  // The layout is handed to the view, which builds its items over several event-loop turns
  // (GraphView::setContentAsync); the pane finishes the switch when they are all on screen.
  void onLayoutReady(quint64 readyJob, const std::shared_ptr<const vis::SceneLayout>& ready) {
    if (readyJob != job || !ready) return;  // stale: a newer request or another model replaced it
    job = 0;
    building = ready;
    view->setContentAsync(model, ready, fitOnLayout ? QString() : anchor, fitOnLayout);
    fitOnLayout = false;
  }

  void onContentReady() {
    if (!building || scene()->sceneLayout() != building) return;  // not the layout awaited
    layout = std::exchange(building, nullptr);
    applyHighlight();
    if (pendingSelect >= 0) {
      int node = std::exchange(pendingSelect, -1);
      applying = true;
      scene()->selectNode(node);
      applying = false;
      view->revealNode(node);
    }
    syncSelection();
    int shownNodes = static_cast<int>(layout->nodes.size());
    for (const vis::PlacedGroup& group : layout->groups) shownNodes += group.expanded ? 0 : 1;
    emit q->layoutFinished(shownNodes, static_cast<int>(layout->edges.size()));
  }

  void onLayoutFailed(quint64 failedJob, const QString& message) {
    if (failedJob != job) return;
    job = 0;
    pendingSelect = -1;
    emit q->layoutFailed(message);
  }

  // The scene's selection is the truth; the pane mirrors it and reports changes.
  void syncSelection() {
    int now = scene()->selectedNode();
    if (now == selected) return;
    selected = now;
    updateBreadcrumb();
    emit q->nodeSelected(selected);
  }

  void onSceneSelection(int node) {
    // Content replaced by the view: mirrored without a history entry once it is all there.
    if (applying || scene()->isSwitchingContent()) return;
    if (node == selected) return;
    selected = node;
    pushHistory();
    updateBreadcrumb();
    emit q->nodeSelected(selected);
  }

  void updateBreadcrumb() {
    std::vector<int> groups;
    QStringList names;
    if (model && selected >= 0 && selected < static_cast<int>(model->nodes().size())) {
      for (int g = model->nodes()[static_cast<std::size_t>(selected)].group; g > 0;
           g = model->groups()[static_cast<std::size_t>(g)].parent)
        groups.push_back(g);
      std::reverse(groups.begin(), groups.end());
      for (int g : groups) names << model->groups()[static_cast<std::size_t>(g)].name;
    }
    breadcrumb->setPath(groups, names);
    emit q->breadcrumbChanged(names);
  }

  void zoomToGroup(int group) {
    QRectF rect = group > 0 ? scene()->groupRect(group) : QRectF();
    if (rect.isEmpty()) {
      view->zoomToFit();
      return;
    }
    QSizeF viewport = view->viewport()->size();
    double margin = 24;
    double zoom = std::min(viewport.width() / (rect.width() + margin),
                           viewport.height() / (rect.height() + margin));
    view->setZoom(std::clamp(zoom, vis::GraphView::kMinZoom, vis::GraphView::kMaxZoom));
    view->centerOn(rect.center());
  }

  void applyHighlight() {
    if (!model) return;
    if (!hits.empty()) {
      scene()->setHighlight(QSet<int>(hits.begin(), hits.end()), vis::palette::searchHitColor());
    } else if (!highlight.isEmpty()) {
      scene()->setHighlight(highlight, highlightColor);
    } else {
      scene()->clearHighlight();
    }
  }

  void pushHistory() { pushEntry({selected, state}); }

  void pushEntry(HistoryEntry entry) {
    if (historyPos >= 0 && history[static_cast<std::size_t>(historyPos)] == entry) return;
    history.resize(static_cast<std::size_t>(historyPos + 1));
    history.push_back(std::move(entry));
    if (history.size() > kMaxHistory) history.erase(history.begin());
    historyPos = static_cast<int>(history.size()) - 1;
    emit q->historyChanged();
  }

  // Shows a state (and, once its layout lands, selects `node`); `anchorGroup` keeps its place.
  void changeState(vis::GroupState newState, const QString& anchorGroup, int node,
                   bool recordHistory) {
    state = std::move(newState);
    pendingSelect = node;
    if (recordHistory) pushEntry({node >= 0 ? node : selected, state});
    requestLayout(anchorGroup);
    emit q->groupStateChanged(state);
  }

  // Selects a node now when it is shown by the layout on screen and no other layout is awaited,
  // else after the next layout.
  // Whether the layout on screen draws `node`: its own shape, or a badge row in a reader.
  bool placed(int node) const {
    if (layout->placedNode(node) >= 0) return true;
    if (layout->parameters != vis::ParameterMode::Badges || !model) return false;
    if (!model->nodes()[static_cast<std::size_t>(node)].parameter) return false;
    for (int e : model->outEdges(node))
      if (layout->placedNode(model->edges()[static_cast<std::size_t>(e)].to) >= 0) return true;
    return false;
  }

  void selectOrDefer(int node, bool recordHistory) {
    if (node >= 0 && (job || building || !layout || !placed(node))) {
      pendingSelect = node;
      if (recordHistory) pushEntry({node, state});
      return;
    }
    pendingSelect = -1;  // this choice replaces one still waiting for a layout
    applying = !recordHistory;
    scene()->selectNode(node);
    applying = false;
    syncSelection();
    if (node >= 0) view->revealNode(node);
  }

  void goTo(int position) {
    if (position < 0 || position >= static_cast<int>(history.size())) return;
    historyPos = position;
    const HistoryEntry& entry = history[static_cast<std::size_t>(position)];
    if (!(entry.state == state)) {
      changeState(entry.state, QString(), entry.node, false);
      if (entry.node < 0) {
        applying = true;
        scene()->selectNode(-1);
        applying = false;
        syncSelection();
      }
    } else {
      selectOrDefer(entry.node, false);
    }
    emit q->historyChanged();
  }

  const SearchIndex* searchIndex() {
    // The index is built on a worker when the model is set; a search typed before it is done
    // waits for the rest of that build (tens of ms for 20,000 nodes), once.
    if (!index && indexFuture.valid()) index = indexFuture.get();
    return index.get();
  }
};

GraphPane::GraphPane(vis::LayoutService* service, QWidget* parent)
    : QWidget(parent), m_impl(std::make_unique<Impl>()) {
  Impl& d = *m_impl;
  d.q = this;
  d.service = service;
  d.breadcrumb = new BreadcrumbBar(this);
  d.view = new vis::GraphView(this);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  layout->addWidget(d.breadcrumb);
  layout->addWidget(d.view, 1);

  connect(service, &vis::LayoutService::layoutReady, this,
          [&d](quint64 job, std::shared_ptr<const vis::SceneLayout> ready) {
            d.onLayoutReady(job, ready);
          });
  connect(service, &vis::LayoutService::layoutFailed, this,
          [&d](quint64 job, QString message) { d.onLayoutFailed(job, message); });
  connect(d.scene(), &vis::GraphScene::nodeSelected, this,
          [&d](int node) { d.onSceneSelection(node); });
  connect(d.view, &vis::GraphView::contentReady, this, [&d] { d.onContentReady(); });
  connect(d.scene(), &vis::GraphScene::groupToggleRequested, this, &GraphPane::toggleGroup);
  connect(d.scene(), &vis::GraphScene::contextMenuRequested, this,
          &GraphPane::contextMenuRequested);
  connect(d.view, &vis::GraphView::zoomChanged, this, &GraphPane::zoomChanged);
  connect(d.breadcrumb, &BreadcrumbBar::groupClicked, this,
          [&d](int group) { d.zoomToGroup(group); });
}

GraphPane::~GraphPane() {
  if (m_impl->job) m_impl->service->cancel(m_impl->job);
  // The view and its scene die after m_impl (QWidget deletes children in its own destructor), and
  // removing the scene's items emits nodeSelected: nothing may reach the Impl any more.
  m_impl->scene()->disconnect(this);
  m_impl->view->disconnect(this);
  m_impl->breadcrumb->disconnect(this);
  m_impl->service->disconnect(this);
}

void GraphPane::setModel(std::shared_ptr<const vis::ViewModel> model,
                         std::optional<vis::GroupState> state) {
  Impl& d = *m_impl;
  d.model = std::move(model);
  d.layout.reset();
  d.building.reset();
  d.pendingSelect = -1;
  d.hits.clear();
  d.currentHit = -1;
  d.highlight.clear();
  d.index.reset();
  d.indexFuture = {};
  d.history.clear();
  d.historyPos = -1;
  d.selected = -1;
  if (!d.model) {
    if (d.job) d.service->cancel(d.job);
    d.job = 0;
    d.state = {};
    d.applying = true;
    d.view->setContent(nullptr, nullptr);
    d.applying = false;
    d.updateBreadcrumb();
    emit nodeSelected(-1);
    emit historyChanged();
    return;
  }
  d.state = state ? *state : d.model->defaultState(400, d.parameterMode());
  auto indexPromise = std::make_shared<std::promise<std::shared_ptr<const SearchIndex>>>();
  d.indexFuture = indexPromise->get_future().share();
  vis::startOnPool(*QThreadPool::globalInstance(), [indexPromise, model = d.model] {
    try {
      indexPromise->set_value(SearchIndex::build(*model));
    } catch (...) {
      indexPromise->set_exception(std::current_exception());
    }
  });
  d.fitOnLayout = true;
  d.pushHistory();
  d.updateBreadcrumb();
  d.requestLayout(QString());
  emit groupStateChanged(d.state);
}

const std::shared_ptr<const vis::ViewModel>& GraphPane::model() const {
  return m_impl->model;
}
const vis::GroupState& GraphPane::groupState() const {
  return m_impl->state;
}

void GraphPane::setGroupState(const vis::GroupState& state, const QString& anchorGroupPath) {
  if (!m_impl->model || state == m_impl->state) return;
  m_impl->changeState(state, anchorGroupPath, -1, true);
}

void GraphPane::toggleGroup(const QString& path) {
  Impl& d = *m_impl;
  if (!d.model || path.isEmpty() || d.model->groupByPath(path) < 0) return;
  vis::GroupState next = d.state;
  next.toggle(path);
  d.changeState(std::move(next), path, -1, true);
}

void GraphPane::expandAll() {
  if (m_impl->model) setGroupState(m_impl->model->allExpanded());
}

void GraphPane::collapseAll() {
  if (m_impl->model) setGroupState(vis::GroupState());
}

void GraphPane::setParameterMode(std::optional<vis::ParameterMode> mode) {
  Impl& d = *m_impl;
  const vis::ParameterMode before = d.parameterMode();
  d.parameters = mode;
  if (d.model && d.parameterMode() != before) {
    d.pendingSelect = d.selected;  // the selected node's new shape is selected again
    d.requestLayout(QString());
  }
}

vis::ParameterMode GraphPane::parameterMode() const {
  return m_impl->parameterMode();
}

bool GraphPane::hasParameterModeSet() const {
  return m_impl->parameters.has_value();
}

vis::GraphView* GraphPane::view() const {
  return m_impl->view;
}
int GraphPane::selectedNode() const {
  return m_impl->selected;
}

void GraphPane::selectNode(int node) {
  Impl& d = *m_impl;
  if (!d.model || node >= static_cast<int>(d.model->nodes().size())) return;
  if (node < 0) {
    d.selectOrDefer(-1, true);
    return;
  }
  // A hidden parameter is shown by its first reader.
  if (const int host = d.model->badgeHost(node);
      host >= 0 && d.parameterMode() == vis::ParameterMode::Hidden)
    node = host;
  vis::LevelItem visible = d.model->visibleItem(node, d.state, d.parameterMode());
  if (visible.kind == vis::LevelItem::Kind::Node) {
    d.selectOrDefer(node, true);
    return;
  }
  // Hidden in a collapsed group: open the groups on its path; the outermost one keeps its place.
  QString anchor = visible.kind == vis::LevelItem::Kind::CollapsedGroup
                       ? d.model->groups()[static_cast<std::size_t>(visible.index)].path
                       : QString();
  d.changeState(d.model->revealed(node, d.state), anchor, node, true);
}

void GraphPane::setHighlight(const QSet<int>& nodes, const QColor& color) {
  m_impl->highlight = nodes;
  m_impl->highlightColor = color;
  m_impl->applyHighlight();
}

int GraphPane::search(const QString& text) {
  Impl& d = *m_impl;
  d.hits.clear();
  d.currentHit = -1;
  if (const SearchIndex* index = d.model ? d.searchIndex() : nullptr) d.hits = index->find(text);
  d.applyHighlight();
  return static_cast<int>(d.hits.size());
}

void GraphPane::findNext() {
  Impl& d = *m_impl;
  if (d.hits.empty()) return;
  d.currentHit = (d.currentHit + 1) % static_cast<int>(d.hits.size());
  selectNode(d.hits[static_cast<std::size_t>(d.currentHit)]);
}

void GraphPane::findPrevious() {
  Impl& d = *m_impl;
  if (d.hits.empty()) return;
  int count = static_cast<int>(d.hits.size());
  d.currentHit = d.currentHit < 0 ? count - 1 : (d.currentHit + count - 1) % count;
  selectNode(d.hits[static_cast<std::size_t>(d.currentHit)]);
}

int GraphPane::searchHitCount() const {
  return static_cast<int>(m_impl->hits.size());
}
int GraphPane::currentSearchHit() const {
  return m_impl->currentHit;
}

bool GraphPane::canGoBack() const {
  return m_impl->historyPos > 0;
}
bool GraphPane::canGoForward() const {
  return m_impl->historyPos + 1 < static_cast<int>(m_impl->history.size());
}
void GraphPane::goBack() {
  if (canGoBack()) m_impl->goTo(m_impl->historyPos - 1);
}
void GraphPane::goForward() {
  if (canGoForward()) m_impl->goTo(m_impl->historyPos + 1);
}

bool GraphPane::isLayoutPending() const {
  return m_impl->job != 0 || m_impl->building != nullptr;
}

bool GraphPane::isSearchReady() const {
  return m_impl->index ||
         (m_impl->indexFuture.valid() &&
          m_impl->indexFuture.wait_for(std::chrono::seconds(0)) == std::future_status::ready);
}

void GraphPane::setDecorations(const QString& layer,
                               std::shared_ptr<const vis::Decorations> decorations, int z) {
  m_impl->scene()->setDecorations(layer, std::move(decorations), z);
}

vis::GraphScene* GraphPane::scene() const {
  return m_impl->scene();
}

}  // namespace tscope::gui
