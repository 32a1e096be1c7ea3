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
"""

import json as _json

try:
    from componentize_py_types import Err as _Err
    from wit_world.imports import broker as _broker
except ImportError:  # the scientific guest: broker calls are host-door frames
    _Err = None
    _broker = None

__all__ = [
    "call",
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
        return _door_call(api, method.upper(), path, hdrs, payload)
    req = _broker.Request(method=method.upper(), path=path, headers=hdrs, body=payload)
    try:
        resp = _broker.call(api, req)
    except _Err as e:
        err = e.value
    else:
        return Response(resp.status, resp.headers, resp.body)
    # Raised outside the except block so the traceback shows no chained Err.
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


def _door_call(api, method, path, headers, body):
    """`call` in the scientific guest: one JSON frame through `_host.call`,
    answered by the same broker (grant checks, credential, CallTrace)."""
    import base64
    import _host

    frame = _json.dumps(
        {
            "op": "call",
            "api": api,
            "method": method,
            "path": path,
            "headers": headers,
            "body": base64.b64encode(body).decode("ascii"),
        }
    ).encode("utf-8")
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
