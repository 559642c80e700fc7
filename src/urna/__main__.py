"""``python -m urna``: the same as the ``urna`` command."""

from urna.cli.app import main

main()
