"""Aligned plain-text tables and the JSON report (reports/bench-<ts>.json, bench-latest.json)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from app.config import ROOT

REPORTS = ROOT / "reports"


def table(title: str, headers: list[str], rows: list[list[Any]], note: str | None = None) -> str:
    cells = [[_fmt(c) for c in r] for r in rows]
    widths = [len(h) for h in headers]
    for r in cells:
        for i, c in enumerate(r):
            widths[i] = max(widths[i], len(c))

    def line(values: list[str]) -> str:
        out = []
        for i, v in enumerate(values):
            out.append(v.ljust(widths[i]) if i == 0 else v.rjust(widths[i]))
        return "  ".join(out).rstrip()

    parts = [title, line(headers), "  ".join("-" * w for w in widths)]
    parts.extend(line(r) for r in cells)
    if note:
        parts.append(note)
    return "\n".join(parts)


def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        if value >= 100:
            return f"{value:,.0f}"
        if value >= 10:
            return f"{value:.1f}"
        return f"{value:.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def median_of(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in runs if r.get("requests")]
    return float(statistics.median(values)) if values else None


def max_of(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in runs if r.get("requests")]
    return float(max(values)) if values else None


def aggregate(result: dict[str, Any] | None) -> dict[str, Any]:
    """Medians over the runs of a load-generator result (plus the worst p95)."""
    if not result or not result.get("runs"):
        return {"available": False, "reason": (result or {}).get("reason", "no runs")}
    runs = result["runs"]
    return {
        "available": True,
        "runs": len(runs),
        "requests": sum(r["requests"] for r in runs),
        "errors": sum(r["errors"] for r in runs),
        "p50_ms": median_of(runs, "p50_ms"),
        "p95_ms": median_of(runs, "p95_ms"),
        "p99_ms": median_of(runs, "p99_ms"),
        "p95_worst_ms": max_of(runs, "p95_ms"),
        "throughput_rps": median_of(runs, "throughput_rps"),
        "client_cpu_ms_per_request": result.get("client_cpu_ms_per_request"),
        "api_cpu_ms_per_request": result.get("api_cpu_ms_per_request"),
        "postgres_cpu_ms_per_request": result.get("postgres_cpu_ms_per_request"),
    }


def mib(n: int | float | None) -> float | None:
    return None if n is None else n / (1024 * 1024)


def write_json(report: dict[str, Any], stamp: str) -> tuple[Path, Path]:
    REPORTS.mkdir(exist_ok=True)
    text = json.dumps(report, ensure_ascii=False, indent=2, default=str)
    path = REPORTS / f"bench-{stamp}.json"
    latest = REPORTS / "bench-latest.json"
    path.write_text(text, encoding="utf-8")
    latest.write_text(text, encoding="utf-8")
    return path, latest
