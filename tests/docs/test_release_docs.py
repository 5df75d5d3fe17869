"""The release documents agree with each other: CHANGELOG.md, the version, the metadata."""

from __future__ import annotations

import configparser
import re
from pathlib import Path
from typing import Dict, List, Tuple

import cortex_memory

ROOT = Path(__file__).resolve().parents[2]
CHANGELOG = ROOT / "CHANGELOG.md"
KINDS = ("Added", "Changed", "Deprecated", "Removed", "Fixed", "Security")  # Keep a Changelog

_RELEASE = re.compile(r"^## \[(\d+)\.(\d+)\.(\d+)\] - (\d{4})-(\d{2})-(\d{2})$")


def _metadata() -> configparser.ConfigParser:
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg", encoding="utf-8")
    return parser


def _sections() -> List[Tuple[str, List[str]]]:
    """``(heading, lines)`` for each ``## `` section of the changelog, in order."""
    sections: List[Tuple[str, List[str]]] = []
    for line in CHANGELOG.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            sections.append((line, []))
        elif sections:
            sections[-1][1].append(line)
    return sections


def test_the_changelog_keeps_the_format() -> None:
    text = CHANGELOG.read_text(encoding="utf-8")
    assert text.startswith("# Changelog\n")
    sections = _sections()
    assert sections[0][0] == "## [Unreleased]", "new entries go under Unreleased, at the top"
    versions: List[Tuple[int, int, int]] = []
    for heading, _ in sections[1:]:
        match = _RELEASE.match(heading)
        assert match, f"a release heading reads `## [x.y.z] - YYYY-MM-DD`: {heading!r}"
        versions.append((int(match.group(1)), int(match.group(2)), int(match.group(3))))
    assert versions == sorted(versions, reverse=True), "newest release first"
    assert len(set(versions)) == len(versions)
    for heading, lines in sections:
        kinds = [line[4:] for line in lines if line.startswith("### ")]
        assert set(kinds) <= set(KINDS), (heading, kinds)
        assert kinds == sorted(kinds, key=KINDS.index), f"{heading}: groups in the usual order"
        for line in lines:
            assert not line.startswith(("* ", "+ ")), f"{heading}: entries start with '- '"
    # Every version heading links somewhere (the reference list at the bottom).
    for heading, _ in sections:
        label = heading[3:].split(" - ")[0]
        assert re.search(rf"^{re.escape(label)}: https://\S+$", text, re.MULTILINE), label


def test_the_version_is_the_same_everywhere() -> None:
    version = _metadata()["metadata"]["version"]
    assert cortex_memory.__version__ == version
    released = {heading[4:].split("]")[0] for heading, _ in _sections()[1:]}
    assert version in released, f"CHANGELOG.md has no section for {version}"


def test_the_metadata_names_the_project_and_what_it_runs_on() -> None:
    metadata = _metadata()["metadata"]
    urls: Dict[str, str] = {}
    for line in metadata["project_urls"].strip().splitlines():
        name, _, url = line.partition("=")
        urls[name.strip()] = url.strip()
    assert set(urls) >= {"Homepage", "Documentation", "Changelog", "Issues"}
    assert urls["Homepage"] == "https://github.com/cortexdb/cortex-memory"
    assert all(url.startswith(urls["Homepage"] + "/") for name, url in urls.items()
               if name != "Homepage")  # fmt: skip
    assert urls["Changelog"].endswith("/CHANGELOG.md")
    classifiers = set(metadata["classifiers"].strip().splitlines())
    floor = _metadata()["options"]["python_requires"].strip()
    assert floor == ">=3.9"
    for minor in range(9, 14):
        assert f"Programming Language :: Python :: 3.{minor}" in classifiers
    assert "Typing :: Typed" in classifiers
    assert any(c.startswith("Development Status :: ") for c in classifiers)
    # PEP 639: the license is the `license` expression; a License classifier is refused
    # by newer setuptools.
    assert not any(c.startswith("License ::") for c in classifiers)


def test_the_docs_index_links_the_release_pages() -> None:
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    for target in ("(api.md)", "(versioning.md)", "(../CHANGELOG.md)"):
        assert target in index
