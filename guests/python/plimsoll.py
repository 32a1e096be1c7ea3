"""Reach the outside world from inside the plimsoll Python sandbox.

The sandbox has no sockets and no name lookups. Its one way to the network is
the host's *broker*: you name a grant (``api``), an HTTP method and a path,
and the host makes the call for you, adding the credential itself (the
credential never enters the sandbox) and recording the call in the run's
CallTrace.

Example::

    import plimsoll

    try:
        r = plimsoll.get("orders", "/v1/orders/42")
        if r.ok:
            order = r.json()
        else:
            print("upstream said", r.status, r.text)
    except plimsoll.Denied as e:
        print("not allowed:", e.reason)

Every refusal raises a subclass of :class:`BrokerError`; an HTTP error status
(4xx, 5xx) is *not* an exception: it arrives as a :class:`Response`.

Calls by URL: :func:`call_url` takes a full ``http://`` or ``https://`` URL
instead of a grant name; the host picks the run's grant whose origin is the
URL's ``scheme://host[:port]`` and applies every check of a named call. This
is what ``urllib``, ``http.client`` and ``requests`` use inside the sandbox
(see ``plimsoll_http``), so code written for an ordinary network reaches the
granted APIs and nothing else. An origin no grant covers is ``Denied`` with
the reason ``"no grant covers this origin"``.
"""

import json as _json
import math as _math
import re as _re
import urllib.parse as _urlparse

try:
    from componentize_py_types import Err as _Err
    from wit_world.imports import broker as _broker
except ImportError:  # the scientific guest: broker calls are host-door frames
    _Err = None
    _broker = None

__all__ = [
    "call",
    "call_url",
    "get",
    "post",
    "put",
    "patch",
    "delete",
    "Response",
    "BrokerError",
    "Denied",
    "BudgetExhausted",
    "RequestTooLarge",
    "ResponseTooLarge",
    "Timeout",
    "UpstreamError",
]


class BrokerError(Exception):
    """Base class of every error raised when a broker call yields no response."""


class Denied(BrokerError):
    """The grant does not allow this call.

    Raised for an unknown grant name, a method or route the grant does not
    list, a non-canonical path, or a refused header. ``reason`` is the host's
    explanation (it never echoes the path or header values).
    """

    def __init__(self, reason):
        super().__init__(reason)
        #: The host's explanation, e.g. ``"no grant named 'orders'"``.
        self.reason = reason


class BudgetExhausted(BrokerError):
    """The run has used its whole call budget; further calls will fail too."""


class RequestTooLarge(BrokerError):
    """The request body is larger than the request cap (1 MiB); nothing was sent."""


class ResponseTooLarge(BrokerError):
    """The upstream answered with more than the grant's response cap."""


class Timeout(BrokerError):
    """The upstream did not answer within the per-call timeout."""


class UpstreamError(BrokerError):
    """The upstream could not be reached or answered with garbage, or the host shed the call.

    ``message`` is the host's description.
    """

    def __init__(self, message):
        super().__init__(message)
        #: The host's description of what went wrong.
        self.message = message


class Response:
    """An upstream's answer to a broker call.

    Attributes:
        status: the HTTP status code (``int``). Redirects are not followed, so
            a 3xx arrives here as it is.
        headers: the response headers as a list of ``(name, value)`` tuples,
            in the order received (hop-by-hop and ``set-cookie`` headers are
            removed by the host).
        body: the response body (``bytes``).
    """

    __slots__ = ("status", "headers", "body")

    def __init__(self, status, headers, body):
        self.status = int(status)
        self.headers = [(str(k), str(v)) for k, v in headers]
        self.body = bytes(body)

    @property
    def ok(self):
        """True when the status is 2xx."""
        return 200 <= self.status < 300

    @property
    def text(self):
        """The body decoded as UTF-8 (undecodable bytes become U+FFFD)."""
        return self.body.decode("utf-8", errors="replace")

    def json(self):
        """The body parsed as JSON; raises ``ValueError`` if it is not JSON."""
        return _json.loads(self.body)

    def header(self, name, default=None):
        """The value of the first header called ``name`` (case-insensitive), or ``default``."""
        want = name.lower()
        for k, v in self.headers:
            if k.lower() == want:
                return v
        return default

    def __repr__(self):
        return "<plimsoll.Response status=%d, %d bytes>" % (self.status, len(self.body))


def _check_str(what, value):
    if not isinstance(value, str):
        raise TypeError("%s must be a str, not %s" % (what, type(value).__name__))
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("%s is not valid Unicode (lone surrogate)" % what) from None
    return value


def _headers_list(headers):
    if headers is None:
        return []
    items = headers.items() if hasattr(headers, "items") else headers
    out = []
    for pair in items:
        try:
            name, value = pair
        except (TypeError, ValueError):
            raise TypeError("headers must be a mapping or a list of (name, value) pairs") from None
        out.append((_check_str("header name", name), _check_str("header value", value)))
    return out


def _encode_body(body, headers):
    if body is None:
        return b""
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body)
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, (dict, list)):
        if not any(k.lower() == "content-type" for k, _ in headers):
            headers.append(("content-type", "application/json"))
        return _json.dumps(body).encode("utf-8")
    raise TypeError(
        "body must be None, bytes, str, dict or list, not %s" % type(body).__name__
    )


def _call_error(err):
    if isinstance(err, _broker.CallError_Denied):
        return Denied(err.value)
    if isinstance(err, _broker.CallError_BudgetExhausted):
        return BudgetExhausted("the run's call budget is used up")
    if isinstance(err, _broker.CallError_RequestTooLarge):
        return RequestTooLarge("the request body is larger than the request cap")
    if isinstance(err, _broker.CallError_ResponseTooLarge):
        return ResponseTooLarge("the response is larger than the grant's response cap")
    if isinstance(err, _broker.CallError_Timeout):
        return Timeout("the upstream did not answer in time")
    if isinstance(err, _broker.CallError_Upstream):
        return UpstreamError(err.value)
    return BrokerError("unknown broker error: %r" % (err,))


def call(api, method, path, body=None, headers=None):
    """Make one HTTP call through the broker under the grant named ``api``.

    Args:
        api: the grant's name, e.g. ``"orders"``.
        method: ``"GET"``, ``"PUT"``, ``"POST"``, ``"DELETE"`` or ``"PATCH"``
            (case-insensitive; anything else is denied).
        path: the absolute, canonical path on the grant's API, optionally
            with a query string, e.g. ``"/v1/orders/42?expand=items"``.
        body: ``None`` (empty), ``bytes``, ``str`` (sent as UTF-8), or a
            ``dict``/``list`` (sent as JSON, with ``content-type:
            application/json`` added unless you set a content-type).
        headers: extra request headers, a mapping or a list of
            ``(name, value)`` pairs. ``authorization``, ``cookie``, ``host``
            and hop-by-hop headers are refused (``Denied``).

    Returns:
        a :class:`Response`, whatever its HTTP status.

    Raises:
        Denied, BudgetExhausted, RequestTooLarge, ResponseTooLarge, Timeout,
        UpstreamError (all subclasses of :class:`BrokerError`);
        ``TypeError``/``ValueError`` for arguments of the wrong type.
    """
    _check_str("api", api)
    _check_str("method", method)
    _check_str("path", path)
    hdrs = _headers_list(headers)
    payload = _encode_body(body, hdrs)
    if _broker is None:
        return _door_call(method.upper(), path, hdrs, payload, api=api)
    req = _broker.Request(method=method.upper(), path=path, headers=hdrs, body=payload)
    try:
        resp = _broker.call(api, req)
    except _Err as e:
        err = e.value
    else:
        return Response(resp.status, resp.headers, resp.body)
    # Raised outside the except block so the traceback shows no chained Err.
    raise _call_error(err)


#: The longest timeout :func:`call_url` passes on, in milliseconds (the
#: WIT's ``u32``). The host's own per-call timeout is shorter anyway: a
#: guest's timeout only ever shortens it.
_MAX_TIMEOUT_MS = 2**32 - 1

# Characters no URL handed to call_url may hold (controls and the space):
# `urlsplit` would silently drop some of them, so refuse them up front.
_URL_FORBIDDEN = frozenset(chr(c) for c in range(0x21)) | {"\x7f"}
_has_forbidden = _re.compile("[\x00-\x20\x7f]").search
_bad_host = _re.compile(r"[\x00-\x20\x7f/?#@\[\]\\]").search


def call_url(method, url, body=None, headers=None, timeout=None):
    """Make one HTTP call by URL, under the run's grant for the URL's origin.

    The URL is split into its origin, ``scheme://host[:port]``, which picks
    the grant (the host's checks are those of :func:`call`), and its path
    and query, which is matched against the grant's routes. The fragment is
    dropped; an empty path is ``/``.

    Args:
        method: as for :func:`call`.
        url: an absolute ``http://`` or ``https://`` URL (``str``). A URL
            with user information (``user:password@host``) is refused before
            anything is sent: the host adds the credential, and the URL's is
            never sent anywhere. A non-ASCII host name is IDNA-encoded.
        body, headers: as for :func:`call`. Headers that HTTP client
            libraries add themselves (``host``, ``content-length``,
            ``transfer-encoding``, ``accept-encoding``, ``connection``,
            ``keep-alive``) are dropped by the host rather than refused.
        timeout: ``None`` (the host's per-call timeout), or seconds (``int``
            or ``float``, at least 0). It can only shorten the host's timeout.

    Returns:
        a :class:`Response`, whatever its HTTP status. Redirects are not
        followed: a 3xx arrives as it is.

    Raises:
        the errors of :func:`call`; ``Denied`` with ``"no grant covers this
        origin"`` when no grant has the URL's origin (and with a reason
        that says so when more than one has: name the grant with
        :func:`call`);
        ``ValueError`` for a URL that is not absolute ``http``/``https``,
        has user information, or has spaces or control characters.
    """
    _check_str("method", method)
    origin, path = _split_url(url)
    timeout_ms = _timeout_ms(timeout)
    hdrs = _headers_list(headers)
    payload = _encode_body(body, hdrs)
    return _call_origin(method.upper(), origin, path, hdrs, payload, timeout_ms)


def _split_url(url):
    """Split an absolute ``http``/``https`` URL into ``(origin, path)``.

    ``origin`` is ``scheme://host[:port]`` with the scheme and host in lower
    case (a non-ASCII host IDNA-encoded, an IPv6 address in brackets, the
    port as written); ``path`` is the path and query (``/`` when the path
    is empty; the fragment dropped). Raises ``ValueError`` (``TypeError``
    for a non-``str``) for anything :func:`call_url` refuses.
    """
    _check_str("url", url)
    if _has_forbidden(url):
        raise ValueError("the URL has a space or a control character; percent-encode it")
    parts = _urlparse.urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise ValueError(
            "only http:// and https:// URLs can be called through the broker, not %r"
            % (scheme + ":" if scheme else url[:40],)
        )
    if "@" in parts.netloc:
        raise ValueError(
            "the URL has user information (user:password@host), which is never "
            "sent: the host adds the credential of the grant for the origin"
        )
    port = parts.port  # ValueError for a port that is not a number in 0-65535
    origin = _make_origin(scheme, parts.hostname or "", port)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return origin, path


def _make_origin(scheme, host, port=None, default_port=None):
    """``scheme://host[:port]`` for the broker; ``port`` is left out when it
    is ``None`` or ``default_port``. Raises ``ValueError`` for an empty
    host, one with user information or characters no host name has."""
    host = host.lower()
    if not host:
        raise ValueError("the URL has no host")
    if _bad_host(host):
        raise ValueError("%r is not a valid host name" % (host[:80],))
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise ValueError("%r is not a valid host name" % (host[:80],)) from None
    if ":" in host:  # an IPv6 address
        host = "[%s]" % host
    if port is not None and port != default_port:
        return "%s://%s:%d" % (scheme, host, port)
    return "%s://%s" % (scheme, host)


def _timeout_ms(timeout):
    """Seconds to whole milliseconds for the broker (at least 1, at most
    _MAX_TIMEOUT_MS), or None for the host's own timeout."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError("timeout must be None or a number of seconds, not %s" % type(timeout).__name__)
    if timeout != timeout or timeout < 0:  # NaN, negative
        raise ValueError("timeout must be a number of seconds, at least 0")
    if timeout * 1000 >= _MAX_TIMEOUT_MS:
        return _MAX_TIMEOUT_MS
    return max(1, _math.ceil(timeout * 1000))


def _call_origin(method, origin, path, headers, payload, timeout_ms):
    """One call by URL, arguments already checked: the component binding,
    or a door frame in the scientific guest."""
    if _broker is None:
        return _door_call(method, path, headers, payload, origin=origin, timeout_ms=timeout_ms)
    req = _broker.Request(method=method, path=path, headers=headers, body=payload)
    try:
        resp = _broker.call_origin(origin, req, timeout_ms)
    except _Err as e:
        err = e.value
    else:
        return Response(resp.status, resp.headers, resp.body)
    raise _call_error(err)


_DOOR_ERRORS = {
    "denied": lambda m: Denied(m),
    "budget_exhausted": lambda m: BudgetExhausted("the run's call budget is used up"),
    "request_too_large": lambda m: RequestTooLarge("the request body is larger than the request cap"),
    "response_too_large": lambda m: ResponseTooLarge(
        "the response is larger than the grant's response cap"
    ),
    "timeout": lambda m: Timeout("the upstream did not answer in time"),
    "upstream": lambda m: UpstreamError(m),
}


def _door_call(method, path, headers, body, api=None, origin=None, timeout_ms=None):
    """A call in the scientific guest: one JSON frame through `_host.call`,
    answered by the same broker (grant checks, credential, CallTrace).

    The frame names the grant (`"api"`) for :func:`call`, or the origin
    (`"origin"`, with `"timeout_ms"`, an int or null) for a call by URL.
    """
    import base64
    import _host

    frame = {"op": "call"}
    if origin is None:
        frame["api"] = api
    else:
        frame["origin"] = origin
        frame["timeout_ms"] = timeout_ms
    frame.update(
        method=method,
        path=path,
        headers=headers,
        body=base64.b64encode(body).decode("ascii"),
    )
    frame = _json.dumps(frame).encode("utf-8")
    answer = _json.loads(_host.call(frame))
    err = answer.get("error")
    if err is None:
        return Response(answer["status"], answer["headers"], base64.b64decode(answer["body"]))
    make = _DOOR_ERRORS.get(err.get("kind"))
    if make is None:
        raise BrokerError("unknown broker error: %r" % (err.get("kind"),))
    raise make(err.get("message", ""))


def get(api, path, headers=None):
    """``call(api, "GET", path, headers=headers)``."""
    return call(api, "GET", path, headers=headers)


def post(api, path, body=None, headers=None):
    """``call(api, "POST", path, body, headers)``."""
    return call(api, "POST", path, body, headers)


def put(api, path, body=None, headers=None):
    """``call(api, "PUT", path, body, headers)``."""
    return call(api, "PUT", path, body, headers)


def patch(api, path, body=None, headers=None):
    """``call(api, "PATCH", path, body, headers)``."""
    return call(api, "PATCH", path, body, headers)


def delete(api, path, body=None, headers=None):
    """``call(api, "DELETE", path, body, headers)``."""
    return call(api, "DELETE", path, body, headers)
