"""Packaging (issue 7): the bundle IT installs on an air-gapped workstation.

The slow test builds the bundle with the script IT uses (packaging/build.sh),
unpacks the tar.gz somewhere else, checks every file against SHA256SUMS and runs
`lumen --selftest` from it with a bare environment (PATH=/usr/bin:/bin, HOME an
empty folder, no LUMEN_HOME) under the strict network guard, then opens the window
on an X server (Xvfb, when installed).  The other tests check the parts it relies
on without a build.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import textwrap
import time
import tomllib
from pathlib import Path

import pytest

from desktop_app.core.config import Paths, Settings
from desktop_app.core.errors import ModelError
from desktop_app.core.models import manage
from desktop_app.core.models.catalog import ModelRegistry
from helpers import ROOT, TEST_PASSPHRASE, starts_processes

PACKAGING = ROOT / "packaging"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"packaging_{name}", PACKAGING / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@starts_processes
def _run_python(code: str, timeout: int = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "LUMEN_OFFLINE_STRICT"}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


# ---- strict offline mode (the bundle's entry point) -----------------------------------

_STRICT_PRELUDE = """
    import sys
    sys.path.insert(0, "packaging")
    import lumen_entry
    lumen_entry.install_strict_guard()
    from desktop_app.core import offline
    offline.activate()
"""


def test_strict_mode_stops_at_the_first_attempt_to_reach_another_machine():
    result = _run_python(_STRICT_PRELUDE + """
    import socket
    try:
        socket.create_connection(("192.0.2.1", 9), timeout=1)  # TEST-NET: never routed
    except Exception as exc:
        print("carried on after", type(exc).__name__)
    """)
    assert result.returncode == 70, result.stdout + result.stderr
    assert "carried on" not in result.stdout
    assert "strict offline mode: refused socket.getaddrinfo to 192.0.2.1 from <string>" in result.stderr


def test_strict_mode_leaves_this_machine_reachable():
    result = _run_python(_STRICT_PRELUDE + """
    import socket
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    socket.getaddrinfo("localhost", port)
    socket.socket(socket.AF_UNIX).close()
    print("loopback ok")
    """)
    assert result.returncode == 0, result.stderr
    assert "loopback ok" in result.stdout


def test_strict_mode_stops_at_another_process_s_loopback_port():
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        result = _run_python(_STRICT_PRELUDE + f"""
    import socket
    socket.create_connection(("127.0.0.1", {port}), timeout=5).close()
    print("carried on")
    """)
    assert result.returncode == 70, result.stdout + result.stderr
    assert "carried on" not in result.stdout
    assert f"refused socket.connect to 127.0.0.1:{port}" in result.stderr


def test_strict_mode_makes_a_recorded_refusal_fatal_at_exit():
    """A refused NLTK download goes through no socket; strict mode fails the run anyway."""
    result = _run_python("""
    import os, sys
    os.environ["LUMEN_OFFLINE_STRICT"] = "1"
    sys.path.insert(0, "packaging")
    import lumen_entry
    import desktop_app.cli
    from desktop_app.core import offline

    def command():
        offline._record("nltk.download", "cmudict")
        return 0

    desktop_app.cli.main = command
    sys.exit(lumen_entry.main())
    """)
    assert result.returncode == 70, result.stdout + result.stderr
    assert "strict offline mode: any attempt to reach another machine stops Lumen" in result.stderr
    assert "refused nltk.download to cmudict" in result.stderr


def test_without_strict_mode_a_refusal_is_recorded_not_fatal():
    result = _run_python("""
    import sys
    sys.path.insert(0, "packaging")
    import lumen_entry
    from desktop_app.core import offline
    offline.activate()
    import socket
    try:
        socket.getaddrinfo("example.org", 443)
    except ConnectionRefusedError:
        print("refused and recorded:", len(offline.attempts()))
    """)
    assert result.returncode == 0, result.stderr
    assert "refused and recorded: 1" in result.stdout


# ---- models inside a bundle -----------------------------------------------------------


@pytest.fixture
def fake_bundle(tmp_path, monkeypatch, shared_models) -> Path:
    """A bundle's data folder (sys._MEIPASS) holding the catalog and the embedded models."""
    bundle = tmp_path / "bundle"
    (bundle / "models").mkdir(parents=True)
    shutil.copy2(ROOT / "models" / "catalog.toml", bundle / "models" / "catalog.toml")
    for model_dir in shared_models.iterdir():
        target = bundle / "models" / "files" / model_dir.name
        target.mkdir(parents=True)
        for item in model_dir.iterdir():
            (target / item.name).symlink_to(item)
    monkeypatch.setattr(sys, "_MEIPASS", str(bundle), raising=False)
    return bundle


def test_a_bundle_finds_its_models_without_provisioning(fake_bundle, tmp_path):
    paths = Paths.resolve(tmp_path / "home")
    paths.ensure()
    settings = Settings()
    registry = ModelRegistry(paths, settings)
    embedded = [(spec, item) for spec in registry.all() if spec.embedded for item in spec.files]
    assert len(embedded) == 3
    for spec, item in embedded:
        assert registry.file_path(spec, item) == fake_bundle / "models" / "files" / spec.id / item.name
    for _spec, statuses in manage.verify(paths, settings, only_registered=True):
        assert all(status.ok for status in statuses), statuses
    # Provisioning has nothing to copy: the files are already in place, read-only.
    assert {r.action for r in manage.provision(paths, settings)} == {"present"}
    assert not paths.default_models_dir.exists() or not any(paths.default_models_dir.iterdir())


def test_user_models_stay_in_the_data_folder_next_to_a_bundle(fake_bundle, tmp_path):
    paths = Paths.resolve(tmp_path / "home")
    paths.ensure()
    registry = ModelRegistry(paths, Settings())
    production = registry.get("qwen2.5-7b-instruct-q4_k_m")
    assert not production.embedded and not production.files  # added by IT, never bundled


def test_a_damaged_bundled_model_says_to_copy_the_installation_again(fake_bundle, tmp_path):
    gguf = next((fake_bundle / "models" / "files").glob("*/*.gguf"))
    original = gguf.resolve()
    gguf.unlink()
    with original.open("rb") as source, gguf.open("wb") as copy:
        copy.write(source.read(1 << 20))  # cut short
    paths = Paths.resolve(tmp_path / "home")
    paths.ensure()
    with pytest.raises(ModelError, match="installation folder") as raised:
        manage.provision(paths, Settings())
    assert "SHA256SUMS" in raised.value.fix


# ---- what the spec collects -----------------------------------------------------------


def test_bundle_inputs_take_the_catalogs_embedded_files_checked():
    inputs = _load("bundle_inputs")
    catalog = tomllib.loads((ROOT / "models" / "catalog.toml").read_text(encoding="utf-8"))
    expected = {f"models/files/{m['id']}/{f['name']}": f["sha256"]
                for m in catalog["model"] if m.get("embedded") for f in m["files"]}
    found = {target: digest for _, target, digest in inputs.embedded_model_files(ROOT)}
    assert found == expected
    targets = {target for _, target in inputs.data_files(ROOT)}
    assert {"models", "resources", "glossary"} <= targets
    # The report, handout and answers are drawn from resources/templates (issue #34).
    shipped = [Path(source) for source, _ in inputs.data_files(ROOT)]
    assert any((ROOT / "resources" / "templates" / "report.html.j2").is_relative_to(folder)
               for folder in shipped)


@pytest.mark.parametrize("dest, kept", [
    ("PySide6/Qt/plugins/platforms/libqxcb.so", True),
    ("PySide6/Qt/plugins/platforms/libqoffscreen.so", True),
    ("PySide6\\plugins\\platforms\\qwindows.dll", True),
    ("PySide6/Qt/plugins/platforms/libqwayland.so", False),
    ("PySide6/Qt/plugins/platforms/libqeglfs.so", False),
    ("PySide6/Qt/plugins/platformthemes/libqgtk3.so", False),
    ("PySide6/Qt/plugins/tls/libqopensslbackend.so", False),
    ("PySide6/Qt/plugins/imageformats/libqjpeg.so", True),
    ("PySide6/Qt/lib/libQt6Widgets.so.6", True),
    ("pyarrow/libarrow_flight.so.2600", False),
    ("pyarrow/libparquet.so.2600", True),
])
def test_unused_qt_plugins_and_libraries_stay_out(dest, kept):
    assert _load("bundle_inputs").keep_binary(dest) is kept


# ---- the bundle itself ----------------------------------------------------------------

EXPECTED_PASSES = (
    "Encrypted database", "Status page", "System: Versions", "Offline: Network guard",
    "Offline: Telemetry switches", "Offline: Telemetry files", "System: llama.cpp and this CPU",
    "Models: SmolLM2 135M Instruct (Q4_1) (generator, reviewer, judge, patient)",
    "Models: all-MiniLM-L6-v2 (int8 ONNX) (embedder)", "Models: Embedder",
    "Models: Generation", "Database: Encrypted database", "Offline: Readability (textstat)",
    "Vector store", "Evaluation metrics", "Documents", "Parquet import", "Models page", "Window",
)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"),
                    reason="packaging/build.sh and the tar.gz are the Linux recipe")
def test_bundle_builds_installs_and_passes_its_selftest_offline(tmp_path):
    dist, work = tmp_path / "dist", tmp_path / "work"
    build = subprocess.run(
        ["bash", str(PACKAGING / "build.sh"), "--python", sys.executable,
         "--dist", str(dist), "--work", str(work)],
        capture_output=True, text=True, timeout=1800)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    archives = sorted(dist.glob("lumen-*-linux-*.tar.gz"))
    assert len(archives) == 1, list(dist.iterdir())
    archive = archives[0]

    # What IT does: check the archive, unpack it elsewhere, check every file in it.
    subprocess.run(["sha256sum", "--check", "--strict", f"{archive.name}.sha256"], cwd=dist,
                   check=True, capture_output=True)
    install = tmp_path / "opt"
    install.mkdir()
    with tarfile.open(archive) as tar:
        tar.extractall(install, filter="tar")
    shutil.rmtree(dist / "lumen")  # nothing may be used from the build tree
    bundle = install / "lumen"
    sums = subprocess.run(["sha256sum", "--check", "--strict", "--quiet", "SHA256SUMS"],
                          cwd=bundle, capture_output=True, text=True)
    assert sums.returncode == 0, sums.stdout + sums.stderr
    listed = {line.split("  ", 1)[1] for line in (bundle / "SHA256SUMS").read_text().splitlines()}
    on_disk = {p.relative_to(bundle).as_posix() for p in bundle.rglob("*")
               if p.is_file() and not p.is_symlink()} - {"SHA256SUMS"}
    assert listed == on_disk
    assert "lumen --selftest" in (bundle / "README.md").read_text()  # the IT guide is at the top

    # First run on a clean account: no Python, no .venv, nothing provisioned.
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "QT_QPA_PLATFORM": "offscreen",
           "LUMEN_OFFLINE_STRICT": "1"}
    result = subprocess.run([str(bundle / "lumen"), "--selftest"], cwd=home, env=env,
                            capture_output=True, text=True, timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "strict offline mode: any attempt to reach another machine stops Lumen" in result.stderr
    assert "Self-test passed." in result.stdout
    assert "[FAIL]" not in result.stdout
    for check in EXPECTED_PASSES:
        assert f"[PASS] {check}:" in result.stdout, f"{check} missing:\n{output}"

    # The models came from the bundle; user data went to the platform folders in HOME.
    listing = subprocess.run([str(bundle / "lumen"), "models", "list", "--json"], cwd=home,
                             env=env, capture_output=True, text=True, timeout=300)
    assert listing.returncode == 0, listing.stdout + listing.stderr
    embedded = [row for row in json.loads(listing.stdout) if row["source"] == "embedded"]
    assert embedded and all(row["state"] == "present" for row in embedded)
    for row in embedded:
        for item in row["files"]:
            assert Path(item["path"]).is_relative_to(bundle), item
    data = home / ".local" / "share" / "Lumen"
    assert data.is_dir()
    assert not (data / "models").exists() or not any((data / "models").iterdir())
    assert (home / ".local" / "state" / "Lumen" / "log" / "lumen.log").is_file()
    assert (home / ".config" / "Lumen").is_dir()

    # IT's one-command check, from the bundle: its own network probe (no compiler on a
    # workstation: CC points nowhere), the bundle's program as every child.
    assert (bundle / "_internal" / "resources" / "netprobe" / "libnetprobe.so").is_file()
    verify = subprocess.run([str(bundle / "lumen"), "verify-offline", "--quick", "--json"],
                            cwd=home, env={**env, "CC": "/nonexistent/cc"},
                            capture_output=True, text=True, timeout=600)
    assert verify.returncode == 0, verify.stdout[-3000:] + verify.stderr[-3000:]
    tour = json.loads(verify.stdout)
    assert tour["ok"] and tour["events"] == [] and tour["files_outside"] == []

    # The desktop platform: the window opens on an X server through the bundled xcb
    # plugin and its libraries (Xvfb stands in for the workstation's display).
    if shutil.which("Xvfb") is None:
        return  # the offscreen run above already covered the rest
    read, write = os.pipe()
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x800x24",
                             "-nolisten", "tcp"], pass_fds=[write],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    try:
        with os.fdopen(read) as ready:
            display = ":" + ready.readline().strip()
        desktop_home = tmp_path / "desktop-home"
        desktop_home.mkdir()
        log = desktop_home / ".local" / "state" / "Lumen" / "log" / "lumen.log"
        window = subprocess.Popen(
            [str(bundle / "lumen")], cwd=desktop_home, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True,
            env={"PATH": "/usr/bin:/bin", "HOME": str(desktop_home), "DISPLAY": display,
                 "LUMEN_PASSPHRASE": TEST_PASSPHRASE, "LUMEN_OFFLINE_STRICT": "1"})
        try:
            deadline = time.monotonic() + 120
            while not (log.exists() and "Main window shown" in log.read_text()):
                assert window.poll() is None, window.stdout.read()
                assert time.monotonic() < deadline, "the window was not shown within 2 minutes"
                time.sleep(0.2)
            time.sleep(2)
            assert window.poll() is None  # still up on the X server
        finally:
            window.send_signal(signal.SIGTERM)
            window.wait(30)
    finally:
        xvfb.terminate()
        xvfb.wait(10)
