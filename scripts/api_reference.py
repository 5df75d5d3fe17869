"""Write docs/api.md, the API reference, from the docstrings of the public surface.

    python scripts/api_reference.py            # rewrite docs/api.md
    python scripts/api_reference.py --check    # exit 1 (and show a diff) if it is stale
    python scripts/api_reference.py --stdout   # print the page instead

The public surface is every name in ``__all__`` of :data:`PUBLIC_MODULES`. Each
object is documented once, under the first module that exports it; a later
module links to it. Classes list their public methods, properties, class
methods and enum members, including what they inherit from private bases.

The page must come out byte for byte the same on every supported Python
(3.9 to 3.13) and with any hash seed, because a test compares it with the
committed file on more than one. So nothing here prints an object the way a
Python version happens to: signatures are rendered from their parts (the
annotations are the source text, thanks to ``from __future__ import
annotations``), default values through :func:`_value`, sets sorted, and
docstrings cleaned with ``inspect.cleandoc`` (3.13 strips their indentation
at compile time, earlier versions do not).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import difflib
import enum
import importlib
import inspect
import re
import sys
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "api.md"
COMMAND = "python scripts/api_reference.py"

WIDTH = 88  # a signature longer than this gets one parameter a line

PUBLIC_MODULES: Tuple[str, ...] = (
    "cortex_memory",
    "cortex_memory.contract",
    "cortex_memory.cortex",
    "cortex_memory.local",
    "cortex_memory.config",
    "cortex_memory.errors",
    "cortex_memory.testing",
    "cortex_memory.tools",
)
"""The modules whose ``__all__`` is the documented surface, in page order."""

KINDS: Tuple[Tuple[str, str], ...] = (
    ("class", "Classes"),
    ("protocol", "Protocols"),
    ("enum", "Enums"),
    ("exception", "Exceptions and warnings"),
    ("function", "Functions"),
    ("constant", "Constants"),
    ("alias", "Type aliases"),
)
"""The groups of a module's section, in page order, by :func:`_kind`."""

_EMPTY = inspect.Parameter.empty


# -- what is documented, and where -------------------------------------------------------------


@dataclasses.dataclass
class Entry:
    """One documented public name: the object, the module that exports it first, its anchor."""

    name: str
    obj: Any
    module: str
    home: str  # the module that defines it (or, for a constant, assigns it)
    anchor: str = ""


def _defining_module(module: str, name: str) -> str:
    """Where ``module.name`` is assigned, following ``from x import name`` in the source."""
    for _ in range(10):  # re-exports are at most a few hops deep
        tree = ast.parse(_source(module))
        follow: Optional[str] = None
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    if (alias.asname or alias.name) == name:
                        follow, name = node.module, alias.name
            elif _assigns(node, name):
                return module
        if follow is None:
            return module
        module = follow
    return module


def _source(module: str) -> str:
    file = getattr(importlib.import_module(module), "__file__", None)
    return Path(file).read_text(encoding="utf-8") if file else ""


def _assigns(node: ast.stmt, name: str) -> bool:
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
    if isinstance(node, ast.AnnAssign):
        return isinstance(node.target, ast.Name) and node.target.id == name
    return False


def _constant_doc(module: str, name: str) -> str:
    """A constant's docstring: a string right after its assignment, or ``#:`` lines before it."""
    source = _source(module)
    tree = ast.parse(source)
    lines = source.splitlines()
    for index, node in enumerate(tree.body):
        if not _assigns(node, name):
            continue
        after = tree.body[index + 1] if index + 1 < len(tree.body) else None
        if (
            isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            return inspect.cleandoc(after.value.value)
        comments: List[str] = []
        row = node.lineno - 2
        while row >= 0 and lines[row].lstrip().startswith("#:"):
            comments.insert(0, lines[row].lstrip()[2:].strip())
            row -= 1
        return " ".join(comments)
    return ""


def collect() -> Tuple[List[Entry], Dict[Tuple[str, str], Entry]]:
    """Every documented name once, in page order; and the entry of each ``(module, name)``."""
    entries: List[Entry] = []
    exports: Dict[Tuple[str, str], Entry] = {}
    seen: Dict[Any, Entry] = {}
    for module in PUBLIC_MODULES:
        exported = importlib.import_module(module)
        for name in exported.__all__:
            obj = getattr(exported, name)
            if inspect.isfunction(obj) or (inspect.isclass(obj) and obj.__module__ != "builtins"):
                home, key = obj.__module__, id(obj)
            else:  # a constant or an alias: the same when assigned in the same place (two
                home = _defining_module(module, name)  # equal strings may be one object)
                key = (home, name)
            if key not in seen:
                seen[key] = Entry(name, obj, module, home)
                entries.append(seen[key])
            exports[(module, name)] = seen[key]
    return entries, exports


# -- rendering values, annotations and signatures ----------------------------------------------


def _value(value: Any) -> str:
    """A default or constant value as the same text on every Python version."""
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return repr(value)
    if isinstance(value, tuple):
        inner = ", ".join(_value(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, (set, frozenset)):
        items = sorted(_value(v) for v in value)
        body = "{" + ", ".join(items) + "}"
        return body if isinstance(value, set) and items else f"{type(value).__name__}({body})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_value(k)}: {_value(v)}" for k, v in value.items()) + "}"
    if inspect.isclass(value) or inspect.isfunction(value) or inspect.ismethod(value):
        return str(value.__qualname__)
    text = repr(value)
    if text == "<factory>":  # a dataclass field with a default_factory
        return "<factory>"
    if " at 0x" in text or len(text) > 80:  # an address, or a value too long to help
        return f"<{type(value).__name__}>"
    return text


def _annotation(annotation: Any) -> str:
    if isinstance(annotation, str):
        return " ".join(annotation.split())
    if annotation is None or annotation is type(None):
        return "None"
    if inspect.isclass(annotation):
        return str(annotation.__qualname__)
    # Only reached for a module without `from __future__ import annotations`:
    # typing's reprs differ between versions, so drop the prefix they all share.
    return repr(annotation).replace("typing.", "")


def _parameters(signature: inspect.Signature, drop_first: bool) -> str:
    params = list(signature.parameters.values())
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if drop_first and params and params[0].kind in positional:
        params = params[1:]  # self or cls
    parts: List[str] = []
    slash_after = -1
    star_done = False
    for index, param in enumerate(params):
        if param.kind is inspect.Parameter.POSITIONAL_ONLY:
            slash_after = index
        if param.kind is inspect.Parameter.KEYWORD_ONLY and not star_done:
            parts.append("*")
            star_done = True
        text = param.name
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            text, star_done = "*" + text, True
        elif param.kind is inspect.Parameter.VAR_KEYWORD:
            text = "**" + text
        if param.annotation is not _EMPTY:
            text += ": " + _annotation(param.annotation)
        if param.default is not _EMPTY:
            joiner = " = " if param.annotation is not _EMPTY else "="
            text += joiner + _value(param.default)
        parts.append(text)
    if slash_after >= 0:
        parts.insert(slash_after + 1, "/")
    return ", ".join(parts)


def _signature(
    function: Any, name: str, *, drop_first: bool, returns: bool = True, wrap: bool = True
) -> str:
    """``name(params) -> returns``; one parameter a line past :data:`WIDTH` when ``wrap``."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return f"{name}(...)"
    parameters = _parameters(signature, drop_first)
    tail = ""
    if returns and signature.return_annotation is not _EMPTY:
        tail = " -> " + _annotation(signature.return_annotation)
    text = f"{name}({parameters}){tail}"
    if not wrap or len(text) <= WIDTH or not parameters:
        return text
    lines = [f"{name}("] + [f"    {part}," for part in _split(parameters)] + [f"){tail}"]
    return "\n".join(lines)


def _split(parameters: str) -> List[str]:
    """Parameters split at the commas between them (not those inside brackets or quotes)."""
    parts: List[str] = []
    depth, start, quote = 0, 0, ""
    for index, char in enumerate(parameters):
        if quote:
            quote = "" if char == quote and parameters[index - 1] != "\\" else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(parameters[start:index].strip())
            start = index + 1
    parts.append(parameters[start:].strip())
    return parts


def _constructor(cls: type) -> Optional[str]:
    """``Name(params)`` from the nearest ``__init__`` (or ``__new__``) of our own or None."""
    if issubclass(cls, enum.Enum) or getattr(cls, "_is_protocol", False):
        return None
    for klass in cls.__mro__:
        if klass is object:
            return None
        for method in ("__init__", "__new__"):
            function = vars(klass).get(method)
            if function is None:
                continue
            if isinstance(function, staticmethod):
                function = function.__func__
            if not inspect.isfunction(function):  # a C slot (Exception, tuple, str): generic
                return None
            return _signature(function, cls.__name__, drop_first=True, returns=False)
    return None


# -- rendering docstrings ----------------------------------------------------------------------

# :class:`Name`, :meth:`~module.Class.method` (shown as `method`), :func:`text <target>`.
_ROLE = re.compile(
    r":(?:py:)?(?:class|func|meth|attr|data|mod|exc|obj|const):`(~?)([^`<]+?)(?:\s*<([^>]+)>)?`"
)
_DOUBLE = re.compile(r"``(.+?)``", re.DOTALL)
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def _markdown(doc: str, names: Dict[str, str]) -> str:
    """A cleaned docstring as Markdown: reST roles and literals as code, ``::`` blocks fenced."""
    out: List[str] = []
    lines = _DOUBLE.sub(_literal, doc).splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        literal_next = line.rstrip().endswith("::")
        if literal_next:
            line = line.rstrip()[:-2].rstrip()
            line = line + ":" if line else ""
        if line or not literal_next:
            out.append(_inline(line, names))
        index += 1
        if not literal_next:
            continue
        while index < len(lines) and not lines[index].strip():
            index += 1
        block: List[str] = []
        while index < len(lines) and (not lines[index].strip() or lines[index][:1].isspace()):
            block.append(lines[index])
            index += 1
        while block and not block[-1].strip():
            block.pop()
        if block:
            out += ["", "```text", *_dedent(block), "```", ""]
    text = "\n".join(out).strip("\n")
    return re.sub(r"\n{3,}", "\n\n", text)


def _literal(match: re.Match[str]) -> str:
    """A reST ``literal`` as a Markdown code span (a wider fence when it holds a backtick)."""
    inner = match.group(1)
    return f"`` {inner} ``" if "`" in inner else f"`{inner}`"


def _dedent(lines: List[str]) -> List[str]:
    width = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
    return [line[width:] for line in lines]


def _inline(line: str, names: Dict[str, str]) -> str:
    def role(match: re.Match[str]) -> str:
        tilde, written, explicit = match.group(1), match.group(2).strip(), match.group(3)
        target = (explicit or written).strip()
        shown = target.split(".")[-1] if tilde and not explicit else written
        anchor = names.get(target.split(".")[-1])  # a documented name links to its entry
        return f"[`{shown}`](#{anchor})" if anchor else f"`{shown}`"

    line = _ROLE.sub(role, line)
    if line.lstrip().startswith("#"):
        line = line.replace("#", "\\#", 1)
    # `<word>` outside code spans would be read as an HTML tag and vanish.
    rebuilt: List[str] = []
    position = 0
    for match in _CODE_SPAN.finditer(line):
        rebuilt.append(line[position : match.start()].replace("<", "&lt;"))
        rebuilt.append(match.group(0))
        position = match.end()
    rebuilt.append(line[position:].replace("<", "&lt;"))
    return "".join(rebuilt)


def _doc(obj: Any) -> str:
    doc = getattr(obj, "__doc__", None)
    return inspect.cleandoc(doc) if isinstance(doc, str) else ""


def _summary(doc: str) -> str:
    return doc.split("\n\n", 1)[0].replace("\n", " ").strip()


# -- members of a class ------------------------------------------------------------------------


@dataclasses.dataclass
class Member:
    """One public attribute of a documented class, rendered."""

    heading: str
    doc: str


def _fields(cls: type) -> List[str]:
    if dataclasses.is_dataclass(cls):
        return [f.name for f in dataclasses.fields(cls)]
    return list(getattr(cls, "_fields", ()))


def _inherited_doc(cls: type, name: str) -> str:
    for klass in cls.__mro__:
        attribute = vars(klass).get(name)
        if attribute is None:
            continue
        if isinstance(attribute, (classmethod, staticmethod)):
            attribute = attribute.__func__
        if isinstance(attribute, property):
            attribute = attribute.fget
        doc = _doc(attribute) if callable(attribute) else ""
        if doc:
            return doc
    return ""


def _owners(cls: type, documented: Sequence[type]) -> Iterator[type]:
    """The class and its private bases from this package (their members are shown here)."""
    for klass in cls.__mro__:
        ours = klass.__module__.split(".")[0] == "cortex_memory"
        if klass is cls or (ours and klass not in documented):
            yield klass


def members(cls: type, documented: Sequence[type]) -> List[Member]:
    """The public methods, properties, class attributes and enum members of ``cls``."""
    out: List[Member] = []
    if issubclass(cls, enum.Enum):
        for member in cls:
            out.append(Member(f"{member.name} = {_value(member.value)}", ""))
    skip = set(_fields(cls))
    seen: set = set()
    for klass in _owners(cls, documented):
        for name, attribute in vars(klass).items():
            if name.startswith("_") or name in skip or name in seen:
                continue
            if issubclass(cls, enum.Enum) and name in cls.__members__:
                continue
            seen.add(name)
            out.append(_member(cls, name, attribute))
    return out


def _member(cls: type, name: str, attribute: Any) -> Member:
    doc = _inherited_doc(cls, name)
    if isinstance(attribute, property):
        if not inspect.isfunction(attribute.fget):  # a C getter (WireEnum.value): its doc
            return Member(f"property {name}", "")  # is the getter's, not this attribute's
        annotation = inspect.signature(attribute.fget).return_annotation
        shown = f": {_annotation(annotation)}" if annotation is not _EMPTY else ""
        return Member(f"property {name}{shown}", doc)
    # One line each, however long: inline code wraps where the reader's window does.
    if isinstance(attribute, classmethod):
        shown = _signature(attribute.__func__, name, drop_first=True, wrap=False)
        return Member("classmethod " + shown, doc)
    if isinstance(attribute, staticmethod):
        shown = _signature(attribute.__func__, name, drop_first=False, wrap=False)
        return Member("staticmethod " + shown, doc)
    if inspect.isfunction(attribute):
        return Member(_signature(attribute, name, drop_first=True, wrap=False), doc)
    if inspect.isclass(attribute) or callable(attribute):
        text = getattr(attribute, "__doc__", None) or ""
        return Member(f"{name}", inspect.cleandoc(text) if text else "")
    if hasattr(attribute, "__get__") and not isinstance(attribute, (str, int, float, tuple)):
        return Member(f"attribute {name}", doc)  # a C getter (a slot or WireEnum.value)
    return Member(f"{name} = {_value(attribute)}", "")


# -- the page ----------------------------------------------------------------------------------


def _kind(entry: Entry) -> str:
    obj = entry.obj
    if inspect.isclass(obj):
        if obj.__name__ != entry.name or obj.__module__ == "builtins":
            return "alias"
        if issubclass(obj, BaseException):
            return "exception"
        if issubclass(obj, enum.Enum):
            return "enum"
        if getattr(obj, "_is_protocol", False):
            return "protocol"
        return "class"
    if inspect.isfunction(obj):
        return "function"
    return "constant"


def _slug(text: str) -> str:
    """GitHub's anchor for a heading (the docs test resolves links the same way)."""
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def _entry_doc(entry: Entry) -> str:
    kind = _kind(entry)
    if kind == "constant":
        return _constant_doc(entry.home, entry.name)
    if kind == "alias":
        return _constant_doc(entry.home, entry.name) or f"An alias of `{entry.obj.__name__}`."
    return _doc(entry.obj)


def _bases(cls: type, links: Dict[str, str]) -> List[str]:
    shown: List[str] = []
    for base in cls.__bases__:
        if base is object or base.__name__ in ("Generic", "Protocol"):
            continue
        if base.__module__.split(".")[0] == "cortex_memory" and base.__name__ not in links:
            shown += _bases(base, links)  # a private base: show what it stands on
            continue
        if base.__name__ in links:
            shown.append(f"[`{base.__name__}`](#{links[base.__name__]})")
        elif base.__module__ == "builtins":
            shown.append(f"`{base.__name__}`")
        else:
            shown.append(f"`{base.__module__}.{base.__qualname__}`")
    return list(dict.fromkeys(shown))


def render() -> str:
    """The whole page, as the committed docs/api.md must read."""
    entries, exports = collect()
    used: Dict[str, int] = {}
    lines: List[str] = []

    def heading(level: int, text: str) -> str:
        slug = _slug(text)
        count = used.get(slug, 0)
        used[slug] = count + 1
        lines.extend([f"{'#' * level} {text}", ""])
        return slug if count == 0 else f"{slug}-{count}"

    # Anchors first (the headings below are made in the same order), so docstrings can link.
    anchors: Dict[str, str] = {}
    for entry in entries:
        slug = _slug(f"`{entry.name}`")
        entry.anchor = slug
        anchors.setdefault(entry.name, slug)
    documented = [e.obj for e in entries if inspect.isclass(e.obj)]

    heading(1, "API reference")
    lines += [
        "<!-- Generated from the docstrings by scripts/api_reference.py: do not edit by hand. -->",
        "",
        "Every public name of `cortex_memory`, from its docstring. This page is generated: after",
        "changing the public surface or a docstring, regenerate it from the repository root with",
        "",
        "<!-- not-run: rewrites this page -->",
        "```sh",
        COMMAND,
        "```",
        "",
        "(any Python 3.9+ that can import the package; the test suite fails while the committed",
        "page differs from what the script writes). What counts as public API, and how it may",
        "change, is in [versioning.md](versioning.md).",
        "",
        "The public names live in " + ", ".join(f"`{m}`" for m in PUBLIC_MODULES) + ": "
        "each is documented once, where it is first exported, and listed again with a link "
        "where it is re-exported.",
        "",
        "The top level, `cortex_memory`, holds what an application writes in its own code: the",
        "engines, the types of the contract's method signatures and what it takes to build them,",
        "the errors and warnings, configuration, the registry and the credential. Everything else",
        "(limits and tags, the parts of items and results, id helpers, wires, timings, descriptor",
        "functions) is in its submodule; [versioning.md](versioning.md#what-the-top-level-holds)",
        "says where the line is and why. The names that left the top level in 0.2.0 are not",
        "listed under it: they keep working there, with a `DeprecationWarning` naming their new",
        "import path, until 0.3.0.",
        "",
    ]
    for module in PUBLIC_MODULES:
        exported = importlib.import_module(module)
        heading(2, f"`{module}`")
        lines += [_markdown(_summary(_doc(exported)), anchors), ""]
        here = [e for e in entries if e.module == module]
        lines += ["| name | kind | summary |", "|---|---|---|"]
        for name in exported.__all__:
            target = exports[(module, name)]
            summary = _summary(_markdown(_entry_doc(target), anchors)).replace("|", "\\|")
            where = "" if target.module == module else f" (see `{target.module}`)"
            lines.append(f"| [`{name}`](#{target.anchor}) | {_kind(target)}{where} | {summary} |")
        lines.append("")
        # Grouped by kind, not by the module that defines a name: users import from
        # the public module, and the private layout behind it may change freely.
        for kind, title in KINDS:
            group = [e for e in here if _kind(e) == kind]
            if not group:
                continue
            heading(3, f"{title} in `{module}`")
            for entry in group:
                _render_entry(entry, heading, lines, anchors, documented)
    return "\n".join(lines).rstrip("\n") + "\n"


def _render_entry(
    entry: Entry,
    heading: Callable[[int, str], str],
    lines: List[str],
    anchors: Dict[str, str],
    documented: Sequence[type],
) -> None:
    made = heading(4, f"`{entry.name}`")
    if made != entry.anchor:  # two names that slug alike: every link to the second breaks
        raise RuntimeError(f"anchor {made!r} was expected to be {entry.anchor!r}")
    kind = _kind(entry)
    obj = entry.obj
    if kind == "function":
        shown = _signature(obj, entry.name, drop_first=False)
    elif kind == "constant":
        shown = f"{entry.name}: {type(obj).__name__} = {_value(obj)}"
    elif kind == "alias":
        shown = f"{entry.name} = {obj.__name__}"
    else:
        shown = f"{kind} " + (_constructor(obj) or entry.name)
    lines += ["```text", shown, "```", ""]
    if inspect.isclass(obj) and kind != "alias":
        bases = _bases(obj, anchors)
        if bases:
            lines += ["Bases: " + ", ".join(bases), ""]
    doc = _entry_doc(entry)
    lines += [_markdown(doc, anchors) if doc else "*(no docstring)*", ""]
    if not inspect.isclass(obj) or kind == "alias":
        return
    listed = members(obj, documented)
    if not listed:
        return
    lines += ["Members:", ""]
    for member in listed:
        lines.append(f"- `{member.heading}`")
        if member.doc:
            body = _markdown(member.doc, anchors)
            lines += ["", *("  " + line if line else "" for line in body.splitlines()), ""]
    if lines[-1] != "":
        lines.append("")


def missing_docstrings() -> List[str]:
    """Public classes, functions and methods without a docstring (the brief asks for one each)."""
    missing: List[str] = []
    entries, _ = collect()
    documented = [e.obj for e in entries if inspect.isclass(e.obj)]
    for entry in entries:
        if not _entry_doc(entry) or _entry_doc(entry).startswith("An alias of"):
            missing.append(f"{entry.module}.{entry.name}")
        if inspect.isclass(entry.obj):
            for member in members(entry.obj, documented):
                plain = member.heading.split(" = ")[0]
                if not member.doc and "(" in plain:
                    missing.append(f"{entry.module}.{entry.name}: {member.heading}")
    return missing


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="Write docs/api.md from the docstrings.")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 if docs/api.md is stale")
    mode.add_argument("--stdout", action="store_true", help="print the page, write nothing")
    args = parser.parse_args(argv)
    page = render()
    if args.stdout:
        sys.stdout.write(page)
        return 0
    if args.check:
        committed = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
        if committed == page:
            return 0
        diff = difflib.unified_diff(
            committed.splitlines(True), page.splitlines(True), "docs/api.md (committed)",
            "docs/api.md (generated now)", n=1,
        )  # fmt: skip
        sys.stdout.writelines(list(diff)[:200])
        print(f"\ndocs/api.md is stale: regenerate it with `{COMMAND}`", file=sys.stderr)
        return 1
    with open(PAGE, "w", encoding="utf-8", newline="\n") as out:  # "\n" on Windows too
        out.write(page)
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))  # document this checkout, whatever else is installed
    sys.exit(main())
