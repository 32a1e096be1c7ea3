"""The broker: HTTP calls the host makes under one of the run's grants.

Name a grant (``call``) or a granted origin (``call_origin``); the host checks
the method and path against the grant, adds the credential itself (it never
enters the component) and makes the call. A refusal raises a subclass of
:class:`~plimsoll_guest.errors.CallError`; the run goes on.

>>> from plimsoll_guest import broker
>>> resp = broker.get("orders", "/v1/orders/42")       # doctest: +SKIP
>>> resp.status, resp.json()                            # doctest: +SKIP
(200, {'order': '42'})
"""

import json
from typing import Any, Iterable, List, Mapping, Optional, Tuple, Union

from . import _bindings
from .errors import (
    BudgetExhausted,
    CallError,
    Denied,
    RequestTooLarge,
    ResponseTooLarge,
    Timeout,
    Upstream,
    from_wit,
)

__all__ = [
    "Response",
    "call",
    "call_origin",
    "get",
    "post",
    "put",
    "patch",
    "delete",
    "set_transport",
    "CallError",
    "Denied",
    "BudgetExhausted",
    "RequestTooLarge",
    "ResponseTooLarge",
    "Timeout",
    "Upstream",
]

#: Request headers: a list of ``(name, value)`` pairs (order kept, names may
#: repeat) or a mapping of name to value.
Headers = Union[Iterable[Tuple[str, str]], Mapping[str, str]]

#: A request body: bytes-like, or ``str`` (sent as UTF-8).
Body = Union[bytes, bytearray, memoryview, str]


class Response:
    """The upstream's answer to a broker call."""

    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, headers: List[Tuple[str, str]], body: bytes) -> None:
        #: The HTTP status code (redirects are not followed: a 3xx arrives as is).
        self.status: int = status
        #: The response headers as ``(name, value)`` pairs, in the order received
        #: (hop-by-hop and ``set-cookie`` headers removed by the host).
        self.headers: List[Tuple[str, str]] = headers
        #: The response body, byte for byte.
        self.body: bytes = body

    def header(self, name: str) -> Optional[str]:
        """The first value of header ``name`` (case-insensitive), or ``None``."""
        wanted = name.lower()
        for key, value in self.headers:
            if key.lower() == wanted:
                return value
        return None

    def text(self) -> str:
        """The body decoded as UTF-8, invalid bytes replaced with U+FFFD."""
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The body parsed as JSON (raises ``ValueError`` if it is not JSON)."""
        return json.loads(self.body)

    def __repr__(self) -> str:
        return f"Response(status={self.status}, headers={len(self.headers)}, body={len(self.body)} bytes)"


def set_transport(transport: Optional[Any]) -> None:
    """Replaces the object broker calls go through; for tests on host CPython.

    Inside a component the transport is the real broker import and this is
    never needed. See ``plimsoll_guest._bindings.WitTransport`` for the shape
    a transport has.
    """
    _bindings.transport = transport


def call(
    api: str,
    method: str,
    path: str,
    headers: Optional[Headers] = None,
    body: Body = b"",
) -> Response:
    """Makes one HTTP call under the grant named ``api``.

    ``method`` is ``GET``, ``PUT``, ``POST``, ``DELETE`` or ``PATCH``;
    ``path`` is the absolute, canonical path (with an optional query).
    Raises a :class:`CallError` subclass when the host refuses or the call fails.
    """
    _check_str("api", api)
    method, path, pairs, data = _parts(method, path, headers, body)
    t = _transport()
    try:
        raw = t.call(api, method, path, pairs, data)
    except t.error as e:
        raise from_wit(e.value) from None
    return _response(raw)


def call_origin(
    origin: str,
    method: str,
    path: str,
    headers: Optional[Headers] = None,
    body: Body = b"",
    timeout_ms: Optional[int] = None,
) -> Response:
    """Makes one HTTP call under the run's grant whose origin is ``origin``
    (``scheme://host[:port]``), with every check of :func:`call`.

    ``timeout_ms`` shortens the per-call timeout; it never lengthens it.
    """
    _check_str("origin", origin)
    if timeout_ms is not None:
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int):
            raise TypeError("timeout_ms must be an int or None")
        if not 0 <= timeout_ms <= 0xFFFFFFFF:
            raise ValueError("timeout_ms must fit in a u32")
    method, path, pairs, data = _parts(method, path, headers, body)
    t = _transport()
    try:
        raw = t.call_origin(origin, method, path, pairs, data, timeout_ms)
    except t.error as e:
        raise from_wit(e.value) from None
    return _response(raw)


def get(api: str, path: str, headers: Optional[Headers] = None) -> Response:
    """``GET path`` under the grant ``api``."""
    return call(api, "GET", path, headers)


def post(api: str, path: str, body: Body = b"", headers: Optional[Headers] = None) -> Response:
    """``POST path`` with ``body`` under the grant ``api``."""
    return call(api, "POST", path, headers, body)


def put(api: str, path: str, body: Body = b"", headers: Optional[Headers] = None) -> Response:
    """``PUT path`` with ``body`` under the grant ``api``."""
    return call(api, "PUT", path, headers, body)


def patch(api: str, path: str, body: Body = b"", headers: Optional[Headers] = None) -> Response:
    """``PATCH path`` with ``body`` under the grant ``api``."""
    return call(api, "PATCH", path, headers, body)


def delete(api: str, path: str, headers: Optional[Headers] = None) -> Response:
    """``DELETE path`` under the grant ``api``."""
    return call(api, "DELETE", path, headers)


def _transport() -> Any:
    t = _bindings.transport
    if t is None:
        raise RuntimeError(
            "plimsoll_guest.broker works only inside a component built with "
            "componentize-py (or after broker.set_transport in a test)"
        )
    return t


def _check_str(name: str, value: object) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (from os.fsdecode, say) cannot cross the
        # component boundary; refuse it here rather than trap there.
        raise ValueError(f"{name} is not valid UTF-8 (it holds a lone surrogate)") from None


def _parts(
    method: str, path: str, headers: Optional[Headers], body: Body
) -> Tuple[str, str, List[Tuple[str, str]], bytes]:
    _check_str("method", method)
    _check_str("path", path)
    return method, path, _header_pairs(headers), _body_bytes(body)


def _header_pairs(headers: Optional[Headers]) -> List[Tuple[str, str]]:
    if headers is None:
        return []
    items = headers.items() if isinstance(headers, Mapping) else headers
    pairs = []
    for item in items:
        name, value = item
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError("header names and values must be str")
        _check_str("a header name", name)
        _check_str("a header value", value)
        pairs.append((name, value))
    return pairs


def _body_bytes(body: Body) -> bytes:
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body)
    raise TypeError(f"body must be bytes-like or str, not {type(body).__name__}")


def _response(raw: Any) -> Response:
    return Response(int(raw.status), [(k, v) for k, v in raw.headers], bytes(raw.body))
