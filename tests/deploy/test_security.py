"""The deployments' access controls, read from their files: Flower behind a login, Redis
behind a password with a memory cap that refuses writes, Triton's admin APIs restricted,
NetworkPolicies in Kubernetes; and the local stack's Flower login and development key."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import yaml

from devstack import credentials
from docq.config import Settings
from docq.model_control import ADMIN_HEADER
from docq.store import connection
from docq.store.tenants import Tenants
from serving.server import RESTRICTED

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
K8S = DEPLOY / "k8s"


def compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]


def k8s(kind: str) -> dict[str, dict[str, Any]]:
    found = {}
    for path in K8S.glob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == kind:
                found[doc["metadata"]["name"]] = doc
    return found


def container(workload: dict[str, Any]) -> dict[str, Any]:
    return workload["spec"]["template"]["spec"]["containers"][0]


def option(argv: list[str], name: str) -> str | None:
    """The value of `name` in argv, as `name value` or `name=value`."""
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(f"{name}="):
            return arg.split("=", 1)[1]
    return None


def secret_env(c: dict[str, Any], name: str) -> dict[str, Any]:
    """The env entry `name` of a container, which must come from a (required) Secret."""
    entry = next(e for e in c.get("env", []) if e["name"] == name)
    ref = entry["valueFrom"]["secretKeyRef"]
    assert ref.get("optional") is not True
    return ref


# --- compose --------------------------------------------------------------------------


def test_compose_flower_needs_a_login() -> None:
    auth = option(compose()["flower"]["command"], "--basic-auth")
    assert auth is not None and auth.startswith("${DOCQ_FLOWER_BASIC_AUTH:?")


def test_compose_redis_needs_a_password_and_refuses_writes_when_full() -> None:
    argv = compose()["redis"]["command"]
    assert option(argv, "--requirepass") == "${REDIS_PASSWORD:?set REDIS_PASSWORD}"
    assert option(argv, "--maxmemory") is not None
    assert option(argv, "--maxmemory-policy") == "noeviction"
    # every docq process connects with the password
    api_env = compose()["api"]["environment"]
    assert api_env["DOCQ_REDIS_URL"].startswith("redis://:${REDIS_PASSWORD}@")
    assert api_env["DOCQ_API_KEY_SECRET"].startswith("${DOCQ_API_KEY_SECRET:?")


def test_the_triton_image_restricts_what_the_local_launcher_restricts() -> None:
    """The NGC image's launcher adds the same two flags as serving/server.py, from the same
    setting; 2.51 names gRPC's flag --grpc-restricted-protocol (an unknown flag stops it)."""
    script = (DEPLOY / "docker" / "triton-entrypoint.sh").read_text()
    assert f'restricted="{RESTRICTED}"' in script
    assert 'if [[ -n "${DOCQ_TRITON_ADMIN_KEY:-}" ]]' in script
    rule = "${restricted}:" + ADMIN_HEADER + "=${DOCQ_TRITON_ADMIN_KEY}"
    assert f'rule="{rule}"' in script
    assert '"--http-restricted-api=${rule}" "--grpc-restricted-protocol=${rule}"' in script


def test_compose_triton_restricts_its_admin_apis_and_docq_sends_the_key() -> None:
    services = compose()
    assert "command" not in services["triton"]  # the image's launcher, flags from the env
    for name in ("triton", "api", "worker", "priority", "webhooks"):
        key = services[name]["environment"]["DOCQ_TRITON_ADMIN_KEY"]
        assert key == "${DOCQ_TRITON_ADMIN_KEY:?set DOCQ_TRITON_ADMIN_KEY}", name


# --- Kubernetes ---------------------------------------------------------------------


def test_k8s_flower_needs_a_login() -> None:
    c = container(k8s("Deployment")["flower"])
    assert option(c["args"], "--basic-auth") == "$(DOCQ_FLOWER_BASIC_AUTH)"
    assert secret_env(c, "DOCQ_FLOWER_BASIC_AUTH")["key"] == "DOCQ_FLOWER_BASIC_AUTH"


def test_k8s_redis_needs_a_password_and_refuses_writes_when_full() -> None:
    c = container(k8s("StatefulSet")["redis"])
    assert option(c["args"], "--requirepass") == "$(REDISCLI_AUTH)"
    assert secret_env(c, "REDISCLI_AUTH")["key"] == "REDIS_PASSWORD"
    assert option(c["args"], "--maxmemory-policy") == "noeviction"
    maxmemory = option(c["args"], "--maxmemory")
    assert maxmemory is not None and maxmemory.endswith("gb")
    limit = c["resources"]["limits"]["memory"]
    assert int(maxmemory[:-2]) < int(limit.removesuffix("Gi"))  # full before it is killed
    # KEDA reads the queues with the password too
    for scaled in k8s("ScaledObject").values():
        for trigger in scaled["spec"]["triggers"]:
            assert trigger["authenticationRef"]["name"] in k8s("TriggerAuthentication")


def test_k8s_triton_restricts_its_admin_apis_and_docq_sends_the_key() -> None:
    deployments = k8s("Deployment")
    c = container(deployments["triton"])
    assert "args" not in c  # the image's launcher, flags from the env
    assert secret_env(c, "DOCQ_TRITON_ADMIN_KEY")["key"] == "DOCQ_TRITON_ADMIN_KEY"
    for name, deployment in deployments.items():  # the API and workers read every secret
        if name in ("api", "worker", "priority", "webhooks"):
            sources = container(deployment).get("envFrom", [])
            refs = [e["secretRef"]["name"] for e in sources if "secretRef" in e]
            assert refs == ["docq-secrets"], name
    kustomization = (K8S / "kustomization.yaml").read_text()
    assert "--from-literal=DOCQ_TRITON_ADMIN_KEY=" in kustomization


def test_k8s_network_policies_deny_by_default() -> None:
    policies = k8s("NetworkPolicy")
    assert policies["default-deny-ingress"]["spec"]["podSelector"] == {}
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert "networkpolicy.yaml" in kustomization["resources"]

    def allowed(component: str) -> set[str]:
        (rule,) = [
            p
            for p in policies.values()
            if p["spec"]["podSelector"].get("matchLabels", {}).get("app.kubernetes.io/component")
            == component
        ]
        sources: set[str] = set()
        for ingress in rule["spec"]["ingress"]:
            for peer in ingress.get("from", [{"anywhere": True}]):
                if "anywhere" in peer:
                    sources.add("*")
                for expr in peer.get("podSelector", {}).get("matchExpressions", []):
                    sources |= set(expr["values"])
        return sources

    assert "*" not in allowed("redis") and "api" in allowed("redis")
    assert {"api", "worker", "priority"} <= allowed("triton")
    assert "webhooks" not in allowed("triton")  # deliveries need no Triton


# --- the local stack ------------------------------------------------------------------


def test_flower_login_is_made_once_and_kept_private(tmp_path: Path) -> None:
    path = tmp_path / "flower-login"
    login = credentials.flower_login(Settings(flower_basic_auth=""), path)
    user, _, password = login.partition(":")
    assert user and len(password) >= 16
    assert credentials.flower_login(Settings(flower_basic_auth=""), path) == login
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert credentials.flower_login(Settings(flower_basic_auth="a:b"), path) == "a:b"


def test_dev_key_is_made_once_and_kept_while_valid(tmp_path: Path, redis_url: str) -> None:
    settings = Settings(redis_url=redis_url)
    path = tmp_path / "dev-api-key"
    key = credentials.ensure_dev_key(settings, path)
    tenants = Tenants(connection.connect(redis_url), secret=settings.api_key_secret)
    assert tenants.authenticate(key) == credentials.DEV_TENANT
    assert path.read_text().strip() == key
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert credentials.ensure_dev_key(settings, path) == key  # kept across restarts
    tenants.revoke_key(key.split("_")[1])
    fresh = credentials.ensure_dev_key(settings, path)  # a revoked key is replaced
    assert fresh != key and tenants.authenticate(fresh) == credentials.DEV_TENANT
