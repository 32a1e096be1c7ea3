"""The one seam between the SDK and componentize-py's generated bindings.

Inside a component (``sys.platform == "wasi"``) this module imports the
bindings componentize-py generates into ``plimsoll_guest.wit`` at build time
(see ``componentize-py.toml``). Anywhere else (host CPython, unit tests) it
imports nothing, and :data:`transport` stays ``None`` until a test installs a
stand-in with :func:`plimsoll_guest.broker.set_transport`.

The imports happen when the module is first imported, which is build time:
componentize-py snapshots the interpreter after importing the app, and a
component cannot import new modules at run time.
"""

import sys
from typing import Any, List, Optional, Tuple

IN_COMPONENT = sys.platform == "wasi"


class WitTransport:
    """Calls the real `plimsoll:sandbox/broker` import.

    A transport has two methods, ``call`` and ``call_origin``, taking the
    request's parts and returning an object with ``status``, ``headers`` and
    ``body``; a refusal raises ``self.error`` whose ``value`` is the generated
    ``CallError_*`` case.
    """

    def __init__(self, broker: Any, err: type) -> None:
        self._broker = broker
        #: The exception class the bindings raise for a `result` error.
        self.error = err

    def _request(self, method: str, path: str, headers: List[Tuple[str, str]], body: bytes) -> Any:
        return self._broker.Request(method=method, path=path, headers=headers, body=body)

    def call(self, api: str, method: str, path: str, headers: List[Tuple[str, str]], body: bytes) -> Any:
        """`broker.call(api, request)`."""
        return self._broker.call(api, self._request(method, path, headers, body))

    def call_origin(
        self,
        origin: str,
        method: str,
        path: str,
        headers: List[Tuple[str, str]],
        body: bytes,
        timeout_ms: Optional[int],
    ) -> Any:
        """`broker.call-origin(origin, request, timeout-ms)`."""
        return self._broker.call_origin(origin, self._request(method, path, headers, body), timeout_ms)


if IN_COMPONENT:
    from componentize_py_types import Err
    from plimsoll_guest.wit.imports import broker as _wit_broker

    #: The transport broker calls use; ``None`` outside a component.
    transport: Optional[Any] = WitTransport(_wit_broker, Err)
else:

    class Err(Exception):
        """Stands in for componentize-py's ``Err`` on host CPython, so that
        ``Run().run()`` fails the same way there."""

        def __init__(self, value: Any) -> None:
            super().__init__(value)
            self.value = value

    transport = None
