"""The bench's CPU-per-recall arithmetic and the capacity model (bench/capacity.py)."""

from __future__ import annotations

from bench.capacity import (
    GIB,
    Assumptions,
    capacity_model,
    cpu_ms_per_request,
    facts_per_gib,
    recalls_per_core,
)


def test_cpu_ms_per_request_divides_the_delta_by_the_requests() -> None:
    before = {"api": 10.0, "coordinator": 2.0, "worker-1": 5.0}
    after = {"api": 12.5, "coordinator": 2.5, "worker-1": 5.0, "worker-2": 1.0}
    assert cpu_ms_per_request(before, after, 500) == {
        "api": 5.0,
        "coordinator": 1.0,
        "worker-1": 0.0,
    }  # worker-2 was not sampled before: left out


def test_cpu_ms_per_request_with_no_requests_or_a_restarted_process() -> None:
    assert cpu_ms_per_request({"api": 1.0}, {"api": 2.0}, 0) == {}
    assert cpu_ms_per_request({"api": 5.0}, {"api": 1.0}, 10) == {}  # counter went back


def test_recalls_per_core_and_facts_per_gib() -> None:
    assert recalls_per_core(2.5) == 400.0
    assert recalls_per_core(0.0) is None
    assert facts_per_gib(1000, GIB // 2) == 2000.0
    assert facts_per_gib(0, 100) is None


def test_capacity_model_takes_the_largest_of_ram_disk_and_cpu() -> None:
    a = Assumptions(
        facts=100_000_000,
        users=1_000_000,
        recalls_per_s=5000,
        node_ram_gib=64,
        cache_fraction=0.5,
        node_disk_gib=1000,
        disk_fill=0.5,
        node_cores=16,
        cpu_utilization=0.5,
    )
    m = capacity_model(
        facts_per_gib=250_000,  # 400 GiB of data
        db_cpu_ms_per_recall=4.0,  # 20 cores
        coordinator_cpu_ms_per_recall=1.6,  # 8 cores
        api_cpu_ms_per_recall=3.2,  # 16 cores
        a=a,
    )
    assert m["data_gib"] == 400.0
    assert m["facts_per_user"] == 100.0
    assert m["workers_for_ram"] == 13  # 400 / 32 = 12.5
    assert m["workers_for_disk"] == 1  # 400 / 500
    assert m["db_cores"] == 20.0 and m["workers_for_cpu"] == 3  # 20 / 8 usable per node
    assert m["workers"] == 13
    assert m["coordinators"] == 1 and m["api_nodes"] == 2
    assert m["recalls_per_core_db"] == 250
