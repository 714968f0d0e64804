"""What to install when numfuse's compiled core cannot be loaded."""

import re

# The shared libraries numfuse's core links, and the Debian packages with them
# (a wheel from `make wheel` carries its own copies of all of these).
PACKAGES = {
    "libLLVM": "libllvm19",
    "libclang-cpp": "libclang-cpp19",
    "libomp": "libomp5-19",
    "libtbb": "libtbb12",
    "libopenblas": "libopenblas0",
    "libmvec": "libc6 (glibc 2.22 or newer)",
    "libstdc++": "libstdc++6",
}


def explain(err):
    """The ImportError's text with the package that provides the missing library."""
    text = str(err)
    m = re.search(r"(lib[\w+\-]+?)(?:-[\d.]+)?\.so[\w.]*", text)
    if m:
        for prefix, package in PACKAGES.items():
            if m.group(1).startswith(prefix):
                return (f"{text}\nnumfuse's compiled core needs {m.group(0)}: install the Debian package "
                        f"{package} (sudo apt-get install {package.split()[0]}), or install numfuse from its "
                        "self-contained wheel (`make wheel`), which carries LLVM, clang, OpenMP, TBB and OpenBLAS.")
    return (f"{text}\nnumfuse's compiled core (numfuse._core) could not be loaded; see README.md, "
            "'Installing', for what it needs.")
