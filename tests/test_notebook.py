"""examples/numfuse_in_a_notebook.ipynb runs top to bottom in a Jupyter
kernel (nbclient), and its cells show what they claim."""

import os
import sys

import nbclient
import nbformat

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOK = os.path.join(ROOT, "examples", "numfuse_in_a_notebook.ipynb")


def outputs_text(cell):
    parts = []
    for o in cell.get("outputs", []):
        if o.get("output_type") == "stream":
            parts.append(o["text"])
        elif "data" in o:
            parts.append(o["data"].get("text/plain", ""))
            parts.append(o["data"].get("text/html", ""))
    return "".join(parts)


def test_notebook_runs_and_shows_what_it_claims(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    # The kernel runs this interpreter (ipykernel's own kernel spec), with numfuse installed.
    client.execute(env=dict(os.environ, PYTHONPATH=""))
    code = [c for c in nb.cells if c.cell_type == "code"]
    text = [outputs_text(c) for c in code]
    for c in code:
        assert not [o for o in c.get("outputs", []) if o.get("output_type") == "error"], c.source
    assert "matches NumPy: True" in text[1]
    explain = code[2]["outputs"][0]["data"]
    assert explain["text/plain"].startswith("kernel 0:") and "<table>" in explain["text/html"]
    assert "warm calls: 5" in text[4] and "per call" in text[4]
    assert "numfuse.benchmark" in text[5]
    assert "numfuse profile" in text[6]
    assert "divide by zero encountered in divide" in text[7] and "inf everywhere: True" in text[7]
    assert sys.executable  # (the kernel: ipykernel's python3 spec runs sys.executable)


def test_nftimeit_keeps_results_and_times_the_work(capsys):
    """%nftimeit computes what it times (profile: kernels ran), line and cell forms."""
    from IPython.testing.globalipapp import start_ipython

    ip = start_ipython()
    ip.run_line_magic("load_ext", "numfuse")
    ip.run_cell("import numfuse as np; x = np.ones(300_000)")
    r = ip.run_line_magic("nftimeit", "-o -q -r 3 np.sqrt(x * 2.0 + 1.0)")
    assert len(r.times) == 3 and r.cold > 0
    assert r.profile["kernels_run"] + r.profile.get("tier0_groups", 0) >= 3  # each call computed
    ip.run_cell_magic("nftimeit", "-r 2 x2 = x * x", "y = np.exp(-x2)\n")
    out = capsys.readouterr().out
    assert "per call (mean ± std. dev. of 2 warm calls, results computed); first call" in out
    assert "y" not in ip.user_ns  # (like %timeit: the timed statement's names stay inside)
