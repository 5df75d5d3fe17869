"""Hostile input from the host's side: files and arguments nested past the parser's recursion.

A JSON document of 100 000 nested brackets is small (200 KB) but deeper than
Python's recursion limit; every place that parses input a user hands over must
refuse it with the documented error (or a usage message and a non-zero exit
status), never a ``RecursionError`` traceback.
"""

from __future__ import annotations

import io
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from cortex_memory import ConfigError, MemoryConfig
from cortex_memory.cli import main
from cortex_memory.testing import DirectDouble

NESTED = "[" * 100_000 + "]" * 100_000
NESTED_OBJECT = '{"a":' * 100_000 + "1" + "}" * 100_000


@pytest.mark.parametrize("text", [NESTED, NESTED_OBJECT], ids=["array", "object"])
def test_cli_item_file_nested_too_deep_is_refused_cleanly(tmp_path: Path, text: str) -> None:
    item = tmp_path / "item.json"
    item.write_text(text, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    status = main(
        ["--engine", "local", "--path", str(tmp_path / "m.sqlite3"), "store", "--item", str(item)],
        env={},
        stdout=out,
        stderr=err,
    )
    assert status != 0
    assert "not valid JSON" in err.getvalue()
    assert "Traceback" not in err.getvalue()


@pytest.mark.parametrize("text", [NESTED, NESTED_OBJECT], ids=["array", "object"])
def test_config_nested_too_deep_is_a_config_error(text: str) -> None:
    with pytest.raises(ConfigError):
        MemoryConfig.from_json(text)


def test_the_doubles_refuse_a_nested_body_and_keep_serving() -> None:
    with DirectDouble() as double:
        request = urllib.request.Request(
            double.url + "/v1/recall",
            data=NESTED.encode(),
            headers={"Content-Type": "application/json", "Authorization": "Bearer t"},
        )
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=10)
        assert caught.value.code == 400
        caught.value.close()
        # An event whose text only looks like a v2 envelope still yields a belief.
        body = {
            "scope": "app:tinymemory/app:learnings",
            "content": {"kind": "text", "text": NESTED_OBJECT},
            "context": {"labels": ["x"]},
        }
        with double.state.lock:
            double.state.log.append(
                body, indexed_at=0.0, allowed_scope_types=None, size_counts_role_prefix=True
            )
            built = double.state.log.build_beliefs("app:tinymemory/app:learnings", 0.0)
        assert built[0] == 1
