"""Benchmark: the bundle's size and its start-up time to a visible window.

    python bench/bench_bundle.py [--bundle dist/lumen] [--runs 5] [--compare-venv]

Size: the bundle folder (disk usage, apparent bytes, files), its largest parts, and
the tar.gz beside it if there is one.

Start-up: `lumen` with no command (the window) with a bare environment like the
packaging test's (PATH=/usr/bin:/bin, HOME an empty folder) plus a profile folder
and LUMEN_PASSPHRASE (a headless machine has no keyring), on Qt's offscreen
platform and, when Xvfb is installed, on a real X server (Xvfb, Qt's xcb plugin).
Timed from just before the process is started until Lumen's log says "Main window
shown", which it writes right after the main window's show() returns (the window
is then mapped and visible); then the process is stopped.  Three cases:

- cold: a new profile (the encrypted database is created, its key derived) right
  after the page cache was dropped (needs root; otherwise reported as not cold);
- first start: a new profile, files already in the page cache;
- warm: later starts with the same profile (the median of --runs).

--compare-venv times the same from the source install (.venv/bin/lumen) for
reference.  The machine is printed with the results.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = "Main window shown"
PASSPHRASE = "bundle benchmark passphrase"


def machine() -> str:
    from desktop_app.core.evaluation.runner import machine as facts

    found = facts()
    return f"{found['cpu'] or 'unknown CPU'}, {found['cores']} cores, {found['system']}"


def folder_size(folder: Path) -> tuple[int, int, int]:
    """(bytes on disk, apparent bytes, files); links counted once, not followed."""
    disk = apparent = files = 0
    for path in folder.rglob("*"):
        if path.is_symlink() or not path.is_file():
            continue
        stat = path.stat()
        disk += stat.st_blocks * 512
        apparent += stat.st_size
        files += 1
    return disk, apparent, files


def largest_parts(internal: Path, count: int = 10) -> list[tuple[str, int]]:
    sizes = []
    for child in internal.iterdir():
        if child.is_symlink():
            continue
        size = child.stat().st_size if child.is_file() else folder_size(child)[1]
        sizes.append((child.name, size))
    return sorted(sizes, key=lambda item: -item[1])[:count]


def drop_page_cache() -> bool:
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


class Xvfb:
    """A private X server for the duration of a `with` block; `.display` is ':N'."""

    def __enter__(self) -> "Xvfb":
        read, write = os.pipe()
        self.process = subprocess.Popen(
            ["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
            pass_fds=[write], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(write)
        with os.fdopen(read) as ready:
            self.display = ":" + ready.readline().strip()  # written once it accepts clients
        return self

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        self.process.wait(10)


def time_to_window(program: list[str], profile: Path, home: Path, display: str | None = None,
                   timeout: float = 180) -> float:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LUMEN_HOME": str(profile),
           "LUMEN_PASSPHRASE": PASSPHRASE, "LANG": "C.UTF-8"}
    if display:
        env["DISPLAY"] = display
    else:
        env["QT_QPA_PLATFORM"] = "offscreen"
    log = profile / "logs" / "lumen.log"
    already = log.read_text(errors="replace").count(MARKER) if log.exists() else 0
    started = time.perf_counter()
    process = subprocess.Popen(program, env=env, cwd=home, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    try:
        while True:
            if log.exists() and log.read_text(errors="replace").count(MARKER) > already:
                return time.perf_counter() - started
            if process.poll() is not None:
                raise RuntimeError(f"Lumen exited ({process.returncode}) before showing its "
                                   f"window: {process.stderr.read()[-2000:]}")
            if time.perf_counter() - started > timeout:
                raise RuntimeError("the window was not shown in time")
            time.sleep(0.005)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def measure(program: list[str], runs: int, folder: Path, display: str | None) -> dict:
    home = folder / "home"
    home.mkdir(parents=True, exist_ok=True)
    dropped = drop_page_cache()
    cold = time_to_window(program, folder / "profile-cold", home, display)
    first = time_to_window(program, folder / "profile-first", home, display)
    warm = [time_to_window(program, folder / "profile-first", home, display)
            for _ in range(runs)]
    return {"cold": cold, "cache_dropped": dropped, "first": first, "warm": warm}


def report(label: str, result: dict) -> None:
    warm = result["warm"]
    dropped = "page cache dropped" if result["cache_dropped"] else "page cache NOT dropped"
    print(f"Start to visible window, {label}:")
    print(f"  cold (new profile, {dropped}): {result['cold']:.2f} s")
    print(f"  first start (new profile, warm cache): {result['first']:.2f} s")
    print(f"  warm (existing profile), median of {len(warm)}: {statistics.median(warm):.2f} s "
          f"(min {min(warm):.2f}, max {max(warm):.2f})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bundle", type=Path, default=ROOT / "dist" / "lumen")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--compare-venv", action="store_true")
    args = parser.parse_args()
    bundle = args.bundle.resolve()
    program = bundle / ("lumen.exe" if sys.platform == "win32" else "lumen")
    if not program.exists():
        print(f"No bundle at {bundle}: build it with 'make dist' first.", file=sys.stderr)
        return 2

    print(f"Machine: {machine()}")
    disk, apparent, files = folder_size(bundle)
    print(f"Bundle {bundle}: {disk / 2**20:.0f} MiB on disk, {apparent / 2**20:.0f} MiB "
          f"apparent, {files} files")
    for name, size in largest_parts(bundle / "_internal"):
        print(f"  {size / 2**20:7.1f} MiB  {name}")
    for archive in sorted(bundle.parent.glob("lumen-*.tar.gz")):
        print(f"Archive {archive.name}: {archive.stat().st_size / 2**20:.0f} MiB")

    targets = [("bundle", [str(program)])]
    if args.compare_venv:
        targets.append(("source install (.venv)", [str(ROOT / ".venv" / "bin" / "lumen")]))
    displays = [("offscreen", None)]
    xvfb = Xvfb() if shutil.which("Xvfb") else None
    if xvfb is not None:
        xvfb.__enter__()
        displays.append((f"X server (Xvfb {xvfb.display})", xvfb.display))
    try:
        for platform_label, display in displays:
            for label, command in targets:
                folder = Path(tempfile.mkdtemp(prefix="lumen-bench-bundle-"))
                try:
                    result = measure(command, args.runs, folder, display)
                finally:
                    shutil.rmtree(folder, ignore_errors=True)
                report(f"{label}, {platform_label}", result)
    finally:
        if xvfb is not None:
            xvfb.__exit__(None, None, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
