"""The value rules of a config: what each setting may hold, and names that look secret.

Shared by :class:`~cortex_memory.config.EngineSettings` (checked at construction)
and the loaders of config files and texts, so a value is refused with the same
message wherever it comes from. No message quotes a value: a misplaced key must
not end up in a log.
"""

from __future__ import annotations

import types
from datetime import date, datetime, time
from typing import Mapping, Optional
from urllib.parse import urlsplit

from cortex_memory.errors import ConfigError

__all__ = [
    "NETWORK_FIELDS",
    "NOT_UNICODE",
    "TLS_FILES",
    "check_settings",
    "encodable",
    "has_control",
    "kind_of",
    "looks_secret",
]

# Field names that look like a credential. Compared after lowercasing and
# dropping "_" and "-", so "api_key", "API-Key" and "apikey" all match, as do
# names ending in one of the endings ("tinyhumans_token", "access_key") but not
# look-alikes such as "max_tokens".
_SECRET_NAMES = frozenset({"key", "auth", "authorization", "jwt", "cookie"})
_SECRET_ENDINGS = (
    "token", "apikey", "accesskey", "secretkey", "privatekey", "secret", "password",
    "passwd", "credential", "credentials", "bearer",
)

def kind_of(value: object) -> str:
    """The TOML/JSON name of a parsed value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, (datetime, date, time)):
        return "a date or time"
    return type(value).__name__


def looks_secret(name: str) -> bool:
    flat = name.lower().replace("_", "").replace("-", "")
    return flat in _SECRET_NAMES or flat.endswith(_SECRET_ENDINGS)


NOT_UNICODE = "must be valid Unicode text (it holds a lone surrogate)"


def encodable(text: str) -> bool:
    """False for text holding a lone surrogate, which no file system or URL can carry."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def has_control(text: str) -> bool:
    return any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text)


def carries_user(url: str) -> bool:
    text = url.strip()
    if "://" not in text:
        # A bare "user:password@host:port" proxy would otherwise parse as a scheme.
        text = "http://" + text
    try:
        parts = urlsplit(text)
        return parts.username is not None or parts.password is not None or "@" in parts.netloc
    except ValueError:
        # Not a URL at all: the engine reports that, naming its own rule.
        return False


def check_settings(
    where: str,
    endpoint: Optional[str],
    path: Optional[str],
    embedder: Optional[str] = None,
    network: Mapping[str, Optional[str]] = types.MappingProxyType({}),
) -> None:
    """Value rules shared by the constructor and the loaders; ``where`` names the owner.

    ``network`` holds ``proxy`` and the TLS file paths. No message quotes a value.
    """
    fields = {"endpoint": endpoint, "path": path, "embedder": embedder, **network}
    for name, value in fields.items():
        if value is not None and not encodable(value):
            raise ConfigError(f"{where}.{name} {NOT_UNICODE}")
    if embedder is not None and (not embedder.strip() or has_control(embedder)):
        raise ConfigError(f"{where}.embedder must be a name such as `ngram` or `semantic`")
    for name, url in (("endpoint", endpoint), ("proxy", network.get("proxy"))):
        if url is None:
            continue
        if has_control(url):
            raise ConfigError(f"{where}.{name} must not contain control characters")
        if carries_user(url):
            # The value is not quoted: the user part may be a key.
            where_from = (
                "credentials come from the environment, never from a config"
                if name == "endpoint"
                else "proxy credentials come from the environment (HTTPS_PROXY) or "
                "the code (Network), never from a config"
            )
            raise ConfigError(
                f"{where}.{name} must not carry a user name or password; {where_from}"
            )
    if path is not None and "\x00" in path:
        raise ConfigError(f"{where}.path must not contain a NUL character")
    for name in TLS_FILES:
        file = network.get(name)
        if file is None:
            continue
        if "\x00" in file:
            raise ConfigError(f"{where}.{name} must not contain a NUL character")
        if "-----BEGIN" in file:
            raise ConfigError(f"{where}.{name} must be the path of a PEM file, not its contents")


# The TLS settings that name files (paths, never secrets).
TLS_FILES = ("ca_certs", "client_cert", "client_key")
NETWORK_FIELDS = ("proxy", *TLS_FILES)
