"""Where Storage queue and Service Bus actions connect, from the endpoint settings. Pure Python.

An endpoint setting is a DNS suffix (``core.windows.net``, ``servicebus.windows.net``, or a sovereign
cloud's) or a URL template (``http://127.0.0.1:10001/{account}``, ``amqp://127.0.0.1:5672``,
``sb://{namespace}.example.net``) used as given after the placeholder is replaced.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = [
    "DEFAULT_SERVICE_BUS_ENDPOINT",
    "DEFAULT_STORAGE_QUEUE_ENDPOINT",
    "Namespace",
    "account_url",
    "host_name",
    "namespace_endpoint",
]

DEFAULT_STORAGE_QUEUE_ENDPOINT = "core.windows.net"
DEFAULT_SERVICE_BUS_ENDPOINT = "servicebus.windows.net"


def host_name(netloc: str) -> str:
    """The host of ``host[:port]`` (or ``[v6]:port``), lower-case, without brackets or a trailing dot."""
    try:
        name = urlsplit(f"//{netloc}").hostname or ""
    except ValueError:
        name = ""
    return name.rstrip(".").lower()


@dataclass(frozen=True)
class Namespace:
    """Where to connect: ``host`` (with a port when not the default) and whether TLS is used."""

    host: str
    use_tls: bool

    @property
    def hostname(self) -> str:
        """``host`` without its port."""
        return host_name(self.host)


def namespace_endpoint(template: str, namespace: str) -> Namespace:
    """The endpoint of a Service Bus ``namespace`` from the setting: ``{namespace}.{suffix}`` over
    AMQP/TLS for a DNS suffix (a namespace with a dot is a fully qualified name, used as given); for a
    URL template, its host with ``{namespace}`` replaced, TLS off for ``amqp://`` and ``http://``."""
    text = (template or DEFAULT_SERVICE_BUS_ENDPOINT).strip()
    if "://" not in text:
        if "." in namespace:  # already a fully qualified namespace
            return Namespace(namespace, True)
        return Namespace(f"{namespace}.{text.strip('.')}", True)
    parts = urlsplit(text.replace("{namespace}", namespace))
    return Namespace(parts.netloc, parts.scheme.lower() not in ("amqp", "http"))


def account_url(template: str, account: str) -> str:
    """The queue service URL of a storage ``account`` from the setting (a DNS suffix or a URL template)."""
    text = (template or DEFAULT_STORAGE_QUEUE_ENDPOINT).strip()
    if "://" not in text:
        return f"https://{account}.queue.{text.strip('.')}"
    return text.replace("{account}", account).rstrip("/")
