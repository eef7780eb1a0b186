"""Benchmark: Lumen's model runtime against the raw engines, in one run.

1. Generation: tokens/s through Lumen's LlamaModel (chat template, context check,
   streaming, cancellation checks, perf counters, network guard) against plain
   llama-cpp-python on the same rendered prompts, same settings, greedy.  Both
   start every prompt from a clean state, so this measures overhead, not reuse.
2. Embedding: sentences/s through Lumen's Embedder against plain onnxruntime +
   tokenizers on the same sentences and batch size.
3. Generation while another Python thread is busy (as the window's thread is while a
   job streams): the same prompts once, each side with a thread spinning in Python.  The
   cancel flag llama.cpp asks at every step of its computation is read in C; a Python
   callback there took the GIL at each step.
4. Cancel: seconds from a cancel (a Cancel button, the window closing) to the end of a
   call that is evaluating a long prompt, against the time plain llama-cpp-python takes
   for one prompt batch (what a cancel checked between batches may wait).

The raw side runs in a child process that imports nothing of Lumen's (so no
network guard either); the ratios are Lumen ÷ raw.  Run with `make bench`;
paste the printed table into docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROMPTS = [
    "Explain in two sentences what a discharge summary is.",
    "List three common side effects of antibiotics.",
    "What should a patient do if a wound becomes red and warm?",
    "Describe what blood pressure measures, in simple words.",
    "Why do doctors ask patients to fast before some blood tests?",
]
SENTENCE_SEEDS = [
    "The patient was admitted with shortness of breath and swelling of both legs.",
    "Take one tablet by mouth twice daily with food.",
    "Follow up with the cardiology clinic in two weeks.",
    "Her blood sugar remained high despite insulin.",
    "The wound was cleaned and dressed; sutures come out in ten days.",
    "No known drug allergies.",
    "Chest X-ray showed a small right-sided pleural effusion.",
    "He was discharged home in a stable condition.",
]


LONG_PROMPT = " ".join(SENTENCE_SEEDS) * 12  # over two prompt batches of 512 tokens


@contextlib.contextmanager
def busy_python_thread():
    """A thread that keeps the interpreter busy for as long as the block runs."""
    stop = threading.Event()

    def spin() -> None:
        count = 0
        while not stop.is_set():
            count += 1
    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def sentences(count: int) -> list[str]:
    return [f"{SENTENCE_SEEDS[i % len(SENTENCE_SEEDS)]} (note {i})" for i in range(count)]


# ---- raw side (child process) ---------------------------------------------------------


def raw_generation(model: str, prompts: list[str], max_tokens: int, threads: int,
                   n_ctx: int, repeats: int) -> dict:
    import llama_cpp

    llama = llama_cpp.Llama(model_path=model, n_ctx=n_ctx, n_threads=threads,
                            n_threads_batch=threads, seed=42, verbose=False)
    def run(rounds: int) -> dict:
        tokens, seconds = 0, []
        for _ in range(rounds):
            for prompt in prompts:
                llama.reset()
                started = time.perf_counter()
                out = llama.create_completion(prompt=prompt, max_tokens=max_tokens,
                                              temperature=0.0, stop=["<|im_end|>"])
                seconds.append(time.perf_counter() - started)
                tokens += out["usage"]["completion_tokens"]
        return {"tokens": tokens, "seconds": sum(seconds)}
    quiet = run(repeats)
    with busy_python_thread():
        quiet["busy"] = run(1)
    return quiet


def raw_embedding(model: str, tokenizer: str, texts: list[str], batch: int, threads: int,
                  repeats: int) -> dict:
    import numpy as np
    import onnxruntime
    from tokenizers import Tokenizer

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    session = onnxruntime.InferenceSession(model, sess_options=options,
                                           providers=["CPUExecutionProvider"])
    tok = Tokenizer.from_file(tokenizer)
    tok.enable_truncation(max_length=256)
    tok.enable_padding()
    started = time.perf_counter()
    for _ in range(repeats):
        for i in range(0, len(texts), batch):
            enc = tok.encode_batch(texts[i:i + batch])
            ids = np.asarray([e.ids for e in enc], dtype=np.int64)
            mask = np.asarray([e.attention_mask for e in enc], dtype=np.int64)
            types = np.asarray([e.type_ids for e in enc], dtype=np.int64)
            hidden = session.run(None, {"input_ids": ids, "attention_mask": mask,
                                        "token_type_ids": types})[0]
            pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
            pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
    return {"sentences": len(texts) * repeats, "seconds": time.perf_counter() - started}


def raw_batch_seconds(model: str, rendered: str, threads: int, n_ctx: int, repeats: int) -> list[float]:
    import llama_cpp

    llama = llama_cpp.Llama(model_path=model, n_ctx=n_ctx, n_threads=threads,
                            n_threads_batch=threads, seed=42, verbose=False)
    tokens = llama.tokenize(rendered.encode("utf-8"), add_bos=False, special=True)
    seconds = []
    for _ in range(repeats):
        llama.reset()
        started = time.perf_counter()
        llama.eval(tokens[:llama.n_batch])
        seconds.append(time.perf_counter() - started)
    return seconds


def cancel_waits(model, repeats: int, after_s: float = 0.3) -> list[float]:
    """Seconds from each cancel to the call's end, the cancel fired `after_s` into a call
    that evaluates LONG_PROMPT."""
    from desktop_app.core.errors import Cancelled
    from desktop_app.core.progress import CancelToken

    waits = []
    for _ in range(repeats):
        token, fired = CancelToken(), []

        def fire(token=token, fired=fired) -> None:
            fired.append(time.perf_counter())
            token.cancel()
        timer = threading.Timer(after_s, fire)
        timer.start()
        try:
            model.generate([{"role": "user", "content": LONG_PROMPT}], max_tokens=8, cancel=token)
        except Cancelled:
            waits.append(time.perf_counter() - fired[0])
        timer.join()
    return waits


# ---- Lumen side -------------------------------------------------------------------------


def lumen_side(args: argparse.Namespace, profile: Path) -> tuple[dict, dict, dict]:
    sys.path.insert(0, str(ROOT))
    from desktop_app.core import offline

    offline.activate()
    from desktop_app.core.config import Paths, Settings
    from desktop_app.core.models import manage
    from desktop_app.core.models.runtime import ModelRuntime

    paths = Paths.resolve(profile)
    paths.ensure()
    settings = Settings(threads=args.threads, context_size=args.n_ctx, reuse_prompt_state=False)
    manage.provision(paths, settings)
    runtime = ModelRuntime(paths, settings)
    model = runtime.for_role("generator")
    rendered = [model.render([{"role": "user", "content": p}]) for p in PROMPTS]

    def run(rounds: int) -> dict:
        tokens, seconds = 0, 0.0
        for _ in range(rounds):
            for prompt in PROMPTS:
                generation = model.generate([{"role": "user", "content": prompt}],
                                            max_tokens=args.max_tokens, temperature=0.0)
                tokens += generation.completion_tokens
                seconds += generation.seconds
        return {"tokens": tokens, "seconds": seconds}
    quiet = run(args.repeats)
    tokens, seconds = quiet["tokens"], quiet["seconds"]
    with busy_python_thread():
        busy = run(1)
    waits = cancel_waits(model, args.repeats * 3)
    embedder = runtime.embedder()
    texts = sentences(args.sentences)
    embedder.embed(texts[:64])  # warm-up, as the raw side's first batch is not timed apart
    started = time.perf_counter()
    for _ in range(args.repeats):
        embedder.embed(texts)
    embedded = {"sentences": len(texts) * args.repeats, "seconds": time.perf_counter() - started}
    files = {
        "model": str(model.path), "rendered": rendered,
        "long": model.render([{"role": "user", "content": LONG_PROMPT}]),
        "onnx": str(embedder.model_path),
        "tokenizer": str(embedder.model_path.parent / "tokenizer.json"),
    }
    runtime.close()
    return ({"tokens": tokens, "seconds": seconds, "cancel_waits": waits, "busy": busy},
            embedded, files)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--n-ctx", type=int, default=2048)
    parser.add_argument("--sentences", type=int, default=512)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--raw", help=argparse.SUPPRESS)  # child-process mode: a JSON job
    args = parser.parse_args()

    if args.raw:
        job = json.loads(args.raw)
        gen = raw_generation(job["model"], job["rendered"], args.max_tokens, args.threads,
                             args.n_ctx, args.repeats)
        emb = raw_embedding(job["onnx"], job["tokenizer"], sentences(args.sentences),
                            args.batch, args.threads, args.repeats)
        batch = raw_batch_seconds(job["model"], job["long"], args.threads, args.n_ctx,
                                  args.repeats * 3)
        print(json.dumps({"generation": gen, "embedding": emb, "batch_seconds": batch}))
        return 0

    with tempfile.TemporaryDirectory(prefix="lumen-bench-") as profile:
        lumen_gen, lumen_emb, files = lumen_side(args, Path(profile))
        child = subprocess.run(
            [sys.executable, __file__, "--raw", json.dumps(files), "--repeats", str(args.repeats),
             "--max-tokens", str(args.max_tokens), "--threads", str(args.threads),
             "--n-ctx", str(args.n_ctx), "--sentences", str(args.sentences),
             "--batch", str(args.batch)],
            capture_output=True, text=True, check=True)
        raw = json.loads(child.stdout.strip().splitlines()[-1])

    lumen_tps = lumen_gen["tokens"] / lumen_gen["seconds"]
    raw_tps = raw["generation"]["tokens"] / raw["generation"]["seconds"]
    lumen_sps = lumen_emb["sentences"] / lumen_emb["seconds"]
    raw_sps = raw["embedding"]["sentences"] / raw["embedding"]["seconds"]
    from desktop_app.core.evaluation.runner import machine

    info = machine()
    print(f"Machine: {info['cpu']}, {info['cores']} cores, {info['system']}, Python {info['python']}")
    print(f"Settings: {args.threads} threads, {args.repeats} repeats, {len(PROMPTS)} prompts, "
          f"max {args.max_tokens} tokens, {args.sentences} sentences in batches of {args.batch}\n")
    print("| measure | Lumen | raw engine | Lumen ÷ raw |")
    print("|---|---|---|---|")
    print(f"| generation, tokens/s (SmolLM2-135M Q4_1, prompt + answer) | {lumen_tps:.1f} | "
          f"{raw_tps:.1f} | {lumen_tps / raw_tps:.3f} |")
    print(f"| embedding, sentences/s (MiniLM-L6 int8) | {lumen_sps:.1f} | {raw_sps:.1f} | "
          f"{lumen_sps / raw_sps:.3f} |")
    lumen_busy = lumen_gen["busy"]["tokens"] / lumen_gen["busy"]["seconds"]
    raw_busy = raw["generation"]["busy"]["tokens"] / raw["generation"]["busy"]["seconds"]
    print(f"| generation with another Python thread busy, tokens/s | {lumen_busy:.1f} | "
          f"{raw_busy:.1f} | {lumen_busy / raw_busy:.3f} |")
    waits, batch = lumen_gen["cancel_waits"], raw["batch_seconds"]
    print(f"| cancel during a long prompt, seconds to stop (median / longest of {len(waits)}) | "
          f"{statistics.median(waits):.3f} / {max(waits):.3f} | one 512-token batch: "
          f"{statistics.median(batch):.2f} / {max(batch):.2f} | "
          f"{max(waits) / statistics.median(batch):.3f} |")
    print(f"\n(generation: {lumen_gen['tokens']} vs {raw['generation']['tokens']} tokens generated)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
