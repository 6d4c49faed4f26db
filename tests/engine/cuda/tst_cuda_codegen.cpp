// The CUDA backend without a device (issue 22, label `cuda`): CUDA source generated for every
// scalar op the CPU Composite supports and every dtype with CUDA code, compiled by NVRTC (PTX,
// every expected kernel present; CUBIN for sm_90); fused Composites and reductions; the kernel
// cache in memory and on disk (hit, miss, corrupt entry rebuilt, atomic write); NVRTC's error for
// a bad source; the error messages of CUDA, NVRTC, cuBLAS and cuDNN from fake codes; the backend's
// status on a machine that may have no GPU. The placement rules: tst_cuda_placement.
#include "engine/backends/cuda/cuda_backend.h"
#include "engine/backends/cuda/cuda_error.h"
#include "engine/backends/cuda/elemwise_codegen.h"
#include "engine/backends/cuda/nn_codegen.h"
#include "engine/backends/cuda/nvrtc_compiler.h"
#include "engine/backends/cuda/shape_codegen.h"
#include "engine/compile/kernel.h"
#include "engine/graph/apply.h"
#include "engine/graph/function_graph.h"
#include "engine/graph/variable.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/elemwise/sum_to_shape.h"
#include "engine/ops/nn/crossentropy.h"
#include "engine/ops/random/random_ops.h"
#include "engine/ops/reduce/argreduce.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/shape.h"
#include "engine/rewrite/rules/gpu_placement.h"
#include "test_main.h"

#include <QTemporaryDir>

#include <fstream>
#include <map>
#include <set>

using namespace tscope::engine;
using namespace tscope::engine::cuda;

Q_DECLARE_METATYPE(tscope::engine::DType)

namespace {
// An Elemwise node of op on inputs of dtype d, or null when the op refuses the dtypes.
ApplyPtr elemwiseNode(ScalarOp op, DType d) {
  const ScalarOpInfo& info = scalarOpInfo(op);
  int arity = info.arity < 0 ? 3 : info.arity;  // n-ary: three operands, the folded form
  std::vector<VarPtr> in;
  for (int i = 0; i < arity; ++i) {
    const DType di = op == ScalarOp::Switch && i == 0 ? DType::Bool : d;
    // Broadcasting operands: the strided kernel gets a stride-0 axis.
    in.push_back(Variable::create(TensorType(di, {i == 1 ? 1 : 4, 3}), "i" + std::to_string(i)));
  }
  try {
    return std::make_shared<Elemwise>(op, std::map<int, int>{}, DType::Float64)->makeNode(in);
  } catch (const std::exception&) {
    return nullptr;
  }
}

std::string ptxOf(const std::string& source, const std::string& name) {
  const CompiledImage image = compileCuda(source, name, 75, /*cubin=*/false);
  return std::string(image.bytes.data());
}

const std::vector<DType> kDTypes{DType::Bool,   DType::Int8,    DType::Int16,   DType::Int32,
                                 DType::Int64,  DType::UInt8,   DType::UInt16,  DType::UInt32,
                                 DType::UInt64, DType::Float16, DType::Float32, DType::Float64};
// The dtypes of the shape, indexing, argmax, one-hot and random kernels: all but float16
// (hasTemplateCudaType).
std::vector<DType> templateDTypes() {
  std::vector<DType> out;
  for (DType d : kDTypes)
    if (hasTemplateCudaType(d)) out.push_back(d);
  return out;
}
}  // namespace

class TestCudaCodegen : public QObject {
  Q_OBJECT
 private slots:
  void testEveryScalarOpCompiles_data();
  void testEveryScalarOpCompiles();
  void testCompositeKernels();
  void testReductionKernels();
  void testCubinForSm90();
  void testFloat16Kernels();
  void testScanKernels();
  void testDiskCache();
  void testCorruptEntryIsRebuilt();
  void testCacheDirectory();
  void testBadSourceMessage();
  void testErrorMessages();
  void testStatusAndRegistrationWithoutDevice();
  void testShapeKernels();
  void testCoalesceAxes();
  void testArgReduceKernels();
  void testCrossEntropyKernels();
  void testRandomTransforms();
};

void TestCudaCodegen::testEveryScalarOpCompiles_data() {
  QTest::addColumn<DType>("dtype");
  for (DType d : kDTypes) QTest::newRow(std::string(dtypeName(d)).c_str()) << d;
}

void TestCudaCodegen::testEveryScalarOpCompiles() {
  // One NVRTC program per dtype holding the kernels of every scalar op that accepts it (one
  // compile instead of forty); the PTX must hold each op's three (or two) entry points.
  QFETCH(DType, dtype);
  std::string kernels;
  std::set<std::string> names;
  std::vector<std::string> expected;
  int ops = 0;
  for (int s = 0; s < kScalarOpCount; ++s) {
    const auto op = static_cast<ScalarOp>(s);
    const ApplyPtr node = elemwiseNode(op, dtype);
    if (!node) continue;
    const GeneratedSource g = generateElemwise(scalarProgramOf(*node));
    QVERIFY(g.source.starts_with(scalarPrelude()));
    ++ops;
    if (!names.insert(g.name).second) continue;
    kernels += g.source.substr(scalarPrelude().size());
    for (const char* suffix : {"_strided", "_contig"}) expected.push_back(g.name + suffix);
    if (g.vec4) expected.push_back(g.name + "_vec4");
  }
  QVERIFY2(ops >= 30, qPrintable(QString::number(ops)));
  const std::string ptx = ptxOf(scalarPrelude() + kernels, "all_ops.cu");
  for (const std::string& name : expected)
    QVERIFY2(ptx.find(".entry " + name) != std::string::npos, name.c_str());
}

void TestCudaCodegen::testCompositeKernels() {
  // tanh(x * a + b) * c - x: the fused 5-op chain, float32 (with the float4 kernel) and int32.
  auto chain = [](DType d) {
    using S = ScalarOp;
    std::vector<CompositeInstruction> program{{S::Mul, {0, 1}, d},
                                              {S::Add, {4, 2}, d},
                                              {S::Tanh, {5}, d},
                                              {S::Mul, {6, 3}, d},
                                              {S::Sub, {7, 0}, d}};
    if (d != DType::Float32) program[2] = {S::Neg, {5}, d};
    return Composite({d, d, d, d}, program, {8});
  };
  const Composite f = chain(DType::Float32);
  const GeneratedSource gf = generateElemwise(scalarProgramOf(f));
  QVERIFY(gf.vec4);
  QVERIFY(gf.source.find("reinterpret_cast<const float4*>(in3)") != std::string::npos);
  // One kernel per fused node: the intermediates are registers, not memory.
  QVERIFY(gf.source.find("const float r8 = (float)(ts_sub<float>((float)r7, (float)r0));") !=
          std::string::npos);
  const std::string ptx = ptxOf(gf.source, "chain.cu");
  for (const char* s : {"_strided", "_contig", "_vec4"})
    QVERIFY(ptx.find(".entry " + gf.name + s) != std::string::npos);
  const GeneratedSource gi = generateElemwise(scalarProgramOf(chain(DType::Int32)));
  QVERIFY(!gi.vec4);
  QVERIFY(ptxOf(gi.source, "chain_int.cu").find(".entry " + gi.name + "_strided") !=
          std::string::npos);
  // A cast and a comparison: the comparison computes in the promoted dtype, the result is bool.
  const Composite mixed({DType::Int32, DType::Float64},
                        {{ScalarOp::Cast, {0}, DType::Float64},
                         {ScalarOp::Lt, {2, 1}, DType::Float32},
                         {ScalarOp::Switch, {3, 2, 1}, DType::Float32}},
                        {4, 3});
  const GeneratedSource gm = generateElemwise(scalarProgramOf(mixed));
  QVERIFY(gm.source.find("const bool r3 = (bool)(ts_lt<double>((double)r2, (double)r1));") !=
          std::string::npos);
  QVERIFY(ptxOf(gm.source, "mixed.cu").find(".entry " + gm.name + "_contig") != std::string::npos);
}

void TestCudaCodegen::testReductionKernels() {
  struct Case {
    ScalarOp op;
    DType in, acc, out;
  };
  const Case cases[] = {{ScalarOp::Add, DType::Float32, DType::Float32, DType::Float32},
                        {ScalarOp::Add, DType::Int32, DType::Int64, DType::Int64},
                        {ScalarOp::Mul, DType::Float64, DType::Float64, DType::Float64},
                        {ScalarOp::Maximum, DType::Float32, DType::Float32, DType::Float32},
                        {ScalarOp::Minimum, DType::Int64, DType::Int64, DType::Int64},
                        {ScalarOp::Add, DType::UInt8, DType::Int64, DType::Int64},
                        // all/any: a bool accumulator folded as an int (Note [Reduction kernels])
                        {ScalarOp::And, DType::Bool, DType::Bool, DType::Bool},
                        {ScalarOp::Or, DType::Float32, DType::Bool, DType::Bool},
                        {ScalarOp::And, DType::Int8, DType::Bool, DType::Bool},
                        {ScalarOp::Or, DType::UInt64, DType::Bool, DType::Bool}};
  std::string kernels;
  std::vector<std::string> names;
  for (const Case& c : cases) {
    const GeneratedSource g = generateReduce(c.op, c.in, c.acc, c.out);
    QVERIFY(g.source.find("__shfl_down_sync") != std::string::npos);
    kernels += g.source.substr(scalarPrelude().size());
    names.push_back(g.name);
  }
  // all(x) reads "x != 0": NaN is true, as on the CPU.
  const GeneratedSource any =
      generateReduce(ScalarOp::Or, DType::Float32, DType::Bool, DType::Bool);
  QVERIFY(any.source.find("acc = (acc | (int)(in[off] != 0));") != std::string::npos);
  const std::string ptx = ptxOf(scalarPrelude() + kernels, "reductions.cu");
  for (const std::string& n : names)
    QVERIFY2(ptx.find(".entry " + n) != std::string::npos, n.c_str());
  // A bool accumulator belongs to all/any only; a small one to nothing.
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                           generateReduce(ScalarOp::Add, DType::Bool, DType::Bool, DType::Bool));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                           generateReduce(ScalarOp::And, DType::Bool, DType::Int32, DType::Bool));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                           generateReduce(ScalarOp::Sub, DType::Int32, DType::Int32, DType::Int32));
}

void TestCudaCodegen::testCubinForSm90() {
  const std::vector<int> archs = nvrtcArchitectures();
  QVERIFY(std::find(archs.begin(), archs.end(), 90) != archs.end());
  const ApplyPtr node = elemwiseNode(ScalarOp::Add, DType::Float32);
  const GeneratedSource g = generateElemwise(scalarProgramOf(*node));
  const CompiledImage image = compileCuda(g.source, "add.cu", 90, /*cubin=*/true);
  QVERIFY(image.bytes.size() > 4);
  QCOMPARE(QByteArray(image.bytes.data(), 4), QByteArray("\x7f"
                                                         "ELF",
                                                         4));
  QVERIFY(!nvrtcVersion().empty());
}

void TestCudaCodegen::testFloat16Kernels() {
  // Note [Half registers]: __half registers read and written through float, cuda_fp16.h included
  // (NVRTC finds it in the toolkit's include folder), every computation in float32.
  QVERIFY2(std::filesystem::exists(cudaIncludeDirectory() / "cuda_fp16.h"),
           cudaIncludeDirectory().string().c_str());
  QCOMPARE(cudaTypeName(DType::Float16), std::string("__half"));
  const ApplyPtr node = elemwiseNode(ScalarOp::Sub, DType::Float16);
  QVERIFY(node);
  const ScalarProgram p = scalarProgramOf(*node);
  QVERIFY(usesHalf(p));
  const GeneratedSource g = generateElemwise(p);
  QVERIFY(!g.vec4);
  QVERIFY(g.source.find("#include <cuda_fp16.h>") != std::string::npos);
  QVERIFY(g.source.find("const __half r2 = __float2half_rn((float)(ts_sub<float>((float)"
                        "__half2float(r0), (float)__half2float(r1))));") != std::string::npos);
  // A float32 program does not include it.
  QVERIFY(generateElemwise(scalarProgramOf(*elemwiseNode(ScalarOp::Add, DType::Float32)))
              .source.find("cuda_fp16") == std::string::npos);
  // The fused chain in float16 with a cast to float32 and back, a comparison of halves; a CUBIN
  // for sm_90 too.
  using S = ScalarOp;
  const DType h = DType::Float16;
  const Composite chain({h, h, DType::Float32},
                        {{S::Mul, {0, 1}, h},
                         {S::Tanh, {3}, h},
                         {S::Cast, {4}, DType::Float32},
                         {S::Add, {5, 2}, DType::Float32},
                         {S::Cast, {6}, h},
                         {S::Lt, {7, 0}, h}},
                        {7, 8, 6});
  const GeneratedSource gc = generateElemwise(scalarProgramOf(chain));
  QVERIFY(gc.source.find("const float r5 = (float)(__half2float(r4));") != std::string::npos);
  QVERIFY(gc.source.find("const __half r7 = __float2half_rn((float)(r6));") != std::string::npos);
  const std::string ptx = ptxOf(gc.source, "half_chain.cu");
  for (const char* suffix : {"_strided", "_contig"})
    QVERIFY(ptx.find(".entry " + gc.name + suffix) != std::string::npos);
  const CompiledImage cubin = compileCuda(gc.source, "half_chain.cu", 90, /*cubin=*/true);
  QCOMPARE(QByteArray(cubin.bytes.data(), 4), QByteArray("\x7f"
                                                         "ELF",
                                                         4));
  // Reductions of float16 accumulate in float32 and store a half.
  const GeneratedSource gr = generateReduce(S::Add, h, DType::Float32, h);
  QVERIFY(gr.source.find("(float)__half2float(in[off])") != std::string::npos);
  QVERIFY(gr.source.find("out[o] = __float2half_rn((float)(acc))") != std::string::npos);
  QVERIFY(ptxOf(gr.source, "half_sum.cu").find(".entry " + gr.name) != std::string::npos);
  const GeneratedSource gm = generateReduce(S::Maximum, h, DType::Float32, h);
  QVERIFY(ptxOf(gm.source, "half_max.cu").find(".entry " + gm.name) != std::string::npos);
}

void TestCudaCodegen::testScanKernels() {
  // Note [Device scans]: NanGuard's quick pass, one kernel per float dtype.
  for (DType d : {DType::Float16, DType::Float32, DType::Float64}) {
    const GeneratedSource g = generateScan(d);
    QVERIFY(g.source.find("__shfl_down_sync") != std::string::npos);
    QVERIFY(g.source.find("atomicMax") != std::string::npos);
    const std::string ptx = ptxOf(g.source, "scan.cu");
    QVERIFY2(ptx.find(".entry " + g.name) != std::string::npos, dtypeName(d).data());
  }
  QVERIFY(generateScan(DType::Float32).name != generateScan(DType::Float64).name);
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, generateScan(DType::Int32));
}

void TestCudaCodegen::testDiskCache() {
  QTemporaryDir dir;
  const std::filesystem::path path = dir.path().toStdString();
  const std::string source =
      generateElemwise(scalarProgramOf(*elemwiseNode(ScalarOp::Exp, DType::Float32))).source;
  std::vector<char> first;
  {
    KernelCache cache(path);
    first = cache.get(source, 75, false)->bytes;
    QCOMPARE(cache.stats().compiles, std::int64_t(1));
    QVERIFY(std::filesystem::exists(cache.entryPath(source, 75, false)));
    cache.get(source, 75, false);
    QCOMPARE(cache.stats().memoryHits, std::int64_t(1));
    QCOMPARE(cache.stats().compiles, std::int64_t(1));
    // Another architecture is another entry.
    QVERIFY(cache.key(source, 80, false) != cache.key(source, 75, false));
    QVERIFY(cache.key(source, 75, true) != cache.key(source, 75, false));
  }
  // A new process (a new cache) reads the entry from disk.
  KernelCache again(path);
  QCOMPARE(again.get(source, 75, false)->bytes, first);
  QCOMPARE(again.stats().diskHits, std::int64_t(1));
  QCOMPARE(again.stats().compiles, std::int64_t(0));
  // Written through a temporary file and rename: nothing else is left in the folder.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(path)) {
    ++files;
    QVERIFY2(e.path().string().find(".tmp.") == std::string::npos, e.path().c_str());
  }
  QCOMPARE(files, 1);
}

void TestCudaCodegen::testCorruptEntryIsRebuilt() {
  QTemporaryDir dir;
  const std::filesystem::path path = dir.path().toStdString();
  const std::string source =
      generateElemwise(scalarProgramOf(*elemwiseNode(ScalarOp::Log, DType::Float64))).source;
  std::filesystem::path entry;
  {
    KernelCache cache(path);
    cache.get(source, 75, false);
    entry = cache.entryPath(source, 75, false);
  }
  const auto size = std::filesystem::file_size(entry);
  auto corrupt = [&](auto edit) {
    std::fstream f(entry, std::ios::in | std::ios::out | std::ios::binary);
    edit(f);
  };
  // A flipped byte in the image: the checksum no longer matches.
  corrupt([&](std::fstream& f) {
    f.seekp(static_cast<std::streamoff>(size / 2));
    f.put('#');
  });
  {
    KernelCache cache(path);
    const auto image = cache.get(source, 75, false);
    QCOMPARE(cache.stats().corrupt, std::int64_t(1));
    QCOMPARE(cache.stats().compiles, std::int64_t(1));
    QVERIFY(std::string(image->bytes.data()).find(".entry") != std::string::npos);
  }
  // Rewritten whole: the next reader hits.
  {
    KernelCache cache(path);
    cache.get(source, 75, false);
    QCOMPARE(cache.stats().diskHits, std::int64_t(1));
  }
  // A truncated entry and a wrong header are corrupt too.
  std::filesystem::resize_file(entry, size / 3);
  {
    KernelCache cache(path);
    cache.get(source, 75, false);
    QCOMPARE(cache.stats().corrupt, std::int64_t(1));
  }
  corrupt([](std::fstream& f) { f.write("XSCOPE", 6); });
  {
    KernelCache cache(path);
    cache.get(source, 75, false);
    QCOMPARE(cache.stats().corrupt, std::int64_t(1));
    QCOMPARE(cache.stats().compiles, std::int64_t(1));
  }
}

void TestCudaCodegen::testCacheDirectory() {
  const QByteArray saved = qgetenv("TSCOPE_CACHE_DIR");
  qputenv("TSCOPE_CACHE_DIR", "/tmp/tscope-cache-test");
  QCOMPARE(QString::fromStdString(KernelCache::defaultDirectory().string()),
           QStringLiteral("/tmp/tscope-cache-test/cuda"));
  qunsetenv("TSCOPE_CACHE_DIR");
  QVERIFY(KernelCache::defaultDirectory().string().ends_with("tensorscope/cuda"));
  if (!saved.isEmpty()) qputenv("TSCOPE_CACHE_DIR", saved);
  // An empty directory: memory only, nothing written.
  KernelCache memoryOnly({});
  const std::string source =
      generateElemwise(scalarProgramOf(*elemwiseNode(ScalarOp::Neg, DType::Int32))).source;
  memoryOnly.get(source, 75, false);
  memoryOnly.get(source, 75, false);
  QCOMPARE(memoryOnly.stats().memoryHits, std::int64_t(1));
}

void TestCudaCodegen::testBadSourceMessage() {
  const std::string source =
      "extern \"C\" __global__ void k(float* x) {\n  x[0] = undefined_thing;\n}\n";
  try {
    compileCuda(source, "bad.cu", 75, false);
    QFAIL("expected CudaError");
  } catch (const CudaError& e) {
    const QString what = QString::fromStdString(e.what());
    QCOMPARE(QString::fromStdString(e.library()), QStringLiteral("NVRTC"));
    QVERIFY2(what.startsWith("nvrtcCompileProgram(bad.cu, --gpu-architecture=compute_75) failed: "
                             "NVRTC_ERROR_COMPILATION"),
             qPrintable(what));
    QVERIFY2(what.contains("identifier \"undefined_thing\" is undefined"), qPrintable(what));
    QVERIFY2(what.contains("  2 |   x[0] = undefined_thing;"), qPrintable(what));
  }
}

void TestCudaCodegen::testErrorMessages() {
  checkCuda(0, "cudaFree(p)");  // success: nothing thrown
  try {
    checkCuda(1, "cudaMalloc(&p, n)");
    QFAIL("expected CudaError");
  } catch (const CudaError& e) {
    QCOMPARE(QString::fromStdString(e.what()),
             QStringLiteral("cudaMalloc(&p, n) failed: invalid argument (cudaErrorInvalidValue, "
                            "code 1)"));
    QCOMPARE(e.code(), 1);
  }
  // Inside a kernel the message names the node.
  const VarPtr x = Variable::create(TensorType(DType::Float32, {2}), "x");
  const VarPtr y = x + x;
  try {
    NodeScope scope(y->owner());
    checkCuda(2, "cudaMemcpyAsync(...)");
    QFAIL("expected CudaError");
  } catch (const CudaError& e) {
    const QString what = QString::fromStdString(e.what());
    QVERIFY2(
        what.startsWith("cudaMemcpyAsync(...) failed: out of memory (cudaErrorMemoryAllocation, "
                        "code 2) at node "),
        qPrintable(what));
    QVERIFY2(what.endsWith(" Elemwise{add}"), qPrintable(what));
  }
  QVERIFY(NodeScope::current() == nullptr);
  try {
    checkNvrtc(1, "nvrtcCreateProgram(...)");
    QFAIL("expected CudaError");
  } catch (const CudaError& e) {
    QCOMPARE(QString::fromStdString(e.what()),
             QStringLiteral("nvrtcCreateProgram(...) failed: NVRTC_ERROR_OUT_OF_MEMORY (code 1)"));
  }
  try {
    checkCublas(1, "cublasCreate(&h)");
    QFAIL("expected CudaError");
  } catch (const CudaError& e) {
    QCOMPARE(QString::fromStdString(e.library()), QStringLiteral("cuBLAS"));
    QVERIFY2(QString::fromStdString(e.what()).contains("CUBLAS_STATUS_NOT_INITIALIZED, code 1)"),
             e.what());
  }
  try {
    checkCudnn(2000, "cudnnCreate(&h)");
    QFAIL("expected CudaError");
  } catch (const CudaError& e) {
    QCOMPARE(QString::fromStdString(e.library()), QStringLiteral("cuDNN"));
    QVERIFY2(QString::fromStdString(e.what()).startsWith("cudnnCreate(&h) failed: "), e.what());
    QVERIFY2(QString::fromStdString(e.what()).contains("code 2000)"), e.what());
  }
}

void TestCudaCodegen::testStatusAndRegistrationWithoutDevice() {
  const CudaStatus s = cudaStatus();
  QVERIFY(s.built);
  if (s.deviceFound) QSKIP("a CUDA device is present: the no-device path cannot be seen here");
  QVERIFY(!s.error.empty());
  try {
    registerCudaBackend();
    QFAIL("expected CudaUnavailable");
  } catch (const CudaUnavailable& e) {
    QVERIFY(e.built());
    QCOMPARE(QString::fromStdString(e.what()),
             QStringLiteral("no CUDA device: ") + QString::fromStdString(s.error));
  }
  QCOMPARE(cudaMemoryStats().allocations, std::int64_t(0));
}

void TestCudaCodegen::testShapeKernels() {
  // Copies between dtypes (astype's conversion), increments, fills, gathers and scatters of every
  // kind the kernels launch, in one NVRTC program.
  std::string kernels;
  std::vector<std::string> expected;
  std::set<std::string> names;
  auto add = [&](const GeneratedSource& g, std::initializer_list<const char*> suffixes) {
    QVERIFY(g.source.starts_with(scalarPrelude() + shapePrelude()));
    if (!names.insert(g.name).second) return;
    kernels += g.source.substr(scalarPrelude().size() + shapePrelude().size());
    for (const char* s : suffixes) expected.push_back(g.name + s);
  };
  for (DType dst : templateDTypes())
    for (DType src : {DType::Bool, DType::Int8, DType::UInt64, DType::Float32, DType::Float64}) {
      add(generateCopy(dst, src, false), {""});
      if (dst != DType::Bool || src == DType::Bool) add(generateCopy(dst, src, true), {""});
    }
  for (DType d : templateDTypes()) {
    add(generateFill(d), {""});
    add(generateGather(d, DType::Int64), {""});
    add(generateScatter(d, DType::Int32, true), {"_check", "_winner", "_write"});
    if (scatterIncSupported(d)) add(generateScatter(d, DType::Int64, false), {"_check", "_write"});
  }
  for (DType index : {DType::Int8, DType::UInt16, DType::Int32, DType::UInt64})
    add(generateGather(DType::Float32, index), {""});
  const std::string ptx = ptxOf(scalarPrelude() + shapePrelude() + kernels, "shape_ops.cu");
  for (const std::string& name : expected)
    QVERIFY2(ptx.find(".entry " + name) != std::string::npos, name.c_str());
  QVERIFY(expected.size() > 100);
  // astype: float to an integer truncates through int64; to bool is != 0.
  const GeneratedSource c = generateCopy(DType::Int8, DType::Float32, false);
  QVERIFY(c.source.find("dst[o0] = ts_convert<ts_i8, float>(src[o1]);") != std::string::npos);
  QVERIFY(shapePrelude().find("trunc((double)x)") != std::string::npos);
  const GeneratedSource inc = generateCopy(DType::Float32, DType::Int32, true);
  QVERIFY(
      inc.source.find("dst[o0] = ts_add<float>(dst[o0], ts_convert<float, ts_i32>(src[o1]));") !=
      std::string::npos);
  // int64 increments add as unsigned (two's complement wrap, as the CPU).
  QVERIFY(generateScatter(DType::Int64, DType::Int64, false)
              .source.find("atomicAdd((unsigned long long*)") != std::string::npos);
  // Increments need a device atomicAdd; float16 has no CUDA code; indices must be integers.
  QVERIFY(!scatterIncSupported(DType::Int8) && !scatterIncSupported(DType::Bool));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                           generateScatter(DType::Int16, DType::Int64, false));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                           generateCopy(DType::Float16, DType::Float32, false));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, generateGather(DType::Float32, DType::Float32));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, generateGather(DType::Float32, DType::Bool));
}

void TestCudaCodegen::testCoalesceAxes() {
  // A contiguous (2, 3, 4) and its copy: one axis of 24.
  StridedOperands a = coalesceAxes({2, 3, 4}, {{12, 4, 1}, {12, 4, 1}});
  QCOMPARE(a.shape, (Shape{24}));
  QCOMPARE(a.strides[0], (Strides{1}));
  // A transposed source keeps its axes apart; the size-1 axis goes.
  StridedOperands b = coalesceAxes({2, 1, 3}, {{3, 3, 1}, {1, 6, 2}});
  QCOMPARE(b.shape, (Shape{2, 3}));
  QCOMPARE(b.strides[1], (Strides{1, 2}));
  // A broadcast operand (stride 0) merges with itself only where the others do.
  StridedOperands c = coalesceAxes({4, 5, 6}, {{30, 6, 1}, {0, 0, 1}});
  QCOMPARE(c.shape, (Shape{20, 6}));
  QCOMPARE(c.strides[1], (Strides{0, 1}));
  // A column slice (row stride 10 for 4 columns) stays 2-d; a 0-d value is one element.
  StridedOperands d = coalesceAxes({3, 4}, {{4, 1}, {10, 1}});
  QCOMPARE(d.shape, (Shape{3, 4}));
  StridedOperands e = coalesceAxes({}, {{}, {}});
  QCOMPARE(e.shape, (Shape{1}));
  QCOMPARE(e.strides[0], (Strides{0}));
  // Nine axes merge to fit the kernels' eight.
  StridedOperands f = coalesceAxes(Shape(9, 2), {contiguousStrides(Shape(9, 2))});
  QCOMPARE(f.shape, (Shape{512}));
}

void TestCudaCodegen::testArgReduceKernels() {
  std::string kernels;
  std::vector<std::string> names;
  for (DType d : templateDTypes())
    for (bool max : {true, false}) {
      const GeneratedSource g = generateArgReduce(max, d);
      kernels += g.source.substr(scalarPrelude().size());
      names.push_back(g.name);
    }
  const std::string ptx = ptxOf(scalarPrelude() + kernels, "argreduce.cu");
  for (const std::string& n : names)
    QVERIFY2(ptx.find(".entry " + n) != std::string::npos, n.c_str());
  // The pair rule (Note [Reduction kernels]): the first NaN, else the extreme, the smaller index
  // between equals; integer dtypes have no NaN branch; narrow ones widen for the shuffles.
  const GeneratedSource f = generateArgReduce(true, DType::Float32);
  QVERIFY(f.source.find("const bool n1 = v != v, n2 = v2 != v2;") != std::string::npos);
  QVERIFY(f.source.find("if (v2 > v || (v2 == v && i2 < i))") != std::string::npos);
  const GeneratedSource i8 = generateArgReduce(false, DType::Int8);
  QVERIFY(i8.source.find("v != v") == std::string::npos);
  QVERIFY(i8.source.find("if (v2 < v || (v2 == v && i2 < i))") != std::string::npos);
  QVERIFY(i8.source.find("__shfl_down_sync(0xffffffffu, v, s)") != std::string::npos);
  QVERIFY(i8.source.find("int v = (int)0;") != std::string::npos);
  // float16 has no template code (hasTemplateCudaType): its argmax stays on the CPU.
  QVERIFY(!hasTemplateCudaType(DType::Float16) && hasCudaType(DType::Float16));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, generateArgReduce(true, DType::Float16));
}

void TestCudaCodegen::testCrossEntropyKernels() {
  std::string kernels;
  std::vector<std::string> expected;
  auto add = [&](const GeneratedSource& g, bool check) {
    const std::size_t prefix = g.source.starts_with(scalarPrelude() + nnPrelude())
                                   ? scalarPrelude().size() + nnPrelude().size()
                                   : scalarPrelude().size();
    kernels += g.source.substr(prefix);
    expected.push_back(g.name);
    if (check) expected.push_back(g.name + "_check");
  };
  for (DType t : {DType::Float32, DType::Float64}) {
    for (std::optional<DType> index : {std::optional<DType>{}, std::optional(DType::Int64),
                                       std::optional(DType::Int32), std::optional(DType::UInt8)}) {
      add(generateSoftmaxCrossEntropy(t, index), index.has_value());
      add(generateSoftmaxCrossEntropyGrad(t, index), index.has_value());
      add(generateCategoricalCrossEntropy(t, index), index.has_value());
    }
  }
  for (DType out : templateDTypes()) add(generateOneHot(out, DType::Int64), true);
  const std::string ptx = ptxOf(scalarPrelude() + nnPrelude() + kernels, "crossentropy.cu");
  for (const std::string& n : expected)
    QVERIFY2(ptx.find(".entry " + n) != std::string::npos, n.c_str());
  // The CPU's formulas in its order: softmax = exp(z - m) * (1 / s), loss = lse - z[t].
  const GeneratedSource g = generateSoftmaxCrossEntropy(DType::Float32, DType::Int64);
  QVERIFY(g.source.find("sm[i * k + j] = exp(row[j] - m) * inv;") != std::string::npos);
  QVERIFY(g.source.find("const float lse = m + log(s);") != std::string::npos);
  QVERIFY(g.source.find("loss[i] = (c >= 0 && c < k) ? float(lse - row[c]) : lse;") !=
          std::string::npos);
  const GeneratedSource grad = generateSoftmaxCrossEntropyGrad(DType::Float64, DType::Int32);
  QVERIFY(grad.source.find("double v = g[i] * sm[e];") != std::string::npos);
  QVERIFY(grad.source.find("if (j == (long long)t[i]) v -= g[i];") != std::string::npos);
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                           generateSoftmaxCrossEntropy(DType::Float16, std::nullopt));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                           generateCategoricalCrossEntropy(DType::Float32, DType::Float32));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, generateOneHot(DType::Float16, DType::Int64));
}

void TestCudaCodegen::testRandomTransforms() {
  std::string kernels;
  std::vector<std::string> names;
  for (DType d : {DType::Float32, DType::Float64}) {
    const GeneratedSource g = generateUniformTransform(d);
    kernels += g.source.substr(scalarPrelude().size());
    names.push_back(g.name);
  }
  for (DType d : {DType::Int8, DType::Int16, DType::Int32, DType::Int64, DType::UInt8,
                  DType::UInt16, DType::UInt32, DType::UInt64}) {
    const GeneratedSource g = generateIntegersTransform(d);
    kernels += g.source.substr(scalarPrelude().size());
    names.push_back(g.name);
  }
  const std::string ptx = ptxOf(scalarPrelude() + kernels, "random.cu");
  for (const std::string& n : names)
    QVERIFY2(ptx.find(".entry " + n) != std::string::npos, n.c_str());
  // cuRAND's (0, 1] becomes [low, high), kept below high as on the CPU; integers by Lemire's
  // multiply-shift of 64 bits from two words.
  const GeneratedSource u = generateUniformTransform(DType::Float32);
  QVERIFY(u.source.find("(float)(low + span * (1.0 - (double)u[e]))") != std::string::npos);
  QVERIFY(u.source.find("if (span > 0 && v >= hi) v = nextafterf(hi, lo);") != std::string::npos);
  QVERIFY(generateIntegersTransform(DType::Int64).source.find("__umul64hi(bits, range)") !=
          std::string::npos);
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, generateUniformTransform(DType::Int32));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, generateIntegersTransform(DType::Float32));
}

TSCOPE_TEST_MAIN(TestCudaCodegen)
#include "tst_cuda_codegen.moc"
