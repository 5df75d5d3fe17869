"""Canary secrets and canary local paths through every public operation (quality.md "Secrets").

Both CortexDB wires (built through every public constructor) and the local
engine run every public operation, on success and on every kind of failure,
with a canary bearer token, canary memory content and items carrying canary
absolute paths (seed 003). Logging is captured at DEBUG on the root logger by
the folder's ``conftest.py``. Asserted here: no exception (message, ``str``,
``repr``, causes) and no returned object's ``str``/``repr`` holds the token; no
request line, URL, body or header other than ``Authorization`` holds it; no
request holds a folder or absolute path, only ``file:<name>`` labels; reads
give back file names, never folders; and (conftest) no log record holds the
token or a path, and memory content never appears in a record above DEBUG.
"""

from __future__ import annotations

import copy
import logging
import traceback
from pathlib import Path
from typing import Any, Callable, List, Tuple

import pytest

from cortex_memory import (
    BeliefsRequest,
    ConsolidateRequest,
    EngineCredential,
    EngineSettings,
    EraseRequest,
    Error,
    ExploreRequest,
    Facet,
    FetchMode,
    FetchRequest,
    ForgetTarget,
    GetRequest,
    ListRequest,
    LocalEngine,
    MemoryConfig,
    MemoryEngine,
    MetaFilter,
    Reach,
    RecallRequest,
    WaitFor,
    build_engine,
)
from cortex_memory.contract import Consolidation
from cortex_memory.cortex import CortexEngine, StaticBearer, Timing
from cortex_memory.testing import (
    KNOB_DEFAULTS,
    DirectDouble,
    HostedDouble,
    HostileServer,
    fault,
    unused_url,
)

from ._support import (
    CANARY_CONTENT,
    CANARY_PATHS,
    CANARY_TOKEN,
    PATH_FRAGMENTS,
    check_requests,
    new_items,
)
from .conftest import CanaryWatch

FAST = Timing(
    request_timeout=0.3,
    connect_timeout=0.3,
    read_backoff=0.005,
    poll_interval=0.005,
    visibility=0.5,
    settle=0.2,
    recovery=0.5,
    max_pause=0.05,
)
ROOT = Reach.default()
FILE_NAMES = ("file.md", "x.txt", "plan.md")


class Sweep:
    """Runs calls, keeping the text of every result and every error for the checks."""

    def __init__(self) -> None:
        self.texts: List[str] = []
        self.errors: List[Error] = []
        self.results: List[Any] = []

    def run(self, call: Callable[[], Any]) -> Any:
        try:
            value = call()
        except Error as err:
            self.errors.append(err)
            self.texts += [str(err), repr(err), err.message]
            cause: Any = err.__cause__ or err.__context__
            while cause is not None:
                self.texts += [str(cause), repr(cause)]
                cause = cause.__cause__ or cause.__context__
            return err
        self.results.append(value)
        self.texts += [str(value), repr(value)]
        return value

    def leaks(self, *needles: str) -> List[str]:
        return [t[:160] for t in self.texts for n in needles if n in t]


def every_operation(engine: MemoryEngine, sweep: Sweep) -> None:
    """Each public operation of the contract, once, with canary items."""
    items = new_items()
    ids = tuple(item.fingerprint() for item in items)
    folder = MetaFilter(folder="/home/canary-user/secret-project")
    run = sweep.run
    run(engine.descriptor)
    run(engine.health)
    run(lambda: engine.store(items[0]))
    run(lambda: engine.store_many(items))
    run(lambda: engine.store(items[1], wait=WaitFor.ACCEPTED))
    run(lambda: engine.list(ListRequest(MetaFilter(), 10)))
    run(lambda: engine.list(ListRequest(folder, 10)))
    run(lambda: engine.list_preview(ListRequest(MetaFilter(file_path=CANARY_PATHS[0]), 10)))
    run(lambda: engine.get(GetRequest(ids)))
    run(lambda: engine.fetch(FetchRequest(f"green tea {CANARY_CONTENT}", FetchMode.HYBRID, 5)))
    run(lambda: engine.fetch(FetchRequest("tea", FetchMode.HYBRID, 5, folder, beliefs=2)))
    run(lambda: engine.recall(RecallRequest(f"how hot is tea {CANARY_CONTENT}", 3)))
    run(lambda: engine.recall(RecallRequest("tea", 3, folder, instructions=CANARY_CONTENT)))
    run(lambda: engine.explore(ExploreRequest(Facet.KIND, 10)))
    run(lambda: engine.explore(ExploreRequest(Facet.WORKSPACE, 10, folder)))
    run(lambda: engine.explore(ExploreRequest(Facet.FOLDER, 10)))
    run(lambda: engine.explore(ExploreRequest(Facet.FILE_PATH, 10)))
    run(lambda: engine.consolidate(ConsolidateRequest(ROOT)))
    run(lambda: engine.beliefs(BeliefsRequest(ROOT, 5)))
    run(lambda: engine.beliefs(BeliefsRequest(ROOT, 5, f"tea {CANARY_CONTENT}")))
    run(lambda: engine.export(ListRequest(MetaFilter(), 5)))
    run(lambda: engine.erase(EraseRequest.new(ROOT)))
    run(lambda: engine.forget_within(ids[:1], ROOT))
    run(lambda: engine.forget(ForgetTarget.filter(folder)))
    run(lambda: engine.forget(ForgetTarget.ids(ids)))
    run(lambda: engine.store_many(items))  # again, after forgetting: written anew


def cortex_engines(url: str, hosted: bool) -> List[Tuple[str, Any]]:
    """The same endpoint through every public constructor, with the canary token."""
    settings = EngineSettings(endpoint=url)
    static = EngineCredential.static(CANARY_TOKEN)
    if hosted:
        source = StaticBearer(CANARY_TOKEN)
        config = MemoryConfig("tinyhumans", {"tinyhumans": settings})
        return [
            ("tinyhumans()", CortexEngine.tinyhumans(url, source, timing=FAST)),
            (
                "build_engine",
                build_engine("tinyhumans", settings, EngineCredential.dynamic(source)),
            ),
            ("MemoryConfig.build", config.build(static)),
        ]
    dynamic = EngineCredential.dynamic(StaticBearer(CANARY_TOKEN))
    config = MemoryConfig("cortexdb", {"cortexdb": settings})
    return [
        ("direct()", CortexEngine.direct(url, EngineCredential.static(CANARY_TOKEN), timing=FAST)),
        ("direct(dynamic)", CortexEngine.direct(url, dynamic, timing=FAST)),
        ("build_engine", build_engine("cortexdb", settings, static)),
        ("MemoryConfig.build", config.build(static)),
    ]


FAILURES: List[Tuple[str, Any]] = [
    ("fail_all", (401, "UNAUTHORIZED")),
    ("fail_all", (402, "USER_INSUFFICIENT_CREDITS", "top up the account")),
    ("fail_all", (500, "INTERNAL")),
    ("fail_all", (422, "VALIDATION_ERROR")),
    ("accept_token", "someone-else"),
    ("truncate_body", 3),
    ("malformed_json", True),
    ("drop_connection_after_bytes", 5),
    ("reset_after", "request"),
    ("apply_then_fail", 1),
    ("claim_then_fail", 1),
    ("hide_listing_for", 2),
]


@pytest.mark.parametrize("hosted", [False, True], ids=["direct", "hosted"])
def test_cortex_engines_never_leak_the_token_or_a_path(hosted: bool, canary_watch: Any) -> None:
    sweep = Sweep()
    double = (HostedDouble(rate_limit_requests=None) if hosted else DirectDouble()).start()
    try:
        for n, (name, built) in enumerate(cortex_engines(double.url, hosted)):
            engine = built.with_timing(FAST)  # the registry's engines keep production timings
            sweep.texts += [repr(built), str(built), repr(copy.copy(engine))]
            every_operation(engine, sweep)
            clones = [
                engine.with_default_headers({"x-sdk-name": "canary-test"}),
                engine.with_consolidation(
                    Consolidation.SCHEDULED if hosted else Consolidation.AUTOMATIC
                ),
            ]
            sweep.texts += [repr(clone) for clone in clones]
            sweep.run(lambda clone=clones[0]: clone.list(ListRequest(MetaFilter(), 5)))
            if n == 0:  # every failure once per wire, through the first constructor
                for knob, value in FAILURES:
                    double.state.set_knobs(**{knob: value})
                    every_operation(engine, sweep)
                    double.state.set_knobs(**{knob: KNOB_DEFAULTS[knob]})
                for route in ("GET /v1/events", "GET /memory/events", "POST /v1/recall"):
                    double.state.truncate_body = fault(2, times=1, route=route)
                    every_operation(engine, sweep)
                double.state.truncate_body = None
                assert sweep.errors, name
            engine.close()
        problems = check_requests(double.state)
        with double.state.lock:
            auth = set(double.state.seen.auth)
            labels = b"\n".join(double.state.seen.bodies)
    finally:
        double.close()
    assert problems == []
    assert auth == {f"Bearer {CANARY_TOKEN}"}
    for name in FILE_NAMES:  # the file's name does leave, as its readable label
        assert f"file:{name}".encode() in labels
    assert sweep.leaks(CANARY_TOKEN) == []
    # Reads give back the file's name, never its folder or an absolute workspace.
    assert sweep.leaks(*PATH_FRAGMENTS) == []
    assert len(sweep.errors) > 50
    assert canary_watch.seen > 100  # the watch really saw the run's records


@pytest.mark.parametrize(
    "bad",
    [
        CANARY_TOKEN + "\r\nX-Injected: 1",
        CANARY_TOKEN[:9] + "\n" + CANARY_TOKEN[9:],
        "\x00" + CANARY_TOKEN,
        CANARY_TOKEN + "\x7f",
        CANARY_TOKEN + " é",
    ],
    ids=["crlf", "lf", "nul", "del", "non-ascii"],
)
def test_refused_tokens_send_nothing_and_are_never_echoed(bad: str) -> None:
    sweep = Sweep()
    with DirectDouble() as direct, HostedDouble(rate_limit_requests=None) as hosted:
        engines = [
            CortexEngine.direct(direct.url, EngineCredential.static(bad), timing=FAST),
            CortexEngine.tinyhumans(hosted.url, StaticBearer(bad), timing=FAST),
        ]
        for engine in engines:
            every_operation(engine, sweep)
            engine.close()
        assert direct.state.requests() == []
        assert hosted.state.requests() == []
    assert len(sweep.errors) >= 25
    assert sweep.leaks(CANARY_TOKEN, CANARY_TOKEN[4:20]) == []


def test_unreachable_slow_and_refused_endpoints_never_echo_the_token() -> None:
    sweep = Sweep()
    with HostileServer("slow_headers", interval=0.2) as slow:
        for url in (unused_url(), slow.url):
            engine = CortexEngine.direct(url, EngineCredential.static(CANARY_TOKEN), timing=FAST)
            turn = new_items()[1]
            if url != slow.url:  # a read on the slow server only repeats the same timeouts
                get = GetRequest((turn.fingerprint(),), ROOT)
                sweep.run(lambda e=engine, g=get: e.get(g))
            sweep.run(lambda e=engine, t=turn: e.store(t, wait=WaitFor.ACCEPTED))
            sweep.texts.append(str(engine.health()))
            engine.close()
    for endpoint in ("http://evil.example.com", f"http://u:{CANARY_TOKEN}@127.0.0.1:9"):
        credential = EngineCredential.static(CANARY_TOKEN)
        sweep.run(
            lambda e=endpoint, c=credential: build_engine("cortexdb", EngineSettings(endpoint=e), c)
        )
    assert len(sweep.errors) == 5
    assert sweep.leaks(CANARY_TOKEN, CANARY_TOKEN[4:20]) == []


def test_the_local_engine_keeps_content_and_paths_out_of_its_logs(tmp_path: Path) -> None:
    sweep = Sweep()
    shown: List[str] = []
    for engine in (
        LocalEngine(tmp_path / "mem.sqlite3"),
        build_engine("local", EngineSettings(path=str(tmp_path / "built.sqlite3"))),
        MemoryConfig("local", {"local": EngineSettings(path=":memory:")}).build(),
    ):
        shown += [repr(engine), str(engine)]
        every_operation(engine, sweep)
        sweep.run(lambda engine=engine: engine.list(ListRequest(MetaFilter(), 5, "k-bogus")))
        engine.close()
    # The local engine keeps full paths (they never leave the machine) and returns them;
    # its reprs do not show item data, and no log record holds any (conftest watch).
    assert [text for text in shown if "canary" in text or CANARY_CONTENT in text] == []
    assert len(sweep.errors) >= 3  # the bogus cursor, at least
    assert len(sweep.results) > 60


def test_the_watch_catches_each_kind_of_leak() -> None:
    # The conftest handler itself, fed records directly (not through the root logger,
    # so this test's own watch stays clean).
    watch = CanaryWatch()
    logger = logging.getLogger("cortex_memory.reliability.selftest")

    def emit(level: int, message: str, *args: object) -> None:
        watch.handle(logger.makeRecord(logger.name, level, __file__, 1, message, args, None))

    emit(logging.DEBUG, "stored %r", CANARY_CONTENT)  # content at DEBUG is allowed
    emit(logging.INFO, "listing %d items", 3)
    assert watch.leaks == []
    emit(logging.DEBUG, "bearer %s", CANARY_TOKEN)
    emit(logging.DEBUG, "path %s", CANARY_PATHS[0])
    emit(logging.WARNING, "stored %r", CANARY_CONTENT)
    kinds = ["the canary token", "local path", "memory content above DEBUG"]
    assert [any(kind in leak for leak in watch.leaks) for kind in kinds] == [True, True, True]
    assert watch.seen == 5


# -- servers that echo the token back (issue 13 item 3) ------------------------------------


def _every_text(err: BaseException) -> List[str]:
    """What an error can show: str, repr, message, code, its causes and its traceback."""
    texts = [str(err), repr(err), str(getattr(err, "message", "")), str(getattr(err, "code", ""))]
    texts += traceback.format_exception(type(err), err, err.__traceback__)
    cause = err.__cause__ or err.__context__
    while cause is not None:
        texts += [str(cause), repr(cause)]
        cause = cause.__cause__ or cause.__context__
    return texts


def _echo_sweep(engine: Any, sweep: Sweep) -> None:
    item = new_items()[0]
    run = sweep.run
    run(lambda: engine.store(item, wait=WaitFor.ACCEPTED))
    run(lambda: engine.list(ListRequest(MetaFilter(), 5)))
    run(lambda: engine.get(GetRequest((item.fingerprint(),), ROOT)))
    run(lambda: engine.fetch(FetchRequest("tea", FetchMode.HYBRID, 5, MetaFilter(reach=ROOT))))
    run(lambda: engine.recall(RecallRequest("tea", 3, MetaFilter(reach=ROOT))))
    run(lambda: engine.forget(ForgetTarget.ids([item.fingerprint()])))
    sweep.texts.append(str(engine.health()))


ECHO_STATUSES = [400, 401, 403, 404, 409, 422, 500, 502]


@pytest.mark.parametrize("form", ["json", "text", "upper"])
@pytest.mark.parametrize("hosted", [False, True], ids=["direct", "hosted"])
def test_a_server_echoing_the_token_never_gets_it_into_a_message(
    hosted: bool, form: str, canary_watch: Any
) -> None:
    """4xx/5xx bodies, headers and error JSON all repeat the bearer: every text is scrubbed."""
    sweep = Sweep()
    records = _Records()
    logging.getLogger().addHandler(records)
    statuses = ECHO_STATUSES + ([200] if hosted else [])  # hosted 200: success false
    try:
        for status in statuses:
            with HostileServer("echo_credential", status=status, form=form) as server:
                for engine in _token_engines(server.url, hosted):
                    _echo_sweep(engine, sweep)
                    engine.close()
                assert server.hits > 0
    finally:
        logging.getLogger().removeHandler(records)
    texts = [t for err in sweep.errors for t in _every_text(err)] + sweep.texts + records.texts
    lowered = CANARY_TOKEN.lower()
    assert [t[:160] for t in texts if lowered in t.lower()] == []
    # The backend's words are kept, scrubbed: the redaction shows where the token was.
    assert any("[redacted]" in str(err) for err in sweep.errors)
    assert len(sweep.errors) >= 5 * len(statuses)


def test_echoed_tokens_are_scrubbed_from_the_doubles_failure_messages() -> None:
    """The doubles' own error JSON carrying the token (a failure knob's message), both wires."""
    sweep = Sweep()
    echoed = f"the bearer {CANARY_TOKEN} was refused; Authorization: Bearer {CANARY_TOKEN}"
    with DirectDouble() as direct, HostedDouble(rate_limit_requests=None) as hosted:
        for double in (direct, hosted):
            for failure in [(401, "INVALID_TOKEN", echoed), (500, "INTERNAL", echoed),
                            (422, CANARY_TOKEN.upper(), echoed)]:  # fmt: skip
                double.state.fail_all = failure
                for engine in _token_engines(double.url, double.hosted):
                    _echo_sweep(engine, sweep)
                    engine.close()
            double.state.fail_all = None
    texts = [t for err in sweep.errors for t in _every_text(err)] + sweep.texts
    assert [t[:160] for t in texts if CANARY_TOKEN.lower() in t.lower()] == []
    shown = [str(err) for err in sweep.errors]
    assert any("the bearer [redacted] was refused" in text for text in shown)
    assert any("Authorization: [redacted]" in text for text in shown)
    assert all(CANARY_TOKEN.upper() not in str(err.code) for err in sweep.errors)


def _token_engines(url: str, hosted: bool) -> List[Any]:
    """A static and a dynamic credential on ``url`` (the scrub uses each attempt's token)."""
    if hosted:
        return [
            CortexEngine.tinyhumans(url, StaticBearer(CANARY_TOKEN), timing=FAST),
        ]
    dynamic = EngineCredential.dynamic(StaticBearer(CANARY_TOKEN))
    return [
        CortexEngine.direct(url, EngineCredential.static(CANARY_TOKEN), timing=FAST),
        CortexEngine.direct(url, dynamic, timing=FAST),
    ]


class _Records(logging.Handler):
    """Every record's text (message, arguments, exception), to check case-insensitively."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.texts: List[str] = []
        self._format = logging.Formatter("%(name)s %(levelname)s %(message)s")

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(self._format.format(record) + " " + repr(record.args))
