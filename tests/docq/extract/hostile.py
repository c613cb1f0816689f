"""Readers that misbehave the ways a C parser can on a hostile file, for ExtractorPool's
tests: each runs in the pool's child (imported there by name), in place of extract()."""

from __future__ import annotations

import os
import signal
import time

from docq.extract import Extracted, Limits, extract


def hang_in_c(data: bytes, content_type: str, limits: Limits) -> Extracted:
    """Never returns to Python's loop: only the kernel's timer can end it."""
    time.sleep(3600)
    raise AssertionError("unreachable")


def spin(data: bytes, content_type: str, limits: Limits) -> Extracted:
    """Busy forever (a parser's endless loop)."""
    while True:
        pass


def crash(data: bytes, content_type: str, limits: Limits) -> Extracted:
    """Dies as a segfaulting or aborting library does."""
    os.abort()


def eat_memory(data: bytes, content_type: str, limits: Limits) -> Extracted:
    """Asks for 4x the cap at once (calloc: no page is touched, so without the cap it works)."""
    held = bytearray(limits.memory_mib * 4 << 20)
    return Extracted(f"held {len(held)} bytes", 1, "text", 1)


def blow_up(data: bytes, content_type: str, limits: Limits) -> Extracted:
    """A parser bug: an exception that is no ExtractionFailed."""
    raise KeyError("an unexpected parser error")


def pid(data: bytes, content_type: str, limits: Limits) -> Extracted:
    """Which child read it (to see children reused and replaced)."""
    return Extracted(str(os.getpid()), 1, "text", 1)


def slow_pid(data: bytes, content_type: str, limits: Limits) -> Extracted:
    """pid, a little later: two documents read at once overlap."""
    time.sleep(0.3)
    return pid(data, content_type, limits)


def by_text(data: bytes, content_type: str, limits: Limits) -> Extracted:
    """The document names the misbehaviour ("crash", "hang"...), else it is read as usual."""
    doing = {b"crash": crash, b"hang": hang_in_c, b"pid": pid, b"slow pid": slow_pid}.get(data)
    return (doing or extract)(data, content_type, limits)


def read_and_tell_pid(data: bytes, content_type: str, limits: Limits) -> Extracted:
    """extract(), except that the document b"pid" answers which child read it."""
    return (
        pid(data, content_type, limits) if data == b"pid" else extract(data, content_type, limits)
    )


def hang_deaf(data: bytes, content_type: str, limits: Limits) -> Extracted:
    """Hangs with SIGALRM blocked, so its own timer cannot end it: only the parent's kill."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    time.sleep(3600)
    raise AssertionError("unreachable")
