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


# IPv6 forms that carry an IPv4 address a relay or translator delivers to: each is judged
# as the IPv4 address inside it (`ipaddress` alone calls the 6to4 ones global).
EMBEDDING_METADATA = [
    "2002:a9fe:a9fe::1",  # 6to4 of 169.254.169.254
    "2002:a9fe:a9fe:1234:5678::9",  # the same, any interface id
    "2001:0:a9fe:a9fe::5601:5601",  # Teredo whose server is 169.254.169.254
    "2001:0:4136:e378:8000:63bf:5601:5601",  # Teredo whose client is 169.254.169.254
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
    "::a9fe:a9fe",  # IPv4-compatible 169.254.169.254
]
EMBEDDING_PRIVATE = [
    "2002:7f00:1::1",  # 6to4 of 127.0.0.1
    "2002:0a00:0007::1",  # 6to4 of 10.0.0.7
    "2002:c0a8:0102::1",  # 6to4 of 192.168.1.2
    "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
    "64:ff9b::a00:7",  # NAT64 of 10.0.0.7
    "64:ff9b:1::a00:7",  # the local-use NAT64 prefix: its operator's network
    "::7f00:1",  # IPv4-compatible 127.0.0.1
]


def only(address: str) -> webhook_guard.Resolver:
    return lambda host, port: [address]


@pytest.mark.parametrize("address", EMBEDDING_METADATA)
def test_ipv6_addresses_embedding_a_metadata_address_are_refused_even_where_private_is_allowed(
    address: str,
) -> None:
    for allow_private in (False, True):
        with pytest.raises(WebhookRefused) as err:
            webhook_guard.guard(
                "http://hooks.example.com/x", allow_private=allow_private, resolve=only(address)
            )
        assert err.value.detail == {"field": "webhook.url", "address": address}


@pytest.mark.parametrize("address", EMBEDDING_PRIVATE)
def test_ipv6_addresses_embedding_a_private_address_are_not_public(address: str) -> None:
    assert not webhook_guard.is_public(address)
    with pytest.raises(WebhookRefused, match="non-public"):
        webhook_guard.guard(
            "http://hooks.example.com/x", allow_private=False, resolve=only(address)
        )


@pytest.mark.parametrize(
    "address",
    ["2002:5db8:d70e::1", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"],
)
def test_ipv6_addresses_embedding_a_public_address_stay_public(address: str) -> None:
    """6to4 of 93.184.215.14, and a plain global IPv6 address, are deliverable (NAT64
    addresses lie in ::/8, which `ipaddress` calls reserved: never public)."""
    assert webhook_guard.is_public(address)
    url = "http://hooks.example.com/x"
    assert webhook_guard.guard(url, allow_private=False, resolve=only(address)) == url


def test_every_resolved_address_is_checked_and_all_are_returned_in_order() -> None:
    """A delivery may connect to any of them (the first can be unreachable), so one bad
    address anywhere in the answer refuses the host."""
    target = webhook_guard.check_url("https://hooks.example.com/x")
    good = ["2606:2800:21f:cb07:6820:80da:af6b:8b2c", "93.184.215.14"]
    assert webhook_guard.check_addresses(target, good, allow_private=False) == good
    for bad in ("2002:a9fe:a9fe::1", "2002:7f00:1::1", "10.0.0.7"):
        with pytest.raises(WebhookRefused) as err:
            webhook_guard.check_addresses(target, [*good, bad], allow_private=False)
        assert err.value.detail["address"] == bad
