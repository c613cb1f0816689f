"""The store's Sentinel client takes the master a majority of the Sentinels name
(docq/store/sentinel.py, QuorumSentinel): a Sentinel just back from a partition still names
the old master for a moment (issue 41's fleet). Sentinels stubbed: what they answer is the
point, not how."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from redis.sentinel import MasterNotFoundError

from docq.store.sentinel import QuorumSentinel


class Stub:
    """A Sentinel that names `master` (or raises it, when it is an exception)."""

    def __init__(self, master: str | Exception) -> None:
        self.master = master
        self.asked = 0

    def sentinel_masters(self) -> dict[str, Any]:
        self.asked += 1
        if isinstance(self.master, Exception):
            raise self.master
        state = {"ip": self.master, "port": 6379, "is_master": True}
        return {"docq": {**state, "is_sdown": False, "is_odown": False, "num-other-sentinels": 2}}


def quorum(*stubs: Stub) -> QuorumSentinel:
    q = QuorumSentinel([("127.0.0.1", 1)] * len(stubs))  # no connection until asked
    q.sentinels = list(stubs)
    return q


def test_a_sentinel_that_still_names_the_old_master_is_outvoted() -> None:
    stale, new_a, new_b = Stub("10.0.0.11"), Stub("10.0.0.13"), Stub("10.0.0.13")
    assert quorum(stale, new_a, new_b).discover_master("docq") == ("10.0.0.13", 6379)


def test_a_sentinel_out_of_reach_is_asked_last_next_time() -> None:
    gone = Stub(redis.TimeoutError("timed out"))
    q = quorum(gone, Stub("10.0.0.12"), Stub("10.0.0.12"))
    assert q.discover_master("docq") == ("10.0.0.12", 6379)
    assert q.discover_master("docq") == ("10.0.0.12", 6379)
    assert gone.asked == 1


def test_no_majority_is_no_master() -> None:
    """One Sentinel on this side of a split, naming the master cut off with it: no
    majority, so the store answers unavailable rather than write where it will be lost."""
    down = redis.ConnectionError("unreachable")
    with pytest.raises(MasterNotFoundError, match="majority"):
        quorum(Stub("10.0.0.11"), Stub(down), Stub(down)).discover_master("docq")
