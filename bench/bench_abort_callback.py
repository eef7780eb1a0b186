"""Benchmark: what llama.cpp's abort callback costs generation, by the way it is read.

llama.cpp asks the callback at every step of its computation (a few hundred per token).
Three callbacks are swapped on one loaded model: a Python function (each step takes the
GIL), none at all, and Lumen's `AbortFlag` (the C library's `strlen` over a two-byte
flag: no Python).  Each is timed on a quiet interpreter and with another Python thread
busy, as the window's thread is while a reply streams; plain text and JSON under a
grammar.  Prints a Markdown table for docs/BENCHMARKS.md.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_runtime import busy_python_thread  # noqa: E402

MESSAGES = [{"role": "user", "content": "Explain in simple words what high blood pressure "
                                        "is and how to lower it."}]
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"},
                                           "sure": {"type": "boolean"}},
          "required": ["answer", "sure"]}


def main() -> int:
    from desktop_app.core import offline

    offline.activate()
    import llama_cpp

    from desktop_app.core.config import Paths, Settings
    from desktop_app.core.evaluation.runner import machine
    from desktop_app.core.models import manage
    from desktop_app.core.models.runtime import ModelRuntime

    paths = Paths.resolve(Path(tempfile.mkdtemp(prefix="lumen-bench-")))
    paths.ensure()
    settings = Settings(reuse_prompt_state=False)
    manage.provision(paths, settings)
    runtime = ModelRuntime(paths, settings)
    model = runtime.for_role("generator")
    python_callback = llama_cpp.ggml_abort_callback(lambda _data: False)
    callbacks = {
        "Python function": (python_callback, None),
        "none": (llama_cpp.ggml_abort_callback(0), None),
        "AbortFlag (C strlen)": (model.abort_flag.callback, model.abort_flag.data),
    }

    def tokens_per_second(schema: dict | None, repeats: int) -> float:
        rates = []
        for _ in range(repeats):
            generation = model.generate(MESSAGES, max_tokens=48, temperature=0.0,
                                        json_schema=schema)
            rates.append(generation.completion_tokens / generation.seconds)
        return statistics.median(rates)

    model.generate(MESSAGES, max_tokens=8)  # warm-up
    info = machine()
    print(f"Machine: {info['cpu']}, {info['cores']} cores, {info['system']}, "
          f"Python {info['python']}; {settings.effective_threads()} threads\n")
    print("| callback | quiet | quiet, JSON grammar | another Python thread busy | "
          "busy, JSON grammar |")
    print("|---|---|---|---|---|")
    for name, (callback, data) in callbacks.items():
        llama_cpp.llama_set_abort_callback(model.llama.ctx, callback, data)
        quiet = (tokens_per_second(None, 3), tokens_per_second(SCHEMA, 2))
        with busy_python_thread():
            busy = (tokens_per_second(None, 3), tokens_per_second(SCHEMA, 2))
        print(f"| {name} | " + " | ".join(f"{value:.1f}" for value in (*quiet, *busy)) + " |")
    runtime.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
