"""workers/stall.py's decision: when a worker that holds nothing beside waiting messages is
stalled, and that a reconnection comes first and a shutdown only when it did not help."""

from __future__ import annotations

from workers.stall import Remedy, Watch

IDLE = {"waiting": 5, "held": 0}


def test_an_idle_worker_beside_waiting_messages_reconnects_then_shuts_down() -> None:
    w = Watch(stall_s=10)
    assert w.check(100, **IDLE, received_at=50) is Remedy.NONE  # idle from now
    assert w.check(109, **IDLE, received_at=50) is Remedy.NONE
    assert w.check(110, **IDLE, received_at=50) is Remedy.RECONNECT
    assert w.check(115, **IDLE, received_at=50) is Remedy.NONE  # the reconnection's own time
    assert w.check(119, **IDLE, received_at=50) is Remedy.NONE
    assert w.check(120, **IDLE, received_at=50) is Remedy.SHUT_DOWN


def test_a_task_received_after_the_reconnection_starts_over() -> None:
    w = Watch(stall_s=10)
    w.check(100, **IDLE, received_at=50)
    assert w.check(110, **IDLE, received_at=50) is Remedy.RECONNECT
    assert w.check(112, **IDLE, received_at=111) is Remedy.NONE  # it reads again
    assert w.check(121, **IDLE, received_at=111) is Remedy.NONE
    assert w.check(122, **IDLE, received_at=111) is Remedy.RECONNECT  # a new stall: reconnect


def test_a_busy_worker_or_empty_queues_are_no_stall() -> None:
    w = Watch(stall_s=10)
    w.check(100, **IDLE, received_at=50)
    assert w.check(150, waiting=5, held=2, received_at=50) is Remedy.NONE  # its pool is full
    assert w.check(151, **IDLE, received_at=50) is Remedy.NONE  # idle again: from now
    assert w.check(160, waiting=0, held=0, received_at=50) is Remedy.NONE  # nothing to take
    assert w.check(175, **IDLE, received_at=50) is Remedy.NONE
    assert w.check(185, **IDLE, received_at=50) is Remedy.RECONNECT


def test_a_stuck_task_does_not_hide_a_stall_while_there_is_room_for_more() -> None:
    """Issue 41: the consumer was gone with one task held forever; a worker that may hold 4
    holds 1, receives nothing beside waiting messages: stalled all the same."""
    w = Watch(stall_s=10)
    w.check(100, waiting=5, held=1, received_at=50, room=4)
    assert w.check(110, waiting=5, held=1, received_at=50, room=4) is Remedy.RECONNECT
    full = Watch(stall_s=10)
    full.check(100, waiting=5, held=4, received_at=50, room=4)
    assert full.check(150, waiting=5, held=4, received_at=50, room=4) is Remedy.NONE  # busy


def test_a_shutdown_that_does_not_end_the_worker_ends_in_an_exit() -> None:
    w = Watch(stall_s=10)
    w.check(100, **IDLE, received_at=50)
    assert w.check(110, **IDLE, received_at=50) is Remedy.RECONNECT
    assert w.check(120, **IDLE, received_at=50) is Remedy.SHUT_DOWN
    assert w.check(129, **IDLE, received_at=50) is Remedy.NONE
    assert w.check(130, **IDLE, received_at=50) is Remedy.EXIT


def test_room_is_the_configured_prefetch_not_what_countdowns_added() -> None:
    """Four threads, three retries held for later: the limit is 7 but the room is 4, so four
    running tasks make the worker busy, not stalled."""
    from types import SimpleNamespace

    from workers.stall import room

    assert room(SimpleNamespace(qos=SimpleNamespace(value=7), initial_prefetch_count=4)) == 4
    assert room(SimpleNamespace(qos=SimpleNamespace(value=1), initial_prefetch_count=4)) == 1
    assert room(SimpleNamespace(qos=SimpleNamespace(value=0), initial_prefetch_count=0)) == 0
    assert room(SimpleNamespace(qos=None)) == 1
