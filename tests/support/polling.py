"""Waiting in tests: every poll has a deadline, and says what it waited for when it ends."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def until(check: Callable[[], T], what: str, timeout: float = 60, every: float = 0.05) -> T:
    """Call `check` until it returns something true, and return that; after `timeout`
    seconds, fail the test naming `what` it waited for."""
    deadline = time.monotonic() + timeout
    while not (value := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(every)
    return value
