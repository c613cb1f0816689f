"""docq.webhooks: secrets, the SSRF guard, Standard Webhooks signing, retry policy, fingerprints."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime

import httpx
import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from docq import webhook_guard, webhooks
from docq.errors import WebhookRefused
from docq.jobs import DeliveryState, EventType, JobStatus
from docq.schemas import JobPublic, Progress
from docq.store import idempotency


def resolver(table: dict[str, list[str]]) -> webhook_guard.Resolver:
    def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise OSError(f"unknown host {host}")
        return table[host]

    return resolve


PUBLIC = resolver(
    {"hooks.example.com": ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"]}
)


# --- secrets --------------------------------------------------------------------------


def test_generated_secrets_are_standard_webhooks_secrets() -> None:
    secret = webhook_guard.generate_secret()
    assert secret.startswith("whsec_")
    assert webhook_guard.check_secret(secret) == secret
    assert webhook_guard.generate_secret() != secret
    Webhook(secret)  # the reference library accepts it


@pytest.mark.parametrize(
    "secret",
    ["", "whsec_", "plain-password", "whsec_not base64!", "whsec_" + "QUFB" * 4, "QUFB" * 10],
)
def test_malformed_or_short_secrets_are_refused(secret: str) -> None:
    with pytest.raises(WebhookRefused):
        webhook_guard.check_secret(secret)


# --- the SSRF guard -------------------------------------------------------------------


def test_a_public_https_url_passes() -> None:
    url = "https://hooks.example.com/docq?x=1"
    assert webhook_guard.guard(url, allow_private=False, resolve=PUBLIC) == url


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",  # loopback
        "10.1.2.3",  # private
        "172.16.0.1",
        "192.168.1.10",
        "169.254.169.254",  # link-local: cloud metadata
        "100.64.0.1",  # shared address space (carrier NAT)
        "0.0.0.0",  # unspecified
        "224.0.0.1",  # multicast (ipaddress calls it global)
        "240.0.0.1",  # reserved
        "::1",
        "fe80::1",
        "fc00::1",
        "ff02::1",
        "::ffff:127.0.0.1",  # IPv4-mapped loopback
        "::",
    ],
)
def test_non_public_addresses_are_refused(address: str) -> None:
    resolve = resolver({"internal.example.com": [address]})
    with pytest.raises(WebhookRefused) as err:
        webhook_guard.guard(
            "http://internal.example.com/hook", allow_private=False, resolve=resolve
        )
    assert err.value.detail["address"] == address
    url = "http://internal.example.com/hook"
    if webhook_guard.is_never_allowed(address):  # link-local, metadata: never (below)
        assert "link-local or cloud metadata" in err.value.message
        return
    assert "non-public" in err.value.message
    # ... unless the operator allows private networks (local stacks, tests)
    assert webhook_guard.guard(url, allow_private=True, resolve=resolve) == url


def test_one_private_address_among_public_ones_is_enough_to_refuse() -> None:
    resolve = resolver({"mixed.example.com": ["93.184.215.14", "10.0.0.5"]})
    with pytest.raises(WebhookRefused):
        webhook_guard.guard("https://mixed.example.com/", allow_private=False, resolve=resolve)


def test_literal_private_ip_urls_are_refused() -> None:
    with pytest.raises(WebhookRefused):
        webhook_guard.guard("http://127.0.0.1:9/x", allow_private=False)
    with pytest.raises(WebhookRefused):
        webhook_guard.guard("http://[::1]:9/x", allow_private=False)


@pytest.mark.parametrize(
    "url",
    [
        "ftp://hooks.example.com/x",
        "file:///etc/passwd",
        "gopher://hooks.example.com/",
        "hooks.example.com/no-scheme",
        "https:///no-host",
        "https://user:pass@hooks.example.com/",
        "https://hooks.example.com/" + "a" * 3000,
    ],
)
def test_bad_schemes_and_urls_are_refused(url: str) -> None:
    with pytest.raises(WebhookRefused):
        webhook_guard.guard(url, allow_private=True, resolve=PUBLIC)


def test_a_host_that_does_not_resolve_is_refused() -> None:
    with pytest.raises(WebhookRefused) as err:
        webhook_guard.guard("https://nowhere.example.com/", allow_private=False, resolve=PUBLIC)
    assert "does not resolve" in err.value.message


def test_pinned_request_connects_to_the_checked_address_but_keeps_host_and_sni() -> None:
    target = webhook_guard.check_url("https://hooks.example.com:8443/path?q=1")
    url, headers, extensions = webhook_guard.pinned_request(target, "93.184.215.14")
    assert str(url) == "https://93.184.215.14:8443/path?q=1"
    assert headers == {"host": "hooks.example.com:8443"}
    assert extensions == {"sni_hostname": "hooks.example.com"}
    url6, _, ext6 = webhook_guard.pinned_request(
        webhook_guard.check_url("http://h.example.com/"), "::1"
    )
    assert str(url6) == "http://[::1]/"
    assert ext6 == {}


# --- signing and the event ------------------------------------------------------------


def job_public(status: JobStatus = JobStatus.SUCCEEDED) -> JobPublic:
    now = datetime.now(UTC)
    return JobPublic(
        id="j1",
        status=status,
        model="doc-type",
        documents=2,
        progress=Progress(documents_done=2, documents_failed=0),
        created_at=now,
        started_at=now,
        finished_at=now,
        error=None,
    )


def test_signed_headers_verify_with_standardwebhooks() -> None:
    secret = webhook_guard.generate_secret()
    body = webhooks.event_body(EventType.SUCCEEDED, job_public(), datetime.now(UTC))
    headers = webhooks.sign(secret, "msg_j1", body, datetime.now(UTC))
    assert headers["webhook-id"] == "msg_j1"
    assert Webhook(secret).verify(body, headers) == json.loads(body)
    with pytest.raises(WebhookVerificationError):
        Webhook(webhook_guard.generate_secret()).verify(body, headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(body.replace("succeeded", "failed"), headers)


def test_event_body_carries_type_and_job_status() -> None:
    body = json.loads(
        webhooks.event_body(EventType.CANCELLED, job_public(JobStatus.CANCELLED), datetime.now(UTC))
    )
    assert body["type"] == "job.cancelled"
    assert body["data"]["id"] == "j1"
    assert body["data"]["status"] == "cancelled"
    assert "results" not in body["data"]
    assert EventType.of(JobStatus.FAILED) is EventType.FAILED


def test_results_are_inlined_only_under_the_cap() -> None:
    results = [{"id": f"d{i}", "label": "invoice"} for i in range(10)]
    assert webhooks.inline_results(results, 0) is None
    assert webhooks.inline_results(results, 10_000) == results
    assert webhooks.inline_results(results, 100) is None


# --- retry policy ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "state"),
    [
        (200, DeliveryState.DELIVERED),
        (204, DeliveryState.DELIVERED),
        (500, DeliveryState.PENDING),
        (503, DeliveryState.PENDING),
        (429, DeliveryState.PENDING),
        (400, DeliveryState.FAILED),
        (404, DeliveryState.FAILED),
        (410, DeliveryState.FAILED),
        (301, DeliveryState.FAILED),  # redirects are not followed
        (307, DeliveryState.FAILED),
    ],
)
def test_classify(code: int, state: DeliveryState) -> None:
    assert webhooks.classify(code) is state


def test_backoff_doubles_with_jitter_and_is_capped() -> None:
    rng = random.Random(7)
    for attempt in range(1, 8):
        nominal = 7 * 2 ** (attempt - 1)
        delay = webhooks.backoff_s(attempt, 7, 1800, rng)
        assert 0.75 * nominal <= delay <= 1.25 * nominal
    assert webhooks.backoff_s(20, 7, 1800, rng) == 1800
    delays = {webhooks.backoff_s(3, 7, 1800, rng) for _ in range(20)}
    assert len(delays) > 1  # jittered: an outage's retries do not arrive together


def test_default_policy_spans_about_an_hour() -> None:
    from docq.config import Settings

    s = Settings()
    nominal = sum(
        min(s.webhook_backoff_max_s, s.webhook_backoff_s * 2 ** (n - 1))
        for n in range(1, s.webhook_max_attempts)
    )
    assert s.webhook_max_attempts == 10
    assert 45 * 60 <= nominal <= 75 * 60


# --- idempotency ----------------------------------------------------------------------


def test_fingerprint_covers_model_documents_and_webhook_url() -> None:
    docs = [("a", "one"), ("b", "two")]
    base = idempotency.fingerprint("doc-type", docs, None)
    assert idempotency.fingerprint("doc-type", list(docs), None) == base
    assert idempotency.fingerprint("other", docs, None) != base
    assert idempotency.fingerprint("doc-type", docs[::-1], None) != base
    assert idempotency.fingerprint("doc-type", [("a", "one"), ("b", "two!")], None) != base
    assert idempotency.fingerprint("doc-type", docs, "https://h.example.com/") != base
    # no ambiguity from where one field ends and the next begins
    assert idempotency.fingerprint("m", [("ab", "c")], None) != idempotency.fingerprint(
        "m", [("a", "bc")], None
    )
    assert idempotency.key_digest("t", "k1") != idempotency.key_digest("t", "k2")
    # scoped per tenant: the same key of two tenants is two keys
    assert idempotency.key_digest("t1", "k1") != idempotency.key_digest("t2", "k1")


def test_check_url_accepts_ipv6_literals() -> None:
    target = webhook_guard.check_url("http://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]:8080/h")
    assert (target.host, target.port) == ("2606:2800:21f:cb07:6820:80da:af6b:8b2c", 8080)
    assert isinstance(target.url, httpx.URL)
