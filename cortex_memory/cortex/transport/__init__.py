"""The HTTP transport of the CortexDB engine, over urllib3 (engine.md §5).

Layers, lowest first:

* :mod:`.text` — Unicode trimming, excerpts, header-value checks;
* :mod:`.surface` — what the transport needs of a wire (:class:`Surface`) and
  the hosted envelope unwrap; the wires above supply it, the transport never
  imports them;
* :mod:`.endpoint`, :mod:`.headers`, :mod:`.auth` — what is checked at
  construction (endpoint security, host default headers) and per attempt (the
  ``Authorization`` value);
* :mod:`.keys` — hosted idempotency claims and URL encoding;
* :mod:`.watchdog`, :mod:`.pool`, :mod:`.body` — bounded exchanges: the shared
  timer that cuts stalled connections, the urllib3 pool, capped body reads;
* :mod:`.actor`, :mod:`.pause` — state shared by an engine family: the
  ``X-Cortex-Actor`` cache and the rate-limit pause;
* :mod:`.proxy`, :mod:`.tls` — what is decided at construction about the way
  out: the proxy (explicit, or from ``HTTPS_PROXY``/``NO_PROXY``...), the
  cleartext rule for proxies, proxy failures; the TLS trust store, client
  certificate and the rule that verification stays on off loopback;
* :mod:`.failure` — statuses and transport faults to the error tree;
* :mod:`.response` — :class:`Response` and the JSON body codec;
* :mod:`.request` — what one attempt sends (:class:`~.request.Request`) and
  how it reads the answer (:class:`~.request.Read`);
* :mod:`.exchange` — one attempt: build, send, read and map the answer;
* :mod:`.client` — :class:`HttpClient` (holding an exchange): construction,
  copies, call modes.
"""

from __future__ import annotations

from cortex_memory.cortex.timing import READ_ATTEMPTS, STATE_CHANGE_ATTEMPTS, backoff
from cortex_memory.cortex.transport.actor import ActorCache, ActorState
from cortex_memory.cortex.transport.body import ERROR_CAP, SUCCESS_CAP
from cortex_memory.cortex.transport.client import HttpClient, Response, encode_body
from cortex_memory.cortex.transport.endpoint import CLEARTEXT_REFUSED, is_loopback_host
from cortex_memory.cortex.transport.failure import (
    AUTHORIZATION_STATE_CHANGED,
    health_reason,
    status_failure,
    status_text,
    transport_failure,
)
from cortex_memory.cortex.transport.keys import fresh_claim, query_string, urlencode
from cortex_memory.cortex.transport.pause import RateLimitPause
from cortex_memory.cortex.transport.proxy import CLEARTEXT_PROXY_REFUSED, bypasses_proxy
from cortex_memory.cortex.transport.surface import Surface, Wire
from cortex_memory.cortex.transport.watchdog import WATCHDOG, current_watchdog, install_watchdog

__all__ = [
    "AUTHORIZATION_STATE_CHANGED",
    "ActorCache",
    "ActorState",
    "CLEARTEXT_PROXY_REFUSED",
    "CLEARTEXT_REFUSED",
    "ERROR_CAP",
    "HttpClient",
    "READ_ATTEMPTS",
    "RateLimitPause",
    "Response",
    "STATE_CHANGE_ATTEMPTS",
    "SUCCESS_CAP",
    "Surface",
    "WATCHDOG",
    "Wire",
    "backoff",
    "bypasses_proxy",
    "current_watchdog",
    "encode_body",
    "fresh_claim",
    "health_reason",
    "install_watchdog",
    "is_loopback_host",
    "query_string",
    "status_failure",
    "status_text",
    "transport_failure",
    "urlencode",
]
