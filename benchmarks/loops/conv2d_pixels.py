"""A convolution layer written pixel by pixel, as npbench's LeNet-5 and
conv2d_bias write it: a Python double loop over the output's pixels, each
pixel the sum over a 5-D broadcast product of the input window and the
weights (`np.sum(x[:, i:i + K, j:j + K, :, None] * w[None], axis=(1, 2, 3))`),
then bias, ReLU and 2x2 max pooling by pixels too. float32, NHWC."""

import numpy

SIZES = {"n": 8, "h": 28, "c_in": 1, "c_out": 6}
QUICK = {"n": 2, "h": 10, "c_in": 1, "c_out": 3}
RTOL, ATOL = 1e-5, 1e-6


def make_inputs(np, n, h, c_in, c_out):
    rng = np.random.default_rng(42)
    return (rng.random((n, h, h, c_in), dtype=np.float32), rng.random((5, 5, c_in, c_out), dtype=np.float32),
            rng.random(c_out, dtype=np.float32))


def run(np, x, w, b):
    K = w.shape[0]
    H_out = x.shape[1] - K + 1
    W_out = x.shape[2] - K + 1
    conv = np.empty((x.shape[0], H_out, W_out, w.shape[3]), dtype=np.float32)
    for i in range(H_out):
        for j in range(W_out):
            conv[:, i, j, :] = np.sum(x[:, i:i + K, j:j + K, :, np.newaxis] * w[np.newaxis, :, :, :], axis=(1, 2, 3))
    y = np.maximum(conv + b, 0)
    pooled = np.empty((y.shape[0], y.shape[1] // 2, y.shape[2] // 2, y.shape[3]), dtype=y.dtype)
    for i in range(y.shape[1] // 2):
        for j in range(y.shape[2] // 2):
            pooled[:, i, j, :] = np.max(y[:, 2 * i:2 * i + 2, 2 * j:2 * j + 2, :], axis=(1, 2))
    return pooled


def numba_version(x, w, b):
    K = w.shape[0]
    n, H, W, C = x.shape
    H_out, W_out, C_out = H - K + 1, W - K + 1, w.shape[3]
    y = numpy.empty((n, H_out, W_out, C_out), dtype=numpy.float32)
    for s in range(n):
        for i in range(H_out):
            for j in range(W_out):
                for o in range(C_out):
                    acc = numpy.float32(0)
                    for p in range(K):
                        for q in range(K):
                            for c in range(C):
                                acc += x[s, i + p, j + q, c] * w[p, q, c, o]
                    v = acc + b[o]
                    y[s, i, j, o] = v if v > 0 else numpy.float32(0)
    pooled = numpy.empty((n, H_out // 2, W_out // 2, C_out), dtype=numpy.float32)
    for s in range(n):
        for i in range(H_out // 2):
            for j in range(W_out // 2):
                for o in range(C_out):
                    m = y[s, 2 * i, 2 * j, o]
                    for p in range(2):
                        for q in range(2):
                            if y[s, 2 * i + p, 2 * j + q, o] > m:
                                m = y[s, 2 * i + p, 2 * j + q, o]
                    pooled[s, i, j, o] = m
    return pooled


def jax_version():
    import jax
    import jax.numpy as jnp

    def layer(x, w, b):
        y = jax.lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        y = jnp.maximum(y + b, 0)
        return jax.lax.reduce_window(y, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

    return jax.jit(layer)
