// Grouping in the view model: nested scopes, where boxes go, OpFromGraph bodies (nested too, and
// applied twice), visibleItem / revealed / defaultState / allExpanded, the GroupState round trip,
// and the scopes of an imported ONNX ResNet-18.
#include "gui_test_main.h"
// The units under test and their helpers.
#include "engine/io/tsg.h"
#include "engine/ops/basic.h"
#include "engine/ops/control/ifelse.h"
#include "engine/ops/control/scan.h"
#include "engine/ops/graph/op_from_graph.h"
#include "view_model_test_support.h"

#ifdef TSCOPE_HAVE_ONNX
#include "engine/io/onnx/onnx_import.h"
#endif

#include <QDir>
#include <QElapsedTimer>

#include <set>

using namespace tscope::engine;
using namespace tscope::vis;
using namespace tscope::vis::testing;

namespace {
const TensorType kVector(DType::Float32, {3});
VarPtr named(VarPtr v, const std::string& name) {
  v->setName(name);
  return v;
}

// encoder/{layer1, layer2}, decoder: h1, h2 in the layers, d in decoder, e directly in encoder.
std::shared_ptr<const ViewModel> scopedModel() {
  auto x = Variable::create(kVector, "x");
  VarPtr h1, h2, e, d;
  {
    NameScope encoder("encoder");
    {
      NameScope layer("layer1");
      h1 = named(tanh(x), "h1");
    }
    e = named(h1 * 2.0, "e");
    {
      NameScope layer("layer2");
      h2 = named(exp(e), "h2");
    }
  }
  {
    NameScope decoder("decoder");
    d = named(h2 + x, "d");
  }
  return ViewModel::build(graphOf({x}, {d}));
}

std::shared_ptr<const OpFromGraph> geluBlock() {
  auto x = Variable::create(kVector, "gx");
  return opFromGraph({x}, {named(x * sigmoid(x * 1.702), "gy")}, "gelu_block");
}
}  // namespace

class TestViewGroups : public QObject {
  Q_OBJECT

 private slots:
  void testNestedScopes() {
    auto model = scopedModel();
    QCOMPARE(groupPaths(*model),
             QStringList({"", "encoder", "encoder/layer1", "encoder/layer2", "decoder"}));
    const Group& encoder = model->groups()[model->groupByPath("encoder")];
    QCOMPARE(encoder.kind, GroupKind::Scope);
    QCOMPARE(encoder.name, QString("encoder"));
    QCOMPARE(encoder.parent, 0);
    QCOMPARE(encoder.children, (std::vector<int>{model->groupByPath("encoder/layer1"),
                                                 model->groupByPath("encoder/layer2")}));
    const Group& layer2 = model->groups()[model->groupByPath("encoder/layer2")];
    QCOMPARE(layer2.name, QString("layer2"));
    QCOMPARE(layer2.parent, model->groupByPath("encoder"));
    QCOMPARE(layer2.nodes, std::vector<int>{applyNamed(*model, "h2")});
    QCOMPARE(model->groups()[0].kind, GroupKind::Root);
    QCOMPARE(model->groups()[0].children,
             (std::vector<int>{model->groupByPath("encoder"), model->groupByPath("decoder")}));
    // e sits in encoder itself, with its constant 2.0 (consumed only there).
    const int e = applyNamed(*model, "e");
    QCOMPARE(model->nodes()[e].group, model->groupByPath("encoder"));
    QCOMPARE(model->nodes()[model->edges()[model->inEdges(e)[1]].from].group,
             model->groupByPath("encoder"));
    QCOMPARE(encoder.totalNodes, 4);  // h1, e, 2.0, h2
    QCOMPARE(model->groups()[0].totalNodes, static_cast<int>(model->nodes().size()));
    QCOMPARE(model->groupByPath("nowhere"), -1);
    QVERIFY(model->isAncestor(0, model->groupByPath("encoder/layer1")));
    QVERIFY(model->isAncestor(model->groupByPath("encoder"), model->groupByPath("encoder/layer1")));
    QVERIFY(model->isAncestor(model->groupByPath("encoder"), model->groupByPath("encoder")));
    QVERIFY(
        !model->isAncestor(model->groupByPath("decoder"), model->groupByPath("encoder/layer1")));
  }

  void testBoxPlacement() {
    // Note [Box placement]: graph inputs and outputs in the root; parameters without a scope with
    // their consumers (the innermost group holding all of them); an unused output beside its node.
    VarPtr x, w, v, c, a, b, h;
    {
      NameScope net("net");
      x = Variable::create(kVector, "x");  // created in a scope, still the function's input
      w = SharedVariable::create(Tensor::full(DType::Float32, {3}, 1), "w");  // scope "net"
    }
    v = SharedVariable::create(Tensor::full(DType::Float32, {3}, 2), "v");  // no scope
    c = Constant::create(Tensor::full(DType::Float32, {3}, 3), "c");        // no scope
    {
      NameScope net("net");
      {
        NameScope one("one");
        a = named(x * v + c, "a");
      }
      {
        NameScope two("two");
        b = named(a * c, "b");
      }
      h = named(b * w, "h");
    }
    auto model = ViewModel::build(graphOf({x, w, v}, {h}));
    auto groupOf = [&](const char* name) {
      return model->groups()[model->nodes()[boxNamed(*model, name)].group].path;
    };
    QCOMPARE(groupOf("x"), QString(""));
    QCOMPARE(groupOf("h"), QString(""));
    QCOMPARE(groupOf("w"), QString("net"));      // its own scope
    QCOMPARE(groupOf("v"), QString("net/one"));  // its only consumer's group
    QCOMPARE(groupOf("c"), QString("net"));      // consumers in net/one and net/two
  }

  void testUnusedOutputBesideItsNode() {
    auto x = Variable::create(kVector, "x");
    VarPtr y;
    {
      NameScope s("s");
      auto two = std::make_shared<MapsOp>(ViewMap{}, DestroyMap{}, 2)->makeNode({x});
      y = named(two->output(0) * 2.0, "y");
    }
    auto model = ViewModel::build(graphOf({x}, {y}));
    int unused = 0;
    for (const ViewNode& node : model->nodes()) {
      if (node.kind != NodeKind::Variable || node.role != VariableRole::UnusedOutput) continue;
      ++unused;
      QCOMPARE(model->groups()[node.group].path, QString("s"));
    }
    QCOMPARE(unused, 1);
  }

  void testOpFromGraphGroup() {
    const auto gelu = geluBlock();
    auto x = Variable::create(kVector, "x");
    VarPtr y;
    {
      NameScope mlp("mlp");
      y = named((*gelu)({x * 3.0}), "y");
    }
    auto model = ViewModel::build(graphOf({x}, {y}));
    const Apply* ofgApply = model->graph().outputs()[0]->owner();
    const QString path = "mlp#" + QString::number(ofgApply->id());
    const int g = model->groupByPath(path);
    QVERIFY2(g > 0, qPrintable(groupPaths(*model).join(", ")));
    const Group& group = model->groups()[g];
    QCOMPARE(group.kind, GroupKind::OpFromGraph);
    QCOMPARE(group.name, QString("gelu_block"));
    QCOMPARE(group.parent, model->groupByPath("mlp"));
    QCOMPARE(group.ofgNode, ofgApply);
    QCOMPARE(model->nodeOfApply(ofgApply->id()), group.ofgViewNode);
    const ViewNode& ofgNode = model->nodes()[group.ofgViewNode];
    QCOMPARE(ofgNode.group, g);
    QCOMPARE(ofgNode.label, QString("OpFromGraph{gelu_block}\ny"));
    QVERIFY(model->inEdges(group.ofgViewNode).empty());
    QVERIFY(model->outEdges(group.ofgViewNode).empty());
    // The body: boxes gx (input), 1.702 (constant), gy (output), two muls and a sigmoid.
    const int gx = boxNamed(*model, "gx"), gy = boxNamed(*model, "gy");
    QCOMPARE(model->nodes()[gx].role, VariableRole::Input);
    QCOMPARE(model->nodes()[gy].role, VariableRole::Output);
    QCOMPARE(model->nodes()[gx].group, g);
    QCOMPARE(model->nodes()[gx].graph, &gelu->body());
    QCOMPARE(group.totalNodes, 7);  // the OpFromGraph node, gx, 1.702, gy, mul, sigmoid, mul
    // Outer producer -> inner input box; inner output box -> outer output box.
    const int scaled = model->edges()[model->inEdges(gx)[0]].from;
    QCOMPARE(model->nodes()[scaled].apply->op().str(), std::string("Elemwise{mul}"));
    QCOMPARE(model->nodes()[scaled].group, model->groupByPath("mlp"));
    QCOMPARE(model->edges()[model->inEdges(gx)[0]].inputIndex, 0);
    QCOMPARE(edgesBetween(*model, gy, boxNamed(*model, "y")).size(), std::size_t(1));
    // The outer output is drawn by the inner output box.
    QCOMPARE(model->nodeShowing(ofgApply->outputRef(0).id()), boxNamed(*model, "y"));
    QCOMPARE(model->nodeOfVariable(ofgApply->input(0)->id()), -1);
  }

  // Note [Branch groups]: an IfElse is a group holding one group per branch; its inputs feed both
  // branches' input boxes and its output leaves from both branches' output boxes.
  void testIfElseShowsBothBranches() {
    auto x = Variable::create(kVector, "x");
    auto c = Variable::create(TensorType(DType::Bool, {}), "c");
    VarPtr y = named(ifelse(c, named(tanh(x), "then_y"), named(exp(x), "else_y")), "y");
    auto model = ViewModel::build(graphOf({c, x}, {y}));
    const Apply* node = model->graph().outputs()[0]->owner();
    QCOMPARE(node->op().name(), std::string("IfElse"));
    const QString path = "#" + QString::number(node->id());
    const int g = model->groupByPath(path);
    QVERIFY2(g > 0, qPrintable(groupPaths(*model).join(", ")));
    const Group& group = model->groups()[g];
    QCOMPARE(group.kind, GroupKind::OpFromGraph);
    QCOMPARE(group.ofgNode, node);
    QCOMPARE(model->nodeOfApply(node->id()), group.ofgViewNode);
    const int thenGroup = model->groupByPath(path + "/then");
    const int elseGroup = model->groupByPath(path + "/else");
    QVERIFY(thenGroup > 0 && elseGroup > 0);
    QCOMPARE(model->groups()[thenGroup].parent, g);
    QCOMPARE(model->groups()[elseGroup].parent, g);
    QCOMPARE(model->groups()[thenGroup].name, QString("then"));
    QCOMPARE(model->groups()[thenGroup].kind, GroupKind::Scope);
    QCOMPARE(group.children, (std::vector<int>{thenGroup, elseGroup}));
    const int thenY = boxNamed(*model, "then_y"), elseY = boxNamed(*model, "else_y");
    QVERIFY(thenY >= 0 && elseY >= 0);
    QCOMPARE(model->nodes()[thenY].group, thenGroup);
    QCOMPARE(model->nodes()[elseY].group, elseGroup);
    // Both branches compute: a tanh in one, an exp in the other.
    auto opsIn = [&](int grp) {
      QStringList ops;
      for (int n : model->groups()[grp].nodes)
        if (model->nodes()[n].apply)
          ops << QString::fromStdString(model->nodes()[n].apply->op().str());
      return ops;
    };
    QCOMPARE(opsIn(thenGroup), QStringList{"Elemwise{tanh}"});
    QCOMPARE(opsIn(elseGroup), QStringList{"Elemwise{exp}"});
    // c and x each feed one input box per branch.
    for (const char* outer : {"c", "x"}) {
      std::set<int> groups;
      for (int e : model->outEdges(boxNamed(*model, outer)))
        groups.insert(model->nodes()[model->edges()[e].to].group);
      QCOMPARE(groups, (std::set<int>{thenGroup, elseGroup}));
    }
    // y is reached from both branches' outputs.
    const int yBox = boxNamed(*model, "y");
    QCOMPARE(edgesBetween(*model, thenY, yBox).size(), std::size_t(1));
    QCOMPARE(edgesBetween(*model, elseY, yBox).size(), std::size_t(1));
    QCOMPARE(model->inEdges(yBox).size(), std::size_t(2));
    // Expanded, the node's level shows the two branches as groups.
    GroupState state;
    state.setExpanded(path, true);
    const LevelGraph level = model->levelGraph(g, state);
    int branchItems = 0;
    for (const LevelItem& item : level.items)
      if (item.kind == LevelItem::Kind::CollapsedGroup) ++branchItems;
    QCOMPARE(branchItems, 2);
    // Revealing a node inside a branch opens the IfElse group and the branch.
    const GroupState revealed = model->revealed(thenY, GroupState());
    QVERIFY(revealed.isExpanded(path) && revealed.isExpanded(path + "/then"));
  }

  // A Scan is drawn yellow (d3viz's colour) and expands into its body; each outer input feeds the
  // body's input boxes it stands for (x its slice, h0 the state, w the non-sequence; nSteps none).
  void testScanShowsItsBody() {
    auto x = Variable::create(TensorType(DType::Float32, {5, 3}), "x");
    auto h0 = Variable::create(kVector, "h0");
    auto w = Variable::create(kVector, "w");
    VarPtr y = named(scan(
                         [](const std::vector<VarPtr>& a) {  // x[t], h0[t-1], w
                           return std::vector<VarPtr>{named(tanh(a[0] * a[2] + a[1]), "step")};
                         },
                         {x}, {h0}, {w}, {}, -1, {.label = "rnn"})[0],
                     "y");
    auto model = ViewModel::build(graphOf({x, h0, w}, {y}));
    const Apply* node = model->graph().outputs()[0]->owner();
    QCOMPARE(node->op().name(), std::string("Scan"));
    const int g = model->groupByPath("#" + QString::number(node->id()));
    QVERIFY2(g > 0, qPrintable(groupPaths(*model).join(", ")));
    QCOMPARE(model->groups()[g].name, QString("Scan{rnn}"));
    QCOMPARE(model->nodes()[model->nodeOfApply(node->id())].fill, QColor("yellow"));
    auto feeds = [&](const char* outer) {
      QStringList names;
      for (int e : model->outEdges(boxNamed(*model, outer)))
        names << model->nodes()[model->edges()[e].to].label;
      names.sort();
      return names.join(",");
    };
    QVERIFY2(feeds("x").contains("x[t]"), qPrintable(feeds("x")));
    QVERIFY2(feeds("h0").contains("h0[t-1]"), qPrintable(feeds("h0")));
    QVERIFY2(!feeds("h0").contains("x[t]"), qPrintable(feeds("h0")));
    QVERIFY2(feeds("w").contains("w"), qPrintable(feeds("w")));
  }

  void testOpFromGraphAppliedTwiceAndNested() {
    const auto gelu = geluBlock();
    auto u = Variable::create(kVector, "u");
    const auto ffn = opFromGraph({u}, {named((*gelu)({u * 2.0}), "fy")}, "ffn_block");
    auto x = Variable::create(kVector, "x");
    auto first = named((*ffn)({x}), "first");
    auto second = named((*ffn)({first}), "second");
    auto model = ViewModel::build(graphOf({x}, {second}));
    // Two bodies of ffn_block at the root, each with its own gelu_block body inside.
    std::vector<int> ffnGroups, geluGroups;
    for (std::size_t i = 0; i < model->groups().size(); ++i) {
      const Group& group = model->groups()[i];
      if (group.name == "ffn_block") ffnGroups.push_back(static_cast<int>(i));
      if (group.name == "gelu_block") geluGroups.push_back(static_cast<int>(i));
    }
    QCOMPARE(ffnGroups.size(), std::size_t(2));
    QCOMPARE(geluGroups.size(), std::size_t(2));
    for (int k = 0; k < 2; ++k) {
      const Group& outer = model->groups()[ffnGroups[k]];
      const Group& inner = model->groups()[geluGroups[k]];
      QCOMPARE(outer.parent, 0);
      QCOMPARE(inner.parent, ffnGroups[k]);
      QVERIFY2(inner.path.startsWith(outer.path + "#"), qPrintable(inner.path));
      QCOMPARE(inner.path.count('#'), 2);
      QCOMPARE(inner.totalNodes, 7);
      QCOMPARE(outer.totalNodes, 1 + 4 + 7);  // its node, u, 2.0, fy, mul; gelu's body
    }
    QVERIFY(model->groups()[ffnGroups[0]].path != model->groups()[ffnGroups[1]].path);
    // Each body instance has its own boxes: the edge first-body-output -> second-body-input exists.
    int fyBoxes = 0;
    for (const ViewNode& node : model->nodes())
      fyBoxes += node.kind == NodeKind::Variable && node.variable->name() == "fy";
    QCOMPARE(fyBoxes, 2);
    int crossing = 0;
    for (const ViewEdge& edge : model->edges())
      crossing += model->nodes()[edge.from].group == ffnGroups[0] &&
                  model->nodes()[edge.to].group == ffnGroups[1];
    QCOMPARE(crossing, 1);
    // "first" has no box of its own: the first body's output box draws it.
    const Variable& firstVar = *model->graph().outputs()[0]->owner()->input(0);
    const int showing = model->nodeShowing(firstVar.id());
    QCOMPARE(model->nodes()[showing].group, ffnGroups[0]);
    QCOMPARE(model->nodes()[showing].variable->name(), std::string("fy"));
    QCOMPARE(model->nodeOfApply(firstVar.owner()->id()), model->groups()[ffnGroups[0]].ofgViewNode);
  }

  void testVisibleItemAndRevealed() {
    auto model = scopedModel();
    const int h1 = applyNamed(*model, "h1");
    const int encoder = model->groupByPath("encoder"),
              layer1 = model->groupByPath("encoder/layer1");
    GroupState none;
    LevelItem item = model->visibleItem(h1, none);
    QCOMPARE(item.kind, LevelItem::Kind::CollapsedGroup);
    QCOMPARE(item.index, encoder);  // the outermost collapsed group
    QCOMPARE(item.key, "g" + QString::number(encoder));
    GroupState open;
    open.setExpanded("encoder", true);
    QCOMPARE(model->visibleItem(h1, open).index, layer1);
    // An inner group open under a collapsed parent does not show the node.
    GroupState innerOnly;
    innerOnly.setExpanded("encoder/layer1", true);
    QCOMPARE(model->visibleItem(h1, innerOnly).index, encoder);
    const GroupState revealed = model->revealed(h1, innerOnly);
    QCOMPARE(revealed.toStringList(), QStringList({"encoder", "encoder/layer1"}));
    item = model->visibleItem(h1, revealed);
    QCOMPARE(item.kind, LevelItem::Kind::Node);
    QCOMPARE(item.index, h1);
    QCOMPARE(item.key, "n" + QString::number(h1));
    // Root members are always visible.
    QCOMPARE(model->visibleItem(boxNamed(*model, "x"), none).kind, LevelItem::Kind::Node);
    QCOMPARE(model->revealed(boxNamed(*model, "x"), none), none);
  }

  void testOpFromGraphVisibility() {
    const auto gelu = geluBlock();
    auto x = Variable::create(kVector, "x");
    auto y = named((*gelu)({x}), "y");
    auto model = ViewModel::build(graphOf({x}, {y}));
    const int g =
        model->groupByPath("#" + QString::number(model->graph().outputs()[0]->owner()->id()));
    const Group& group = model->groups()[g];
    // Collapsed: the OpFromGraph node is the collapsed group; revealing it keeps it collapsed.
    QCOMPARE(model->visibleItem(group.ofgViewNode, {}).kind, LevelItem::Kind::CollapsedGroup);
    QCOMPARE(model->revealed(group.ofgViewNode, {}), GroupState());
    // Expanded: the cluster stands for it; its body's nodes show themselves.
    GroupState open;
    open.setExpanded(group.path, true);
    const LevelItem item = model->visibleItem(group.ofgViewNode, open);
    QCOMPARE(item.kind, LevelItem::Kind::ExpandedGroup);
    QCOMPARE(item.index, g);
    QCOMPARE(model->visibleItem(boxNamed(*model, "gx"), open).kind, LevelItem::Kind::Node);
    QCOMPARE(model->revealed(boxNamed(*model, "gx"), {}), open);
  }

  void testDefaultState() {
    auto model = scopedModel();  // root: x, d's box, encoder, decoder: 4 items
    // encoder opens into e, 2.0, layer1, layer2 (+3 items), decoder into d (+0), each layer into
    // its one node (+0); a group too big to open keeps its children closed.
    QCOMPARE(model->defaultState(3).toStringList(), QStringList());
    QCOMPARE(model->defaultState(4).toStringList(), QStringList({"decoder"}));
    QCOMPARE(model->defaultState(6).toStringList(), QStringList({"decoder"}));
    QCOMPARE(model->defaultState(7), model->allExpanded());
    QCOMPARE(model->defaultState(400), model->allExpanded());
    QCOMPARE(model->allExpanded().toStringList(),
             QStringList({"decoder", "encoder", "encoder/layer1", "encoder/layer2"}));
  }

  void testGroupStateRoundTrip() {
    GroupState state;
    QVERIFY(state.isExpanded(""));  // the root, always
    state.setExpanded("", false);
    QVERIFY(state.isExpanded(""));
    QVERIFY(state.expanded().isEmpty());
    state.setExpanded("b/c", true);
    state.setExpanded("a", true);
    state.toggle("#12");
    state.setExpanded("a", true);  // twice: once
    QCOMPARE(state.toStringList(), QStringList({"#12", "a", "b/c"}));
    const GroupState back = GroupState::fromStringList(state.toStringList());
    QCOMPARE(back, state);
    state.toggle("#12");
    QVERIFY(!state.isExpanded("#12"));
    QVERIFY(!(back == state));
    QCOMPARE(GroupState::fromStringList({"", "x"}).toStringList(), QStringList({"x"}));
  }

  void testExampleFiles_data() {
    QTest::addColumn<QString>("path");
    const QDir dir(TSCOPE_SOURCE_DIR "/examples/graphs");
    for (const QString& file : dir.entryList({"*.tsg"}, QDir::Files, QDir::Name))
      QTest::newRow(qPrintable(file)) << dir.filePath(file);
  }
  void testExampleFiles() {
    // Every shipped graph builds, original and optimized, into a consistent model: each node in
    // its group's member list, edges between existing nodes, every level computable.
    QFETCH(QString, path);
    io::TsgDocument doc = io::loadTsg(path.toStdString());
    std::vector<std::shared_ptr<const FunctionGraph>> graphs{std::move(doc.original)};
    if (doc.optimized) graphs.emplace_back(std::move(doc.optimized));
    for (const auto& graph : graphs) {
      auto model = ViewModel::build(graph);
      QCOMPARE(model->nodeOfApply(graph->nodes().front()->id()) >= 0, true);
      int members = 0;
      for (std::size_t gi = 0; gi < model->groups().size(); ++gi) {
        for (int node : model->groups()[gi].nodes)
          QCOMPARE(model->nodes()[node].group, static_cast<int>(gi));
        members += static_cast<int>(model->groups()[gi].nodes.size());
        QCOMPARE(model->groupByPath(model->groups()[gi].path), static_cast<int>(gi));
        const LevelGraph level = model->levelGraph(static_cast<int>(gi), model->allExpanded());
        for (const LevelEdge& edge : level.edges) QVERIFY(edge.from != edge.to);
      }
      QCOMPARE(members, static_cast<int>(model->nodes().size()));
      for (const ViewEdge& edge : model->edges()) {
        QVERIFY(edge.from >= 0 && edge.from < static_cast<int>(model->nodes().size()));
        QVERIFY(edge.to >= 0 && edge.to < static_cast<int>(model->nodes().size()));
        QVERIFY(edge.value);
      }
      for (const Apply* node : graph->nodes()) QVERIFY(model->nodeOfApply(node->id()) >= 0);
      for (const VarPtr& input : graph->inputs()) QVERIFY(model->nodeOfVariable(input->id()) >= 0);
    }
  }

  void testResNetScopes() {
#ifndef TSCOPE_HAVE_ONNX
    QSKIP("built without the ONNX reader");
#else
    auto imported = io::loadOnnx(TSCOPE_TEST_DATA_DIR "/onnx/models/resnet18.onnx");
    std::shared_ptr<const FunctionGraph> graph(std::move(imported.document.original));
    QElapsedTimer timer;
    timer.start();
    auto model = ViewModel::build(graph);
    qInfo("ResNet-18: %zu view nodes, %zu groups, built in %lld ms", model->nodes().size(),
          model->groups().size(), static_cast<long long>(timer.elapsed()));
    const QStringList paths = groupPaths(*model);
    for (const char* expected : {"layer1", "layer1/layer1.0", "layer1/layer1.1", "layer4/layer4.1"})
      QVERIFY2(paths.contains(expected), qPrintable(expected + QString(" in ") + paths.join(", ")));
    const Group& block = model->groups()[model->groupByPath("layer1/layer1.0")];
    QCOMPARE(block.parent, model->groupByPath("layer1"));
    QCOMPARE(block.name, QString("layer1.0"));
    // The parameters go with their layers: no shared box in the root.
    int rootShared = 0, shared = 0;
    for (const ViewNode& node : model->nodes()) {
      if (node.kind != NodeKind::Variable || node.role != VariableRole::Shared) continue;
      ++shared;
      rootShared += node.group == 0;
    }
    QVERIFY(shared > 20);
    QCOMPARE(rootShared, 0);
    // The default view fits its budget and opens the top-level layers.
    const GroupState state = model->defaultState(400);
    QVERIFY(state.isExpanded("layer1"));
    const LevelGraph root = model->levelGraph(0, state);
    QVERIFY(root.items.size() < 60);
    QVERIFY(!root.edges.empty());
#endif
  }
};

TSCOPE_GUI_TEST_MAIN(TestViewGroups)
#include "tst_view_groups.moc"
