"""The typed contract (issue 16 §1): every route declares its answer, every error status
carries the error envelope, and answers name every field they may hold."""

from __future__ import annotations

import ast
import json
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from fastapi.routing import APIRoute
from pydantic import BaseModel

from app.api.schemas.common import ErrorEnvelope, Out, Stored
from app.api.schemas.facts import GateDetail
from app.api.schemas.observations import JobDecision
from app.api.schemas.recall import TracedFact
from app.main import ROUTERS

ROOT = Path(__file__).resolve().parents[2]
DOC = json.loads((ROOT / "openapi" / "openapi.json").read_text(encoding="utf-8"))
ENVELOPE = "#/components/schemas/ErrorEnvelope"
# Open by design: the gate's detail names whatever a rule saw (categories, awaiting...).
OPEN_MODELS = {GateDetail}
# parts of answers read back from stored JSON (a trace, a job's decisions): lenient
STORED_MODELS = {TracedFact, JobDecision}
ROUTES = [r for router in ROUTERS for r in router.routes if isinstance(r, APIRoute)]
OPERATIONS = [
    (path, method, op) for path, ops in DOC["paths"].items() for method, op in ops.items()
]


def test_every_route_is_in_the_document() -> None:
    assert len(ROUTES) == len(OPERATIONS) == 50


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: f"{sorted(r.methods)[0]} {r.path}")
def test_every_route_declares_its_answer(route: APIRoute) -> None:
    if route.path == "/metrics":  # Prometheus text, declared as such
        content = route.responses[200]["content"]
        assert content == {"text/plain": {"schema": {"type": "string"}}}
        return
    assert route.response_model is not None, "give the route a response_model"


@pytest.mark.parametrize("path, method, op", OPERATIONS, ids=lambda x: str(x)[:60])
def test_every_status_has_a_schema(path: str, method: str, op: dict[str, Any]) -> None:
    responses = op["responses"]
    assert any(s.startswith("2") for s in responses), "no success declared"
    for status, response in responses.items():
        content = response.get("content")
        if status.startswith("2"):
            assert content, f"{status}: no body declared"
            for media in content.values():
                assert media.get("schema"), f"{status}: a body without a schema"
        else:
            assert content == {"application/json": {"schema": {"$ref": ENVELOPE}}}, status


def _models(annotation: Any) -> set[type[BaseModel]]:
    """The pydantic models an annotation mentions (unions, lists, dicts, generics)."""
    found: set[type[BaseModel]] = set()
    stack = [annotation]
    while stack:
        item = stack.pop()
        if isinstance(item, type) and issubclass(item, BaseModel):
            if item not in found:
                found.add(item)
                stack.extend(f.annotation for f in item.model_fields.values())
            continue
        if isinstance(item, types.UnionType) or typing.get_origin(item) is not None:
            stack.extend(typing.get_args(item))
    return found


def _answer_models() -> set[type[BaseModel]]:
    found: set[type[BaseModel]] = set()
    for route in ROUTES:
        found |= _models(route.response_model)
        for extra in route.responses.values():
            found |= _models(extra.get("model"))
    return found


def test_answers_forbid_fields_they_do_not_name() -> None:
    """A field a route starts returning without its model fails validation (FastAPI:
    a 500 in the tests) and schemathesis' conformance check (additionalProperties)."""
    models = _answer_models()
    assert ErrorEnvelope in models
    for model in models - OPEN_MODELS:
        assert issubclass(model, Out), f"{model.__name__}: derive answers from schemas.Out"
        if issubclass(model, Stored):  # read back from stored JSON: unknown keys dropped
            assert model in STORED_MODELS, model.__name__
            continue
        assert model.model_config.get("extra") == "forbid", model.__name__


def test_no_module_imports_a_router_for_a_type() -> None:
    """Types live in app.api.schemas; outside app/api nothing imports a router module
    except app.main, which mounts them."""
    routers = {
        f"app.api.{p.stem}"
        for p in (ROOT / "app" / "api").glob("*.py")
        if "router = APIRouter" in p.read_text(encoding="utf-8")
    }
    offenders = []
    for path in [*(ROOT / "app").rglob("*.py"), *(ROOT / "workers").rglob("*.py")]:
        rel = path.relative_to(ROOT)
        if rel.parts[:2] == ("app", "api") or rel == Path("app/main.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in routers:
                offenders.append(f"{rel}: from {node.module}")
            if isinstance(node, ast.ImportFrom) and node.module == "app.api":
                offenders.extend(
                    f"{rel}: app.api.{a.name}" for a in node.names if f"app.api.{a.name}" in routers
                )
    assert offenders == []
