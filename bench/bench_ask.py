"""Benchmark: the Ask pipeline against plain llama.cpp, in one run.

1. Overhead: the pipeline answers demo-benchmark questions with its gates forced shut
   (so every retry, review and verify call happens).  Every prompt it sends is
   recorded, then replayed through plain llama-cpp-python in a child process (no
   Lumen code, no network guard), each from a clean state, with the same token limits.
   Reported: generation tokens/s of each (completion tokens ÷ wall time, prompt
   evaluation included) and the ratio pipeline ÷ plain, first with the pipeline's
   prompt-state reuse off (both evaluate every prompt in full: the overhead ratio),
   then as shipped.  The pipeline's figure covers everything it does between calls
   too (embedding, FKGL, glossary, bookkeeping).
2. Prefix reuse: the same run again with `reuse_prompt_state = false`; reported are
   the prompt tokens evaluated per retry call and the pipeline's seconds, both ways.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def raw_replay(model: str, prompts: list[dict], threads: int, n_ctx: int) -> dict:
    import llama_cpp

    llama = llama_cpp.Llama(model_path=model, n_ctx=n_ctx, n_threads=threads,
                            n_threads_batch=threads, seed=42, verbose=False)
    tokens, started = 0, time.perf_counter()
    for item in prompts:
        llama.reset()
        out = llama.create_completion(prompt=item["tokens"], max_tokens=item["max_tokens"],
                                      temperature=0.0, stop=["<|im_end|>"])
        tokens += out["usage"]["completion_tokens"]
    return {"tokens": tokens, "seconds": time.perf_counter() - started}


def pipeline_run(settings, items, paths, record: list | None):
    from desktop_app.core.glossary.glossary import load_glossary
    from desktop_app.core.models.runtime import LlamaModel, ModelRuntime
    from desktop_app.core.pipelines.ask import AskPipeline

    runtime = ModelRuntime(paths, settings)
    original = LlamaModel.generate

    def recording(self, messages, **kwargs):
        generation = original(self, messages, **kwargs)
        if record is not None:
            record.append({"tokens": self.tokenize(self.render(messages)),
                           "max_tokens": kwargs.get("max_tokens") or settings.max_answer_tokens})
        return generation
    LlamaModel.generate = recording
    try:
        pipeline = AskPipeline(runtime, load_glossary(None), settings, paths.cache_dir)
        runtime.for_role("generator")  # load before timing
        runtime.embedder().embed_one("warm-up")
        traces, started = [], time.perf_counter()
        for item in items:
            traces.append(pipeline.run(item["summary"], item["question"]).trace)
        seconds = time.perf_counter() - started
    finally:
        LlamaModel.generate = original
        runtime.close()
    return traces, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=4)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--raw", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.raw:
        job = json.loads(Path(args.raw).read_text())
        print(json.dumps(raw_replay(job["model"], job["prompts"], args.threads, job["n_ctx"])))
        return 0

    sys.path.insert(0, str(ROOT))
    from desktop_app.core import offline

    offline.activate()
    from desktop_app.core.config import Paths, Settings
    from desktop_app.core.models import manage
    from desktop_app.core.pipelines.calibration import demo_benchmark, load_items

    items = [i for i in load_items(demo_benchmark(), "test")][: args.questions]
    with tempfile.TemporaryDirectory(prefix="lumen-bench-") as folder:
        paths = Paths.resolve(folder)
        paths.ensure()
        base = Settings(threads=args.threads, context_size=2048, answer_tokens=64, feedback_tokens=48)
        manage.provision(paths, base)
        # Gates shut: every attempt, review and verify call runs.
        shut = dataclasses.replace(base, relevance_threshold=1.01, readability_limit=-100.0)
        prompts: list[dict] = []
        traces, seconds = pipeline_run(shut, items, paths, prompts)
        no_reuse = dataclasses.replace(shut, reuse_prompt_state=False)
        traces_fresh, seconds_fresh = pipeline_run(no_reuse, items, paths, None)
        model_path = str(paths.default_models_dir / "smollm2-135m-instruct-q4_1" /
                         "SmolLM2-135M-Instruct.Q4_1.gguf")
        job = Path(folder) / "job.json"
        job.write_text(json.dumps({"model": model_path, "prompts": prompts, "n_ctx": 2048}))
        child = subprocess.run([sys.executable, __file__, "--raw", str(job), "--threads",
                                str(args.threads)], capture_output=True, text=True, check=True)
        raw = json.loads(child.stdout.strip().splitlines()[-1])

    calls = [c for t in traces for c in t.calls()]
    tokens = sum(c.completion_tokens for c in calls)
    pipeline_tps = tokens / seconds
    fresh_tokens = sum(c.completion_tokens for t in traces_fresh for c in t.calls())
    fresh_tps = fresh_tokens / seconds_fresh
    raw_tps = raw["tokens"] / raw["seconds"]

    def retry_calls(ts):
        return [c for t in ts for c in t.calls() if c.prompt in ("extract_retry", "simplify_retry")]
    reuse = [c.prompt_tokens_evaluated for c in retry_calls(traces)]
    fresh = [c.prompt_tokens_evaluated for c in retry_calls(traces_fresh)]
    prompt_sizes = [c.prompt_tokens for c in retry_calls(traces)]
    print(f"{len(items)} questions from the demo benchmark's test split, gates forced shut: "
          f"{len(calls)} model calls, {tokens} tokens written; {args.threads} threads; "
          f"SmolLM2-135M-Instruct Q4_1\n")
    print("| measure | Lumen pipeline | plain llama.cpp | ratio |")
    print("|---|---|---|---|")
    print(f"| overhead: generation tokens/s, every prompt evaluated in full (Lumen with reuse off) "
          f"| {fresh_tps:.1f} | {raw_tps:.1f} | {fresh_tps / raw_tps:.3f} |")
    print(f"| as shipped: generation tokens/s (Lumen reuses prompt state) | {pipeline_tps:.1f} | "
          f"{raw_tps:.1f} | {pipeline_tps / raw_tps:.2f} |")
    print(f"| prompt tokens evaluated per retry call (median of {len(reuse)}) | "
          f"{statistics.median(reuse):.0f} with reuse | {statistics.median(fresh):.0f} without reuse "
          f"(prompt {statistics.median(prompt_sizes):.0f} tokens) | "
          f"{statistics.median(fresh) / max(1, statistics.median(reuse)):.0f}× fewer |")
    print(f"| whole pipeline, seconds for {len(items)} questions | {seconds:.1f} with reuse | "
          f"{seconds_fresh:.1f} without reuse | {seconds_fresh / seconds:.2f}× faster |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
