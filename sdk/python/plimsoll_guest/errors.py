"""Typed errors for broker calls: one exception class per WIT `call-error` case.

Every refusal the host reports arrives as a subclass of :class:`CallError`, so
code can catch one case (``except Denied``) or all of them
(``except CallError``). Each class carries the WIT case name in ``tag``; the two
cases that carry a message (``denied`` and ``upstream``) keep it in ``detail``.
"""

from typing import Dict, Optional, Type

__all__ = [
    "CallError",
    "Denied",
    "BudgetExhausted",
    "RequestTooLarge",
    "ResponseTooLarge",
    "Timeout",
    "Upstream",
    "from_wit",
]


class CallError(Exception):
    """A broker call that produced no response. Base class of every case."""

    #: The WIT name of the `call-error` case, e.g. ``"budget-exhausted"``.
    tag: str = ""

    def __init__(self, detail: Optional[str] = None) -> None:
        super().__init__(detail)
        #: The host's message for ``denied`` and ``upstream``; ``None`` otherwise.
        self.detail: Optional[str] = detail

    def __str__(self) -> str:
        return self.tag if self.detail is None else f"{self.tag}: {self.detail}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.detail!r})"


class Denied(CallError):
    """The grant does not allow the call (unknown grant, method or route not
    listed, non-canonical path, refused header, or no grant for the origin).
    ``detail`` says which; nothing was sent."""

    tag = "denied"


class BudgetExhausted(CallError):
    """The run has used its whole call budget; nothing was sent."""

    tag = "budget-exhausted"


class RequestTooLarge(CallError):
    """The request body is larger than the request cap (1 MiB); nothing was sent."""

    tag = "request-too-large"


class ResponseTooLarge(CallError):
    """The upstream answered with more than the grant's response cap."""

    tag = "response-too-large"


class Timeout(CallError):
    """The upstream did not answer within the per-call timeout."""

    tag = "timeout"


class Upstream(CallError):
    """The upstream could not be reached, answered with garbage, or the host
    shed the call. ``detail`` says which."""

    tag = "upstream"


# componentize-py names the generated class of each variant case
# `CallError_<CamelCase>`; the cases with a payload hold it in `.value`.
_BY_BINDING_NAME: Dict[str, Type[CallError]] = {
    "CallError_Denied": Denied,
    "CallError_BudgetExhausted": BudgetExhausted,
    "CallError_RequestTooLarge": RequestTooLarge,
    "CallError_ResponseTooLarge": ResponseTooLarge,
    "CallError_Timeout": Timeout,
    "CallError_Upstream": Upstream,
}

_WITH_DETAIL = (Denied, Upstream)


def from_wit(case: object) -> CallError:
    """Turns the payload of a generated binding's ``Err`` (a ``CallError_*``
    case object) into the matching :class:`CallError` subclass.

    An unknown case (a newer host than these bindings) raises ``TypeError``
    rather than being guessed at.
    """
    cls = _BY_BINDING_NAME.get(type(case).__name__)
    if cls is None:
        raise TypeError(f"unknown broker call-error case: {type(case).__name__}")
    if cls in _WITH_DETAIL:
        detail = getattr(case, "value")
        if not isinstance(detail, str):
            raise TypeError(f"{type(case).__name__}.value is not a string")
        return cls(detail)
    return cls()
