// Placement by use and parameters in the view model (issue 24): shared variables and constants in
// the innermost group holding their readers (one group, several groups, nested groups, a constant
// shared by two layers), scope-less nodes (PyTorch's Identity on initializers, chains of them) in
// the group of what they touch, the old placement kept behind BuildOptions, which boxes count as
// parameters, the default mode, and levelGraph / visibleItem / revealed with badges.
#include "gui_test_main.h"
// The units under test and their helpers.
#include "engine/ops/basic.h"
#include "engine/ops/graph/op_from_graph.h"
#include "engine/ops/shape/dimshuffle.h"
#include "view_model_test_support.h"

#include <algorithm>

#ifdef TSCOPE_HAVE_ONNX
#include "engine/io/onnx/onnx_import.h"
#endif

using namespace tscope::engine;
using namespace tscope::vis;
using namespace tscope::vis::testing;

namespace {

const TensorType kVector(DType::Float32, {3});

VarPtr named(VarPtr v, const std::string& name) {
  v->setName(name);
  return v;
}

VarPtr weight(const std::string& name, double value = 1) {
  return SharedVariable::create(Tensor::full(DType::Float32, {3}, value), name);
}

QString groupPathOf(const ViewModel& model, int node) {
  return model.groups()[std::size_t(model.nodes()[std::size_t(node)].group)].path;
}

// The Apply node reading `input` at position 0 whose op is `op` (by name); -1 when none.
int applyReading(const ViewModel& model, int inputNode, const char* op) {
  for (int e : model.outEdges(inputNode)) {
    const int to = model.edges()[std::size_t(e)].to;
    const ViewNode& node = model.nodes()[std::size_t(to)];
    if (node.kind == NodeKind::Apply && node.apply->op().name() == op) return to;
  }
  return -1;
}

// The innermost group holding every reader of `node`.
[[maybe_unused]] int readersGroup(const ViewModel& model, int node) {
  int group = -1;
  for (int e : model.outEdges(node)) {
    int g = model.nodes()[std::size_t(model.edges()[std::size_t(e)].to)].group;
    if (group < 0) {
      group = g;
      continue;
    }
    while (!model.isAncestor(group, g)) group = model.groups()[std::size_t(group)].parent;
  }
  return group;
}

}  // namespace

class TestParameterPlacement : public QObject {
  Q_OBJECT

 private slots:
  void testOneGroup() {
    // w and its scope-less Identity are read in layer1 only: both are drawn there.
    auto x = Variable::create(kVector, "x");
    auto w = weight("w");
    VarPtr wi = named(identity(w), "wi");
    VarPtr h;
    {
      NameScope layer("layer1");
      h = named(x * wi, "h");
    }
    auto model = ViewModel::build(graphOf({x, w}, {h}));
    QCOMPARE(groupPathOf(*model, boxNamed(*model, "w")), QString("layer1"));
    const int id = applyNamed(*model, "wi");
    QCOMPARE(groupPathOf(*model, id), QString("layer1"));
    // The file's scope is unchanged: the node has none, and its tooltip names none.
    QVERIFY(model->nodes()[std::size_t(id)].apply->scope().empty());
    QVERIFY(!model->nodes()[std::size_t(id)].tooltip.contains("scope"));
    QCOMPARE(groupPathOf(*model, boxNamed(*model, "x")), QString(""));  // a graph input
  }

  void testSeveralGroups() {
    // Read by two sibling layers: w and its Identity stay at the root, the level holding both.
    auto x = Variable::create(kVector, "x");
    auto w = weight("w");
    VarPtr wi = named(identity(w), "wi");
    VarPtr a, b;
    {
      NameScope layer("layer1");
      a = named(x * wi, "a");
    }
    {
      NameScope layer("layer2");
      b = named(a + wi, "b");
    }
    auto model = ViewModel::build(graphOf({x, w}, {b}));
    QCOMPARE(groupPathOf(*model, boxNamed(*model, "w")), QString(""));
    QCOMPARE(groupPathOf(*model, applyNamed(*model, "wi")), QString(""));
  }

  void testNestedGroups() {
    // Read in encoder/layer1 and encoder/layer2: the innermost group holding both is encoder.
    auto x = Variable::create(kVector, "x");
    auto w = weight("w");
    VarPtr wi = named(identity(w), "wi");
    auto v = weight("v", 2);
    VarPtr a, b;
    {
      NameScope encoder("encoder");
      {
        NameScope layer("layer1");
        a = named(x * wi, "a");
      }
      {
        NameScope layer("layer2");
        b = named(a + wi * v, "b");
      }
    }
    auto model = ViewModel::build(graphOf({x, w, v}, {b}));
    QCOMPARE(groupPathOf(*model, boxNamed(*model, "w")), QString("encoder"));
    QCOMPARE(groupPathOf(*model, applyNamed(*model, "wi")), QString("encoder"));
    QCOMPARE(groupPathOf(*model, boxNamed(*model, "v")), QString("encoder/layer2"));
  }

  void testConstantSharedByTwoLayers() {
    // One constant read by block/one and block/two: drawn in block; another read by block/one and
    // a node at the root: drawn at the root.
    auto x = Variable::create(kVector, "x");
    auto c = Constant::create(Tensor::full(DType::Float32, {3}, 3), "c");
    auto k = Constant::create(Tensor::full(DType::Float32, {3}, 4), "k");
    VarPtr a, b;
    {
      NameScope block("block");
      {
        NameScope one("one");
        a = named(x * c + k, "a");
      }
      {
        NameScope two("two");
        b = named(a - c, "b");
      }
    }
    VarPtr out;
    {
      NameScope head("head");
      out = named(b * k, "out");
    }
    auto model = ViewModel::build(graphOf({x}, {out}));
    QCOMPARE(groupPathOf(*model, boxNamed(*model, "c")), QString("block"));
    QCOMPARE(groupPathOf(*model, boxNamed(*model, "k")), QString(""));
    // Both are parameters: every use is an input of a drawn node.
    QVERIFY(model->nodes()[std::size_t(boxNamed(*model, "c"))].parameter);
    QCOMPARE(model->parameterCount(), 2);
  }

  void testIdentityChains() {
    // Identity(Identity(w)) read by layer3/layer3.1/conv2 only: the whole chain goes there; the
    // old placement (BuildOptions::placeByUse false) leaves the chain and w at the root.
    auto x = Variable::create(kVector, "x");
    auto w = weight("w");
    VarPtr i1 = named(identity(w), "i1");
    VarPtr i2 = named(identity(i1), "i2");
    VarPtr h;
    {
      NameScope l3("layer3");
      NameScope l31("layer3.1");
      NameScope conv("conv2");
      h = named(x * i2, "h");
    }
    auto graph = graphOf({x, w}, {h});
    auto model = ViewModel::build(graph);
    for (const char* name : {"i1", "i2"})
      QCOMPARE(groupPathOf(*model, applyNamed(*model, name)), QString("layer3/layer3.1/conv2"));
    QCOMPARE(groupPathOf(*model, boxNamed(*model, "w")), QString("layer3/layer3.1/conv2"));

    auto old = ViewModel::build(graph, {}, false, {.placeByUse = false});
    for (const char* name : {"i1", "i2"})
      QCOMPARE(groupPathOf(*old, applyNamed(*old, name)), QString(""));
    QCOMPARE(groupPathOf(*old, boxNamed(*old, "w")), QString(""));
  }

  void testScopelessNodesStayWhenTheyTouchTheRoot() {
    // A scope-less node reading a graph input, or whose value is a graph output, stays at the
    // root; one between two layers stays at the level holding both.
    auto x = Variable::create(kVector, "x");
    VarPtr t = named(tanh(x), "t");  // reads the graph input
    VarPtr a, b;
    {
      NameScope layer("layer1");
      a = named(exp(t), "a");
    }
    VarPtr mid = named(a * 2.0, "mid");  // from layer1 to layer2
    {
      NameScope layer("layer2");
      b = named(sin(mid), "b");
    }
    VarPtr out = named(b + 1.0, "out");  // returned
    auto model = ViewModel::build(graphOf({x}, {out}));
    for (const char* name : {"t", "mid", "out"})
      QCOMPARE(groupPathOf(*model, applyNamed(*model, name)), QString(""));
  }

  void testScopelessNodeOfARootValueStays() {
    // transpose(t) with t computed at the root and read only inside layer1/inner: its input does
    // not lie in the group, so it stays at the root (the rule: inputs and readers).
    auto x = Variable::create(TensorType(DType::Float32, {3, 3}), "x");
    VarPtr t = named(tanh(x), "t");
    VarPtr v = named(transpose(t), "v");
    VarPtr y;
    {
      NameScope layer("layer1");
      NameScope inner("inner");
      y = named(exp(v), "y");
    }
    auto model = ViewModel::build(graphOf({x}, {y}));
    QCOMPARE(groupPathOf(*model, applyNamed(*model, "v")), QString(""));
    QCOMPARE(groupPathOf(*model, applyNamed(*model, "t")), QString(""));
    QCOMPARE(groupPathOf(*model, applyNamed(*model, "y")), QString("layer1/inner"));
  }

  void testUnusedOutputFollowsItsNode() {
    // A scope-less two-output node on w read in layer1: it moves there, and the box of its unused
    // second output goes with it.
    auto x = Variable::create(kVector, "x");
    auto w = weight("w");
    auto two = std::make_shared<MapsOp>(ViewMap{}, DestroyMap{}, 2)->makeNode({w});
    two->output(0)->setName("t0");
    VarPtr h;
    {
      NameScope layer("layer1");
      h = named(x * two->output(0), "h");
    }
    auto model = ViewModel::build(graphOf({x, w}, {h}));
    const int node = applyNamed(*model, "t0");
    QVERIFY(node >= 0);
    QCOMPARE(groupPathOf(*model, node), QString("layer1"));
    int unused = 0;
    for (std::size_t i = 0; i < model->nodes().size(); ++i) {
      if (model->nodes()[i].role != VariableRole::UnusedOutput ||
          model->nodes()[i].kind != NodeKind::Variable)
        continue;
      ++unused;
      QCOMPARE(groupPathOf(*model, int(i)), QString("layer1"));
    }
    QCOMPARE(unused, 1);
    QCOMPARE(groupPathOf(*model, boxNamed(*model, "w")), QString("layer1"));
  }

  void testWhatIsAParameter() {
    // Parameters: constants and shared variables whose every use is an input of a drawn node.
    // Not: a graph input, a constant returned as a graph output, a value fed to an OpFromGraph
    // body (its edge ends at the body's input box).
    auto x = Variable::create(kVector, "x");
    auto w = weight("w");
    auto ret = Constant::create(Tensor::full(DType::Float32, {3}, 7), "ret");
    auto fed = weight("fed", 3);
    auto gx = Variable::create(kVector, "gx");
    auto block = opFromGraph({gx}, {named(gx * 2.0, "gy")}, "block");
    VarPtr h = named(x * w + (*block)({fed}), "h");
    auto model = ViewModel::build(graphOf({x, w, fed}, {h, ret}));
    QVERIFY(model->nodes()[std::size_t(boxNamed(*model, "w"))].parameter);
    QVERIFY(!model->nodes()[std::size_t(boxNamed(*model, "x"))].parameter);
    QVERIFY(!model->nodes()[std::size_t(boxNamed(*model, "ret"))].parameter);
    QVERIFY(!model->nodes()[std::size_t(boxNamed(*model, "fed"))].parameter);
    // The 2.0 inside the body is one: bodies have parameters too.
    int inner = 0;
    for (const ViewNode& node : model->nodes())
      if (node.parameter && node.graph != &model->graph()) ++inner;
    QCOMPARE(inner, 1);
    QCOMPARE(model->parameterCount(), 2);
    // Its badge names it, its type and its shape.
    const ViewNode& wv = model->nodes()[std::size_t(boxNamed(*model, "w"))];
    QCOMPARE(wv.badge, QString("w  fvector (3,)"));
    // The reader lists it as its badge edge, in input order.
    const int mul = applyReading(*model, boxNamed(*model, "x"), "Elemwise");
    QVERIFY(mul >= 0);
    QCOMPARE(int(model->parameterEdges(mul).size()), 1);
    QCOMPARE(model->edges()[std::size_t(model->parameterEdges(mul)[0])].from,
             boxNamed(*model, "w"));
    QCOMPARE(model->badgeHost(boxNamed(*model, "w")), mul);
    QCOMPARE(model->badgeHost(boxNamed(*model, "x")), -1);
  }

  void testFoldedApplies() {
    // A node computed from parameters alone and read by nodes (a weight's transpose, a chain of
    // Identities on a constant) is a parameter too: one row in its reader, named after its first
    // input, with that input's colour and value; a transpose of a graph input is not. Only the
    // constants and shared variables count.
    auto x = Variable::create(TensorType(DType::Float32, {3, 3}), "x");
    VarPtr w = SharedVariable::create(Tensor::full(DType::Float32, {3, 3}, 1), "w");
    VarPtr b = Constant::create(Tensor::full(DType::Float32, {3, 3}, 2), "b");
    VarPtr wt = named(transpose(w), "wt");
    VarPtr bi = named(identity(identity(b)), "bi");
    VarPtr h;
    {
      NameScope layer("layer1");
      h = named(transpose(x) * wt + bi, "h");
    }
    auto model = ViewModel::build(graphOf({x, w}, {h}));
    QCOMPARE(model->parameterCount(), 2);
    const int wtNode = applyNamed(*model, "wt"), biNode = applyNamed(*model, "bi");
    QVERIFY(model->nodes()[std::size_t(wtNode)].parameter);
    QVERIFY(model->nodes()[std::size_t(biNode)].parameter);
    QVERIFY(model->parameterEdges(wtNode).empty());  // no rows of its own
    int xt = -1;
    for (int e : model->outEdges(boxNamed(*model, "x"))) xt = model->edges()[std::size_t(e)].to;
    QVERIFY(!model->nodes()[std::size_t(xt)].parameter);  // reads a graph input
    const int mul = model->badgeHost(wtNode);
    QVERIFY(mul >= 0);
    QCOMPARE(int(model->parameterEdges(mul).size()), 1);
    const ViewNode& row = model->nodes()[std::size_t(wtNode)];
    QVERIFY2(row.badge.startsWith("w  DimShuffle{1,0}  fmatrix (3, 3)"), qPrintable(row.badge));
    QCOMPARE(row.badgeMark, QColor("yellowgreen"));
    QCOMPARE(row.badgeRole, VariableRole::Shared);
    QCOMPARE(row.badgeValue, model->nodes()[std::size_t(boxNamed(*model, "w"))].variable);
    const ViewNode& chain = model->nodes()[std::size_t(biNode)];
    QVERIFY2(chain.badge.startsWith("b  "), qPrintable(chain.badge));
    QCOMPARE(chain.badgeMark, QColor("springgreen"));
    // Under badges the level holds neither the folded nodes nor the parameters.
    const LevelGraph level = model->levelGraph(model->groupByPath("layer1"), model->allExpanded(),
                                               ParameterMode::Badges);
    for (const LevelItem& item : level.items)
      if (item.kind == LevelItem::Kind::Node)
        QVERIFY(!model->nodes()[std::size_t(item.index)].parameter);
    const LevelGraph root = model->levelGraph(0, model->allExpanded(), ParameterMode::Badges);
    for (const LevelItem& item : root.items)
      if (item.kind == LevelItem::Kind::Node)
        QVERIFY(!model->nodes()[std::size_t(item.index)].parameter);
  }

  void testDefaultModeThreshold() {
    // Badges by default above kBadgesAbove parameters, boxes up to it.
    for (int count : {ViewModel::kBadgesAbove, ViewModel::kBadgesAbove + 1}) {
      auto x = Variable::create(kVector, "x");
      std::vector<VarPtr> inputs{x};
      VarPtr h = x;
      for (int i = 0; i < count; ++i) {
        auto w = weight("w" + std::to_string(i));
        inputs.push_back(w);
        h = h * w;
      }
      auto model = ViewModel::build(graphOf(inputs, {h}));
      QCOMPARE(model->parameterCount(), count);
      QCOMPARE(model->defaultParameterMode(),
               count > ViewModel::kBadgesAbove ? ParameterMode::Badges : ParameterMode::Boxes);
    }
  }

  void testModeNames() {
    for (ParameterMode mode : {ParameterMode::Boxes, ParameterMode::Badges, ParameterMode::Hidden})
      QCOMPARE(parameterModeFromName(parameterModeName(mode)), std::optional(mode));
    QCOMPARE(parameterModeName(ParameterMode::Badges), QString("badges"));
    QVERIFY(!parameterModeFromName("Badge").has_value());
    QVERIFY(!parameterModeFromName("").has_value());
  }

  void testLevelGraphWithBadges() {
    // Badges and Hidden leave the parameters and their edges out of the level; the parameter
    // stands for its first reader in visibleItem, and revealing it opens the way to that reader.
    auto x = Variable::create(kVector, "x");
    auto w = weight("w");
    VarPtr h;
    {
      NameScope layer("layer1");
      h = named(tanh(x * w), "h");
    }
    auto model = ViewModel::build(graphOf({x, w}, {h}));
    const int wn = boxNamed(*model, "w"), layer = model->groupByPath("layer1");
    const GroupState open = model->allExpanded();
    auto hasItem = [](const LevelGraph& level, int node) {
      for (const LevelItem& item : level.items)
        if (item.kind == LevelItem::Kind::Node && item.index == node) return true;
      return false;
    };
    const LevelGraph boxes = model->levelGraph(layer, open, ParameterMode::Boxes);
    QVERIFY(hasItem(boxes, wn));
    for (ParameterMode mode : {ParameterMode::Badges, ParameterMode::Hidden}) {
      const LevelGraph level = model->levelGraph(layer, open, mode);
      QVERIFY(!hasItem(level, wn));
      QCOMPARE(level.items.size() + 1, boxes.items.size());
      QCOMPARE(level.edges.size() + 1, boxes.edges.size());
      for (const LevelEdge& edge : level.edges)
        for (int e : edge.edges) QVERIFY(model->edges()[std::size_t(e)].from != wn);
    }
    const int host = model->badgeHost(wn);
    QCOMPARE(model->visibleItem(wn, open, ParameterMode::Badges).index, host);
    QCOMPARE(model->visibleItem(wn, open, ParameterMode::Boxes).index, wn);
    QCOMPARE(model->visibleItem(wn, GroupState(), ParameterMode::Badges).kind,
             LevelItem::Kind::CollapsedGroup);
    QVERIFY(model->revealed(wn, GroupState()).isExpanded("layer1"));
  }

  void testOnnxModels() {
    // In the imported ResNet-18 and transformer fixtures every parameter without a scope sits in
    // the innermost group holding its readers, a scope-less node on initializers sits with its
    // readers, no more parameters are at the root than with the old placement, and the default
    // mode follows the parameter count.
#ifndef TSCOPE_HAVE_ONNX
    QSKIP("built without the ONNX reader");
#else
    for (const char* file : {"resnet18.onnx", "transformer_encoder.onnx"}) {
      auto imported = io::loadOnnx(std::string(TSCOPE_TEST_DATA_DIR "/onnx/models/") + file);
      std::shared_ptr<const FunctionGraph> graph(std::move(imported.document.original));
      auto model = ViewModel::build(graph);
      auto old = ViewModel::build(graph, {}, false, {.placeByUse = false});
      int rootParameters = 0, oldRootParameters = 0, initializerNodes = 0;
      for (std::size_t i = 0; i < model->nodes().size(); ++i) {
        const ViewNode& node = model->nodes()[i];
        if (node.parameter && node.variable) {
          if (node.variable->scope().empty()) QCOMPARE(node.group, readersGroup(*model, int(i)));
          rootParameters += node.group == 0;
          oldRootParameters += old->nodes()[i].group == 0;
        }
        // A scope-less node reading only initializers (PyTorch's Identity on a shared one):
        // with its readers.
        if (node.kind == NodeKind::Apply && node.apply->scope().empty()) {
          const auto& inputs = node.apply->inputs();
          const bool onInitializers = std::all_of(inputs.begin(), inputs.end(), [](auto& in) {
            return !in->owner() && in->kind() != Variable::Kind::Regular && in->scope().empty();
          });
          if (onInitializers) {
            QCOMPARE(node.group, readersGroup(*model, int(i)));
            ++initializerNodes;
          }
        }
      }
      qInfo(
          "%s: %d parameters, %d at the root (%d with the old placement), %d scope-less nodes "
          "on initializers",
          file, model->parameterCount(), rootParameters, oldRootParameters, initializerNodes);
      for (std::size_t i = 0; i < model->nodes().size(); ++i)
        if (model->nodes()[i].parameter && model->nodes()[i].group == 0)
          qInfo("  at the root: %s (%d readers)", qPrintable(model->nodes()[i].label),
                int(model->outEdges(int(i)).size()));
      QVERIFY2(rootParameters <= oldRootParameters, file);
      QCOMPARE(model->defaultParameterMode(), model->parameterCount() > ViewModel::kBadgesAbove
                                                  ? ParameterMode::Badges
                                                  : ParameterMode::Boxes);
    }
#endif
  }
};

TSCOPE_GUI_TEST_MAIN(TestParameterPlacement)
#include "tst_parameter_placement.moc"
