"""CPU per recall by process and the capacity model (README "Scaling out").

    python -m bench.capacity [reports/bench-latest.json ...]   # the model from measured figures

Pure arithmetic: the bench samples CPU ticks and sizes, this turns them into CPU ms per
request, facts per GiB, recalls/s per core, and the nodes a target deployment needs.
Nothing here measures anything.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

GIB = 1024**3


def cpu_ms_per_request(
    before: dict[str, float], after: dict[str, float], requests: int
) -> dict[str, float]:
    """CPU ms per request for every key sampled both times (CPU seconds in, ms out)."""
    if requests <= 0:
        return {}
    return {
        k: round((after[k] - before[k]) * 1000 / requests, 3)
        for k in after
        if k in before and after[k] >= before[k]
    }


def recalls_per_core(cpu_ms_per_recall: float) -> float | None:
    """Recalls one fully busy core serves at that CPU cost."""
    return 1000.0 / cpu_ms_per_recall if cpu_ms_per_recall > 0 else None


def facts_per_gib(rows: int, total_bytes: int) -> float | None:
    return rows * GIB / total_bytes if rows and total_bytes else None


@dataclass(frozen=True)
class Assumptions:
    facts: int = 100_000_000
    users: int = 1_000_000
    recalls_per_s: float = 5000.0
    node_ram_gib: float = 64.0  # a database node
    cache_fraction: float = 0.5  # of RAM for shared_buffers + page cache of the tenant tables
    node_disk_gib: float = 1000.0
    disk_fill: float = 0.5  # headroom for growth, vacuum, rebalancing, WAL
    node_cores: int = 16
    cpu_utilization: float = 0.6  # busy fraction at the peak rate, to keep p95 flat
    replicas: int = 1  # copies of each shard (1: HA by standbys, not counted here)


def capacity_model(
    *,
    facts_per_gib: float,
    db_cpu_ms_per_recall: float,
    coordinator_cpu_ms_per_recall: float,
    api_cpu_ms_per_recall: float,
    a: Assumptions = Assumptions(),
) -> dict[str, Any]:
    """Nodes for the target of `a`: storage in RAM and on disk, and CPU, from measured
    per-recall CPU (the worker that holds the tenant, the coordinator, the API)."""
    data_gib = a.facts / facts_per_gib * a.replicas
    cache_gib = a.node_ram_gib * a.cache_fraction
    ram_nodes = math.ceil(data_gib / cache_gib)
    disk_nodes = math.ceil(data_gib / (a.node_disk_gib * a.disk_fill))
    usable = a.node_cores * a.cpu_utilization

    def cores(ms: float) -> float:
        return a.recalls_per_s * ms / 1000.0

    db_cores = cores(db_cpu_ms_per_recall)
    coord_cores = cores(coordinator_cpu_ms_per_recall)
    api_cores = cores(api_cpu_ms_per_recall)
    cpu_nodes = math.ceil(db_cores / usable) if db_cores else 0
    workers = max(ram_nodes, disk_nodes, cpu_nodes, 1)
    return {
        "assumptions": asdict(a),
        "facts_per_user": a.facts / a.users,
        "facts_per_gib": round(facts_per_gib),
        "data_gib": round(data_gib, 1),
        "workers_for_ram": ram_nodes,
        "workers_for_disk": disk_nodes,
        "db_cores": round(db_cores, 1),
        "workers_for_cpu": cpu_nodes,
        "workers": workers,
        "coordinator_cores": round(coord_cores, 1),
        "coordinators": math.ceil(coord_cores / usable) if coord_cores else 0,
        "api_cores": round(api_cores, 1),
        "api_nodes": math.ceil(api_cores / usable) if api_cores else 0,
        "recalls_per_core_db": round(recalls_per_core(db_cpu_ms_per_recall) or 0),
        "recalls_per_core_api": round(recalls_per_core(api_cpu_ms_per_recall) or 0),
    }


def _from_report(report: dict[str, Any]) -> dict[str, Any] | None:
    """The model from a bench report's largest size (recall at 8 clients)."""
    sizes = report.get("sizes") or []
    if not sizes:
        return None
    last = sizes[-1]
    st = last["storage"]
    cpu = last["recall"]["8"]["raw"].get("cpu_ms_per_request", {})
    workers = [v for k, v in cpu.items() if k.startswith("worker-")]
    db = max(workers) if workers else cpu.get("postgres", 0.0)
    fpg = facts_per_gib(st["tenant_rows"], st["tenant_tables_bytes"])
    if not fpg:
        return None
    return {
        "label": last["label"],
        "citus_workers": report.get("options", {}).get("citus_workers", 0),
        **capacity_model(
            facts_per_gib=fpg,
            db_cpu_ms_per_recall=db,
            coordinator_cpu_ms_per_recall=cpu.get("coordinator", 0.0),
            api_cpu_ms_per_recall=cpu.get("api", 0.0),
        ),
    }


def main(argv: list[str]) -> int:
    paths = [Path(p) for p in argv] or [Path("reports/bench-latest.json")]
    for p in paths:
        model = _from_report(json.loads(p.read_text()))
        print(json.dumps({"report": str(p), **(model or {"error": "no sizes"})}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
