#!/usr/bin/env python3
"""Writes the .npy fixtures of tests/engine/io/tst_npy.cpp with real numpy.

The generated files are committed, so building and testing need no Python; run this only to change
the fixtures (and then the expected values hard-coded in tst_npy.cpp):

    python3 tests/data/npy/make_npy_fixtures.py        # needs numpy (pip install numpy)

Each file is tiny (< 2 KB). Files written with np.save in C order and little-endian are also
compared byte for byte with what writeNpy produces for the same tensor.
"""
import pathlib

import numpy as np
from numpy.lib import format as npformat

HERE = pathlib.Path(__file__).resolve().parent


def save(name, array):
    np.save(HERE / name, array, allow_pickle=False)


def write_version(name, array, version):
    with open(HERE / name, "wb") as f:
        npformat.write_array(f, array, version=version, allow_pickle=False)


# Every dtype, little-endian, C order, with the extremes of each type.
save("bool.npy", np.array([True, False, True, True, False], dtype=np.bool_))
save("int8.npy", np.array([-128, -1, 0, 1, 127], dtype="<i1"))
save("int16.npy", np.array([[-32768, -1, 0], [1, 2, 32767]], dtype="<i2"))
save("int32.npy", np.array([-2147483648, -1, 0, 1, 2147483647], dtype="<i4"))
save("int64.npy", np.array([-(2**63), -1, 0, 1, 2**63 - 1], dtype="<i8"))
save("uint8.npy", np.array([0, 1, 127, 128, 255], dtype="|u1"))
# 0.5, -2, the largest half, the smallest normal half, the smallest subnormal half, inf.
save("float16.npy", np.array([0.5, -2.0, 65504.0, 2.0**-14, 2.0**-24, np.inf], dtype="<f2"))
save("float32.npy", np.array([[1.5, -0.0], [3.4028234663852886e38, 2.0**-149]], dtype="<f4"))
save("float64.npy", np.array([np.pi, -0.0, np.nan, -np.inf, 1e-310], dtype="<f8"))

# Big-endian data (numpy keeps the byte order it is given).
save("float64_be.npy", np.array([1.0, -2.5, 1e300], dtype=">f8"))
save("int32_be.npy", np.array([1, -2, 0x01020304], dtype=">i4"))

# Fortran order: the file holds the transpose's bytes; values are arange in C order.
save("float32_fortran_2d.npy", np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3)))
save("float32_fortran_3d.npy", np.asfortranarray(np.arange(24, dtype="<f4").reshape(2, 3, 4)))
# Fortran order and big-endian together.
save("int16_fortran_be.npy", np.asfortranarray((np.arange(6).reshape(2, 3) - 3).astype(">i2")))

# Explicit newer format versions (numpy picks 1.0 whenever the header fits).
write_version("version2.npy", np.array([[1.0, 2.0], [3.0, 4.0]], dtype="<f8"), (2, 0))
write_version("version3.npy", np.array([7, -8, 9], dtype="<i2"), (3, 0))

# A 0-d array and an empty one.
save("scalar.npy", np.array(2.5, dtype="<f8"))
save("empty.npy", np.zeros((0, 3), dtype="<f4"))

# writeNpy must produce exactly these bytes for the same float32 (2, 3) tensor.
save("float32_2x3.npy", np.array([[1.0, 2.5, -3.0], [0.125, 1e-3, 42.0]], dtype="<f4"))

# The headers say what the tests rely on (numpy silently normalises some inputs).
for name, fragment in [("float64_be.npy", "'>f8'"), ("int32_be.npy", "'>i4'"),
                       ("int16_fortran_be.npy", "'>i2', 'fortran_order': True"),
                       ("float32_fortran_2d.npy", "True"), ("float32_fortran_3d.npy", "True")]:
    assert fragment.encode() in (HERE / name).read_bytes()[:128], name
assert (HERE / "version2.npy").read_bytes()[6:8] == b"\x02\x00"
assert (HERE / "version3.npy").read_bytes()[6:8] == b"\x03\x00"

for path in sorted(HERE.glob("*.npy")):
    assert path.stat().st_size < 2048, path
    print(f"{path.name}: {path.stat().st_size} bytes")
