"""What counts as an outage, job leases by kind, the supervisor's backoff (issue 21 §6)."""

from __future__ import annotations

import asyncpg
import pytest
from redis import exceptions as redis_errors

from app.faults import is_outage
from app.run import GIVE_UP_AFTER, MAX_BACKOFF_S, Backoff
from workers.leases import SWEEP_LEASE_S, lease_s


def _raised_from(exc: BaseException, cause: BaseException) -> BaseException:
    exc.__cause__ = cause
    return exc


@pytest.mark.parametrize(
    ("exc", "outage"),
    [
        (asyncpg.ConnectionDoesNotExistError("connection was closed in the middle"), True),
        (asyncpg.CannotConnectNowError("the database system is starting up"), True),
        (asyncpg.AdminShutdownError("terminating connection due to administrator command"), True),
        (asyncpg.CrashShutdownError("terminating connection because of crash"), True),
        (asyncpg.TooManyConnectionsError("sorry, too many clients already"), True),
        (asyncpg.InterfaceError("connection is closed"), True),
        (ConnectionRefusedError(111, "Connection refused"), True),
        (FileNotFoundError(2, "No such file or directory"), True),  # the socket is gone
        (redis_errors.ConnectionError("Error 111 connecting"), True),
        (redis_errors.BusyLoadingError("Redis is loading the dataset in memory"), True),
        (_raised_from(RuntimeError("wrapped"), ConnectionResetError()), True),
        (asyncpg.InterfaceError("another operation is in progress"), False),  # a bug
        (asyncpg.UniqueViolationError("duplicate key"), False),
        (asyncpg.UndefinedColumnError("column does not exist"), False),
        (TimeoutError(), False),  # slow is not away
        (ValueError("bad"), False),
    ],
)
def test_what_is_an_outage(exc: BaseException, outage: bool) -> None:
    assert is_outage(exc) is outage


def test_leases_are_sized_by_job_kind() -> None:
    assert lease_s("5f94635e-846d-4495-91bf-25bd3d1dd0ea", 15.0) == 15.0
    assert lease_s("memgate:sweep:purge:1796165203989", 15.0) == SWEEP_LEASE_S


def test_backoff_grows_resets_after_a_healthy_run_and_gives_up_on_a_crash_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [1000.0]
    monkeypatch.setattr("app.run.time.monotonic", lambda: now[0])
    b = Backoff()
    delays = []
    for _ in range(6):
        assert b.died()
        delays.append(b.next_try - now[0])
        b.restarted()
    assert delays == [0.5, 1.0, 2.0, 4.0, MAX_BACKOFF_S, MAX_BACKOFF_S]
    now[0] += 60  # up for a minute: the next death starts from the shortest delay
    assert b.died() and b.next_try - now[0] == 0.5
    assert not b.due()
    now[0] += 0.5
    assert b.due()
    b = Backoff()
    assert all(b.died() for _ in range(GIVE_UP_AFTER))
    assert not b.died()
