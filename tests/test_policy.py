"""The merge policy decides on invented catalogs, with no file read or written
(``build/policy.py``), as tantivy tests its log merge policy."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from urna.build.policy import FOLD_PRESSURE, MERGE_FACTOR, Decision, decide, level, merged
from urna.format.catalog import Catalog, ShardEntry

BUCKETS = 4096


def entry(
    index: int,
    file: str | None,
    n: int,
    buckets: tuple[int, int] = (0, BUCKETS),
    dead: int = 0,
) -> ShardEntry:
    deleted = (("gone.md", 0, dead),) if dead else ()
    return ShardEntry(index, file, buckets, n, None, None, 1, "", None, deleted)


def catalog(shards: list[ShardEntry], segments: Sequence[ShardEntry] = ()) -> Catalog:
    return Catalog(
        model="m",
        model_hash="sha256:" + "0" * 64,
        dim=4,
        chunker_version="c",
        tokenizer_version=None,
        recipe="r",
        n_buckets=BUCKETS,
        shards=tuple(shards),
        segments=tuple(segments),
    )


def four_shards(n: int = 100, dead: tuple[int, ...] = (0, 0, 0, 0)) -> list[ShardEntry]:
    step = BUCKETS // 4
    return [entry(i, f"shard-{i}.urna", n, (i * step, (i + 1) * step), dead[i]) for i in range(4)]


def segment(name: str, live: int, bucket: int = 0) -> tuple[ShardEntry, list[tuple[int, int]]]:
    return entry(0, name, live), [(bucket, live)]


def test_a_quiet_collection_needs_nothing() -> None:
    assert not decide(catalog(four_shards()), {})
    assert decide(catalog(four_shards()), {}) == Decision((), ())


def test_a_shard_folds_past_a_third_of_its_live_chunks() -> None:
    at_limit = four_shards(dead=(25, 0, 0, 0))  # 25 / 75 = 1/3: not past it
    assert decide(catalog(at_limit), {}).folds == ()
    past = four_shards(dead=(26, 0, 0, 0))
    assert decide(catalog(past), {}).folds == (0,)
    assert 26 / 74 > FOLD_PRESSURE >= 25 / 75


def test_segment_chunks_count_against_the_shard_of_their_bucket() -> None:
    seg, held = segment("segment-a.urna", 40, bucket=3000)  # shard 2 holds [2048, 3072)
    decision = decide(catalog(four_shards(), [seg]), {"segment-a.urna": held})
    assert decision.folds == (2,)
    # folded away, the segment is empty: nothing is left to merge
    assert decision.merges == ()


def test_compact_folds_every_shard_with_any_change() -> None:
    seg, held = segment("segment-a.urna", 1, bucket=10)
    shards = four_shards(dead=(0, 0, 1, 0))
    decision = decide(catalog(shards, [seg]), {"segment-a.urna": held}, everything=True)
    assert decision.folds == (0, 2)
    assert not decide(catalog(four_shards()), {}, everything=True)


def test_ten_segments_of_one_level_merge_the_lowest_level_first() -> None:
    small = [segment(f"small-{i}.urna", 3) for i in range(MERGE_FACTOR)]
    large = [segment(f"large-{i}.urna", 30) for i in range(MERGE_FACTOR)]
    both = [s for pair in zip(large, small, strict=True) for s in pair]
    held = {e.file or "": h for e, h in both}
    shards = four_shards(n=10_000)
    decision = decide(catalog(shards, [e for e, _ in both]), held)
    assert decision.folds == ()
    # level 0 (1-9 live chunks) first: its ten merge into one of 30, which joins level 1
    assert decision.merges[0] == tuple(f"small-{i}.urna" for i in range(MERGE_FACTOR))
    # placed where small-0 was (after large-0), then the first ten of level 1 merge
    assert decision.merges[1] == (
        "large-0.urna",
        merged(0),
        *(f"large-{i}.urna" for i in range(1, MERGE_FACTOR - 1)),
    )
    assert len(decision.merges) == 2


def test_nine_segments_of_a_level_wait() -> None:
    nine = [segment(f"s-{i}.urna", 5) for i in range(MERGE_FACTOR - 1)]
    held = {e.file or "": h for e, h in nine}
    assert not decide(catalog(four_shards(n=10_000), [e for e, _ in nine]), held)


def test_an_empty_segment_is_never_merged() -> None:
    segs = [segment(f"s-{i}.urna", 5) for i in range(MERGE_FACTOR - 1)]
    dead = entry(0, "dead.urna", 5, dead=5)
    held = {e.file or "": h for e, h in segs}
    assert not decide(catalog(four_shards(n=10_000), [e for e, _ in segs] + [dead]), held)


@settings(max_examples=200, deadline=None)
@given(
    lives=st.lists(st.integers(1, 5000), max_size=40),
    dead=st.lists(st.integers(0, 60), min_size=4, max_size=4),
)
def test_every_decision_leaves_no_full_level_and_loses_no_chunk(
    lives: list[int], dead: list[int]
) -> None:
    """After the decision's merges, no level holds MERGE_FACTOR segments; every segment is
    merged at most once; a merge's live chunks are its parts' sum."""
    segs = [segment(f"s-{i}.urna", n, bucket=(i * 997) % BUCKETS) for i, n in enumerate(lives)]
    held = {e.file or "": h for e, h in segs}
    shards = four_shards(n=10_000_000, dead=tuple(dead))  # big: nothing folds
    decision = decide(catalog(shards, [e for e, _ in segs]), held)
    assert decision.folds == ()
    live = {e.file: e.live for e, _ in segs}
    used: set[str] = set()
    for k, group in enumerate(decision.merges):
        assert len(group) == MERGE_FACTOR and not used & set(group)
        assert len({level(live[name]) for name in group}) == 1
        used |= set(group)
        live[merged(k)] = sum(live.pop(name) for name in group)
    levels = [level(n) for n in live.values()]
    assert all(levels.count(x) < MERGE_FACTOR for x in set(levels))
    assert sum(live.values()) == sum(lives)
