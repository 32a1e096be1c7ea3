"""plimsoll-guest: write plimsoll agents in Python, compiled with componentize-py.

The package ships plimsoll's WIT (copied in at build time) and a
``componentize-py.toml`` pointing at it, so ``componentize-py -w agent
componentize app`` finds the world on the Python path, as with Spin's SDK.

- :mod:`plimsoll_guest.broker`: HTTP calls under the run's grants, typed errors.
- :mod:`plimsoll_guest.agent`: ``Run = agent.command(main)``, the entry point.
- :mod:`plimsoll_guest.errors`: the ``CallError`` classes (also in ``broker``).

Standard I/O, files under ``/work``, clocks, random, ``os.environ`` and
``sys.argv`` work as usual inside ``main``.
"""

from . import agent, broker, errors

__all__ = ["agent", "broker", "errors", "__version__"]

#: The SDK's version; the WIT it binds is ``plimsoll:sandbox@0.1.3``.
__version__ = "0.1.3"
