// Composite: values against the unfused Elemwise chain (float32/float64/float16/integer/bool
// dtypes, broadcasting rows, columns and scalars, transposed inputs, block boundaries, casts,
// n-ary folds, multi-output), in-place operation, inferShape, gradients and R-op through the
// expansion, props round trips, malformed props and the printed formula.
#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/elemwise/composite.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/register_ops.h"
#include "op_test_support.h"
#include "test_main.h"

#include <cmath>
#include <functional>
#include <map>
#include <vector>

using namespace tscope::engine;
using namespace tscope::test;
using json = nlohmann::json;

Q_DECLARE_METATYPE(nlohmann::json)

namespace {
using S = ScalarOp;
using Dims = std::vector<std::int64_t>;
constexpr DType F32 = DType::Float32;
constexpr DType F64 = DType::Float64;
constexpr DType I32 = DType::Int32;

// Builds a program register by register: registers 0..n-1 are the inputs.
struct ScalarProgram {
  std::vector<DType> inputs;
  std::vector<CompositeInstruction> code;
  int op(ScalarOp s, std::vector<int> args) {
    code.push_back({s, std::move(args), F32});
    return static_cast<int>(inputs.size() + code.size()) - 1;
  }
  int castTo(int reg, DType d) {
    code.push_back({S::Cast, {reg}, d});
    return static_cast<int>(inputs.size() + code.size()) - 1;
  }
  std::shared_ptr<Composite> make(std::vector<int> outputs, std::map<int, int> inplace = {}) const {
    return std::make_shared<Composite>(inputs, code, std::move(outputs), std::move(inplace));
  }
};

// Symbolic inputs typed like the values, every dimension unknown.
std::vector<VarPtr> varsFor(const std::vector<Tensor>& values) {
  std::vector<VarPtr> vars;
  for (std::size_t i = 0; i < values.size(); ++i)
    vars.push_back(Variable::create(TensorType::ofRank(values[i].dtype(), values[i].ndim()),
                                    "x" + std::to_string(i)));
  return vars;
}

// The Composite's outputs and the unfused chain's (expandComposite), each compiled in mode none.
std::pair<std::vector<Tensor>, std::vector<Tensor>> fusedAndUnfused(
    const OpPtr& op, const std::vector<Tensor>& values) {
  const auto& composite = static_cast<const Composite&>(*op);
  std::vector<VarPtr> vars = varsFor(values);
  std::vector<VarPtr> fused = op->makeNode(vars)->outputs();
  std::vector<VarPtr> unfused = expandComposite(composite, vars);
  return {compile(vars, fused)(values), compile(vars, unfused)(values)};
}

bool bitwiseSame(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!a[i].bitwiseEqual(b[i])) {
      qWarning("output %zu differs:\nfused   %s %s\n%s\nunfused %s %s\n%s", i,
               std::string(dtypeName(a[i].dtype())).c_str(), shapeToString(a[i].shape()).c_str(),
               a[i].toString().c_str(), std::string(dtypeName(b[i].dtype())).c_str(),
               shapeToString(b[i].shape()).c_str(), b[i].toString().c_str());
      return false;
    }
  }
  return true;
}

Tensor rnd(DType d, Shape shape, std::uint64_t seed, double lo = -2.0, double hi = 2.0) {
  return randomTensor(d, std::move(shape), seed, lo, hi);
}

// tanh(x * a + b) * c - x on four inputs of dtype d.
std::shared_ptr<Composite> chainOfFive(DType d) {
  ScalarProgram p{{d, d, d, d}, {}};
  const int t = p.op(S::Tanh, {p.op(S::Add, {p.op(S::Mul, {0, 1}), 2})});
  return p.make({p.op(S::Sub, {p.op(S::Mul, {t, 3}), 0})});
}

// A value case: the op and its inputs.
struct Case {
  const char* name;
  std::function<std::pair<OpPtr, std::vector<Tensor>>()> make;
};

std::vector<Case> valueCases() {
  std::vector<Case> cases;
  cases.push_back({"float32 chain", [] {
                     const Shape s{7, 300};  // 2100 elements: several blocks, the last one short
                     return std::make_pair(OpPtr(chainOfFive(F32)),
                                           std::vector<Tensor>{rnd(F32, s, 1), rnd(F32, s, 2),
                                                               rnd(F32, s, 3), rnd(F32, s, 4)});
                   }});
  cases.push_back({"float64 transcendentals", [] {
                     ScalarProgram p{{F64, F64, F64}, {}};
                     const int e = p.op(S::Log1p, {p.op(S::Exp, {p.op(S::Mul, {0, 1})})});
                     const int d = p.op(S::Add, {p.op(S::Sqrt, {p.op(S::Abs, {1})}), 2});
                     const int y = p.op(S::TrueDiv, {e, d});
                     const int z = p.op(S::Sigmoid, {p.op(S::Log, {p.op(S::Softplus, {y})})});
                     return std::make_pair(
                         OpPtr(p.make({z, y})),
                         std::vector<Tensor>{rnd(F64, {5, 133}, 5), rnd(F64, {5, 133}, 6),
                                             Tensor::scalar(F64, 1.0)});
                   }});
  cases.push_back({"int32 arithmetic", [] {
                     ScalarProgram p{{I32, I32, I32}, {}};
                     const int a = p.op(
                         S::Maximum, {p.op(S::Sub, {p.op(S::Mul, {0, 1}), 0}), p.op(S::Neg, {1})});
                     const int b = p.op(S::Add, {p.op(S::Mod, {a, 2}), p.op(S::IntDiv, {0, 2})});
                     return std::make_pair(OpPtr(p.make({b})),
                                           std::vector<Tensor>{rnd(I32, {5, 37}, 7, -50, 50),
                                                               rnd(I32, {5, 37}, 8, -50, 50),
                                                               Tensor::scalar(I32, 7)});
                   }});
  cases.push_back(
      {"int8 and uint8 wrap", [] {
         ScalarProgram p{{DType::Int8, DType::UInt8}, {}};
         const int a =
             p.op(S::Add, {p.op(S::Mul, {0, 0}), 1});  // int8 * int8 wraps, + uint8 -> int16
         const int b = p.op(S::Sqr, {1});              // uint8 wraps
         return std::make_pair(OpPtr(p.make({a, b})),
                               std::vector<Tensor>{rnd(DType::Int8, {3, 70}, 9, -128, 127),
                                                   rnd(DType::UInt8, {3, 70}, 10, 0, 255)});
       }});
  cases.push_back(
      {"mixed dtypes, comparisons and switch", [] {
         ScalarProgram p{{I32, F32}, {}};
         const int s = p.op(S::Tanh, {p.op(S::Add, {0, 1})});  // int32 + float32 -> float64
         const int c = p.op(S::Gt, {0, 1});
         const int w = p.op(S::Switch, {c, p.op(S::Mul, {1, 1}), 0});
         const int l = p.op(S::And, {c, p.op(S::Not, {p.op(S::Eq, {0, 1})})});
         return std::make_pair(
             OpPtr(p.make({s, w, l})),
             std::vector<Tensor>{rnd(I32, {4, 90}, 11, -3, 3), rnd(F32, {4, 90}, 12, -3, 3)});
       }});
  cases.push_back(
      {"float16 rounds after each op", [] {
         ScalarProgram p{{DType::Float16, DType::Float16}, {}};
         const int y = p.op(S::Sqrt, {p.op(S::Abs, {p.op(S::Add, {p.op(S::Mul, {0, 1}), 0})})});
         return std::make_pair(OpPtr(p.make({y, p.op(S::Lt, {y, 1})})),
                               std::vector<Tensor>{rnd(DType::Float16, {3, 50}, 13),
                                                   rnd(DType::Float16, {3, 50}, 14)});
       }});
  cases.push_back({"cast inside", [] {
                     ScalarProgram p{{F64, F64, I32, F32}, {}};
                     const int i = p.op(S::Add, {p.castTo(p.op(S::Mul, {0, 1}), I32), 2});
                     const int f = p.op(S::Mul, {p.castTo(i, F32), 3});
                     return std::make_pair(
                         OpPtr(p.make({f, p.castTo(0, DType::UInt8), p.castTo(3, DType::Bool)})),
                         std::vector<Tensor>{rnd(F64, {6, 45}, 15, -20, 20),
                                             rnd(F64, {6, 45}, 16, -20, 20),
                                             rnd(I32, {6, 45}, 17, -9, 9), rnd(F32, {6, 45}, 18)});
                   }});
  cases.push_back({"n-ary fold, clip and second", [] {
                     ScalarProgram p{{F32, F32, F32, F32, F32}, {}};
                     const int sum = p.op(S::Add, {0, 1, 2, 3});
                     const int prod = p.op(S::Mul, {0, 1, 4});
                     const int clipped = p.op(S::Clip, {sum, 4, p.op(S::Add, {4, 4})});
                     const int second = p.op(S::Second, {0, 4});
                     return std::make_pair(
                         OpPtr(p.make({prod, clipped, second})),
                         std::vector<Tensor>{rnd(F32, {9, 31}, 19), rnd(F32, {9, 31}, 20),
                                             rnd(F32, {9, 31}, 21), rnd(F32, {9, 31}, 22),
                                             Tensor::scalar(F32, 0.25)});
                   }});
  cases.push_back({"broadcast row, column and scalar", [] {
                     ScalarProgram p{{F32, F32, F32, F32}, {}};
                     const int y = p.op(S::Sub, {p.op(S::Add, {p.op(S::Mul, {0, 1}), 2}), 3});
                     return std::make_pair(
                         OpPtr(p.make({p.op(S::Tanh, {y}), y})),
                         std::vector<Tensor>{rnd(F32, {6, 300}, 23), rnd(F32, {300}, 24),
                                             rnd(F32, {6, 1}, 25), Tensor::scalar(F32, 0.5)});
                   }});
  cases.push_back({"integer broadcast", [] {
                     ScalarProgram p{{DType::Int64, DType::Int64}, {}};
                     return std::make_pair(
                         OpPtr(p.make({p.op(S::Minimum, {p.op(S::Mul, {0, 1}), 1})})),
                         std::vector<Tensor>{rnd(DType::Int64, {4, 1, 33}, 26, -9, 9),
                                             rnd(DType::Int64, {5, 1}, 27, -9, 9)});
                   }});
  cases.push_back(
      {"transposed inputs", [] {
         ScalarProgram p{{F32, F32}, {}};
         const int y = p.op(S::Tanh, {p.op(S::Add, {p.op(S::Mul, {0, 1}), p.op(S::Sqr, {0})})});
         // x is a (300, 7) tensor seen as (7, 300): no axis is contiguous.
         return std::make_pair(
             OpPtr(p.make({y})),
             std::vector<Tensor>{rnd(F32, {300, 7}, 28).transpose(), rnd(F32, {7, 300}, 29)});
       }});
  cases.push_back({"scalar-only instructions and 0-d inputs", [] {
                     ScalarProgram p{{F64, F64, F64}, {}};
                     const int s = p.op(S::Exp, {p.op(S::Mul, {1, 2})});  // computed once per block
                     return std::make_pair(
                         OpPtr(p.make({p.op(S::Sub, {p.op(S::Mul, {0, s}), 2})})),
                         std::vector<Tensor>{rnd(F64, {3, 100}, 30), Tensor::scalar(F64, 0.3),
                                             Tensor::scalar(F64, -1.5)});
                   }});
  return cases;
}
}  // namespace

Q_DECLARE_METATYPE(Dims)

class TestComposite : public QObject {
  Q_OBJECT

 private slots:
  void testValuesMatchUnfused_data() {
    QTest::addColumn<int>("index");
    const auto cases = valueCases();
    for (std::size_t i = 0; i < cases.size(); ++i)
      QTest::newRow(cases[i].name) << static_cast<int>(i);
  }
  void testValuesMatchUnfused() {
    QFETCH(int, index);
    auto [op, values] = valueCases()[static_cast<std::size_t>(index)].make();
    auto [fused, unfused] = fusedAndUnfused(op, values);
    QVERIFY(bitwiseSame(fused, unfused));
  }

  // Note [Composite results]: the block sizes keep Eigen's packets where the unfused row has them,
  // so even tanh agrees bit for bit, whatever the element count.
  void testBlockBoundaries_data() {
    QTest::addColumn<Dims>("shape");
    for (Dims s : {Dims{}, Dims{1}, Dims{15}, Dims{17}, Dims{256}, Dims{257}, Dims{271}, Dims{272},
                   Dims{2, 263}, Dims{3, 256}, Dims{0, 4}, Dims{1000, 1}})
      QTest::addRow("%s", shapeToString(s).c_str()) << s;
  }
  void testBlockBoundaries() {
    QFETCH(Dims, shape);
    std::vector<Tensor> values;
    for (std::uint64_t k = 0; k < 4; ++k) values.push_back(rnd(F32, shape, 40 + k));
    auto [fused, unfused] = fusedAndUnfused(chainOfFive(F32), values);
    QVERIFY(bitwiseSame(fused, unfused));
    QCOMPARE(fused[0].shape(), Shape(shape));
  }

  // Outputs of 8 MiB and more are written with non-temporal stores (Note [Composite streaming]),
  // also into an input's buffer that does not start on a 16-byte boundary.
  void testStreamedOutputs() {
    const std::int64_t n = (std::int64_t{8} << 20) / 4 + 37;
    std::vector<Tensor> values;
    for (std::uint64_t k = 0; k < 4; ++k) values.push_back(rnd(F32, {n}, 90 + k));
    auto [fused, unfused] = fusedAndUnfused(chainOfFive(F32), values);
    QVERIFY(bitwiseSame(fused, unfused));

    const Tensor storage = rnd(F32, {n + 1}, 94);
    values[0] = storage.slice(0, 1, n + 1);  // contiguous, 4 bytes past an aligned start
    const Tensor expected = fusedAndUnfused(chainOfFive(F32), values).second[0];
    auto inplace = chainOfFive(F32)->withInplace({{0, 0}});
    std::vector<VarPtr> vars = varsFor(values);
    ApplyPtr node = inplace->makeNode(vars);
    std::vector<const Tensor*> in;
    for (const Tensor& v : values) in.push_back(&v);
    Tensor out;
    Tensor* outs[] = {&out};
    inplace->perform(*node, in, outs);
    QVERIFY(out.sharesStorageWith(storage));
    QVERIFY(out.bitwiseEqual(expected));
  }

  // A transcendental applied straight to a gathered input may take another code path than the
  // unfused strided loop (Note [Composite results]): close, not necessarily equal.
  void testTranscendentalOfTransposedInput() {
    ScalarProgram p{{F32, F32}, {}};
    auto op = p.make({p.op(S::Mul, {p.op(S::Exp, {0}), 1})});
    std::vector<Tensor> values{rnd(F32, {300, 7}, 50).transpose(), rnd(F32, {7, 300}, 51)};
    auto [fused, unfused] = fusedAndUnfused(op, values);
    QVERIFY(closeTo(fused[0], unfused[0], 1e-6, 1e-7));
  }

  // An output that depends only on inputs broadcast at run time (unknown static dims) does not have
  // the full shape: that call runs unfused and every output keeps its own shape.
  void testRuntimeBroadcastRunsUnfused() {
    ScalarProgram p{{F32, F32}, {}};
    auto op = p.make({p.op(S::Add, {0, 1}), p.op(S::Exp, {0})});
    std::vector<Tensor> values{rnd(F32, {1, 5}, 52), rnd(F32, {4, 5}, 53)};
    auto [fused, unfused] = fusedAndUnfused(op, values);
    QVERIFY(bitwiseSame(fused, unfused));
    QCOMPARE(fused[1].shape(), (Shape{1, 5}));
  }

  void testBroadcastErrorNamesShapes() {
    auto op = chainOfFive(F32);
    std::vector<Tensor> values{rnd(F32, {2, 3}, 1), rnd(F32, {4, 3}, 2), rnd(F32, {2, 3}, 3),
                               rnd(F32, {2, 3}, 4)};
    std::vector<VarPtr> vars = varsFor(values);
    ApplyPtr node = op->makeNode(vars);
    std::vector<const Tensor*> in;
    for (const Tensor& v : values) in.push_back(&v);
    Tensor out;
    Tensor* outs[] = {&out};
    try {
      op->perform(*node, in, outs);
      QFAIL("expected std::invalid_argument");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(std::string(e.what()).find("cannot be broadcast together: (2, 3), (4, 3)") !=
                   std::string::npos,
               e.what());
    }
  }

  void testOutputTypes() {
    ScalarProgram p{{F32, I32}, {}};
    auto op = p.make({p.op(S::Add, {0, 1}), p.op(S::Neg, {1})});
    auto x = Variable::create(TensorType(F32, {3, kUnknownDim}), "x");
    auto row = Variable::create(TensorType(I32, {1, 5}), "row");
    ApplyPtr node = op->makeNode({x, row});
    QCOMPARE(node->outputRef(0).type(), TensorType(F64, {3, 5}));  // float32 + int32 -> float64
    QCOMPARE(node->outputRef(1).type(), TensorType(I32, {1, 5}));  // only the row: its own shape
    auto wrong = Variable::create(TensorType(F64, {3, 5}), "wrong");
    try {
      op->makeNode({wrong, row});
      QFAIL("expected a TypeError");
    } catch (const TypeError& e) {
      QVERIFY2(std::string(e.what()).find("dtype float32") != std::string::npos, e.what());
    }
  }

  void testInplace() {
    auto plain = chainOfFive(F32);
    auto inplace = plain->withInplace({{0, 0}});
    QCOMPARE(inplace->destroyMap(), (DestroyMap{{0, {0}}}));
    QCOMPARE(QString::fromStdString(inplace->str()),
             QString::fromStdString(plain->str()).chopped(1) + ",inplace}");
    QVERIFY(!inplace->equals(*plain));

    // The node is typed by the plain op: an inplace op refuses to type an input it cannot hold the
    // output in, and perform must then still compute into a fresh buffer.
    auto run = [&](const OpPtr& op, const std::vector<Tensor>& values) {
      std::vector<VarPtr> vars = varsFor(values);
      ApplyPtr node = plain->makeNode(vars);
      std::vector<const Tensor*> in;
      for (const Tensor& v : values) in.push_back(&v);
      Tensor out;
      Tensor* outs[] = {&out};
      op->perform(*node, in, outs);
      return out;
    };
    for (bool transposed : {false, true}) {
      std::vector<Tensor> values{
          transposed ? rnd(F32, {300, 5}, 60).transpose() : rnd(F32, {5, 300}, 60),
          rnd(F32, {5, 300}, 61), rnd(F32, {5, 300}, 62), rnd(F32, {5, 300}, 63)};
      const Tensor expected = run(plain, values);
      const Tensor before = values[0].clone();
      const Tensor out = run(inplace, values);
      QVERIFY(out.sharesStorageWith(values[0]));
      QVERIFY(out.bitwiseEqual(expected));
      QVERIFY(values[0].bitwiseEqual(expected));  // the input holds the result now
      QVERIFY(!before.bitwiseEqual(expected));
    }
    // An input that is broadcast, or that another input reads through another view, is not written.
    {
      std::vector<Tensor> values{rnd(F32, {300}, 64), rnd(F32, {5, 300}, 65),
                                 rnd(F32, {5, 300}, 66), rnd(F32, {5, 300}, 67)};
      const Tensor before = values[0].clone();
      const Tensor out = run(inplace, values);
      QVERIFY(!out.sharesStorageWith(values[0]));
      QVERIFY(values[0].bitwiseEqual(before));
    }
    {
      const Tensor square = rnd(F32, {40, 40}, 68);
      std::vector<Tensor> values{square, square.transpose(), rnd(F32, {40, 40}, 69),
                                 rnd(F32, {40, 40}, 70)};
      const Tensor expected = run(plain, values);
      const Tensor out = run(inplace, values);
      QVERIFY(!out.sharesStorageWith(square));
      QVERIFY(out.bitwiseEqual(expected));
    }
  }

  void testInferShape() {
    // Non-square shapes; output 1 depends on the row alone and keeps its shape.
    auto build = [](const std::vector<VarPtr>& in) {
      ScalarProgram p{{F64, F64, F64}, {}};
      auto op = p.make({p.op(S::Mul, {p.op(S::Add, {0, 1}), 2}), p.op(S::Exp, {1})});
      return op->makeNode(in)->outputs();
    };
    TSCOPE_CHECK(
        checkInferShape(build, {rnd(F64, {3, 5}, 71), rnd(F64, {5}, 72), rnd(F64, {3, 1}, 73)}));
    TSCOPE_CHECK(
        checkInferShape(build, {rnd(F64, {2, 1, 4}, 74), rnd(F64, {4}, 75), rnd(F64, {3, 1}, 76)}));
  }

  void testGradient() {
    // Two outputs, a broadcast row, an int input (disconnected) and a switch (its condition too).
    auto build = [](const std::vector<VarPtr>& in) {
      ScalarProgram p{{F64, F64, F64, I32}, {}};
      const int h = p.op(S::Tanh, {p.op(S::Add, {p.op(S::Mul, {0, 1}), 2})});
      const int y = p.op(S::Sub, {p.op(S::Mul, {h, 3}), 0});
      const int z = p.op(S::Switch, {p.op(S::Gt, {0, 2}), p.op(S::Sqr, {h}), p.op(S::Exp, {1})});
      return p.make({y, z})->makeNode(in)->outputs();
    };
    const std::vector<Tensor> points{rnd(F64, {3, 5}, 80), rnd(F64, {5}, 81), rnd(F64, {3, 5}, 82),
                                     rnd(I32, {3, 5}, 83, -3, 3)};
    TSCOPE_CHECK(verifyGrad(build, points));
    auto floats = [](const std::vector<VarPtr>& in) {
      ScalarProgram p{{F64, F64, F64}, {}};
      const int h = p.op(S::Tanh, {p.op(S::Add, {p.op(S::Mul, {0, 1}), 2})});
      return p.make({p.op(S::Sub, {p.op(S::Mul, {h, 2}), 0}), p.op(S::Exp, {1})})
          ->makeNode(in)
          ->outputs();
    };
    TSCOPE_CHECK(checkRopLop(floats, {points[0], points[1], points[2]}));

    // The int input is disconnected; an input used twice gets each position's own gradient.
    ScalarProgram p{{F64, F64}, {}};
    auto op = p.make({p.op(S::Mul, {0, p.op(S::Sqr, {1})})});
    auto x = Variable::create(TensorType(F64, {2, 3}), "x");
    ApplyPtr twice = op->makeNode({x, x});  // x * x^2
    std::vector<Grad> g = op->pullback(*twice, std::vector<VarPtr>{onesLike(twice->output(0))});
    const Tensor at = rnd(F64, {2, 3}, 84);
    auto g0 = compile({x}, {g[0].value, g[1].value})({at});
    const std::vector<double> xs = at.toDoubles(), d0 = g0[0].toDoubles(), d1 = g0[1].toDoubles();
    for (std::size_t i = 0; i < xs.size(); ++i) {
      QVERIFY(std::abs(d0[i] - xs[i] * xs[i]) < 1e-12);      // d/da a*b^2 = b^2
      QVERIFY(std::abs(d1[i] - 2 * xs[i] * xs[i]) < 1e-12);  // d/db a*b^2 = 2ab
    }
    ScalarProgram q{{F64, I32}, {}};
    auto mixed = q.make({q.op(S::Mul, {0, 1})});
    auto n = Variable::create(TensorType(I32, {2, 3}), "n");
    std::vector<Grad> gm =
        mixed->pullback(*mixed->makeNode({x, n}), std::vector<VarPtr>{onesLike(x)});
    QVERIFY(gm[0].isValue());
    QVERIFY(gm[1].kind == Grad::Kind::Disconnected);
  }

  void testExpandComposite() {
    auto op = chainOfFive(F32);
    std::vector<VarPtr> in;
    for (int i = 0; i < 4; ++i)
      in.push_back(Variable::create(TensorType(F32, {2, 3}), "x" + std::to_string(i)));
    ApplyPtr node = op->makeNode(in);
    std::vector<VarPtr> out = expandComposite(*node);
    QCOMPARE(out.size(), std::size_t(1));
    QCOMPARE(QString::fromStdString(out[0]->owner()->str()).left(14),
             QStringLiteral("Elemwise{sub}("));
    QCOMPARE(out[0]->type(), node->outputRef(0).type());
    QCOMPARE(out[0]->owner()->input(1), in[0]);
  }

  void testStr() {
    ScalarProgram p{{F32, F32}, {}};
    const int a = p.op(S::Add, {0, 1});
    QCOMPARE(QString::fromStdString(p.make({p.op(S::Tanh, {a})})->str()),
             QStringLiteral("Composite{tanh(add(i0, i1))}"));
    QCOMPARE(QString::fromStdString(p.make({a, p.castTo(a, F64)})->str()),
             QStringLiteral("Composite{add(i0, i1), cast{float64}(add(i0, i1))}"));
    ScalarProgram longer{{F32}, {}};
    int r = 0;
    for (int i = 0; i < 200; ++i) r = longer.op(S::Add, {r, 0});
    const std::string s = longer.make({r})->str();
    QVERIFY2(s.size() < 140 && s.ends_with("...}"), s.c_str());
  }

  void testPropsRoundTrip() {
    ScalarProgram p{{F32, I32}, {}};
    auto op = p.make({p.op(S::Tanh, {p.op(S::Add, {0, 1})}), p.castTo(0, DType::Float16)});
    const json props = op->props();
    QCOMPARE(
        QString::fromStdString(props.dump()),
        QStringLiteral(
            R"({"inputs":["float32","int32"],"outputs":[3,4],"program":[{"args":[0,1],"op":"add"},)"
            R"({"args":[2],"op":"tanh"},{"args":[0],"dtype":"float16","op":"cast"}]})"));
    const OpRegistry& registry = defaultOpRegistry();
    for (const OpPtr& o : {OpPtr(op), OpPtr(chainOfFive(F32)->withInplace({{0, 3}}))}) {
      const OpPtr again = registry.make("Composite", o->props());
      QVERIFY(again->equals(*o));
      QCOMPARE(again->hash(), o->hash());
      QCOMPARE(QString::fromStdString(again->str()), QString::fromStdString(o->str()));
    }
  }

  void testMalformedProps_data() {
    QTest::addColumn<json>("props");
    QTest::addColumn<QString>("expected");
    const json good = chainOfFive(F32)->props();
    auto with = [&](const json::json_pointer& at, json value) {
      json p = good;
      p[at] = std::move(value);
      return p;
    };
    json noInputs = good;
    noInputs.erase("inputs");
    QTest::newRow("not an object") << json::array() << "props must be an object";
    QTest::newRow("no inputs") << noInputs << "\"inputs\" (an array)";
    QTest::newRow("bad dtype") << with(json::json_pointer("/inputs/1"), "float33")
                               << "\"inputs\"[1] must be a dtype name";
    QTest::newRow("unknown op") << with(json::json_pointer("/program/0/op"), "tanhh")
                                << "\"program\"[0][\"op\"]: unknown scalar op";
    QTest::newRow("args not an array") << with(json::json_pointer("/program/1/args"), 3)
                                       << "\"program\"[1][\"args\"] must be an array";
    QTest::newRow("later register") << with(json::json_pointer("/program/1/args/1"), 9)
                                    << "\"program\"[1][\"args\"][1] is register 9";
    QTest::newRow("wrong arity") << with(json::json_pointer("/program/2/args"), json{5, 6})
                                 << "\"program\"[2][\"args\"]: tanh takes 1";
    QTest::newRow("cast without dtype")
        << with(json::json_pointer("/program/2"), json{{"op", "cast"}, {"args", {5}}})
        << "\"program\"[2][\"dtype\"]";
    QTest::newRow("output is an input")
        << with(json::json_pointer("/outputs/0"), 1) << "\"outputs\"[0] is register 1";
    QTest::newRow("empty program")
        << with(json::json_pointer("/program"), json::array()) << "\"program\" is empty";
    QTest::newRow("inplace key") << with(json::json_pointer("/inplace"), json{{"first", 0}})
                                 << "\"inplace\": key \"first\"";
    QTest::newRow("inplace output") << with(json::json_pointer("/inplace"), json{{"1", 0}})
                                    << "\"inplace\": output 1 does not exist";
    QTest::newRow("inplace input")
        << with(json::json_pointer("/inplace"), json{{"0", 4}}) << "writes into input 4";
    json ints = good;
    ints["inputs"] = json{"int32", "float32", "float32", "float32"};
    ints["inplace"] = json{{"0", 0}};
    QTest::newRow("inplace dtype") << ints << "(float64) cannot be written into input 0 (int32)";
  }
  void testMalformedProps() {
    QFETCH(json, props);
    QFETCH(QString, expected);
    try {
      Composite::fromProps(props);
      QFAIL("expected std::invalid_argument");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(QString::fromUtf8(e.what()).contains(expected), e.what());
      QVERIFY2(QString::fromUtf8(e.what()).startsWith("Composite"), e.what());
    }
  }
};

TSCOPE_TEST_MAIN(TestComposite)
#include "tst_composite.moc"
