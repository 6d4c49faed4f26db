// .npy: bit-exact round trips of every dtype and shape, files written by real numpy (every dtype,
// both byte orders, Fortran order, format versions 2.0 and 3.0; tests/data/npy/
// make_npy_fixtures.py), np.save's exact bytes, the header syntax numpy accepts, atomic saving,
// and a clear NpyError for every malformed input.
#include "engine/io/npy.h"
#include "test_main.h"

#include <QDir>
#include <QFile>
#include <QRandomGenerator>
#include <QTemporaryDir>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

using namespace tscope::engine;
using namespace tscope::engine::io;

Q_DECLARE_METATYPE(tscope::engine::DType)

namespace {

const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

QString fixturePath(const QString& name) {
  return QStringLiteral(TSCOPE_TEST_DATA_DIR "/npy/") + name;
}

QByteArray readFile(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

std::span<const std::byte> bytesOf(const QByteArray& a) {
  return std::as_bytes(std::span(a.constData(), static_cast<std::size_t>(a.size())));
}

QByteArray toQByteArray(const std::vector<std::byte>& v) {
  return QByteArray(reinterpret_cast<const char*>(v.data()), static_cast<qsizetype>(v.size()));
}

Shape toShape(const QList<qint64>& s) {
  return Shape(s.begin(), s.end());
}

QList<qint64> qshape(const Shape& s) {
  return QList<qint64>(s.begin(), s.end());
}

// The header length field of a version 1.0 file.
int headerLength1(const QByteArray& file) {
  return static_cast<uchar>(file[8]) | static_cast<uchar>(file[9]) << 8;
}

// A file with header dict `dict` and `data`; padded as numpy pads unless `pad` is false.
QByteArray npyFile(QByteArray dict, const QByteArray& data, int major = 1, bool pad = true) {
  const int lengthBytes = major == 1 ? 2 : 4;
  if (pad) {
    while ((8 + lengthBytes + dict.size() + 1) % 64 != 0) dict += ' ';
    dict += '\n';
  }
  QByteArray out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  for (int i = 0; i < lengthBytes; ++i) out += static_cast<char>((dict.size() >> (8 * i)) & 0xff);
  return out + dict + data;
}

// A valid version 1.0 file with `from` replaced by `to` in its header dict, re-padded.
QByteArray editHeader(const QByteArray& valid, const QByteArray& from, const QByteArray& to) {
  const int length = headerLength1(valid);
  QByteArray dict = valid.mid(10, length).trimmed();
  if (!dict.contains(from))
    qFatal("editHeader: %s is not in %s", from.constData(), dict.constData());
  return npyFile(dict.replace(from, to), valid.mid(10 + length));
}

QByteArray withByte(QByteArray file, qsizetype index, char value) {
  file[index] = value;
  return file;
}

// A tensor whose bytes are a fixed pseudo-random pattern (every pattern is a valid number, NaN
// payloads included), with -0.0, a quiet NaN with a payload and a signalling NaN first for floats;
// bools cycle through 1, 0, 1.
Tensor patternTensor(DType dtype, const Shape& shape) {
  Tensor t(dtype, shape);
  auto* p = static_cast<unsigned char*>(t.rawData());
  QRandomGenerator rng(static_cast<quint32>(dtype) * 131 + static_cast<quint32>(shape.size()));
  for (std::size_t i = 0; i < t.nbytes(); ++i)
    p[i] = static_cast<unsigned char>(dtype == DType::Bool ? (i % 3 != 1) : rng.bounded(256));
  if (isFloat(dtype)) {
    const std::size_t size = t.itemSize();
    const std::uint64_t negZero = 1ULL << (8 * size - 1);
    const std::uint64_t quietNan = size == 2 ? 0x7e01 : size == 4 ? 0x7fc12345 : 0x7ff8000000012345;
    const std::uint64_t signallingNan = size == 2   ? 0x7c01
                                        : size == 4 ? 0x7f800001
                                                    : 0x7ff0000000000001;
    const std::uint64_t specials[] = {negZero, quietNan, signallingNan};
    for (std::int64_t i = 0; i < std::min<std::int64_t>(t.numel(), 3); ++i)
      std::memcpy(p + i * size, &specials[i], size);  // the low bytes: the host is little-endian
  }
  return t;
}

}  // namespace

class TestNpy : public QObject {
  Q_OBJECT

 private slots:
  void testRoundTrip_data();
  void testRoundTrip();
  void testWriteHeader_data();
  void testWriteHeader();
  void testWriteViewsInCOrder();
  void testWriteFloat32MatchesNpSave();
  void testWriteMatchesNumpy_data();
  void testWriteMatchesNumpy();
  void testWriteVersion2ForLongHeaders();
  void testLoadNumpyFixtures_data();
  void testLoadNumpyFixtures();
  void testLoadInt64Fixture();
  void testHeaderVariants_data();
  void testHeaderVariants();
  void testMalformed_data();
  void testMalformed();
  void testEveryTruncationIsRefused();
  void testRandomMutationsNeverCrash();
  void testSaveAndLoad();
  void testSaveFailureLeavesTargetUntouched();
  void testLoadErrorsNameThePath();
};

void TestNpy::testRoundTrip_data() {
  QTest::addColumn<DType>("dtype");
  QTest::addColumn<QList<qint64>>("shape");
  const QList<QList<qint64>> shapes = {{}, {0}, {5}, {2, 3, 4}};
  for (int d = 0; d < kDTypeCount; ++d) {
    const auto dtype = static_cast<DType>(d);
    for (const QList<qint64>& shape : shapes) {
      const std::string name = std::string(dtypeName(dtype)) + " " + shapeToString(toShape(shape));
      QTest::newRow(name.c_str()) << dtype << shape;
    }
  }
}

void TestNpy::testRoundTrip() {
  QFETCH(DType, dtype);
  QFETCH(QList<qint64>, shape);
  const Tensor t = patternTensor(dtype, toShape(shape));
  const std::vector<std::byte> bytes = writeNpy(t);
  const Tensor back = readNpy(bytes);
  QCOMPARE(back.dtype(), dtype);
  QCOMPARE(qshape(back.shape()), shape);
  QVERIFY(back.isContiguous());
  QVERIFY(back.toBytes() == t.toBytes());  // bit-exact: -0.0 and NaN payloads survive
  // numpy's layout: version 1.0, and the data starts at a multiple of 64 right after a '\n'.
  QCOMPARE(static_cast<int>(bytes[6]), 1);
  QCOMPARE(static_cast<int>(bytes[7]), 0);
  const std::size_t dataStart = bytes.size() - t.nbytes();
  QCOMPARE(dataStart % 64, std::size_t{0});
  QCOMPARE(static_cast<char>(bytes[dataStart - 1]), '\n');
}

void TestNpy::testWriteHeader_data() {
  QTest::addColumn<DType>("dtype");
  QTest::addColumn<QList<qint64>>("shape");
  QTest::addColumn<QByteArray>("dict");
  auto row = [](const char* name, DType dtype, QList<qint64> shape, const char* dict) {
    QTest::newRow(name) << dtype << shape << QByteArray(dict);
  };
  row("bool", DType::Bool, {3}, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }");
  row("int8", DType::Int8, {2, 2}, "{'descr': '|i1', 'fortran_order': False, 'shape': (2, 2), }");
  row("int16", DType::Int16, {}, "{'descr': '<i2', 'fortran_order': False, 'shape': (), }");
  row("int32", DType::Int32, {0}, "{'descr': '<i4', 'fortran_order': False, 'shape': (0,), }");
  row("int64", DType::Int64, {1, 2, 3},
      "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 2, 3), }");
  row("uint8", DType::UInt8, {7}, "{'descr': '|u1', 'fortran_order': False, 'shape': (7,), }");
  row("float16", DType::Float16, {2}, "{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }");
  row("float32", DType::Float32, {12, 1},
      "{'descr': '<f4', 'fortran_order': False, 'shape': (12, 1), }");
  row("float64", DType::Float64, {1}, "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }");
}

void TestNpy::testWriteHeader() {
  QFETCH(DType, dtype);
  QFETCH(QList<qint64>, shape);
  QFETCH(QByteArray, dict);
  const QByteArray file = toQByteArray(writeNpy(Tensor(dtype, toShape(shape))));
  QCOMPARE(file.left(8), QByteArray("\x93NUMPY\x01\x00", 8));
  const int length = headerLength1(file);
  QCOMPARE((10 + length) % 64, 0);
  const QByteArray header = file.mid(10, length);
  QVERIFY2(header.startsWith(dict), header.constData());
  QVERIFY(header.endsWith('\n'));
  const QByteArray padding = header.mid(dict.size(), header.size() - dict.size() - 1);
  QVERIFY(!padding.isEmpty());
  QCOMPARE(padding, QByteArray(padding.size(), ' '));
}

void TestNpy::testWriteViewsInCOrder() {
  const Tensor base = Tensor::fromDoubles(DType::Float32, {2, 3}, {0, 1, 2, 3, 4, 5});
  struct Case {
    const char* name;
    Tensor view;
    QList<qint64> shape;
    QList<double> values;
  };
  const Case cases[] = {
      {"transpose", base.transpose(), {3, 2}, {0, 3, 1, 4, 2, 5}},
      {"strided slice", base.slice(1, 0, 3, 2), {2, 2}, {0, 2, 3, 5}},
      {"reversed", base.slice(1, -1, -4, -1), {2, 3}, {2, 1, 0, 5, 4, 3}},
      {"select with offset", base.select(0, 1), {3}, {3, 4, 5}},
      {"broadcast", Tensor::scalar(DType::Float32, 7).broadcastTo({2, 2}), {2, 2}, {7, 7, 7, 7}},
  };
  for (const Case& c : cases) {
    const QByteArray file = toQByteArray(writeNpy(c.view));
    QVERIFY2(file.contains("'fortran_order': False"), c.name);
    QCOMPARE(file, toQByteArray(writeNpy(c.view.clone())));  // the same bytes as a C copy
    const Tensor back = readNpy(bytesOf(file));
    QCOMPARE(qshape(back.shape()), c.shape);
    const std::vector<double> v = back.toDoubles();
    QCOMPARE(QList<double>(v.begin(), v.end()), c.values);
    // The data section itself is in C order.
    const auto* data =
        reinterpret_cast<const float*>(file.constData() + file.size() - 4 * v.size());
    for (qsizetype i = 0; i < c.values.size(); ++i) QCOMPARE(double(data[i]), c.values[i]);
  }
}

void TestNpy::testWriteFloat32MatchesNpSave() {
  const QByteArray expected = readFile(fixturePath("float32_2x3.npy"));
  QVERIFY(!expected.isEmpty());
  const Tensor t = Tensor::fromDoubles(DType::Float32, {2, 3}, {1.0, 2.5, -3.0, 0.125, 1e-3, 42.0});
  QCOMPARE(toQByteArray(writeNpy(t)), expected);
}

void TestNpy::testWriteMatchesNumpy_data() {
  QTest::addColumn<QString>("name");
  for (const char* name : {"bool", "int8", "int16", "int32", "int64", "uint8", "float16", "float32",
                           "float64", "scalar", "empty", "float32_2x3"})
    QTest::newRow(name) << QString::fromLatin1(name) + ".npy";
}

// Every fixture np.save wrote in C order, little-endian: writeNpy reproduces it byte for byte.
void TestNpy::testWriteMatchesNumpy() {
  QFETCH(QString, name);
  const QByteArray expected = readFile(fixturePath(name));
  QVERIFY(!expected.isEmpty());
  QCOMPARE(toQByteArray(writeNpy(loadNpy(fixturePath(name).toStdString()))), expected);
}

void TestNpy::testWriteVersion2ForLongHeaders() {
  // Each axis of size 1 adds "1, " to the header: 21000 of them still fit version 1.0's 65535.
  const Tensor fits(DType::Float32, Shape(21000, 1));
  const std::vector<std::byte> small = writeNpy(fits);
  QCOMPARE(static_cast<int>(small[6]), 1);

  const Tensor t = Tensor::full(DType::Float32, Shape(22000, 1), 2.5);
  const QByteArray file = toQByteArray(writeNpy(t));
  QCOMPARE(file.left(8), QByteArray("\x93NUMPY\x02\x00", 8));
  const qint64 length = static_cast<uchar>(file[8]) | static_cast<uchar>(file[9]) << 8 |
                        static_cast<uchar>(file[10]) << 16 |
                        qint64(static_cast<uchar>(file[11])) << 24;
  QVERIFY(length > 65535);
  QCOMPARE(int((12 + length) % 64), 0);
  QCOMPARE(qsizetype(12 + length + 4), file.size());
  QCOMPARE(file[12 + length - 1], '\n');
  const Tensor back = readNpy(bytesOf(file));
  QCOMPARE(back.shape(), t.shape());
  QVERIFY(back.toBytes() == t.toBytes());
}

void TestNpy::testLoadNumpyFixtures_data() {
  QTest::addColumn<QString>("name");
  QTest::addColumn<QByteArray>("marker");  // in the file's first 128 bytes: what the row is about
  QTest::addColumn<DType>("dtype");
  QTest::addColumn<QList<qint64>>("shape");
  QTest::addColumn<QList<double>>("values");  // in C order
  auto row = [](const char* name, const char* marker, DType dtype, QList<qint64> shape,
                QList<double> values) {
    QTest::newRow(name) << QString::fromLatin1(name) + ".npy" << QByteArray(marker) << dtype
                        << shape << values;
  };
  row("bool", "'|b1'", DType::Bool, {5}, {1, 0, 1, 1, 0});
  row("int8", "'|i1'", DType::Int8, {5}, {-128, -1, 0, 1, 127});
  row("int16", "'<i2'", DType::Int16, {2, 3}, {-32768, -1, 0, 1, 2, 32767});
  row("int32", "'<i4'", DType::Int32, {5}, {-2147483648.0, -1, 0, 1, 2147483647});
  row("uint8", "'|u1'", DType::UInt8, {5}, {0, 1, 127, 128, 255});
  row("float16", "'<f2'", DType::Float16, {6},
      {0.5, -2, 65504, std::ldexp(1.0, -14), std::ldexp(1.0, -24), kInf});
  row("float32", "'<f4'", DType::Float32, {2, 2},
      {1.5, -0.0, 3.4028234663852886e38, std::ldexp(1.0, -149)});
  row("float64", "'<f8'", DType::Float64, {5}, {M_PI, -0.0, kNan, -kInf, 1e-310});
  row("float64_be", "'>f8'", DType::Float64, {3}, {1.0, -2.5, 1e300});
  row("int32_be", "'>i4'", DType::Int32, {3}, {1, -2, 0x01020304});
  row("float32_fortran_2d", "'fortran_order': True", DType::Float32, {2, 3}, {0, 1, 2, 3, 4, 5});
  QList<double> arange24;
  for (int i = 0; i < 24; ++i) arange24 << i;
  row("float32_fortran_3d", "'fortran_order': True", DType::Float32, {2, 3, 4}, arange24);
  row("int16_fortran_be", "'>i2', 'fortran_order': True", DType::Int16, {2, 3},
      {-3, -2, -1, 0, 1, 2});
  row("version2", "\x93NUMPY\x02", DType::Float64, {2, 2}, {1, 2, 3, 4});
  row("version3", "\x93NUMPY\x03", DType::Int16, {3}, {7, -8, 9});
  row("scalar", "'shape': ()", DType::Float64, {}, {2.5});
  row("empty", "'shape': (0, 3)", DType::Float32, {0, 3}, {});
  row("float32_2x3", "'<f4'", DType::Float32, {2, 3}, {1.0, 2.5, -3.0, 0.125, 1e-3, 42.0});
}

void TestNpy::testLoadNumpyFixtures() {
  QFETCH(QString, name);
  QFETCH(QByteArray, marker);
  QFETCH(DType, dtype);
  QFETCH(QList<qint64>, shape);
  QFETCH(QList<double>, values);
  const QByteArray file = readFile(fixturePath(name));
  QVERIFY2(file.left(128).contains(marker), "the fixture is not what this row tests");
  const Tensor t = loadNpy(fixturePath(name).toStdString());
  QCOMPARE(t.dtype(), dtype);
  QCOMPARE(qshape(t.shape()), shape);
  QVERIFY(t.isContiguous());
  // Bit-exact against the same values converted here (NaN and -0.0 included).
  const Tensor expected =
      Tensor::fromDoubles(dtype, toShape(shape), std::vector<double>(values.begin(), values.end()));
  QVERIFY2(t.bitwiseEqual(expected), t.toString().c_str());
  QVERIFY(readNpy(bytesOf(file), "x").toBytes() == t.toBytes());
}

void TestNpy::testLoadInt64Fixture() {
  // Checked as integers: 2^63 - 1 has no double.
  const Tensor t = loadNpy(fixturePath("int64.npy").toStdString());
  QCOMPARE(t.dtype(), DType::Int64);
  QCOMPARE(qshape(t.shape()), QList<qint64>{5});
  const std::int64_t* v = t.data<std::int64_t>();
  const std::int64_t expected[] = {std::numeric_limits<std::int64_t>::min(), -1, 0, 1,
                                   std::numeric_limits<std::int64_t>::max()};
  for (int i = 0; i < 5; ++i) QCOMPARE(v[i], expected[i]);
}

void TestNpy::testHeaderVariants_data() {
  QTest::addColumn<QByteArray>("dict");
  QTest::addColumn<int>("major");
  QTest::addColumn<bool>("pad");
  QTest::addColumn<DType>("dtype");
  QTest::addColumn<QList<qint64>>("shape");
  auto row = [](const char* name, const char* dict, DType dtype, QList<qint64> shape, int major = 1,
                bool pad = true) {
    QTest::newRow(name) << QByteArray(dict) << major << pad << dtype << shape;
  };
  row("numpy's", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", DType::Float32,
      {2, 3});
  row("double quotes", R"({"descr": "<f4", "fortran_order": False, "shape": (2, 3)})",
      DType::Float32, {2, 3});
  row("keys reordered", "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}", DType::Float32,
      {2, 3});
  row("spacing", "{ 'descr' : '<f4' ,\n\t'fortran_order' :False,'shape':( 2 ,3 , ) ,\n}",
      DType::Float32, {2, 3});
  row("no spaces", "{'descr':'<f4','fortran_order':False,'shape':(2,3)}", DType::Float32, {2, 3});
  row("one-tuple", "{'descr': '<i2', 'fortran_order': False, 'shape': (6,)}", DType::Int16, {6});
  row("scalar", "{'descr': '<f8', 'fortran_order': False, 'shape': ()}", DType::Float64, {});
  row("empty", "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 5)}", DType::Float64, {0, 5});
  row("python 2 longs", "{'descr': '<i4', 'fortran_order': False, 'shape': (2L, 3L), }",
      DType::Int32, {2, 3});
  row("native order", "{'descr': '=f4', 'fortran_order': False, 'shape': (2, 3)}", DType::Float32,
      {2, 3});
  row("'|' on float", "{'descr': '|f8', 'fortran_order': False, 'shape': (2,)}", DType::Float64,
      {2});
  row("'<i1'", "{'descr': '<i1', 'fortran_order': False, 'shape': (4,)}", DType::Int8, {4});
  row("'>u1'", "{'descr': '>u1', 'fortran_order': False, 'shape': (4,)}", DType::UInt8, {4});
  row("'<b1'", "{'descr': '<b1', 'fortran_order': False, 'shape': (4,)}", DType::Bool, {4});
  row("one-axis fortran", "{'descr': '<f4', 'fortran_order': True, 'shape': (3,)}", DType::Float32,
      {3});
  row("version 2.0", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", DType::Float32,
      {2, 3}, 2);
  row("version 3.0", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", DType::Float32,
      {2, 3}, 3);
  row("unpadded", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", DType::Float32,
      {2, 3}, 1, false);
}

void TestNpy::testHeaderVariants() {
  QFETCH(QByteArray, dict);
  QFETCH(int, major);
  QFETCH(bool, pad);
  QFETCH(DType, dtype);
  QFETCH(QList<qint64>, shape);
  const Tensor expected = patternTensor(dtype, toShape(shape));
  const QByteArray file = npyFile(dict, toQByteArray(expected.toBytes()), major, pad);
  const Tensor t = readNpy(bytesOf(file));
  QCOMPARE(t.dtype(), dtype);
  QCOMPARE(qshape(t.shape()), shape);
  QVERIFY(t.toBytes() == expected.toBytes());
}

void TestNpy::testMalformed_data() {
  QTest::addColumn<QByteArray>("file");
  QTest::addColumn<QString>("fragment");
  const Tensor t = Tensor::fromDoubles(DType::Float32, {2, 3}, {0, 1, 2, 3, 4, 5});
  const QByteArray valid = toQByteArray(writeNpy(t));  // header length 118, 24 bytes of data
  const QByteArray validBool =
      toQByteArray(writeNpy(Tensor::fromDoubles(DType::Bool, {3}, {1, 0, 1})));
  auto row = [](const char* name, const QByteArray& file, const char* fragment) {
    QTest::newRow(name) << file << QString::fromUtf8(fragment);
  };
  auto edit = [&](const char* from, const char* to) { return editHeader(valid, from, to); };

  // The prefix: magic, version, header length.
  row("empty file", QByteArray(),
      R"(expected the magic \x93NUMPY, found "" (the file has 0 bytes))");
  row("bad magic", withByte(valid, 1, 'n'), R"(expected the magic \x93NUMPY, found "\x93nUMPY")");
  row("zip file", QByteArray("PK\x03\x04\x14\x00\x00\x00", 8), R"(found "PK\x03\x04\x14\x00")");
  row("magic only", valid.left(6), "expected a format version after the magic, found the end");
  row("version 4.0", withByte(valid, 6, 4), "expected format version 1.0, 2.0 or 3.0, found 4.0");
  row("version 1.1", withByte(valid, 7, 1), "expected format version 1.0, 2.0 or 3.0, found 1.1");
  row("version 0.0", withByte(valid, 6, 0), "found 0.0");
  row("cut header length", valid.left(9),
      "expected a 2-byte header length after the version, found 1 byte");
  row("cut v2 header length", withByte(valid, 6, 2).left(11),
      "expected a 4-byte header length after the version, found 3 bytes");
  row("truncated header", valid.left(40),
      "expected a header of 118 bytes (as its length field says), found 30 bytes");
  row("header length past the end", withByte(withByte(valid, 8, '\xff'), 9, '\xff'),
      "expected a header of 65535 bytes");
  row("v1 file read as v2", withByte(valid, 6, 2), "expected a header of");

  // The header dict.
  row("not a dict", npyFile("[('descr', '<f4')]", valid.mid(128)),
      R"(expected the header to be a Python dict literal starting with '{', found "[('descr', '<f4')]")");
  row("blank header", npyFile("", valid.mid(128)),
      "starting with '{', found the end of the header");
  row("missing shape", edit("'shape': (2, 3), ", ""),
      "expected the header dict to have the keys 'descr', 'fortran_order' and 'shape', found it "
      "without 'shape'");
  row("missing descr and shape",
      edit("'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), ", "'fortran_order': False"),
      "found it without 'descr' and 'shape'");
  row("unknown key", edit("}", "'extra': 1, }"),
      R"(expected only the keys 'descr', 'fortran_order' and 'shape' in the header dict, found "'extra': 1, }")");
  row("duplicate key", edit("}", "'shape': (6,), }"),
      "expected each key once in the header dict, found 'shape' a second time");
  row("unterminated string", edit("}", "'x}"),
      "expected the closing ' of a string, found the end of the header");
  row("escape in string", edit("'<f4'", "'<f\\x34'"),
      R"(expected a string without escapes, found "\\x34', ')");
  row("key not a string", edit("'shape'", "shape"),
      R"(expected a quoted key or '}' in the header dict, found "shape:)");
  row("missing colon", edit("'shape': ", "'shape' "), "expected ':' after the key 'shape'");
  row("missing comma", edit("', 'fortran_order'", "' 'fortran_order'"),
      "expected ',' or '}' after the value of 'descr'");
  row("unclosed dict", edit("}", ""),
      "expected a quoted key or '}' in the header dict, found the end of the header");
  row("text after the dict", edit("}", "} x"),
      R"(expected nothing but spaces after the header dict, found "x")");
  row("NUL after the dict", editHeader(valid, "}", QByteArray("}\0", 2)), R"(found "\x00)");

  // descr.
  row("complex64", edit("'<f4'", "'<c8'"), "found '<c8' (complex numbers are not supported)");
  row("object", edit("'<f4'", "'|O'"), "found '|O' (Python objects are not supported)");
  row("unicode", edit("'<f4'", "'<U5'"), "found '<U5' (unicode strings are not supported)");
  row("bytes", edit("'<f4'", "'|S3'"), "found '|S3' (byte strings are not supported)");
  row("datetime", edit("'<f4'", "'<M8[ns]'"), "found '<M8[ns]' (datetime64 is not supported)");
  row("uint128", edit("'<f4'", "'<u16'"),
      "found '<u16' (the unsigned integers are uint8, uint16, uint32 and uint64)");
  row("float128", edit("'<f4'", "'<f16'"),
      "found '<f16' (of the floats only float16, float32 and float64 are supported)");
  row("no byte order", edit("'<f4'", "'f4'"),
      "expected the 'descr' of a bool, int8..int64, uint8..uint64 or float16/32/64 array");
  row("dtype name", edit("'<f4'", "'float32'"), "found 'float32'");
  row("empty descr", edit("'<f4'", "''"), "found ''");
  row("structured list", edit("'<f4'", "[('a', '<f4'), ('b', '<i4')]"),
      "structured dtypes are not supported), found \"[('a', '<f4'), ('b'");
  row("structured dict", edit("'<f4'", "{'names': ['a']}"), "structured dtypes are not supported");
  row("descr not a string", edit("'<f4'", "5"),
      R"(expected the 'descr' to be a string such as '<f4', found "5,)");

  // fortran_order.
  row("fortran_order 0", edit("False", "0"),
      R"(expected True or False for 'fortran_order', found "0,)");
  row("fortran_order false", edit("False", "false"),
      R"(expected True or False for 'fortran_order', found "false,)");
  row("fortran_order string", edit("False", "'False'"),
      "expected True or False for 'fortran_order'");

  // shape.
  row("shape a list", edit("(2, 3)", "[2, 3]"),
      R"(expected the 'shape' to be a tuple of integers such as (2, 3), found "[2, 3])");
  row("shape a number", edit("(2, 3)", "6"), "expected the 'shape' to be a tuple of integers");
  row("shape (6)", edit("(2, 3)", "(6)"),
      R"(a one-element tuple needs a comma: (5,)), found "(6))");
  row("unclosed tuple", edit("(2, 3), }", "(2, 3"),
      "expected ',' or ')' after a dimension of the 'shape', found the end of the header");
  row("empty slot", edit("(2, 3)", "(2, , 3)"),
      R"(expected an integer dimension in the 'shape', found ", 3))");
  row("negative dims", edit("(2, 3)", "(-2, -3)"),
      R"(expected a non-negative dimension in the 'shape', found "-2, -3))");
  row("float dim", edit("(2, 3)", "(2.0, 3)"),
      R"(expected an integer dimension in the 'shape', found "2.0, 3))");
  row("exponent dim", edit("(2, 3)", "(2e0, 3)"), "expected an integer dimension in the 'shape'");
  row("string dim", edit("(2, 3)", "('2', 3)"), "expected an integer dimension in the 'shape'");
  row("None dim", edit("(2, 3)", "(None,)"),
      R"(expected an integer dimension in the 'shape', found "None,))");
  row("bool dim", edit("(2, 3)", "(True, 6)"), "expected an integer dimension in the 'shape'");
  row("nested tuple", edit("(2, 3)", "((2, 3),)"),
      "expected an integer dimension in the 'shape', found \"(2, 3),)");
  row("dim past int64", edit("(2, 3)", "(99999999999999999999,)"),
      "expected a dimension below 2^63 in the 'shape'");
  row("element count overflow", edit("(2, 3)", "(4294967296, 4294967296)"),
      "expected a shape whose size in bytes fits in 64 bits, found (4294967296, 4294967296) of "
      "<f4");
  row("byte count overflow", edit("(2, 3)", "(2305843009213693952,)"),
      "expected a shape whose size in bytes fits in 64 bits");

  // The data.
  row("data shorter", valid.chopped(4),
      "the header declares shape (2, 3) of <f4 (24 bytes) but the file has 20 bytes of data");
  row("data longer", valid + QByteArray(1, '\0'),
      "the header declares shape (2, 3) of <f4 (24 bytes) but the file has 25 bytes of data");
  row("no data", valid.left(128), "but the file has 0 bytes of data");
  row("big-endian data shorter", edit("'<f4'", "'>f4'").chopped(1),
      "the header declares shape (2, 3) of >f4 (24 bytes) but the file has 23 bytes of data");
  row("huge shape, little data", edit("(2, 3)", "(1000000000, 1000000000)"),
      "(1000000000, 1000000000) of <f4 (4000000000000000000 bytes) but the file has 24 bytes of "
      "data");
  row("bool byte 2", withByte(validBool, 129, 2),
      "expected bool bytes of 0 or 1, found 0x02 at data byte 1");
  row("bool byte 0xff", withByte(validBool, 130, '\xff'),
      "expected bool bytes of 0 or 1, found 0xff at data byte 2");
}

void TestNpy::testMalformed() {
  QFETCH(QByteArray, file);
  QFETCH(QString, fragment);
  try {
    (void)readNpy(bytesOf(file), "bad.npy");
    QFAIL("expected an NpyError");
  } catch (const NpyError& e) {
    const QString what = QString::fromStdString(e.what());
    QVERIFY2(what.contains(fragment), qPrintable(what));
    QCOMPARE(what, "bad.npy: " + QString::fromStdString(e.message()));
    QCOMPARE(QString::fromStdString(e.source()), QStringLiteral("bad.npy"));
    const std::string_view w = e.what();
    QVERIFY2(std::all_of(w.begin(), w.end(), [](char c) { return c > 0 && c < 0x7f; }),
             "messages are printable ASCII whatever the file holds");
  }
}

void TestNpy::testEveryTruncationIsRefused() {
  for (const char* name : {"float32_2x3.npy", "version2.npy", "version3.npy", "bool.npy"}) {
    const QByteArray file = readFile(fixturePath(name));
    QVERIFY(!file.isEmpty());
    for (qsizetype n = 0; n < file.size(); ++n) {
      try {
        (void)readNpy(bytesOf(file.left(n)));
        QFAIL(qPrintable(QStringLiteral("%1 cut to %2 bytes loaded").arg(name).arg(n)));
      } catch (const NpyError&) {
      }
    }
  }
}

// Random edits of real files: each either loads a consistent tensor or throws NpyError; nothing
// else escapes and nothing crashes.
void TestNpy::testRandomMutationsNeverCrash() {
  QList<QByteArray> seeds;
  for (const char* name : {"float32_2x3.npy", "int16_fortran_be.npy", "version3.npy", "bool.npy",
                           "scalar.npy", "empty.npy"})
    seeds << readFile(fixturePath(name));
  const QByteArray tokens = "'\"(),:{}[] 0123456789-LTrueFals<>|=bifuc\n\\";
  QRandomGenerator rng(20240611);
  int loaded = 0, refused = 0;
  for (int i = 0; i < 20000; ++i) {
    QByteArray file = seeds[rng.bounded(static_cast<int>(seeds.size()))];
    const int edits = 1 + rng.bounded(3);
    for (int e = 0; e < edits; ++e) {
      const int kind = rng.bounded(5);
      const auto at = static_cast<qsizetype>(
          rng.bounded(static_cast<int>(std::min<qsizetype>(file.size(), 140)) + 1));
      if (kind == 0 && at < file.size()) file[at] = static_cast<char>(rng.bounded(256));
      if (kind == 1 && at < file.size())
        file[at] = tokens[rng.bounded(static_cast<int>(tokens.size()))];
      if (kind == 2) file.insert(at, tokens[rng.bounded(static_cast<int>(tokens.size()))]);
      if (kind == 3 && at < file.size()) file.remove(at, 1);
      if (kind == 4) file.truncate(rng.bounded(static_cast<int>(file.size()) + 1));
    }
    try {
      const Tensor t = readNpy(bytesOf(file));
      QVERIFY(t.defined() && t.isContiguous());
      QVERIFY(static_cast<qsizetype>(t.nbytes()) < file.size());
      ++loaded;
    } catch (const NpyError&) {
      ++refused;
    } catch (const std::exception& e) {
      QFAIL(qPrintable(QStringLiteral("not an NpyError: ") + QString::fromUtf8(e.what())));
    }
  }
  QVERIFY(loaded > 0);
  QVERIFY(refused > 0);
}

void TestNpy::testSaveAndLoad() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const std::filesystem::path path = dir.filePath("x.npy").toStdString();
  const Tensor a = patternTensor(DType::Float64, {3, 4});
  saveNpy(a, path);
  QCOMPARE(readFile(dir.filePath("x.npy")), toQByteArray(writeNpy(a)));
  QVERIFY(loadNpy(path).bitwiseEqual(a));
  // Replacing an existing file; no temporary file stays behind.
  const Tensor b = patternTensor(DType::Int16, {5});
  saveNpy(b, path);
  QVERIFY(loadNpy(path).bitwiseEqual(b));
  QCOMPARE(QDir(dir.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot),
           QStringList{"x.npy"});
}

void TestNpy::testSaveFailureLeavesTargetUntouched() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const QString target = dir.filePath("x.npy");
  {
    QFile f(target);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("old");
  }
  bool threw = false;
  try {
    saveNpy(Tensor(), target.toStdString());  // undefined: fails before any file is touched
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  QVERIFY(threw);
  QCOMPARE(readFile(target), QByteArray("old"));

  // A missing directory: NpyError naming the path, and nothing created.
  const QString missing = dir.filePath("missing/y.npy");
  threw = false;
  try {
    saveNpy(Tensor::scalar(DType::Float32, 1), missing.toStdString());
  } catch (const NpyError& e) {
    threw = true;
    QVERIFY2(QString::fromStdString(e.what()).startsWith(missing + ": "), e.what());
  }
  QVERIFY(threw);
  QCOMPARE(QDir(dir.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot),
           QStringList{"x.npy"});
}

void TestNpy::testLoadErrorsNameThePath() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const QString garbage = dir.filePath("garbage.npy");
  {
    QFile f(garbage);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("hello");
  }
  const struct {
    QString path;
    QString fragment;
  } cases[] = {
      {dir.filePath("absent.npy"), "expected a readable file, found none that opens"},
      {dir.path(), "expected a .npy file, found a directory"},
      {garbage, R"(expected the magic \x93NUMPY, found "hello" (the file has 5 bytes))"},
  };
  for (const auto& c : cases) {
    try {
      (void)loadNpy(c.path.toStdString());
      QFAIL("expected an NpyError");
    } catch (const NpyError& e) {
      const QString what = QString::fromStdString(e.what());
      QVERIFY2(what.startsWith(c.path + ": ") && what.contains(c.fragment), qPrintable(what));
    }
  }
}

TSCOPE_TEST_MAIN(TestNpy)
#include "tst_npy.moc"
