"""The HTTP contract: request and response models, one module per resource.

Routers (app/api/*.py) import their bodies and answers from here; so does any module
outside the API that needs a request type (app/recall.py takes a `RecallRequest`).
"""
