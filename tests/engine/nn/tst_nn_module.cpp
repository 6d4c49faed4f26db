// nn::Module: dotted names of parameters and modules (nested, containers, renamed when a subtree
// is registered), the scopes a call opens, train/eval propagation, and bad arguments.
#include "engine/compile/function.h"
#include "engine/graph/apply.h"
#include "engine/graph/traversal.h"
#include "engine/nn/attention.h"
#include "engine/nn/containers.h"
#include "engine/nn/conv_layers.h"
#include "engine/nn/layers.h"
#include "engine/nn/recurrent.h"
#include "engine/ops/basic.h"
#include "test_main.h"

#include <set>

using namespace tscope::engine;

namespace {

std::vector<std::string> names(const std::vector<nn::NamedParameter>& ps) {
  std::vector<std::string> out;
  for (const auto& [n, v] : ps) out.push_back(n);
  return out;
}

struct Block : nn::Module {
  std::shared_ptr<nn::Linear> fc;
  std::shared_ptr<nn::LayerNorm> norm;
  Block() : Module("Block") {
    fc = registerModule("fc", std::make_shared<nn::Linear>(4, 4));
    norm = registerModule("norm", std::make_shared<nn::LayerNorm>(std::vector<std::int64_t>{4}));
  }
  std::vector<VarPtr> forward(const std::vector<VarPtr>& in) override {
    return {(*norm)(relu((*fc)(in[0])))};
  }
};

struct Net : nn::Module {
  std::shared_ptr<nn::ModuleList> blocks;
  std::shared_ptr<nn::Linear> head;
  Net() : Module("Net") {
    blocks = registerModule("blocks", std::make_shared<nn::ModuleList>());
    blocks->append(std::make_shared<Block>());
    blocks->append(std::make_shared<Block>());
    head = registerModule("head", std::make_shared<nn::Linear>(4, 2));
  }
  std::vector<VarPtr> forward(const std::vector<VarPtr>& in) override {
    VarPtr h = in[0];
    for (std::size_t i = 0; i < blocks->size(); ++i) h = (*(*blocks)[i])(h);
    return {(*head)(h)};
  }
};

VarPtr input(std::int64_t features) {
  return Variable::create(TensorType(DType::Float32, {kUnknownDim, features}), "x");
}

// The scopes of the nodes that compute `outputs`.
std::set<std::string> nodeScopes(const VarPtr& output) {
  std::set<std::string> out;
  const std::vector<VarPtr> outs{output};
  for (const Apply* a : ancestorNodes(outs)) out.insert(a->scope());
  return out;
}

}  // namespace

class TestNnModule : public QObject {
  Q_OBJECT

 private slots:
  void testDottedNames() {
    Net net;
    const std::vector<std::string> want{
        "blocks.0.fc.weight", "blocks.0.fc.bias", "blocks.0.norm.weight", "blocks.0.norm.bias",
        "blocks.1.fc.weight", "blocks.1.fc.bias", "blocks.1.norm.weight", "blocks.1.norm.bias",
        "head.weight",        "head.bias"};
    QCOMPARE(names(net.namedParameters()), want);
    // The shared variables carry the full dotted path; a subtree names relative to itself.
    QCOMPARE(net.blocks->namedParameters()[0].second->name(), std::string("blocks.0.fc.weight"));
    QCOMPARE(net.blocks->namedParameters()[0].first, std::string("0.fc.weight"));
    QCOMPARE(net.namedParameters(false).size(), std::size_t{0});
    std::vector<std::string> modules;
    for (const auto& [n, m] : net.namedModules()) modules.push_back(n + ":" + m->typeName());
    const std::vector<std::string> wantModules{":Net",
                                               "blocks:ModuleList",
                                               "blocks.0:Block",
                                               "blocks.0.fc:Linear",
                                               "blocks.0.norm:LayerNorm",
                                               "blocks.1:Block",
                                               "blocks.1.fc:Linear",
                                               "blocks.1.norm:LayerNorm",
                                               "head:Linear"};
    QCOMPARE(modules, wantModules);
    QCOMPARE(net.modules().size(), wantModules.size());
    QCOMPARE((*net.blocks)[1]->path(), std::string("blocks.1"));
    QVERIFY(net.findState("blocks.1.norm.bias"));
    QVERIFY(!net.findState("blocks.2.norm.bias"));
  }

  // A subtree built first and registered later gets its new path, its variables renamed.
  void testRegisteringRenames() {
    auto block = std::make_shared<Block>();
    QCOMPARE(block->fc->weight->name(), std::string("fc.weight"));
    nn::Sequential outer;
    auto inner = std::make_shared<nn::Sequential>();
    outer.registerModule("encoder", inner);
    inner->append(block);
    QCOMPARE(block->fc->weight->name(), std::string("encoder.0.fc.weight"));
    QCOMPARE(block->path(), std::string("encoder.0"));
    QCOMPARE(names(outer.namedParameters())[0], std::string("encoder.0.fc.weight"));
  }

  void testContainers() {
    nn::ModuleDict dict;
    dict.insert("a", std::make_shared<nn::ReLU>());
    dict.insert("b", std::make_shared<nn::Linear>(3, 2));
    QCOMPARE(dict.keys(), (std::vector<std::string>{"a", "b"}));
    QVERIFY(dict.contains("b"));
    QCOMPARE(dict.at("b")->namedParameters()[0].second->name(), std::string("b.weight"));
    try {
      dict.at("c");
      QFAIL("expected an error");
    } catch (const std::out_of_range& e) {
      QVERIFY2(std::string(e.what()).find("'c'") != std::string::npos, e.what());
      QVERIFY2(std::string(e.what()).find("'a', 'b'") != std::string::npos, e.what());
    }
    nn::ModuleList list;
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, list[0]);
    QVERIFY_THROWS_EXCEPTION(std::logic_error, list.call({input(3)}));
    // Names with a separator are refused, naming the module and the name.
    try {
      dict.insert("x.y", std::make_shared<nn::ReLU>());
      QFAIL("expected an error");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(std::string(e.what()).find("ModuleDict") != std::string::npos, e.what());
      QVERIFY2(std::string(e.what()).find("'x.y'") != std::string::npos, e.what());
    }
    // A module cannot become its own descendant.
    auto seq = std::make_shared<nn::Sequential>();
    auto child = std::make_shared<nn::Sequential>();
    seq->append(child);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, child->append(seq));
  }

  // Calling opens the module's scope: nodes are grouped by the module tree.
  void testCallScopes() {
    auto net = std::make_shared<Net>();
    net->setName("net");
    VarPtr x = input(4);
    VarPtr y = (*net)(x);
    const std::set<std::string> scopes = nodeScopes(y);
    QVERIFY(scopes.count("net/blocks/0/fc"));
    QVERIFY(scopes.count("net/blocks/1/norm"));
    QVERIFY(scopes.count("net/head"));
    for (const std::string& s : scopes) QVERIFY2(s.rfind("net", 0) == 0, s.c_str());
    QCOMPARE(net->head->scopes(), std::vector<std::string>{"net/head"});
    QCOMPARE(net->scopes(), std::vector<std::string>{"net"});
    // The ModuleList is never called, yet its name is in its items' scopes; a child called
    // directly, outside its parent's call, gets its whole place in the tree.
    QCOMPARE((*net->blocks)[0]->scopes(), std::vector<std::string>{"net/blocks/0"});
    const std::set<std::string> direct = nodeScopes((*net->head)(x));
    QCOMPARE(direct, std::set<std::string>{"net/head"});
    // A Sequential's children are scoped by their index.
    nn::Sequential seq(std::vector<nn::ModulePtr>{std::make_shared<nn::Linear>(4, 3),
                                                  std::make_shared<nn::ReLU>()});
    const std::set<std::string> seqScopes = nodeScopes(seq(x));
    QVERIFY(seqScopes.count("0"));
    QVERIFY(seqScopes.count("1"));
  }

  void testTrainEvalPropagates() {
    Net net;
    QVERIFY(net.training());
    net.eval();
    for (nn::Module* m : net.modules()) QVERIFY(!m->training());
    net.train();
    for (nn::Module* m : net.modules()) QVERIFY(m->training());
  }

  void testBadInputsNameTheModule() {
    nn::Linear fc(4, 3);
    try {
      fc(input(5));
      QFAIL("expected an error");
    } catch (const std::exception& e) {
      const std::string msg = e.what();
      QVERIFY2(msg.find("Linear(in_features=4, out_features=3") != std::string::npos, e.what());
      QVERIFY2(msg.find("4 features") != std::string::npos, e.what());
    }
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, fc.call({input(4), input(4)}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, nn::Dropout(1.0));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, nn::MultiheadAttention(10, 3));
    nn::LSTM lstm(3, 5);
    QVERIFY_THROWS_EXCEPTION(std::exception, lstm(input(3)));  // not (T, B, F)
    nn::Conv2d conv(3, 4, 3);
    QVERIFY_THROWS_EXCEPTION(std::exception,
                             conv(Variable::create(TensorType(DType::Float32, {1, 2, 5, 5}))));
  }
};

TSCOPE_TEST_MAIN(TestNnModule)
#include "tst_nn_module.moc"
