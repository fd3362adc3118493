"""enable()/disable(): immediate, restorable with ``with``, nested, private to threads and tasks."""

from __future__ import annotations

import asyncio
import importlib.util
import threading

import numpy
import pytest

import npgpu
from npgpu.backends import unavailable_reason


def test_enable_is_immediate_and_with_restores():
    assert npgpu.current_backend() is None
    state = npgpu.enable("numpy")
    try:
        assert npgpu.current_backend() == "numpy"
    finally:
        state.__exit__(None, None, None)
    assert npgpu.current_backend() is None
    with npgpu.enable("numpy"):
        assert npgpu.current_backend() == "numpy"
    assert npgpu.current_backend() is None


def test_blocks_nest_and_disable_is_scoped():
    with npgpu.enable("numpy"):
        with npgpu.enable("emulated"):
            assert npgpu.current_backend() == "emulated"
            with npgpu.disable():
                assert npgpu.current_backend() is None
            assert npgpu.current_backend() == "emulated"
        assert npgpu.current_backend() == "numpy"
    assert npgpu.current_backend() is None


def test_settings_inherit_inside_nested_blocks():
    with npgpu.enable("numpy", on_fallback="warn", fusion=False):
        with npgpu.enable("emulated"):
            from npgpu._config import current

            assert current().on_fallback == "warn" and current().fusion is False


def test_threads_do_not_see_each_others_state():
    seen: dict[str, object] = {}
    barrier = threading.Barrier(2)

    def worker(name: str, backend: str | None) -> None:
        if backend is None:
            barrier.wait()
            seen[name] = npgpu.current_backend()
            barrier.wait()
        else:
            with npgpu.enable(backend):
                barrier.wait()
                barrier.wait()
                seen[name] = npgpu.current_backend()

    threads = [threading.Thread(target=worker, args=args) for args in (("a", "emulated"), ("b", None))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"a": "emulated", "b": None}


def test_asyncio_tasks_do_not_leak():
    async def enabled() -> str | None:
        with npgpu.enable("emulated"):
            await asyncio.sleep(0.01)
            return npgpu.current_backend()

    async def plain() -> str | None:
        await asyncio.sleep(0.005)
        return npgpu.current_backend()

    async def main() -> list[str | None]:
        return list(await asyncio.gather(enabled(), plain()))

    assert asyncio.run(main()) == ["emulated", None]


def test_auto_never_fails_here():
    with npgpu.enable("auto"):
        assert npgpu.current_backend() in ("cupy", "opencl", "numpy")


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown npgpu backend 'tpu'"):
        npgpu.enable("tpu")
    with pytest.raises(ValueError, match="on_fallback must be one of"):
        npgpu.enable("numpy", on_fallback="shout")
    with pytest.raises(ValueError, match="threshold must be"):
        npgpu.enable("numpy", threshold=-1)
    assert npgpu.current_backend() is None


@pytest.mark.skipif(unavailable_reason("cupy") is None, reason="a CUDA GPU is usable here")
def test_cupy_unavailable_says_why():
    with pytest.raises(npgpu.BackendUnavailableError) as info:
        npgpu.enable("cupy")
    message = str(info.value)
    assert "cupy" in message
    if importlib.util.find_spec("cupy") is None:
        assert "not installed" in message
    else:
        assert "no usable CUDA GPU" in message


@pytest.mark.parametrize("backend", ["emulated", pytest.param("opencl", marks=pytest.mark.opencl)])
def test_a_forked_child_does_not_use_the_parents_device(backend):
    # NumPy's test_linalg forks (xerbla) under an enabled PoCL device: the child's np.array hung,
    # PoCL's threads being the parent's. A device context made before the fork stays the parent's:
    # the child computes with NumPy, and asking for that device there says why it can't.
    import os

    with npgpu.enable(backend, threshold=0):
        parent = npgpu.asarray(numpy.ones(10))
        assert float(parent.sum()) == 10.0
        pid = os.fork()
        if pid == 0:  # (the child: exit statuses carry what it found)
            try:
                made = npgpu.array([[1.0]])
                total = float(npgpu.sum(npgpu.ones(5)))
                on_device = type(made) is not numpy.ndarray
                try:
                    npgpu.enable(backend)
                    refused = False
                except npgpu.BackendUnavailableError as e:
                    refused = "forked" in str(e)
                survives = backend == "emulated"
                os._exit(0 if total == 5.0 and on_device == survives and refused != survives else 3)
            except BaseException:
                os._exit(4)
        _, status = os.waitpid(pid, 0)
        assert os.WEXITSTATUS(status) == 0
        assert float((parent * 2).sum()) == 20.0
