"""docs/coverage.md is current: regenerated, it is the same text (with the
NumPy version it was generated against), and its categories are true."""

import os
import re

import numpy as onp
import pytest

import numfuse as nf
from numfuse import _coverage

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "coverage.md")


def listed():
    with open(DOC) as f:
        text = f.read()
    version = re.search(r"against NumPy (\S+);", text).group(1)
    rows = dict(re.findall(r"^\| `((?:numpy|ndarray)\.\w+)` \| ([^|]+) \|$", text, re.M))
    return text, version, rows


def test_coverage_doc_is_current():
    text, version, rows = listed()
    if version == onp.__version__:
        assert text == _coverage.render(), (
            "docs/coverage.md is out of date: run `python -m numfuse._coverage --write docs/coverage.md`")
    else:
        # Another NumPy than the doc's: every name both know is classified as listed.
        funcs, types_, meths = _coverage.table()
        now = {f"numpy.{n}": c for n, c in {**funcs, **types_}.items()}
        now.update({f"ndarray.{n}": c for n, c in meths.items()})
        stale = {n: (c, now[n]) for n, c in rows.items() if n in now and now[n] != c}
        assert not stale, f"docs/coverage.md is out of date: {stale}"


def test_categories_are_true():
    funcs, types_, meths = _coverage.table()
    assert len(funcs) >= 350 and len(meths) >= 50  # NumPy's public surface, not an empty scan
    for name, cat in funcs.items():
        obj = getattr(nf, name)
        if cat == _coverage.FALLBACK:
            assert getattr(obj, "__wrapped__", None) is getattr(onp, name), name
        elif cat == _coverage.SHARED:
            assert obj is getattr(onp, name), name
        else:
            assert obj is not getattr(onp, name) and getattr(obj, "__wrapped__", None) is not getattr(onp, name), name
    assert funcs["add"] == _coverage.NATIVE and funcs["sum"] == _coverage.NATIVE
    assert _coverage.MISSING not in meths.values()


def test_counts_in_the_table_add_up():
    text, _, rows = listed()
    total = re.search(r"^\| total \| (\d+) \| (\d+) \| (\d+) \|$", text, re.M)
    assert total, "no totals row"
    n_funcs, n_types, n_meths = map(int, total.groups())
    assert n_funcs + n_types == sum(1 for n in rows if n.startswith("numpy."))
    assert n_meths == sum(1 for n in rows if n.startswith("ndarray."))


def test_every_public_function_and_method_has_a_docstring():
    undocumented = [n for n in dir(nf) if not n.startswith("_") and callable(vars(nf).get(n))
                    and not (vars(nf)[n].__doc__ or "").strip()]
    undocumented += [f"ndarray.{m}" for m in dir(nf.ndarray) if not m.startswith("_")
                     and callable(getattr(nf.ndarray, m, None))
                     and not (getattr(nf.ndarray, m).__doc__ or "").strip()]
    assert not undocumented


def test_docstrings_say_how_numfuse_runs_numpy_functions():
    assert nf.mean.__doc__.startswith("numfuse's numpy.mean")
    assert "Compute the arithmetic mean" in nf.mean.__doc__  # NumPy's text follows
    assert nf.ndarray.sum.__doc__  # (the C method's own)
