// Every registered op rebuilds from its props: props -> op -> props is the identity, and the
// rebuilt op is equal, hashes equal and prints the same. Each op family adds rows here.
#include "engine/graph/op.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/basic.h"
#include "engine/ops/control/ifelse.h"
#include "engine/ops/control/scan.h"
#include "engine/ops/elemwise/scalar_op.h"
#include "engine/ops/graph/op_from_graph.h"
#include "engine/ops/register_ops.h"
#include "graph_test_support.h"
#include "test_main.h"

#include <set>
#include <vector>

using namespace tscope::engine;
using namespace tscope::engine::testing;
using json = nlohmann::json;

Q_DECLARE_METATYPE(nlohmann::json)

class TestOpRegistry : public QObject {
  Q_OBJECT

 private slots:
  void testRegistryRoundTrip_data();
  void testRegistryRoundTrip();
  void testRegistryCoversEveryOp();
};

void TestOpRegistry::testRegistryRoundTrip_data() {
  QTest::addColumn<QString>("name");
  QTest::addColumn<json>("props");
  for (int i = 0; i < kScalarOpCount; ++i) {
    const ScalarOpInfo& info = scalarOpInfo(static_cast<ScalarOp>(i));
    if (info.op == ScalarOp::Cast) {
      for (int d = 0; d < kDTypeCount; ++d) {
        const std::string dt(dtypeName(static_cast<DType>(d)));
        QTest::addRow("Elemwise cast %s", dt.c_str())
            << "Elemwise" << json{{"scalar_op", "cast"}, {"dtype", dt}};
      }
      QTest::addRow("Elemwise cast inplace")
          << "Elemwise"
          << json{{"scalar_op", "cast"}, {"dtype", "float64"}, {"inplace", {{"0", 0}}}};
      continue;
    }
    const std::string n(info.name);
    QTest::addRow("Elemwise %s", n.c_str()) << "Elemwise" << json{{"scalar_op", n}};
    QTest::addRow("Elemwise %s inplace 0", n.c_str())
        << "Elemwise" << json{{"scalar_op", n}, {"inplace", {{"0", 0}}}};
    if (info.arity != 1)
      QTest::addRow("Elemwise %s inplace 1", n.c_str())
          << "Elemwise" << json{{"scalar_op", n}, {"inplace", {{"0", 1}}}};
  }
  // Composite: tanh(i0 * i1) with an int32 input, a cast and two outputs; and an inplace one.
  const json compositeProgram =
      json::array({json{{"args", {0, 1}}, {"op", "mul"}}, json{{"args", {2}}, {"op", "tanh"}},
                   json{{"args", {3}}, {"dtype", "float32"}, {"op", "cast"}}});
  QTest::newRow("Composite") << "Composite"
                             << json{{"inputs", {"float32", "int32"}},
                                     {"outputs", {3, 4}},
                                     {"program", compositeProgram}};
  QTest::newRow("Composite inplace")
      << "Composite"
      << json{{"inplace", {{"0", 0}}},
              {"inputs", {"float64", "float64"}},
              {"outputs", {3}},
              {"program", json::array({json{{"args", {0, 1}}, {"op", "add"}},
                                       json{{"args", {2}}, {"op", "exp"}}})}};
  QTest::newRow("DimShuffle transpose")
      << "DimShuffle" << json{{"input_ndim", 2}, {"order", {1, 0}}};
  QTest::newRow("DimShuffle x") << "DimShuffle" << json{{"input_ndim", 2}, {"order", {1, 0, "x"}}};
  QTest::newRow("DimShuffle scalar")
      << "DimShuffle" << json{{"input_ndim", 0}, {"order", {"x", "x"}}};
  QTest::newRow("DimShuffle drop") << "DimShuffle" << json{{"input_ndim", 3}, {"order", {2, 0}}};
  QTest::newRow("DimShuffle none")
      << "DimShuffle" << json{{"input_ndim", 1}, {"order", json::array()}};
  QTest::newRow("Dot") << "Dot" << json::object();
  QTest::newRow("ShapeI") << "ShapeI" << json{{"i", 1}};
  QTest::newRow("SumToShape") << "SumToShape" << json::object();
  QTest::newRow("CAReduce sum") << "CAReduce" << json{{"scalar_op", "add"}, {"axis", {0, 2}}};
  QTest::newRow("CAReduce max all")
      << "CAReduce" << json{{"scalar_op", "maximum"}, {"axis", nullptr}};
  QTest::newRow("Argmax") << "Argmax" << json{{"axis", 1}};
  QTest::newRow("Argmin all") << "Argmin" << json{{"axis", nullptr}};
  QTest::newRow("Gemm") << "Gemm" << json{{"inplace", false}};
  QTest::newRow("Gemv inplace") << "Gemv" << json{{"inplace", true}};
  QTest::newRow("Ger") << "Ger" << json{{"inplace", false}};
  QTest::newRow("Softmax") << "Softmax" << json{{"axis", -1}};
  QTest::newRow("LogSoftmax") << "LogSoftmax" << json{{"axis", 1}};
  QTest::newRow("SoftmaxGrad") << "SoftmaxGrad" << json{{"axis", 0}};
  QTest::newRow("LogSoftmaxGrad") << "LogSoftmaxGrad" << json{{"axis", -1}};
  QTest::newRow("OneHot") << "OneHot" << json{{"dtype", "float32"}};
  QTest::newRow("CategoricalCrossEntropy") << "CategoricalCrossEntropy" << json::object();
  QTest::newRow("SoftmaxCrossEntropyWithLogits")
      << "SoftmaxCrossEntropyWithLogits" << json::object();
  QTest::newRow("SoftmaxCrossEntropyGrad") << "SoftmaxCrossEntropyGrad" << json::object();
  QTest::newRow("Conv2d") << "Conv2d"
                          << json{{"dilation", {2, 1}},
                                  {"groups", 2},
                                  {"padding", {1, 0}},
                                  {"stride", {2, 2}}};
  QTest::newRow("Conv2dGradInputs")
      << "Conv2dGradInputs"
      << json{{"dilation", {1, 1}}, {"groups", 1}, {"padding", {1, 1}}, {"stride", {2, 1}}};
  QTest::newRow("Conv2dGradWeights")
      << "Conv2dGradWeights"
      << json{{"dilation", {1, 1}}, {"groups", 1}, {"padding", {0, 0}}, {"stride", {1, 1}}};
  QTest::newRow("FusedConv2d") << "FusedConv2d"
                               << json{{"activation", "clip"}, {"clip", {0.0, 6.0}},
                                       {"dilation", {1, 1}},   {"groups", 1},
                                       {"padding", {1, 1}},    {"stride", {2, 2}}};
  QTest::newRow("BlockedConv2d") << "BlockedConv2d"
                                 << json{{"activation", "relu"}, {"block", 8},
                                         {"dilation", {1, 1}},   {"groups", 1},
                                         {"padding", {1, 1}},    {"residual", true},
                                         {"stride", {1, 1}}};
  QTest::newRow("ToChannelBlocks") << "ToChannelBlocks" << json{{"block", 8}};
  QTest::newRow("FromChannelBlocks") << "FromChannelBlocks" << json{{"block", 8}};
  QTest::newRow("MaxPool2d") << "MaxPool2d"
                             << json{{"kernel", {3, 2}}, {"padding", {1, 1}}, {"stride", {2, 1}}};
  QTest::newRow("MaxPool2dGrad") << "MaxPool2dGrad"
                                 << json{{"kernel", {2, 2}},
                                         {"padding", {0, 0}},
                                         {"stride", {2, 2}}};
  QTest::newRow("MaxPool2dGradGrad")
      << "MaxPool2dGradGrad" << json{{"kernel", {2, 2}}, {"padding", {0, 0}}, {"stride", {2, 2}}};
  QTest::newRow("AvgPool2d") << "AvgPool2d"
                             << json{{"include_pad", false},
                                     {"kernel", {3, 3}},
                                     {"padding", {1, 1}},
                                     {"stride", {2, 2}}};
  QTest::newRow("AvgPool2dGrad") << "AvgPool2dGrad"
                                 << json{{"include_pad", true},
                                         {"kernel", {2, 2}},
                                         {"padding", {0, 0}},
                                         {"stride", {2, 2}}};
  QTest::newRow("BatchNormTrain") << "BatchNormTrain"
                                  << json{{"axes", {0, 2, 3}}, {"epsilon", 1e-5}};
  QTest::newRow("BatchNormInference")
      << "BatchNormInference" << json{{"axes", {0}}, {"epsilon", 0.001}};
  QTest::newRow("RandomUniform") << "RandomUniform" << json{{"dtype", "float32"}, {"ndim", 2}};
  QTest::newRow("RandomNormal") << "RandomNormal" << json{{"dtype", "float64"}, {"ndim", 0}};
  QTest::newRow("RandomIntegers") << "RandomIntegers" << json{{"dtype", "int64"}, {"ndim", 1}};
  // Shape and indexing family. Index lists (Note [Index lists]): an index entry {"i": ...}, a
  // slice entry {"start", "stop", "step"}, each part null, a constant or "?" (a symbolic input).
  const json all{{"start", nullptr}, {"stop", nullptr}, {"step", nullptr}};
  QTest::newRow("Shape") << "Shape" << json::object();
  QTest::newRow("MakeVector int64") << "MakeVector" << json{{"dtype", "int64"}};
  QTest::newRow("MakeVector float32") << "MakeVector" << json{{"dtype", "float32"}};
  QTest::newRow("SpecifyShape") << "SpecifyShape" << json::object();
  QTest::newRow("AssertType") << "AssertType" << json{{"shape", {-1, 4}}};
  QTest::newRow("Reshape") << "Reshape" << json{{"ndim", 2}};
  QTest::newRow("Reshape scalar") << "Reshape" << json{{"ndim", 0}};
  QTest::newRow("Join") << "Join" << json{{"axis", 1}};
  QTest::newRow("Split") << "Split" << json{{"axis", 0}, {"n_splits", 3}};
  QTest::newRow("Alloc") << "Alloc" << json::object();
  QTest::newRow("ARange int64") << "ARange" << json{{"dtype", "int64"}};
  QTest::newRow("ARange float32") << "ARange" << json{{"dtype", "float32"}};
  QTest::newRow("Tile") << "Tile" << json{{"reps", {2, 1, 3}}};
  QTest::newRow("Tile none") << "Tile" << json{{"reps", json::array()}};
  QTest::newRow("Repeat scalar count")
      << "Repeat" << json{{"axis", 0}, {"repeats", json::array({3})}};
  QTest::newRow("Repeat per element") << "Repeat" << json{{"axis", 1}, {"repeats", {1, 0, 2}}};
  QTest::newRow("TopK largest") << "TopK" << json{{"axis", 1}, {"k", 3}, {"largest", true}};
  QTest::newRow("TopK smallest") << "TopK" << json{{"axis", 0}, {"k", 0}, {"largest", false}};
  QTest::newRow("NonZero") << "NonZero" << json::object();
  QTest::newRow("CumSum") << "CumSum"
                          << json{{"axis", 1}, {"exclusive", false}, {"reverse", false}};
  QTest::newRow("CumSum exclusive reverse")
      << "CumSum" << json{{"axis", 0}, {"exclusive", true}, {"reverse", true}};
  QTest::newRow("Subtensor slice and index")  // x[1:, 2]
      << "Subtensor"
      << json{{"idx_list", json::array({json{{"start", 1}, {"stop", nullptr}, {"step", nullptr}},
                                        json{{"i", 2}}})}};
  QTest::newRow("Subtensor symbolic")  // x[:, i, ::-1] with i an input
      << "Subtensor"
      << json{{"idx_list",
               json::array({all, json{{"i", "?"}},
                            json{{"start", nullptr}, {"stop", nullptr}, {"step", -1}}})}};
  QTest::newRow("Subtensor empty") << "Subtensor" << json{{"idx_list", json::array()}};
  QTest::newRow("IncSubtensor inc")
      << "IncSubtensor"
      << json{{"idx_list", json::array({json{{"start", "?"}, {"stop", "?"}, {"step", nullptr}}})},
              {"inplace", false},
              {"set_instead_of_inc", false}};
  QTest::newRow("IncSubtensor set inplace")
      << "IncSubtensor"
      << json{{"idx_list", json::array({all, json{{"i", -1}}})},
              {"inplace", true},
              {"set_instead_of_inc", true}};
  QTest::newRow("AdvancedSubtensor1") << "AdvancedSubtensor1" << json::object();
  QTest::newRow("AdvancedIncSubtensor1")
      << "AdvancedIncSubtensor1" << json{{"inplace", false}, {"set_instead_of_inc", false}};
  QTest::newRow("AdvancedIncSubtensor1 set inplace")
      << "AdvancedIncSubtensor1" << json{{"inplace", true}, {"set_instead_of_inc", true}};
  QTest::newRow("AdvancedSubtensor arrays")  // x[i, :, j]
      << "AdvancedSubtensor" << json{{"idx_list", json::array({"array", all, "array"})}};
  QTest::newRow("AdvancedSubtensor slice")  // x[::2, i]
      << "AdvancedSubtensor"
      << json{{"idx_list",
               json::array({json{{"start", nullptr}, {"stop", nullptr}, {"step", 2}}, "array"})}};
  QTest::newRow("AdvancedIncSubtensor inc") << "AdvancedIncSubtensor"
                                            << json{{"idx_list", json::array({"array"})},
                                                    {"inplace", false},
                                                    {"set_instead_of_inc", false}};
  QTest::newRow("AdvancedIncSubtensor set inplace")
      << "AdvancedIncSubtensor"
      << json{{"idx_list",
               json::array({json{{"start", 1}, {"stop", 4}, {"step", nullptr}}, "array"})},
              {"inplace", true},
              {"set_instead_of_inc", true}};
  // OpFromGraph: the props hold the inner graph (the .tsg GRAPH schema), built here with the API;
  // a constant inside, a nested OpFromGraph, and the inline flag.
  {
    auto x = Variable::create(TensorType(DType::Float32, {kUnknownDim, 4}), "x");
    auto y = Variable::create(TensorType(DType::Float32, {kUnknownDim, 4}), "y");
    const auto gelu = opFromGraph({x}, {x * sigmoid(x * 1.702)}, "gelu_block");
    const auto ffn = opFromGraph({x, y}, {(*gelu)({x + y}), tanh(y)}, "ffn_block", true);
    QTest::newRow("OpFromGraph") << "OpFromGraph" << gelu->props();
    QTest::newRow("OpFromGraph nested inline") << "OpFromGraph" << ffn->props();
    // IfElse: both branches' graphs in its props.
    auto c = Variable::create(TensorType(DType::Bool, {}), "c");
    const VarPtr chosen = ifelse(c, x * 2.0, tanh(x));
    QTest::newRow("IfElse") << "IfElse" << chosen->owner()->op().props();
    // Scan: the body graph, sequence taps, several recurrent taps, an output without recurrence.
    auto f0 = Variable::create(TensorType(DType::Float32, {2, 4}), "f0");
    const std::vector<VarPtr> looped = scan(
        [](const std::vector<VarPtr>& a) {
          return std::vector<VarPtr>{a[2] + a[3] * a[0], tanh(a[1])};
        },
        {ScanSequence(x, {-1, 1})}, {ScanOutputInfo(f0, {-2, -1}), ScanOutputInfo::none()}, {}, {},
        3, {.label = "loop"});
    QTest::newRow("Scan") << "Scan" << looped[0]->owner()->op().props();
  }
  QTest::newRow("BreakPoint") << "BreakPoint" << json{{"name", "spike"}, {"monitored", 2}};
  // Issue 22's transfers (GPU placement).
  QTest::newRow("GpuFromHost") << "GpuFromHost" << json::object();
  QTest::newRow("HostFromGpu") << "HostFromGpu" << json::object();
  // Issue 25's ops (ONNX conformance).
  QTest::newRow("UnaryMath") << "UnaryMath" << json{{"fn", "atanh"}};
  QTest::newRow("NonMaxSuppression") << "NonMaxSuppression" << json{{"center_point_box", true}};
  QTest::newRow("Det") << "Det" << json::object();
  QTest::newRow("Unique flattened") << "Unique" << json{{"axis", nullptr}, {"sorted", true}};
  QTest::newRow("Unique axis") << "Unique" << json{{"axis", 1}, {"sorted", false}};
  QTest::newRow("RoiAlign") << "RoiAlign" << json{{"half_pixel", false}, {"mode", "max"},
                                                  {"output_height", 2},  {"output_width", 3},
                                                  {"sampling_ratio", 2}, {"spatial_scale", 0.5}};
  QTest::newRow("TfIdfVectorizer")
      << "TfIdfVectorizer" << json{{"max_gram_length", 2},        {"max_skip_count", 1},
                                   {"min_gram_length", 1},        {"mode", "TFIDF"},
                                   {"ngram_counts", {0, 2}},      {"ngram_indexes", {0, 1, 2}},
                                   {"pool_int64s", {3, 5, 3, 5}}, {"weights", {0.5, 1.0, 2.0}}};
}

void TestOpRegistry::testRegistryRoundTrip() {
  QFETCH(QString, name);
  QFETCH(json, props);
  const OpRegistry& registry = defaultOpRegistry();
  const OpPtr op = registry.make(name.toStdString(), props);
  QCOMPARE(qs(op->name()), name);
  // props -> op -> props gives the same props, and those props give an equal op.
  QCOMPARE(qs(op->props().dump()), qs(props.dump()));
  const OpPtr again = registry.make(op->name(), op->props());
  QVERIFY(again->equals(*op));
  QCOMPARE(again->hash(), op->hash());
  QCOMPARE(qs(again->str()), qs(op->str()));
}

void TestOpRegistry::testRegistryCoversEveryOp() {
  // Every registered op is exercised by testRegistryRoundTrip: a new family must add rows there.
  const std::set<std::string> tested{"Elemwise",
                                     "Composite",
                                     "DimShuffle",
                                     "Dot",
                                     "ShapeI",
                                     "SumToShape",
                                     "CAReduce",
                                     "Argmax",
                                     "Argmin",
                                     "CumSum",
                                     "NonZero",
                                     "Gemm",
                                     "Gemv",
                                     "Ger",
                                     "Softmax",
                                     "LogSoftmax",
                                     "SoftmaxGrad",
                                     "LogSoftmaxGrad",
                                     "OneHot",
                                     "CategoricalCrossEntropy",
                                     "SoftmaxCrossEntropyWithLogits",
                                     "SoftmaxCrossEntropyGrad",
                                     "Conv2d",
                                     "Conv2dGradInputs",
                                     "Conv2dGradWeights",
                                     "FusedConv2d",
                                     "BlockedConv2d",
                                     "ToChannelBlocks",
                                     "FromChannelBlocks",
                                     "MaxPool2d",
                                     "MaxPool2dGrad",
                                     "MaxPool2dGradGrad",
                                     "AvgPool2d",
                                     "AvgPool2dGrad",
                                     "BatchNormTrain",
                                     "BatchNormInference",
                                     "RandomUniform",
                                     "RandomNormal",
                                     "RandomIntegers",
                                     "Shape",
                                     "MakeVector",
                                     "SpecifyShape",
                                     "AssertType",
                                     "Reshape",
                                     "Join",
                                     "Split",
                                     "Alloc",
                                     "ARange",
                                     "Tile",
                                     "Repeat",
                                     "Subtensor",
                                     "IncSubtensor",
                                     "AdvancedSubtensor1",
                                     "AdvancedIncSubtensor1",
                                     "AdvancedSubtensor",
                                     "AdvancedIncSubtensor",
                                     "TopK",
                                     "OpFromGraph",
                                     "IfElse",
                                     "Scan",
                                     "BreakPoint",
                                     "GpuFromHost",
                                     "HostFromGpu",
                                     "UnaryMath",
                                     "NonMaxSuppression",
                                     "Det",
                                     "Unique",
                                     "RoiAlign",
                                     "TfIdfVectorizer"};
  const std::vector<std::string> names = defaultOpRegistry().names();
  QVERIFY(!names.empty());
  for (const auto& n : names) QVERIFY2(tested.count(n), ("no round-trip rows for op " + n).c_str());
  QVERIFY(std::is_sorted(names.begin(), names.end()));
  // registerAllOps fills a fresh registry with the same names.
  OpRegistry fresh;
  registerAllOps(fresh);
  QCOMPARE(fresh.names(), names);
}

TSCOPE_TEST_MAIN(TestOpRegistry)
#include "tst_op_registry.moc"
