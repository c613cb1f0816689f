"""Webhooks, the parts both sides share: secrets, the SSRF guard, signing, the event body,
the retry policy, and dispatching a job's event to the `webhooks` queue.

Deliveries follow the Standard Webhooks specification and are signed by its reference
library, `standardwebhooks`. A job has exactly one event (`job.succeeded`, `job.failed` or
`job.cancelled`), so its `webhook-id` is derived from the job id: every attempt and every
redelivery of it carries the same id, and a receiver that de-duplicates on it sees the
event once.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import ipaddress
import json
import random
import secrets
import socket
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx
from celery import Celery
from standardwebhooks import Webhook

from docq.errors import WebhookRefused
from docq.jobs import DeliveryState, EventType
from docq.queue import enqueue_webhook
from docq.schemas import JobPublic
from docq.store import JobStore

SECRET_PREFIX = "whsec_"
SCHEMES = ("http", "https")
MAX_URL_CHARS = 2048

# (host, port) -> addresses, in the order to try them. A parameter so tests can resolve
# names without DNS.
Resolver = Callable[[str, int], list[str]]


# --- secrets ----------------------------------------------------------------------


def generate_secret() -> str:
    """A fresh `whsec_` secret: 32 random bytes, base64 (the Standard Webhooks form)."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def check_secret(secret: str) -> str:
    """The secret if it is a `whsec_` base64 secret of 24 to 64 bytes, else WebhookRefused."""
    body = secret.removeprefix(SECRET_PREFIX)
    try:
        raw = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if not secret.startswith(SECRET_PREFIX) or not 24 <= len(raw) <= 64:
        raise WebhookRefused(
            "webhook secret must be 'whsec_' followed by 24 to 64 bytes in base64 "
            "(leave it out and docq generates one)",
            {"field": "webhook.secret"},
        )
    return secret


# --- the SSRF guard -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Target:
    """A checked webhook URL."""

    url: httpx.URL
    host: str
    port: int


def check_url(url: str) -> Target:
    """Syntax and scheme of a webhook URL (no DNS yet); WebhookRefused if unusable."""
    if len(url) > MAX_URL_CHARS:
        raise WebhookRefused(
            f"webhook URL longer than {MAX_URL_CHARS} characters", {"field": "webhook.url"}
        )
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise WebhookRefused(f"invalid webhook URL: {exc}", {"field": "webhook.url"}) from None
    if parsed.scheme not in SCHEMES:
        raise WebhookRefused(
            f"webhook URL scheme must be http or https, not {parsed.scheme!r}",
            {"field": "webhook.url"},
        )
    if not parsed.host:
        raise WebhookRefused("webhook URL has no host", {"field": "webhook.url"})
    if parsed.userinfo:
        raise WebhookRefused(
            "webhook URL must not carry credentials; the signature authenticates docq",
            {"field": "webhook.url"},
        )
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    return Target(parsed, parsed.host, port)


def system_resolver(host: str, port: int) -> list[str]:
    """The addresses `host` resolves to (socket.gaierror when it does not resolve)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def is_public(address: str) -> bool:
    """Whether an address is on the public internet: not loopback, private, link-local,
    multicast, reserved, unspecified or shared (and the same for IPv4-mapped IPv6)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not (
        ip.is_multicast
        or ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_reserved
        or ip.is_unspecified
    )


def check_addresses(target: Target, addresses: Sequence[str], *, allow_private: bool) -> str:
    """The address to connect to; WebhookRefused if any address of the host is not public
    (a name with one private address could be steered to it) unless private is allowed."""
    if not addresses:
        raise WebhookRefused(
            f"webhook host {target.host!r} does not resolve", {"field": "webhook.url"}
        )
    if not allow_private:
        private = [a for a in addresses if not is_public(a)]
        if private:
            raise WebhookRefused(
                f"webhook host {target.host!r} resolves to a non-public address "
                f"({private[0]}); refused to protect internal services",
                {"field": "webhook.url", "address": private[0]},
            )
    return addresses[0]


def guard(url: str, *, allow_private: bool, resolve: Resolver = system_resolver) -> str:
    """Check a webhook URL when a job is created: scheme, host, and every resolved address;
    returns the URL. Raises WebhookRefused (a 4xx: no job is created)."""
    target = check_url(url)
    try:
        addresses = resolve(target.host, target.port)
    except (OSError, UnicodeError) as exc:
        raise WebhookRefused(
            f"webhook host {target.host!r} does not resolve: {exc}", {"field": "webhook.url"}
        ) from None
    check_addresses(target, addresses, allow_private=allow_private)
    return url


def pinned_request(
    target: Target, address: str
) -> tuple[httpx.URL, dict[str, str], dict[str, Any]]:
    """URL, headers and extensions that connect to the checked `address` itself, so that
    DNS cannot answer differently between the check and the connection (rebinding), while
    Host and TLS (SNI, certificate name) still use the URL's host."""
    url = target.url.copy_with(host=address)
    host_header = target.url.netloc.decode("ascii")
    extensions: dict[str, Any] = {}
    if target.url.scheme == "https":
        extensions["sni_hostname"] = target.host
    return url, {"host": host_header}, extensions


# --- signing and the event body -------------------------------------------------------


def sign(secret: str, webhook_id: str, payload: str, at: datetime) -> dict[str, str]:
    """The Standard Webhooks headers of one attempt (the timestamp is the attempt's)."""
    signature = Webhook(secret).sign(webhook_id, at, payload)
    return {
        "webhook-id": webhook_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signature,
        "content-type": "application/json",
    }


def event_body(
    event: EventType, job: JobPublic, at: datetime, results: list[dict[str, Any]] | None = None
) -> str:
    """`{"type", "timestamp", "data": <job status>}`; `data.results` only when inlined."""
    data = job.model_dump(mode="json")
    if results is not None:
        data["results"] = results
    return json.dumps(
        {"type": event.value, "timestamp": at.isoformat(), "data": data},
        ensure_ascii=False,
        separators=(",", ":"),
    )


def inline_results(
    results: Iterable[dict[str, Any]], max_bytes: int
) -> list[dict[str, Any]] | None:
    """All results when their JSON fits in `max_bytes`, else None (the receiver fetches)."""
    if max_bytes <= 0:
        return None
    out, size = [], 2
    for r in results:
        size += len(json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode()) + 1
        if size > max_bytes:
            return None
        out.append(r)
    return out


# --- retry policy -------------------------------------------------------------------


def classify(status_code: int) -> DeliveryState:
    """What an answer means: 2xx delivered; 429 and 5xx worth another attempt (PENDING);
    anything else (4xx, a redirect, which is never followed) final (FAILED)."""
    if 200 <= status_code < 300:
        return DeliveryState.DELIVERED
    if status_code == 429 or status_code >= 500:
        return DeliveryState.PENDING
    return DeliveryState.FAILED


def backoff_s(attempt: int, base_s: float, max_s: float, rng: random.Random | None = None) -> float:
    """Delay after failed attempt `attempt` (1-based): base * 2^(attempt-1), +-25% jitter,
    capped at max_s."""
    delay = base_s * 2 ** (attempt - 1)
    jitter = (rng or random).uniform(0.75, 1.25)
    return float(min(max_s, delay * jitter))


# --- idempotency --------------------------------------------------------------------


def key_digest(idempotency_key: str) -> str:
    return hashlib.sha256(idempotency_key.encode()).hexdigest()


def fingerprint(model: str, documents: Iterable[tuple[str, str]], webhook_url: str | None) -> str:
    """A digest of what makes two uploads the same request, whatever their body format:
    the model, the documents (ids and texts, in order) and the webhook URL."""
    h = hashlib.sha256()
    h.update(json.dumps([model, webhook_url]).encode())
    for doc_id, text in documents:
        h.update(json.dumps([doc_id, text], ensure_ascii=False).encode())
        h.update(b"\n")
    return h.hexdigest()


# --- dispatch -----------------------------------------------------------------------


def dispatch(store: JobStore, celery: Celery, job_id: str) -> bool:
    """Enqueue the delivery of a job's event, unless it has no webhook, no event yet, or
    its delivery is already enqueued. Returns whether it enqueued.

    The caller that made the job final calls it once; a redelivered task that finds the
    job final calls it again, which enqueues only if the first caller died before it could
    (the token is written after the enqueue, so a crash in between errs towards a second
    chain, which the first chain's claim then makes stale, never towards no delivery).
    """
    state, token = store.dispatch_state(job_id)
    if state is not DeliveryState.PENDING or token:
        return False
    token = uuid.uuid4().hex
    enqueue_webhook(celery, job_id, token)
    store.set_token_if_unset(job_id, token)
    return True
