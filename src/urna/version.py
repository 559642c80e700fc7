"""urna's version, as its installed distribution says (one place; every layer may read it)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("urna")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"
