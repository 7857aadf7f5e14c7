"""`CleanStrings`: a bounded memory of strings a secret check found clean, so a string that
recurs (a user id on every request, a log line's route and status) is checked once.

Only clean strings are kept: a string that holds a secret is never cached, it is checked
(and refused or redacted) every time. The checks it fronts are pure functions of the
string. Safe to share between threads: each step tolerates another thread changing the
memory meanwhile (a lost entry is only checked again)."""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Callable


class CleanStrings:
    def __init__(self, holds_secret: Callable[[str], bool], maxsize: int) -> None:
        self.holds_secret = holds_secret
        self.maxsize = maxsize
        self._seen: OrderedDict[str, None] = OrderedDict()

    def __contains__(self, value: str) -> bool:
        return value in self._seen

    def __len__(self) -> int:
        return len(self._seen)

    def holds(self, value: str) -> bool:
        """`holds_secret(value)`, from memory when the string was found clean lately."""
        try:
            self._seen.move_to_end(value)
            return False
        except KeyError:
            pass
        if self.holds_secret(value):
            return True
        self._seen[value] = None
        if len(self._seen) > self.maxsize:
            with contextlib.suppress(KeyError):
                self._seen.popitem(last=False)
        return False
