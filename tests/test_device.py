"""Devices (``embed/device.py``): ``--device`` for build and serve, a GPU that torch does not
see is one clear error, ``auto`` takes the CPU where there is no GPU (this machine), and a
file records a GPU device while a CPU build's bytes stay as they were."""

from __future__ import annotations

from pathlib import Path

import pytest

import urna
from tests.conftest import assert_error, needs_models, one_hot_chunks, run
from urna.build.write import build
from urna.embed.device import DEVICE_VARIABLE, arithmetic, asked_device, resolved_device
from urna.errors import BuildError, ModelError


def read_manifest(path: Path) -> dict[str, object]:
    with urna.open(path) as corpus:
        return dict(corpus.manifest)


DOCS = Path(__file__).resolve().parents[1] / "examples" / "quickstart"


@needs_models
@pytest.mark.parametrize("verb", ["build", "serve"])
@pytest.mark.parametrize("device", ["cuda", "mps"])
def test_a_gpu_torch_does_not_see_is_a_clear_error(
    verb: str, device: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    if device == "cuda" and torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    monkeypatch.setenv(DEVICE_VARIABLE, "auto")  # restored after: --device sets it
    args = [str(DOCS), "-o", str(tmp_path / "x.urna")] if verb == "build" else [str(tmp_path)]
    message = assert_error(run(verb, *args, "--device", device), f"{device} requested")
    assert "torch sees no" in message
    assert not (tmp_path / "x.urna").exists()


def test_an_unknown_device_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DEVICE_VARIABLE, "auto")
    result = run("build", str(DOCS), "-o", str(tmp_path / "x.urna"), "--device", "gpu")
    assert result.exit_code == 2 and "'gpu' is not one of" in result.stderr


def test_the_variable_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DEVICE_VARIABLE, "tpu")
    with pytest.raises(ModelError, match="URNA_EMBED_DEVICE='tpu'"):
        asked_device()
    monkeypatch.setenv(DEVICE_VARIABLE, " CPU ")
    assert asked_device() == "cpu"


@needs_models
def test_auto_takes_what_torch_sees() -> None:
    import torch

    expected = "cuda" if torch.cuda.is_available() else "cpu"
    mps = getattr(torch.backends, "mps", None)
    if expected == "cpu" and mps is not None and mps.is_available():
        expected = "mps"
    assert resolved_device("auto", torch) == expected
    assert resolved_device("cpu", torch) == "cpu"


def test_a_gpu_build_is_recorded_and_a_cpu_build_is_not(tmp_path: Path) -> None:
    common = dict(model="m", model_hash="sha256:" + "a" * 64, chunker_version="c/1")
    build(tmp_path / "cpu.urna", one_hot_chunks(4), **common)  # type: ignore[arg-type]
    assert "embed_device" not in read_manifest(tmp_path / "cpu.urna")
    build(tmp_path / "gpu.urna", one_hot_chunks(4), embed_device="cuda", **common)  # type: ignore[arg-type]
    assert read_manifest(tmp_path / "gpu.urna")["embed_device"] == "cuda"
    with pytest.raises(BuildError, match="embed_device must be cpu, cuda or mps"):
        build(tmp_path / "bad.urna", one_hot_chunks(4), embed_device="tpu", **common)  # type: ignore[arg-type]
    assert arithmetic("float32", "cpu") == "float32"  # cache keys and recipes as before
    assert arithmetic("bfloat16", "cuda") == "bfloat16@cuda"
