"""Benchmark: replaying a benchmark through a model server (issue #17), in one run.

The same questions of the demo benchmark, answered and judged (system `qa`, scorers
`reference` and `similarity-judge`) three ways:

1. local: the embedded SmolLM2 in Lumen's own llama.cpp (sequential, as always);
2. server, N = 1: the same GGUF served on loopback by llama-cpp-python's server
   (`python -m llama_cpp.server`), one sample at a time;
3. server, N = 3: the same server, three samples in flight (server_parallel_requests).

Reported: samples per minute and the ratio to local generation measured in the same run,
plus the raw engine through each path (tokens/s of one plain completion, the server's
over HTTP against llama.cpp's in-process), so the HTTP and streaming cost is visible.

llama-cpp-python's server runs one request at a time on one llama.cpp context, so N = 3
can only overlap Lumen's own work (metrics, embedding, the database) with generation;
llama-server with --parallel, or vLLM on a GPU, batches the requests in flight.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from desktop_app.core import offline  # noqa: E402

offline.activate()

from desktop_app.core.config import Paths, Settings  # noqa: E402
from desktop_app.core.models import manage  # noqa: E402
from desktop_app.core.pipelines.calibration import demo_benchmark  # noqa: E402
from desktop_app.core.session import Session  # noqa: E402
from desktop_app.core.store import open_store  # noqa: E402

PASSPHRASE = "benchmark passphrase"
PROMPT = [{"role": "user", "content": "Explain in three sentences what a discharge summary is."}]


def free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return probe.getsockname()[1]


def start_server(model: Path, port: int, threads: int, log: Path) -> subprocess.Popen:
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias",
             "smollm2", "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096",
             "--n_threads", str(threads), "--n_threads_batch", str(threads),
             "--interrupt_requests", "False", "--verbose", "False"],
            stdout=output, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        probe = subprocess.run([sys.executable, "-c", (
            "import socket, sys; s = socket.socket(); s.settimeout(1); "
            f"sys.exit(s.connect_ex(('127.0.0.1', {port})))")])
        if probe.returncode == 0:
            return process
        if process.poll() is not None:
            raise SystemExit(log.read_text(errors="replace")[-2000:])
        time.sleep(0.3)
    raise SystemExit("the server did not start")


def raw_tokens_per_second(session: Session, tokens: int) -> float:
    model = session._runtime.for_role("generator")
    model.generate(PROMPT, max_tokens=8, temperature=0.0)  # warm-up
    generation = model.generate(PROMPT, max_tokens=tokens, temperature=0.0)
    return generation.completion_tokens / generation.seconds


def replay(paths: Paths, settings: Settings, questions: int) -> dict:
    with Session(paths, settings, open_store(paths.database_file, PASSPHRASE)) as session:
        saved, _ = session.evaluation.import_file(demo_benchmark(), "medisumqa", name="demo")
        session._runtime.embedder().embed_one("warm-up")
        raw = raw_tokens_per_second(session, 96)
        (run_id,) = session.evaluation.start(saved.id, ["qa"], ["reference", "similarity-judge"],
                                             limit=questions)
        started = time.perf_counter()
        session.evaluation.resume(run_id)
        wall = time.perf_counter() - started
        results = session.evaluation.results(run_id)
    return {"samples": len(results), "wall_s": round(wall, 2),
            "samples_per_minute": round(60 * len(results) / wall, 2),
            "raw_tokens_per_second": round(raw, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=12)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        base = Settings(threads=args.threads, context_size=2048, answer_tokens=64,
                        bootstrap_resamples=2000)
        models = Paths.resolve(folder / "models")
        models.ensure()
        manage.provision(models, base)
        base = base.with_value("models_dir", str(models.default_models_dir))
        gguf = next(models.default_models_dir.glob("smollm2*/*.gguf"))

        local = Paths.resolve(folder / "local")
        local.ensure()
        base.save(local)
        results["local"] = replay(local, base, args.questions)
        print("local", results["local"], flush=True)

        port = free_port()
        server = start_server(gguf, port, args.threads, folder / "server.log")
        try:
            for at_once in (1, 3):
                paths = Paths.resolve(folder / f"server-{at_once}")
                paths.ensure()
                settings = base.with_value("server_parallel_requests", at_once)
                settings.save(paths)
                with Session(paths, settings, open_store(paths.database_file, PASSPHRASE)) as s:
                    s.models.add_server(f"http://127.0.0.1:{port}", name="loopback",
                                        model="smollm2", roles=["generator", "reviewer", "judge"],
                                        context_length=4096)
                    settings = s.settings
                results[f"server N={at_once}"] = replay(paths, settings, args.questions)
                print(f"server N={at_once}", results[f"server N={at_once}"], flush=True)
        finally:
            server.terminate()
            server.wait(15)
    local_rate = results["local"]["samples_per_minute"]
    local_raw = results["local"]["raw_tokens_per_second"]
    print(f"\n{args.questions} questions of the demo benchmark, system qa, reference + "
          f"similarity judge; {args.threads} threads")
    print(f"{'path':14} {'samples/min':>12} {'÷ local':>8} {'raw tok/s':>10} {'÷ local':>8}")
    for name, row in results.items():
        print(f"{name:14} {row['samples_per_minute']:12.2f} "
              f"{row['samples_per_minute'] / local_rate:8.2f} "
              f"{row['raw_tokens_per_second']:10.1f} {row['raw_tokens_per_second'] / local_raw:8.2f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
