"""Benchmark: prompt-lookup decoding against plain generation, in one run (issue #17).

Ask's answers copy words from the summary's lines, which is what prompt-lookup decoding
speeds up: the next tokens are guessed by finding the last words already written in
the prompt, and the model checks the guesses in one step (llama-cpp-python's
LlamaPromptLookupDecoding; Lumen's setting `prompt_lookup_tokens`).

1. The Ask pipeline (LAMP over the evidence, as shipped) answers demo-benchmark
   questions with the setting off and at each N given.  Reported per setting: the median
   whole-question time, generation tokens/s (completion tokens ÷ model seconds), and how
   many questions got exactly the same model texts, attempt by attempt, as with it off
   (temperature 0).
2. The raw engine: every prompt the pipeline sent (with the setting off) replayed through
   plain llama-cpp-python in a child process, with no draft model and with
   LlamaPromptLookupDecoding(N), each prompt from a clean state: tokens/s, identical
   outputs, and the child's peak memory (a draft model makes llama-cpp-python keep the
   scores of every position: context × vocabulary × 4 bytes).

    python bench/bench_lookup.py [--questions 12] [--lookup 4 10] [--model FILE.gguf]

`--model` measures another GGUF (a production model) as generator and reviewer instead of
the embedded SmolLM2.
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
N_CTX = 2048


def raw_replay(model: str, prompts: list[dict], threads: int, lookup: int,
               stop: list[str]) -> dict:
    import llama_cpp
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

    llama = llama_cpp.Llama(model_path=model, n_ctx=N_CTX, n_threads=threads,
                            n_threads_batch=threads, seed=42, verbose=False,
                            draft_model=LlamaPromptLookupDecoding(num_pred_tokens=lookup)
                            if lookup else None,
                            # as Lumen does: 0.3.36 sizes a draft model's scores for one
                            # batch unless every position's are asked for
                            logits_all=bool(lookup))
    texts, tokens, started = [], 0, time.perf_counter()
    for item in prompts:
        llama.reset()
        out = llama.create_completion(prompt=item["tokens"], max_tokens=item["max_tokens"],
                                      temperature=0.0, stop=stop)
        texts.append(out["choices"][0]["text"])
        tokens += len(llama.tokenize(texts[-1].encode("utf-8"), add_bos=False, special=True))
    return {"tokens": tokens, "seconds": time.perf_counter() - started, "texts": texts,
            "peak_rss_mb": peak_memory_mb()}


def peak_memory_mb() -> float:
    """This process's peak resident memory.  Not getrusage's ru_maxrss: Linux keeps it
    across exec, so a child started from a large parent reports the parent's peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


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
    stops: list[str] = []
    try:
        pipeline = AskPipeline(runtime, load_glossary(None), settings, paths.cache_dir)
        stops[:] = runtime.for_role("generator").renderer.stop  # loaded before timing
        runtime.embedder().embed_one("warm-up")
        traces, times = [], []
        for item in items:
            started = time.perf_counter()
            traces.append(pipeline.run(item["summary"], item["question"], method="lamp").trace)
            times.append(time.perf_counter() - started)
    finally:
        LlamaModel.generate = original
        runtime.close()
    return traces, times, stops


def model_texts(trace) -> list[str]:
    return [a.text for a in trace.attempts]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=12)
    parser.add_argument("--lookup", type=int, nargs="+", default=[4, 10])
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--model", help="a GGUF file to measure instead of the embedded model")
    parser.add_argument("--raw", help=argparse.SUPPRESS)
    parser.add_argument("--raw-lookup", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.raw:
        job = json.loads(Path(args.raw).read_text())
        print(json.dumps(raw_replay(job["model"], job["prompts"], args.threads, args.raw_lookup,
                                    job["stop"])))
        return 0

    sys.path.insert(0, str(ROOT))
    from desktop_app.core import offline

    offline.activate()
    from desktop_app.core.config import Paths, Settings
    from desktop_app.core.models import manage
    from desktop_app.core.pipelines.calibration import demo_benchmark, load_items

    items = load_items(demo_benchmark(), "test")[: args.questions]
    with tempfile.TemporaryDirectory(prefix="lumen-bench-") as folder:
        paths = Paths.resolve(folder)
        paths.ensure()
        base = Settings(threads=args.threads, context_size=N_CTX)
        manage.provision(paths, base)
        model_path = str(paths.default_models_dir / "smollm2-135m-instruct-q4_1" /
                         "SmolLM2-135M-Instruct.Q4_1.gguf")
        if args.model:
            _spec, base = manage.add_gguf(paths, base, Path(args.model),
                                          roles=["generator", "reviewer"])
            model_path = str(Path(args.model).resolve())
        prompts: list[dict] = []
        runs = {0: pipeline_run(base, items, paths, prompts)}
        stop = list(runs[0][2])
        for n in args.lookup:
            runs[n] = pipeline_run(dataclasses.replace(base, prompt_lookup_tokens=n), items,
                                   paths, None)
        job = Path(folder) / "job.json"
        job.write_text(json.dumps({"model": model_path, "prompts": prompts, "stop": stop}))
        raw = {}
        for n in [0, *args.lookup]:
            child = subprocess.run([sys.executable, __file__, "--raw", str(job), "--threads",
                                    str(args.threads), "--raw-lookup", str(n)],
                                   capture_output=True, text=True)
            if child.returncode:
                raise SystemExit(f"The raw replay with lookup {n} failed:\n{child.stderr}")
            raw[n] = json.loads(child.stdout.strip().splitlines()[-1])

    print(f"{len(items)} questions from the demo benchmark's test split, method lamp, "
          f"{len(prompts)} model calls with lookup off; {args.threads} threads; "
          f"{Path(model_path).name}, context {N_CTX}\n")
    print("| prompt lookup | median seconds per question | generation tokens/s | "
          "questions with identical model texts | raw llama.cpp tokens/s | raw identical "
          "outputs | raw peak memory |")
    print("|---|---|---|---|---|---|---|")
    plain_traces, plain_times, _ = runs[0]
    for n, (traces, times, _) in runs.items():
        calls = [c for t in traces for c in t.calls()]
        tps = sum(c.completion_tokens for c in calls) / sum(c.seconds for c in calls)
        same = sum(model_texts(a) == model_texts(b) for a, b in zip(traces, plain_traces))
        r = raw[n]
        raw_same = sum(a == b for a, b in zip(r["texts"], raw[0]["texts"]))
        print(f"| {'off' if n == 0 else f'{n} tokens'} | {statistics.median(times):.2f} "
              f"({statistics.median(times) / statistics.median(plain_times):.2f}×) | {tps:.1f} | "
              f"{same} of {len(traces)} | {r['tokens'] / r['seconds']:.1f} "
              f"({(r['tokens'] / r['seconds']) / (raw[0]['tokens'] / raw[0]['seconds']):.2f}×) | "
              f"{raw_same} of {len(r['texts'])} | {r['peak_rss_mb']:.0f} MB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
