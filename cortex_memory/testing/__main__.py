"""`python -m cortex_memory.testing serve`: run one double for manual trials and benchmarks.

    python -m cortex_memory.testing serve --wire direct|hosted --port N
        [--token T] [--caller ACTOR] [--index-delay S] [--pack-ttl S]
        [--rate-limit N|off] [--legacy] [--knob NAME=JSON]... [--verbose]

Prints one line, `<wire> double on http://127.0.0.1:<port>`, then serves until
SIGINT or SIGTERM (exit 0). A usage error (an unknown knob included) exits 2; a
port that cannot be bound exits 1.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from typing import Any, Dict, Optional, Sequence

from cortex_memory.testing._direct import DirectDouble
from cortex_memory.testing._hosted import HostedDouble
from cortex_memory.testing._knobs import FOREVER, KNOB_NAMES
from cortex_memory.testing._server import BaseDouble

__all__ = ["main"]


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port out of range: {value}")
    return value


def _rate_limit(text: str) -> Optional[int]:
    if text == "off":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("--rate-limit takes a number or 'off'") from None
    if value < 0:
        raise argparse.ArgumentTypeError("--rate-limit takes a number >= 0 or 'off'")
    return value


def _forever(value: Any) -> Any:
    """JSON has no FOREVER: the string "FOREVER" stands for it, also inside lists."""
    if value == "FOREVER":
        return FOREVER
    if isinstance(value, list):
        return [_forever(item) for item in value]
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m cortex_memory.testing",
        description="Loopback doubles of CortexDB Direct and the hosted memory API.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = commands.add_parser("serve", help="serve one double on 127.0.0.1 until interrupted")
    serve.add_argument("--wire", choices=("direct", "hosted"), required=True)
    serve.add_argument("--port", type=_port, default=0, help="port to bind (0: a free one)")
    serve.add_argument("--token", help="the only bearer accepted (accept_token)")
    serve.add_argument("--caller", help="the whoami caller (whoami_caller)")
    serve.add_argument("--index-delay", type=float, metavar="S", help="index_delay_seconds")
    serve.add_argument("--pack-ttl", type=float, metavar="S", help="pack_ttl_seconds")
    serve.add_argument(
        "--rate-limit",
        type=_rate_limit,
        default=argparse.SUPPRESS,
        metavar="N|off",
        help="requests the rate window admits per token ('off': no window)",
    )
    serve.add_argument("--legacy", action="store_true", help="apply the legacy profile first")
    serve.add_argument(
        "--knob",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="set any knob from JSON, e.g. fail_all='[503,\"UNAVAILABLE\"]' (repeatable)",
    )
    serve.add_argument("--verbose", action="store_true", help="log status and request line")
    return parser


def _knobs(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Dict[str, Any]:
    knobs: Dict[str, Any] = {}
    if args.token is not None:
        knobs["accept_token"] = args.token
    if args.caller is not None:
        knobs["whoami_caller"] = args.caller
    if args.index_delay is not None:
        knobs["index_delay_seconds"] = args.index_delay
    if args.pack_ttl is not None:
        knobs["pack_ttl_seconds"] = args.pack_ttl
    if hasattr(args, "rate_limit"):
        knobs["rate_limit_requests"] = args.rate_limit
    for setting in args.knob:
        name, sep, raw = setting.partition("=")
        if not sep:
            parser.error(f"--knob takes NAME=JSON, got {setting!r}")
        if name not in KNOB_NAMES:
            parser.error(f"unknown knob: {name!r}")
        try:
            knobs[name] = _forever(json.loads(raw))
        except ValueError:
            parser.error(f"--knob {name}: the value is not JSON")
    return knobs


def serve(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Run one double until SIGINT or SIGTERM."""
    knobs = _knobs(parser, args)
    double: BaseDouble
    factory = DirectDouble if args.wire == "direct" else HostedDouble
    try:
        double = factory(legacy=args.legacy, **knobs)
    except (TypeError, ValueError) as exc:
        parser.error(str(exc))
    if args.verbose:
        double.request_log = _stderr_line
    try:
        double.start(port=args.port)
    except OSError as exc:
        print(f"cannot bind 127.0.0.1:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    stop = threading.Event()

    def _stop(signum: int, frame: Any) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        print(f"{args.wire} double on {double.url}", flush=True)
        while not stop.wait(0.2):
            pass
    finally:
        double.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def _stderr_line(status: int, line: str) -> None:
    print(f"{status or 'RESET'} {line}", file=sys.stderr, flush=True)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of `python -m cortex_memory.testing`."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command != "serve":
        parser.print_help(sys.stderr)
        return 2
    return serve(args, parser)


if __name__ == "__main__":
    sys.exit(main())
