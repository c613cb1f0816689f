"""docq.webhook_guard: the addresses no webhook may reach, whatever the settings allow."""

from __future__ import annotations

import pytest

from docq import webhook_guard
from docq.errors import WebhookRefused


@pytest.mark.parametrize(
    "address",
    [
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack... metadata
        "169.254.170.2",  # ECS task credentials
        "169.254.0.1",  # any IPv4 link-local
        "fd00:ec2::254",  # AWS metadata over IPv6
        "fe80::a9fe:a9fe",  # IPv6 link-local
        "::ffff:169.254.169.254",  # the metadata address, IPv4-mapped
        "100.100.100.200",  # Alibaba Cloud metadata
        "168.63.129.16",  # Azure host agent
        "0.0.0.0",
        "224.0.0.251",
    ],
)
def test_link_local_and_metadata_addresses_are_refused_even_where_private_is_allowed(
    address: str,
) -> None:
    def resolve(host: str, port: int) -> list[str]:
        return [address]

    with pytest.raises(WebhookRefused) as err:
        webhook_guard.guard("http://hooks.internal/x", allow_private=True, resolve=resolve)
    assert err.value.detail == {"field": "webhook.url", "address": address}
    assert "metadata" in err.value.message


@pytest.mark.parametrize("address", ["127.0.0.1", "10.0.0.7", "192.168.1.2", "fd00::7", "::1"])
def test_private_networks_stay_usable_where_they_are_allowed(address: str) -> None:
    def resolve(host: str, port: int) -> list[str]:
        return [address]

    url = "http://hooks.internal/x"
    assert webhook_guard.guard(url, allow_private=True, resolve=resolve) == url
