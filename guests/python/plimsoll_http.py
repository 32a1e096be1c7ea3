"""The standard HTTP clients inside the sandbox, through plimsoll's broker.

The sandbox has no sockets. Code written for an ordinary network calls APIs
with ``urllib.request.urlopen(url)``, ``http.client.HTTPConnection(host)``
or ``requests.get(url)``; :func:`install` (run by ``app.py`` when the guest
starts, so no cell needs to import anything) makes all three hand each
request to the host by URL (:func:`plimsoll.call_url`'s path). The host
picks the run's grant whose origin is the URL's ``scheme://host[:port]``,
applies every check of a named call (method, route, headers, sizes,
budget), adds the credential itself and records the call in the CallTrace.
An origin no grant covers is refused, and nothing is sent.

What is guaranteed:

- ``http.client.HTTPConnection`` and ``HTTPSConnection`` are replaced by
  classes with the same constructors and methods (``request``,
  ``putrequest``/``putheader``/``endheaders``/``send``, ``getresponse``,
  ``close``, ``set_debuglevel``; ``connect`` does nothing). ``getresponse``
  returns a genuine ``http.client.HTTPResponse``, read from the host's
  answer, so ``read()``, ``getheader()``, ``status``, ``reason``,
  ``headers`` and ``msg`` behave as ever. The call is made by
  ``request()`` (so ``urllib`` reports failures as ``URLError``, as it does
  for an unreachable host), or by ``getresponse()`` after
  ``putrequest()``/``endheaders()``. ``set_tunnel`` (proxies) raises.
- ``urllib.request`` uses those classes (it looks them up on every call);
  ``https://`` works even though this CPython may have no ``ssl`` module
  (TLS is the host's). Its own handlers do the rest: ``HTTPError`` for
  4xx/5xx, redirects followed, each hop a new call that must be granted.
- ``requests`` (vendored, see ``plimsoll_vendor``) gets a transport
  adapter: when it is first imported, ``requests.adapters.HTTPAdapter``
  (and the name ``requests.sessions`` mounts on every ``Session``) becomes
  a subclass of it whose ``send`` goes through the broker, so adapters
  mounted by hand (``HTTPAdapter(max_retries=3)``) use it too. Responses
  are real ``requests.Response`` objects built by requests' own
  ``build_response`` over a urllib3 response holding the body (so
  ``stream=True``, ``iter_content`` and ``Content-Encoding`` decoding work
  as ever); requests follows redirects itself, each hop through the
  adapter. ``max_retries``, ``verify``, ``cert`` and ``proxies`` have no
  effect: the host makes the call, verifies TLS and applies its own retry
  rules.
- Errors are those of an unreachable network, with the host's reason in
  the message and the :class:`plimsoll.BrokerError` as ``__cause__``:
  http.client raises ``ConnectionRefusedError`` (call denied, e.g. "no
  grant covers this origin", or budget used up), ``TimeoutError`` (the
  ``timeout`` given, or the host's, ran out) or ``OSError`` (too large,
  upstream failure); urllib wraps them in ``urllib.error.URLError``;
  requests raises ``requests.exceptions.ConnectionError``
  (``ReadTimeout`` for a timeout).
- ``timeout=`` (seconds) is passed on; it only ever shortens the host's
  per-call timeout.
- Headers the libraries add themselves (``Host``, ``Content-Length``,
  ``Accept-Encoding``, ``Connection``, ...) are passed and dropped by the
  host; nothing here adds an ``Authorization`` (one you set is refused by
  the host: the grant's credential is the only one). User information in a
  URL (``user:password@host``) is refused before anything is sent.
- Request bodies are read whole, at most :data:`MAX_BODY_BYTES` (the host's
  cap, 1 MiB, is smaller: it refuses what is larger). The host's response
  headers are sanitised before either library sees them (tokens for names,
  no control characters in values, at most 99), the framing headers
  (``Content-Length``, ``Transfer-Encoding``, ``Connection``,
  ``Keep-Alive``) are dropped and a ``Content-Length`` matching the body is
  set.

Not covered: urllib3 used directly (its own connections open sockets,
which fail), HTTP/2, streaming uploads or downloads (bodies are whole),
``requests``' ``max_retries``.
"""

import errno
import http.client
import io
import re
import socket
import sys
import urllib.request

import plimsoll

#: The largest request body read from a file or iterator, in bytes. The
#: host refuses anything over its request cap (1 MiB) anyway; this bounds
#: what the guest itself reads before the host can say so.
MAX_BODY_BYTES = 16 << 20

# What http.client itself checks in request headers (the same patterns).
_is_legal_header_name = re.compile(rb"[^:\s][^:\r\n]*").fullmatch
_is_illegal_header_value = re.compile(rb"\n(?![ \t])|\r(?![ \t\n])").search
# A response header name must be a token; control characters (but tab)
# never reach a value.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+").fullmatch
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
# Framing that the synthesized response sets itself.
_FRAMING = frozenset(["content-length", "transfer-encoding", "connection", "keep-alive"])
# http.client reads at most 100 header lines of at most 64 KiB.
_MAX_RESPONSE_HEADERS = 99
_MAX_HEADER_LINE = 65000

_USERINFO = (
    "user information in a URL (user:password@host) is not supported in the "
    "sandbox and was not sent: the host adds the credential of the grant for "
    "the origin"
)

# The classes being replaced (on a second import, the ones the first
# replaced).
_BASE = getattr(http.client.HTTPConnection, "_plimsoll_base", http.client.HTTPConnection)


# --- errors -------------------------------------------------------------------


def describe(err, origin):
    """A one-line description of broker error ``err`` for a call to ``origin``."""
    if isinstance(err, (plimsoll.Denied, plimsoll.BudgetExhausted)):
        return "plimsoll refused the call to %s: %s" % (origin, err)
    if isinstance(err, plimsoll.Timeout):
        return "the call to %s timed out: %s" % (origin, err)
    if isinstance(err, plimsoll.RequestTooLarge):
        return "the call to %s was not sent: %s" % (origin, err)
    return "the call to %s failed: %s" % (origin, err)


def os_error(err, origin):
    """The ``OSError`` a socket client would raise in place of broker error
    ``err``: ``ConnectionRefusedError`` for a refusal, ``TimeoutError`` for
    a timeout, ``OSError`` otherwise; ``err`` is its ``__cause__``."""
    text = describe(err, origin)
    if isinstance(err, (plimsoll.Denied, plimsoll.BudgetExhausted)):
        exc = ConnectionRefusedError(errno.ECONNREFUSED, text)
    elif isinstance(err, plimsoll.Timeout):
        exc = TimeoutError(errno.ETIMEDOUT, text)
    else:
        exc = OSError(text)
    exc.__cause__ = err
    return exc


# --- bodies and headers -----------------------------------------------------


def read_body(body, str_encoding, file_encoding, blocksize=65536):
    """``body`` as ``bytes``, read whole: ``None``, a bytes-like object, a
    ``str`` (encoded with ``str_encoding``; ``TypeError`` when it is
    ``None``), a file-like object (text files encoded with
    ``file_encoding``) or an iterable of chunks (``str`` chunks encoded
    with ``str_encoding``). More than :data:`MAX_BODY_BYTES` raises
    :class:`plimsoll.RequestTooLarge`."""
    if body is None:
        return b""
    if isinstance(body, str):
        if str_encoding is None:
            raise TypeError("data should be a bytes-like object or an iterable, got str")
        return _bounded(_encode(body, str_encoding))
    try:
        return _bounded(bytes(memoryview(body)))
    except TypeError:
        pass
    if hasattr(body, "read"):
        chunks = _file_chunks(body, blocksize)
        encoding = file_encoding
    else:
        try:
            chunks = iter(body)
        except TypeError:
            raise TypeError(
                "data should be a bytes-like object or an iterable, got %r" % type(body)
            ) from None
        encoding = str_encoding
    out = []
    size = 0
    for chunk in chunks:
        if isinstance(chunk, str):
            if encoding is None:
                raise TypeError("data should be a bytes-like object or an iterable, got str")
            chunk = _encode(chunk, encoding)
        else:
            chunk = bytes(memoryview(chunk))
        size += len(chunk)
        _bounded(b"", size)
        out.append(chunk)
    return b"".join(out)


def _file_chunks(f, blocksize):
    while True:
        chunk = f.read(blocksize)
        if not chunk:
            return
        yield chunk


def _bounded(data, size=None):
    """``data``, or :class:`plimsoll.RequestTooLarge` when ``size`` (by
    default its length) is over :data:`MAX_BODY_BYTES`."""
    if (len(data) if size is None else size) > MAX_BODY_BYTES:
        raise plimsoll.RequestTooLarge("the request body is larger than %d bytes" % MAX_BODY_BYTES)
    return data


def _encode(text, encoding):
    """``text.encode(encoding)`` with http.client's message for Latin-1."""
    try:
        return text.encode(encoding)
    except UnicodeEncodeError as err:
        raise UnicodeEncodeError(
            err.encoding,
            err.object,
            err.start,
            err.end,
            "body (%.20r) is not valid %s. Use body.encode('utf-8') if you want "
            "to send it encoded in UTF-8." % (text[err.start : err.end], encoding),
        ) from None


def _text(value):
    """A header name or value as ``str`` (``bytes`` are Latin-1)."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("latin-1")
    return value


def response_headers(headers, body_length):
    """The host's response headers, made safe to serialise: names that are
    tokens, values without control characters (tab aside), no framing
    headers, at most 99 of them; then ``Content-Length: body_length``."""
    out = []
    for name, value in headers:
        name = str(name).strip()
        if not _TOKEN(name) or name.lower() in _FRAMING:
            continue
        value = _CONTROL.sub("", str(value)).strip()
        if len(name) + len(value) + 4 > _MAX_HEADER_LINE:
            continue
        out.append((name, value))
        if len(out) == _MAX_RESPONSE_HEADERS:
            break
    out.append(("Content-Length", str(body_length)))
    return out


def _header_bytes(text):
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8")


def response_bytes(answer, method=None):
    """The HTTP/1.1 response ``answer`` (a :class:`plimsoll.Response`) as
    raw bytes for ``http.client.HTTPResponse`` to parse."""
    status = answer.status
    lines = [b"HTTP/1.1 %d %s" % (status, http.client.responses.get(status, "").encode("ascii"))]
    for name, value in response_headers(answer.headers, len(answer.body)):
        lines.append(name.encode("ascii") + b": " + _header_bytes(value))
    return b"\r\n".join(lines) + b"\r\n\r\n" + answer.body


def _direct_response(response_class, answer, method, debuglevel):
    """The ``http.client.HTTPResponse`` that ``begin()`` would make from
    :func:`response_bytes` of ``answer``, built directly (no bytes
    serialised and parsed again): the same status, reason, version,
    ``HTTPMessage`` of the same headers (values as Latin-1, as parsed),
    length and framing. ``None`` when the parse must run: a subclass of
    ``HTTPResponse``, debugging output, or an informational (1xx) status."""
    status = answer.status
    if response_class is not http.client.HTTPResponse or debuglevel > 0 or not 200 <= status <= 999:
        return None
    body = answer.body
    response = response_class(_AnswerSocket(body), method=method)
    msg = http.client.HTTPMessage()
    for name, value in response_headers(answer.headers, len(body)):
        if not value.isascii():
            value = _header_bytes(value).decode("latin-1")
        msg[name] = value
    response.version = 11
    response.code = response.status = status
    response.reason = http.client.responses.get(status, "")
    response.headers = response.msg = msg
    response.chunked = False
    response.chunk_left = None
    response.will_close = False
    if status in (http.client.NO_CONTENT, http.client.NOT_MODIFIED) or method == "HEAD":
        response.length = 0
    else:
        response.length = len(body)
    return response


class _AnswerSocket:
    """What ``http.client.HTTPResponse`` reads a response from: a socket
    whose ``makefile`` gives the bytes of one answer."""

    def __init__(self, data):
        self._data = data

    def makefile(self, mode="rb", *args, **kwargs):
        return io.BufferedReader(io.BytesIO(self._data))

    def close(self):
        pass


# --- http.client ------------------------------------------------------------


class HTTPConnection(_BASE):
    """``http.client.HTTPConnection`` through plimsoll's broker.

    The constructor and methods are http.client's; nothing connects. A
    request is collected by ``putrequest``/``putheader``/``endheaders``/
    ``send`` and made as one broker call to ``http://host[:port]`` by
    ``request()`` or, when the request was put together piece by piece, by
    ``getresponse()``. Failures raise ``OSError`` subclasses (see the
    module's documentation).
    """

    _plimsoll_gate = True
    _plimsoll_base = _BASE
    #: The URL scheme of the connection's origin.
    scheme = "http"

    def __init__(self, host, port=None, timeout=socket._GLOBAL_DEFAULT_TIMEOUT,
                 source_address=None, blocksize=8192, **kwargs):
        if isinstance(host, str) and "@" in host:
            raise http.client.InvalidURL(_USERINFO)
        super().__init__(host, port, timeout, source_address, blocksize, **kwargs)
        self._origin()  # an unusable host fails here, as a bad port does
        self._gate_clear()
        self._gate_state = "idle"

    def _gate_clear(self):
        self._gate_method = None
        self._gate_path = None
        self._gate_headers = []
        self._gate_body = []
        self._gate_size = 0
        self._gate_response = None

    def _origin(self):
        try:
            return plimsoll._make_origin(self.scheme, self.host, self.port, self.default_port)
        except ValueError as err:
            raise http.client.InvalidURL(str(err)) from None

    def connect(self):
        """Does nothing: the host makes each call."""

    def set_tunnel(self, host, port=None, headers=None):
        """Refused: the host calls the origin itself; there are no proxies."""
        raise RuntimeError(
            "HTTP CONNECT tunnels (proxies) are not supported in the sandbox: "
            "the host calls the granted origin itself"
        )

    def close(self):
        """Forget any request in progress; the connection can be used again."""
        super().close()
        self._gate_clear()
        self._gate_state = "idle"

    def putrequest(self, method, url, skip_host=False, skip_accept_encoding=False):
        """Start a request for ``url``, a path (``/items?page=2``)."""
        if self._gate_state != "idle":
            raise http.client.CannotSendRequest(self._gate_state)
        self._validate_method(method)
        url = url or "/"
        self._validate_path(url)
        url.encode("ascii")  # as http.client encodes the request line
        if not url.startswith("/"):
            raise http.client.InvalidURL(
                "only paths ('/items?page=2') can be requested in the sandbox, not %r: "
                "there are no proxies" % (url[:80],)
            )
        self._gate_clear()
        self._gate_state = "started"
        self._method = method
        self._gate_method = method
        self._gate_path = url

    def putheader(self, header, *values):
        """Add a request header (several values are joined with ``, ``)."""
        if self._gate_state != "started":
            raise http.client.CannotSendHeader()
        if hasattr(header, "encode"):
            header = header.encode("ascii")
        if not _is_legal_header_name(header):
            raise ValueError("Invalid header name %r" % (header,))
        encoded = []
        for value in values:
            if hasattr(value, "encode"):
                value = value.encode("latin-1")
            elif isinstance(value, int):
                value = str(value).encode("ascii")
            if _is_illegal_header_value(value):
                raise ValueError("Invalid header value %r" % (value,))
            encoded.append(bytes(value))
        self._gate_headers.append((bytes(header).decode("latin-1"), b", ".join(encoded).decode("latin-1")))

    def endheaders(self, message_body=None, *, encode_chunked=False):
        """End the headers; ``message_body``, if given, is (the start of) the body."""
        if self._gate_state != "started":
            raise http.client.CannotSendHeader()
        self._gate_state = "sent"
        if message_body is not None:
            self._gate_add(message_body)

    def send(self, data):
        """Add ``data`` to the body of the request being sent (after ``endheaders``)."""
        if self._gate_state != "sent":
            raise http.client.CannotSendRequest(
                "in the sandbox, send() adds to the body of a request begun with "
                "putrequest() and endheaders(); raw HTTP cannot be sent"
            )
        self._gate_add(data)

    def _gate_add(self, data):
        try:
            chunk = read_body(data, None, "iso-8859-1", self.blocksize)
            _bounded(b"", self._gate_size + len(chunk))
        except plimsoll.RequestTooLarge as err:
            self._gate_clear()
            self._gate_state = "idle"
            raise os_error(err, self._origin()) from err
        self._gate_size += len(chunk)
        self._gate_body.append(chunk)

    def request(self, method, url, body=None, headers={}, *, encode_chunked=False):
        """Make the request (one broker call); the answer waits for ``getresponse()``.

        ``body`` is as for http.client: ``str`` (sent as Latin-1), bytes, a
        file or an iterable of bytes.
        """
        self.putrequest(method, url)
        for name, value in headers.items():
            self.putheader(name, value)
        if isinstance(body, str):
            body = _encode(body, "latin-1")
        self.endheaders(body)
        response = self._gate_call()
        self._gate_response = response

    def getresponse(self):
        """The response to the request sent: a genuine ``http.client.HTTPResponse``."""
        if self._gate_state != "sent":
            raise http.client.ResponseNotReady(self._gate_state)
        response = self._gate_response
        if response is None:
            response = self._gate_call()
        self._gate_clear()
        self._gate_state = "idle"
        return response

    def _timeout_seconds(self):
        if self.timeout is socket._GLOBAL_DEFAULT_TIMEOUT:
            return socket.getdefaulttimeout()
        return self.timeout

    def _gate_call(self):
        """The broker call for the request collected so far, and its
        response. On any failure the connection is idle again."""
        method = self._gate_method
        try:
            origin = self._origin()
            headers = plimsoll._headers_list(self._gate_headers)
            body = b"".join(self._gate_body)
            self._gate_body = []
            timeout_ms = plimsoll._timeout_ms(self._timeout_seconds())
            try:
                answer = plimsoll._call_origin(
                    method.upper(), origin, self._gate_path, headers, body, timeout_ms
                )
            except plimsoll.BrokerError as err:
                raise os_error(err, origin) from err
            response = _direct_response(self.response_class, answer, method, self.debuglevel)
            if response is not None:
                return response
            sock = _AnswerSocket(response_bytes(answer))
            if self.debuglevel > 0:
                response = self.response_class(sock, self.debuglevel, method=method)
            else:
                response = self.response_class(sock, method=method)
            response.begin()
        except BaseException:
            self._gate_clear()
            self._gate_state = "idle"
            raise
        return response


class HTTPSConnection(HTTPConnection):
    """``http.client.HTTPSConnection`` through plimsoll's broker.

    As :class:`HTTPConnection`, to ``https://host[:port]``. ``context`` is
    accepted and unused: the host makes the TLS connection and verifies it.
    """

    default_port = http.client.HTTPS_PORT
    scheme = "https"

    def __init__(self, host, port=None, *, timeout=socket._GLOBAL_DEFAULT_TIMEOUT,
                 source_address=None, context=None, blocksize=8192, check_hostname=None,
                 **kwargs):
        # check_hostname: what CPython before 3.12 took (and its urllib passes).
        super().__init__(host, port, timeout, source_address, blocksize, **kwargs)
        self._context = context


# --- urllib.request -----------------------------------------------------------


class HTTPSHandler(urllib.request.AbstractHTTPHandler):
    """``urllib.request.HTTPSHandler`` for a CPython without ``ssl`` (where
    urllib defines none): ``https://`` URLs through :class:`HTTPSConnection`."""

    def __init__(self, debuglevel=None, context=None, check_hostname=None):
        super().__init__(debuglevel if debuglevel is not None else 0)
        self._context = context

    def https_open(self, req):
        return self.do_open(http.client.HTTPSConnection, req, context=self._context)

    https_request = urllib.request.AbstractHTTPHandler.do_request_


# --- requests -----------------------------------------------------------------


def requests_timeout(timeout):
    """A requests ``timeout`` (seconds, a ``(connect, read)`` pair or a
    urllib3 ``Timeout``) as seconds for the whole call, or ``None``."""
    if timeout is None or isinstance(timeout, (int, float)):
        return timeout
    if isinstance(timeout, tuple):
        parts = timeout
    else:  # urllib3.util.Timeout
        total = getattr(timeout, "total", None)
        if isinstance(total, (int, float)):
            return total
        parts = (getattr(timeout, "_connect", None), getattr(timeout, "_read", None))
    if len(parts) != 2 or not all(isinstance(p, (int, float)) for p in parts):
        return None  # a part without a limit: the host's timeout
    return parts[0] + parts[1]


def _make_adapter(base):
    """The transport adapter class: ``base`` (requests' ``HTTPAdapter``)
    with ``send`` through the broker."""
    import requests.exceptions as rexc
    from urllib3._collections import HTTPHeaderDict
    from urllib3.response import HTTPResponse as Urllib3Response

    class HTTPAdapter(base):
        """requests' ``HTTPAdapter`` with ``send`` through plimsoll's broker.

        Takes the constructor arguments of requests' adapter; ``max_retries``
        and the pool settings have no effect (each request is one call), nor
        do ``verify``, ``cert`` and ``proxies`` (the host makes the call).
        """

        _plimsoll_gate = True

        def init_poolmanager(self, connections, maxsize, block=False, **pool_kwargs):
            """Record the pool settings; the urllib3 ``PoolManager`` (which
            no request here uses) is only made if ``poolmanager`` is read,
            so that the two adapters of every new ``Session`` are cheap."""
            self._pool_connections = connections
            self._pool_maxsize = maxsize
            self._pool_block = block
            self._plimsoll_pool_kwargs = pool_kwargs
            self.__dict__.pop("poolmanager", None)

        def __getattr__(self, name):
            if name != "poolmanager" or "_plimsoll_pool_kwargs" not in self.__dict__:
                raise AttributeError(
                    "%r object has no attribute %r" % (type(self).__name__, name)
                )
            base.init_poolmanager(
                self, self._pool_connections, self._pool_maxsize, block=self._pool_block,
                **self._plimsoll_pool_kwargs,
            )
            return self.__dict__["poolmanager"]

        def send(self, request, stream=False, timeout=None, verify=True, cert=None, proxies=None):
            url = _text(request.url)
            try:
                origin, path = plimsoll._split_url(url)
            except (TypeError, ValueError) as err:
                raise rexc.InvalidURL(str(err), request=request) from None
            headers = plimsoll._headers_list(
                [(_text(k), _text(v)) for k, v in request.headers.items()]
            )
            timeout_ms = plimsoll._timeout_ms(requests_timeout(timeout))
            method = _text(request.method).upper()
            try:
                body = read_body(request.body, "utf-8", "utf-8")
                answer = plimsoll._call_origin(method, origin, path, headers, body, timeout_ms)
            except plimsoll.BrokerError as err:
                text = describe(err, origin)
                if isinstance(err, plimsoll.Timeout):
                    raise rexc.ReadTimeout(text, request=request) from err
                raise rexc.ConnectionError(text, request=request) from err
            fields = HTTPHeaderDict()
            for name, value in response_headers(answer.headers, len(answer.body)):
                fields.add(name, value)
            raw = Urllib3Response(
                body=io.BytesIO(answer.body),
                headers=fields,
                status=answer.status,
                version=11,
                version_string="HTTP/1.1",
                reason=http.client.responses.get(answer.status, ""),
                preload_content=False,
                decode_content=False,
                enforce_content_length=False,
                request_method=method,
                request_url=url,
            )
            return self.build_response(request, raw)

    # It is the class at requests.adapters.HTTPAdapter: pickle (and reprs)
    # find it there.
    HTTPAdapter.__module__ = base.__module__
    HTTPAdapter.__qualname__ = base.__qualname__
    return HTTPAdapter


def patch_requests():
    """Mount the broker adapter on every ``requests.Session``: replace
    ``requests.adapters.HTTPAdapter`` and the name ``requests.sessions``
    uses. Imports requests; idempotent."""
    import requests.adapters
    import requests.models
    import requests.sessions

    if getattr(requests.adapters.HTTPAdapter, "_plimsoll_gate", False):
        return
    adapter = _make_adapter(requests.adapters.HTTPAdapter)
    requests.adapters.HTTPAdapter = adapter
    requests.sessions.HTTPAdapter = adapter
    _patch_session(requests.sessions.Session)
    _patch_protocols(requests)


def _patch_session(session_class):
    """Make ``trust_env`` default to ``False`` on every new ``Session``.

    With ``trust_env`` true, requests reads proxies from the environment
    (``*_proxy``, ``no_proxy``), a CA bundle from ``REQUESTS_CA_BUNDLE`` and
    credentials from ``~/.netrc`` on every request, touching the file
    system each time. In the sandbox none of them can have an effect: there
    are no proxies (the host calls the origin), TLS is verified by the
    host, and a credential from the guest is refused (the grant's is the
    only one). So the work is skipped; setting ``session.trust_env = True``
    by hand brings it back, still to no effect.
    """
    init = session_class.__init__
    if getattr(init, "_plimsoll_gate", False):
        return

    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.trust_env = False

    __init__._plimsoll_gate = True
    __init__.__doc__ = init.__doc__
    __init__.__qualname__ = init.__qualname__
    session_class.__init__ = __init__


def _patch_protocols(requests):
    """Make requests' ``isinstance`` checks against its runtime-checkable
    ``Protocol`` classes (``SupportsItems`` in ``to_key_val_list``, run for
    every session setting merged; ``SupportsRead`` in ``_encode_params``)
    cheap for the types that reach them on every request. Any other type
    gets the ``Protocol``'s own answer."""
    from collections import OrderedDict

    import requests.models
    import requests.utils
    from requests.structures import CaseInsensitiveDict

    plain = (list, tuple, str, bytes, bytearray, int, float, bool, type(None))
    mappings = (dict, OrderedDict, CaseInsensitiveDict)
    for module, name, yes, no in [
        (requests.utils, "_SupportsItems", mappings, plain),
        (requests.models, "_SupportsRead", (), mappings + plain),
    ]:
        proto = getattr(module, name, None)
        if proto is not None and not getattr(proto, "_plimsoll_gate", False):
            setattr(module, name, _fast_protocol(proto, frozenset(yes), frozenset(no)))


def _fast_protocol(proto, yes, no):
    """A class standing for runtime-checkable ``Protocol`` ``proto`` in
    ``isinstance``: ``True`` for instances of exactly the types in ``yes``,
    ``False`` for those in ``no``, ``proto``'s answer otherwise."""

    class FastProtocol(type):
        def __instancecheck__(cls, obj):
            kind = type(obj)
            if kind in yes:
                return True
            if kind in no:
                return False
            return isinstance(obj, proto)

        def __subclasscheck__(cls, sub):
            return issubclass(sub, proto)

    return FastProtocol(proto.__name__, (), {
        "__doc__": proto.__doc__, "__module__": proto.__module__, "_plimsoll_gate": True,
    })


class _PatchingLoader:
    """Wraps the loader of ``requests``: runs it, then :func:`patch_requests`."""

    def __init__(self, loader):
        self._loader = loader

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module):
        self._loader.exec_module(module)
        patch_requests()


class RequestsHook:
    """The first ``sys.meta_path`` entry: finds ``requests`` through the
    other finders (wherever it comes from) and patches it once loaded."""

    def find_spec(self, name, path=None, target=None):
        if name != "requests":
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _PatchingLoader(spec.loader)
        return spec

    def invalidate_caches(self):
        pass


# --- installing -----------------------------------------------------------------


def install():
    """Route http.client, urllib.request and requests through the broker.

    Idempotent. ``requests`` is patched as soon as it is imported (now, if
    it already is).
    """
    if not getattr(http.client.HTTPConnection, "_plimsoll_gate", False):
        http.client.HTTPConnection = HTTPConnection
        http.client.HTTPSConnection = HTTPSConnection
        if "HTTPSConnection" not in http.client.__all__:
            http.client.__all__.append("HTTPSConnection")
    if not hasattr(urllib.request, "HTTPSHandler"):
        urllib.request.HTTPSHandler = HTTPSHandler
        if "HTTPSHandler" not in urllib.request.__all__:
            urllib.request.__all__.append("HTTPSHandler")
    if not any(type(f).__name__ == "RequestsHook" for f in sys.meta_path):
        sys.meta_path.insert(0, RequestsHook())
    if "requests" in sys.modules:
        patch_requests()
