"""A stand-in for the ``certifi`` package in plimsoll's Python guests.

requests imports ``certifi.where()`` for the CA bundle it would verify TLS
with. In the sandbox nothing here opens a TLS connection: the host makes
every call (``plimsoll_http`` routes requests, urllib and http.client
through it) and verifies the upstream's certificate itself, against its own
trust store. So no CA bundle is shipped: ``where()`` names a file that does
not exist and ``contents()`` is empty, and ``verify=`` has no effect.

vendor.sh installs this file as ``certifi/__init__.py`` beside the
vendored requests.
"""

__all__ = ["contents", "where"]
__version__ = "0+plimsoll"

#: Where a CA bundle would be; no such file exists in the sandbox.
CA_BUNDLE_PATH = "/plimsoll/vendor/certifi/cacert.pem"


def where():
    """The path of the (absent) CA bundle: TLS is verified by the host."""
    return CA_BUNDLE_PATH


def contents():
    """The CA bundle's contents: empty, since TLS is verified by the host."""
    return ""
