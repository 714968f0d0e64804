"""Seeded differential fuzzing of numfuse against NumPy.

- ``programs``: ``generate(seed) -> Program`` (random NumPy programs as source text)
- ``runner``:   ``run_program`` / ``compare`` / ``check_program`` (in-process, one program)
- ``campaign``: the long campaign with worker processes
  (``python -m tests.fuzz.campaign --programs 20000 --seed 0 --workers 2``)
"""
