"""Print the OpenAPI document generated from the code (`make openapi`)."""

from __future__ import annotations

import json
import sys

from app.main import create_app


def document() -> str:
    return json.dumps(create_app().openapi(), indent=2, ensure_ascii=False, sort_keys=True) + "\n"


if __name__ == "__main__":
    sys.stdout.write(document())
