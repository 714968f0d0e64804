"""numfuse's Python modules import only downward (issue 10, part 8): each
module's relative imports, at module level or inside functions, name
modules of a lower layer. What a lower module needs from a higher one is
given to it by the package at import (dependency injection: _ufuncs.wire,
_array._install, the core's hooks)."""

import ast
import os

import pytest

PKG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python", "numfuse")

# Lowest first. A module may import modules of lower layers only.
LAYERS = [
    {"_core", "_version", "_install_help"},
    {"_fallback", "_hooks", "_jit_select", "_array_api"},
    {"_errstate", "_config", "_tuning", "_dispatch", "_jit"},
    {"_ufuncs"},
    {"_creation"},
    {"_manip"},
    {"_reductions"},
    {"linalg", "_signal", "_einsum", "random", "testing", "lib"},
    {"_sorting", "_histograms"},
    {"_lib_math", "_lib_shape", "_indexing"},
    {"fft"},
    {"_array", "_docs", "_coverage", "_ipython"},
    {"__init__"},
]
LAYER = {m: i for i, group in enumerate(LAYERS) for m in group}


def modules():
    out = {}
    for root, _, files in os.walk(PKG):
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(root, f), PKG)
                parts = rel[:-3].split(os.sep)
                name = parts[0] if parts[0] != "__init__" or len(parts) == 1 else parts[0]
                out.setdefault(name, []).append(os.path.join(root, f))
    return out


def imports(path, package_depth):
    """The numfuse modules a file imports (relative imports, resolved to the
    package's top-level module names)."""
    tree = ast.parse(open(path).read())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            if node.level > package_depth + 1:
                continue
            base = node.module.split(".")[0] if node.module else None
            if node.level == package_depth + 1 and base:
                names.add(base)
            elif node.level == package_depth + 1:
                names.update(a.name for a in node.names)
    return names


def test_every_module_has_a_layer():
    assert set(modules()) - {"__main__"} <= set(LAYER) | {"lib"}, set(modules()) - set(LAYER)


@pytest.mark.parametrize("module", sorted(set(modules()) - {"__init__"}))
def test_imports_go_downward(module):
    bad = []
    for path in modules()[module]:
        depth = os.path.relpath(path, PKG).count(os.sep)
        for target in imports(path, depth):
            if target == module or target not in LAYER:
                continue  # (within the subpackage, or a name from the package namespace)
            if LAYER[target] >= LAYER[module]:
                bad.append((os.path.relpath(path, PKG), target))
    assert not bad, f"{module} imports upward or sideways: {bad}"


def test_the_check_sees_an_upward_import(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("def f():\n    from ._sorting import sort\n")
    assert imports(str(p), 0) == {"_sorting"}


# One owner per rule: matmul's 1-D rules live in C++ (record_matmul_any),
# for the plain call and for dtype=/out= alike.
@pytest.mark.parametrize("shapes", [((2, 3), (3,)), ((3,), (3, 4)), ((3,), (3,)), ((5, 2, 3), (3,)), ((3,), (5, 3, 2))])
@pytest.mark.parametrize("dtype", [None, "float32", "float64"])
def test_matmul_one_d_rules_with_dtype(shapes, dtype):
    import numpy as onp

    import numfuse as nf

    x = onp.arange(int(onp.prod(shapes[0])), dtype=float).reshape(shapes[0])
    y = onp.arange(int(onp.prod(shapes[1])), dtype=float).reshape(shapes[1]) - 2
    g = nf.matmul(nf.asarray(x), nf.asarray(y), dtype=dtype)
    w = onp.matmul(x, y, dtype=dtype)
    assert onp.asarray(g).dtype == w.dtype and onp.shape(g) == onp.shape(w)
    onp.testing.assert_allclose(onp.asarray(g), w)
    if onp.ndim(w):
        o = nf.empty(w.shape, dtype=w.dtype)
        assert nf.matmul(nf.asarray(x), nf.asarray(y), out=o, dtype=dtype) is o
        onp.testing.assert_allclose(onp.asarray(o), w)
    with pytest.raises(ValueError, match="does not have enough dimensions"):
        nf.matmul(nf.asarray(x), nf.asarray(onp.float64(2.0)), dtype=dtype)
