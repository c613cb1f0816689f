"""Reading a Prometheus metrics page in tests: every sample by name and labels."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a metrics page, by name and labels."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(
    page: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str
) -> float:
    key = (name, frozenset(labels.items()))
    assert key in page, f"{name}{labels} is not exported"
    return page[key]
