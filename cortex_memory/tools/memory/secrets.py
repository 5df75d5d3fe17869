"""The secret detector: refuse memory content that looks like a credential.

A memory outlives the conversation that wrote it and may be read by other
agents, so a credential must never become one. :func:`looks_like_secret`
answers whether a text holds something credential-shaped; :func:`redact`
replaces every such span with ``[redacted]`` (the MCP contract uses it on
error messages before cutting them).

What counts (each rule is a separate, readable pattern):

* an assignment to a credential-named key: ``password=…``, ``passwd: …``,
  ``secret=…``, ``token=…``, ``api_key=…`` (also ``GITHUB_TOKEN=…`` and JSON
  ``"password": "…"``), unless the value is a placeholder;
* a PEM private-key block (``-----BEGIN … PRIVATE KEY-----``);
* a JSON Web Token (three base64url parts, the first two starting ``eyJ``);
* a provider key prefix: ``sk-``, ``ghp_`` (and the other GitHub prefixes),
  ``xoxb-`` (and the other Slack prefixes), ``AKIA``/``ASIA``, ``AIza``,
  ``glpat-``, ``sk_live_``, ``tiny_live_``, ``ctx_`` …, followed by a
  token-shaped tail holding a digit;
* an ``Authorization: Bearer …`` style bearer value;
* a long high-entropy string: 32+ characters mixing upper case, lower case
  and digits with many class changes and high Shannon entropy. Hex digests
  (commit ids, item ids), UUIDs, paths and CamelCase identifiers do not
  qualify, so everyday technical text stays storable.

False positives on ordinary prose are kept near zero on purpose: a prose
sentence such as "the password: must be rotated" is not an assignment (the
value must be a lone token), and words like ``tokens`` or ``max_tokens=512``
are not credential keys.
"""

from __future__ import annotations

import math
import re
from typing import Dict, Iterator, List, Tuple

__all__ = ["REDACTED", "looks_like_secret", "redact", "secret_spans"]

#: What :func:`redact` puts in place of a secret.
REDACTED = "[redacted]"

# -- assignments -------------------------------------------------------------------

# Keys whose value is a secret whatever it looks like.
_ALWAYS_KEYS = r"password|passwd|passphrase"
# Keys whose value is a secret unless it is a small number (a count or a size).
_UNLESS_NUMBER_KEYS = (
    r"secret|client_secret|secret_key|token|access_token|auth_token|refresh_token|"
    r"id_token|bearer_token|session_token|api_key|apikey|api-key|access_key|private_key"
)

# An identifier ending in a credential key, then `=` or `:`, then the value.
# The key may carry a prefix (GITHUB_TOKEN, db_password) but not a suffix, so
# `max_tokens=512` and `token_count=5` are not assignments.
_ASSIGNMENT = re.compile(
    r"(?i)(?<![A-Za-z0-9])"
    r"(?:[A-Za-z0-9]+[_-])*"
    r"(?P<key>" + _ALWAYS_KEYS + "|" + _UNLESS_NUMBER_KEYS + r")"
    r"(?P<quote>[\"']?)[ \t]*(?P<sep>[:=])[ \t]*"
    r"(?P<value>\"[^\"\r\n]*\"|'[^'\r\n]*'|[^\s,;\"'()\[\]{}<>]+)"
)
_ALWAYS_KEY = re.compile(r"(?i)^(?:" + _ALWAYS_KEYS + r")$")
_PLACEHOLDERS = frozenset(
    {
        "", "none", "null", "nil", "true", "false", "undefined", "redacted", "[redacted]",
        "hidden", "secret", "password", "token", "xxx", "xxxx", "****", "...", "…", "required",
        "optional", "string", "str", "env", "example", "placeholder", "empty", "yes", "no",
    }
)
_PLACEHOLDER_SHAPES = re.compile(
    r"^(?:<[^>]*>|\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|%[A-Za-z_][A-Za-z0-9_]*%|"
    r"\{\{[^}]*\}\}|\*+|x+|X+|\.+|os\.environ.*|getenv.*|process\.env.*)$"
)
# After a prose colon more words follow ("the token: it expires").
_WORD_FOLLOWS = re.compile(r"[ \t]+[A-Za-z]")


def _assignment_spans(text: str) -> Iterator[Tuple[int, int]]:
    for match in _ASSIGNMENT.finditer(text):
        raw = match.group("value")
        value = raw[1:-1] if raw[:1] in "\"'" and len(raw) >= 2 else raw
        if _is_placeholder(value):
            continue
        key = match.group("key")
        if not _ALWAYS_KEY.match(key) and value.isdigit() and len(value) < 8:
            continue  # `token=5` or `secret_length: 32` is a number, not a credential
        # A colon in prose introduces words, not a value: after an unquoted colon
        # the value must stand alone, or be token-shaped (letters mixed with
        # digits or symbols).
        if (
            match.group("sep") == ":"
            and not match.group("quote")
            and raw[:1] not in "\"'"
            and _WORD_FOLLOWS.match(text, match.end("value"))
            and not _token_shaped(value)
        ):
            continue
        yield match.start("value"), match.end("value")


def _is_placeholder(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered.startswith("$"):
        return True  # `$VAR`, `${VAR}`: a reference to the environment, not a value
    return lowered in _PLACEHOLDERS or bool(_PLACEHOLDER_SHAPES.match(value.strip()))


def _token_shaped(value: str) -> bool:
    has_letter = any(ch.isalpha() for ch in value)
    has_other = any(ch.isdigit() or not ch.isalnum() for ch in value)
    return has_letter and has_other


# -- fixed shapes ------------------------------------------------------------------------

_PEM = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)?"
)
_JWT = re.compile(
    r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
)
# Provider prefixes; the tail must hold a digit (checked below) so words such as
# `ctx_manager_helpers` or `sk-learn-estimators` are not keys.
_PREFIXED = re.compile(
    r"(?<![A-Za-z0-9_-])"
    r"(?:sk-(?:proj-|ant-|live-|test-)?|sk_live_|sk_test_|rk_live_|pk_live_|"
    r"gh[pousr]_|github_pat_|glpat-|xox[abposr]-|xapp-|npm_|hf_|"
    r"tiny_live_|tiny_test_|ctx_|AKIA|ASIA|AIza)"
    r"[A-Za-z0-9_\-]{12,}"
)
_BEARER = re.compile(r"(?i)\bbearer[ \t]+(?P<value>[A-Za-z0-9._~+/=-]{16,})")

# -- high entropy --------------------------------------------------------------------------

_RUN = re.compile(r"[A-Za-z0-9+/=_-]{32,}")
_HEX = re.compile(r"^[0-9a-fA-F_-]+$")
_MIN_ENTROPY = 4.0  # bits per character; random base62/base64 is above 4.5
_MIN_CLASS_CHANGES = 0.4  # share of neighbours whose classes differ


def _entropy(text: str) -> float:
    counts: Dict[str, int] = {}
    for ch in text:
        counts[ch] = counts.get(ch, 0) + 1
    size = len(text)
    return -sum(n / size * math.log2(n / size) for n in counts.values())


def _char_class(ch: str) -> int:
    if "a" <= ch <= "z":
        return 0
    if "A" <= ch <= "Z":
        return 1
    if "0" <= ch <= "9":
        return 2
    return 3


def _random_looking(run: str) -> bool:
    if _HEX.match(run):
        return False  # digests, commit ids and UUID-like runs are not credentials here
    core = run.rstrip("=")
    classes = [_char_class(ch) for ch in core]
    if not (0 in classes and 1 in classes and 2 in classes):
        return False
    changes = sum(1 for a, b in zip(classes, classes[1:]) if a != b)
    if changes < _MIN_CLASS_CHANGES * (len(core) - 1):
        return False  # CamelCase identifiers change class only at word starts
    return _entropy(core) >= _MIN_ENTROPY


def _entropy_spans(text: str) -> Iterator[Tuple[int, int]]:
    for match in _RUN.finditer(text):
        if _random_looking(match.group()):
            yield match.span()
            continue
        # A path or URL joins words with `/`: a token inside one is judged alone.
        start = match.start()
        for piece in match.group().split("/"):
            if len(piece) >= 32 and _random_looking(piece):
                yield start, start + len(piece)
            start += len(piece) + 1


# -- public ----------------------------------------------------------------------------------


def secret_spans(text: str) -> List[Tuple[int, int]]:
    """The ``(start, end)`` spans of ``text`` that look like secrets, sorted and merged."""
    spans: List[Tuple[int, int]] = []
    spans.extend(_assignment_spans(text))
    spans.extend(m.span() for m in _PEM.finditer(text))
    spans.extend(m.span() for m in _JWT.finditer(text))
    spans.extend(m.span() for m in _PREFIXED.finditer(text) if _has_digit_tail(m.group()))
    spans.extend(m.span("value") for m in _BEARER.finditer(text) if _token_shaped(m["value"]))
    spans.extend(_entropy_spans(text))
    spans.sort()
    merged: List[Tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _has_digit_tail(token: str) -> bool:
    return any(ch.isdigit() for ch in token[3:])


def looks_like_secret(text: str) -> bool:
    """True when ``text`` holds something that looks like a credential or private key."""
    return bool(secret_spans(text))


def redact(text: str) -> str:
    """``text`` with every secret-looking span replaced by ``[redacted]``."""
    spans = secret_spans(text)
    if not spans:
        return text
    out: List[str] = []
    last = 0
    for start, end in spans:
        out.append(text[last:start])
        out.append(REDACTED)
        last = end
    out.append(text[last:])
    return "".join(out)
