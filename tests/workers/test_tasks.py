"""workers.tasks.retry_delay: shard retries run against a time budget, not a count."""

from __future__ import annotations

from docq.config import Settings
from workers.tasks import retry_delay


def attempts_until_given_up(s: Settings) -> tuple[int, float]:
    """Retries of a shard that never succeeds, and when (s after its first failure) the
    last decision gave up."""
    now, retries = 0.0, 0
    while (delay := retry_delay(s, 0.0, now, retries)) is not None:
        assert delay >= 1
        now += delay
        retries += 1
    return retries, now


def test_an_outage_within_the_budget_is_retried_however_many_attempts_it_takes() -> None:
    s = Settings()
    assert s.task_retry_budget_s == 1800  # 30 minutes by default
    retries, gave_up_at = attempts_until_given_up(s)
    assert gave_up_at >= s.task_retry_budget_s  # nothing failed before the budget ran out
    assert retries > s.task_retry_budget_s / s.task_retry_backoff_max_s  # far past 8 tries
    # a 10-minute outage: every decision inside it retries
    now, retries = 0.0, 0
    while now < 600:
        delay = retry_delay(s, 0.0, now, retries)
        assert delay is not None and delay <= s.task_retry_backoff_max_s
        now, retries = now + delay, retries + 1


def test_the_budget_is_time_a_short_one_gives_up_soon() -> None:
    s = Settings(task_retry_budget_s=10, task_retry_backoff_s=2, task_retry_backoff_max_s=120)
    _, gave_up_at = attempts_until_given_up(s)
    assert 10 <= gave_up_at <= 11  # the last delay is cut to what is left of the budget
    assert retry_delay(s, 0.0, 10.0, retries=0) is None
    assert retry_delay(Settings(task_retry_budget_s=0), 0.0, 0.0, retries=0) is None
