"""What a route does, below HTTP: one module per resource, as in app/api and app/store.

A router validates its input, calls one function here and shapes the answer. The
function opens the tenant transaction, takes the fences and locks, calls the store and
the writer, and records the audit event, so a route's whole effect is read in one place.
The two pipelines stay beside this package: app/writer.py (the write path) and
app/recall.py (the read path).
"""
