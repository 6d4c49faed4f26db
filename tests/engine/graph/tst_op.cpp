// Op: equality, hash and str from props; the registry (name + props -> op and back); opaque ops;
// view and destroy maps; and the typing rules of Elemwise (broadcasting, dtypes, arity, inplace),
// Dot and DimShuffle.
#include "engine/graph/errors.h"
#include "engine/graph/op.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/register_ops.h"
#include "engine/ops/shape/dimshuffle.h"
#include "graph_test_support.h"
#include "test_main.h"

#include <memory>
#include <set>
#include <vector>

using namespace tscope::engine;
using namespace tscope::engine::testing;
using json = nlohmann::json;

using Dims = std::vector<std::int64_t>;
using DTypes = std::vector<tscope::engine::DType>;
Q_DECLARE_METATYPE(tscope::engine::DType)
Q_DECLARE_METATYPE(tscope::engine::ScalarOp)
Q_DECLARE_METATYPE(tscope::engine::OpPtr)
Q_DECLARE_METATYPE(Dims)
Q_DECLARE_METATYPE(DTypes)
Q_DECLARE_METATYPE(std::vector<int>)
Q_DECLARE_METATYPE(nlohmann::json)

namespace {
constexpr std::int64_t U = kUnknownDim;

VarPtr var(DType dtype, Dims shape, std::string name = {}) {
  return Variable::create(TensorType(dtype, std::move(shape)), std::move(name));
}
VarPtr fvar(Dims shape, std::string name = {}) {
  return var(DType::Float32, std::move(shape), std::move(name));
}

OpPtr elem(ScalarOp op, std::map<int, int> inplace = {}, DType target = DType::Float32) {
  return std::make_shared<Elemwise>(op, std::move(inplace), target);
}

// An op with props, to test the defaults of Op (str, equality) without a registered family.
class SumOp final : public Op {
 public:
  explicit SumOp(json props) : m_props(std::move(props)) {}
  std::string name() const override { return "Sum"; }
  json props() const override { return m_props; }
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override {
    return {inputs[0]->type(), inputs[0]->type()};
  }

 private:
  json m_props;
};

// Same name and props as SumOp, another C++ type.
class OtherSumOp final : public Op {
 public:
  std::string name() const override { return "Sum"; }
  json props() const override { return {{"axis", json::array({1})}}; }
  std::vector<TensorType> outputTypes(std::span<const VarPtr>) const override { return {}; }
};
}  // namespace

class TestOp : public QObject {
  Q_OBJECT

 private slots:
  void testStr_data();
  void testStr();
  void testEquality_data();
  void testEquality();
  void testDefaultStrAndEquality();
  void testRegistryMake();
  void testRegistryUnknownName();
  void testRegistryBadProps_data();
  void testRegistryBadProps();
  void testRegistryDuplicate();
  void testOpaqueOp();
  void testConnectionPatternDefault();
  void testViewAndDestroyMaps();
  void testElemwiseBroadcast_data();
  void testElemwiseBroadcast();
  void testElemwiseBroadcastError();
  void testElemwiseDType_data();
  void testElemwiseDType();
  void testElemwiseArity_data();
  void testElemwiseArity();
  void testElemwiseDevices();
  void testElemwiseInplace();
  void testElemwiseInplaceErrors_data();
  void testElemwiseInplaceErrors();
  void testDot_data();
  void testDot();
  void testDotErrors();
  void testDimShuffle_data();
  void testDimShuffle();
  void testDimShuffleErrors();
};

void TestOp::testStr_data() {
  QTest::addColumn<OpPtr>("op");
  QTest::addColumn<QString>("expected");
  QTest::newRow("add") << elem(ScalarOp::Add) << "Elemwise{add}";
  QTest::newRow("true_div") << elem(ScalarOp::TrueDiv) << "Elemwise{true_div}";
  QTest::newRow("inplace") << elem(ScalarOp::Add, {{0, 0}}) << "Elemwise{add,inplace}";
  QTest::newRow("cast") << elem(ScalarOp::Cast, {}, DType::Float64) << "Elemwise{cast{float64}}";
  QTest::newRow("cast inplace") << elem(ScalarOp::Cast, {{0, 0}}, DType::Int8)
                                << "Elemwise{cast{int8},inplace}";
  QTest::newRow("dimshuffle") << OpPtr(std::make_shared<DimShuffle>(2, std::vector<int>{1, 0, -1}))
                              << "DimShuffle{1,0,x}";
  QTest::newRow("dimshuffle empty")
      << OpPtr(std::make_shared<DimShuffle>(1, std::vector<int>{})) << "DimShuffle{}";
  QTest::newRow("dot") << OpPtr(std::make_shared<Dot>()) << "Dot";
  QTest::newRow("opaque") << OpPtr(std::make_shared<OpaqueOp>("Foo", json{{"k", 2}}, "unknown"))
                          << "Foo{k=2} (opaque)";
}

void TestOp::testStr() {
  QFETCH(OpPtr, op);
  QFETCH(QString, expected);
  QCOMPARE(qs(op->str()), expected);
}

void TestOp::testEquality_data() {
  QTest::addColumn<OpPtr>("a");
  QTest::addColumn<OpPtr>("b");
  QTest::addColumn<bool>("equal");
  QTest::newRow("add == add") << elem(ScalarOp::Add) << elem(ScalarOp::Add) << true;
  QTest::newRow("add != mul") << elem(ScalarOp::Add) << elem(ScalarOp::Mul) << false;
  QTest::newRow("add != add inplace")
      << elem(ScalarOp::Add) << elem(ScalarOp::Add, {{0, 0}}) << false;
  QTest::newRow("inplace 0 != inplace 1")
      << elem(ScalarOp::Add, {{0, 0}}) << elem(ScalarOp::Add, {{0, 1}}) << false;
  QTest::newRow("cast f64 == cast f64") << elem(ScalarOp::Cast, {}, DType::Float64)
                                        << elem(ScalarOp::Cast, {}, DType::Float64) << true;
  QTest::newRow("cast f64 != cast f32") << elem(ScalarOp::Cast, {}, DType::Float64)
                                        << elem(ScalarOp::Cast, {}, DType::Float32) << false;
  // The target only matters to cast: it is not part of add's props.
  QTest::newRow("add ignores target")
      << elem(ScalarOp::Add, {}, DType::Int8) << elem(ScalarOp::Add, {}, DType::Float64) << true;
  QTest::newRow("dimshuffle equal")
      << OpPtr(std::make_shared<DimShuffle>(2, std::vector<int>{1, 0}))
      << OpPtr(std::make_shared<DimShuffle>(2, std::vector<int>{1, 0})) << true;
  QTest::newRow("dimshuffle order")
      << OpPtr(std::make_shared<DimShuffle>(2, std::vector<int>{1, 0}))
      << OpPtr(std::make_shared<DimShuffle>(2, std::vector<int>{0, 1})) << false;
  QTest::newRow("dimshuffle ndim")
      << OpPtr(std::make_shared<DimShuffle>(2, std::vector<int>{0, -1}))
      << OpPtr(std::make_shared<DimShuffle>(1, std::vector<int>{0, -1})) << false;
  QTest::newRow("dot == dot") << OpPtr(std::make_shared<Dot>()) << OpPtr(std::make_shared<Dot>())
                              << true;
  QTest::newRow("dot != add") << OpPtr(std::make_shared<Dot>()) << elem(ScalarOp::Add) << false;
  QTest::newRow("opaque same") << OpPtr(std::make_shared<OpaqueOp>("Foo", json{{"k", 1}}, "a"))
                               << OpPtr(std::make_shared<OpaqueOp>("Foo", json{{"k", 1}}, "b"))
                               << true;
  QTest::newRow("opaque props") << OpPtr(std::make_shared<OpaqueOp>("Foo", json{{"k", 1}}, "a"))
                                << OpPtr(std::make_shared<OpaqueOp>("Foo", json{{"k", 2}}, "a"))
                                << false;
  // An opaque op never equals the real op with the same name and props.
  QTest::newRow("opaque vs real") << OpPtr(std::make_shared<OpaqueOp>("Dot", json::object(), "a"))
                                  << OpPtr(std::make_shared<Dot>()) << false;
}

void TestOp::testEquality() {
  QFETCH(OpPtr, a);
  QFETCH(OpPtr, b);
  QFETCH(bool, equal);
  QCOMPARE(a->equals(*b), equal);
  QCOMPARE(b->equals(*a), equal);
  QVERIFY(a->equals(*a));
  if (equal) {
    QCOMPARE(a->hash(), b->hash());
    QCOMPARE(qs(a->str()), qs(b->str()));
  } else {
    QVERIFY(a->str() != b->str() || a->props() != b->props() || typeid(*a) != typeid(*b));
  }
}

void TestOp::testDefaultStrAndEquality() {
  const SumOp sum(json{{"axis", json::array({1})}, {"keepdims", true}});
  QCOMPARE(qs(sum.str()), QStringLiteral("Sum{axis=[1],keepdims=true}"));
  QCOMPARE(qs(SumOp(json::object()).str()), QStringLiteral("Sum"));
  QCOMPARE(qs(SumOp(json{{"mode", "fast"}}).str()),
           QStringLiteral("Sum{mode=fast}"));  // strings unquoted
  QVERIFY(sum.equals(SumOp(json{{"keepdims", true}, {"axis", json::array({1})}})));
  QVERIFY(!sum.equals(SumOp(json{{"axis", json::array({0})}, {"keepdims", true}})));
  // Same name and props but another C++ type: not equal.
  const SumOp sameProps(json{{"axis", json::array({1})}});
  QVERIFY(!sameProps.equals(OtherSumOp()));
  QVERIFY(!OtherSumOp().equals(sameProps));
  QVERIFY(OtherSumOp().equals(OtherSumOp()));
}

void TestOp::testRegistryMake() {
  const OpRegistry& registry = defaultOpRegistry();
  QVERIFY(registry.contains("Elemwise"));
  QVERIFY(registry.contains("Dot"));
  QVERIFY(registry.contains("DimShuffle"));
  QVERIFY(!registry.contains("elemwise"));
  const OpPtr add = registry.make("Elemwise", {{"scalar_op", "add"}});
  QVERIFY(add->equals(*elem(ScalarOp::Add)));
  QVERIFY(dynamic_cast<const Elemwise*>(add.get()));
  const OpPtr cast = registry.make("Elemwise", {{"scalar_op", "cast"}, {"dtype", "int16"}});
  QCOMPARE(qs(cast->str()), QStringLiteral("Elemwise{cast{int16}}"));
  const OpPtr ds = registry.make("DimShuffle", {{"input_ndim", 2}, {"order", {1, "x", 0}}});
  QCOMPARE(qs(ds->str()), QStringLiteral("DimShuffle{1,x,0}"));
  QVERIFY(registry.make("Dot", json::object())->equals(Dot()));
  // A registry's op can build nodes (it is held by a shared_ptr).
  const VarPtr out = (*add)({fvar({2}), fvar({2})});
  QCOMPARE(out->type(), TensorType(DType::Float32, {2}));
}

void TestOp::testRegistryUnknownName() {
  const auto msg =
      thrownMessage<std::out_of_range>([] { defaultOpRegistry().make("Conv9D", json::object()); });
  QVERIFY2(msg, "an unknown op name must throw std::out_of_range");
  QVERIFY2(contains(msg, "'Conv9D'"), msg->c_str());
}

void TestOp::testRegistryBadProps_data() {
  QTest::addColumn<QString>("name");
  QTest::addColumn<json>("props");
  QTest::addColumn<QString>("named");
  QTest::newRow("not an object") << "Elemwise" << json::array({1, 2}) << "JSON object";
  QTest::newRow("no scalar_op") << "Elemwise" << json::object() << "scalar_op";
  QTest::newRow("scalar_op not a string") << "Elemwise" << json{{"scalar_op", 3}} << "scalar_op";
  QTest::newRow("unknown scalar_op")
      << "Elemwise" << json{{"scalar_op", "frobnicate"}} << "frobnicate";
  QTest::newRow("cast without dtype") << "Elemwise" << json{{"scalar_op", "cast"}} << "dtype";
  QTest::newRow("cast bad dtype") << "Elemwise"
                                  << json{{"scalar_op", "cast"}, {"dtype", "float128"}}
                                  << "float128";
  QTest::newRow("cast dtype not a string")
      << "Elemwise" << json{{"scalar_op", "cast"}, {"dtype", 8}} << "dtype";
  QTest::newRow("inplace array") << "Elemwise" << json{{"scalar_op", "add"}, {"inplace", {1}}}
                                 << "inplace";
  QTest::newRow("inplace output 1")
      << "Elemwise" << json{{"scalar_op", "add"}, {"inplace", {{"1", 0}}}} << "inplace";
  QTest::newRow("inplace not int")
      << "Elemwise" << json{{"scalar_op", "add"}, {"inplace", {{"0", "a"}}}} << "inplace";
  QTest::newRow("inplace negative")
      << "Elemwise" << json{{"scalar_op", "add"}, {"inplace", {{"0", -1}}}} << "inplace";
  QTest::newRow("inplace past arity")
      << "Elemwise" << json{{"scalar_op", "neg"}, {"inplace", {{"0", 1}}}} << "inplace";
  QTest::newRow("no input_ndim") << "DimShuffle" << json{{"order", {0}}} << "input_ndim";
  QTest::newRow("input_ndim string")
      << "DimShuffle" << json{{"input_ndim", "2"}, {"order", {0}}} << "input_ndim";
  QTest::newRow("input_ndim negative")
      << "DimShuffle" << json{{"input_ndim", -1}, {"order", json::array()}} << "input_ndim";
  QTest::newRow("no order") << "DimShuffle" << json{{"input_ndim", 1}} << "order";
  QTest::newRow("order not array")
      << "DimShuffle" << json{{"input_ndim", 1}, {"order", "0"}} << "order";
  QTest::newRow("order bad entry")
      << "DimShuffle" << json{{"input_ndim", 1}, {"order", {0, "y"}}} << "order";
  QTest::newRow("order axis out of range")
      << "DimShuffle" << json{{"input_ndim", 2}, {"order", {0, 5}}} << "order";
  QTest::newRow("order axis twice")
      << "DimShuffle" << json{{"input_ndim", 2}, {"order", {1, 1}}} << "order";
  QTest::newRow("dot props") << "Dot" << json{{"transpose_a", true}} << "transpose_a";
}

void TestOp::testRegistryBadProps() {
  QFETCH(QString, name);
  QFETCH(json, props);
  QFETCH(QString, named);
  const auto msg = thrownMessage<std::invalid_argument>(
      [&] { defaultOpRegistry().make(name.toStdString(), props); });
  QVERIFY2(msg, "bad props must throw std::invalid_argument");
  QVERIFY2(contains(msg, named.toStdString()), msg->c_str());
}

void TestOp::testRegistryDuplicate() {
  OpRegistry registry;
  registry.add("Custom", [](const json&) -> OpPtr { return std::make_shared<Dot>(); });
  QVERIFY(registry.contains("Custom"));
  const auto msg = thrownMessage<std::logic_error>(
      [&] { registry.add("Custom", [](const json&) -> OpPtr { return nullptr; }); });
  QVERIFY2(msg, "a duplicate name must throw std::logic_error");
  QVERIFY2(contains(msg, "'Custom'"), msg->c_str());
  // The first factory is still the one used.
  QVERIFY(registry.make("Custom", json::object()) != nullptr);
  registerAllOps(registry);
  QVERIFY_THROWS_EXCEPTION(std::logic_error, registerAllOps(registry));
}

void TestOp::testOpaqueOp() {
  const json props{{"axis", 1}, {"mode", "x"}};
  const auto op =
      std::make_shared<OpaqueOp>("Frobnicate", props, "no op named 'Frobnicate' is registered");
  QVERIFY(!op->isExecutable());
  QVERIFY(Dot().isExecutable());
  QCOMPARE(qs(op->name()), QStringLiteral("Frobnicate"));
  QCOMPARE(op->props(), props);
  QCOMPARE(qs(op->why()), QStringLiteral("no op named 'Frobnicate' is registered"));
  const auto msg = thrownMessage<TypeError>([&] { op->makeNode({fvar({2})}); });
  QVERIFY2(msg, "an opaque op cannot type its outputs");
  QVERIFY2(contains(msg, "Frobnicate"), msg->c_str());
  QVERIFY2(contains(msg, "no op named 'Frobnicate' is registered"), msg->c_str());
  // A node of an opaque op is still built from known types (files carry them).
  const ApplyPtr node = Apply::create(op, {fvar({2})}, {TensorType(DType::Float32, {2})});
  QCOMPARE(qs(node->str()), QStringLiteral("Frobnicate{axis=1,mode=x} (opaque)(fvector)"));
}

void TestOp::testConnectionPatternDefault() {
  const auto split = std::make_shared<SumOp>(json::object());
  const ApplyPtr node =
      Apply::create(split, {fvar({2}), fvar({2}), fvar({2})},
                    {TensorType(DType::Float32, {2}), TensorType(DType::Float32, {2})});
  const auto pattern = split->connectionPattern(*node);
  QCOMPARE(pattern.size(), std::size_t{3});
  for (const auto& row : pattern) QCOMPARE(row, (std::vector<bool>{true, true}));
  const ApplyPtr add = elem(ScalarOp::Add)->makeNode({fvar({2}), fvar({2})});
  QCOMPARE(add->op().connectionPattern(*add), (std::vector<std::vector<bool>>{{true}, {true}}));
}

void TestOp::testViewAndDestroyMaps() {
  const DimShuffle ds(2, {1, 0});
  QCOMPARE(ds.viewMap(), (ViewMap{{0, {0}}}));
  QVERIFY(ds.destroyMap().empty());
  QVERIFY(Elemwise(ScalarOp::Add).destroyMap().empty());
  QVERIFY(Elemwise(ScalarOp::Add).viewMap().empty());
  QCOMPARE(Elemwise(ScalarOp::Add, {{0, 1}}).destroyMap(), (DestroyMap{{0, {1}}}));
  QCOMPARE(Elemwise(ScalarOp::Exp, {{0, 0}}).destroyMap(), (DestroyMap{{0, {0}}}));
  QVERIFY(Elemwise(ScalarOp::Exp, {{0, 0}}).viewMap().empty());
  QVERIFY(Dot().viewMap().empty() && Dot().destroyMap().empty());
}

void TestOp::testElemwiseBroadcast_data() {
  QTest::addColumn<Dims>("a");
  QTest::addColumn<Dims>("b");
  QTest::addColumn<Dims>("expected");
  QTest::newRow("(?,3)+(3,)") << Dims{U, 3} << Dims{3} << Dims{U, 3};
  QTest::newRow("(1,?)+(4,1)") << Dims{1, U} << Dims{4, 1} << Dims{4, U};
  QTest::newRow("scalar") << Dims{} << Dims{2, 3} << Dims{2, 3};
  QTest::newRow("rank 3") << Dims{5, 1, 3} << Dims{4, 1} << Dims{5, 4, 3};
  QTest::newRow("(?,)+(1,)") << Dims{U} << Dims{1} << Dims{U};
  QTest::newRow("(?,)+(3,)") << Dims{U} << Dims{3} << Dims{3};
  QTest::newRow("(?,?)+(?,)") << Dims{U, U} << Dims{U} << Dims{U, U};
  QTest::newRow("(1,1)+(1,)") << Dims{1, 1} << Dims{1} << Dims{1, 1};
  QTest::newRow("(0,)+(1,)") << Dims{0} << Dims{1} << Dims{0};
  QTest::newRow("(0,)+(?,)") << Dims{0} << Dims{U} << Dims{0};
  QTest::newRow("equal") << Dims{2, 3} << Dims{2, 3} << Dims{2, 3};
}

void TestOp::testElemwiseBroadcast() {
  QFETCH(Dims, a);
  QFETCH(Dims, b);
  QFETCH(Dims, expected);
  for (ScalarOp op : {ScalarOp::Add, ScalarOp::Mul, ScalarOp::Lt, ScalarOp::TrueDiv}) {
    QCOMPARE(elemwise(op, {fvar(a), fvar(b)})->type().shape(), expected);
    QCOMPARE(elemwise(op, {fvar(b), fvar(a)})->type().shape(), expected);  // order does not matter
  }
  const std::vector<Dims> shapes{a, b};
  QCOMPARE(broadcastStaticShapes(shapes), std::optional<Dims>(expected));
}

void TestOp::testElemwiseBroadcastError() {
  auto msg = thrownMessage<TypeError>([] {
    elemwise(ScalarOp::Add, {fvar({2, 3}), fvar({4, 3})});
  });
  QVERIFY2(msg, "(2,3)+(4,3) must not broadcast");
  QVERIFY2(contains(msg, "Elemwise{add}"), msg->c_str());
  QVERIFY2(contains(msg, "TensorType(float32, (2, 3))"), msg->c_str());
  QVERIFY2(contains(msg, "TensorType(float32, (4, 3))"), msg->c_str());
  msg = thrownMessage<TypeError>([] { elemwise(ScalarOp::Mul, {fvar({2}), fvar({3})}); });
  QVERIFY(msg);
  msg = thrownMessage<TypeError>([] { elemwise(ScalarOp::Add, {fvar({0}), fvar({3})}); });
  QVERIFY2(msg, "0 and 3 do not broadcast");
  // Three operands: (3,1) (1,4) (4,) broadcast; (3,1) (1,4) (5,) do not.
  QCOMPARE(elemwise(ScalarOp::Add, {fvar({3, 1}), fvar({1, 4}), fvar({4})})->type().shape(),
           (Dims{3, 4}));
  QVERIFY(thrownMessage<TypeError>([] {
    elemwise(ScalarOp::Add, {fvar({3, 1}), fvar({1, 4}), fvar({5})});
  }));
  const std::vector<Dims> bad{{2, 3}, {4, 3}};
  QVERIFY(!broadcastStaticShapes(bad).has_value());
}

void TestOp::testElemwiseDType_data() {
  QTest::addColumn<ScalarOp>("op");
  QTest::addColumn<DTypes>("inputs");
  QTest::addColumn<DType>("target");
  QTest::addColumn<DType>("expected");
  using D = DType;
  using S = ScalarOp;
  const D f = D::Float32;
  QTest::newRow("add i32+f32 -> f64") << S::Add << DTypes{D::Int32, D::Float32} << f << D::Float64;
  QTest::newRow("add i8+u8 -> i16") << S::Add << DTypes{D::Int8, D::UInt8} << f << D::Int16;
  QTest::newRow("add f32+f32") << S::Add << DTypes{D::Float32, D::Float32} << f << D::Float32;
  QTest::newRow("add bool+bool") << S::Add << DTypes{D::Bool, D::Bool} << f << D::Bool;
  QTest::newRow("add f16+i16 -> f32") << S::Add << DTypes{D::Float16, D::Int16} << f << D::Float32;
  QTest::newRow("add 3 inputs") << S::Add << DTypes{D::Int8, D::Int16, D::Float32} << f
                                << D::Float32;
  QTest::newRow("mul i64+f16 -> f64") << S::Mul << DTypes{D::Int64, D::Float16} << f << D::Float64;
  QTest::newRow("sub i32+i64") << S::Sub << DTypes{D::Int32, D::Int64} << f << D::Int64;
  QTest::newRow("int_div i32") << S::IntDiv << DTypes{D::Int32, D::Int32} << f << D::Int32;
  QTest::newRow("true_div i32") << S::TrueDiv << DTypes{D::Int32, D::Int32} << f << D::Float64;
  QTest::newRow("true_div i64") << S::TrueDiv << DTypes{D::Int64, D::Int64} << f << D::Float64;
  QTest::newRow("true_div i8") << S::TrueDiv << DTypes{D::Int8, D::Int8} << f << D::Float32;
  QTest::newRow("true_div i16") << S::TrueDiv << DTypes{D::Int16, D::Int16} << f << D::Float32;
  QTest::newRow("true_div u8") << S::TrueDiv << DTypes{D::UInt8, D::UInt8} << f << D::Float32;
  QTest::newRow("true_div bool") << S::TrueDiv << DTypes{D::Bool, D::Bool} << f << D::Float32;
  QTest::newRow("true_div i8/u8 -> i16 -> f32")
      << S::TrueDiv << DTypes{D::Int8, D::UInt8} << f << D::Float32;
  QTest::newRow("true_div i16/i32 -> f64")
      << S::TrueDiv << DTypes{D::Int16, D::Int32} << f << D::Float64;
  QTest::newRow("true_div f16") << S::TrueDiv << DTypes{D::Float16, D::Float16} << f << D::Float16;
  QTest::newRow("true_div f32") << S::TrueDiv << DTypes{D::Float32, D::Float32} << f << D::Float32;
  QTest::newRow("exp i16 -> f32") << S::Exp << DTypes{D::Int16} << f << D::Float32;
  QTest::newRow("exp i32 -> f64") << S::Exp << DTypes{D::Int32} << f << D::Float64;
  QTest::newRow("exp bool -> f32") << S::Exp << DTypes{D::Bool} << f << D::Float32;
  QTest::newRow("exp f16") << S::Exp << DTypes{D::Float16} << f << D::Float16;
  QTest::newRow("log i64 -> f64") << S::Log << DTypes{D::Int64} << f << D::Float64;
  QTest::newRow("sigmoid u8 -> f32") << S::Sigmoid << DTypes{D::UInt8} << f << D::Float32;
  QTest::newRow("sqrt i8 -> f32") << S::Sqrt << DTypes{D::Int8} << f << D::Float32;
  QTest::newRow("neg i8") << S::Neg << DTypes{D::Int8} << f << D::Int8;
  QTest::newRow("floor i32") << S::Floor << DTypes{D::Int32} << f << D::Int32;
  QTest::newRow("pow i8,f32") << S::Pow << DTypes{D::Int8, D::Float32} << f << D::Float32;
  QTest::newRow("lt f32,f64") << S::Lt << DTypes{D::Float32, D::Float64} << f << D::Bool;
  QTest::newRow("eq i32,i32") << S::Eq << DTypes{D::Int32, D::Int32} << f << D::Bool;
  QTest::newRow("ge u8,i64") << S::Ge << DTypes{D::UInt8, D::Int64} << f << D::Bool;
  QTest::newRow("and") << S::And << DTypes{D::Bool, D::Bool} << f << D::Bool;
  QTest::newRow("not") << S::Not << DTypes{D::Bool} << f << D::Bool;
  QTest::newRow("switch i32|f32 -> f64")
      << S::Switch << DTypes{D::Bool, D::Int32, D::Float32} << f << D::Float64;
  QTest::newRow("switch i8|i8") << S::Switch << DTypes{D::Bool, D::Int8, D::Int8} << f << D::Int8;
  // The condition takes no part in the promotion.
  QTest::newRow("switch f64 cond")
      << S::Switch << DTypes{D::Float64, D::Int16, D::Int16} << f << D::Int16;
  QTest::newRow("cast -> f64") << S::Cast << DTypes{D::Int32} << D::Float64 << D::Float64;
  QTest::newRow("cast -> bool") << S::Cast << DTypes{D::Float32} << D::Bool << D::Bool;
  QTest::newRow("cast -> i8") << S::Cast << DTypes{D::Float64} << D::Int8 << D::Int8;
  QTest::newRow("clip") << S::Clip << DTypes{D::Float32, D::Int8, D::Int8} << f << D::Float32;
}

void TestOp::testElemwiseDType() {
  QFETCH(ScalarOp, op);
  QFETCH(DTypes, inputs);
  QFETCH(DType, target);
  QFETCH(DType, expected);
  std::vector<VarPtr> vars;
  for (DType d : inputs) vars.push_back(var(d, {2, U}));
  const VarPtr out = (*elem(op, {}, target))(vars);
  QCOMPARE(out->type().dtype(), expected);
  QCOMPARE(out->type().shape(), (Dims{2, U}));
  QCOMPARE(scalarOpOutputDType(op, inputs, target), expected);
}

void TestOp::testElemwiseArity_data() {
  QTest::addColumn<ScalarOp>("op");
  QTest::addColumn<int>("count");
  QTest::addColumn<QString>("fragment");
  QTest::newRow("neg with 2") << ScalarOp::Neg << 2 << "expected 1 input, found 2";
  QTest::newRow("neg with 0") << ScalarOp::Neg << 0 << "expected 1 input, found 0";
  QTest::newRow("add with 1") << ScalarOp::Add << 1 << "expected two or more inputs, found 1";
  QTest::newRow("add with 0") << ScalarOp::Add << 0 << "expected two or more inputs, found 0";
  QTest::newRow("maximum with 1") << ScalarOp::Maximum << 1
                                  << "expected two or more inputs, found 1";
  QTest::newRow("true_div with 3") << ScalarOp::TrueDiv << 3 << "expected 2 inputs, found 3";
  QTest::newRow("switch with 2") << ScalarOp::Switch << 2 << "expected 3 inputs, found 2";
  QTest::newRow("cast with 2") << ScalarOp::Cast << 2 << "expected 1 input, found 2";
}

void TestOp::testElemwiseArity() {
  QFETCH(ScalarOp, op);
  QFETCH(int, count);
  QFETCH(QString, fragment);
  std::vector<VarPtr> inputs;
  for (int i = 0; i < count; ++i) inputs.push_back(fvar({2}));
  const auto msg = thrownMessage<TypeError>([&] { elem(op)->makeNode(inputs); });
  QVERIFY2(msg, "a wrong input count must be a TypeError");
  QVERIFY2(contains(msg, "Elemwise{" + std::string(scalarOpInfo(op).name)), msg->c_str());
  QVERIFY2(contains(msg, fragment.toStdString()), msg->c_str());
  // n-ary ops take any count from two.
  QCOMPARE(elem(ScalarOp::Add)->makeNode({fvar({2}), fvar({2}), fvar({2}), fvar({2})})->nInputs(),
           4);
}

void TestOp::testElemwiseDevices() {
  const VarPtr cpu = fvar({2}, "a");
  const VarPtr gpu = Variable::create(TensorType(DType::Float32, {2}, Device::Cuda), "g");
  const auto msg = thrownMessage<TypeError>([&] { elemwise(ScalarOp::Add, {cpu, gpu}); });
  QVERIFY2(msg, "mixing devices must be a TypeError");
  QVERIFY2(contains(msg, "input 1 ('g')"), msg->c_str());
  QCOMPARE(elemwise(ScalarOp::Neg, {gpu})->type().device(), Device::Cuda);
}

void TestOp::testElemwiseInplace() {
  const VarPtr x = fvar({U, 3}, "x"), y = fvar({4, 3}, "y");
  // The output is written into x, so it has x's type.
  const VarPtr out = (*elem(ScalarOp::Add, {{0, 0}}))({x, y});
  QCOMPARE(out->type(), x->type());
  const VarPtr out1 = (*elem(ScalarOp::Add, {{0, 1}}))({x, y});
  QCOMPARE(out1->type(), y->type());
  const VarPtr e = (*elem(ScalarOp::Exp, {{0, 0}}))({y});
  QCOMPARE(e->type(), y->type());
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Elemwise(ScalarOp::Neg, {{0, 1}}));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Elemwise(ScalarOp::Add, {{1, 0}}));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Elemwise(ScalarOp::Add, {{0, -1}}));
}

void TestOp::testElemwiseInplaceErrors_data() {
  QTest::addColumn<ScalarOp>("op");
  QTest::addColumn<int>("into");
  QTest::addColumn<DTypes>("dtypes");
  QTest::addColumn<Dims>("shapeA");
  QTest::addColumn<Dims>("shapeB");
  QTest::addColumn<QString>("fragment");
  using D = DType;
  QTest::newRow("dtype grows") << ScalarOp::Add << 0 << DTypes{D::Int32, D::Float32} << Dims{3}
                               << Dims{3} << "input 0 ('a')";
  QTest::newRow("output bigger than input") << ScalarOp::Add << 0 << DTypes{D::Float32, D::Float32}
                                            << Dims{1, 3} << Dims{4, 3} << "input 0 ('a')";
  QTest::newRow("rank grows") << ScalarOp::Mul << 1 << DTypes{D::Float32, D::Float32} << Dims{4, 3}
                              << Dims{3} << "input 1 ('b')";
  QTest::newRow("true_div of ints") << ScalarOp::TrueDiv << 0 << DTypes{D::Int32, D::Int32}
                                    << Dims{3} << Dims{3} << "input 0 ('a')";
  QTest::newRow("comparison") << ScalarOp::Lt << 1 << DTypes{D::Float32, D::Float32} << Dims{3}
                              << Dims{3} << "input 1 ('b')";
  QTest::newRow("past the inputs") << ScalarOp::Add << 2 << DTypes{D::Float32, D::Float32}
                                   << Dims{3} << Dims{3} << "input 2 but has 2 inputs";
}

void TestOp::testElemwiseInplaceErrors() {
  QFETCH(ScalarOp, op);
  QFETCH(int, into);
  QFETCH(DTypes, dtypes);
  QFETCH(Dims, shapeA);
  QFETCH(Dims, shapeB);
  QFETCH(QString, fragment);
  const VarPtr a = var(dtypes[0], shapeA, "a"), b = var(dtypes[1], shapeB, "b");
  // Without inplace the node is fine ...
  QVERIFY(elem(op)->makeNode({a, b}));
  // ... in place, the output must fit the overwritten input.
  const auto msg = thrownMessage<TypeError>([&] { elem(op, {{0, into}})->makeNode({a, b}); });
  QVERIFY2(msg, "an inplace output that does not fit its input must be refused");
  QVERIFY2(contains(msg, fragment.toStdString()), msg->c_str());
  QVERIFY2(contains(msg, ",inplace}"), msg->c_str());
}

void TestOp::testDot_data() {
  QTest::addColumn<Dims>("a");
  QTest::addColumn<Dims>("b");
  QTest::addColumn<Dims>("expected");
  QTest::newRow("vector . vector") << Dims{3} << Dims{3} << Dims{};
  QTest::newRow("matrix . vector") << Dims{2, 3} << Dims{3} << Dims{2};
  QTest::newRow("vector . matrix") << Dims{3} << Dims{3, 4} << Dims{4};
  QTest::newRow("matrix . matrix") << Dims{2, 3} << Dims{3, 4} << Dims{2, 4};
  QTest::newRow("unknown") << Dims{U, 3} << Dims{U, 4} << Dims{U, 4};
  QTest::newRow("unknown inner") << Dims{2, U} << Dims{5, U} << Dims{2, U};
  QTest::newRow("batch . matrix") << Dims{5, 2, 3} << Dims{3, 4} << Dims{5, 2, 4};
  QTest::newRow("vector . batch") << Dims{3} << Dims{5, 3, 4} << Dims{5, 4};
  QTest::newRow("batch . vector") << Dims{5, 2, 3} << Dims{3} << Dims{5, 2};
  QTest::newRow("batch broadcast") << Dims{1, 2, 3} << Dims{7, 3, 4} << Dims{7, 2, 4};
  QTest::newRow("batch unknown") << Dims{U, 2, 3} << Dims{6, 3, 4} << Dims{6, 2, 4};
  QTest::newRow("batch ranks differ") << Dims{8, 1, 2, 3} << Dims{5, 3, 4} << Dims{8, 5, 2, 4};
}

void TestOp::testDot() {
  QFETCH(Dims, a);
  QFETCH(Dims, b);
  QFETCH(Dims, expected);
  const VarPtr out = dot(fvar(a), fvar(b));
  QCOMPARE(out->type().shape(), expected);
  QCOMPARE(out->type().dtype(), DType::Float32);
  QCOMPARE(out->owner()->op().str(), std::string("Dot"));
  // dtypes promote as numpy's matmul does.
  QCOMPARE(dot(var(DType::Int32, a), var(DType::Float32, b))->type().dtype(), DType::Float64);
  QCOMPARE(dot(var(DType::Int8, a), var(DType::Int8, b))->type().dtype(), DType::Int8);
}

void TestOp::testDotErrors() {
  auto msg = thrownMessage<TypeError>([] { dot(fvar({2, 3}, "a"), fvar({4, 5}, "b")); });
  QVERIFY2(msg, "inner dimensions 3 and 4 must not match");
  QVERIFY2(contains(msg, "TensorType(float32, (2, 3))"), msg->c_str());
  QVERIFY2(contains(msg, "TensorType(float32, (4, 5))"), msg->c_str());
  QVERIFY2(contains(msg, "3 vs 4"), msg->c_str());
  QVERIFY2(contains(msg, "tst_op.cpp"), msg->c_str());  // where input 0 was made
  msg = thrownMessage<TypeError>([] { dot(fvar({3}), fvar({4})); });
  QVERIFY2(contains(msg, "TensorType(float32, (3,))"), msg ? msg->c_str() : "no error");
  msg = thrownMessage<TypeError>([] { dot(fvar({2, 2, 3}), fvar({3, 3, 4})); });
  QVERIFY2(contains(msg, "batch"), msg ? msg->c_str() : "no error");
  msg = thrownMessage<TypeError>([] { dot(fvar({}, "s"), fvar({3})); });
  QVERIFY2(contains(msg, "input 0 ('s')"), msg ? msg->c_str() : "no error");
  msg = thrownMessage<TypeError>([] { dot(fvar({3}), var(DType::Bool, {3}, "mask")); });
  QVERIFY2(contains(msg, "input 1 ('mask')"), msg ? msg->c_str() : "no error");
  msg = thrownMessage<TypeError>([] { std::make_shared<Dot>()->makeNode({fvar({3})}); });
  QVERIFY2(contains(msg, "expected 2 inputs, found 1"), msg ? msg->c_str() : "no error");
}

void TestOp::testDimShuffle_data() {
  QTest::addColumn<Dims>("input");
  QTest::addColumn<std::vector<int>>("order");
  QTest::addColumn<Dims>("expected");
  const int x = DimShuffle::kNewAxis;
  QTest::newRow("transpose") << Dims{2, 3} << std::vector<int>{1, 0} << Dims{3, 2};
  QTest::newRow("row") << Dims{3} << std::vector<int>{x, 0} << Dims{1, 3};
  QTest::newRow("col") << Dims{U} << std::vector<int>{0, x} << Dims{U, 1};
  QTest::newRow("drop broadcastable") << Dims{U, 1} << std::vector<int>{0} << Dims{U};
  QTest::newRow("1,0,x") << Dims{2, 3} << std::vector<int>{1, 0, x} << Dims{3, 2, 1};
  QTest::newRow("scalar to matrix") << Dims{} << std::vector<int>{x, x} << Dims{1, 1};
  QTest::newRow("to scalar") << Dims{1} << std::vector<int>{} << Dims{};
  QTest::newRow("drop and insert") << Dims{1, 4, 1} << std::vector<int>{x, 1} << Dims{1, 4};
}

void TestOp::testDimShuffle() {
  QFETCH(Dims, input);
  QFETCH(std::vector<int>, order);
  QFETCH(Dims, expected);
  const VarPtr in = var(DType::Int16, input, "in");
  const VarPtr out = dimshuffle(in, order);
  QCOMPARE(out->type().shape(), expected);
  QCOMPARE(out->type().dtype(), DType::Int16);
}

void TestOp::testDimShuffleErrors() {
  auto msg = thrownMessage<TypeError>([] { dimshuffle(fvar({2, 3}, "m"), {0}); });
  QVERIFY2(msg, "dropping an axis of size 3 must be refused");
  QVERIFY2(contains(msg, "input 0 ('m')"), msg->c_str());
  QVERIFY2(contains(msg, "axis 1 of static size 1"), msg->c_str());
  QVERIFY2(contains(msg, "TensorType(float32, (2, 3))"), msg->c_str());
  // An unknown dimension might not be 1: it cannot be dropped either.
  msg = thrownMessage<TypeError>([] { dimshuffle(fvar({U, 3}, "m"), {1}); });
  QVERIFY2(contains(msg, "axis 0 of static size 1"), msg ? msg->c_str() : "no error");
  msg = thrownMessage<TypeError>([] {
    std::make_shared<DimShuffle>(2, std::vector<int>{1, 0})->makeNode({fvar({3}, "v")});
  });
  QVERIFY2(contains(msg, "a 2-d tensor"), msg ? msg->c_str() : "no error");
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, DimShuffle(2, {0, 2}));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, DimShuffle(2, {1, 1}));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, DimShuffle(-1, {}));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, DimShuffle(2, {-2}));
  // transpose reverses every axis.
  QCOMPARE(transpose(fvar({2, 3, 4}))->type().shape(), (Dims{4, 3, 2}));
  QCOMPARE(qs(transpose(fvar({2, 3, 4}))->owner()->op().str()),
           QStringLiteral("DimShuffle{2,1,0}"));
}

TSCOPE_TEST_MAIN(TestOp)
#include "tst_op.moc"
