// Specialize rewrites: dot + scale + add into Gemm/Gemv for every recognised form (float32 and
// float64, 3x5 @ 5x4), the cases that must stay (bias row, integers, a dot with another client,
// sizes not known equal, mixed dtypes, a lone dot), and the cheap forms of pow, mul and div. Each
// checks the structure, the rewrite log and that the values did not change.
#include "engine/ops/blas/dot.h"
#include "engine/ops/shape/shape.h"
#include "rewrite_test_support.h"
#include "test_main.h"

#include <algorithm>
#include <functional>

using namespace tscope::test;

Q_DECLARE_METATYPE(tscope::engine::DType)

namespace {

constexpr std::int64_t U = kUnknownDim;

struct Case {
  std::vector<VarPtr> inputs;
  std::vector<VarPtr> outputs;
  std::vector<Tensor> values;
};

VarPtr input(const char* name, DType dtype, std::vector<std::int64_t> type) {
  return Variable::create(TensorType(dtype, std::move(type)), name);
}

double rtolFor(DType d) {
  return d == DType::Float32 ? 1e-4 : 1e-10;
}

// The gemm forms: X (3, 5), Y (5, 4), Z (3, 4), a and b 0-d; gemv: A (3, 5), v (5), w (3),
// z (3) and z4 (4).
using GemmForm = std::function<VarPtr(const std::map<std::string, VarPtr>&)>;

Case gemmCase(const GemmForm& form, DType dtype) {
  std::map<std::string, VarPtr> vars{
      {"X", input("X", dtype, {3, 5})}, {"Y", input("Y", dtype, {5, 4})},
      {"Z", input("Z", dtype, {3, 4})}, {"a", input("a", dtype, {})},
      {"b", input("b", dtype, {})},     {"R", input("R", dtype, {4})},
      {"P", input("P", dtype, {4, 5})}, {"Q", input("Q", dtype, {5, 3})},
      {"A", input("A", dtype, {3, 5})}, {"v", input("v", dtype, {5})},
      {"w", input("w", dtype, {3})},    {"z", input("z", dtype, {3})},
      {"z5", input("z5", dtype, {5})},
  };
  const Shape shapes[] = {{3, 5}, {5, 4}, {3, 4}, {},  {},  {4}, {4, 5},
                          {5, 3}, {3, 5}, {5},    {3}, {3}, {5}};
  const char* names[] = {"X", "Y", "Z", "a", "b", "R", "P", "Q", "A", "v", "w", "z", "z5"};
  Case c;
  c.outputs = {form(vars)};
  std::uint64_t seed = 100;
  for (std::size_t i = 0; i < std::size(names); ++i) {
    c.inputs.push_back(vars.at(names[i]));
    c.values.push_back(randomTensor(dtype, shapes[i], seed++));
  }
  return c;
}

}  // namespace

Q_DECLARE_METATYPE(GemmForm)

class TestSpecialize : public QObject {
  Q_OBJECT

 private slots:
  void testGemmForms_data() {
    QTest::addColumn<GemmForm>("form");
    QTest::addColumn<QString>("op");
    const std::vector<std::tuple<const char*, const char*, GemmForm>> forms{
        {"Z + a*dot", "Gemm{no_inplace}",
         [](auto& v) { return add(v.at("Z"), mul(v.at("a"), dot(v.at("X"), v.at("Y")))); }},
        {"b*Z + a*dot", "Gemm{no_inplace}",
         [](auto& v) {
           return add(mul(v.at("b"), v.at("Z")), mul(dot(v.at("X"), v.at("Y")), v.at("a")));
         }},
        {"Z - a*dot", "Gemm{no_inplace}",
         [](auto& v) { return sub(v.at("Z"), mul(v.at("a"), dot(v.at("X"), v.at("Y")))); }},
        {"dot + Z", "Gemm{no_inplace}",
         [](auto& v) { return add(dot(v.at("X"), v.at("Y")), v.at("Z")); }},
        {"Z - dot", "Gemm{no_inplace}",
         [](auto& v) { return sub(v.at("Z"), dot(v.at("X"), v.at("Y"))); }},
        {"Z + 0.5*dot*a", "Gemm{no_inplace}",
         [](auto& v) { return add(v.at("Z"), mul(dot(v.at("X"), v.at("Y")) * 0.5, v.at("a"))); }},
        {"-(a*dot) + 2*Z", "Gemm{no_inplace}",
         [](auto& v) {
           return add(neg(mul(v.at("a"), dot(v.at("X"), v.at("Y")))), v.at("Z") * 2.0);
         }},
        {"Z + dot(P, Q).T", "Gemm{no_inplace}",
         [](auto& v) { return add(v.at("Z"), transpose(dot(v.at("P"), v.at("Q")))); }},
        {"dot + Z + bias", "Gemm{no_inplace}",
         [](auto& v) { return add(add(dot(v.at("X"), v.at("Y")), v.at("R")), v.at("Z")); }},
        {"(Z - dot) - bias", "Gemm{no_inplace}",
         [](auto& v) { return sub(sub(v.at("Z"), dot(v.at("X"), v.at("Y"))), v.at("R")); }},
        {"z + a*dot(A, v)", "Gemv{no_inplace}",
         [](auto& v) { return add(v.at("z"), mul(v.at("a"), dot(v.at("A"), v.at("v")))); }},
        {"b*z - dot(A, v)", "Gemv{no_inplace}",
         [](auto& v) { return sub(mul(v.at("z"), v.at("b")), dot(v.at("A"), v.at("v"))); }},
        {"z5 + dot(w, A)", "Gemv{no_inplace}",
         [](auto& v) { return add(v.at("z5"), dot(v.at("w"), v.at("A"))); }},
    };
    for (DType dtype : {DType::Float32, DType::Float64}) {
      for (const auto& [name, op, form] : forms) {
        const std::string row =
            std::string(name) + (dtype == DType::Float32 ? " float32" : " float64");
        QTest::newRow(row.c_str()) << form << QString(op);
        m_dtypes[row] = dtype;
      }
    }
  }
  void testGemmForms() {
    QFETCH(GemmForm, form);
    QFETCH(QString, op);
    const DType dtype = m_dtypes.at(QTest::currentDataTag());
    const Case c = gemmCase(form, dtype);
    Rewritten r = rewrite(c.inputs, c.outputs, only({"gemm_from_dot_add"}));
    QVERIFY(logged(r, "gemm_from_dot_add"));
    QCOMPARE(countOps(*r.graph, op.toStdString()), 1);
    QCOMPARE(countOps(*r.graph, "Dot"), 0);
    QVERIFY(r.graph->outputs()[0]->type() == c.outputs[0]->type());
    QVERIFY(sameValues(c.inputs, c.outputs, *r.graph, c.values, rtolFor(dtype), 1e-5));
  }

  // The SGD update of a weight matrix: one Gemm, with the batch size unknown.
  void testSgdUpdateIsOneGemm_data() {
    QTest::addColumn<DType>("dtype");
    QTest::addColumn<QString>("mode");
    for (DType d : {DType::Float32, DType::Float64})
      for (const char* mode : {"only", "fast_run"})
        QTest::newRow((std::string(mode) + (d == DType::Float32 ? " float32" : " float64")).c_str())
            << d << QString(mode);
  }
  void testSgdUpdateIsOneGemm() {
    QFETCH(DType, dtype);
    QFETCH(QString, mode);
    auto W = input("W", dtype, {5, 4});
    auto x = input("x", dtype, {U, 5});
    auto delta = input("delta", dtype, {U, 4});
    auto updated = W - dot(transpose(x), delta) * 0.1;
    const RewriteQuery query =
        mode == "only" ? only({"gemm_from_dot_add"}) : RewriteQuery::forMode("fast_run");
    Rewritten r = rewrite({W, x, delta}, {updated}, query);
    QVERIFY(logged(r, "gemm_from_dot_add"));
    QCOMPARE(countOps(*r.graph, "Gemm{no_inplace}") + countOps(*r.graph, "Gemm{inplace}"), 1);
    QCOMPARE(countOps(*r.graph, "Dot"), 0);
    QVERIFY(sameValues({W, x, delta}, {updated}, *r.graph,
                       {randomTensor(dtype, {5, 4}, 1), randomTensor(dtype, {7, 5}, 2),
                        randomTensor(dtype, {7, 4}, 3)},
                       rtolFor(dtype), 1e-5));
  }

  // Cases that must stay as they are (Note [Gemm shape condition] and [Gemm terms]).
  void testGemmNotApplied_data() {
    QTest::addColumn<GemmForm>("form");
    QTest::addColumn<int>("dots");
    // A bias row broadcast over the product: b is not Z.
    QTest::newRow("bias row") << GemmForm([](auto& v) {
      return add(dot(v.at("X"), v.at("Y")), v.at("R"));
    }) << 1;
    // A scaled product alone: no Z to add it to.
    QTest::newRow("a*dot") << GemmForm([](auto& v) {
      return mul(v.at("a"), dot(v.at("X"), v.at("Y")));
    }) << 1;
    // A lone product stays Dot (it calls the GEMM kernel already); so does matrix . vector.
    QTest::newRow("lone dot") << GemmForm([](auto& v) { return dot(v.at("X"), v.at("Y")); }) << 1;
    QTest::newRow("lone matrix . vector")
        << GemmForm([](auto& v) { return exp(dot(v.at("A"), v.at("v"))); }) << 1;
    // A scale that is a vector, not a scalar, makes the scaled product a plain term.
    QTest::newRow("vector scale") << GemmForm([](auto& v) {
      return add(v.at("Z"), mul(dot(v.at("X"), v.at("Y")), v.at("R")));
    }) << 1;
  }
  void testGemmNotApplied() {
    QFETCH(GemmForm, form);
    QFETCH(int, dots);
    for (DType dtype : {DType::Float32, DType::Float64}) {
      const Case c = gemmCase(form, dtype);
      Rewritten r = rewrite(c.inputs, c.outputs, only({"gemm_from_dot_add"}));
      QVERIFY(!logged(r, "gemm_from_dot_add"));
      QCOMPARE(countOps(*r.graph, "Gemm{no_inplace}") + countOps(*r.graph, "Gemv{no_inplace}"), 0);
      QCOMPARE(countOps(*r.graph, "Dot"), dots);
      QVERIFY(sameValues(c.inputs, c.outputs, *r.graph, c.values, rtolFor(dtype), 1e-5));
    }
  }

  void testGemmNotAppliedToIntegersOrMixedDtypes() {
    auto X = input("X", DType::Int32, {3, 5});
    auto Y = input("Y", DType::Int32, {5, 4});
    auto Z = input("Z", DType::Int32, {3, 4});
    auto F = input("F", DType::Float32, {3, 5});
    auto G = input("G", DType::Float32, {5, 4});
    auto D = input("D", DType::Float64, {3, 4});
    auto ints = add(Z, dot(X, Y));
    auto mixed = add(D, dot(F, G));  // a float64 sum of a float32 product
    Rewritten r = rewrite({X, Y, Z, F, G, D}, {ints, mixed}, only({"gemm_from_dot_add"}));
    QVERIFY(!logged(r, "gemm_from_dot_add"));
    QCOMPARE(countOps(*r.graph, "Dot"), 2);
    QVERIFY(sameValues(
        {X, Y, Z, F, G, D}, {ints, mixed}, *r.graph,
        {randomTensor(DType::Int32, {3, 5}, 1, -5, 5), randomTensor(DType::Int32, {5, 4}, 2, -5, 5),
         randomTensor(DType::Int32, {3, 4}, 3, -5, 5), randomTensor(DType::Float32, {3, 5}, 4),
         randomTensor(DType::Float32, {5, 4}, 5), randomTensor(DType::Float64, {3, 4}, 6)}));
  }

  // A dot with another client would be computed twice; sizes not known equal could broadcast.
  void testGemmNotAppliedToSharedDotOrUnknownSizes() {
    auto X = input("X", DType::Float64, {3, 5});
    auto Y = input("Y", DType::Float64, {5, 4});
    auto Z = input("Z", DType::Float64, {3, 4});
    auto d = dot(X, Y);
    auto shared = add(Z, d);
    auto other = exp(d);
    auto P = input("P", DType::Float64, {U, U});
    auto Q = input("Q", DType::Float64, {U, U});
    auto S = input("S", DType::Float64, {U, U});
    auto unknown = add(S, dot(P, Q));
    const std::vector<VarPtr> inputs{X, Y, Z, P, Q, S};
    Rewritten r = rewrite(inputs, {shared, other, unknown}, only({"gemm_from_dot_add"}));
    QVERIFY(!logged(r, "gemm_from_dot_add"));
    QCOMPARE(countOps(*r.graph, "Dot"), 2);
    // S with one row broadcasts over the product: a Gemm would have refused these shapes.
    QVERIFY(sameValues(
        inputs, {shared, other, unknown}, *r.graph,
        {randomTensor(DType::Float64, {3, 5}, 1), randomTensor(DType::Float64, {5, 4}, 2),
         randomTensor(DType::Float64, {3, 4}, 3), randomTensor(DType::Float64, {3, 5}, 4),
         randomTensor(DType::Float64, {5, 4}, 5), randomTensor(DType::Float64, {1, 4}, 6)}));
    // With Z's sizes taken from the factors' (a filled matrix), the shapes are known equal.
    auto s = input("s", DType::Float64, {});
    auto tied = add(alloc(s, ShapeExpr{shapeI(P, 0), shapeI(Q, 1)}), dot(P, Q));
    Rewritten t = rewrite({P, Q, s}, {tied}, only({"gemm_from_dot_add"}));
    QVERIFY(logged(t, "gemm_from_dot_add"));
    QCOMPARE(countOps(*t.graph, "Gemm{no_inplace}"), 1);
    QVERIFY(
        sameValues({P, Q, s}, {tied}, *t.graph,
                   {randomTensor(DType::Float64, {3, 5}, 7),
                    randomTensor(DType::Float64, {5, 4}, 8), randomTensor(DType::Float64, {}, 9)}));
  }

  // Note [Cheap forms]: each rule with the op it leaves and the op it removes (none for the
  // n-ary product, which keeps a mul beside the new sqr).
  void testCheapForms_data() {
    QTest::addColumn<QString>("rewriter");
    QTest::addColumn<GemmForm>("form");
    QTest::addColumn<QString>("present");
    QTest::addColumn<QString>("gone");
    const std::vector<std::tuple<const char*, const char*, GemmForm, const char*, const char*>>
        rows{
            {"pow 2", "pow_2_to_sqr",
             [](auto& v) { return pow(v.at("X"), scalarLike(2.0, v.at("X"))); }, "Elemwise{sqr}",
             "Elemwise{pow}"},
            {"pow 3", "pow_3_to_mul_sqr",
             [](auto& v) { return pow(v.at("X"), scalarLike(3.0, v.at("X"))); }, "Elemwise{sqr}",
             ""},
            {"pow 0.5", "pow_half_to_sqrt",
             [](auto& v) { return pow(v.at("X"), scalarLike(0.5, v.at("X"))); }, "Elemwise{sqrt}",
             "Elemwise{pow}"},
            {"pow 1", "pow_1_to_x",
             [](auto& v) { return exp(pow(v.at("X"), scalarLike(1.0, v.at("X")))); },
             "Elemwise{exp}", "Elemwise{pow}"},
            {"pow -1", "pow_minus_1_to_reciprocal",
             [](auto& v) { return pow(v.at("X"), scalarLike(-1.0, v.at("X"))); },
             "Elemwise{true_div}", "Elemwise{pow}"},
            {"pow -0.5", "pow_minus_half_to_reciprocal_sqrt",
             [](auto& v) { return pow(v.at("X"), scalarLike(-0.5, v.at("X"))); }, "Elemwise{sqrt}",
             "Elemwise{pow}"},
            {"x * x", "mul_self_to_sqr", [](auto& v) { return mul(v.at("X"), v.at("X")); },
             "Elemwise{sqr}", "Elemwise{mul}"},
            {"x * x * y", "mul_self_to_sqr",
             [](auto& v) {
               return elemwise(ScalarOp::Mul, {v.at("X"), v.at("A"), v.at("X")});
             },
             "Elemwise{sqr}", ""},
            {"x / 4", "div_by_constant_to_mul", [](auto& v) { return v.at("X") / 4.0; },
             "Elemwise{mul}", "Elemwise{true_div}"},
            {"x / [row]", "div_by_constant_to_mul",
             [](auto& v) {
               const Tensor row =
                   Tensor::fromDoubles(v.at("X")->type().dtype(), {5}, {1, 2, 4, -8, 0.5});
               return trueDiv(v.at("X"), constant(row));
             },
             "Elemwise{mul}", "Elemwise{true_div}"},
            {"neg(x) * 3", "mul_neg_constant", [](auto& v) { return neg(v.at("X")) * 3.0; },
             "Elemwise{mul}", "Elemwise{neg}"},
        };
    for (DType dtype : {DType::Float32, DType::Float64}) {
      for (const auto& [name, rewriter, form, present, gone] : rows) {
        const std::string row =
            std::string(name) + (dtype == DType::Float32 ? " float32" : " float64");
        QTest::newRow(row.c_str())
            << QString(rewriter) << form << QString(present) << QString(gone);
        m_dtypes[row] = dtype;
      }
    }
  }
  void testCheapForms() {
    QFETCH(QString, rewriter);
    QFETCH(GemmForm, form);
    QFETCH(QString, present);
    QFETCH(QString, gone);
    const DType dtype = m_dtypes.at(QTest::currentDataTag());
    auto X = input("X", dtype, {3, 5});
    auto A = input("A", dtype, {3, 5});
    const std::map<std::string, VarPtr> vars{{"X", X}, {"A", A}};
    const VarPtr out = form(vars);
    const std::string name = rewriter.toStdString();
    Rewritten r = rewrite({X, A}, {out}, only({name.c_str()}));
    QVERIFY(logged(r, name));
    QVERIFY(countOps(*r.graph, present.toStdString()) >= 1);
    if (!gone.isEmpty()) QCOMPARE(countOps(*r.graph, gone.toStdString()), 0);
    QVERIFY(r.graph->outputs()[0]->type() == out->type());
    // Positive values: sqrt and the reciprocals are defined.
    QVERIFY(sameValues({X, A}, {out}, *r.graph,
                       {randomTensor(dtype, {3, 5}, 7, 0.5, 2.0), randomTensor(dtype, {3, 5}, 8)},
                       rtolFor(dtype), 1e-6));
  }

  // Integer pow keeps its own dtype rules; other exponents, divisors that are variables and
  // products of different variables stay.
  void testCheapFormsNotApplied() {
    auto i = input("i", DType::Int32, {3, 5});
    auto x = input("x", DType::Float64, {3, 5});
    auto y = input("y", DType::Float64, {3, 5});
    const std::vector<VarPtr> outs{pow(i, scalarLike(2.0, i)), pow(x, scalarLike(2.5, x)), x / y,
                                   mul(x, y), neg(x) * y};
    Rewritten r = rewrite({i, x, y}, outs,
                          only({"pow_2_to_sqr", "pow_half_to_sqrt", "mul_self_to_sqr",
                                "div_by_constant_to_mul", "mul_neg_constant"}));
    QVERIFY(r.recorder->records().empty());
    QCOMPARE(countOps(*r.graph, "Elemwise{pow}"), 2);
    QCOMPARE(countOps(*r.graph, "Elemwise{true_div}"), 1);
    QCOMPARE(countOps(*r.graph, "Elemwise{neg}"), 1);
    QVERIFY(sameValues({i, x, y}, outs, *r.graph,
                       {randomTensor(DType::Int32, {3, 5}, 1, -5, 5),
                        randomTensor(DType::Float64, {3, 5}, 2, 0.5, 2.0),
                        randomTensor(DType::Float64, {3, 5}, 3, 0.5, 2.0)}));
  }

 private:
  std::map<std::string, DType> m_dtypes;  // data tag -> dtype of the row
};

TSCOPE_TEST_MAIN(TestSpecialize)
#include "tst_specialize.moc"
