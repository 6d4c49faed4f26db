// ViewModel::levelGraph: the items of one group's level (member nodes, child groups, ports), the
// edges lifted to the items that show their ends and merged per pair, collapsed OpFromGraph
// bodies, the rule that every edge is drawn at exactly one level, and the cost on big graphs.
#include "gui_test_main.h"
// The units under test and their helpers.
#include "engine/ops/basic.h"
#include "engine/ops/graph/op_from_graph.h"
#include "engine/ops/shape/dimshuffle.h"
#include "view_model_test_support.h"

#include <QElapsedTimer>

#include <optional>
#include <random>

using namespace tscope::engine;
using namespace tscope::vis;
using namespace tscope::vis::testing;

namespace {
const TensorType kSquare(DType::Float32, {3, 3});
VarPtr named(VarPtr v, const std::string& name) {
  v->setName(name);
  return v;
}

// x -> A{ a1 = x^T; B{ b1 = tanh(a1); b2 = b1 * x }; a2 = b2 + a1 } -> C{ c1 = a2^T; c2 = b1^T }
//   -> out = c1 + c2 (root)
std::shared_ptr<const ViewModel> handBuilt() {
  auto x = Variable::create(kSquare, "x");
  VarPtr a1, b1, b2, a2, c1, c2;
  {
    NameScope a("A");
    a1 = named(transpose(x), "a1");
    {
      NameScope b("B");
      b1 = named(tanh(a1), "b1");
      b2 = named(b1 * x, "b2");
    }
    a2 = named(b2 + a1, "a2");
  }
  {
    NameScope c("C");
    c1 = named(transpose(a2), "c1");
    c2 = named(transpose(b1), "c2");
  }
  return ViewModel::build(graphOf({x}, {named(c1 + c2, "out")}));
}

// "key:kind" per item, in order.
QStringList itemsText(const LevelGraph& level) {
  static const char* kKinds[] = {"node", "collapsed", "expanded", "in", "out"};
  QStringList items;
  for (const LevelItem& item : level.items)
    items << item.key + ":" + kKinds[static_cast<int>(item.kind)];
  return items;
}

// "from->to kind label", sorted (the order of edges carries no meaning).
QStringList edgesText(const LevelGraph& level) {
  static const char* kKinds[] = {"plain", "view", "destroy"};
  QStringList edges;
  for (const LevelEdge& edge : level.edges)
    edges << QStringLiteral("%1->%2 %3 %4")
                 .arg(level.items[edge.from].key, level.items[edge.to].key,
                      kKinds[static_cast<int>(edge.kind)], edge.label);
  edges.sort();
  return edges;
}

QString n(const ViewModel& model, const char* applyOutput) {
  return "n" + QString::number(applyNamed(model, applyOutput));
}
QString box(const ViewModel& model, const char* name) {
  return "n" + QString::number(boxNamed(model, name));
}
QString g(const ViewModel& model, const char* path) {
  return "g" + QString::number(model.groupByPath(path));
}
}  // namespace

class TestLevelGraph : public QObject {
  Q_OBJECT

 private slots:
  void testRootCollapsed() {
    auto m = handBuilt();
    const LevelGraph level = m->levelGraph(0, GroupState());
    QCOMPARE(level.group, 0);
    QCOMPARE(itemsText(level),
             QStringList({box(*m, "x") + ":node", n(*m, "out") + ":node", box(*m, "out") + ":node",
                          g(*m, "A") + ":collapsed", g(*m, "C") + ":collapsed"}));
    QStringList expected{
        box(*m, "x") + "->" + g(*m, "A") +
            " plain ×2",                              // x -> a1 (view) and x -> b2 (plain): mixed
        g(*m, "A") + "->" + g(*m, "C") + " view ×2",  // a2 -> c1, b1 -> c2: both views
        g(*m, "C") + "->" + n(*m, "out") + " plain ×2",  // c1, c2 -> out
        n(*m, "out") + "->" + box(*m, "out") + " plain fmatrix",
    };
    expected.sort();
    QCOMPARE(edgesText(level), expected);
    // A merged edge lists the ViewModel edges it stands for.
    for (const LevelEdge& edge : level.edges) {
      const bool merged = edge.label.startsWith(QChar(0x00D7));
      QCOMPARE(edge.edges.size(), merged ? std::size_t(2) : std::size_t(1));
      for (int e : edge.edges) {
        QCOMPARE(m->visibleItem(m->edges()[e].from, {}).key, level.items[edge.from].key);
        QCOMPARE(m->visibleItem(m->edges()[e].to, {}).key, level.items[edge.to].key);
      }
    }
  }

  void testExpandedGroupWithPorts() {
    auto m = handBuilt();
    GroupState state;
    state.setExpanded("A", true);
    const LevelGraph root = m->levelGraph(0, state);
    QCOMPARE(root.items[3].kind, LevelItem::Kind::ExpandedGroup);
    const LevelGraph level = m->levelGraph(m->groupByPath("A"), state);
    QCOMPARE(itemsText(level),
             QStringList({n(*m, "a1") + ":node", n(*m, "a2") + ":node", g(*m, "A/B") + ":collapsed",
                          "i" + box(*m, "x").mid(1) + ":in", "o" + n(*m, "a2").mid(1) + ":out",
                          "o" + n(*m, "b1").mid(1) + ":out"}));
    // Ports are keyed by the value's producer (Note [One port per value]): x from outside, a2 and
    // b1 (inside B) out to C.
    const QString x = "i" + box(*m, "x").mid(1), c1 = "o" + n(*m, "a2").mid(1),
                  c2 = "o" + n(*m, "b1").mid(1);
    QStringList expected{
        x + "->" + n(*m, "a1") + " view fmatrix",
        x + "->" + g(*m, "A/B") + " plain 1 fmatrix",
        n(*m, "a1") + "->" + g(*m, "A/B") + " plain fmatrix",
        n(*m, "a1") + "->" + n(*m, "a2") + " plain 1 fmatrix",
        g(*m, "A/B") + "->" + n(*m, "a2") + " plain 0 fmatrix",
        n(*m, "a2") + "->" + c1 + " view fmatrix",
        g(*m, "A/B") + "->" + c2 + " view fmatrix",
    };
    expected.sort();
    QCOMPARE(edgesText(level), expected);
    // b1 -> b2 lies inside B: B's level draws it, A's does not.
    state.setExpanded("A/B", true);
    const LevelGraph inner = m->levelGraph(m->groupByPath("A/B"), state);
    QCOMPARE(itemsText(inner),
             QStringList({n(*m, "b1") + ":node", n(*m, "b2") + ":node",
                          "i" + n(*m, "a1").mid(1) + ":in", "i" + box(*m, "x").mid(1) + ":in",
                          "o" + n(*m, "b1").mid(1) + ":out", "o" + n(*m, "b2").mid(1) + ":out"}));
    QVERIFY(edgesText(inner).contains(n(*m, "b1") + "->" + n(*m, "b2") + " plain 0 fmatrix"));
    QCOMPARE(inner.edges.size(), std::size_t(5));
  }

  void testEveryEdgeAtOneLevel() {
    // A random DAG over random nested scopes, all groups open: each ViewModel edge is drawn
    // between two items at exactly one level (its ends' innermost common group) and reaches
    // every deeper level through a port.
    std::mt19937 rng(7);
    auto x = Variable::create(kSquare, "x");
    std::vector<VarPtr> values{x};
    const std::vector<std::string> scopes{"", "p", "p/q", "p/q/r", "s", "s/t", "p/u"};
    for (int i = 0; i < 300; ++i) {
      const std::string& scope = scopes[rng() % scopes.size()];
      std::vector<std::unique_ptr<NameScope>> guards;
      std::size_t start = 0;
      while (start < scope.size()) {
        const std::size_t end = std::min(scope.find('/', start), scope.size());
        guards.push_back(std::make_unique<NameScope>(scope.substr(start, end - start)));
        start = end + 1;
      }
      const VarPtr a = values[rng() % values.size()];
      const VarPtr b = values[values.size() - 1 - rng() % std::min<std::size_t>(values.size(), 5)];
      values.push_back(rng() % 3 ? a * b : transpose(a));
      while (!guards.empty()) guards.pop_back();  // inner scopes end first
    }
    auto m = ViewModel::build(graphOf({x}, {values.back(), values[values.size() / 2]}));
    const GroupState all = m->allExpanded();
    std::vector<int> drawn(m->edges().size(), 0);
    for (std::size_t gi = 0; gi < m->groups().size(); ++gi) {
      const LevelGraph level = m->levelGraph(static_cast<int>(gi), all);
      for (const LevelEdge& edge : level.edges) {
        const bool port = level.items[edge.from].kind == LevelItem::Kind::InPort ||
                          level.items[edge.to].kind == LevelItem::Kind::OutPort;
        for (int e : edge.edges) {
          const int from = m->nodes()[m->edges()[e].from].group,
                    to = m->nodes()[m->edges()[e].to].group;
          // Drawn here (not through a port) exactly when this group holds both ends.
          QCOMPARE(!port, m->isAncestor(static_cast<int>(gi), from) &&
                              m->isAncestor(static_cast<int>(gi), to));
          drawn[e] += !port;
        }
      }
    }
    for (std::size_t e = 0; e < drawn.size(); ++e) QCOMPARE(drawn[e], 1);
  }

  void testCollapsedOpFromGraph() {
    auto gx = Variable::create(kSquare, "gx");
    const auto gelu = opFromGraph({gx}, {named(gx * sigmoid(gx * 1.702), "gy")}, "gelu_block");
    auto x = Variable::create(kSquare, "x");
    auto y = named((*gelu)({x}), "y");
    auto m = ViewModel::build(graphOf({x}, {y, named(y * x, "z")}));
    const int ofg = m->groupByPath("#" + QString::number(m->graph().outputs()[0]->owner()->id()));
    QVERIFY(ofg > 0);
    const QString gk = "g" + QString::number(ofg);
    const LevelGraph root = m->levelGraph(0, {});
    QCOMPARE(itemsText(root),
             QStringList({box(*m, "x") + ":node", box(*m, "y") + ":node", n(*m, "z") + ":node",
                          box(*m, "z") + ":node", gk + ":collapsed"}));
    QStringList expected{box(*m, "x") + "->" + gk + " plain fmatrix",
                         gk + "->" + box(*m, "y") + " plain fmatrix",
                         gk + "->" + n(*m, "z") + " plain 0 fmatrix",
                         box(*m, "x") + "->" + n(*m, "z") + " plain 1 fmatrix",
                         n(*m, "z") + "->" + box(*m, "z") + " plain fmatrix"};
    expected.sort();
    QCOMPARE(edgesText(root), expected);
    // Open: the body without the OpFromGraph node, with a port per value crossing its border: gy,
    // read outside by the y box and by z, leaves through one port (Note [One port per value]).
    GroupState open;
    open.setExpanded(m->groups()[ofg].path, true);
    const LevelGraph body = m->levelGraph(ofg, open);
    for (const LevelItem& item : body.items)
      QVERIFY(item.kind != LevelItem::Kind::Node || item.index != m->groups()[ofg].ofgViewNode);
    QCOMPARE(body.items.size(),
             std::size_t(6 + 1 + 1));  // gx, 1.702, mul, sigmoid, mul, gy; x; gy out
    QVERIFY(edgesText(body).contains("i" + box(*m, "x").mid(1) + "->" + box(*m, "gx") +
                                     " plain fmatrix"));
    QVERIFY(edgesText(body).contains(box(*m, "gy") + "->o" + box(*m, "gy").mid(1) + " plain ×2"));
  }

  void testLargeLevels() {
    // 20,000 applies flat (the root level holds them all) and the same in 200 scopes.
    for (bool grouped : {false, true}) {
      auto x = Variable::create(kSquare, "x");
      VarPtr h = x;
      for (int s = 0; s < 200; ++s) {
        std::optional<NameScope> scope;
        if (grouped) scope.emplace("block" + std::to_string(s));
        for (int i = 0; i < 100; ++i) h = i % 2 ? exp(h) : h * x;
      }
      auto m = ViewModel::build(graphOf({x}, {h}));
      QElapsedTimer timer;
      timer.start();
      const LevelGraph root = m->levelGraph(0, m->defaultState(400));
      qInfo("%s: root level of %zu items and %zu edges in %lld ms", grouped ? "grouped" : "flat",
            root.items.size(), root.edges.size(), static_cast<long long>(timer.elapsed()));
      QCOMPARE(root.items.size(), grouped ? std::size_t(2 + 200) : std::size_t(20002));
      QVERIFY2(timer.elapsed() < 1000, "levelGraph is linear in the level's subtree");
    }
  }
};

TSCOPE_GUI_TEST_MAIN(TestLevelGraph)
#include "tst_level_graph.moc"
