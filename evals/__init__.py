"""memgate's memory-quality evaluation (`make eval`, issue 7; docs/architecture.md#evaluation).

Runs the labeled scenarios under `tests/data/eval/` through the real HTTP API (and a
real arq worker) against a private embedded stack, and reports write-path and read-path
figures. See `evals/runner.py`. The gate corpus (`tests/data/gate/`, `evals/gate_corpus.py`)
runs on the same stack; `python -m evals gate` runs it alone.
"""
