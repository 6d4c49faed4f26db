// OpFromGraph: value, shape, gradient and R-op like every op; nesting; .tsg round trips; the
// inline rewrite; and the errors a user meets (bad inner inputs, shared variables, wrong types).
#include "engine/graph/config.h"
#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/graph/traversal.h"
#include "engine/io/graph_json.h"
#include "engine/io/tsg.h"
#include "engine/ops/graph/op_from_graph.h"
#include "engine/ops/op_test_support.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/register_ops.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/ops/shape/reshape.h"
#include "test_main.h"

#include <functional>
#include <set>
#include <thread>

using namespace tscope::engine;
using namespace tscope::test;

Q_DECLARE_METATYPE(tscope::engine::DType)

namespace {

const TensorType kMatrix32(DType::Float32, {kUnknownDim, kUnknownDim});

// gelu(x) ~ x * sigmoid(1.702 x), on matrices of `dtype`.
std::shared_ptr<const OpFromGraph> geluBlock(DType dtype, bool isInline = false) {
  auto x = Variable::create(TensorType(dtype, {kUnknownDim, kUnknownDim}), "x");
  return opFromGraph({x}, {x * sigmoid(x * 1.702)}, "gelu_block", isInline);
}

// Two inputs, two outputs; one output ignores b (a disconnected gradient), and a view op and a
// reshape inside so inferShape walks more than elementwise ops.
std::shared_ptr<const OpFromGraph> mixBlock(DType dtype) {
  auto a = Variable::create(TensorType(dtype, {kUnknownDim, kUnknownDim}), "a");
  auto b = Variable::create(TensorType(dtype, {kUnknownDim, kUnknownDim}), "b");
  VarPtr s = tanh(a) * b + transpose(transpose(a));
  VarPtr flat = reshape(exp(a * 0.5), shapeOf(a));
  return opFromGraph({a, b}, {s, flat}, "mix");
}

std::optional<std::string> errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

bool mentions(const std::optional<std::string>& text, const std::vector<std::string>& parts) {
  if (!text) {
    qWarning("no exception was thrown");
    return false;
  }
  for (const auto& p : parts)
    if (text->find(p) == std::string::npos) {
      qWarning("'%s' not found in: %s", p.c_str(), text->c_str());
      return false;
    }
  return true;
}

std::size_t countOps(const FunctionGraph& g, const std::string& name) {
  std::size_t n = 0;
  for (const Apply* a : g.nodes()) n += a->op().name() == name;
  return n;
}

}  // namespace

class TestOpFromGraph : public QObject {
  Q_OBJECT

 private slots:
  void dtypes() {
    QTest::addColumn<DType>("dtype");
    QTest::newRow("float32") << DType::Float32;
    QTest::newRow("float64") << DType::Float64;
  }

  void testValue_data() { dtypes(); }
  void testValue() {
    QFETCH(DType, dtype);
    const auto gelu = geluBlock(dtype);
    QCOMPARE(QString::fromStdString(gelu->str()), QString("OpFromGraph{gelu_block}"));
    QCOMPARE(QString::fromStdString(gelu->name()), QString("OpFromGraph"));
    QCOMPARE(QString::fromStdString(gelu->label()), QString("gelu_block"));
    QVERIFY(!gelu->isInline());
    QCOMPARE(gelu->body().inputs().size(), std::size_t{1});
    QCOMPARE(gelu->innerGraphPtr().get(), &gelu->body());
    const Tensor x = randomTensor(dtype, {3, 5}, 1);
    const auto viaOp = evaluate(
        [&](const std::vector<VarPtr>& in) { return std::vector<VarPtr>{(*gelu)({in[0]})}; }, {x});
    const auto direct = evaluate(
        [](const std::vector<VarPtr>& in) {
          return std::vector<VarPtr>{in[0] * sigmoid(in[0] * 1.702)};
        },
        {x});
    QVERIFY(closeTo(viaOp[0], direct[0]));
    // Applied twice, in one graph: the one compiled inner function serves both nodes.
    const auto twice = evaluate(
        [&](const std::vector<VarPtr>& in) {
          return std::vector<VarPtr>{(*gelu)({(*gelu)({in[0]})})};
        },
        {x});
    const auto twiceDirect = evaluate(
        [](const std::vector<VarPtr>& in) {
          VarPtr h = in[0] * sigmoid(in[0] * 1.702);
          return std::vector<VarPtr>{h * sigmoid(h * 1.702)};
        },
        {x});
    QVERIFY(closeTo(twice[0], twiceDirect[0]));
  }

  void testMultipleOutputs_data() { dtypes(); }
  void testMultipleOutputs() {
    QFETCH(DType, dtype);
    const auto mix = mixBlock(dtype);
    const Tensor a = randomTensor(dtype, {2, 4}, 2), b = randomTensor(dtype, {2, 4}, 3);
    auto build = [&](const std::vector<VarPtr>& in) { return mix->apply({in[0], in[1]}); };
    const auto got = evaluate(build, {a, b});
    const auto want = evaluate(
        [](const std::vector<VarPtr>& in) {
          return std::vector<VarPtr>{tanh(in[0]) * in[1] + in[0], exp(in[0] * 0.5)};
        },
        {a, b});
    QVERIFY(closeTo(got[0], want[0]));
    QVERIFY(closeTo(got[1], want[1]));
    auto probe = Variable::create(TensorType(dtype, {kUnknownDim, kUnknownDim}));
    ApplyPtr node = mix->makeNode({probe, probe});
    const auto pattern = mix->connectionPattern(*node);
    QCOMPARE(pattern, (std::vector<std::vector<bool>>{{true, true}, {true, false}}));
  }

  void testInferShape_data() { dtypes(); }
  void testInferShape() {
    QFETCH(DType, dtype);
    const auto mix = mixBlock(dtype);
    const auto gelu = geluBlock(dtype);
    auto build = [&](const std::vector<VarPtr>& in) {
      std::vector<VarPtr> outs = mix->apply({in[0], in[1]});
      outs.push_back((*gelu)({outs[1]}));
      return outs;
    };
    TSCOPE_CHECK(
        checkInferShape(build, {randomTensor(dtype, {2, 5}, 4), randomTensor(dtype, {2, 5}, 5)}));
  }

  void testGradient_data() { dtypes(); }
  void testGradient() {
    QFETCH(DType, dtype);
    const auto mix = mixBlock(dtype);
    const auto gelu = geluBlock(dtype);
    auto build = [&](const std::vector<VarPtr>& in) {
      std::vector<VarPtr> outs = mix->apply({in[0], in[1]});
      return std::vector<VarPtr>{(*gelu)({outs[0]}), outs[1]};
    };
    const std::vector<Tensor> points{randomTensor(dtype, {3, 4}, 6),
                                     randomTensor(dtype, {3, 4}, 7)};
    TSCOPE_CHECK(verifyGrad(build, points));
    TSCOPE_CHECK(checkRopLop(build, points));
    // The same variable at both inputs: each input's gradient is its own, then they add up.
    auto shared = [&](const std::vector<VarPtr>& in) { return mix->apply({in[0], in[0]}); };
    TSCOPE_CHECK(verifyGrad(shared, {points[0]}));
    TSCOPE_CHECK(checkRopLop(shared, {points[0]}));
  }

  void testDisconnectedGradient() {
    const auto mix = mixBlock(DType::Float64);
    auto a = Variable::create(TensorType::ofRank(DType::Float64, 2), "a");
    auto b = Variable::create(TensorType::ofRank(DType::Float64, 2), "b");
    VarPtr flat = mix->apply({a, b})[1];
    const auto msg = errorOf([&] { grad(sum(flat), b); });
    QVERIFY(mentions(msg, {"b"}));  // raise policy: b does not influence the cost
    GradOptions lenient;
    lenient.disconnected = DisconnectedPolicy::Ignore;
    QVERIFY(grad(sum(flat), std::vector<VarPtr>{b}, lenient)[0] != nullptr);
  }

  void testNested_data() { dtypes(); }
  void testNested() {
    QFETCH(DType, dtype);
    const auto gelu = geluBlock(dtype);
    auto u = Variable::create(TensorType(dtype, {kUnknownDim, kUnknownDim}), "u");
    auto v = Variable::create(TensorType(dtype, {kUnknownDim, kUnknownDim}), "v");
    const auto outer = opFromGraph({u, v}, {(*gelu)({u + v}) * v}, "ffn_block");
    QCOMPARE(countOps(outer->body(), "OpFromGraph"), std::size_t{1});
    auto build = [&](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{(*outer)({in[0], in[1]})};
    };
    const std::vector<Tensor> points{randomTensor(dtype, {2, 3}, 8),
                                     randomTensor(dtype, {2, 3}, 9)};
    const auto want = evaluate(
        [](const std::vector<VarPtr>& in) {
          VarPtr s = in[0] + in[1];
          return std::vector<VarPtr>{s * sigmoid(s * 1.702) * in[1]};
        },
        points);
    QVERIFY(closeTo(evaluate(build, points)[0], want[0]));
    TSCOPE_CHECK(checkInferShape(build, points));
    TSCOPE_CHECK(verifyGrad(build, points));
  }

  // Note [One inner function]: two compiled functions share the op's inner function; calls from
  // two threads at once must both get their own right values.
  void testConcurrentPerform() {
    const auto gelu = geluBlock(DType::Float64);
    auto x = Variable::create(TensorType::ofRank(DType::Float64, 2), "x");
    Function a = compile({x}, {(*gelu)({x})});
    Function b = compile({x}, {(*gelu)({x * 2.0})});
    Function reference = compile({x}, {x * sigmoid(x * 1.702)});
    const Tensor u = randomTensor(DType::Float64, {40, 30}, 12),
                 v = randomTensor(DType::Float64, {40, 30}, 13);
    const Tensor wantA = reference({u})[0],
                 wantB = reference({Tensor::fromDoubles(DType::Float64, {40, 30}, [&] {
                   auto d = v.toDoubles();
                   for (double& e : d) e *= 2;
                   return d;
                 }())})[0];
    bool okA = true, okB = true;
    std::thread ta([&] {
      for (int i = 0; i < 200; ++i) okA = okA && a({u})[0].allClose(wantA, 1e-12, 1e-12);
    });
    std::thread tb([&] {
      for (int i = 0; i < 200; ++i) okB = okB && b({v})[0].allClose(wantB, 1e-12, 1e-12);
    });
    ta.join();
    tb.join();
    QVERIFY(okA);
    QVERIFY(okB);
  }

  // Inner scopes are kept relative to the scope the op was built in; the node gets the scope it
  // is applied in.
  void testScopes() {
    std::shared_ptr<const OpFromGraph> op;
    {
      NameScope outer("model");
      auto x = Variable::create(kMatrix32, "x");
      VarPtr y;
      {
        NameScope inner("act");
        y = tanh(x);
      }
      op = opFromGraph({x}, {y * 2.0}, "blk");
    }
    std::set<std::string> scopes;
    for (const Apply* a : op->body().nodes()) scopes.insert(a->scope());
    QCOMPARE(scopes, (std::set<std::string>{"", "act"}));
    auto z = Variable::create(kMatrix32, "z");
    NameScope here("encoder");
    VarPtr out = (*op)({z});
    QCOMPARE(QString::fromStdString(out->owner()->scope()), QString("encoder"));
    std::set<std::string> expanded;
    for (const VarPtr& v : op->expand(std::vector<VarPtr>{z}, "encoder/blk"))
      for (Apply* a : ancestorNodes(std::vector<VarPtr>{v})) expanded.insert(a->scope());
    QCOMPARE(expanded, (std::set<std::string>{"encoder/blk", "encoder/blk/act"}));
  }

  void testTestValues() {
    const auto gelu =
        geluBlock(DType::Float64);  // its inner inputs have no values: built before raise mode
    TestValueModeGuard guard(TestValueMode::Raise);
    auto x = Variable::create(TensorType(DType::Float64, {kUnknownDim, kUnknownDim}), "x");
    x->setTestValue(Tensor::fromDoubles(DType::Float64, {1, 2}, {0.5, -1.0}));
    VarPtr y = (*gelu)({x});
    QVERIFY(y->testValue().has_value());
    QCOMPARE(y->testValue()->toDoubles()[0], 0.5 / (1.0 + std::exp(-1.702 * 0.5)));
    // The inner graph keeps no test value: props do not depend on the values it was built with.
    for (const Variable* v : gelu->body().variables()) QVERIFY(!v->testValue());
    // The gradient through the op builds with test values on.
    VarPtr g = grad(sum(y), x);
    QVERIFY(g->testValue().has_value());
  }

  void testTsgRoundTrip() {
    const auto gelu = geluBlock(DType::Float32);
    auto u = Variable::create(kMatrix32, "u");
    const auto outer = opFromGraph({u}, {(*gelu)({u}) + 1.0}, "ffn_block");
    auto x = Variable::create(kMatrix32, "x");
    VarPtr y;
    {
      NameScope scope("encoder");
      y = (*outer)({(*gelu)({x})});
    }
    io::TsgDocument doc;
    doc.original = std::make_unique<FunctionGraph>(std::vector<VarPtr>{x}, std::vector<VarPtr>{y});
    const std::string text = io::writeTsg(doc);
    io::TsgDocument loaded = io::readTsg(text);
    QCOMPARE(QString::fromStdString(io::writeTsg(loaded)), QString::fromStdString(text));
    std::vector<const OpFromGraph*> ops;
    for (Apply* a : loaded.original->toposort())
      if (auto* op = dynamic_cast<const OpFromGraph*>(&a->op())) ops.push_back(op);
    QCOMPARE(ops.size(), std::size_t{2});
    QVERIFY(ops[0]->equals(*gelu));
    QVERIFY(ops[1]->equals(*outer));
    QCOMPARE(ops[0]->hash(), gelu->hash());
    QCOMPARE(countOps(ops[1]->body(), "OpFromGraph"), std::size_t{1});
    // The loaded graph runs and gives the values of the built one.
    const Tensor value = randomTensor(DType::Float32, {2, 3}, 10);
    Function built = compile({x}, {y});
    Function again = compile({loaded.original->inputs()[0]}, {loaded.original->outputs()[0]});
    QVERIFY(closeTo(again({value})[0], built({value})[0]));
    // graphToJson / graphFromJson alone, too.
    const nlohmann::json inner = io::graphToJson(outer->body());
    auto rebuilt = io::graphFromJson(inner, defaultOpRegistry(), "test");
    QCOMPARE(QString::fromStdString(io::graphToJson(*rebuilt).dump()),
             QString::fromStdString(inner.dump()));
  }

  void testInlineRewrite() {
    const auto inlined = geluBlock(DType::Float32, true);
    const auto kept = geluBlock(DType::Float32, false);
    QVERIFY(!inlined->equals(*kept));  // the flag is a prop
    auto x = Variable::create(kMatrix32, "x");
    VarPtr y;
    {
      NameScope scope("encoder");
      y = (*kept)({(*inlined)({x})});
    }
    CompileOptions options;
    options.mode = Mode::FastRun;
    Function f = compile({x}, {y}, {}, options);
    // The inline op is gone, the other one stays through fast_run.
    QCOMPARE(countOps(f.graph(), "OpFromGraph"), std::size_t{1});
    bool logged = false;
    for (const auto& r : f.rewriteLog())
      logged = logged || (r.reason == "inline_op_from_graph" && r.phase == "canonicalize");
    QVERIFY(logged);
    // The inlined nodes sit under <scope>/<label>, so the viewer still groups them.
    bool scoped = false;
    for (const Apply* a : f.graph().nodes())
      scoped = scoped || a->scope().rfind("encoder/gelu_block", 0) == 0;
    QVERIFY(scoped);
    const Tensor value = randomTensor(DType::Float32, {3, 2}, 11);
    Function reference = compile({x}, {y});
    QVERIFY(closeTo(f({value})[0], reference({value})[0]));
    // fast_compile inlines too; mode none does not.
    options.mode = Mode::FastCompile;
    QCOMPARE(countOps(compile({x}, {y}, {}, options).graph(), "OpFromGraph"), std::size_t{1});
    QCOMPARE(countOps(reference.graph(), "OpFromGraph"), std::size_t{2});
  }

  void testErrors() {
    auto x = Variable::create(kMatrix32, "x");
    auto z = Variable::create(kMatrix32, "z");
    auto W = SharedVariable::create(Tensor::zeros(DType::Float32, {2, 2}), "W");
    VarPtr computed = exp(x);
    QVERIFY(mentions(errorOf([&] { opFromGraph({computed}, {computed * 2.0}, "blk"); }),
                     {"OpFromGraph{blk}", "inner input 0", "free variable"}));
    QVERIFY(mentions(errorOf([&] { opFromGraph({x}, {x + z}, "blk"); }),
                     {"OpFromGraph{blk}", "'z'", "not among its inputs"}));
    QVERIFY(mentions(errorOf([&] { opFromGraph({x}, {x + W}, "blk"); }),
                     {"OpFromGraph{blk}", "shared variable 'W'", "pass it as an input"}));
    QVERIFY(mentions(errorOf([&] { opFromGraph({x, x}, {x}, "blk"); }), {"listed twice"}));
    QVERIFY(mentions(errorOf([&] { opFromGraph({x}, {x}, ""); }), {"label is empty"}));
    QVERIFY(mentions(errorOf([&] { opFromGraph({x}, {x}, "a/b"); }), {"'/'"}));
    // Applying it to the wrong type names the label, the input index and both types.
    const auto gelu = geluBlock(DType::Float32);
    auto v64 = Variable::create(TensorType(DType::Float64, {kUnknownDim, kUnknownDim}), "h");
    QVERIFY(mentions(
        errorOf([&] { (*gelu)({v64}); }),
        {"OpFromGraph{gelu_block}", "input 0", "'h'", "float64", "float32", "inner input 0 'x'"}));
    auto vector = Variable::create(TensorType(DType::Float32, {4}), "v");
    QVERIFY(mentions(errorOf([&] { (*gelu)({vector}); }),
                     {"OpFromGraph{gelu_block}", "input 0", "(4,)"}));
    QVERIFY(mentions(errorOf([&] { (*gelu)({x, x}); }), {"OpFromGraph{gelu_block}"}));
  }

  void testBadProps_data() {
    QTest::addColumn<QString>("props");
    QTest::addColumn<QString>("message");
    QTest::newRow("not an object") << "[]"
                                   << "must be a JSON object";
    QTest::newRow("unknown key") << R"({"label": "b", "inline": false, "graph": {}, "x": 1})"
                                 << "unknown prop \"x\"";
    QTest::newRow("label type") << R"({"label": 3, "inline": false, "graph": {}})"
                                << "\"label\" must be a string";
    QTest::newRow("inline type") << R"({"label": "b", "inline": 1, "graph": {}})"
                                 << "\"inline\" must be true or false";
    QTest::newRow("graph missing") << R"({"label": "b", "inline": false})"
                                   << "\"graph\" must be a graph object";
    QTest::newRow("graph broken")
        << R"({"label": "b", "inline": false, "graph": {"inputs": [], "outputs": [7],
        "variables": [], "applies": []}})"
        << "OpFromGraph{b} prop \"graph\": /outputs/0";
    QTest::newRow("no outputs")
        << R"({"label": "b", "inline": false, "graph": {"inputs": [], "outputs": [],
        "variables": [], "applies": []}})"
        << "has no outputs";
  }
  void testBadProps() {
    QFETCH(QString, props);
    QFETCH(QString, message);
    const auto json = nlohmann::json::parse(props.toStdString());
    const auto msg = errorOf([&] { defaultOpRegistry().make("OpFromGraph", json); });
    QVERIFY(mentions(msg, {message.toStdString()}));
    bool invalidArgument = false;
    try {
      defaultOpRegistry().make("OpFromGraph", json);
    } catch (const std::invalid_argument&) {
      invalidArgument = true;
    }
    QVERIFY(invalidArgument);
  }

  // An inner op the registry lacks loads as opaque: the op is drawn and inspected, never run.
  void testOpaqueInnerOp() {
    nlohmann::json props = geluBlock(DType::Float32)->props();
    props["graph"]["applies"][0]["op"] = "NoSuchOp";
    props["graph"]["applies"][0].erase("props");
    const OpPtr op = defaultOpRegistry().make("OpFromGraph", props);
    QVERIFY(!op->isExecutable());
    auto x = Variable::create(kMatrix32, "x");
    QVERIFY(mentions(errorOf([&] {
                       compile({x}, {(*op)({x})})({randomTensor(DType::Float32, {1, 1}, 1)});
                     }),
                     {"OpFromGraph{gelu_block}", "cannot be executed"}));
    QCOMPARE(countOps(static_cast<const OpFromGraph&>(*op).body(), "NoSuchOp"), std::size_t{1});
  }
};

TSCOPE_TEST_MAIN(TestOpFromGraph)
#include "tst_op_from_graph.moc"
