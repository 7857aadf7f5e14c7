"""A real browser for the /me page's tests: Debian's Chromium driven by Playwright
(Playwright's own browser download cannot run here). Without /usr/bin/chromium the tests
skip, unless CI is set: then a missing browser is a failure."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path(os.environ.get("MEMGATE_CHROMIUM", "/usr/bin/chromium"))
ARGS = [
    "--no-sandbox",  # the machine runs as root
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Any]:
    if not CHROMIUM.exists():  # noqa: ASYNC240
        reason = f"no Chromium at {CHROMIUM} (apt-get install -y chromium; .ci/run installs it)"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set and the browser tests cannot run: {reason}")
        pytest.skip(reason)
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        launched = await p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield launched
        finally:
            await launched.close()
