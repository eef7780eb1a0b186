"""Benchmark: DoctorRAG's knowledge base, ingestion and retrieval, against the raw engines.

1. Ingestion of the demo ward-guidance pages (resources/knowledge/demo-kb/*.md, cut
   with base.chunk_text at Settings().knowledge_chunk_words), in chunks/s:
   (a) the raw embedder alone (runtime.embedder().embed on the chunk texts);
   (b) indexing only: embed, then KnowledgeBase.add with the chapter given (encrypted
       database + chromadb), one add per document, i.e. DoctorRAG.add_texts minus the
       model's tag call;
   (c) full ingestion through DoctorRAG.add_file: one tag call per chunk with the
       embedded generator under its grammar, then embed and store.
   (a) and (b) repeat the demo pages to --chunks chunks; (c) reads the real pages once.
2. Retrieval latency with --sizes chunks in the knowledge collection (synthetic 384-d
   unit vectors spread over the 22 ICD-10 chapters, added through KnowledgeBase.add so
   the encrypted database and chromadb both hold them).  DoctorRAG.retrieve with a
   precomputed query vector (no model call) is timed end to end, chapter-filtered
   (hard filter, fallback, database lookup) and unfiltered (the no-tags path), against
   the raw chromadb query (collection.query with the same n and filter) timed on the
   same query vectors, interleaved.  Recall of the returned top-k is checked against
   brute force in numpy with the same exclusion rules.

Everything runs in one process in a throwaway profile with a random database key.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import secrets
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from desktop_app.core import offline  # noqa: E402

offline.activate()

from desktop_app.core.config import Paths, Settings  # noqa: E402
from desktop_app.core.documents import read_document  # noqa: E402
from desktop_app.core.evaluation.runner import machine  # noqa: E402
from desktop_app.core.glossary.glossary import load_glossary  # noqa: E402
from desktop_app.core.knowledge import icd10  # noqa: E402
from desktop_app.core.knowledge.base import PreparedChunk, chunk_text  # noqa: E402
from desktop_app.core.knowledge.doctorrag import DoctorRAG  # noqa: E402
from desktop_app.core.knowledge.index import EF_SEARCH, KNOWLEDGE  # noqa: E402
from desktop_app.core.models import manage  # noqa: E402
from desktop_app.core.models.runtime import ModelRuntime  # noqa: E402
from desktop_app.core.store.database import Store  # noqa: E402
from desktop_app.core.store.keys import DatabaseKey  # noqa: E402

DEMO_KB = ROOT / "resources" / "knowledge" / "demo-kb"
DIMENSIONS = 384  # all-MiniLM-L6-v2, the embedded embedder
# The chapter a clinician would give each demo page (used for (b), and to score (c)'s tags).
EXPECTED_CHAPTER = {
    "asthma-exacerbation.md": "J00-J99",
    "cellulitis.md": "L00-L99",
    "community-acquired-pneumonia.md": "J00-J99",
    "deep-vein-thrombosis.md": "I00-I99",
    "gastro-oesophageal-reflux-disease.md": "K00-K93",
    "hypothyroidism.md": "E00-E90",
    "iron-deficiency-anaemia.md": "D50-D89",
    "migraine.md": "G00-G99",
    "type-2-diabetes-mellitus.md": "E00-E90",
    "urinary-tract-infection.md": "N00-N99",
}


def open_rag(folder: Path, settings: Settings, runtime: ModelRuntime | None = None
             ) -> tuple[DoctorRAG, Store, Paths]:
    paths = Paths.resolve(folder)
    paths.ensure()
    store = Store(paths.database_file, DatabaseKey("raw", secrets.token_hex(32)))
    runtime = runtime or ModelRuntime(paths, settings)
    rag = DoctorRAG.open(paths, settings, store, runtime, load_glossary(store, settings))
    return rag, store, paths


class CallTimer:
    """Adds up the seconds spent in one method of one object while the block runs."""

    def __init__(self, target: object, name: str) -> None:
        self.target, self.name, self.seconds = target, name, 0.0

    def __enter__(self) -> "CallTimer":
        original = getattr(self.target, self.name)

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - t0

        setattr(self.target, self.name, timed)
        return self

    def __exit__(self, *exc: object) -> None:
        delattr(self.target, self.name)  # the class's method shows through again


def resident_mb() -> float:
    """The process's resident memory now (Linux), in MB; 0 where /proc is not there."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


# ---- 1. ingestion ---------------------------------------------------------------------


def ingestion(folder: Path, settings: Settings, chunks: int, documents: int) -> dict:
    paths = Paths.resolve(folder)
    paths.ensure()
    manage.provision(paths, settings)
    runtime = ModelRuntime(paths, settings)
    rag, store, _ = open_rag(folder, settings, runtime)
    files = sorted(DEMO_KB.glob("*.md"))
    pages = [(f, chunk_text(read_document(f), settings.knowledge_chunk_words)) for f in files]
    per_pass = sum(len(texts) for _, texts in pages)
    # Whole passes over the demo pages, as many as make at least `chunks` chunks.
    passes = max(1, -(-chunks // per_pass))
    work = [(f, texts) for _ in range(passes) for f, texts in pages]
    all_texts = [t for _, texts in work for t in texts]

    embedder = runtime.embedder()
    embedder.embed([t for _, texts in pages for t in texts][:16])  # load and warm up
    started = time.perf_counter()
    embedder.embed(all_texts)
    raw_seconds = time.perf_counter() - started

    # One embed call and one add per document, as DoctorRAG.add_texts does.
    with CallTimer(embedder, "embed") as in_embed, CallTimer(rag.index, "add") as in_index:
        started = time.perf_counter()
        for number, (f, texts) in enumerate(work):
            chapter = EXPECTED_CHAPTER.get(f.name, icd10.CODES[number % len(icd10.CODES)])
            vectors = embedder.embed(texts)
            rag.knowledge.add(f"{f.name} #{number}", "file",
                              hashlib.sha256(f"{number}".encode()).hexdigest(),
                              [PreparedChunk(t, t, chapter) for t in texts], vectors, declarative=False)
        index_seconds = time.perf_counter() - started
    load_before = os.getloadavg()[0]

    # Full ingestion: the generator is loaded and warmed first, so its load time is not counted.
    tag_seconds = [0.0]
    tag_tokens = {"prompt": 0, "evaluated": 0, "completion": 0}
    tag = rag.tag

    def timed_tag(text, cancel=None):
        t0 = time.perf_counter()
        try:
            chapter, record = tag(text, cancel)
        finally:
            tag_seconds[0] += time.perf_counter() - t0
        tag_tokens["prompt"] += record.prompt_tokens
        tag_tokens["evaluated"] += record.prompt_tokens_evaluated
        tag_tokens["completion"] += record.completion_tokens
        return chapter, record

    rag.tag("Warm-up: a short text about chest pain.")
    rag.tag = timed_tag  # type: ignore[method-assign]
    full_chunks, agree, tags = 0, 0, Counter()
    started = time.perf_counter()
    for f, _ in pages[:documents]:
        document, added = rag.add_file(f, declarative=False)
        assert added, f
        full_chunks += document.chunks
        agree += document.chapters.get(EXPECTED_CHAPTER.get(f.name, ""), 0)
        tags.update(document.chapters)
    full_seconds = time.perf_counter() - started
    load_after = os.getloadavg()[0]
    model = runtime.for_role("generator")
    result = {
        "pass_chunks": per_pass, "pages": len(pages), "chunks": len(all_texts), "raw_seconds": raw_seconds,
        "index_seconds": index_seconds, "index_embed": in_embed.seconds,
        "index_chromadb": in_index.seconds, "load": (load_before, load_after),
        "full_chunks": full_chunks, "full_seconds": full_seconds,
        "tag_seconds": tag_seconds[0], "tag_agree": agree, "tag_tokens": tag_tokens,
        "tags": dict(tags.most_common()),
        "documents": min(documents, len(pages)), "model": model.spec.id,
        "embedder": runtime.registry.for_role("embedder").id,
    }
    runtime.close()
    store.close()
    return result


# ---- 2. retrieval ---------------------------------------------------------------------


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


class Synthetic:
    """The stored vectors and chapters, kept for brute force."""

    def __init__(self, capacity: int, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.vectors = np.empty((capacity, DIMENSIONS), dtype=np.float32)
        self.chapters = np.empty(capacity, dtype=np.int8)
        self.size = 0

    def grow(self, rag: DoctorRAG, target: int, batch: int) -> tuple[float, float]:
        """Add chunks up to `target` through KnowledgeBase.add: (seconds in the adds, seconds
        of those inside VectorIndex.add, i.e. chromadb)."""
        seconds = 0.0
        with CallTimer(rag.index, "add") as in_index:
            while self.size < target:
                count = min(batch, target - self.size)
                start = self.size
                vectors = unit(self.rng.standard_normal((count, DIMENSIONS), dtype=np.float32))
                chapters = self.rng.integers(0, len(icd10.CODES), count).astype(np.int8)
                chunks = [PreparedChunk(f"synthetic statement {start + i}",
                                        f"synthetic statement {start + i}", icd10.CODES[c])
                          for i, c in enumerate(chapters)]
                t0 = time.perf_counter()
                rag.knowledge.add(f"synthetic {start}", "file",
                                  hashlib.sha256(f"s{start}".encode()).hexdigest(),
                                  chunks, vectors, declarative=False)
                seconds += time.perf_counter() - t0
                self.vectors[start:start + count] = vectors
                self.chapters[start:start + count] = chapters
                self.size += count
        return seconds, in_index.seconds

    def queries(self, count: int) -> list[tuple[np.ndarray, str, int]]:
        """(vector, chapter, source): half perturbed copies of stored vectors (cosine about
        0.86 with their source, asked in its chapter), half random directions in a random
        chapter (source -1)."""
        out = []
        for n in range(count):
            if n % 2 == 0:
                source = int(self.rng.integers(0, self.size))
                noise = self.rng.standard_normal(DIMENSIONS, dtype=np.float32) * (0.6 / np.sqrt(DIMENSIONS))
                vector = unit((self.vectors[source] + noise)[None])[0]
                chapter = icd10.CODES[int(self.chapters[source])]
            else:
                source = -1
                vector = unit(self.rng.standard_normal((1, DIMENSIONS), dtype=np.float32))[0]
                chapter = icd10.CODES[int(self.rng.integers(0, len(icd10.CODES)))]
            out.append((vector, chapter, source))
        return out

    def truth(self, vector: np.ndarray, chapter: str | None, k: int, near: float,
              minimum: float | None) -> tuple[list[int], np.ndarray]:
        """The exact top k under the same exclusions as DoctorRAG._top, and all scores."""
        scores = self.vectors[:self.size] @ vector
        allowed = scores <= near
        if minimum is not None:
            allowed &= scores >= minimum
        if chapter is not None:
            allowed &= self.chapters[:self.size] == icd10.CODES.index(chapter)
        candidates = np.flatnonzero(allowed)
        best = candidates[np.argsort(-scores[candidates], kind="stable")[:k]]
        return [int(i) for i in best], scores


def retrieval_at(rag: DoctorRAG, data: Synthetic, queries: int, k: int, recall_sample: int) -> dict:
    collection = rag.index.collection(KNOWLEDGE)
    near = rag.settings.knowledge_near_duplicate
    asked = data.queries(queries)
    for vector, chapter, _ in asked[:10]:  # warm-up
        rag.retrieve("q", chapter=chapter, ablation="no-cases", vector=vector)
        rag.retrieve("q", ablation="vanilla", vector=vector)
    counting = []
    for _ in range(20):
        t0 = time.perf_counter()
        collection.count()
        counting.append(time.perf_counter() - t0)
    out: dict = {"count_ms": 1000 * float(np.median(counting))}
    for path, ablation in (("filtered", "no-cases"), ("unfiltered", "vanilla")):
        raw, index_only, lumen, fallback = [], [], [], 0
        recall: dict[str, list[float]] = {"perturbed": [], "random": []}
        top1, score_ratio = [], []
        for n, (vector, chapter, source) in enumerate(asked):
            where = {"chapter": chapter} if path == "filtered" else None
            timings = {}
            # Interleaved, order alternating, so drift on a shared machine hits all three.
            order = ("raw", "index", "lumen") if n % 2 == 0 else ("lumen", "index", "raw")
            for side in order:
                t0 = time.perf_counter()
                if side == "raw":
                    collection.query(query_embeddings=[vector], n_results=k + 8, where=where,
                                     include=["distances", "metadatas"])
                elif side == "index":
                    rag.index.query(KNOWLEDGE, vector, k + 8, where)
                else:
                    result = rag.retrieve("q", chapter=chapter, ablation=ablation, vector=vector, k=k)
                timings[side] = time.perf_counter() - t0
            raw.append(timings["raw"])
            index_only.append(timings["index"])
            lumen.append(timings["lumen"])
            fallback += int(result.fallback_used)
            if n < recall_sample:
                got = [int(s.statement.rsplit(" ", 1)[1]) for s in result.knowledge]
                truth, scores = data.truth(vector, chapter if path == "filtered" else None, k, near,
                                           minimum=0.0 if path == "filtered" else None)
                recall["perturbed" if source >= 0 else "random"].append(
                    len(set(got) & set(truth)) / max(1, len(truth)))
                score_ratio.append(float(scores[got].sum() / scores[truth].sum()))
                if source >= 0:
                    top1.append(bool(got) and got[0] == truth[0])
        out[path] = {
            "raw_median": 1000 * float(np.median(raw)), "raw_p95": 1000 * percentile(raw, 95),
            "index_median": 1000 * float(np.median(index_only)),
            "lumen_median": 1000 * float(np.median(lumen)), "lumen_p95": 1000 * percentile(lumen, 95),
            **{f"recall_{kind}": float(np.mean(values)) if values else float("nan")
               for kind, values in recall.items()},
            "top1": float(np.mean(top1)) if top1 else float("nan"),
            "score_ratio": float(np.mean(score_ratio)) if score_ratio else float("nan"),
            "recall_n": sum(len(v) for v in recall.values()), "fallback": fallback,
            "queries": len(asked)}
    return out


def retrieval(folder: Path, settings: Settings, sizes: list[int], queries: int, batch: int,
              recall_sample: int, seed: int) -> list[dict]:
    rag, store, _ = open_rag(folder, settings)
    data = Synthetic(max(sizes), seed)
    results = []
    for size in sorted(sizes):
        before = data.size
        seconds, in_index = data.grow(rag, size, batch)
        assert rag.knowledge.count() == size == rag.index.count(KNOWLEDGE)
        rss = resident_mb()
        measured = retrieval_at(rag, data, queries, settings.knowledge_top_k, recall_sample)
        results.append({"size": size, "added": size - before, "build_seconds": seconds,
                        "build_index_seconds": in_index, "rss": rss, **measured})
        print(f"  {size:,} chunks: built (+{size - before:,} in {seconds:.1f} s), "
              f"filtered median {measured['filtered']['lumen_median']:.2f} ms, "
              f"unfiltered median {measured['unfiltered']['lumen_median']:.2f} ms", flush=True)
    store.close()
    return results


# ---- report -----------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 2,000 and 10,000 chunks, fewer queries and chunks")
    parser.add_argument("--sizes", type=int, nargs="+", help="knowledge-base sizes (default 10000 100000)")
    parser.add_argument("--queries", type=int, help="queries per size and path (default 200)")
    parser.add_argument("--chunks", type=int, help="chunks for the embed and index runs (default 500)")
    parser.add_argument("--documents", type=int, help="demo pages for full ingestion (default all 10)")
    parser.add_argument("--recall-sample", type=int, default=100,
                        help="queries per size and path checked against brute force")
    parser.add_argument("--batch", type=int, default=5000, help="chunks per KnowledgeBase.add when filling")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--skip-ingestion", action="store_true")
    parser.add_argument("--skip-retrieval", action="store_true")
    args = parser.parse_args()
    sizes = args.sizes or ([2000, 10000] if args.quick else [10000, 100000])
    queries = args.queries or (50 if args.quick else 200)
    chunks = args.chunks or (100 if args.quick else 500)
    documents = args.documents or (2 if args.quick else 10)
    settings = Settings(threads=args.threads)

    load_start = os.getloadavg()[0]  # this machine may be shared: say how busy it was
    info = machine()
    print(f"Machine: {info['cpu']}, {info['cores']} cores, {info['system']}, Python {info['python']}")
    import chromadb

    print(f"chromadb {chromadb.__version__}, numpy {np.__version__}, HNSW ef_search {EF_SEARCH}, "
          f"k {settings.knowledge_top_k}, chunk {settings.knowledge_chunk_words} words, {args.threads} threads\n",
          flush=True)
    with tempfile.TemporaryDirectory(prefix="lumen-bench-") as folder:
        folder = Path(folder)
        # Retrieval first, so its memory figures hold no generator or prompt-state cache.
        ret = []
        if not args.skip_retrieval:
            print("Retrieval:", flush=True)
            ret = retrieval(folder / "retrieve", settings, sizes, queries, args.batch,
                            args.recall_sample, args.seed)
        ing = None if args.skip_ingestion else ingestion(folder / "ingest", settings, chunks, documents)
        if ing:
            print("Ingestion done.", flush=True)

    if ing:
        raw = ing["chunks"] / ing["raw_seconds"]
        index = ing["chunks"] / ing["index_seconds"]
        full = ing["full_chunks"] / ing["full_seconds"]
        print(f"\nIngestion: demo pages, {ing['pass_chunks']} chunks per pass; (a) and (b) "
              f"{ing['chunks']} chunks, (c) {ing['documents']} pages = {ing['full_chunks']} chunks; "
              f"generator {ing['model']}, embedder {ing['embedder']}\n")
        print("| ingestion | chunks | seconds | chunks/s | ÷ raw embedder |")
        print("|---|---|---|---|---|")
        print(f"| (a) raw embedder (`Embedder.embed`) | {ing['chunks']} | {ing['raw_seconds']:.2f} | "
              f"{raw:.1f} | 1 |")
        print(f"| (b) indexing: embed + `KnowledgeBase.add` (chapter given) | {ing['chunks']} | "
              f"{ing['index_seconds']:.2f} | {index:.1f} | {index / raw:.3f} |")
        print(f"| (c) full: `DoctorRAG.add_file` (tag call per chunk) | {ing['full_chunks']} | "
              f"{ing['full_seconds']:.2f} | {full:.2f} | {full / raw:.4f} |")
        print(f"\n(b): {ing['index_embed']:.2f} s embedding (one call per page, ~"
              f"{ing['pass_chunks'] / ing['pages']:.0f} chunks each), "
              f"{ing['index_chromadb']:.2f} s in chromadb (VectorIndex.add), "
              f"{ing['index_seconds'] - ing['index_embed'] - ing['index_chromadb']:.2f} s the rest "
              "(SQLCipher transaction, audit entry, document read-back)")
        print(f"(c): load average (1 min) {ing['load'][0]:.2f} before, {ing['load'][1]:.2f} after")
        print(f"(c): {ing['tag_seconds']:.1f} s of {ing['full_seconds']:.1f} s inside tag calls "
              f"({100 * ing['tag_seconds'] / ing['full_seconds']:.0f} %, "
              f"{1000 * ing['tag_seconds'] / max(1, ing['full_chunks']):.0f} ms per chunk); "
              f"{ing['tag_agree']} of {ing['full_chunks']} chunks tagged with their page's expected chapter")
        tokens, calls = ing["tag_tokens"], max(1, ing["full_chunks"])
        print(f"(c): per tag call {tokens['prompt'] / calls:.0f} prompt tokens, "
              f"{tokens['evaluated'] / calls:.0f} of them evaluated (the rest reused), "
              f"{tokens['completion'] / calls:.1f} tokens written under the grammar")
        print("(c): chapters given: " + ", ".join(f"{code} {n}" for code, n in ing["tags"].items()))

    if ret:
        print(f"\nRetrieval: synthetic unit vectors ({DIMENSIONS}-d) over {len(icd10.CODES)} chapters, "
              f"k = {settings.knowledge_top_k} (index asked for k + 8), {queries} queries per size and path "
              "(half perturbed copies of stored vectors, half random)\n")
        print("| chunks | path | DoctorRAG.retrieve median / p95 ms | chromadb query median / p95 ms | "
              "retrieve ÷ chromadb (median) | VectorIndex.query median ms |")
        print("|---|---|---|---|---|---|")
        for r in ret:
            for path, label in (("filtered", "chapter filter"), ("unfiltered", "no tags")):
                m = r[path]
                print(f"| {r['size']:,} | {label} | {m['lumen_median']:.2f} / {m['lumen_p95']:.2f} | "
                      f"{m['raw_median']:.2f} / {m['raw_p95']:.2f} | "
                      f"{m['lumen_median'] / m['raw_median']:.2f} | "
                      f"{m['index_median']:.2f} |")
        print("\n`collection.count()` (for reference; VectorIndex.query no longer calls it), median ms: "
              + ", ".join(f"{r['size']:,} chunks {r['count_ms']:.2f}" for r in ret))
        print(f"\n| chunks | path | recall@{settings.knowledge_top_k} vs brute force, perturbed / random queries | "
              "top-1 is the exact best (perturbed) | returned ÷ exact similarity sum |")
        print("|---|---|---|---|---|")
        for r in ret:
            for path, label in (("filtered", "chapter filter"), ("unfiltered", "no tags")):
                m = r[path]
                print(f"| {r['size']:,} | {label} | {m['recall_perturbed']:.3f} / {m['recall_random']:.3f} | "
                      f"{m['top1']:.2f} | {m['score_ratio']:.4f} |")
        print(f"\n(recall over the first {ret[0]['filtered']['recall_n']} queries of each size and path)")
        print("\n| build step | chunks added | seconds | inserts/s (KnowledgeBase.add: SQLCipher + chromadb) "
              "| of the seconds, in chromadb | resident memory after, MB |")
        print("|---|---|---|---|---|---|")
        for r in ret:
            print(f"| to {r['size']:,} | {r['added']:,} | {r['build_seconds']:.1f} | "
                  f"{r['added'] / r['build_seconds']:.0f} | {r['build_index_seconds']:.1f} | {r['rss']:.0f} |")
        print(f"\nFallback used in {sum(r['filtered']['fallback'] for r in ret)} filtered queries.")
    print(f"\nLoad average (1 min) at start {load_start:.2f}, at end {os.getloadavg()[0]:.2f}. "
          f"Peak memory (max RSS): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
