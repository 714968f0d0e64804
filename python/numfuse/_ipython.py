"""numfuse in IPython and Jupyter: ``%load_ext numfuse``.

Adds the ``%nftimeit`` line and cell magic: ``%timeit`` for lazy arrays.
IPython's ``%timeit stmt`` discards each result, and a numfuse result nobody
can read is dead code that is never computed, so it measures almost nothing.
``%nftimeit`` keeps every result (an expression's value, or the names a
statement assigns) alive until ``numfuse.flush()`` has computed it, times the
first call (with its compiles) apart from the warm ones, and prints both::

    %load_ext numfuse
    %nftimeit np.sqrt(x * 2.0 + 1.0).sum()
    %%nftimeit -r 20 x2 = x * x     # cell magic: the line is setup, run once
    y = np.exp(-x2)

Options: ``-r R`` timed (warm) calls (default 7), ``-w W`` warm-up calls
after the first (default 1), ``-o`` returns the numfuse.BenchmarkResult,
``-q`` prints nothing.
"""

import ast

from IPython.core.magic import Magics, line_cell_magic, magics_class


def _compile(source, ns):
    """A function running `source` in a namespace over `ns`, returning what it
    computed: an expression's value, or the names a statement assigned."""
    tree = ast.parse(source, mode="exec")
    if len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr):
        code = compile(ast.Expression(tree.body[0].value), "<nftimeit>", "eval")
        return lambda: eval(code, ns)
    code = compile(tree, "<nftimeit>", "exec")

    def run():
        local = {}
        exec(code, ns, local)
        return local  # (its arrays stay alive until the flush)

    return run


@magics_class
class NumfuseMagics(Magics):
    @line_cell_magic
    def nftimeit(self, line, cell=None):
        """Time numfuse code with its results kept alive until computed (see numfuse._ipython)."""
        from . import benchmark

        opts, stmt = self.parse_options(line, "r:w:oq", posix=False, strict=False)
        ns = self.shell.user_ns
        if cell is not None:
            if stmt.strip():
                exec(compile(stmt, "<nftimeit setup>", "exec"), ns)
            stmt = cell
        if not stmt.strip():
            raise ValueError("%nftimeit: nothing to time")
        fn = _compile(stmt, ns)
        result = benchmark(fn, n_repeat=int(opts.get("r", 7)), n_warmup=int(opts.get("w", 1)),
                           name=stmt.strip().splitlines()[0][:60])
        if "q" not in opts:
            def us(t):
                return f"{t * 1e3:.3g} ms" if t >= 1e-3 else f"{t * 1e6:.3g} µs"

            print(f"{us(result.mean)} ± {us(result.std)} per call (mean ± std. dev. of {len(result.times)} "
                  f"warm calls, results computed); first call {us(result.cold)}")
        return result if "o" in opts else None


def load(ipython):
    ipython.register_magics(NumfuseMagics)
