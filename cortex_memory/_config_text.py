"""Reading a config file's bytes and parsing its TOML or JSON text, bounded.

Everything that can go wrong between a path and a parsed table ends as a
:class:`~cortex_memory.errors.ConfigError` whose message starts with ``where``
(``"config file <path>: "`` for a file, empty for text): a path the system
cannot open, a folder, an unreadable or oversized file, text that is not
UTF-8, a syntax error, nesting deeper than the parser can follow, and inputs
that would make a parser work for minutes or fail with a raw ``ValueError``
(dotted keys thousands of parts deep, integers of thousands of digits).
No message quotes a value from the file.
"""

from __future__ import annotations

import codecs
import importlib
import json
import sys
from pathlib import Path
from typing import Any, Callable, Optional, Type

from cortex_memory.errors import ConfigError

__all__ = [
    "MAX_DIGITS",
    "MAX_FILE_BYTES",
    "MAX_KEY_PARTS",
    "parse_json",
    "parse_toml",
    "read_text",
    "toml",
]

# tomllib joined the standard library in 3.11; tomli is the same parser (and a
# runtime dependency below 3.11). Importing by name keeps the type checker,
# which targets 3.9, from needing tomli installed on a newer Python.
toml: Any = importlib.import_module("tomllib" if sys.version_info >= (3, 11) else "tomli")

#: Config files are a few hundred bytes; the cap keeps a wrong path (a log file,
#: a disk image) from being read into memory whole.
MAX_FILE_BYTES = 1024 * 1024
#: Most parts of one dotted TOML key (``a.b.c`` has three). The TOML parser takes
#: time quadratic in this number (8 000 parts: about ten seconds); a real config
#: uses two or three.
MAX_KEY_PARTS = 32
#: Most digits in one number. Python refuses to convert integers of more than
#: 4 300 digits with a bare ``ValueError`` (and converts long ones in quadratic
#: time where it has no limit); config values are never numbers that long.
MAX_DIGITS = 100

# Byte order marks of the encodings a text editor may save in instead of UTF-8.
_OTHER_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


def read_text(file: Path, where: str) -> str:
    """The UTF-8 text of ``file`` (a byte order mark is dropped), at most ``MAX_FILE_BYTES``."""
    if file.is_dir():  # Windows reports a folder as "permission denied"
        raise ConfigError(f"{where}is a folder, not a file")
    try:
        with file.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(f"{where}no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"{where}is a folder, not a file") from None
    except OSError as exc:
        raise ConfigError(f"{where}cannot be read: {exc.strerror or exc}") from exc
    except (ValueError, UnicodeError):
        # A NUL character, or a lone surrogate the file system cannot encode.
        raise ConfigError(f"{where}the path cannot name a file (it holds a NUL "
                          "character or text that cannot be encoded)") from None
    if len(raw) > MAX_FILE_BYTES:
        raise ConfigError(f"{where}larger than {MAX_FILE_BYTES} bytes; is it a config file?")
    for bom, name in _OTHER_BOMS:
        if raw.startswith(bom):
            raise ConfigError(f"{where}is {name} text; save it as UTF-8")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{where}not UTF-8 text (byte {exc.start} cannot be read)") from None


def parse_toml(text: str, where: str) -> Any:
    """Parse a TOML document after checking its shape stays within the bounds above."""
    if not isinstance(text, str):
        raise TypeError(f"TOML text must be a str, not {type(text).__name__}")
    problem = _toml_shape_problem(text)
    if problem is not None:
        raise ConfigError(f"{where}not valid TOML: {problem}")
    return _load("TOML", where, toml.loads, text, toml.TOMLDecodeError)


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_DIGITS:
        raise _TooLong()
    return int(digits)


class _TooLong(Exception):
    """Raised from inside ``json.loads`` for a number longer than ``MAX_DIGITS``."""


def parse_json(text: str, where: str) -> Any:
    """Parse a JSON document; numbers longer than ``MAX_DIGITS`` digits are refused."""
    if not isinstance(text, str):
        raise TypeError(f"JSON text must be a str, not {type(text).__name__}")
    return _load("JSON", where, _json_loads, text, json.JSONDecodeError)


def _json_loads(text: str) -> Any:
    return json.loads(text, parse_int=_bounded_int)


def _load(
    fmt: str,
    where: str,
    load: Callable[[str], Any],
    text: str,
    decode_error: Type[ValueError],
) -> Any:
    """``load(text)``, a failure turned into ``ConfigError("{where}not valid {fmt}: ...")``.

    The decoder's own message gives the line and column, never the value; any
    other ``ValueError`` is a value the parser could not convert, whose Python
    message may quote it, so it is not repeated.
    """
    try:
        return load(text)
    except _TooLong:
        problem = f"a number longer than {MAX_DIGITS} digits"
    except decode_error as exc:
        problem = str(exc)
    except RecursionError:
        problem = "nested too deeply"
    except ValueError:
        problem = "a value cannot be read"
    raise ConfigError(f"{where}not valid {fmt}: {problem}") from None


# ------------------------------------------------------------ the TOML scan

_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-")
_DIGITS = frozenset("0123456789_")
_BLANK = frozenset(" \t\r")


def _string_end(text: str, start: int) -> int:
    """The index just past the string that opens at ``start`` (or where it breaks off).

    Basic strings (``"``, ``\"\"\"``) honour backslash escapes; literal strings
    (``'``, ``'''``) have none. A one-line string stops at the end of its line
    and an unterminated one at the end of the text: the parser reports either.
    Each character is looked at once, so the scan stays linear.
    """
    quote = text[start]
    multi = text.startswith(quote * 3, start)
    delimiter = quote * 3 if multi else quote
    i = start + len(delimiter)
    n = len(text)
    if multi and quote == "'":
        end = text.find(delimiter, i)
        return n if end < 0 else end + len(delimiter)
    while i < n:
        ch = text[i]
        if ch == "\\" and quote == '"':
            i += 2
            continue
        if ch == quote and text.startswith(delimiter, i):
            return i + len(delimiter)
        if ch == "\n" and not multi:
            return i
        i += 1
    return n


def _toml_shape_problem(text: str) -> Optional[str]:
    """Why ``text`` must not reach the parser (too many key parts, too many digits), or None.

    One linear pass outside strings and comments: dots are counted while a
    key is being written (letters, digits, ``-``, ``_``, quoted parts, blanks
    and dots) and digits while a number is; anything else ends the run. A
    float or a date has one dot, so values never come near the bound.
    """
    dots = digits = 0
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"' or ch == "'":
            i = _string_end(text, i)
            digits = 0
            continue
        if ch == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if ch == ".":
            dots += 1
            digits = 0
            if dots >= MAX_KEY_PARTS:
                return f"a dotted key of more than {MAX_KEY_PARTS} parts"
        elif ch in _DIGITS:
            digits += 1
            if digits > MAX_DIGITS:
                return f"a number longer than {MAX_DIGITS} digits"
        elif ch in _KEY_CHARS:
            digits = 0
        elif ch not in _BLANK:
            dots = digits = 0
        i += 1
    return None
