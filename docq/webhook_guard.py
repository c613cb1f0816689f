"""Webhook URLs and secrets docq will use: the secret format and the SSRF guard.

A leaf of the core (it imports only the error tree), so that settings can check the
default webhook without pulling in the store, Celery or the delivery code.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import secrets
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from docq.errors import WebhookRefused

SECRET_PREFIX = "whsec_"
SCHEMES = ("http", "https")
MAX_URL_CHARS = 2048

# (host, port) -> addresses, in the order to try them. A parameter so tests can resolve
# names without DNS.
Resolver = Callable[[str, int], list[str]]

# Never a webhook target, not even where private networks are allowed (`make up`, a
# receiver on the same network): link-local ranges, where the cloud metadata services
# hand out credentials (169.254.169.254 on AWS, GCP, Azure and others; fd00:ec2::254 on
# AWS over IPv6), and the other metadata or host-agent addresses clouds use; also the
# unspecified and multicast ranges, which no receiver listens on.
NEVER = tuple(
    ipaddress.ip_network(net)
    for net in (
        "169.254.0.0/16",  # IPv4 link-local, metadata services
        "fe80::/10",  # IPv6 link-local
        "fd00:ec2::254/128",  # AWS metadata over IPv6
        "100.100.100.200/32",  # Alibaba Cloud metadata
        "168.63.129.16/32",  # Azure host agent (wireserver)
        "0.0.0.0/8",
        "::/128",
        "224.0.0.0/4",
        "ff00::/8",
    )
)


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
    if named := secret_parameters(parsed):
        raise WebhookRefused(
            f"webhook URL must not carry secrets in its query ({', '.join(named)}): URLs are "
            "stored and shown, and the signature authenticates docq (give webhook.secret)",
            {"field": "webhook.url", "parameters": named},
        )
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    return Target(parsed, parsed.host, port)


# Query parameter names that carry credentials (matched as parts of the lower-cased name).
SECRET_WORDS = ("secret", "token", "key", "password", "passwd", "signature", "auth", "credential")


def secret_parameters(url: httpx.URL) -> list[str]:
    """The query parameter names of `url` that look like credentials (never their values)."""
    names = dict.fromkeys(k for k, _ in url.params.multi_items())
    return [k for k in names if any(word in k.lower() for word in SECRET_WORDS)]


def system_resolver(host: str, port: int) -> list[str]:
    """The addresses `host` resolves to (socket.gaierror when it does not resolve)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# IPv6 forms that carry an IPv4 address a packet may end up at: a relay or translator
# unwraps it, or the host's stack does (IPv4-mapped). Each is judged as the IPv4 addresses
# it embeds would be, as well as on its own: 2002:a9fe:a9fe::1 is "global" to `ipaddress`,
# yet a 6to4 relay delivers it to 169.254.169.254.
NAT64 = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052, the IPv4 in the last 32 bits
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")  # deprecated (RFC 4291), likewise
# The local-use NAT64 prefix (RFC 8215) translates to whatever its operator chose: never
# public, whatever `ipaddress` says (Python 3.13 marks it private; 3.11 global).
NOT_PUBLIC = (ipaddress.ip_network("64:ff9b:1::/48"),)


def _ip(address: str) -> IPAddress:
    return ipaddress.ip_address(address.split("%", 1)[0])


def embedded(ip: IPAddress) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries: IPv4-mapped (::ffff:a.b.c.d), 6to4
    (2002::/16), Teredo (2001::/32, its server and its client), NAT64 (64:ff9b::/96) and
    IPv4-compatible (::a.b.c.d); none for any other address."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return []
    if ip.ipv4_mapped is not None:
        return [ip.ipv4_mapped]
    if ip.sixtofour is not None:
        return [ip.sixtofour]
    if ip.teredo is not None:
        return list(ip.teredo)
    low32 = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip in NAT64 or (ip in IPV4_COMPATIBLE and int(ip) > 1):  # not :: or ::1
        return [low32]
    return []


def _never(ip: IPAddress) -> bool:
    return any(ip.version == net.version and ip in net for net in NEVER)


def _public(ip: IPAddress) -> bool:
    return (
        ip.is_global
        and not (
            ip.is_multicast
            or ip.is_private
            or ip.is_loopback
            or ip.is_link_local
            or ip.is_reserved
            or ip.is_unspecified
        )
        and not any(ip.version == net.version and ip in net for net in NOT_PUBLIC)
    )


def is_never_allowed(address: str) -> bool:
    """Whether an address is refused even where private networks are allowed (NEVER): it
    is in NEVER, or it embeds an IPv4 address that is."""
    ip = _ip(address)
    return _never(ip) or any(_never(v4) for v4 in embedded(ip))


def is_public(address: str) -> bool:
    """Whether an address is on the public internet: not loopback, private, link-local,
    multicast, reserved, unspecified or shared, and neither is any IPv4 address it embeds
    (IPv4-mapped, 6to4, Teredo, NAT64: see `embedded`)."""
    ip = _ip(address)
    return _public(ip) and all(_public(v4) for v4 in embedded(ip))


def check_addresses(target: Target, addresses: Sequence[str], *, allow_private: bool) -> list[str]:
    """The addresses to connect to, in the resolver's order, every one checked;
    WebhookRefused if any address of the host is not public (a name with one private address
    could be steered to it) unless private is allowed, and if any is link-local or a
    metadata address (NEVER, or one embedding it), allowed or not. A delivery tries them in
    turn (the first may be unreachable, an IPv6 address on a host without IPv6), never an
    address it did not check."""
    if not addresses:
        raise WebhookRefused(
            f"webhook host {target.host!r} does not resolve", {"field": "webhook.url"}
        )
    never = [a for a in addresses if is_never_allowed(a)]
    if never:
        raise WebhookRefused(
            f"webhook host {target.host!r} resolves to a link-local or cloud metadata "
            f"address ({never[0]}); refused even where private networks are allowed",
            {"field": "webhook.url", "address": never[0]},
        )
    if not allow_private:
        private = [a for a in addresses if not is_public(a)]
        if private:
            raise WebhookRefused(
                f"webhook host {target.host!r} resolves to a non-public address "
                f"({private[0]}); refused to protect internal services",
                {"field": "webhook.url", "address": private[0]},
            )
    return list(addresses)


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
