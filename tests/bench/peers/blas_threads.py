"""Holds a peer to the thread count it is measured at.

torch.set_num_threads(n) sets PyTorch's OpenMP pool (its oneDNN convolutions) but not the pool of
the OpenBLAS that Debian's python3-torch calls for its matrix products (addmm, bmm, linear): that
one starts with a thread per CPU, so a "one thread" PyTorch ran its products on two threads on
the two-core development machine (process CPU time twice the wall time). limit_blas_threads(n)
calls openblas_set_num_threads(n) on every OpenBLAS loaded in the process, and sets the usual
environment variables for child processes."""
import ctypes
import os


def loaded_openblas():
    """The paths of the OpenBLAS libraries mapped in this process."""
    paths = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            name = os.path.basename(path)
            if "openblas" in name or name.startswith("libblas.so"):
                paths.add(path)
    return sorted(paths)


def limit_blas_threads(n):
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)
    limited = []
    for path in loaded_openblas():
        lib = ctypes.CDLL(path)
        if hasattr(lib, "openblas_set_num_threads"):
            lib.openblas_set_num_threads(ctypes.c_int(n))
            limited.append(path)
    return limited


def check_threads(fn, n, calls=20):
    """Process CPU time over wall time of `calls` calls of fn: about n when fn uses n threads."""
    import time
    fn()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        fn()
    return (time.process_time() - cpu) / max(1e-9, time.perf_counter() - wall)
