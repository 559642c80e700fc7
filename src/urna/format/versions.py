"""A collection's versions: every catalog it had, kept until a retention rule drops it.

Each version's catalog bytes are kept as ``versions/<hex>.json`` (the hex of its SHA-256,
so a file names its own content), written before ``catalog.json`` is replaced: the head is
always among them. Versions form a chain through each catalog's ``parent``. A version
dropped by ``prune`` leaves its file and a record in ``versions/pruned.json`` (the
version, when it was made, when it was pruned), so a citation or ``--at`` naming it gets an
error that says so. Data files (shards, segments and their source tables) are removed only
when no retained version names them.

``--at`` takes a version (``sha256:<hex>`` or a hex prefix of at least 4 digits, as git
abbreviates commits) or an ISO 8601 time (the newest version made at or before it).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from urna.errors import FileError, QueryError, UrnaError
from urna.format.atomic import atomic_writer
from urna.format.catalog import CATALOG, Catalog, canonical, parse_catalog, read_catalog
from urna.format.manifest import strict_loads
from urna.format.regular import inside, read_regular
from urna.format.sources import table_name

VERSIONS = "versions"
LOCK = ".lock"
PRUNED = "pruned.json"
HEX = re.compile(r"(?:sha256:)?([0-9a-f]{4,64})")


def now() -> str:
    """This instant as ISO 8601 UTC with microseconds; ``SOURCE_DATE_EPOCH`` (the
    reproducible-builds convention) fixes it when set."""
    fixed = os.environ.get("SOURCE_DATE_EPOCH")
    seconds = float(fixed) if fixed and fixed.isdigit() else time.time()
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(value: str) -> datetime:
    """An ISO 8601 date or time; one without a zone is UTC."""
    try:
        found = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise QueryError(f"invalid version or time: {value!r}") from None
    return found if found.tzinfo else found.replace(tzinfo=UTC)


def _hex(version: str) -> str:
    return version.removeprefix("sha256:")


def version_path(folder: Path, version: str) -> Path:
    return folder / VERSIONS / f"{_hex(version)}.json"


def keep(folder: Path, raw: bytes) -> str:
    """Store one version's catalog bytes (before it becomes the head); returns its version."""
    version = Catalog.version_of(raw)
    (folder / VERSIONS).mkdir(exist_ok=True)
    path = version_path(folder, version)
    if not path.is_file():
        with atomic_writer(path) as handle:
            handle.write(raw)
    return version


def publish(folder: Path, catalog: Catalog) -> str:
    """Keep the new version, then make it the head (``catalog.json``, replaced atomically)."""
    raw = catalog.encode()
    version = keep(folder, raw)
    with atomic_writer(folder / CATALOG) as handle:
        handle.write(raw)
    return version


@dataclass(frozen=True)
class Pruned:
    version: str
    created: str
    pruned: str


def pruned(folder: Path) -> dict[str, Pruned]:
    """Versions dropped by ``prune``, by version."""
    path = folder / VERSIONS / PRUNED
    try:
        doc = strict_loads(read_regular(inside(folder / VERSIONS, PRUNED)).decode("utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, ValueError, UrnaError) as exc:
        raise FileError(f"unreadable {path}: {exc}") from None
    items = doc.get("pruned") if isinstance(doc, dict) else None
    if not isinstance(items, list):
        raise FileError(f"unreadable {path}: no list of pruned versions")
    out = {}
    for item in items:
        if not isinstance(item, dict) or not all(
            isinstance(item.get(k), str) for k in ("version", "created", "pruned")
        ):
            raise FileError(f"unreadable {path}: a record lacks version, created or pruned")
        out[item["version"]] = Pruned(item["version"], item["created"], item["pruned"])
    return out


def read_version(folder: Path, version: str) -> tuple[Catalog, bytes]:
    """One retained version's catalog (checked: its bytes hash to its name)."""
    if version == _head_version(folder):
        return read_catalog(folder)
    gone = pruned(folder).get(version)
    if gone is not None:
        raise QueryError(f"version {version} was pruned on {gone.pruned}")
    try:
        raw = read_regular(inside(folder / VERSIONS, f"{_hex(version)}.json"))
    except (FileNotFoundError, UrnaError):
        raise QueryError(f"version {version} is not retained in {folder}") from None
    if Catalog.version_of(raw) != version:
        raise FileError(f"versions/{_hex(version)}.json does not hash to its name")
    try:
        catalog = parse_catalog(strict_loads(raw.decode("utf-8")))
    except (UnicodeDecodeError, ValueError) as exc:
        raise FileError(f"versions/{_hex(version)}.json is not valid JSON ({exc})") from None
    return catalog, raw


def latest_version(folder: Path) -> tuple[str, Catalog] | None:
    """The newest retained version whose catalog reads and hashes to its name, by its
    ``created`` time (what a build that starts over follows when the head is unreadable)."""
    gone = pruned(folder)
    found: list[tuple[str, str, Catalog]] = []
    versions = folder / VERSIONS
    for path in sorted(versions.glob("*.json")) if versions.is_dir() else []:
        version = "sha256:" + path.stem
        if path.name == PRUNED or version in gone:
            continue
        try:
            raw = read_regular(inside(versions, path.name))
            if Catalog.version_of(raw) != version:
                continue
            catalog = parse_catalog(strict_loads(raw.decode("utf-8")))
        except (OSError, UnicodeDecodeError, ValueError, UrnaError):
            continue
        found.append((catalog.created, version, catalog))
    if not found:
        return None
    _, version, catalog = max(found, key=lambda x: (x[0], x[1]))
    return version, catalog


def _head_version(folder: Path) -> str:
    try:
        return Catalog.version_of(read_regular(inside(folder, CATALOG)))
    except (OSError, UrnaError):
        return ""


def chain(folder: Path) -> list[tuple[str, Catalog]]:
    """The head and every retained version before it, newest first (the walk stops at the
    first pruned or missing parent)."""
    catalog, raw = read_catalog(folder)
    out = [(Catalog.version_of(raw), catalog)]
    seen = {out[0][0]}
    while (parent := out[-1][1].parent) is not None and parent not in seen:
        try:
            found, _ = read_version(folder, parent)
        except QueryError:
            break
        out.append((parent, found))
        seen.add(parent)
    return out


def created_at(version: str, catalog: Catalog) -> datetime:
    """When ``version`` was made, as its catalog records it (an error names the version)."""
    try:
        return parse_time(catalog.created)
    except QueryError:
        raise FileError(
            f"version {version} records created {catalog.created!r}, which is not a time"
        ) from None


def resolve_at(folder: Path, at: str) -> str:
    """The version ``at`` names: a version, a hex prefix (4 digits or more), or an ISO time
    (anything starting YYYY-MM)."""
    at = at.strip()
    versions = chain(folder)
    gone = pruned(folder)
    if re.match(r"\d{4}-\d{2}", at):
        when = parse_time(at)
        for version, catalog in versions:
            if catalog.created and created_at(version, catalog) <= when:
                return version
        dropped = [p for p in gone.values() if p.created and parse_time(p.created) <= when]
        if dropped:
            last = max(dropped, key=lambda p: p.created)
            raise QueryError(f"the version at {at} ({last.version}) was pruned on {last.pruned}")
        raise QueryError(f"no version of {folder} is as old as {at}")
    match = HEX.fullmatch(at)
    if match is None:
        raise QueryError(
            f"invalid version {at!r}: a version hash (or a prefix of 4+ hex digits) or an ISO time"
        )
    prefix = match.group(1)
    known = [v for v, _ in versions] + list(gone)
    hits = sorted({v for v in known if _hex(v).startswith(prefix)})
    if len(hits) > 1:
        raise QueryError(f"version prefix {at} is ambiguous: {len(hits)} versions match")
    if not hits:
        raise QueryError(f"no retained version of {folder} starts with {at}")
    if hits[0] in gone:
        raise QueryError(f"version {hits[0]} was pruned on {gone[hits[0]].pruned}")
    return hits[0]


def record_pruned(folder: Path, dropped: list[tuple[str, Catalog]]) -> None:
    known = pruned(folder)
    stamp = now()
    for version, catalog in dropped:
        known[version] = Pruned(version, catalog.created, stamp)
    doc = {"pruned": [vars(p) for p in sorted(known.values(), key=lambda p: p.created)]}
    with atomic_writer(folder / VERSIONS / PRUNED) as handle:
        handle.write(canonical(doc))
    for version, _ in dropped:
        with contextlib.suppress(FileNotFoundError):
            version_path(folder, version).unlink()


def prune(folder: Path, keep: int | None = None, since: str | None = None) -> list[str]:
    """Drop the versions beyond the newest ``keep`` or made before ``since`` (the head is
    always kept), then the files no retained version names. Returns the versions dropped."""
    if keep is None and since is None:
        raise UrnaError("prune needs --keep N or --since TIME")
    if keep is not None and keep < 1:
        raise UrnaError(f"--keep must be at least 1 (the head), got {keep}")
    limit = parse_time(since) if since is not None else None
    versions = chain(folder)
    dropped = []
    for n, (version, catalog) in enumerate(versions):
        if n == 0:
            continue
        old = keep is not None and n >= keep
        early = limit is not None and (not catalog.created or parse_time(catalog.created) < limit)
        if old or early:
            dropped.append((version, catalog))
    if dropped:
        record_pruned(folder, dropped)
        collect(folder)
    return [v for v, _ in dropped]


@contextlib.contextmanager
def writing(folder: Path) -> Iterator[None]:
    """One writer at a time per collection (an advisory lock on ``folder/.lock``): a build,
    a watch, a compaction and a prune never publish over each other."""
    own_files(folder)
    flags = os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(folder / LOCK, flags | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except OSError as exc:
        raise FileError(f"cannot take the lock {folder / LOCK}: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FileError(f"{folder / LOCK} is not a regular file: remove it")
        os.set_blocking(fd, True)
        _lock(fd)
        yield
    finally:
        os.close(fd)  # closing the descriptor lets the lock go


# A collection's own files and what each must be: no link, no FIFO, nothing a write would
# follow out of the folder.
OWN = ((LOCK, stat.S_ISREG), (VERSIONS, stat.S_ISDIR), (".stat-cache", stat.S_ISREG))


def own_files(folder: Path) -> None:
    """Refuse, before anything is written, a collection whose own files are links, FIFOs or
    of the wrong kind: every write of a collection stays inside it."""
    for name, kind in OWN:
        try:
            mode = os.lstat(folder / name).st_mode
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(mode):
            raise FileError(
                f"{folder / name} is a symbolic link; a collection's own files never are: remove it"
            )
        if not kind(mode):
            what = "a folder" if kind is stat.S_ISDIR else "a regular file"
            raise FileError(f"{folder / name} is not {what}: remove it")


def _lock(fd: int) -> None:
    """Wait for the exclusive lock: ``flock`` on POSIX, ``msvcrt.locking`` of the first byte
    on Windows (imported here, so ``import urna`` works where either is missing)."""
    if sys.platform == "win32":
        import msvcrt

        while True:
            try:
                msvcrt.locking(fd, msvcrt.LK_LOCK, 1)  # retries for 10 s, then raises
                return
            except OSError:
                continue
    import fcntl

    fcntl.flock(fd, fcntl.LOCK_EX)


def retained_files(folder: Path) -> set[str]:
    """Every data file a retained version names (the head's included)."""
    names: set[str] = set()
    for _, catalog in chain(folder):
        names.update(e.file for e in catalog.files if e.file)
    return names


DATA_FILE = re.compile(r"(?:shard|segment)-[0-9a-f-]+\.urna")


def collect(folder: Path) -> None:
    """Remove data files (and their source tables) that no retained version names: those
    of pruned versions, and those a killed writer left before its catalog was published."""
    named = retained_files(folder)
    tables = {table_name(n) for n in named}
    for path in folder.iterdir():
        name = path.name
        data = DATA_FILE.fullmatch(name) is not None and name not in named
        table = name.endswith(".sources.json") and name not in tables
        if data or table:
            with contextlib.suppress(OSError):
                path.unlink()


def describe_versions(folder: Path) -> list[dict[str, object]]:
    """``urna history``: each retained version, newest first."""
    rows = []
    for version, catalog in chain(folder):
        size = 0
        for entry in catalog.files:
            with contextlib.suppress(OSError):
                size += (folder / (entry.file or "")).stat().st_size
        rows.append(
            {
                "version": version,
                "created": catalog.created,
                "added": catalog.changes.get("added", 0),
                "changed": catalog.changes.get("changed", 0),
                "removed": catalog.changes.get("removed", 0),
                "chunks": catalog.n_chunks,
                "files": len(catalog.files),
                "segments": len(catalog.segments),
                "bytes": size,
            }
        )
    return rows
