"""`python -m evals` (what `make eval` runs)."""

from evals.runner import main

if __name__ == "__main__":
    raise SystemExit(main())
