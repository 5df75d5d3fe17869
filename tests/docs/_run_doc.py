"""Run one document's examples in order and write what happened as JSON.

Used by ``test_doc_examples.py``, which starts it as
``python -W error _run_doc.py PLAN RESULTS`` in a scratch folder. The plan is a
list of steps in document order:

* ``{"id", "kind": "python", "code"}``: the block is written to a file and run
  with ``runpy.run_path(..., run_name="__main__")`` in one namespace shared by
  the document's blocks (so a later block can use an earlier block's names).
  A real file makes ``multiprocessing``'s ``spawn`` work: the child re-runs the
  block file as ``__mp_main__``. Its stdout is captured per block. A block that
  defines ``test_*`` functions (a page about writing tests) has them called, as
  pytest would, with a started ``direct_double`` / ``hosted_double`` for those
  parameters (the fixtures of ``cortex_memory.testing.pytest_plugin``).
* ``{"id", "kind": "shell", "commands": [{"line", "expect"}]}``: each command runs
  through ``/bin/sh -c``. With ``expect`` (a console block's shown output), the
  output must show those lines in order; a command still running once it has
  (a server) is interrupted with SIGINT, as a reader would, and must then exit 0.

Each step's outcome is recorded and the next step still runs, so one failure
does not hide the others. This file is not a test module (its name has no
``test_`` prefix); it needs nothing but the standard library.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import os
import re
import runpy
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

COMMAND_TIMEOUT = 120.0
"""Seconds a shell command may take (a server: until it shows its output)."""

_PLACEHOLDER = re.compile(r"<[a-z][a-z -]*>")


def expected_pattern(line: str) -> re.Pattern[str]:
    """A shown output line as a pattern: ``<placeholder>`` stands for any word."""
    parts = _PLACEHOLDER.split(line.strip())
    return re.compile(r"\S+".join(re.escape(part) for part in parts))


def shows_in_order(output: str, expect: List[str]) -> Optional[str]:
    """None when every expected line matches a later output line than the one before,
    else the first line that does not."""
    lines = output.splitlines()
    at = 0
    for wanted in expect:
        if not wanted.strip():
            continue
        pattern = expected_pattern(wanted)
        while at < len(lines) and not pattern.search(lines[at]):
            at += 1
        if at == len(lines):
            return wanted
        at += 1
    return None


def run_python(step: Dict[str, Any], namespace: Dict[str, Any], folder: Path) -> Dict[str, Any]:
    """Run one python block in the shared namespace; its outcome and stdout."""
    path = folder / f"_example_{step['id'].replace(':', '_').replace('.', '_')}.py"
    path.write_text(step["code"], encoding="utf-8")
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            result = runpy.run_path(str(path), init_globals=namespace, run_name="__main__")
            for name, value in result.items():
                if name.startswith("test_") and _defined_in(value, path):
                    call_test(value)
    except BaseException:
        return {"ok": False, "error": traceback.format_exc(limit=12), "output": out.getvalue()}
    namespace.update((name, value) for name, value in result.items() if not name.startswith("__"))
    return {"ok": True, "error": "", "output": out.getvalue()}


def _defined_in(value: object, path: Path) -> bool:
    code = getattr(value, "__code__", None)
    return callable(value) and code is not None and code.co_filename == str(path)


def call_test(test: Callable[..., object]) -> None:
    """Call a ``test_*`` function, giving it the doubles its parameters name."""
    from cortex_memory.testing import DirectDouble, HostedDouble

    fixtures = {"direct_double": DirectDouble, "hosted_double": HostedDouble}
    names = list(inspect.signature(test).parameters)
    unknown = [name for name in names if name not in fixtures]
    if unknown:
        raise TypeError(f"{test.__name__} asks for fixtures the runner lacks: {unknown}")
    with contextlib.ExitStack() as stack:
        args = [stack.enter_context(fixtures[name]()) for name in names]
        test(*args)


def _finish(process: subprocess.Popen[str], timeout: float) -> None:
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


def run_command(line: str, expect: Optional[List[str]]) -> Dict[str, Any]:
    """Run one shell command line; its status, output and whether it did what was shown."""
    # A simple command replaces the shell, so an interrupt reaches the program itself.
    script = line if re.search(r"[|;&]", line) else "exec " + line
    process = subprocess.Popen(
        ["/bin/sh", "-c", script],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        encoding="utf-8",
        errors="replace",
        start_new_session=True,
    )
    chunks: List[str] = []
    lock = threading.Lock()

    def pump() -> None:
        assert process.stdout is not None
        for text in process.stdout:
            with lock:
                chunks.append(text)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    deadline = time.monotonic() + COMMAND_TIMEOUT
    interrupted = False
    while process.poll() is None and time.monotonic() < deadline:
        if expect:
            with lock:
                seen = "".join(chunks)
            if shows_in_order(seen, expect) is None:
                # It showed what the document shows and keeps running: Ctrl-C.
                os.killpg(process.pid, signal.SIGINT)
                interrupted = True
                break
        time.sleep(0.05)
    if process.poll() is None and not interrupted:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)
        reader.join(10)
        return {
            "line": line,
            "ok": False,
            "status": None,
            "output": "".join(chunks),
            "error": f"still running after {COMMAND_TIMEOUT:g} s",
        }
    _finish(process, 20.0)
    reader.join(10)
    output = "".join(chunks)
    error = ""
    if process.returncode != 0:
        error = f"exit status {process.returncode}"
    elif expect:
        missing = shows_in_order(output, expect)
        if missing is not None:
            error = f"the output does not show {missing.strip()!r}"
    return {
        "line": line,
        "ok": not error,
        "status": process.returncode,
        "output": output,
        "error": error,
        "interrupted": interrupted,
    }


def run_shell(step: Dict[str, Any]) -> Dict[str, Any]:
    """Run a shell block's commands in order."""
    commands = [run_command(c["line"], c.get("expect")) for c in step["commands"]]
    return {
        "ok": all(c["ok"] for c in commands),
        "error": "; ".join(f"{c['line']!r}: {c['error']}" for c in commands if not c["ok"]),
        "output": "",
        "commands": commands,
    }


def main(argv: List[str]) -> int:
    """Run the plan in ``argv[1]`` and write the results to ``argv[2]``."""
    plan = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    folder = Path.cwd()
    namespace: Dict[str, Any] = {}
    results: Dict[str, Any] = {}
    for step in plan:
        if step["kind"] == "python":
            results[step["id"]] = run_python(step, namespace, folder)
        else:
            results[step["id"]] = run_shell(step)
        # Written after every step, so a hang still leaves the earlier outcomes.
        Path(argv[2]).write_text(json.dumps(results), encoding="utf-8")
    # An example must not leave work running: a thread it started and never joined
    # (a worker, a server) would keep a real program from exiting.
    time.sleep(0.2)  # let threads that are ending end
    left = [
        thread.name
        for thread in threading.enumerate()
        if thread is not threading.main_thread() and not thread.daemon and thread.is_alive()
    ]
    results["epilogue"] = {"threads": left}
    Path(argv[2]).write_text(json.dumps(results), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.stdout.flush()
    # Exit at once, even when an example left a thread running (reported above).
    os._exit(main(sys.argv))
