"""Integrity: every corrupted, truncated or forged file is refused with one clear error."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

import urna
from tests.conftest import assert_error, run
from tests.forge import put_together, reseal, take_apart
from urna.errors import FormatError, IntegrityError

GOLDEN = Path(__file__).parent / "golden" / "minimal.urna"


def _write(tmp_path: Path, data: bytes, name: str = "f.urna") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_flipping_any_single_byte_is_refused(tmp_path: Path) -> None:
    data = GOLDEN.read_bytes()
    path = tmp_path / "flip.urna"
    checks: set[int] = set()
    for pos in range(len(data)):
        bad = bytearray(data)
        bad[pos] ^= 0xFF
        path.write_bytes(bad)
        with pytest.raises(FormatError) as info:
            urna.open(path)
        checks.add(info.value.check)
        message = str(info.value)
        assert "\n" not in message and message
    # Header, table, manifest, payloads, padding and footer each hit their own check.
    assert {2, 3, 4, 7, 9} <= checks


def test_flipping_any_single_byte_fails_validate_cli(tmp_path: Path) -> None:
    data = GOLDEN.read_bytes()
    path = tmp_path / "flip.urna"
    for pos in range(0, len(data)):
        bad = bytearray(data)
        bad[pos] ^= 0x01
        path.write_bytes(bad)
        assert_error(run("validate", str(path)))


def test_truncating_at_every_length_is_refused(tmp_path: Path) -> None:
    data = GOLDEN.read_bytes()
    path = tmp_path / "cut.urna"
    for length in range(len(data)):
        path.write_bytes(data[:length])
        with pytest.raises(FormatError) as info:
            urna.open(path)
        assert info.value.check == (1 if length < 168 else 5), (length, info.value)
        if length % 50 == 0:
            assert_error(
                run("validate", str(path)),
                "file truncated" if length < 168 else "file size mismatch",
            )


def test_original_error_wording(tmp_path: Path) -> None:
    data = GOLDEN.read_bytes()
    cases = {
        "file truncated": data[:100],
        "magic mismatch: ": b"JUNK" + data[4:],
        "file size mismatch: expected 1366, got 1367": data + b"\0",
        "section 4 checksum mismatch": _flip(data, 1088),
        "footer hash mismatch": _flip(data, 930),  # padding: only the footer hash covers it
    }
    for fragment, blob in cases.items():
        path = _write(tmp_path, blob)
        with pytest.raises(FormatError, match=fragment):
            urna.open(path)


def _flip(data: bytes, pos: int) -> bytes:
    bad = bytearray(data)
    bad[pos] ^= 0x40
    return bytes(bad)


def test_hash_errors_are_integrity_errors(tmp_path: Path) -> None:
    path = _write(tmp_path, _flip(GOLDEN.read_bytes(), 1088))
    with pytest.raises(IntegrityError):
        urna.open(path)


def test_legacy_magic_is_accepted(tmp_path: Path) -> None:
    parts = take_apart(GOLDEN.read_bytes())
    parts.header[0] = b"NEST"
    with urna.open(_write(tmp_path, put_together(parts))) as corpus:
        assert corpus.chunk(0).text == "hi"


# --- forged files: every checksum right, a structural rule broken -----------------


def _forge(tmp_path: Path, edit) -> Path:  # type: ignore[no-untyped-def]
    parts = take_apart(GOLDEN.read_bytes())
    edit(parts)
    return _write(tmp_path, put_together(parts))


def _refused(path: Path, fragment: str) -> FormatError:
    with pytest.raises(FormatError, match=fragment) as info:
        urna.open(path)
    assert not isinstance(info.value, IntegrityError)
    assert_error(run("validate", str(path)), fragment)
    return info.value


def _manifest_edit(**changes: object):  # type: ignore[no-untyped-def]
    def edit(parts) -> None:  # type: ignore[no-untyped-def]
        m = json.loads(parts.manifest)
        m.update(changes)
        parts.manifest = json.dumps(m, separators=(",", ":")).encode()

    return edit


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"embedding_dim": 5}, "embedding_dim is 5 but the header says 4"),
        ({"n_chunks": 2}, "n_chunks is 2 but the header says 1"),
        ({"dtype": "float16"}, "does not match the embeddings encoding"),
        ({"metric": "l2"}, "metric must be one of ip"),
        ({"index_type": "hnsw"}, "needs rerank_policy exact"),
        ({"model_hash": "sha256:xyz"}, "model_hash must be"),
        ({"embedding_model": ""}, "embedding_model must be a non-empty string"),
        ({"format_version": 2}, "format_version must be 1"),
    ],
)
def test_forged_manifest_is_refused(tmp_path: Path, changes: dict, fragment: str) -> None:
    _refused(_forge(tmp_path, _manifest_edit(**changes)), fragment)


def test_manifest_with_duplicate_keys_is_refused(tmp_path: Path) -> None:
    def edit(parts) -> None:  # type: ignore[no-untyped-def]
        parts.manifest = parts.manifest[:-1] + b',"dtype":"int8"}'

    _refused(_forge(tmp_path, edit), "duplicate key")


def test_manifest_not_json_is_refused(tmp_path: Path) -> None:
    def edit(parts) -> None:  # type: ignore[no-untyped-def]
        parts.manifest = b"{not json"

    _refused(_forge(tmp_path, edit), "manifest is not valid JSON")


def test_missing_required_section(tmp_path: Path) -> None:
    _refused(_forge(tmp_path, lambda p: p.sections.pop(5)), "missing required section: provenance")


def test_embedding_size_mismatch(tmp_path: Path) -> None:
    def edit(parts) -> None:  # type: ignore[no-untyped-def]
        parts.sections[4] = (0, parts.sections[4][1] + b"\0\0\0\0")

    _refused(_forge(tmp_path, edit), "embedding size mismatch: expected 16, got 20")


def test_section_count_mismatch(tmp_path: Path) -> None:
    def edit(parts) -> None:  # type: ignore[no-untyped-def]
        enc, payload = parts.sections[2]
        parts.sections[2] = (enc, payload[:4] + struct.pack("<Q", 2) + payload[12:])

    _refused(_forge(tmp_path, edit), "section count mismatch: section=2 expected=1 got=2")


def test_trailing_bytes_in_a_string_table(tmp_path: Path) -> None:
    def edit(parts) -> None:  # type: ignore[no-untyped-def]
        enc, payload = parts.sections[2]
        parts.sections[2] = (enc, payload + b"x")

    _refused(_forge(tmp_path, edit), "1 trailing bytes")


def test_string_length_past_the_end(tmp_path: Path) -> None:
    def edit(parts) -> None:  # type: ignore[no-untyped-def]
        enc, payload = parts.sections[3]
        parts.sections[3] = (enc, payload[:12] + struct.pack("<I", 10**6) + payload[16:])

    _refused(_forge(tmp_path, edit), "runs past the end")


def test_invalid_utf8_text(tmp_path: Path) -> None:
    def edit(parts) -> None:  # type: ignore[no-untyped-def]
        enc, payload = parts.sections[2]
        parts.sections[2] = (enc, payload[:16] + b"\xff\xfe")

    _refused(_forge(tmp_path, edit), "invalid UTF-8")


def test_span_end_before_start(tmp_path: Path) -> None:
    def edit(parts) -> None:  # type: ignore[no-untyped-def]
        enc, payload = parts.sections[3]
        parts.sections[3] = (enc, payload[:-16] + struct.pack("<QQ", 5, 2))

    _refused(_forge(tmp_path, edit), "byte_end 2 before byte_start 5")


def test_malformed_chunk_id(tmp_path: Path) -> None:
    def edit(parts) -> None:  # type: ignore[no-untyped-def]
        enc, payload = parts.sections[1]
        parts.sections[1] = (enc, payload[:16] + b"SHA256" + payload[22:])

    _refused(_forge(tmp_path, edit), "is not sha256:<64 lowercase hex>")


def test_other_payload_version(tmp_path: Path) -> None:
    def edit(parts) -> None:  # type: ignore[no-untyped-def]
        enc, payload = parts.sections[1]
        parts.sections[1] = (enc, struct.pack("<I", 2) + payload[4:])

    _refused(_forge(tmp_path, edit), "unsupported payload version 2")


def test_search_contract_disagreeing_with_manifest(tmp_path: Path) -> None:
    def edit(parts) -> None:  # type: ignore[no-untyped-def]
        body = json.dumps(
            {
                "metric": "ip",
                "score_type": "hybrid_rrf",
                "normalize": "l2",
                "index_type": "exact",
                "rerank_policy": "none",
            },
            separators=(",", ":"),
        ).encode()
        parts.sections[6] = (0, struct.pack("<IQ", 1, len(body)) + body)

    _refused(_forge(tmp_path, edit), "search_contract score_type")


def test_nan_in_embeddings(tmp_path: Path) -> None:
    def edit(parts) -> None:  # type: ignore[no-untyped-def]
        parts.sections[4] = (0, np.array([np.nan, 0, 0, 0], dtype="<f4").tobytes())

    _refused(_forge(tmp_path, edit), "NaN or Inf detected in embeddings")


def test_unsupported_encoding(tmp_path: Path) -> None:
    def edit(parts) -> None:  # type: ignore[no-untyped-def]
        parts.sections[2] = (9, parts.sections[2][1])

    _refused(_forge(tmp_path, edit), "unsupported encoding fsst")


def test_quantized_encoding_on_a_text_section(tmp_path: Path) -> None:
    def edit(parts) -> None:  # type: ignore[no-untyped-def]
        parts.sections[2] = (2, parts.sections[2][1])

    _refused(_forge(tmp_path, edit), "encoding float16 is not allowed on section 2")


def test_zstd_bomb_claims_are_refused(tmp_path: Path) -> None:
    import zstandard

    def edit(parts) -> None:  # type: ignore[no-untyped-def]
        blob = zstandard.ZstdCompressor(write_content_size=False).compress(parts.sections[5][1])
        parts.sections[5] = (1, blob)

    _refused(_forge(tmp_path, edit), "lacks a usable content size")


def test_text_edit_with_resealed_checksums_fails_validate(tmp_path: Path) -> None:
    """All hashes recomputed after 'hi' became 'ho': open passes, validate's id check does not."""
    data = bytearray(GOLDEN.read_bytes())
    pos = data.index(b"hi", 900)
    data[pos : pos + 2] = b"ho"
    path = _write(tmp_path, reseal(bytes(data)))
    with urna.open(path) as corpus:
        assert corpus.chunk(0).text == "ho"
    assert_error(run("validate", str(path)), "chunk id mismatch at chunk 0")


def test_overlapping_sections(tmp_path: Path) -> None:
    data = bytearray(GOLDEN.read_bytes())
    # Point entry 2 (chunks_canonical) at entry 1's offset, then reseal header and footer only.
    off1 = struct.unpack_from("<Q", data, 128 + 8)[0]
    struct.pack_into("<Q", data, 128 + 32 + 8, off1)
    import hashlib

    struct.pack_into(
        "8s",
        data,
        128 + 32 + 24,
        hashlib.sha256(
            bytes(data[off1 : off1 + struct.unpack_from("<Q", data, 128 + 32 + 16)[0]])
        ).digest()[:8],
    )
    data[-32:] = hashlib.sha256(bytes(data[:-40])).digest()
    path = _write(tmp_path, bytes(data))
    _refused(path, "overlaps section")


@pytest.mark.parametrize("byte", [b"G", b"\xff"])
def test_non_hex_chunk_id_digest_is_refused_at_open(tmp_path: Path, byte: bytes) -> None:
    def edit(parts) -> None:  # type: ignore[no-untyped-def]
        enc, payload = parts.sections[1]
        parts.sections[1] = (enc, payload[:30] + byte + payload[31:])

    path = _forge(tmp_path, edit)
    with pytest.raises(urna.FormatError, match="chunk id 0 is not sha256:<64 lowercase hex>"):
        urna.open(path)  # an id is printed and sent as text: not UTF-8 is refused up front
    for verb in ("validate", "stats"):
        assert_error(run(verb, str(path)), "chunk id 0 is not sha256:<64 lowercase hex>")


def test_a_string_table_is_refused_exactly_when_one_of_its_strings_is_not_utf8() -> None:
    """The one-pass UTF-8 check of a string table (``format/sections.py``) agrees with
    decoding each string on its own, for tables with and without tails (of any bytes), on
    strings cut from valid text at any byte (so characters split across neighbours), and
    bytes that are no text at all."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from urna.format import sections

    piece = st.one_of(
        st.text(max_size=6).map(lambda t: t.encode()),
        st.binary(max_size=4),
        st.text(min_size=1, max_size=4).map(lambda t: t.encode()[1:]),  # a character cut
        st.text(min_size=1, max_size=4).map(lambda t: t.encode()[:-1]),
    )

    @settings(max_examples=300, deadline=None)
    @given(st.lists(piece, max_size=6), st.booleans(), st.integers(0, 2**63 - 1))
    def check(strings: list[bytes], tailed: bool, end: int) -> None:
        whole = all(_decodes(s) for s in strings)
        if tailed:  # tails of any bytes (the span's ends), which are no string's
            n = len(strings)
            payload = sections.encode_spans(strings, [end // 2] * n, [end] * n)
            decode = lambda: sections.decode_spans(3, memoryview(payload), len(strings))  # noqa: E731
        else:
            payload = sections.encode_strings(strings)
            decode = lambda: sections.decode_strings(2, memoryview(payload), len(strings))  # noqa: E731
        if whole:
            decode()
        else:
            with pytest.raises(FormatError, match="invalid UTF-8"):
                decode()

    check()


def _decodes(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
