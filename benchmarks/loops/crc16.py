"""CRC-16 (ARC: reflected polynomial 0xA001) of a uint8 array, bit by bit:
a Python loop over the bytes of the array and over the 8 bits of each."""

SIZES = {"nbytes": 2000}
QUICK = {"nbytes": 200}
EXACT = True


def make_inputs(np, nbytes):
    rng = np.random.default_rng(8)
    return (rng.integers(0, 256, nbytes, dtype=np.uint8),)


def run(np, data):
    crc = 0
    for b in data:
        b = int(b)
        for _ in range(8):
            if (crc & 1) ^ (b & 1):
                crc = (crc >> 1) ^ 0xA001
            else:
                crc >>= 1
            b >>= 1
    return crc


def numba_version(data):
    crc = 0
    for i in range(data.shape[0]):
        b = int(data[i])
        for _ in range(8):
            if (crc & 1) ^ (b & 1):
                crc = (crc >> 1) ^ 0xA001
            else:
                crc >>= 1
            b >>= 1
    return crc


def jax_version():
    import jax
    import jax.numpy as jnp

    @jax.jit
    def crc16(data):
        def byte(i, crc):
            def bit(_, s):
                crc, b = s
                crc = jnp.where(((crc ^ b) & 1) == 1, (crc >> 1) ^ 0xA001, crc >> 1)
                return crc, b >> 1

            return jax.lax.fori_loop(0, 8, bit, (crc, data[i].astype(jnp.uint32)))[0]

        return jax.lax.fori_loop(0, data.shape[0], byte, jnp.uint32(0))

    return crc16
