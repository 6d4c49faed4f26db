// Device tensors without a device (Note [Device tensors]): the device tag, explicit copies through
// the registered DeviceMemory (a fake one over host memory here), views of device tensors, and the
// errors of host-only operations and of a missing backend.
#include "fake_device.h"
#include "test_main.h"

using namespace tscope::engine;
using tscope::test::FakeDeviceMemory;

class TestDeviceMemory : public QObject {
  Q_OBJECT
 private slots:
  void testRoundTrip();
  void testNonContiguousViewsCopy();
  void testHostOnlyOperationsRefuseDeviceTensors();
  void testNoBackendRegistered();
  void testEmptyTensors();
};

void TestDeviceMemory::testRoundTrip() {
  FakeDeviceMemory memory;
  const Tensor x = Tensor::fromDoubles(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor d = toDevice(x, Device::Cuda);
  QCOMPARE(d.device(), Device::Cuda);
  QCOMPARE(d.shape(), x.shape());
  QVERIFY(d.isContiguous());
  QCOMPARE(memory.copies[int(DeviceMemory::Copy::HostToDevice)], 1);
  // Already there: no copy.
  QVERIFY(toDevice(d, Device::Cuda).sharesStorageWith(d));
  const Tensor h = toHost(d);
  QCOMPARE(h.device(), Device::Cpu);
  QVERIFY(h.bitwiseEqual(x));
  QCOMPARE(memory.copies[int(DeviceMemory::Copy::DeviceToHost)], 1);
  QCOMPARE(memory.allocations, 1);
}

void TestDeviceMemory::testNonContiguousViewsCopy() {
  FakeDeviceMemory memory;
  const Tensor x =
      Tensor::fromDoubles(DType::Float64, {3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  const Tensor d = toDevice(x, Device::Cuda);
  // Views of a device tensor stay on the device and share its storage.
  const Tensor t = d.transpose();
  QCOMPARE(t.device(), Device::Cuda);
  QVERIFY(t.sharesStorageWith(d));
  QVERIFY(toHost(t).bitwiseEqual(x.transpose().contiguous()));
  const Tensor s = d.slice(1, 3, 0, -2);  // columns 3 and 1: a negative stride
  QVERIFY(toHost(s).bitwiseEqual(x.slice(1, 3, 0, -2).contiguous()));
  const Tensor b = toDevice(Tensor::fromDoubles(DType::Float64, {4}, {1, 2, 3, 4}), Device::Cuda)
                       .broadcastTo({3, 4});
  QCOMPARE(toHost(b).toDoubles(), (std::vector<double>{1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4}));
  // A non-contiguous host tensor goes over contiguous.
  const Tensor up = toDevice(x.transpose(), Device::Cuda);
  QVERIFY(up.isContiguous());
  QVERIFY(toHost(up).bitwiseEqual(x.transpose().contiguous()));
}

void TestDeviceMemory::testHostOnlyOperationsRefuseDeviceTensors() {
  FakeDeviceMemory memory;
  const Tensor d = toDevice(Tensor::fromDoubles(DType::Float32, {2}, {1, 2}), Device::Cuda);
  try {
    d.toDoubles();
    QFAIL("expected std::logic_error");
  } catch (const std::logic_error& e) {
    QCOMPARE(QString::fromStdString(e.what()),
             QStringLiteral("Tensor::toDoubles: expected a CPU tensor, found one on cuda (copy it "
                            "to the host first: toHost in engine/tensor/device_memory.h)"));
  }
  QVERIFY_THROWS_EXCEPTION(std::logic_error, d.at({0}));
  QVERIFY_THROWS_EXCEPTION(std::logic_error, d.clone());
  QVERIFY_THROWS_EXCEPTION(std::logic_error, d.toBytes());
  Tensor h = Tensor::zeros(DType::Float32, {2});
  QVERIFY_THROWS_EXCEPTION(std::logic_error, h.copyFrom(d));
  QCOMPARE(QString::fromStdString(d.toString()), QStringLiteral("<(2,) float32 on cuda>"));
}

void TestDeviceMemory::testNoBackendRegistered() {
  QVERIFY(deviceMemory(Device::Cuda) == nullptr);
  const Tensor x = Tensor::fromDoubles(DType::Float32, {1}, {1});
  try {
    toDevice(x, Device::Cuda);
    QFAIL("expected std::runtime_error");
  } catch (const std::runtime_error& e) {
    QVERIFY2(QString::fromStdString(e.what()).startsWith(
                 "emptyOn: no memory is registered for cuda (the backend is not built into this "
                 "program, or it found no device"),
             e.what());
  }
}

void TestDeviceMemory::testEmptyTensors() {
  FakeDeviceMemory memory;
  const Tensor d = toDevice(Tensor::zeros(DType::Int64, {0, 3}), Device::Cuda);
  QCOMPARE(d.numel(), std::int64_t(0));
  QCOMPARE(toHost(d).shape(), (Shape{0, 3}));
  QCOMPARE(memory.copies[int(DeviceMemory::Copy::HostToDevice)], 0);
}

TSCOPE_TEST_MAIN(TestDeviceMemory)
#include "tst_device_memory.moc"
