"""The self-contained wheel (`make wheel`): installed into a fresh virtual
environment with the system's LLVM, clang, OpenMP, TBB and OpenBLAS hidden
(tests/wheel/hide_system_llvm.sh), it compiles and runs kernels; the wheel
before auditwheel's repair, in the same environment, fails to import with an
error naming the Debian package to install."""

import glob
import os
import subprocess
import sys
import venv

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HIDE = os.path.join(ROOT, "tests", "wheel", "hide_system_llvm.sh")
SMOKE = os.path.join(ROOT, "tests", "wheel", "smoke.py")


def wheels():
    return (sorted(glob.glob(os.path.join(ROOT, "dist", "numfuse-*manylinux*.whl"))),
            sorted(glob.glob(os.path.join(ROOT, "dist", "raw", "numfuse-*.whl"))))


@pytest.fixture(scope="module")
def built():
    repaired, raw = wheels()
    if not repaired or not raw:  # (`make test` builds it first)
        subprocess.run(["make", "-C", ROOT, "--no-print-directory", "wheel"], check=True)
        repaired, raw = wheels()
    assert len(repaired) == 1 and len(raw) == 1, (repaired, raw)
    return repaired[0], raw[0]


def fresh_env(path, wheel):
    venv.EnvBuilder(with_pip=True).create(path)
    py = os.path.join(path, "bin", "python")
    subprocess.run([py, "-m", "pip", "install", "-q", wheel], check=True)
    return py


def hidden_run(py, args, tmp_path):
    env = dict(os.environ, NUMFUSE_CACHE_DIR=str(tmp_path / "cache"))  # a fresh cache: kernels compile
    env.pop("PYTHONPATH", None)
    return subprocess.run([HIDE, py, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def test_wheel_is_tagged_manylinux_and_carries_llvm(built):
    repaired, _ = built
    name = os.path.basename(repaired)
    assert "-manylinux_" in name and name.endswith("_x86_64.whl"), name
    import zipfile
    libs = [n for n in zipfile.ZipFile(repaired).namelist() if n.startswith("numfuse.libs/")]
    for lib in ("libLLVM", "libclang-cpp", "libomp", "libtbb", "libopenblas"):
        assert any(os.path.basename(n).startswith(lib) for n in libs), (lib, libs)


def test_wheel_runs_kernels_with_the_system_llvm_hidden(built, tmp_path):
    py = fresh_env(str(tmp_path / "env"), built[0])
    r = hidden_run(py, [SMOKE], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "wheel smoke test passed" in r.stdout


def test_unrepaired_wheel_names_the_missing_package(built, tmp_path):
    py = fresh_env(str(tmp_path / "env"), built[1])
    r = hidden_run(py, ["-c", "import numfuse"], tmp_path)
    assert r.returncode != 0
    assert "ImportError" in r.stderr and "install the Debian package" in r.stderr, r.stderr


def test_install_help_maps_libraries_to_packages():
    from numfuse._install_help import explain
    msg = explain(ImportError("libomp.so.5: cannot open shared object file: No such file or directory"))
    assert "libomp5-19" in msg and msg.startswith("libomp.so.5: cannot open")
    assert "libllvm19" in explain(ImportError("libLLVM.so.19.1: cannot open shared object file"))
    assert "README" in explain(ImportError("something else"))


def test_build_without_llvm_names_the_packages(tmp_path):
    cmake = os.path.join(os.path.dirname(sys.executable), "cmake")
    r = subprocess.run([HIDE, cmake, "-S", ROOT, "-B", str(tmp_path / "build")], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode != 0
    out = " ".join((r.stdout + r.stderr).split())
    assert "install the Debian package llvm-19-dev" in out, out
    assert "apt-get install llvm-19-dev libclang-19-dev" in out, out
