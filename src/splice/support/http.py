"""Every HTTP request Splice sends goes through here: one httpx client factory, and the one
place that says how long to wait and what to try again (Dagster, Airflow, the identity
provider's discovery, token and key endpoints, webhooks, the local servers' readiness probes).

Which failures are tried again (:class:`Retry`: at most ``attempts`` tries, pausing
``backoff``, then twice that, and so on, or as long as a busy server's ``Retry-After`` says;
never longer than ``max_pause``):

- no connection (refused, unknown host, the connect timed out): the request was never sent,
  so it is tried again whatever its method;
- the answer lost (read timed out, connection dropped) or a busy server (429, 502, 503, 504):
  tried again only when repeating the request is harmless (``idempotent``: GET, HEAD, PUT,
  DELETE and OPTIONS are; a caller says so for a read sent as a POST, like a GraphQL query);
- any other answer of 400 or more is final, and so is a URL httpx cannot send to.

What is left is raised as an :class:`HTTPFailure` that says whether a later retry may help
(``retry``, as every :class:`~splice.errors.SpliceError`): :class:`NoAnswer` (yes, unless the
URL itself is wrong) or :class:`ErrorStatus` (yes for 5xx and 429). Callers turn it into their
own error naming the setting to correct. Its message names the host, never the URL's path or
query (a webhook's URL may hold a secret).

httpx is imported when the first request is made, not with this module.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from splice.errors import SpliceError

if TYPE_CHECKING:
    import ssl

    import httpx

#: Seconds to wait for a connection, and then for each part of the answer.
TIMEOUT = 10.0

#: Methods whose repetition is harmless (RFC 9110, 9.2.2).
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})


@dataclass(frozen=True)
class Retry:
    """How many times a request is tried, and the pauses between the tries.

    >>> [Retry(backoff=0.5).pause(n) for n in (1, 2, 3)]
    [0.5, 1.0, 2.0]
    >>> Retry().pause(1, retry_after="2"), Retry().pause(1, retry_after="3600")
    (2.0, 5.0)
    >>> Retry().again(ErrorStatus("h", 503, "", ""), tried=1, sent=True, idempotent=False)
    False
    """

    attempts: int = 3
    backoff: float = 0.25  # seconds before the second try; doubled before each next one
    max_pause: float = 5.0  # the longest pause, whatever Retry-After asks
    statuses: frozenset[int] = frozenset({429, 502, 503, 504})

    def pause(self, tried: int, retry_after: str | None = None) -> float:
        """Seconds to wait after try number ``tried``."""
        if retry_after and retry_after.strip().isdigit():
            return min(float(retry_after), self.max_pause)
        return min(self.backoff * 2 ** (tried - 1), self.max_pause)

    def again(self, failure: HTTPFailure, *, tried: int, sent: bool, idempotent: bool) -> bool:
        """Whether ``failure`` of try number ``tried`` is worth another try (see the module)."""
        if tried >= self.attempts or not failure.retry:
            return False
        if isinstance(failure, ErrorStatus):
            return idempotent and failure.status in self.statuses
        return idempotent or not sent


#: The default: three tries within about a second for what may pass.
RETRY = Retry()
#: One try only: for the caller that retries on its own schedule (the notification outbox)
#: and for a probe that is asked again anyway (is a local server up yet?).
ONCE = Retry(attempts=1)


class HTTPFailure(SpliceError):
    """A request that got no usable answer; ``retry`` says whether a later one may help."""

    def __init__(self, host: str, message: str, *, retry: bool) -> None:
        super().__init__(message, retry=retry)
        self.host = host


class NoAnswer(HTTPFailure):
    """No answer: the connection was refused or dropped, the host is unknown, or it timed out
    (``reason`` says which, as the operating system or httpx words it).

    >>> NoAnswer("127.0.0.1:9", "no answer within 0.5 s", timed_out=True).one_line()
    '127.0.0.1:9: no answer within 0.5 s (a retry may help)'
    """

    def __init__(self, host: str, reason: str, *, timed_out: bool = False, retry: bool = True):
        super().__init__(host, f"{host}: {reason}", retry=retry)
        self.reason = reason
        self.timed_out = timed_out


class ErrorStatus(HTTPFailure):
    """The server answered with an error status; ``text`` is the start of its answer.

    >>> e = ErrorStatus("idp:443", 503, "Service Unavailable", "try later")
    >>> e.message, e.retry
    ('idp:443 answered 503 Service Unavailable: try later', True)
    >>> ErrorStatus("idp:443", 404, "Not Found", "").retry
    False
    """

    def __init__(self, host: str, status: int, phrase: str, text: str,
                 retry_after: str | None = None) -> None:  # fmt: skip
        detail = f"{host} answered {status} {phrase}".rstrip()
        super().__init__(host, detail + (f": {text[:300]}" if text else ""),
                         retry=status >= 500 or status == 429)  # fmt: skip
        self.status = status
        self.phrase = phrase
        self.text = text
        self.retry_after = retry_after


def client(*, timeout: float = TIMEOUT, headers: dict[str, str] | None = None) -> httpx.Client:
    """An httpx client as Splice uses one: ``timeout`` seconds for the connection and for each
    part of the answer, redirects followed, proxies and CA bundle as the environment says."""
    import httpx

    return httpx.Client(timeout=httpx.Timeout(timeout), headers=headers, follow_redirects=True,
                        verify=_tls())  # fmt: skip


@functools.cache
def _tls() -> ssl.SSLContext:
    """The TLS settings every client shares (made once: loading the CA bundle takes ~0.1 s)."""
    import httpx

    return httpx.create_ssl_context()


def request(
    method: str,
    url: str,
    *,
    json: Any = None,
    content: bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = TIMEOUT,
    retry: Retry = RETRY,
    idempotent: bool | None = None,
) -> httpx.Response:
    """Send one request (tried again as ``retry`` says); its answer when the status is 2xx,
    else :class:`NoAnswer` or :class:`ErrorStatus`. ``idempotent`` defaults to the method's
    nature (see :data:`IDEMPOTENT`)."""
    method = method.upper()
    safe = method in IDEMPOTENT if idempotent is None else idempotent
    tried = 0
    while True:
        tried += 1
        answer, failure, sent = _attempt(method, url, json, content, headers, timeout)
        if failure is None:
            assert answer is not None
            return answer
        if not retry.again(failure, tried=tried, sent=sent, idempotent=safe):
            raise failure
        time.sleep(retry.pause(tried, getattr(failure, "retry_after", None)))


def _host(url: str) -> str:
    """The host (and port) a URL names, for messages: never its path or query.

    >>> _host("https://hooks.example/T0/B0/secret?x=1"), _host("http://127.0.0.1:9/graphql")
    ('hooks.example', '127.0.0.1:9')
    """
    return urlsplit(url).netloc.rsplit("@", 1)[-1] or url.split("/", 1)[0]


def _attempt(
    method: str,
    url: str,
    json: Any,
    content: bytes | None,
    headers: dict[str, str] | None,
    timeout: float,
) -> tuple[httpx.Response | None, HTTPFailure | None, bool]:
    """One try: (the answer, or the failure and whether the request may have reached the
    server)."""
    import httpx

    host = _host(url)
    try:
        with client(timeout=timeout, headers=headers) as c:
            r = c.request(method, url, json=json, content=content)
    except httpx.TimeoutException as e:
        sent = not isinstance(e, httpx.ConnectTimeout)
        return None, NoAnswer(host, f"no answer within {timeout:g} s", timed_out=True), sent
    except (httpx.UnsupportedProtocol, httpx.InvalidURL, httpx.TooManyRedirects) as e:
        return None, NoAnswer(host, str(e) or type(e).__name__, retry=False), False
    except httpx.ConnectError as e:
        return None, NoAnswer(host, str(e) or type(e).__name__), False
    except httpx.RequestError as e:  # the connection dropped, the answer was malformed, ...
        return None, NoAnswer(host, str(e) or type(e).__name__), True
    if r.is_success:
        return r, None, True
    failure = ErrorStatus(host, r.status_code, r.reason_phrase, r.text.strip()[:4096],
                          r.headers.get("retry-after"))  # fmt: skip
    return None, failure, True
