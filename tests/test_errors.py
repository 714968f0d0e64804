"""Errors: NumPy's exception type, raised at the call (not deferred to a
flush), and a failed call leaves every earlier pending result intact.

Each case is a function `fn(m, s)` that must raise with m = numpy and with
m = numfuse; `s` is a State of arrays (some pending, some written in place)
built the same way for both modules, so the failing call also touches arrays
whose values are still being computed lazily.
"""

import operator

import numpy as onp
import pytest

import numfuse as nf
from conftest import assert_same, raises_like

AxisError = onp.exceptions.AxisError


class State:
    """Pending work recorded before the failing call."""

    def __init__(self, m):
        self.m = m
        self.a = m.arange(20.0).reshape(4, 5) * 0.5 + 1  # pending float64 (4, 5)
        self.a[1:] += self.a[:-1]  # overlapping in-place update, pending
        self.t = m.sqrt(self.a) - self.a.T.T  # pending temporary
        self.r = self.a.sum(axis=0)  # pending reduction
        self.i = m.arange(12, dtype=m.int64).reshape(3, 4) * 3  # pending int64
        self.u8 = m.arange(6, dtype=m.uint8) * 40  # pending uint8
        self.b = self.a > 5.0  # pending bool (4, 5)
        self.v = self.a[::2, 1:]  # a view of a pending array

    def results(self):
        return [self.a, self.t, self.r, self.i, self.u8, self.b, self.v]

    def more(self):
        """Work recorded after the error, reading arrays the failed call used."""
        m = self.m
        self.a[:, ::2] *= 2.0
        return [self.a, self.a.max(axis=1), self.i + self.i.T.sum(axis=1), m.where(self.b, self.a, -1.0),
                self.u8 // 3, self.v.copy()]


def check_error(exc, fn):
    """exc is raised by NumPy and by numfuse (at the call), and numfuse's
    pending results before and after the call equal NumPy's."""
    s_np = State(onp)
    with pytest.raises(exc) as e_np:
        fn(onp, s_np)

    s_nf = State(nf)
    with pytest.raises(exc) as e_nf:
        fn(nf, s_nf)  # nothing after the call: it must raise by itself

    # numfuse's exception is (a subclass of) every class NumPy's belongs to
    # among the ones users catch
    for base in (AxisError, ValueError, IndexError, TypeError, OverflowError):
        if isinstance(e_np.value, base):
            assert isinstance(e_nf.value, base), f"numpy raised {type(e_np.value)}, numfuse {type(e_nf.value)}"

    # a flush after the error raises nothing (the error was not deferred) ...
    nf.flush()
    # ... and everything recorded before the error is intact
    for k, (g, e) in enumerate(zip(s_nf.results(), s_np.results())):
        assert_same(g, e, rtol=1e-12)
    for k, (g, e) in enumerate(zip(s_nf.more(), s_np.more())):
        assert_same(g, e, rtol=1e-12)


def _setitem(x, key, value):
    x[key] = value


def _iop(op):
    def f(x, y):
        return op(x, y)

    return f


CASES = {
    # --- shape mismatch in binary ops -> ValueError
    "binary_shape": (ValueError, lambda m, s: s.a + m.ones((4, 6))),
    "binary_transposed": (ValueError, lambda m, s: s.a * s.a.T),
    "binary_view_shapes": (ValueError, lambda m, s: m.maximum(s.a, s.a[:, :3])),
    "binary_3_operands_where": (ValueError, lambda m, s: m.where(s.b, s.a, m.ones(3))),
    "binary_list_operand": (ValueError, lambda m, s: s.a - [1.0, 2.0]),
    "binary_out_shape": (ValueError, lambda m, s: m.add(s.a, 1.0, out=m.zeros((4,)))),
    "binary_out_not_broadcastable": (ValueError, lambda m, s: m.multiply(s.a, 2.0, out=m.zeros((1, 5)))),
    "inplace_not_broadcastable": (ValueError, lambda m, s: _iop(operator.iadd)(s.a[:, :1], s.a)),
    "inplace_view_shape": (ValueError, lambda m, s: _iop(operator.isub)(s.v, s.a)),
    # --- bad axes -> AxisError (a ValueError and an IndexError)
    "sum_axis": (AxisError, lambda m, s: s.a.sum(axis=2)),
    "sum_axis_negative": (AxisError, lambda m, s: s.a.sum(axis=-3)),
    "max_axis": (AxisError, lambda m, s: m.max(s.a, axis=5)),
    "min_axis_tuple": (AxisError, lambda m, s: s.a.min(axis=(0, 2))),
    "mean_axis": (AxisError, lambda m, s: s.a.mean(axis=3)),
    "argmax_axis": (AxisError, lambda m, s: s.a.argmax(axis=2)),
    "any_axis_int": (AxisError, lambda m, s: s.b.any(axis=-3)),
    "std_axis": (AxisError, lambda m, s: s.a.std(axis=2)),
    "transpose_axes": (AxisError, lambda m, s: s.a.transpose(0, 2)),
    "transpose_function": (AxisError, lambda m, s: m.transpose(s.a, (2, 0))),
    "squeeze_axis": (AxisError, lambda m, s: s.a.squeeze(axis=2)),
    "expand_dims_axis": (AxisError, lambda m, s: m.expand_dims(s.a, 3)),
    "expand_dims_negative": (AxisError, lambda m, s: m.expand_dims(s.a, -4)),
    "concatenate_axis": (AxisError, lambda m, s: m.concatenate([s.a, s.a], axis=2)),
    "stack_axis": (AxisError, lambda m, s: m.stack([s.a, s.a], axis=4)),
    "moveaxis": (AxisError, lambda m, s: m.moveaxis(s.a, 0, 2)),
    "swapaxes": (AxisError, lambda m, s: m.swapaxes(s.a, 0, 2)),
    "flip_axis": (AxisError, lambda m, s: m.flip(s.a, 2)),
    "diff_axis": (AxisError, lambda m, s: m.diff(s.a, axis=2)),
    # --- other axis misuse -> ValueError
    "squeeze_non_unit": (ValueError, lambda m, s: s.a.squeeze(axis=0)),
    "transpose_repeated": (ValueError, lambda m, s: s.a.transpose(1, 1)),
    "sum_axis_duplicate": (ValueError, lambda m, s: s.a.sum(axis=(0, 0))),
    # --- indexing -> IndexError
    "index_oob": (IndexError, lambda m, s: s.a[4]),
    "index_oob_negative": (IndexError, lambda m, s: s.a[-5]),
    "index_oob_second_axis": (IndexError, lambda m, s: s.a[0, 5]),
    "index_oob_after_slice": (IndexError, lambda m, s: s.a[1:2, -6]),
    "index_oob_after_ellipsis": (IndexError, lambda m, s: s.a[..., 5]),
    "index_oob_view": (IndexError, lambda m, s: s.v[0, 4]),
    "index_oob_numpy_int": (IndexError, lambda m, s: s.a[onp.int64(9)]),
    "setitem_oob": (IndexError, lambda m, s: _setitem(s.a, (0, 7), 1.0)),
    "setitem_oob_int": (IndexError, lambda m, s: _setitem(s.i, -4, 0)),
    "too_many_indices": (IndexError, lambda m, s: s.a[0, 0, 0]),
    "too_many_slices": (IndexError, lambda m, s: s.a[:, :, :]),
    "too_many_with_newaxis": (IndexError, lambda m, s: s.a[None, 0, 0, 0]),
    "too_many_0d": (IndexError, lambda m, s: s.r.sum()[0]),
    "setitem_too_many": (IndexError, lambda m, s: _setitem(s.a, (0, 0, 0), 1.0)),
    "float_index": (IndexError, lambda m, s: s.a[1.5]),
    "two_ellipses": (IndexError, lambda m, s: s.a[..., ...]),
    # --- reshape -> ValueError
    "reshape_size": (ValueError, lambda m, s: s.a.reshape(7, 3)),
    "reshape_unknown": (ValueError, lambda m, s: s.a.reshape(3, -1)),
    "reshape_two_unknown": (ValueError, lambda m, s: s.a.reshape(-1, -1)),
    "reshape_function": (ValueError, lambda m, s: m.reshape(s.a, (21,))),
    "reshape_view": (ValueError, lambda m, s: s.v.reshape(5, 2)),
    # --- matmul -> ValueError
    "matmul_mismatch": (ValueError, lambda m, s: s.a @ s.a),
    "matmul_function": (ValueError, lambda m, s: m.matmul(s.a, m.ones((4, 2)))),
    "matmul_vectors": (ValueError, lambda m, s: m.ones(3) @ m.ones(4)),
    "matmul_scalar": (ValueError, lambda m, s: m.matmul(s.a, 2.0)),
    "dot_mismatch": (ValueError, lambda m, s: m.dot(s.a, s.a)),
    "imatmul_mismatch": (ValueError, lambda m, s: _iop(operator.imatmul)(s.a, s.a)),
    # --- concatenate / stack -> ValueError
    "concatenate_shapes": (ValueError, lambda m, s: m.concatenate([s.a, m.ones((4, 3)).T])),
    "concatenate_ndim": (ValueError, lambda m, s: m.concatenate([s.a, m.ones(5)])),
    "concatenate_axis1": (ValueError, lambda m, s: m.concatenate([s.a, s.a[:3]], axis=1)),
    "stack_shapes": (ValueError, lambda m, s: m.stack([s.a, s.a[:, :2]])),
    "vstack_shapes": (ValueError, lambda m, s: m.vstack([s.a, m.ones(4)])),
    "hstack_shapes": (ValueError, lambda m, s: m.hstack([s.a, m.ones((3, 2))])),
    # --- float result into an int out= -> TypeError
    "float_into_int_out": (TypeError, lambda m, s: m.multiply(s.a, 2.5, out=m.zeros((4, 5), dtype=m.int64))),
    "sqrt_into_int_out": (TypeError, lambda m, s: m.sqrt(s.i, out=s.i)),
    "int_plus_float_into_int_out": (TypeError, lambda m, s: m.add(s.i, 0.5, out=s.i)),
    "int_into_bool_out": (TypeError, lambda m, s: m.add(s.i, 1, out=m.zeros((3, 4), dtype=bool))),
    "divide_into_int_out": (TypeError, lambda m, s: m.divide(s.i, 2, out=s.i)),
    # --- in-place int op float -> TypeError
    "int_iadd_float": (TypeError, lambda m, s: _iop(operator.iadd)(s.i, 1.5)),
    "int_imul_float_array": (TypeError, lambda m, s: _iop(operator.imul)(s.i[:, :4], s.a[:3, :4])),
    "int_itruediv": (TypeError, lambda m, s: _iop(operator.itruediv)(s.i, 2)),
    "int_ipow_float": (TypeError, lambda m, s: _iop(operator.ipow)(s.i, 0.5)),
    "int_view_isub_float": (TypeError, lambda m, s: _iop(operator.isub)(s.i[1:, ::2], 0.25)),
    "uint8_iadd_int8_array": (TypeError, lambda m, s: _iop(operator.iadd)(s.u8, m.ones(6, dtype=m.int8))),
    "bool_iadd_int": (TypeError, lambda m, s: _iop(operator.iadd)(s.b, 1)),
    # --- boolean subtract / negative -> TypeError
    "bool_subtract": (TypeError, lambda m, s: s.b - s.b),
    "bool_subtract_function": (TypeError, lambda m, s: m.subtract(s.b, s.b[::-1])),
    "bool_negative": (TypeError, lambda m, s: -s.b),
    "bool_negative_function": (TypeError, lambda m, s: m.negative(s.b)),
    "bool_isub": (TypeError, lambda m, s: _iop(operator.isub)(s.b, s.b)),
    # --- unsupported type combinations -> TypeError
    "bitwise_and_float": (TypeError, lambda m, s: s.a & s.a),
    "invert_float": (TypeError, lambda m, s: ~s.a),
    "left_shift_float": (TypeError, lambda m, s: s.a << 1),
    "astype_safe": (TypeError, lambda m, s: s.a.astype(m.int32, casting="safe")),
    "float_of_array": (TypeError, lambda m, s: float(s.a)),
    "len_0d": (TypeError, lambda m, s: len(s.r.sum())),
    # --- Python ints out of range -> OverflowError
    "uint8_plus_300": (OverflowError, lambda m, s: s.u8 + 300),
    "300_plus_uint8": (OverflowError, lambda m, s: 300 + s.u8),
    "uint8_minus_256": (OverflowError, lambda m, s: s.u8 - 256),
    "uint8_times_minus_1": (OverflowError, lambda m, s: s.u8 * -1),
    "uint8_iadd_300": (OverflowError, lambda m, s: _iop(operator.iadd)(s.u8, 300)),
    "uint8_add_function": (OverflowError, lambda m, s: m.add(s.u8, 300)),
    "uint8_maximum": (OverflowError, lambda m, s: m.maximum(s.u8, 300)),
    "uint8_floordiv": (OverflowError, lambda m, s: s.u8 // 256),
    "int8_times_1000": (OverflowError, lambda m, s: m.ones(3, dtype=m.int8) * 1000),
    "int32_plus_2_31": (OverflowError, lambda m, s: m.ones(3, dtype=m.int32) + 2 ** 31),
    "uint16_plus_70000": (OverflowError, lambda m, s: m.ones(3, dtype=m.uint16) + 70000),
    "int64_plus_2_63": (OverflowError, lambda m, s: s.i + 2 ** 63),
    "uint8_setitem_300": (OverflowError, lambda m, s: _setitem(s.u8, 0, 300)),
    "uint8_setitem_slice_neg": (OverflowError, lambda m, s: _setitem(s.u8, slice(1, 3), -1)),
    "full_uint8_300": (OverflowError, lambda m, s: m.full(3, 300, dtype=m.uint8)),
    "array_uint8_300": (OverflowError, lambda m, s: m.array([300], dtype=m.uint8)),
    # --- assignment broadcasting -> ValueError
    "assign_broadcast_rows": (ValueError, lambda m, s: _setitem(s.a, slice(None), m.ones(4))),
    "assign_too_many_rows": (ValueError, lambda m, s: _setitem(s.a, slice(0, 2), m.ones((3, 5)))),
    "assign_column": (ValueError, lambda m, s: _setitem(s.a, (slice(None), 1), m.ones(5))),
    "assign_transposed": (ValueError, lambda m, s: _setitem(s.a, Ellipsis, s.a.T)),
    "assign_row_2d": (ValueError, lambda m, s: _setitem(s.a, 1, m.ones((2, 5)))),
    "assign_view": (ValueError, lambda m, s: _setitem(s.v, Ellipsis, s.a[:2])),
    "assign_nan_into_int": (ValueError, lambda m, s: _setitem(s.i, 0, float("nan"))),
    # --- writing into read-only arrays -> ValueError
    "readonly_setitem": (ValueError, lambda m, s: _setitem(m.broadcast_to(s.a[0], (4, 5)), 0, 1.0)),
    "readonly_setitem_slice": (ValueError, lambda m, s: _setitem(m.broadcast_to(s.r, (3, 5)), (slice(1, None),
                                                                                             slice(None, None, 2)),
                                                                   s.a[:2, ::2])),
    "readonly_iadd": (ValueError, lambda m, s: _iop(operator.iadd)(m.broadcast_to(s.a[0], (4, 5)), 1.0)),
    "readonly_out": (ValueError, lambda m, s: m.add(s.a, 1.0, out=m.broadcast_to(s.r, (4, 5)))),
    "readonly_view_of_broadcast": (ValueError, lambda m, s: _iop(operator.imul)(m.broadcast_to(s.r, (4, 5))[1:],
                                                                               2.0)),
    # --- other value errors
    "ambiguous_truth": (ValueError, lambda m, s: bool(s.b)),
    "item_of_array": (ValueError, lambda m, s: s.a.item()),
    "split_unequal": (ValueError, lambda m, s: m.split(s.a, 3)),
    "slice_step_zero": (ValueError, lambda m, s: s.a[::0]),
    "zeros_negative": (ValueError, lambda m, s: m.zeros(-1)),
    "broadcast_to_bad": (ValueError, lambda m, s: m.broadcast_to(s.a, (3, 5))),
    "diagonal_same_axes": (ValueError, lambda m, s: m.diagonal(s.a, axis1=0, axis2=0)),
    "empty_max": (ValueError, lambda m, s: s.a[2:2].max()),
    # --- NumPy converts every argument before it checks values: the first
    # argument that does not convert decides the exception's type
    "concatenate_axis_array": (TypeError, lambda m, s: m.concatenate(s.a, s.a)),
    "concatenate_float_axis": (TypeError, lambda m, s: m.concatenate([s.a, s.a], 0.5)),
    "ones_float_shape": (TypeError, lambda m, s: m.ones(s.r, s.i, 0.5)),
    "empty_dtype_array": (TypeError, lambda m, s: m.empty(3, s.i)),
    "zeros_negative_dtype_array": (TypeError, lambda m, s: m.zeros(-1, s.i)),
    "full_negative_order_int": (TypeError, lambda m, s: m.full(-1, 2.0, None, 1)),
    "zeros_order_int": (TypeError, lambda m, s: m.zeros(3, float, 1)),
    "ravel_order_int": (TypeError, lambda m, s: m.ravel(s.a, 2)),
    "ravel_order_array": (TypeError, lambda m, s: m.ravel(s.a, s.a)),
    "ravel_order_bad": (ValueError, lambda m, s: m.ravel(s.a, "Z")),
    "reshape_order_K": (ValueError, lambda m, s: m.reshape(s.a, 20, order="K")),
    "reshape_order_int": (TypeError, lambda m, s: m.reshape(s.a, 20, order=0)),
    "astype_order_int": (TypeError, lambda m, s: s.a.astype(float, order=3)),
    "einsum_order_int": (TypeError, lambda m, s: m.einsum("ij->ji", s.a, order=3)),
    "ones_like_dtype_array": (TypeError, lambda m, s: m.ones_like(s.b, s.a, s.a)),
    "empty_like_dtype_array": (TypeError, lambda m, s: m.empty_like(s.a, s.i)),
    "indices_dtype_array": (TypeError, lambda m, s: m.indices((2, 3), s.i)),
    "argsort_axis_array_before_kind": (TypeError, lambda m, s: m.argsort(s.a, s.i, 0.5)),
    "sort_kind_float": (TypeError, lambda m, s: m.sort(s.a, kind=0.5)),
    "sort_kind_bad": (ValueError, lambda m, s: m.sort(s.a, kind="xx")),
    "partition_bool_kth": (ValueError, lambda m, s: m.partition(s.a, True)),
    "partition_2d_kth": (ValueError, lambda m, s: m.partition(s.a, s.i)),
    "argpartition_float_kth": (TypeError, lambda m, s: m.argpartition(s.a, 1.5)),
    "arange_tuple": (TypeError, lambda m, s: m.arange((4, 3))),
    "digitize_complex": (TypeError, lambda m, s: m.digitize(s.r.astype(complex), s.r.astype(complex))),
    "vander_2d_before_n": (ValueError, lambda m, s: m.vander(s.a, (4, 3))),
    "vander_2d": (ValueError, lambda m, s: m.vander(s.a)),
    "pad_float_width_before_mode": (TypeError, lambda m, s: m.pad(s.r, s.r, s.r)),
    "pad_unhashable_mode": (TypeError, lambda m, s: m.pad(s.r, 1, s.r)),
    "pad_unknown_mode": (ValueError, lambda m, s: m.pad(s.r, 1, "xx")),
    # a positional output is an array (never a tuple, as out= may be)
    "fabs_positional_tuple_out": (TypeError, lambda m, s: m.fabs(s.a, (4, 3))),
    "heaviside_positional_tuple_out": (TypeError, lambda m, s: m.heaviside(s.a, 1.0, (s.a,))),
    "float_power_two_outs": (TypeError, lambda m, s: m.float_power(s.a, 2.0, None, None)),
    "vecdot_out_twice": (TypeError, lambda m, s: m.vecdot(s.a, s.a, m.empty(4), out=m.empty(4))),
    "fabs_keyword_tuple_out_count": (ValueError, lambda m, s: m.fabs(s.a, out=(m.empty((4, 5)), None))),
}


@pytest.mark.fallback
@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_error(fusion, case):
    exc, fn = CASES[case]
    check_error(exc, fn)


def test_axis_error_is_value_and_index_error(fusion):
    s = State(nf)
    for fn in (lambda: s.a.sum(axis=2), lambda: s.a.transpose(0, 2), lambda: s.a.squeeze(axis=3),
               lambda: nf.expand_dims(s.a, 3)):
        for base in (AxisError, ValueError, IndexError):
            with pytest.raises(base):
                fn()
    assert_same(s.a, State(onp).a)


def test_errors_in_a_row_then_correct_results(fusion):
    """Many failing calls interleaved with pending work."""
    def prog(m):
        a = m.arange(24.0).reshape(4, 6)
        out = []
        for k in range(4):
            a[1:] += a[:-1] * 0.5
            with pytest.raises(ValueError):
                a + m.ones((4, 5))
            with pytest.raises(IndexError):
                a[4, 0]
            b = a.sum(axis=1)
            with pytest.raises(AxisError):
                a.max(axis=2)
            with pytest.raises(TypeError):
                m.add(a, 1.0, out=m.zeros((4, 6), dtype=m.int32))
            a[:, ::2] -= b[:, None] * 0.01
            out.append(b)
        return out + [a]

    got = prog(nf)
    exp = prog(onp)
    for g, e in zip(got, exp):
        assert_same(g, e, rtol=1e-12)


def test_error_does_not_flush_or_corrupt_window(lazy):
    """A failing call neither runs nor drops the pending window."""
    a = nf.arange(10.0)
    nf.flush()
    b = a * 2
    c = b + 1
    with pytest.raises(ValueError):
        c + nf.ones(3)
    d = c - b
    nf.flush()
    rep = nf.explain()
    # b, c and d ran in the flush after the error, together (the operand the
    # failed call was given, nf.ones(3), is a dead task at most)
    ops = [op for g in rep.groups for op in g["ops"] if "dead" not in op]
    assert ops == ["multiply", "add", "subtract"], str(rep)
    assert len(rep.groups) == 1
    assert_same(d, onp.ones(10))
    assert_same(c, onp.arange(10.0) * 2 + 1)


# ---------------------------------------------------------------------------
# Regression tests for bugs found while writing this file (fixed since), and
# (marked xfail) places where numfuse still disagrees with NumPy.


def test_int_power_negative_exponent(fusion):
    check_error(ValueError, lambda m, s: s.i ** -1)


def test_int_power_negative_exponent_array(fusion):
    check_error(ValueError, lambda m, s: m.power(s.i, m.array(-2)))


def test_iter_0d_raises_at_call(fusion):
    check_error(TypeError, lambda m, s: iter(s.r.sum()))


def test_float_plus_huge_python_int(fusion):
    check_error(OverflowError, lambda m, s: s.a + 2 ** 1100)


def test_output_casting_error_class(fusion):
    for fn in (lambda m: m.add(m.ones(3, dtype=m.int64), 0.5, out=m.zeros(3, dtype=m.int64)),
               lambda m: operator.iadd(m.ones(3, dtype=m.int64), 1.5)):
        with pytest.raises(TypeError) as e_np:
            fn(onp)
        with pytest.raises(TypeError) as e_nf:
            fn(nf)
        assert isinstance(e_nf.value, type(e_np.value))


def _no_error_like_numpy(fn, rtol=1e-12):
    """NumPy raises nothing for fn; numfuse must not either (and must give
    NumPy's result, leaving pending work intact)."""
    s_np = State(onp)
    expected = fn(onp, s_np)
    s_nf = State(nf)
    got = fn(nf, s_nf)
    assert_same(got, expected, rtol=rtol)
    for g, e in zip(s_nf.results(), s_np.results()):
        assert_same(g, e, rtol=rtol)


@pytest.mark.parametrize("expr", ["a + True", "True * a", "i - True", "b & True", "b | False", "b == True",
                                  "a == False", "logical_and(b, True)", "maximum(b, False)", "u8 + True"],
                         ids=["a_add_True", "True_mul_a", "int_sub_True", "b_and_True", "b_or_False", "b_eq_True",
                              "a_eq_False", "logical_and", "maximum", "u8_add_True"])
def test_python_bool_scalar_operand(fusion, expr):
    def fn(m, s):
        ns = dict(a=s.a, i=s.i, b=s.b, u8=s.u8, logical_and=m.logical_and, maximum=m.maximum)
        return eval(expr, ns)

    _no_error_like_numpy(fn)


@pytest.mark.parametrize("op", ["iadd_int", "ior_bool", "iand_bool"])
def test_python_bool_scalar_inplace(fusion, op):
    def fn(m, s):
        if op == "iadd_int":
            s.i += True
            return s.i
        if op == "ior_bool":
            s.b |= False
            return s.b
        s.b &= True
        return s.b

    _no_error_like_numpy(fn)


@pytest.mark.parametrize("lo,hi", [(0, 300), (-1, 100), (-5, 1000)])
def test_clip_uint8_out_of_range_bounds(fusion, lo, hi):
    _no_error_like_numpy(lambda m, s: m.clip(s.u8, lo, hi))


@pytest.mark.parametrize("red", ["sum", "max", "min", "prod"])
def test_float_reduction_into_int_out(fusion, red):
    def fn(m, s):
        out = m.zeros(5, dtype=m.int64)
        getattr(s.a, red)(axis=0, out=out)
        return out

    _no_error_like_numpy(fn)


def test_setflags_write_false_then_assign(fusion):
    def fn(m, s):
        x = s.a.copy()
        x.setflags(write=False)
        x[0, 0] = 1.0

    check_error(ValueError, fn)


def test_asarray_of_readonly_numpy_array(fusion):
    def fn(m, s):
        src = onp.arange(5.0)
        src.flags.writeable = False
        x = m.asarray(src)
        x[1] = 7.0

    check_error(ValueError, fn)


def test_threads_option_below_one_is_a_valueerror():
    before = nf.get_option("threads")
    for bad in (0, -1):
        with pytest.raises(ValueError, match="at least 1"):
            nf.set_option("threads", bad)
    assert nf.get_option("threads") == before
    with nf.config(threads=1):
        assert nf.get_option("threads") == 1
        x = nf.arange(100000.0)
        assert float((x * 2).sum()) == float((onp.arange(100000.0) * 2).sum())
    assert nf.get_option("threads") == before


@pytest.mark.parametrize("order", ["c", "f", "a", "k", b"F", None])
def test_order_arguments_in_either_case_or_bytes(fusion, order):
    # NumPy takes 'c' for 'C' and bytes for str in every order= argument.
    x = onp.arange(12.0).reshape(3, 4)[:, ::2]
    a = nf.asarray(x)
    assert_same(nf.ravel(a, order), onp.ravel(x, order))
    assert_same(a.astype(onp.float32, order=order), x.astype(onp.float32, order=order))
    assert_same(nf.einsum("ij->ji", a, order=order), onp.einsum("ij->ji", x, order=order))
    if order is None or order.upper() not in ("K", b"K"):
        assert_same(nf.reshape(a, 6, order=order), onp.reshape(x, 6, order=order))
    if order is None or order.upper() not in ("A", "K", b"A", b"K"):
        z, e = nf.zeros((2, 3), order=order), onp.zeros((2, 3), order=order)
        assert_same(z, e)
        assert z.flags["F_CONTIGUOUS"] == e.flags["F_CONTIGUOUS"]


@pytest.mark.parametrize("kind", ["q", "Quick", "heap", "H", "m", "Stable", b"s", "stable"])
def test_sort_kinds_by_first_letter(fusion, kind):
    # NumPy names the kind by its first letter, in either case, str or bytes.
    x = onp.random.default_rng(1).integers(0, 5, (4, 9)).astype(onp.float64)
    a = nf.asarray(x)
    assert_same(nf.sort(a, kind=kind), onp.sort(x, kind=kind))
    if kind[:1].lower() in ("m", "s", b"s"):  # stable: ties keep their order, indices equal NumPy's
        assert_same(nf.argsort(a, kind=kind), onp.argsort(x, kind=kind))
    else:
        assert_same(onp.take_along_axis(x, nf.argsort(a, kind=kind).__array__(), -1), onp.sort(x))


_REDUCTION_ARGUMENT_ERRORS = {
    # keepdims must be an integer (a bool is one), checked before the axis
    "a.sum(keepdims='yes', axis=(0, 1, 2))": lambda m, a: a.sum(keepdims="yes", axis=(0, 1, 2)),
    "a.sum(keepdims='yes')": lambda m, a: a.sum(keepdims="yes"),
    "sum(a, 1, keepdims=1.0)": lambda m, a: m.sum(a, 1, keepdims=1.0),
    "a.max(keepdims=None)": lambda m, a: a.max(keepdims=None),
    "prod(a, axis=5, keepdims=[1])": lambda m, a: m.prod(a, axis=5, keepdims=[1]),
    # mean checks the axis first (NumPy's _methods), then keepdims
    "a.mean(keepdims='yes', axis=(0, 1, 2))": lambda m, a: a.mean(keepdims="yes", axis=(0, 1, 2)),
    "a.mean(keepdims='yes')": lambda m, a: a.mean(keepdims="yes"),
    # a ddof NumPy cannot compare: its comparison's error
    "a.var(ddof='x')": lambda m, a: a.var(ddof="x"),
    "std(a, axis=0, ddof='x')": lambda m, a: m.std(a, axis=0, ddof="x"),
}


@pytest.mark.parametrize("call", sorted(_REDUCTION_ARGUMENT_ERRORS))
def test_reduction_argument_errors_in_numpys_order(call):
    f = _REDUCTION_ARGUMENT_ERRORS[call]
    a = onp.arange(6.0).reshape(2, 3)
    raises_like(lambda: f(onp, a), lambda: f(nf, nf.asarray(a)))


def test_reduction_keepdims_integers_accepted():
    a = onp.arange(6.0).reshape(2, 3)
    for kd in (True, 2, 0, onp.int64(1)):
        for call in (lambda m, x: x.sum(axis=1, keepdims=kd), lambda m, x: m.max(x, keepdims=kd),
                     lambda m, x: x.mean(0, keepdims=kd), lambda m, x: m.var(x, keepdims=kd)):
            assert_same(call(nf, nf.asarray(a)), call(onp, a))
