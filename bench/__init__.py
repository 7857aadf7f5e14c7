"""memgate performance benchmark (`make bench`, `python -m bench`).

Starts a private embedded stack, seeds a synthetic zh+en corpus with real embeddings,
runs the real API as a separate uvicorn process and drives it from a load generator in
its own process on loopback. Prints a table and writes reports/bench-*.json.
No timing asserts anywhere: the figures are reported, never judged.
"""
