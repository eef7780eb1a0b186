"""The `subprocess` lane holds (issue #34): a test is in it when it, its fixtures or the
helpers they call start a process, and a test of the quick lane (`make check`) that starts
one all the same fails.  The process starts below are the guard's own test: they are
written so the source check does not see them."""

import os
import platform
import subprocess as processes
import threading
import types

import pytest

import helpers
import lanes
from helpers import run_lumen


def _item(function, *fixtures):
    return types.SimpleNamespace(function=function, fixturenames=list(fixtures),
                                 _fixtureinfo=None)


def _runs_lumen():
    return run_lumen("--version")


def _runs_lumen_by_its_module():
    return helpers.run_lumen("--version")


def _runs_lumen_imported_inside():
    from helpers import run_lumen

    return run_lumen("--version")


def _calls_a_helper_that_runs_lumen():
    return _runs_lumen()


def _starts_nothing():
    return len("lumen")


def test_a_test_is_in_the_subprocess_lane_by_what_starts_its_processes():
    for function in (_runs_lumen, _runs_lumen_by_its_module, _runs_lumen_imported_inside,
                     _calls_a_helper_that_runs_lumen):
        assert lanes.starts_a_process(_item(function)), function.__name__
    assert not lanes.starts_a_process(_item(_starts_nothing))
    # A fixture that starts a process requests `starts_processes`, at any depth.
    assert lanes.starts_a_process(_item(_starts_nothing, "profile", "starts_processes"))


def test_the_lanes_of_tests_whose_fixtures_or_helpers_start_processes(request):
    """Tests collected in this run: those of test_network_proof.py's `planted` fixture,
    test_packaging.py's _run_python and helpers.run_lumen are in the subprocess lane."""
    marked = {item.nodeid.rsplit("/", 1)[-1]: item.get_closest_marker("subprocess") is not None
              for item in request.session.items}
    expected = {"test_network_proof.py::test_the_probe_sees_a_lookup_and_a_connect_from_a_native_thread",
                "test_packaging.py::test_strict_mode_leaves_this_machine_reachable",
                "test_judges.py::test_calibrate_judge_command"}
    for nodeid in expected & set(marked):  # those collected in this run (all with `make test`)
        assert marked[nodeid], nodeid
    assert not marked[request.node.nodeid.rsplit("/", 1)[-1]]


def _start_in_a_thread():
    try:
        processes.run(["true"])
    except lanes.ProcessStartRefused:
        pass  # swallowed, as a worker thread's failure may be


def test_a_quick_lane_test_that_starts_a_process_fails(request):
    assert lanes.guarded(request.node)
    with pytest.raises(lanes.ProcessStartRefused, match="started a process .* in the quick lane"):
        processes.run(["true"])
    with pytest.raises(lanes.ProcessStartRefused):
        os.system("true")
    thread = threading.Thread(target=_start_in_a_thread)
    thread.start()
    thread.join()
    refused = lanes.refused(request.node)
    assert len(refused) == 3 and all(request.node.nodeid in message for message in refused)
    refused.clear()  # expected here; any left fail the test after it ran
    # A standard-library probe the process caches (`uname -p`) is not the test's process.
    platform._Processor.from_subprocess()  # uname -p, let through
    assert not lanes.refused(request.node)
