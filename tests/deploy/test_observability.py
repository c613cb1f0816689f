"""deploy/observability: the dashboard and the alert rules ask for metrics that exist.

Every `docq_*` name a query uses must be a sample name docq exports (the registries of the
API and the workers, and what the API reads at scrape time); every `nv_*` name one of
Triton's own metrics (port 8002). A renamed metric otherwise leaves a blank panel and an
alert that never fires, silently.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import REGISTRY, Metric

from docq.config import REPO_ROOT
from docq.store.connection import StoreMemory
from tests.tiers import missing_tool

OBSERVABILITY = REPO_ROOT / "deploy" / "observability"
K8S = REPO_ROOT / "deploy" / "k8s"

# Triton's metrics (Triton 2.51, docs/user_guide/metrics.md): what port 8002 can answer. The
# GPU ones exist only where Triton sees a GPU: the nv_gpu_*, nv_energy_* and nv_cpu_* names
# below, and nv_gpu_utilization's `gpu_uuid` label, are what the wheel's tritonserver
# answered on an H200 (2026-12-01); the nv_inference_* ones come per model.
TRITON_METRICS = {
    "nv_inference_request_success",
    "nv_inference_request_failure",
    "nv_inference_count",
    "nv_inference_exec_count",
    "nv_inference_pending_request_count",
    "nv_inference_request_duration_us",
    "nv_inference_queue_duration_us",
    "nv_inference_compute_input_duration_us",
    "nv_inference_compute_infer_duration_us",
    "nv_inference_compute_output_duration_us",
    "nv_gpu_utilization",
    "nv_gpu_memory_total_bytes",
    "nv_gpu_memory_used_bytes",
    "nv_gpu_power_usage",
    "nv_gpu_power_limit",
    "nv_energy_consumption",
    "nv_cpu_utilization",
    "nv_cpu_memory_total_bytes",
    "nv_cpu_memory_used_bytes",
    "nv_pinned_memory_pool_total_bytes",
    "nv_pinned_memory_pool_used_bytes",
}
# PromQL words that look like metric names
PROMQL_WORDS = {
    "sum", "min", "max", "avg", "count", "rate", "increase", "delta", "deriv", "by",
    "without", "and", "or", "unless", "histogram_quantile", "clamp_min", "le", "on",
    "ignoring", "group_left", "group_right", "offset", "bool",
}  # fmt: skip


def _sample_names(metric: Metric) -> set[str]:
    suffixes = {
        "counter": ("_total", "_created"),
        "histogram": ("_bucket", "_count", "_sum", "_created"),
        "summary": ("_count", "_sum", "_created"),
    }.get(metric.type, ("",))
    return {metric.name + s for s in suffixes}


class _Pipeline:
    """Enough of a redis-py pipeline for the queue collector: every list is empty."""

    def __init__(self) -> None:
        self.n = 0

    def llen(self, key: str) -> None:
        self.n += 1

    def hlen(self, key: str) -> None:
        self.n += 1

    def execute(self) -> list[int]:
        return [0] * self.n


class _Redis:
    def pipeline(self, transaction: bool = False) -> _Pipeline:
        return _Pipeline()


class _Catalog:
    def endpoints_ready(self) -> dict[str, bool]:
        return {"triton:8001": True}


class _Store:
    def memory(self) -> StoreMemory:
        return StoreMemory(used_bytes=1, max_bytes=2)


def exported() -> set[str]:
    """Every sample name the API and the workers can export."""
    import api.main  # noqa: F401  (the API's counters, api/submissions.py)
    import workers.tasks  # noqa: F401  (the workers' metrics, model control's)
    from api.metrics import QueueCollector, StoreCollector, TritonCollector

    names: set[str] = set()
    for collector in list(REGISTRY._collector_to_names):  # every registered family
        describe = getattr(collector, "describe", None)
        for metric in (describe() if describe else None) or collector.collect():
            names |= _sample_names(metric)
    collectors: list[Any] = [
        QueueCollector(_Redis()),  # type: ignore[arg-type]
        TritonCollector(_Catalog()),  # type: ignore[arg-type]
        StoreCollector(_Store()),  # type: ignore[arg-type]
    ]
    for collector in collectors:
        for metric in collector.collect():
            names |= _sample_names(metric)
    return names


def queries() -> Iterator[tuple[str, str]]:
    """(where, PromQL) of every dashboard target and alert rule."""
    dashboard = json.loads((OBSERVABILITY / "grafana-dashboard.json").read_text())
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            yield f"panel {panel['title']!r}", target["expr"]
    rules = yaml.safe_load((OBSERVABILITY / "alerts.yml").read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            yield f"alert {rule['alert']}", rule["expr"]


def metric_names(expr: str) -> set[str]:
    """The metric names in a PromQL expression (label matchers, strings and ranges dropped)."""
    expr = re.sub(r"\{[^}]*\}", "", expr)
    expr = re.sub(r'"[^"]*"', "", expr)
    expr = re.sub(r"\[[^\]]*\]", "", expr)
    expr = re.sub(r"\bby\s*\([^)]*\)", "", expr)
    words = set(re.findall(r"\b[a-zA-Z_:][a-zA-Z0-9_:]*\b", expr))
    return {w for w in words - PROMQL_WORDS if not re.fullmatch(r"e\d+", w)}


def test_queries_name_only_metrics_that_exist() -> None:
    docq = exported()
    used: set[str] = set()
    for where, expr in queries():
        names = metric_names(expr)
        assert names, f"{where}: no metric in {expr!r}"
        for name in names:
            if name.startswith("nv_"):
                assert name in TRITON_METRICS, f"{where}: Triton exports no {name}"
            else:
                assert name in docq, f"{where}: docq exports no {name}"
        used |= names
    # the panels and alerts the issue asks for
    for needed in (
        "docq_documents_processed_total",  # throughput
        "docq_job_duration_seconds_bucket",  # latency, upload to result
        "docq_triton_request_seconds_bucket",  # Triton latency per endpoint
        "docq_queue_messages",  # queue depth
        "nv_gpu_utilization",  # GPU utilisation
        "docq_triton_request_errors_total",  # errors
        "docq_triton_ready",  # Triton unready
        "docq_webhook_attempts_total",  # webhook dead letters
        "docq_store_memory_used_bytes",  # the job store filling up (issue 22)
        "docq_store_memory_max_bytes",
    ):
        assert needed in used, f"nothing shows {needed}"


def test_metric_name_extraction_finds_names_and_skips_promql() -> None:
    expr = (
        'histogram_quantile(0.95, sum by (le, endpoint) (rate(docq_a_bucket{x="y"}[5m])))'
        " / clamp_min(sum(rate(nv_b[1m])), 1) / 1e6"
    )
    assert metric_names(expr) == {"docq_a_bucket", "nv_b"}


def test_a_renamed_metric_is_caught() -> None:
    assert "docq_queue_messages" in exported()
    assert "docq_queue_depth" not in exported()


def test_alert_rules_cover_the_three_signals() -> None:
    rules = {
        r["alert"]: r
        for g in yaml.safe_load((OBSERVABILITY / "alerts.yml").read_text())["groups"]
        for r in g["rules"]
    }
    assert rules["DocqQueueGrowing"]["for"] == "10m"
    assert "docq_queue_messages" in rules["DocqQueueGrowing"]["expr"]
    assert "docq_triton_ready" in rules["DocqTritonUnready"]["expr"]
    assert 'outcome="dead_lettered"' in rules["DocqWebhookDeadLetters"]["expr"]
    assert "docq_store_memory_max_bytes > 0" in rules["DocqStoreFull"]["expr"]
    for name, rule in rules.items():
        assert rule["labels"]["severity"] in ("warning", "critical"), name
        assert rule["annotations"]["summary"], name


def test_prometheus_scrapes_the_pods_that_ask_and_loads_the_rules() -> None:
    config = yaml.safe_load((OBSERVABILITY / "prometheus.yml").read_text())
    assert config["rule_files"] == ["alerts.yml"]
    (job,) = config["scrape_configs"]
    assert job["kubernetes_sd_configs"][0]["role"] == "pod"
    # every component with metrics asks to be scraped on the port that serves them
    asked: dict[str, int] = {}
    for path in K8S.glob("*.yaml"):
        for obj in yaml.safe_load_all(path.read_text()):
            if not obj or obj["kind"] not in ("Deployment", "StatefulSet"):
                continue
            template = obj["spec"]["template"]
            notes = template["metadata"].get("annotations", {})
            if notes.get("prometheus.io/scrape") == "true":
                component = template["metadata"]["labels"]["app.kubernetes.io/component"]
                ports = {
                    p["containerPort"] for c in template["spec"]["containers"] for p in c["ports"]
                }
                assert int(notes["prometheus.io/port"]) in ports, component
                asked[component] = int(notes["prometheus.io/port"])
    assert asked == {
        "api": 8080,
        "worker": 9101,
        "priority": 9102,
        "webhooks": 9103,
        "extract": 9104,
        "triton": 8002,
    }


def test_triton_service_is_headless() -> None:
    (service,) = [
        o
        for o in yaml.safe_load_all((K8S / "triton.yaml").read_text())
        if o and o["kind"] == "Service"
    ]
    assert service["spec"]["clusterIP"] == "None"


@pytest.mark.parametrize("path", sorted(OBSERVABILITY.iterdir()), ids=lambda p: p.name)
def test_files_parse(path: Path) -> None:
    text = path.read_text()
    assert json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)


def promtool(*args: str, cwd: Path = OBSERVABILITY) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("promtool")
    if exe is None:
        missing_tool("promtool", "Debian: apt-get install prometheus; make test installs it")
    return subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, timeout=60)


def test_promtool_fires_each_alert_when_it_should_and_not_before() -> None:
    """alerts_test.yml: the queue growing for 10 minutes, an unready endpoint, a dead letter,
    the job store filling up and full."""
    done = promtool("test", "rules", "alerts_test.yml")
    assert done.returncode == 0, done.stdout + done.stderr


def test_promtool_parses_every_dashboard_query(tmp_path: Path) -> None:
    dashboard = json.loads((OBSERVABILITY / "grafana-dashboard.json").read_text())
    rules = [
        {"record": f"dashboard:panel{p['id']}:{t['refId']}", "expr": t["expr"]}
        for p in dashboard["panels"]
        for t in p["targets"]
    ]
    (tmp_path / "dashboard.yml").write_text(
        yaml.safe_dump({"groups": [{"name": "d", "rules": rules}]})
    )
    done = promtool("check", "rules", "dashboard.yml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
