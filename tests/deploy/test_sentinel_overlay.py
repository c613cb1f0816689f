"""deploy/k8s-sentinel (issue 22): the base with Redis as a master and two replicas behind
three Sentinels, checked offline like the base (tests/deploy/test_deploy.py): built from the
base and its patches, every object passes the API server's schemas, the topology is the one
docq's settings expect, and the pods' start scripts, run against fake redis-cli and
redis-server programs, start each Redis and Sentinel in the role the Sentinels say.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from docq.config import Settings
from docq.store.sentinel import parse
from tests.deploy.test_deploy import (
    K8S,
    KEDA_KINDS,
    KUBERNETES_VERSION,
    clean_env,
    container,
    container_argv,
    k8s_objects,
    settings_from,
)

OVERLAY = K8S.parent / "k8s-sentinel"
__all__ = ["clean_env"]  # a fixture of test_deploy.py, used here too
Obj = dict[str, Any]


def merge(base: Any, patch: Any) -> Any:
    """A strategic merge patch as kustomize applies these: maps merged key by key, lists of
    named items (containers, volumes, mounts, env) merged by name, anything else replaced."""
    if isinstance(base, dict) and isinstance(patch, dict):
        return {**base, **{k: merge(base[k], v) if k in base else v for k, v in patch.items()}}
    named = isinstance(base, list) and isinstance(patch, list)
    if named and all(isinstance(i, dict) and "name" in i for i in [*base, *patch]):
        out = list(base)
        for item in patch:
            names = [i["name"] for i in out]
            if item["name"] in names:
                out[names.index(item["name"])] = merge(out[names.index(item["name"])], item)
            else:
                out.append(item)
        return out
    return patch


def overlay() -> dict[tuple[str, str], Obj]:
    """(kind, name) -> object, as `kubectl kustomize deploy/k8s-sentinel` builds them."""
    kustomization = yaml.safe_load((OVERLAY / "kustomization.yaml").read_text())
    assert set(kustomization) <= {"apiVersion", "kind", "resources", "patches"}
    objects: dict[tuple[str, str], Obj] = {}
    for resource in kustomization["resources"]:
        path = (OVERLAY / resource).resolve()
        docs = k8s_objects() if path == K8S else yaml.safe_load_all(path.read_text())
        objects |= {(o["kind"], o["metadata"]["name"]): o for o in docs if o}
    for patch in kustomization["patches"]:
        p = yaml.safe_load((OVERLAY / patch["path"]).read_text())
        key = (p["kind"], p["metadata"]["name"])
        assert key in objects, f"{patch['path']} patches nothing"
        objects[key] = merge(objects[key], p)
    return objects


def scripts() -> dict[str, str]:
    return overlay()[("ConfigMap", "redis-sentinel-scripts")]["data"]


def sentinel_url() -> str:
    """The DOCQ_REDIS_URL the kustomization tells the operator to put in the Secret."""
    text = (OVERLAY / "kustomization.yaml").read_text()
    line = next(ln for ln in text.splitlines() if "DOCQ_REDIS_URL=sentinel://" in ln)
    return line.split("DOCQ_REDIS_URL=", 1)[1].replace("$PW", "pw")


def test_overlay_objects_match_kubernetes_schemas() -> None:
    import kubernetes_validate

    for (kind, name), obj in overlay().items():
        if kind not in KEDA_KINDS:
            try:
                kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
            except kubernetes_validate.ValidationError as exc:
                pytest.fail(f"{kind}/{name}: {'.'.join(map(str, exc.path))}: {exc.message}")


def test_a_master_two_replicas_and_three_sentinels_each_on_its_own_node() -> None:
    objects = overlay()
    redis, sentinels = objects[("StatefulSet", "redis")], objects[("StatefulSet", "redis-sentinel")]
    assert redis["spec"]["replicas"] == 3 and sentinels["spec"]["replicas"] == 3
    for workload in (redis, sentinels):
        (spread,) = workload["spec"]["template"]["spec"]["topologySpreadConstraints"]
        assert spread["topologyKey"] == "kubernetes.io/hostname"
        assert spread["whenUnsatisfiable"] == "DoNotSchedule"
        assert spread["labelSelector"]["matchLabels"] == workload["spec"]["selector"]["matchLabels"]
    # The base's persistence and password flags still reach redis-server, through the script.
    base = next(o for o in k8s_objects() if o["kind"] == "StatefulSet")
    assert container(redis)["args"] == container(base)["args"]
    assert container_argv(redis)[:2] == ["/bin/sh", "/scripts/redis.sh"]
    # The quorum: two of three, so losing one host (one Sentinel) still fails over.
    assert "sentinel monitor docq $master 6379 2" in scripts()["sentinel.sh"]
    for pdb in ("redis", "redis-sentinel"):
        assert objects[("PodDisruptionBudget", pdb)]["spec"]["maxUnavailable"] == 1


def test_the_settings_name_the_sentinels_and_wait_for_a_replica(clean_env: None) -> None:
    config = overlay()[("ConfigMap", "docq-config")]["data"]
    s = settings_from({**config, "DOCQ_REDIS_URL": sentinel_url()})
    assert s.redis_wait_replicas == 1
    assert (
        s.redis_sentinel_master == "docq" == Settings.model_fields["redis_sentinel_master"].default
    )
    assert parse(s.redis_url).sentinels == tuple(
        (f"redis-sentinel-{i}.redis-sentinel", 26379) for i in range(3)
    )
    assert parse(s.redis_url).password == "pw"
    service = overlay()[("Service", "redis-sentinel")]
    assert [p["port"] for p in service["spec"]["ports"]] == [26379]


def test_docq_processes_may_reach_the_sentinels() -> None:
    policy = overlay()[("NetworkPolicy", "redis-sentinel")]
    (rule,) = policy["spec"]["ingress"]
    (expression,) = rule["from"][0]["podSelector"]["matchExpressions"]
    assert {"api", "worker", "priority", "webhooks", "flower", "redis"} <= set(expression["values"])
    assert rule["ports"] == [{"port": 26379}]


# --- the start scripts, run ---------------------------------------------------------------


def fake_world(tmp: Path, hostname: str, master: str) -> dict[str, str]:
    """PATH with `hostname`, a `redis-cli` whose Sentinels name `master` (nothing: none
    answers) and answers pings, and a `redis-server` that prints its arguments."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    fakes = {
        "hostname": f"echo {hostname}",
        "redis-cli": f'case "$*" in *get-master-addr-by-name*) [ -n "{master}" ] && '
        f'printf "{master}\\n6379\\n" ;; *ping*) echo PONG ;; esac',
        "redis-server": 'echo "$@"; [ -f "$1" ] && cat "$1"; exit 0',
    }
    for name, body in fakes.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    for name, text in scripts().items():
        (tmp / name).write_text(text)
    return {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "REDISCLI_AUTH": "pw",
        "SENTINEL_DIR": str(tmp),
    }


def start(tmp: Path, script: str, hostname: str, master: str, *args: str) -> str:
    env = fake_world(tmp, hostname, master)
    run = subprocess.run(
        ["sh", str(tmp / script), *args], env=env, capture_output=True, text=True, timeout=10
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


@pytest.mark.parametrize(
    ("hostname", "master", "replica_of"),
    [
        ("redis-0", "", None),  # a new deployment: redis-0 is the master
        ("redis-1", "", "redis-0.redis"),
        ("redis-0", "redis-2.redis", "redis-2.redis"),  # after a failover: the new master's
        ("redis-2", "redis-2.redis", None),  # the master restarted: still the master
    ],
)
def test_a_redis_pod_starts_as_the_replica_of_the_master_the_sentinels_name(
    tmp_path: Path, hostname: str, master: str, replica_of: str | None
) -> None:
    argv = start(tmp_path, "redis.sh", hostname, master, "--appendonly", "yes").split()
    assert argv[:2] == ["--appendonly", "yes"]  # the base's arguments, first
    assert argv[argv.index("--replica-announce-ip") + 1] == f"{hostname}.redis"
    assert argv[argv.index("--masterauth") + 1] == "pw"
    if replica_of is None:
        assert "--replicaof" not in argv
    else:
        assert argv[argv.index("--replicaof") + 1 :] == [replica_of, "6379"]


@pytest.mark.parametrize("master", ["", "redis-1.redis"])
def test_a_sentinel_watches_the_master_the_other_sentinels_name(
    tmp_path: Path, master: str
) -> None:
    out = start(tmp_path, "sentinel.sh", "redis-sentinel-0", master)
    assert f"sentinel monitor docq {master or 'redis-0.redis'} 6379 2" in out
    assert "sentinel announce-ip redis-sentinel-0.redis-sentinel" in out
    assert "requirepass pw" in out and "sentinel auth-pass docq pw" in out
