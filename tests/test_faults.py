"""Faults: device memory exhausted, kernels that won't build, a device lost, interrupts, stuck
staging workers, exit with work in flight. Each ends in NumPy's answer (a counted fallback) or a
clear npgpu error, never a crash, a wrong answer or a changed array (README, "When the device
can't")."""

from __future__ import annotations

import _thread
import dataclasses
import gc
import signal
import subprocess
import sys
import threading
import time
from collections import OrderedDict

import numpy
import pytest
from conftest import subprocess_env

import npgpu
from npgpu import _errors
from npgpu.backends import get_backend
from npgpu.backends.cupy.staging import _StagingWorkers
from npgpu.kernels import codegen

SMALL_DEVICE = 1 << 20  # bytes one array may take on the "small device" of these tests


def _fallback_reasons() -> list[str]:
    return [reason for counts in npgpu.report().functions.values() for reason in counts.reasons]


@pytest.fixture(params=["emulated", pytest.param("opencl", marks=pytest.mark.opencl)])
def small_device(request, monkeypatch):
    """A backend that refuses arrays of more than SMALL_DEVICE bytes (as a smaller device would),
    enabled with every array on the device."""
    from conftest import _OPENCL_REASON

    if request.param == "opencl" and _OPENCL_REASON is not None:
        pytest.skip(_OPENCL_REASON)
    backend = get_backend(request.param)
    monkeypatch.setattr(backend, "max_alloc_bytes", SMALL_DEVICE)
    with npgpu.enable(request.param, threshold=0):
        npgpu.report(reset=True)
        yield backend


# -- device memory -----------------------------------------------------------------------------

@pytest.mark.opencl
def test_an_array_larger_than_the_opencl_device_allows_is_refused_before_allocating(cl):
    too_many = cl.max_alloc_bytes // 8 + 1
    with pytest.raises(_errors.DeviceMemoryError) as caught:
        cl.empty((too_many,), numpy.float64)
    error = caught.value
    assert isinstance(error, MemoryError)
    assert error.requested == too_many * 8 and error.per_array == cl.max_alloc_bytes
    message = str(error)
    assert f"{too_many * 8} bytes asked" in message and "for one array" in message and "in all" in message
    assert "npgpu.disable()" in message  # what to do


@pytest.mark.opencl
def test_a_creation_larger_than_the_opencl_device_runs_in_numpy():
    # A real PoCL limit (CL_DEVICE_MAX_MEM_ALLOC_SIZE); NumPy's empty() reserves, never touches.
    backend = get_backend("opencl")
    n = backend.max_alloc_bytes // 8 + 1
    with npgpu.enable("opencl", threshold=0):
        npgpu.report(reset=True)
        a = npgpu.empty(n)
        assert type(a) is numpy.ndarray and a.shape == (n,)
        del a
        assert any(r.startswith("device memory") for r in _fallback_reasons())


def test_a_function_whose_result_does_not_fit_falls_back_with_inputs_intact(small_device):
    host = numpy.arange(100_000.0)  # 800 kB: fits; the concatenation (1.6 MB) does not
    a = npgpu.asarray(host.copy())
    assert isinstance(a, npgpu.DeviceArray)
    out = npgpu.concatenate([a, a])
    numpy.testing.assert_array_equal(out, numpy.concatenate([host, host]))
    assert type(out) is numpy.ndarray  # (too large to go back to the device)
    numpy.testing.assert_array_equal(numpy.asarray(a), host)
    assert any(r.startswith("device memory") for r in _fallback_reasons())


def test_a_fused_result_that_does_not_fit_is_computed_by_numpy_and_stays_pending(small_device):
    x_host, y_host = numpy.linspace(0.0, 1.0, 600), numpy.linspace(1.0, 2.0, 600)
    x, y = npgpu.asarray(x_host.copy()), npgpu.asarray(y_host.copy())
    outer = x[:, None] * y[None, :] + 1.0  # 2.9 MB of result from 10 kB of inputs
    want = x_host[:, None] * y_host[None, :] + 1.0
    assert float(outer.sum()) == pytest.approx(want.sum(), rel=1e-12)  # a reduction needs no full result
    numpy.testing.assert_array_equal(numpy.asarray(outer), want)
    assert outer._pending is not None  # its graph intact
    assert any(r.startswith("device memory") for r in _fallback_reasons())
    numpy.testing.assert_array_equal(npgpu.concatenate([outer, outer]), numpy.concatenate([want, want]))
    numpy.testing.assert_array_equal(numpy.asarray(x), x_host)
    numpy.testing.assert_array_equal(numpy.asarray(y), y_host)
    npgpu.sync()  # the pending array that can't be computed on the device raises no error here...
    small_device.max_alloc_bytes = 1 << 40
    numpy.testing.assert_array_equal(numpy.asarray(outer), want)  # ...and is computed once it fits
    assert outer._pending is None


def test_an_upload_that_does_not_fit_keeps_the_host_array(small_device):
    host = numpy.ones(300_000)
    a = npgpu.asarray(host)
    assert type(a) is numpy.ndarray
    assert any(r.startswith("device memory") for r in _fallback_reasons())


def test_device_memory_fallbacks_honour_on_fallback_raise(small_device):
    x = npgpu.asarray(numpy.ones(600))
    outer = x[:, None] * x[None, :]
    with npgpu.enable(small_device.name, threshold=0, on_fallback="raise"):
        with pytest.raises(npgpu.FallbackError, match="device memory"):
            numpy.asarray(outer)
    assert outer._pending is not None


# -- kernels that fail to build -----------------------------------------------------------------

@pytest.fixture
def broken_compiler(cl, monkeypatch):
    """OpenCL elementwise kernels built from now on fail to compile (an undeclared identifier)."""
    real = codegen.elementwise

    def broken(graph, layout, dialect):
        ks = real(graph, layout, dialect)
        return dataclasses.replace(ks, source=ks.source.replace("{", "{ npgpu_undeclared_name = 1;", 1))

    monkeypatch.setattr(codegen, "elementwise", broken)
    backend = get_backend("opencl")
    monkeypatch.setattr(backend, "_kernels", OrderedDict())  # (nothing built before counts)
    return backend


@pytest.mark.opencl
@pytest.mark.filterwarnings("ignore::UserWarning")  # (PyOpenCL may warn about the failed build)
def test_a_fused_kernel_that_fails_to_build_runs_in_numpy_naming_the_compiler_message(broken_compiler):
    host = numpy.linspace(-2.0, 2.0, 10_000)
    with npgpu.enable("opencl", threshold=0):
        a = npgpu.asarray(host.copy())
        npgpu.report(reset=True)
        b = (a * 3.0 - 1.0) / 2.0
        numpy.testing.assert_array_equal(numpy.asarray(b), (host * 3.0 - 1.0) / 2.0)
        assert isinstance(b, npgpu.DeviceArray) and b._pending is None  # computed on the host, uploaded
        reasons = _fallback_reasons()
        assert reasons and all("npgpu_undeclared_name" in r for r in reasons), reasons
        numpy.testing.assert_array_equal(numpy.asarray(a), host)


@pytest.mark.opencl
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_an_eager_kernel_that_fails_to_build_is_a_counted_fallback(broken_compiler):
    host = numpy.arange(5_000, dtype=numpy.int32)
    with npgpu.enable("opencl", threshold=0, fusion=False):
        a = npgpu.asarray(host.copy())
        npgpu.report(reset=True)
        numpy.testing.assert_array_equal(numpy.asarray(a * 7), host * 7)
        a += 2  # (out= into a: nothing was written before the build failed)
        numpy.testing.assert_array_equal(numpy.asarray(a), host + 2)
        assert any("npgpu_undeclared_name" in r for r in _fallback_reasons())


# -- a device lost after enable ---------------------------------------------------------------------

@pytest.mark.opencl
def test_a_device_that_stops_working_raises_a_clear_error(cl, monkeypatch):
    import pyopencl

    backend = get_backend("opencl")
    with npgpu.enable("opencl", threshold=0):
        a = npgpu.asarray(numpy.arange(1000.0))

        class Lost:
            """PyOpenCL as it answers once the device is gone."""

            def __getattr__(self, name):
                real = getattr(pyopencl, name)
                if not name.startswith("enqueue_"):
                    return real

                def fail(*args, **kwargs):
                    record = pyopencl._cl._ErrorRecord(f"{name} failed: DEVICE_NOT_AVAILABLE",
                                                       pyopencl.status_code.DEVICE_NOT_AVAILABLE, name)
                    raise pyopencl.RuntimeError(record)

                return fail

        monkeypatch.setattr(backend, "_cl", Lost())
        with pytest.raises(_errors.DeviceLostError, match="stopped working") as caught:
            numpy.asarray(a * 2.0)
        assert backend.device.name.strip() in str(caught.value)
        with pytest.raises(_errors.DeviceLostError):
            npgpu.sync()
    monkeypatch.undo()
    with npgpu.enable("opencl", threshold=0):  # (usable again once it answers)
        b = npgpu.asarray(numpy.ones(3)) * 2
        assert isinstance(b, npgpu.DeviceArray)
        numpy.testing.assert_array_equal(numpy.asarray(b), [2.0, 2.0, 2.0])


# -- KeyboardInterrupt ---------------------------------------------------------------------------------

@pytest.fixture
def python_handles_sigint():
    """Python's own SIGINT handler for the test: a process started in the background by a
    non-interactive shell inherits SIGINT ignored, and then _thread.interrupt_main() does nothing
    (the interrupt tests failed so in a `.ci/run &` here)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    # Other libraries' garbage-collection callbacks are Python code, where an interrupt is lost
    # (hypothesis, once imported by another test, times every collection: the full suite lost one
    # there). npgpu installs none; the test harness's are set aside while an interrupt may land.
    # The standard library's weak sets (threading's registry of Thread objects among them) run
    # Python callbacks when a member dies, as a collection may make one die here: the interrupt
    # landed in one once (2026-12-06, a lost KeyboardInterrupt reported as unraisable). No
    # collection runs while an interrupt may land.
    callbacks = gc.callbacks[:]
    gc.callbacks.clear()
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
        gc.callbacks[:] = callbacks
        signal.signal(signal.SIGINT, previous)


def _interrupt_after(seconds: float, sent: threading.Event, timers: list[threading.Timer]) -> None:
    """An interrupt of the main thread (as Ctrl-C) ``seconds`` from now; ``sent`` is set after it.
    (Call it inside the ``try``: the interrupt may land before this returns.) The timer is kept in
    ``timers``: a Thread object dying in the main thread runs threading's weak-set callback, Python
    code where the interrupt would be lost."""

    def interrupt() -> None:
        _thread.interrupt_main()
        sent.set()

    timer = threading.Timer(seconds, interrupt)
    timers.append(timer)
    timer.start()


def _until(sent: threading.Event) -> None:
    """Sleep until the interrupt was sent and has landed (it then raises here at the latest)."""
    sent.wait(10)
    for _ in range(50):
        time.sleep(0.01)


@pytest.mark.parametrize("delay", [0.0, 0.005, 0.05])
def test_an_interrupt_while_a_large_graph_runs_leaves_arrays_and_the_process_usable(device_backend, delay,
                                                                                    python_handles_sigint):
    host = numpy.linspace(0.0, 3.0, 1_000_000)
    with npgpu.enable(device_backend, threshold=0):
        a = npgpu.asarray(host.copy())

        def work(xp, a):
            x = a
            for _ in range(6):
                x = xp.sin(x) * 0.5 + xp.cos(a)
            return x

        want = work(numpy, host)
        interrupted = False
        sent = threading.Event()
        timers: list[threading.Timer] = []
        try:
            _interrupt_after(delay, sent, timers)
            x = work(npgpu, a)
            total = float(x.sum())
            npgpu.sync()
            _until(sent)
        except KeyboardInterrupt:
            interrupted = True
        if not interrupted:  # (it landed in work of the harness: the values still count)
            assert total == pytest.approx(want.sum(), rel=1e-12)
        numpy.testing.assert_array_equal(numpy.asarray(a), host)
        # (device sin/cos differ from the host's in the last bits; near a zero of the result that
        # is a relative 1e-12: compared with an absolute bound there)
        numpy.testing.assert_allclose(numpy.asarray(work(npgpu, a)), want, rtol=1e-13, atol=1e-15)
        npgpu.sync()


@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_arrays_die_without_running_python_code(device_backend, native):
    """Python runs weakref callbacks wherever an array dies, and an exception raised in one is lost
    (sys.unraisablehook): a Ctrl-C landing in Python code there never reaches the program (seen in
    CI: the interrupt test above, the registry's callback). So the pending registry's, residency's
    and the OpenCL memory pool's callbacks are C functions, and dying runs no Python function."""
    from npgpu import _native, _residency
    from npgpu.lazy import registry

    host = numpy.linspace(0.0, 1.0, 4096)
    before = registry.pending_count()
    _native.use_native(native)
    try:
        with npgpu.enable(device_backend, threshold=0):
            a = npgpu.asarray(host)
            b = npgpu.sin(a) * 2.0 + a  # pending, registered
            c = (b + 1.0)[1:]  # a view of a pending array
            costs = a._backend.costs
            if costs is not None:  # (a ledger, as residency opens for an array user code indexes)
                _residency._ledger_of(a)
                assert id(a) in _residency.tracked
            d = npgpu.cos(a) + 1.0
            d_sum = float(d.sum())  # a computed array: its buffer is the pool's (host memory on PoCL)
            assert d_sum == pytest.approx(float((numpy.cos(host) + 1.0).sum()), rel=1e-12)
            assert registry.pending_count() >= before + 2
            ran: list[str] = []

            def profile(frame, event, arg):
                if event == "call":
                    ran.append(f"{frame.f_code.co_filename}:{frame.f_code.co_name}")

            sys.setprofile(profile)
            try:
                del a, b, c, d
            finally:
                sys.setprofile(None)
            assert ran == []
            assert registry.pending_count() == before  # the entries went with the arrays
            # (a's ledger went with it; other tests' arrays may still be alive and tracked)
            assert all(ledger.ref() is not None for key, ledger in list(_residency.tracked.items())
                       if key != _residency.GATE)
            npgpu.sync()
    finally:
        _native.use_native(True)


# -- the staging workers' watchdog and interrupts (the CuPy transfer path, run with fake work) ----------

def _chunks(n: int) -> list[list[tuple[int, int]]]:
    return [[(g * 100 + 4 * k, g * 100 + 4 * k + 4) for k in range(3)] for g in range(n)]


def test_a_stuck_staging_worker_is_reported_naming_its_chunk(capfd):
    workers = _StagingWorkers(3)
    workers.timeout = 0.3
    release = threading.Event()

    def work(group, progress):
        for lo, hi in group:
            progress[0], progress[1] = (lo, hi), time.monotonic()
            if (lo, hi) == (104, 108):
                release.wait(30)  # stuck on group 1's second chunk

    keep = object()
    with pytest.raises(_errors.StagingTimeoutError, match="group 1 at bytes 104-108") as caught:
        workers.run(work, _chunks(3), "an upload of 300 bytes", keep)
    assert "an upload of 300 bytes" in str(caught.value)
    assert keep in workers.abandoned  # (the stuck worker's memory stays alive)
    err = capfd.readouterr().err
    assert "tracebacks of all threads" in err and "_serve" in err  # faulthandler's dump
    release.set()
    done: list[int] = []
    workers.run(lambda group, progress: done.append(len(group)), _chunks(4), "a download", None)
    assert done == [3, 3, 3, 3]  # fresh threads took the next transfer


def test_staging_workers_end_on_shutdown():
    workers = _StagingWorkers(2, name="npgpu-test-shutdown")
    workers.run(lambda group, progress: None, _chunks(2), "an upload", None)
    threads = [t for t in threading.enumerate() if t.name.startswith("npgpu-test-shutdown")]
    assert len(threads) == 2
    workers.shutdown()
    for t in threads:
        t.join(5)
    assert not any(t.is_alive() for t in threads)


def test_a_staging_workers_error_is_raised_once_every_worker_stopped():
    workers = _StagingWorkers(3)
    running = []

    def work(group, progress):
        running.append(1)
        if group[0][0] == 0:
            raise OSError("copy failed")
        time.sleep(0.2)
        running.pop()

    with pytest.raises(OSError, match="copy failed"):
        workers.run(work, _chunks(3), "an upload", None)
    assert running == [1]  # only the failed one never finished


def test_an_interrupt_while_uploads_are_staged_waits_for_the_workers(python_handles_sigint):
    workers = _StagingWorkers(4)
    finished: list[int] = []
    sent = threading.Event()

    def work(group, progress):
        if group[0][0] == 0:  # (the interrupt comes while every group is being staged)
            _thread.interrupt_main()
            sent.set()
        time.sleep(0.3)
        finished.append(group[0][0])

    with pytest.raises(KeyboardInterrupt):
        workers.run(work, _chunks(4), "an upload", None)
        _until(sent)  # (never reached when the interrupt landed in run(), as it should)
    assert sent.is_set()
    assert sorted(finished) == [0, 100, 200, 300]  # none was still writing when the interrupt went on


# -- CuPy (the GPU machine) ----------------------------------------------------------------------------

@pytest.mark.gpu
def test_cupy_exits_cleanly_with_work_in_flight():
    pytest.importorskip("cupy")
    script = (
        "import numpy, npgpu as np\n"
        "with np.enable('cupy'):\n"
        "    a = np.asarray(numpy.random.random(50_000_000))\n"
        "    for _ in range(20):\n"
        "        a = np.sin(a) * 0.5 + 1.0\n"
        "        a._native\n"  # launched, not waited for
        "    b = np.asarray(numpy.ones(50_000_000))\n"  # a staged upload, then exit at once
        "print('end')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env=subprocess_env())
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "end" and "npgpu:" not in done.stderr


@pytest.mark.gpu
def test_cupy_memory_and_device_errors_become_npgpu_errors():
    cupy = pytest.importorskip("cupy")
    backend = get_backend("cupy")
    pool = cupy.get_default_memory_pool()
    pool.free_all_blocks()
    free, total = cupy.cuda.Device().mem_info
    with pytest.raises(_errors.DeviceMemoryError) as caught:
        backend.call_function(numpy.empty, ((total // 8 + 1,),), {})  # more bytes than the device has
    assert caught.value.total == total and "free now" in str(caught.value)
    with pytest.raises(_errors.DeviceLostError, match="stopped working"):
        backend._raise_fault(cupy.cuda.runtime.CUDARuntimeError(700))
    hog = cupy.empty(free - (1 << 30), numpy.uint8)  # a device with about 1 GiB left
    try:
        with npgpu.enable("cupy", threshold=0):  # (x below is small: on the device by this threshold)
            npgpu.report(reset=True)
            a = npgpu.zeros(2 << 30, dtype=numpy.uint8)
            assert type(a) is numpy.ndarray and a.size == 2 << 30 and not a.any()
            del a
            host = numpy.linspace(0.0, 1.0, 20_000)
            x = npgpu.asarray(host)
            outer = x[:, None] * x[None, :] + 1.0  # 3.2 GB
            assert float(outer.sum()) == pytest.approx((host[:, None] * host[None, :] + 1.0).sum(), rel=1e-12)
            got = numpy.asarray(outer)
            assert got[123, 4567] == host[123] * host[4567] + 1.0 and outer._pending is not None
            del got
            assert any(r.startswith("device memory") for r in _fallback_reasons())
            # (outer stays pending: dropped here, or the ExceptionInfo's cycle keeps this frame and
            # the next test's sync() would compute it)
            del outer, x, caught
    finally:
        del hog
        pool.free_all_blocks()


@pytest.mark.gpu
def test_a_cupy_kernel_that_fails_to_build_is_a_counted_fallback(monkeypatch):
    pytest.importorskip("cupy")
    from npgpu.backends.cupy.backend import CupyBackend

    real = CupyBackend._fused_function

    def broken(self, graph):
        preamble, call, spec = real(self, graph)
        return preamble + "\n#error npgpu_undeclared_name\n", call, spec

    monkeypatch.setattr(CupyBackend, "_fused_function", broken)
    backend = get_backend("cupy")
    monkeypatch.setattr(backend, "_kernels", {})
    host = numpy.linspace(-2.0, 2.0, 1_000_000)
    with npgpu.enable("cupy", threshold=0):  # (8 MB: below the upload threshold, NumPy's otherwise)
        a = npgpu.asarray(host)
        npgpu.report(reset=True)
        numpy.testing.assert_array_equal(numpy.asarray((a * 3.0 - 1.0) / 2.0), (host * 3.0 - 1.0) / 2.0)
        assert any("npgpu_undeclared_name" in r for r in _fallback_reasons()), npgpu.report()
