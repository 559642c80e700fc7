"""``validate``'s check of a collection's history: every retained version's ``created`` is a
time no later than its successor's (and the head's no later than now); the parent chain from
the head reaches every version the folder retains; and each version's ``changes`` are what
its source tables say changed since its parent (sources added, changed and removed, by
fingerprint). A version file forged or left behind, a head that cuts older versions off, or
counts that lie are named here, not met later as a wrong ``--at``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from urna.errors import FormatError
from urna.format.catalog import Catalog
from urna.format.sources import read_table
from urna.format.versions import PRUNED, VERSIONS, chain, created_at, pruned

CLOCK_SLACK = timedelta(minutes=5)  # another machine's clock may run a little ahead


def _bad(message: str) -> FormatError:
    return FormatError(message, check=19, section="versions")


def live_sources(folder: Path, catalog: Catalog) -> dict[str, str] | None:
    """Each live source's fingerprint in ``catalog``'s files (None: a file has no table)."""
    out: dict[str, str] = {}
    for entry in catalog.files:
        rows = read_table(folder, entry.file or "")
        if rows is None:
            return None
        dead = {uri for uri, _, _ in entry.deleted}
        out.update((r.uri, r.doc_sha) for r in rows if r.uri not in dead)
    return out


def check_history(folder: Path) -> None:
    versions = chain(folder)  # the head first
    later = datetime.now(UTC) + CLOCK_SLACK
    for n, (version, catalog) in enumerate(versions):
        if not catalog.created:
            continue  # a version-1 catalog records no time
        when = created_at(version, catalog)
        if when > later:
            after = "in the future" if n == 0 else "after the version that follows it"
            raise _bad(f"version {version} records created {catalog.created}, {after}")
        later = when
    reached = {v for v, _ in versions} | set(pruned(folder))
    kept = folder / VERSIONS
    for path in sorted(kept.glob("*.json")) if kept.is_dir() else []:
        if path.name != PRUNED and f"sha256:{path.stem}" not in reached:
            raise _bad(
                f"versions/{path.name} is retained, but no parent chain from the head reaches it"
            )
    for (version, catalog), older in zip(versions, [*versions[1:], None], strict=True):
        if not catalog.changes or catalog.format_version < 2:
            continue
        if catalog.parent is not None and (older is None or older[0] != catalog.parent):
            continue  # its parent was pruned: nothing to compare with
        now = live_sources(folder, catalog)
        before = {} if older is None else live_sources(folder, older[1])
        if now is None or before is None:
            continue
        counted = {
            "added": sum(1 for u in now if u not in before),
            "changed": sum(1 for u, d in now.items() if u in before and before[u] != d),
            "removed": sum(1 for u in before if u not in now),
        }
        recorded = {"added": 0, "changed": 0, "removed": 0, **catalog.changes}
        if recorded != counted:
            raise _bad(
                f"version {version} records changes {recorded}, its source tables say {counted}"
            )
