"""The ``urna`` command line: thin verbs over the library."""

from urna.cli.app import main

__all__ = ["main"]
