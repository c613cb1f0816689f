"""deploy/ checked against what it deploys: the Procfile, the settings, the queues, the routes.

Nothing here runs Docker or a cluster: the files are parsed and compared with the code, so
that a renamed setting, a new queue or a changed Procfile line fails here, not in production.
The one process that runs is the Triton launcher script, against a fake `tritonserver`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tomllib
from fnmatch import fnmatch
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from devstack.stack import all_processes, local_stack
from docq import queue
from docq.config import Settings
from serving.server import PYTHON_SHM, startup_models

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
DOCKER = DEPLOY / "docker"
K8S = DEPLOY / "k8s"
LAUNCHER = DOCKER / "triton-entrypoint.sh"

# The NGC release whose Triton is the one inside each nvidia-pytriton wheel the project pins:
# a pytriton bump without a new Triton image tag fails test_triton_image_matches_local_server.
NGC_RELEASE_OF_PYTRITON = {"0.7.0": "24.10"}  # Triton 2.51

# How Celery worker options are spelled on a command line, and what they mean.
WORKER_OPTIONS = {
    "-A": "app",
    "--app": "app",
    "-Q": "queues",
    "--queues": "queues",
    "-P": "pool",
    "--pool": "pool",
    "-c": "concurrency",
    "--concurrency": "concurrency",
    "-n": "hostname",
    "--hostname": "hostname",
}

Obj = dict[str, Any]


# --- readers -------------------------------------------------------------------------------


def default(field: str) -> Any:
    return Settings.model_fields[field].default


def procfile_lines() -> dict[str, list[str]]:
    """Procfile process -> its command line, split as the shell would."""
    lines = {}
    for line in (REPO / "Procfile").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, command = line.partition(":")
            lines[name.strip()] = shlex.split(command)
    return lines


def procfile() -> dict[str, list[str]]:
    """The local stack's processes (devstack/stack.py, what the Procfile runs) -> argv, the
    program without its folder (`python -m celery` read as `celery`)."""
    processes = {}
    for name, process in local_stack().items():
        argv = [Path(process.argv[0]).name, *process.argv[1:]]
        if argv[0].startswith("python"):
            argv = ["celery", *argv[3:]] if argv[1:3] == ["-m", "celery"] else ["python", *argv[1:]]
        processes[name] = argv
    return processes


def procfile_env(process: str) -> dict[str, str]:
    """The variables the stack sets for one of its processes."""
    return dict(local_stack()[process].env)


def procfile_workers() -> dict[str, list[str]]:
    """The Procfile's Celery worker processes."""
    workers = {
        name: argv for name, argv in procfile().items() if argv[0] == "celery" and "worker" in argv
    }
    assert {"worker", "priority", "webhooks"} <= set(workers), "a worker lane went unrecognised"
    return workers


def celery_options(argv: list[str]) -> dict[str, Any]:
    """The options of a Celery command line that define a worker lane."""
    found: dict[str, Any] = {"pool": None}  # no pool option: Celery's default, both sides
    tokens = iter(argv)
    for token in tokens:
        key, eq, value = token.partition("=")
        if key in WORKER_OPTIONS:
            found[WORKER_OPTIONS[key]] = value if eq else next(tokens)
    if "queues" in found:
        found["queues"] = sorted(found["queues"].split(","))
    return found


def option(argv: list[str], name: str) -> str:
    """The value of `--name=value` or `--name value` in argv."""
    for i, token in enumerate(argv):
        if token == name:
            return argv[i + 1]
        if token.startswith(f"{name}="):
            return token.split("=", 1)[1]
    raise AssertionError(f"{name} not in {argv}")


def queue_names() -> set[str]:
    """Every Celery queue docq defines (docq/queue.py)."""
    return {v for k, v in vars(queue).items() if k.endswith("_QUEUE") and isinstance(v, str)}


@cache
def compose() -> Obj:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def interpolate(value: Any) -> str:
    """Compose's `${NAME:-default}` with nothing set in the environment: the default."""
    return re.sub(r"\$\{[A-Za-z0-9_]+(?::?-([^}]*))?\}", lambda m: m.group(1) or "", str(value))


def compose_env(service: str) -> dict[str, str]:
    env = compose()["services"][service].get("environment", {})
    assert isinstance(env, dict), f"{service}: environment as a mapping"
    return {k: interpolate(v) for k, v in env.items()}


@cache
def k8s_objects() -> list[Obj]:
    objects = []
    for path in sorted(K8S.glob("*.yaml")):
        if path.name != "kustomization.yaml":
            objects += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return objects


def k8s(kind: str) -> dict[str, Obj]:
    return {o["metadata"]["name"]: o for o in k8s_objects() if o["kind"] == kind}


def workloads() -> dict[str, Obj]:
    return k8s("Deployment") | k8s("StatefulSet")


def container(workload: Obj) -> Obj:
    containers = workload["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1, workload["metadata"]["name"]
    return containers[0]


def container_argv(workload: Obj) -> list[str]:
    c = container(workload)
    return [*c.get("command", []), *c.get("args", [])]


def port_number(c: Obj, port: int | str) -> int:
    """A probe's or Service's port, by number or by the container port's name."""
    if isinstance(port, int):
        return port
    named = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    assert port in named, f"port {port!r} is not a port of {c['name']}"
    return named[port]


def config_map() -> dict[str, str]:
    return k8s("ConfigMap")["docq-config"]["data"]


def settings_from(env: dict[str, str]) -> Settings:
    """Settings built from DOCQ_* variables the way a process would read them."""
    prefix = Settings.model_config["env_prefix"]
    return Settings(**{k.removeprefix(prefix).lower(): v for k, v in env.items()})


@cache
def dockerfile(name: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile, continuation lines joined, comments dropped."""
    lines = [
        line
        for line in (DOCKER / name).read_text().splitlines()
        if not line.lstrip().startswith("#")
    ]
    text = re.sub(r"\\\n", " ", "\n".join(lines))
    instructions = []
    for line in text.splitlines():
        if line.strip():
            keyword, _, rest = line.strip().partition(" ")
            instructions.append((keyword.upper(), rest.strip()))
    return instructions


def instructions(name: str, keyword: str) -> list[str]:
    return [rest for kw, rest in dockerfile(name) if kw == keyword]


def copy_sources(name: str) -> list[str]:
    """The build-context paths a Dockerfile COPYs (not those from another stage)."""
    sources = []
    for rest in instructions(name, "COPY"):
        words = [w for w in rest.split() if not w.startswith("--")]
        if "--from=" not in rest:
            sources += words[:-1]
    return sources


def dockerignored(path: str, ignore_file: Path) -> bool:
    """Whether a context path is left out by a .dockerignore (the last matching line wins)."""
    parts = Path(path).parts
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    ignored = False
    for line in ignore_file.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        keep = line.startswith("!")
        pattern = line.lstrip("!").rstrip("/")
        if any(fnmatch(p, pattern) for p in prefixes):
            ignored = not keep
    return ignored


def pyproject() -> Obj:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No DOCQ_* variable of this shell leaks into the settings under test."""
    for name in list(os.environ):
        if name.startswith(Settings.model_config["env_prefix"]):
            monkeypatch.delenv(name)


# --- every file ----------------------------------------------------------------------------


def test_yaml_files_parse() -> None:
    paths = sorted(DEPLOY.rglob("*.yaml")) + sorted(DEPLOY.rglob("*.yml"))
    assert {p.name for p in paths} >= {"compose.yaml", "kustomization.yaml"}
    for path in paths:
        documents = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
        assert documents, f"{path} is empty"
        assert all(isinstance(d, dict) for d in documents), path


def test_docq_variables_are_settings() -> None:
    prefix = Settings.model_config["env_prefix"]
    assert prefix == "DOCQ_"
    named = set()
    for path in DEPLOY.rglob("*"):
        if path.is_file():
            named |= set(re.findall(rf"\b{prefix}[A-Z0-9_]+\b", path.read_text()))
    assert len(named) > 5  # the scan sees the files
    unknown = {n for n in named if n.removeprefix(prefix).lower() not in Settings.model_fields}
    assert not unknown, f"not settings of docq.config.Settings: {sorted(unknown)}"


def test_settings_given_are_valid(clean_env: None) -> None:
    """The settings each deployment gives build a valid Settings, with the deployment's URLs."""
    for env in (compose_env("api"), compose_env("worker"), config_map()):
        s = settings_from(env)
        assert s.model_repository == Path("/models")
        assert s.api_host == "0.0.0.0"
        assert s.model_control == "explicit"
    dockerfile_env = {}
    for rest in instructions("Dockerfile", "ENV"):
        dockerfile_env |= dict(re.findall(r"(DOCQ_[A-Z0-9_]+)=(\S+)", rest))
    assert settings_from(dockerfile_env).api_port == default("api_port")


# --- docker compose ------------------------------------------------------------------------


def test_procfile_runs_the_stack_description() -> None:
    """Every Procfile line is `python -m devstack NAME`: the commands live in one place, and
    the lines are those of every Redis mode (make up starts the mode's own)."""
    assert {name: argv[argv.index("exec") + 1 :] for name, argv in procfile_lines().items()} == {
        name: [".venv/bin/python", "-m", "devstack", name] for name in all_processes()
    }


def test_workers_log_at_the_level_of_the_setting() -> None:
    """`make up` logs at DOCQ_LOG_LEVEL's default, as before it was a setting; another level
    reaches every worker's command line."""
    for argv in procfile_workers().values():
        assert option(argv, "--loglevel") == default("log_level")
    for name, process in local_stack("DEBUG").items():
        if name in procfile_workers():
            assert option(process.argv, "--loglevel") == "DEBUG", name


def test_compose_services_cover_procfile() -> None:
    assert set(compose()["services"]) == set(procfile())


@pytest.mark.parametrize("process", sorted(procfile_workers()))
def test_compose_workers_match_procfile(process: str) -> None:
    service = compose()["services"][process]
    assert celery_options(service["command"]) == celery_options(procfile()[process])
    assert "worker" in service["command"]
    env = compose_env(process)
    assert procfile_env(process).items() <= env.items()
    if "DOCQ_WORKER_METRICS_PORT" in env:  # reachable from the compose network
        assert env["DOCQ_WORKER_METRICS_HOST"] == "0.0.0.0"


def test_compose_api_and_flower_ports() -> None:
    services = compose()["services"]
    assert services["api"]["command"] == procfile()["api"]
    port = int(compose_env("api")["DOCQ_API_PORT"])
    assert port == default("api_port")
    assert any(str(p).endswith(f":{port}") for p in services["api"]["ports"])
    flower_port = option(procfile()["flower"], "--port")
    assert option(services["flower"]["command"], "--port") == flower_port
    assert services["flower"]["ports"] == [f"127.0.0.1:{flower_port}:{flower_port}"]


def test_compose_triton() -> None:
    triton = compose()["services"]["triton"]
    devices = triton["deploy"]["resources"]["reservations"]["devices"]
    assert any("gpu" in d["capabilities"] and d["driver"] == "nvidia" for d in devices)
    health = " ".join(triton["healthcheck"]["test"])
    assert f":{default('triton_http_port')}/v2/health/ready" in health
    repository = compose_env("triton")["DOCQ_MODEL_REPOSITORY"]
    for name in ("triton", "api", "worker", "priority"):
        mounts = compose()["services"][name]["volumes"]
        assert any(interpolate(m).split(":")[1] == repository for m in mounts), name
    assert triton["build"]["dockerfile"] == "deploy/docker/Dockerfile.triton"
    assert (DEPLOY / triton["build"]["context"] / triton["build"]["dockerfile"]).is_file()


def test_compose_urls_name_services() -> None:
    env = compose_env("api")
    redis = urlsplit(env["DOCQ_REDIS_URL"])
    assert redis.hostname in compose()["services"]
    host, port = env["DOCQ_TRITON_GRPC_URL"].split(":")
    assert host == "triton" and int(port) == default("triton_grpc_port")


def test_compose_depends_on_health() -> None:
    services = compose()["services"]
    for name, service in services.items():
        for target, condition in service.get("depends_on", {}).items():
            assert condition["condition"] == "service_healthy", (name, target)
            assert "healthcheck" in services[target], f"{name} waits for {target}'s health"
    assert set(services["api"]["depends_on"]) == {"redis", "triton"}


def test_redis_persistence_as_in_procfile() -> None:
    """appendonly, appendfsync and save as the Procfile runs redis-server, in both stacks."""
    argv = procfile()["redis"]
    flags = argv[argv.index("redis-server") + 1 :]
    wanted = {
        flags[i]: flags[i + 1]
        for i in range(0, len(flags), 2)
        if flags[i] in ("--appendonly", "--appendfsync", "--save")
    }
    assert wanted == {"--appendonly": "yes", "--appendfsync": "always", "--save": ""}
    for argv in (compose()["services"]["redis"]["command"], container_argv(workloads()["redis"])):
        for flag, value in wanted.items():
            assert option(argv, flag) == value, (flag, argv)


# --- Kubernetes ----------------------------------------------------------------------------


def test_kustomization_lists_every_manifest() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    resources = kustomization["resources"]
    assert len(resources) == len(set(resources))
    files = {p.name for p in K8S.glob("*.y*ml")} - {"kustomization.yaml"}
    assert set(resources) == files


def test_k8s_objects_in_one_namespace() -> None:
    namespaces = k8s("Namespace")
    assert len(namespaces) == 1
    (name,) = namespaces
    assert yaml.safe_load((K8S / "kustomization.yaml").read_text())["namespace"] == name
    for o in k8s_objects():
        if o["kind"] != "Namespace":
            assert o["metadata"].get("namespace") == name, (o["kind"], o["metadata"]["name"])


def test_k8s_workloads_cover_procfile() -> None:
    assert set(workloads()) == set(procfile())
    assert set(k8s("StatefulSet")) == {"redis"}


@pytest.mark.parametrize("process", sorted(procfile_workers()))
def test_k8s_workers_match_procfile(process: str) -> None:
    deployment = k8s("Deployment")[process]
    argv = container_argv(deployment)
    assert celery_options(argv) == celery_options(procfile()[process])
    env = config_map() | {e["name"]: e["value"] for e in container(deployment).get("env", [])}
    assert procfile_env(process).items() <= env.items()
    if "DOCQ_WORKER_METRICS_PORT" in env:  # served beyond the pod's loopback, on a port
        assert env["DOCQ_WORKER_METRICS_HOST"] == "0.0.0.0"
        port = int(env["DOCQ_WORKER_METRICS_PORT"])
        assert port in {p["containerPort"] for p in container(deployment)["ports"]}
    assert "command" not in container(deployment), "args only: tini stays PID 1"
    # KEDA owns the replica count; a replicas field would reset it on every apply.
    assert "replicas" not in deployment["spec"]
    grace = deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    # Long enough for a warm shutdown, and shorter than the redelivery it tries to avoid.
    assert 60 <= grace < int(config_map()["DOCQ_VISIBILITY_TIMEOUT_S"])


def test_k8s_flower_matches_procfile() -> None:
    argv = container_argv(k8s("Deployment")["flower"])
    assert option(argv, "--port") == option(procfile()["flower"], "--port")
    assert container(k8s("Deployment")["flower"])["ports"][0]["containerPort"] == int(
        option(argv, "--port")
    )


def test_keda_scales_every_worker_queue() -> None:
    deployments = k8s("Deployment")
    scaled = k8s("ScaledObject")
    lanes = settings_from(config_map()).bulk_lanes  # `-Q cpu` consumes the bulk lanes too
    consumed: dict[str, str] = {}  # queue -> the Deployment KEDA scales on its length
    for name, so in scaled.items():
        spec = so["spec"]
        target = spec["scaleTargetRef"]
        assert target.get("kind", "Deployment") == "Deployment", name
        assert target["name"] in deployments, f"{name} scales a missing Deployment"
        assert 1 <= spec["minReplicaCount"] <= spec["maxReplicaCount"], name
        lane_queues = queue.consumed_queues(
            celery_options(container_argv(deployments[target["name"]]))["queues"], lanes
        )
        for trigger in spec["triggers"]:
            assert trigger["type"] == "redis", name
            meta = trigger["metadata"]
            known = queue_names() | set(queue.bulk_lanes(lanes))
            assert meta["listName"] in known, f"{meta['listName']} is not a docq queue"
            assert meta["listName"] in lane_queues, f"{name} scales on another lane's queue"
            assert int(meta["listLength"]) >= 1
            consumed[meta["listName"]] = target["name"]
    for process, argv in procfile_workers().items():
        for q in queue.consumed_queues(celery_options(argv)["queues"], lanes):
            assert consumed.get(q) == process, f"no ScaledObject scales {process} on {q}"


def test_keda_scales_the_bulk_workers_on_the_sum_of_their_lanes(clean_env: None) -> None:
    """One trigger per list the bulk workers consume, and a formula adding all of them (the
    HPA alone would follow the longest lane), at the per-pod target the triggers name."""
    lanes = settings_from(config_map()).bulk_lanes
    worker = k8s("ScaledObject")["worker"]
    argv = container_argv(workloads()[worker["spec"]["scaleTargetRef"]["name"]])
    assert queue.CPU_QUEUE in celery_options(argv)["queues"]
    triggers = worker["spec"]["triggers"]
    lists = {t["name"]: t["metadata"]["listName"] for t in triggers}
    assert sorted(lists.values()) == sorted(queue.consumed_queues([queue.CPU_QUEUE], lanes))
    modifiers = worker["spec"]["advanced"]["scalingModifiers"]
    assert sorted(t.strip() for t in modifiers["formula"].split("+")) == sorted(lists)
    assert modifiers["metricType"] == "AverageValue"
    assert {t["metadata"]["listLength"] for t in triggers} == {modifiers["target"]}


def test_keda_reads_the_broker() -> None:
    """KEDA counts the lists in the Redis, and the database, that Celery uses as its broker."""
    data = config_map()
    broker = urlsplit(data.get("DOCQ_BROKER_URL") or data["DOCQ_REDIS_URL"])
    namespace = next(iter(k8s("Namespace")))
    redis_service = k8s("Service")[broker.hostname]
    assert any(p["port"] == (broker.port or 6379) for p in redis_service["spec"]["ports"])
    for so in k8s("ScaledObject").values():
        for trigger in so["spec"]["triggers"]:
            meta = trigger["metadata"]
            host, port = meta["address"].rsplit(":", 1)
            assert host.split(".")[:2] in ([broker.hostname], [broker.hostname, namespace])
            assert int(port) == (broker.port or 6379)
            assert int(meta["databaseIndex"]) == int(broker.path.lstrip("/") or 0)


def test_api_port_and_probes_match_routes() -> None:
    from api.main import create_app
    from api.routes import health

    app = create_app()
    api = container(k8s("Deployment")["api"])
    port = int(config_map()["DOCQ_API_PORT"])
    assert port == default("api_port") == api["ports"][0]["containerPort"]
    # Routes are named after their endpoint functions: a renamed handler fails here too.
    assert api["readinessProbe"]["httpGet"]["path"] == app.url_path_for(health.readyz.__name__)
    assert api["livenessProbe"]["httpGet"]["path"] == app.url_path_for(health.healthz.__name__)
    for probe in ("readinessProbe", "livenessProbe"):
        assert port_number(api, api[probe]["httpGet"]["port"]) == port
    assert container_argv(k8s("Deployment")["api"]) == procfile()["api"]


def test_triton_deployment() -> None:
    deployment = k8s("Deployment")["triton"]
    triton = container(deployment)
    assert triton["resources"]["limits"]["nvidia.com/gpu"] == 1
    probes = {
        "readinessProbe": "/v2/health/ready",
        "livenessProbe": "/v2/health/live",
    }
    for probe, path in probes.items():
        assert triton[probe]["httpGet"]["path"] == path
        assert port_number(triton, triton[probe]["httpGet"]["port"]) == default("triton_http_port")
    assert port_number(triton, "grpc") == default("triton_grpc_port")
    host, port = config_map()["DOCQ_TRITON_GRPC_URL"].split(":")
    assert any(p["port"] == int(port) for p in k8s("Service")[host]["spec"]["ports"])


def test_model_repository_volume() -> None:
    """Triton and the lanes that read labels and tokenizers mount the repository claim."""
    claims = k8s("PersistentVolumeClaim")
    path = config_map()["DOCQ_MODEL_REPOSITORY"]
    for name in ("triton", "api", "worker", "priority"):
        spec = k8s("Deployment")[name]["spec"]["template"]["spec"]
        volumes = {
            v["name"]: v["persistentVolumeClaim"]["claimName"]
            for v in spec["volumes"]
            if "persistentVolumeClaim" in v
        }
        mounts = {m["mountPath"]: m for m in container(k8s("Deployment")[name])["volumeMounts"]}
        assert mounts[path]["readOnly"] is True, name
        assert volumes[mounts[path]["name"]] in claims, name


def test_services_and_budgets_select_pods() -> None:
    pods = [w["spec"]["template"] for w in workloads().values()]

    def selected(selector: dict[str, str]) -> list[Obj]:
        return [p for p in pods if selector.items() <= p["metadata"]["labels"].items()]

    for name, workload in workloads().items():
        assert workload["spec"]["selector"]["matchLabels"].items() <= (
            workload["spec"]["template"]["metadata"]["labels"].items()
        ), name
    for name, service in k8s("Service").items():
        matching = selected(service["spec"]["selector"])
        assert len(matching) == 1, f"Service {name} selects {len(matching)} workloads"
        (pod,) = matching
        (c,) = pod["spec"]["containers"]
        for p in service["spec"]["ports"]:
            port_number(c, p["targetPort"])
    for name, pdb in k8s("PodDisruptionBudget").items():
        assert len(selected(pdb["spec"]["selector"]["matchLabels"])) == 1, name
    assert k8s("StatefulSet")["redis"]["spec"]["serviceName"] in k8s("Service")


# --- Dockerfiles ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["Dockerfile", "Dockerfile.triton"])
def test_dockerfile_copy_sources_exist(name: str) -> None:
    sources = copy_sources(name)
    assert sources
    ignore_file = DOCKER / f"{name}.dockerignore"
    for source in sources:
        assert (REPO / source).exists(), f"{name} copies {source}, which is not in the repository"
        assert not dockerignored(source, ignore_file), f"{ignore_file.name} leaves out {source}"


def test_app_image() -> None:
    project = pyproject()
    copied = set(copy_sources("Dockerfile"))
    packages = {p.rstrip("*") for p in project["tool"]["setuptools"]["packages"]["find"]["include"]}
    assert packages | {"pyproject.toml", project["project"]["readme"]} <= copied
    python = re.search(r">=\s*(\d+\.\d+)", project["project"]["requires-python"])
    assert python is not None
    assert instructions("Dockerfile", "ARG")[0] == f"PYTHON_IMAGE=python:{python[1]}-slim"
    installs = [r for r in instructions("Dockerfile", "RUN") if "pip install" in r]
    assert installs and all(re.search(r"pip install \.(\s|$)", r) for r in installs)
    assert not any(re.search(r"\.\[", r) for r in installs), "no extras in the image"
    (user,) = instructions("Dockerfile", "USER")
    assert user.split(":")[0] not in ("root", "0")
    (cmd,) = instructions("Dockerfile", "CMD")
    assert json.loads(cmd) == procfile()["api"]
    assert str(default("api_port")) in instructions("Dockerfile", "EXPOSE")[0].split()


def test_triton_image_matches_local_server() -> None:
    project = pyproject()
    pins = dict(
        d.split("==") for d in project["project"]["optional-dependencies"]["server"] if "==" in d
    )
    release = NGC_RELEASE_OF_PYTRITON[pins["nvidia-pytriton"]]
    args = dict(a.split("=", 1) for a in instructions("Dockerfile.triton", "ARG") if "=" in a)
    assert args["TRITON_TAG"] == release
    (base,) = instructions("Dockerfile.triton", "FROM")
    assert base == "nvcr.io/nvidia/tritonserver:${TRITON_TAG}-py3"
    # The stub's numpy < 2 fact: the same pin as the project's.
    (numpy,) = [d for d in project["project"]["dependencies"] if d.startswith("numpy")]
    assert f'"{numpy}"' in (DOCKER / "Dockerfile.triton").read_text()
    assert any("docq-triton" in c for c in instructions("Dockerfile.triton", "CMD"))
    assert interpolate(compose()["services"]["triton"]["image"]).endswith(f":{release}")


# --- the Triton launcher -------------------------------------------------------------------


def launch(tmp_path: Path, env: dict[str, str], *extra: str) -> list[str]:
    """The tritonserver argv the launcher execs, through a fake tritonserver on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "tritonserver"
    fake.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
    fake.chmod(0o755)
    bash = shutil.which("bash")
    assert bash is not None
    done = subprocess.run(
        [bash, str(LAUNCHER), *extra],
        env={"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return done.stdout.splitlines()


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    for name in ("doc-type", "doc-lang"):
        (tmp_path / "models" / name).mkdir(parents=True)
        (tmp_path / "models" / name / "config.pbtxt").write_text(f'name: "{name}"\n')
    return tmp_path / "models"


@pytest.mark.parametrize(
    "models",
    [
        {},  # the settings defaults
        {"DOCQ_MODEL_STARTUP": "", "DOCQ_MODEL_PINNED": ""},
        {"DOCQ_MODEL_STARTUP": " doc-lang , missing,doc-type", "DOCQ_MODEL_PINNED": "doc-type"},
        {"DOCQ_MODEL_STARTUP": "doc-type", "DOCQ_MODEL_PINNED": "doc-lang"},
    ],
)
def test_launcher_loads_what_docq_tritonserver_would(
    tmp_path: Path, repository: Path, models: dict[str, str], clean_env: None
) -> None:
    env = {"DOCQ_MODEL_REPOSITORY": str(repository), **models}
    argv = launch(tmp_path, env, "--log-info=true")
    loaded = [a.removeprefix("--load-model=") for a in argv if a.startswith("--load-model=")]
    assert loaded == startup_models(repository, settings_from(env).startup_models)
    assert f"--model-repository={repository}" in argv
    assert "--model-control-mode=explicit" in argv
    assert argv[-1] == "--log-info=true"
    assert set(PYTHON_SHM) <= set(argv), "the container's server sizes the stubs' memory as ours"
    ports = {"--http-port": "http", "--grpc-port": "grpc", "--metrics-port": "metrics"}
    for flag, port in ports.items():
        assert int(option(argv, flag)) == default(f"triton_{port}_port")


def test_launcher_loads_nothing_without_explicit_control(tmp_path: Path, repository: Path) -> None:
    env = {"DOCQ_MODEL_REPOSITORY": str(repository), "DOCQ_MODEL_CONTROL": "none"}
    argv = launch(tmp_path, env)
    assert "--model-control-mode=none" in argv
    assert not [a for a in argv if a.startswith("--load-model")]


# --- the files against their formats' own schemas, offline ----------------------------------
#
# Kubernetes: kubernetes-validate (PyPI) carries the API server's OpenAPI schemas of each
# release; `strict` refuses fields the schema does not know, as `kubectl apply
# --validate=strict` does. Compose: the compose-spec JSON schema that check-jsonschema (PyPI)
# vendors. KEDA: cloudcoil-models-keda (PyPI), pydantic models generated from KEDA's CRDs,
# which type every field; an unknown field is what the API server would prune, so it is
# looked for by comparing the object with what the model kept of it.

KUBERNETES_VERSION = "1.31.0"  # oldest release still maintained upstream when this was written
KEDA_KINDS = {"ScaledObject", "TriggerAuthentication"}


def test_k8s_objects_match_kubernetes_schemas() -> None:
    import kubernetes_validate

    checked = 0
    for obj in k8s_objects():
        if obj["kind"] in KEDA_KINDS:
            continue
        try:
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            where = ".".join(str(p) for p in exc.path)
            pytest.fail(f"{obj['kind']}/{obj['metadata']['name']}: {where}: {exc.message}")
        checked += 1
    assert checked >= 10, "the manifests went missing"


def test_kubernetes_schemas_refuse_a_wrong_manifest() -> None:
    """The check above can fail: a misspelt field and a wrong type are refused."""
    import kubernetes_validate

    deployment = next(o for o in k8s_objects() if o["kind"] == "Deployment")
    misspelt = json.loads(json.dumps(deployment))
    misspelt["spec"]["replica"] = 2
    mistyped = json.loads(json.dumps(deployment))
    mistyped["spec"]["replicas"] = "two"
    for wrong in (misspelt, mistyped):
        with pytest.raises(kubernetes_validate.ValidationError):
            kubernetes_validate.validate(wrong, KUBERNETES_VERSION, strict=True)


def unknown_fields(given: Any, kept: Any, where: str = "") -> list[str]:
    """Paths of `given` that `kept` (the same object as a model dumped it) lacks."""
    if isinstance(given, dict) and isinstance(kept, dict):
        missing = []
        for key, value in given.items():
            if key not in kept:
                missing.append(f"{where}.{key}")
            else:
                missing += unknown_fields(value, kept[key], f"{where}.{key}")
        return missing
    if isinstance(given, list) and isinstance(kept, list):
        return [
            m
            for i, (g, k) in enumerate(zip(given, kept, strict=True))
            for m in unknown_fields(g, k, f"{where}[{i}]")
        ]
    return []


def keda_problems(obj: Obj) -> list[str]:
    """What KEDA's CRD schema refuses (wrong types, missing fields) or would prune (unknown)."""
    import pydantic
    from cloudcoil.models.keda import v1alpha1

    model = getattr(v1alpha1, obj["kind"])
    try:
        parsed = model.model_validate(obj)
    except pydantic.ValidationError as exc:
        return [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
    kept = parsed.model_dump(by_alias=True, exclude_unset=True, mode="json")
    return [f"{path}: not a field of KEDA's {obj['kind']}" for path in unknown_fields(obj, kept)]


def test_keda_objects_match_kedas_crd_schema() -> None:
    keda = [o for o in k8s_objects() if o["kind"] in KEDA_KINDS]
    assert {o["kind"] for o in keda} == KEDA_KINDS
    for obj in keda:
        assert obj["apiVersion"] == "keda.sh/v1alpha1"
        assert keda_problems(obj) == [], obj["metadata"]["name"]


def test_kedas_schema_refuses_a_wrong_scaled_object() -> None:
    scaled = next(o for o in k8s_objects() if o["kind"] == "ScaledObject")
    misspelt = json.loads(json.dumps(scaled))
    misspelt["spec"]["minReplicaCont"] = 1
    assert keda_problems(misspelt) == [".spec.minReplicaCont: not a field of KEDA's ScaledObject"]
    mistyped = json.loads(json.dumps(scaled))
    mistyped["spec"]["triggers"][0]["metadata"]["listLength"] = 8  # KEDA wants strings
    assert keda_problems(mistyped)
    untargeted = json.loads(json.dumps(scaled))
    del untargeted["spec"]["scaleTargetRef"]
    assert keda_problems(untargeted)


def compose_problems(document: Obj) -> list[str]:
    from importlib.resources import files

    import jsonschema

    vendor = files("check_jsonschema.builtin_schemas.vendor")
    schema = json.loads((vendor / "compose-spec.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)  # the draft the schema names
    return [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validator.iter_errors(document)
    ]


def test_compose_file_matches_the_compose_spec() -> None:
    assert compose_problems(compose()) == []


def test_compose_spec_refuses_a_wrong_compose_file() -> None:
    wrong = json.loads(json.dumps(compose()))
    service = next(iter(wrong["services"].values()))
    service["restart_policy"] = "always"  # a deploy.restart_policy key, not a service's
    assert compose_problems(wrong)
