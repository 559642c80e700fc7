"""What batch invariance costs: the same texts embedded with length buckets (urna) and with
sentence-transformers' own batching (each length-sorted batch padded to its longest text),
in one process, the model loaded once, interleaved.

The texts are what a build of ``--records`` scifact documents embeds (each chunk in its
context). Both run in the build's precision (bfloat16 where the CPU has it) on every core.

    python benchmarks/bench_batching.py [--records 1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    import urna
    from urna.embed.hub import MINILM, bundled_minilm
    from urna.embed.transformer import TransformerEmbedder, _autocast
    from urna.ingest.context import embedded_texts

    with tempfile.TemporaryDirectory() as tmp:
        records = Path(tmp) / "records.jsonl"
        lines = (DATA / "scifact" / "corpus.jsonl").read_text().splitlines()[: args.records]
        records.write_text("\n".join(lines) + "\n")
        out = Path(tmp) / "texts.urna"
        from urna.build.spec import BuildSpec, Source
        from urna.build.writer import build_file

        model = TransformerEmbedder(MINILM, bundled_minilm())
        model.load()
        spec = BuildSpec(sources=(Source(records),), output=out, base=Path(tmp))
        build_file(spec, embedder=model, use_cache=False)
        with urna.open(out) as corpus:
            texts = embedded_texts([corpus.chunk(i) for i in range(corpus.n_chunks)])
    precision = model.precision
    st = model._model
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))

    def theirs() -> None:
        with _autocast(precision):
            st.encode([texts[i] for i in order], batch_size=32, normalize_embeddings=True,
                      convert_to_numpy=True, show_progress_bar=False)  # fmt: skip

    def ours() -> None:
        model.embed_in(texts, precision)

    times: dict[str, list[float]] = {"length buckets (urna)": [], "padded to the batch (ST)": []}
    for _ in range(args.rounds):
        for label, run in (("length buckets (urna)", ours), ("padded to the batch (ST)", theirs)):
            t0 = time.perf_counter()
            run()
            times[label].append(time.perf_counter() - t0)
    tokens = model._model.tokenizer(texts, truncation=True, max_length=256)["input_ids"]
    real = sum(len(t) for t in tokens)
    from urna.embed.batching import padded_length

    padded = sum(padded_length(len(t), 256) for t in tokens)
    base = statistics.median(times["padded to the batch (ST)"])
    print(f"{len(texts)} texts, {precision}; tokens {real}, padded by the buckets to {padded}")
    print("| batching | median s | vs ST |\n|---|---:|---:|")
    for label, values in times.items():
        median = statistics.median(values)
        print(f"| {label} | {median:.1f} | {median / base:.2f}x |")


if __name__ == "__main__":
    main()
