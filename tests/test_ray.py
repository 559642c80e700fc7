"""A real three-node Ray cluster (a head and two workers started with `ray start`), inside a
network namespace that has only loopback, so Ray's listeners never leave this machine
(ray-project/ray#26293). Builds on it must equal the local build byte for byte; a collection
served on Ray Serve must answer as the local server. Everything the test starts is stopped
by its process group and by the namespace's own process list, never by `ray stop`."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import needs_models, run
from tests.server_helpers import Server, assert_same_answer, q
from tests.test_collection import write_docs

VENV = Path(sys.executable).parent
NODE_MEMORY = str(2_500_000_000)
OBJECT_STORE = str(200_000_000)


def _why_not() -> str:
    if importlib.util.find_spec("ray") is None:
        return "needs the ray extra: scripts/setup ray"
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return "needs root and iproute2 to make a loopback-only network namespace"
    probe = subprocess.run(["ip", "netns", "list"], capture_output=True)
    return "" if probe.returncode == 0 else "ip netns is not available here"


pytestmark = [
    pytest.mark.slow,
    needs_models,
    pytest.mark.skipif(bool(_why_not()), reason=_why_not() or "-"),
]


class Cluster:
    def __init__(self, namespace: str, port: int, env: dict[str, str], logs: Path) -> None:
        self.ns, self.port, self.env, self.logs = namespace, port, env, logs
        self.procs: list[subprocess.Popen[bytes]] = []
        self.temp = Path(tempfile.mkdtemp(prefix="urna-ray-", dir="/tmp"))

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def inside(self, *args: str) -> list[str]:
        return ["ip", "netns", "exec", self.ns, *args]

    def start_node(self, *args: str) -> None:
        # Its own short temp folder (socket paths stay under 108 bytes): no state of another
        # Ray instance on this machine (a stale /tmp/ray/ray_current_cluster) can leak in.
        args = (*args, f"--temp-dir={self.temp}")
        cmd = self.inside(str(VENV / "ray"), "start", "--block", "--node-ip-address=127.0.0.1",
                          f"--memory={NODE_MEMORY}", f"--object-store-memory={OBJECT_STORE}",
                          *args)  # fmt: skip
        log = open(self.logs / f"node-{len(self.procs)}.log", "wb")  # noqa: SIM115
        self.procs.append(
            subprocess.Popen(
                cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        )
        log.close()

    def add_node(self, count: int, *args: str, attempts: int = 3) -> None:
        """Start one node and wait until the cluster has ``count`` nodes. Ray gives a node 30 s
        to register; on two busy cores that is sometimes too short, so a node that gave up is
        started again (at most ``attempts`` times)."""
        for attempt in range(attempts):
            self.start_node(*args)
            try:
                self.wait_for(count)
                return
            except RuntimeError:
                if attempt == attempts - 1:
                    raise
                _stop_group(self.procs.pop())

    def nodes(self) -> int:
        status = subprocess.run(
            self.inside(str(VENV / "ray"), "status", f"--address={self.address}"),
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return status.stdout.count(" node_") if status.returncode == 0 else 0

    def wait_for(self, count: int, seconds: float = 180) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for i, p in enumerate(self.procs):
                if p.poll() is not None:
                    tail = (self.logs / f"node-{i}.log").read_text()[-3000:]
                    raise RuntimeError(f"ray node {i} exited during start-up:\n{tail}")
            if self.nodes() >= count:
                return
            time.sleep(2)
        raise RuntimeError(f"the cluster did not reach {count} nodes")

    def stop(self) -> None:
        for proc in self.procs:
            _stop_group(proc)
        # Whatever the nodes started in the namespace (raylets, workers) goes with it.
        for _ in range(3):
            pids = subprocess.run(["ip", "netns", "pids", self.ns], capture_output=True, text=True)
            alive = [int(p) for p in pids.stdout.split()]
            if not alive:
                break
            for pid in alive:
                _signal(pid, signal.SIGKILL)
            time.sleep(1)
        subprocess.run(["ip", "netns", "del", self.ns], check=False)
        shutil.rmtree(self.temp, ignore_errors=True)


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _stop_group(proc: subprocess.Popen[Any], grace: float = 30) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    namespace = f"urna-ray-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", namespace], check=True)
    env = dict(os.environ)
    env.update(
        RAY_AUTH_MODE="token",
        RAY_AUTH_TOKEN=secrets.token_hex(32),
        RAY_USAGE_STATS_ENABLED="0",
        URNA_CACHE_DIR=str(tmp_path_factory.mktemp("ray-cache")),
    )
    made = Cluster(namespace, 6391, env, tmp_path_factory.mktemp("ray-logs"))
    try:
        subprocess.run(made.inside("ip", "link", "set", "lo", "up"), check=True)
        made.add_node(1, "--head", f"--port={made.port}", "--num-cpus=1",
                      "--include-dashboard=false")  # fmt: skip
        for i in (1, 2):
            made.add_node(i + 1, f"--address={made.address}", "--num-cpus=1",
                          f"--resources={json.dumps({f'urna_node_{i}': 1})}")  # fmt: skip
        yield made
    finally:
        made.stop()


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ray-docs")
    folder = root / "docs"
    folder.mkdir()
    write_docs(folder, n=24)
    return folder


def test_build_on_ray_equals_the_local_build(
    cluster: Cluster, docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    epoch = "1764547200"  # a catalog records when it was made: both builds at one instant
    monkeypatch.setenv("SOURCE_DATE_EPOCH", epoch)
    local = docs.parent / "local"
    assert run("build", str(docs), "-o", str(local), "--shards", "4").exit_code == 0
    remote = docs.parent / "remote"
    built = subprocess.run(
        cluster.inside(
            str(VENV / "urna"),
            "build",
            str(docs),
            "-o",
            str(remote),
            "--shards",
            "4",
            "--ray",
            cluster.address,
        ),
        env={**cluster.env, "SOURCE_DATE_EPOCH": epoch},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    assert "4 built" in built.stdout or "3 built" in built.stdout
    mine = {p.relative_to(local): p.read_bytes() for p in local.rglob("*") if p.is_file()}
    theirs = {p.relative_to(remote): p.read_bytes() for p in remote.rglob("*") if p.is_file()}
    assert mine == theirs  # every shard file, table, version and the catalog, byte for byte


def _get_inside(cluster: Cluster, url: str) -> tuple[int, Any]:
    """GET from inside the namespace (the only place the Ray Serve proxy listens)."""
    script = (
        "import json, sys, urllib.request, urllib.error\n"
        "try:\n"
        "    r = urllib.request.urlopen(sys.argv[1], timeout=60)\n"
        "    print(r.status); print(r.read().decode())\n"
        "except urllib.error.HTTPError as e:\n"
        "    print(e.code); print(e.read().decode())\n"
        "except OSError:\n"
        "    print(0); print('null')\n"
    )
    out = subprocess.run(
        cluster.inside(sys.executable, "-c", script, url),
        capture_output=True,
        text=True,
        timeout=120,
    )
    status, _, body = out.stdout.partition("\n")
    try:
        return int(status or 0), json.loads(body or "null")
    except ValueError:
        return int(status or 0), None


def test_serve_on_ray_answers_as_the_local_server(cluster: Cluster, docs: Path) -> None:
    folder = docs.parent / "served"
    assert run("build", str(docs), "-o", str(folder), "--shards", "3").exit_code == 0
    port = 8790
    proc = subprocess.Popen(
        cluster.inside(
            str(VENV / "urna"),
            "serve",
            str(folder),
            "--ray",
            cluster.address,
            "--port",
            str(port),
            "--place",
            "0=urna_node_1",
            "--place",
            "2=urna_node_2",
        ),
        env=cluster.env,
        stdout=subprocess.DEVNULL,
        stderr=(log := open(folder.parent / "serve.log", "wb")),  # noqa: SIM115
        start_new_session=True,
    )
    log.close()
    local = Server([folder])
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            assert proc.poll() is None, (folder.parent / "serve.log").read_text()[-2000:]
            status, body = _get_inside(cluster, base + "/api/health")
            if status == 200 and body == {"status": "ok", "databases": 1}:
                break
            time.sleep(2)
        else:
            raise AssertionError("Ray Serve did not come up")
        name = folder.name
        for query in ("how do I install it on linux", "citation content hash", "shards"):
            for mode in ("hybrid", "text", "vector"):
                path = "/v1/search?" + q({"db": name, "q": query, "mode": mode, "limit": "5"})
                status, remote = _get_inside(cluster, base + path)
                assert status == 200, remote
                _, mine = local.get(path)
                for body in (remote, mine):
                    body.pop("query_time_ms")
                assert_same_answer(remote, mine, where=f"{query} {mode}")
            path = "/api/search?" + q({"db": name, "q": query, "limit": "3"})
            assert_same_answer(_get_inside(cluster, base + path), local.get(path), where=query)
        hit = remote["hits"][0]
        cited = _get_inside(
            cluster, base + "/v1/cite?" + q({"db": name, "citation": hit["citation_id"]})
        )
        assert cited[0] == 200 and cited[1]["text"] == hit["text"]
        # A new version (a segment and a deletion) is picked up without a restart, and
        # still answers as the local server, which follows the folder the same way.
        edited = sorted(docs.glob("*.md"))[0]
        edited.write_text(edited.read_text() + "\n\nA quokka smiles at the camera.\n")
        assert run("build", str(docs), "-o", str(folder), "--no-merge").exit_code == 0
        path = "/v1/search?" + q({"db": name, "q": "quokka camera", "mode": "text", "limit": "5"})
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # each server follows the folder on its own clock
            status, remote = _get_inside(cluster, base + path)
            _, mine = local.get(path)
            if status == 200 and remote["hits"] and remote["version"] == mine.get("version"):
                break
            time.sleep(0.5)
        else:
            raise AssertionError(f"the new version was not picked up: {remote} {mine}")
        for body in (remote, mine):
            body.pop("query_time_ms")
        assert_same_answer(remote, mine, where="after an update")
        for query in ("how do I install it on linux", "shards"):
            path = "/v1/search?" + q({"db": name, "q": query, "mode": "hybrid", "limit": "5"})
            _, remote = _get_inside(cluster, base + path)
            _, mine = local.get(path)
            for body in (remote, mine):
                body.pop("query_time_ms")
            assert_same_answer(remote, mine, where=f"{query} after an update")
    finally:
        local.stop()
        _stop_group(proc, grace=60)
    assert proc.returncode is not None
