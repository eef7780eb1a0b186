"""Benchmark: llama.cpp compiled for different CPU levels, measured in one run.

`make install` compiles llama.cpp at the `portable` level (AVX2, no AVX-512, no AMX:
packaging/install_llama.sh), so every workstation runs the same machine code and gives
the same outputs.  This measures what that costs against a `native` build of the same
llama.cpp for this machine's CPU (AVX-512 and VNNI where it has them; AMX is left out
at every level, it crashes), and, when asked, the `baseline` build for CPUs without
AVX2:

- prompt evaluation (tokens/s) on a ~400-token discharge-summary prompt;
- generation (tokens/s), greedy, 128 tokens;
- whether the generated tokens are identical across builds.

Each build runs in its own Python (a venv under build/bench-llama-LEVEL, compiled on
first use, about 5 minutes each), in alternating order, with the same model, threads
and prompts; nothing of Lumen's runs in the workers.  Ratios are level ÷ portable.
Run:  .venv/bin/python bench/bench_cpu_builds.py [--levels native,baseline]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PURE_DEPENDENCIES = ("numpy", "typing_extensions", "diskcache", "Jinja2", "MarkupSafe")
SUMMARY = (
    "Discharge summary. The patient is a 68-year-old woman admitted with community-acquired "
    "pneumonia of the right lower lobe. She was treated with intravenous ceftriaxone and oral "
    "azithromycin for three days, then switched to oral amoxicillin-clavulanate 875/125 mg twice "
    "daily to complete seven days. Oxygen was weaned to room air on day three. Creatinine rose "
    "from 0.9 to 1.6 mg/dL on admission because of dehydration and returned to 1.0 with fluids. "
    "Her metformin 500 mg twice daily was held while the creatinine was high and restarted at "
    "discharge. Lisinopril 10 mg daily is paused until her follow-up visit. She should drink "
    "plenty of fluids, rest, and return if she has chest pain, new shortness of breath, a fever "
    "above 38.5 C, or confusion. Follow-up with her primary care doctor in one week with a "
    "repeat chest X-ray in six weeks. "
)
QUESTIONS = ["Which antibiotic do I take at home, and for how long?",
             "Why was my blood pressure medicine stopped?",
             "When should I come back to the hospital?"]


def worker(model: str, threads: int, n_ctx: int, max_tokens: int, repeats: int) -> dict:
    """Runs in the build's own Python: plain llama-cpp-python, nothing of Lumen's."""
    import llama_cpp

    llama = llama_cpp.Llama(model_path=model, n_ctx=n_ctx, n_threads=threads,
                            n_threads_batch=threads, seed=42, verbose=False)
    prompt_tokens = prompt_seconds = gen_tokens = gen_seconds = 0.0
    digests = []
    for _ in range(repeats):
        for question in QUESTIONS:
            text = (f"<|im_start|>user\n{SUMMARY * 2}\nQuestion: {question}<|im_end|>\n"
                    "<|im_start|>assistant\n")
            tokens = llama.tokenize(text.encode(), add_bos=False, special=True)
            llama.reset()
            started = time.perf_counter()
            llama.eval(tokens)
            prompt_seconds += time.perf_counter() - started
            prompt_tokens += len(tokens)
            started = time.perf_counter()
            out = llama.create_completion(prompt=tokens, max_tokens=max_tokens, temperature=0.0,
                                          stop=["<|im_end|>"])
            gen_seconds += time.perf_counter() - started
            gen_tokens += out["usage"]["completion_tokens"]
            digests.append(hashlib.sha256(out["choices"][0]["text"].encode()).hexdigest()[:12])
    return {"system_info": llama_cpp.llama_print_system_info().decode().strip(),
            "prompt_tps": prompt_tokens / prompt_seconds, "gen_tps": gen_tokens / gen_seconds,
            "gen_tokens": gen_tokens, "digests": digests}


def build_python(level: str) -> Path:
    """A venv with llama-cpp-python compiled at `level` (built once, then reused)."""
    venv = ROOT / "build" / f"bench-llama-{level}"
    python = venv / "bin" / "python"
    if (venv / ".built").exists():
        return python
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pins = [line.strip() for line in (ROOT / "requirements.lock").read_text().splitlines()
            if line.split("==")[0] in PURE_DEPENDENCIES]
    subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check",
                    "--no-deps", *pins], check=True)
    subprocess.run([str(ROOT / "packaging" / "install_llama.sh"), str(python), level], check=True)
    (venv / ".built").touch()
    return python


def run_worker(python: Path, args: argparse.Namespace, model: str) -> dict:
    env = dict(os.environ, ORT_DISABLE_TELEMETRY="1", HF_HUB_OFFLINE="1")
    child = subprocess.run([str(python), __file__, "--worker", model, "--threads", str(args.threads),
                            "--n-ctx", str(args.n_ctx), "--max-tokens", str(args.max_tokens),
                            "--repeats", str(args.repeats)],
                           capture_output=True, text=True, check=True, env=env)
    return json.loads(child.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", default="native",
                        help="builds to compare with the installed portable one (native, baseline)")
    parser.add_argument("--python", action="append", default=[], metavar="LEVEL=PYTHON",
                        help="use this Python for a level instead of building one")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--n-ctx", type=int, default=2048)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds per build")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.threads, args.n_ctx, args.max_tokens,
                                args.repeats)))
        return 0

    sys.path.insert(0, str(ROOT))
    from desktop_app.core import offline

    offline.activate()
    from desktop_app.core.config import Paths, Settings
    from desktop_app.core.evaluation.runner import machine
    from desktop_app.core.models.catalog import ModelRegistry
    from desktop_app.core.models.cpu import llama_build, parse_system_info

    installed = llama_build()
    if installed.level != "portable":
        print(f"The installed llama.cpp is the '{installed.level}' build; run 'make install' first.")
        return 2
    paths = Paths.resolve()
    registry = ModelRegistry(paths, Settings.load(paths))
    spec = registry.get("smollm2-135m-instruct-q4_1")
    model = str(registry.file_path(spec, spec.primary_file()))
    pythons = {"portable": Path(sys.executable)}
    given = dict(item.split("=", 1) for item in args.python)
    for level in [lvl.strip() for lvl in args.levels.split(",") if lvl.strip()]:
        pythons[level] = Path(given[level]) if level in given else build_python(level)

    results: dict[str, list[dict]] = {level: [] for level in pythons}
    for round_index in range(args.rounds):
        order = list(pythons) if round_index % 2 == 0 else list(reversed(pythons))
        for level in order:
            results[level].append(run_worker(pythons[level], args, model))

    def mean(level: str, key: str) -> float:
        return sum(r[key] for r in results[level]) / len(results[level])

    info = machine()
    print(f"Machine: {info['cpu']}, {info['cores']} cores, {info['system']}, Python {info['python']}")
    print(f"Model: SmolLM2-135M-Instruct Q4_1; {args.threads} threads; {args.rounds} alternating "
          f"rounds × {args.repeats} repeats × {len(QUESTIONS)} questions; greedy, max "
          f"{args.max_tokens} tokens\n")
    print("| llama.cpp build | instructions | prompt tokens/s | generation tokens/s | "
          "prompt ÷ portable | generation ÷ portable | same tokens as portable |")
    print("|---|---|---|---|---|---|---|")
    base_prompt, base_gen = mean("portable", "prompt_tps"), mean("portable", "gen_tps")
    base_digests = results["portable"][0]["digests"]
    for level in pythons:
        instructions = ", ".join(parse_system_info(results[level][0]["system_info"]))
        same = all(r["digests"] == base_digests for r in results[level])
        print(f"| {level} | {instructions} | {mean(level, 'prompt_tps'):.0f} | "
              f"{mean(level, 'gen_tps'):.1f} | {mean(level, 'prompt_tps') / base_prompt:.2f} | "
              f"{mean(level, 'gen_tps') / base_gen:.2f} | {'yes' if same else 'no'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
