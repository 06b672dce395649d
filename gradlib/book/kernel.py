"""The book's notebook kernels: one environment, one runner (nbclient).

Every program that executes a notebook of the book takes the kernel's
environment from :func:`kernel_env` and runs its cells here:

* the book build (the site extension calls :func:`apply` in the Sphinx
  process, whose kernels inherit it), the benchmarks and the reliability gate
  use mode ``"build"``;
* the Colab simulation uses ``"colab"``, the grader ``"grade"`` and the test
  session (``tests/conftest.py``) ``"test"``.

The variables themselves live in ``kernel.json`` beside this file, their one
home.  This module imports only the standard library at load time, so
``tests/conftest.py`` and the site extension can load it by path and set the
environment *before* anything imports TensorFlow (importing it as
``gradlib.book.kernel`` would import TensorFlow first, through ``gradlib``).

:class:`Kernel` is the runner: one fresh kernel for one notebook, cells run one
at a time (asynchronously), always shut down, its whole process group killed
if it will not stop.  :func:`run_notebook` runs a whole notebook with it, once
or twice in the same kernel, and reports the first error instead of raising.
"""

from __future__ import annotations

import asyncio
import atexit
import copy
import inspect
import json
import os
import re
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Mapping, NamedTuple, Optional

SPEC_FILE = Path(__file__).with_name("kernel.json")
KERNEL_NAME = "python3"
RAISES = "raises-exception"  # the cell tag of cells the book expects to raise
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _spec() -> dict:
    return json.loads(SPEC_FILE.read_text(encoding="utf-8"))


def modes() -> List[str]:
    """The kernel environments there are: ``["build", "colab", "grade", "test"]``."""
    return sorted(_spec()["modes"])


def kernel_env(mode: str = "build", base: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """The environment of a kernel (or process) of ``mode``.

    ``base`` (default: this process's environment) with the mode's variables
    dropped, then the quiet TensorFlow settings and the mode's own variables
    set (both override what ``base`` has: every kernel of a mode runs with
    the same settings on every machine).
    """
    spec = _spec()
    if mode not in spec["modes"]:
        raise ValueError(f"kernel_env: mode must be one of {modes()}, not {mode!r}")
    env = dict(os.environ if base is None else base)
    for key in spec["modes"][mode]["drop"]:
        env.pop(key, None)
    env.update(spec["quiet"])
    env.update(spec["modes"][mode]["set"])
    return env


def apply(mode: str) -> None:
    """Make this process's environment :func:`kernel_env` ``(mode)`` (for the
    kernels it starts, and for TensorFlow when it has not been imported yet)."""
    env = kernel_env(mode)
    for key in [k for k in os.environ if k not in env]:
        del os.environ[key]
    os.environ.update(env)


# -- the runner ----------------------------------------------------------------

_LIVE: set = set()  # kernel managers not yet shut down (killed at exit as a last resort)


def _kill(km) -> None:
    """SIGKILL a kernel's process group (the kernel and whatever it started)."""
    provisioner = getattr(km, "provisioner", None)
    pgid = getattr(provisioner, "pgid", None)
    process = getattr(provisioner, "process", None)
    try:
        if pgid:
            os.killpg(pgid, signal.SIGKILL)
        elif process is not None:
            process.kill()
    except (OSError, AttributeError):
        pass


@atexit.register
def _kill_left_over_kernels() -> None:
    for km in list(_LIVE):
        _kill(km)


class Kernel:
    """One fresh kernel executing the cells of one notebook ``nb``.

    Use as ``async with Kernel(nb, cwd=..., env=...) as kernel: await
    kernel.run_cell(i)``.  ``env`` is a full environment (see
    :func:`kernel_env`); ``log`` is a file that receives the kernel process's
    own stdout/stderr (TensorFlow's start-up notices; not cell output),
    discarded by default.  ``allow_errors`` keeps a raising cell's error in its
    outputs instead of raising ``CellExecutionError``; ``interrupt_on_timeout``
    interrupts a cell that runs past its timeout (and records
    ``error_on_timeout`` as its error) instead of raising ``CellTimeoutError``.
    A dead kernel raises nbclient's ``DeadKernelError``.  :meth:`idle` tells
    whether an interrupted cell has really stopped, :meth:`kill` kills the
    kernel at once.  On leaving the block the kernel is shut down; if it will
    not stop, its process group is killed.
    """

    def __init__(self, nb, *, cwd, env: Mapping[str, str], timeout: float = 600,
                 kernel_name: str = KERNEL_NAME, startup_timeout: float = 60, log=None,
                 allow_errors: bool = False, interrupt_on_timeout: bool = False,
                 error_on_timeout: Optional[dict] = None):
        self.nb = nb
        self.cwd = str(cwd)
        self.env = dict(env)
        self.kernel_name = kernel_name
        self.startup_timeout = startup_timeout
        self.log = log
        self._client_options = dict(timeout=max(1, int(timeout)), allow_errors=allow_errors,
                                    interrupt_on_timeout=interrupt_on_timeout,
                                    error_on_timeout=error_on_timeout, iopub_timeout=5,
                                    record_timing=False, startup_timeout=int(startup_timeout),
                                    resources={"metadata": {"path": self.cwd}})
        self.km = None
        self.client = None

    async def __aenter__(self) -> "Kernel":
        from jupyter_client.manager import AsyncKernelManager
        from nbclient import NotebookClient

        self.km = AsyncKernelManager(kernel_name=self.kernel_name)
        self.client = NotebookClient(self.nb, km=self.km, **self._client_options)
        _LIVE.add(self.km)
        output = self.log if self.log is not None else subprocess.DEVNULL
        try:
            await self.km.start_kernel(cwd=self.cwd, env=self.env, stdout=output, stderr=output)
            kc = self.km.client()
            self.client.kc = kc
            kc.start_channels()
            await kc.wait_for_ready(timeout=self.startup_timeout)
            kc.allow_stdin = False
        except BaseException:
            await self._shutdown()
            raise
        return self

    async def __aexit__(self, *exc) -> None:
        await self._shutdown()

    def code_cells(self) -> List[int]:
        """Indexes (in ``nb.cells``) of the notebook's code cells."""
        return [i for i, cell in enumerate(self.nb.cells) if cell.cell_type == "code"]

    async def run_cell(self, index: int, *, timeout: Optional[float] = None,
                       execution_count: Optional[int] = None):
        """Execute ``nb.cells[index]`` (``timeout`` seconds, default the
        kernel's); returns the cell with its outputs."""
        if timeout is not None:
            self.client.timeout = max(1, int(-(-timeout // 1)))
        return await self.client.async_execute_cell(self.nb.cells[index], index,
                                                    execution_count=execution_count)

    async def idle(self, timeout: float) -> bool:
        """Whether the kernel becomes idle within ``timeout`` seconds.

        Sends an empty (silent) request and waits for its reply, which comes
        only once the cell before it has ended: False when the kernel is still
        busy after ``timeout`` (code that ignores an interrupt, or a dead kernel).
        """
        from queue import Empty

        kc = self.client.kc
        msg_id = kc.execute("", silent=True, store_history=False, allow_stdin=False)
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            try:
                reply = kc.shell_channel.get_msg(timeout=remaining)
                if inspect.isawaitable(reply):
                    reply = await reply
            except Empty:
                return False
            if (reply.get("parent_header") or {}).get("msg_id") == msg_id:
                return True

    async def kill(self) -> None:
        """Kill the kernel now (its whole process group), then clean up; the
        kernel cannot be used afterwards."""
        if self.km is not None:
            _kill(self.km)
        await self._shutdown()

    async def _shutdown(self) -> None:
        km, client = self.km, self.client
        if km is None:
            return
        try:
            if client is not None and getattr(client, "kc", None) is not None:
                client.kc.stop_channels()
        except Exception:
            pass
        try:
            if km.has_kernel:
                await asyncio.wait_for(km.shutdown_kernel(now=True), 20)
        except Exception:
            pass
        if km.has_kernel:  # it would not stop: kill its process group
            _kill(km)
        try:
            result = km.cleanup_resources()
            if asyncio.iscoroutine(result):
                await asyncio.wait_for(result, 5)
        except Exception:
            pass
        _LIVE.discard(km)
        self.km = None


class Run(NamedTuple):
    """What :func:`run_notebook` saw.

    ``notebook`` is the notebook as it was after the first pass (outputs
    filled in); ``error`` is None when every cell ran, else one line naming the
    pass, the code cell (counted from 0) and the error; ``seconds`` covers
    kernel start, every cell and shutdown; ``kernel_output`` is the kernel
    process's own stdout/stderr.
    """

    notebook: object
    error: Optional[str]
    seconds: float
    kernel_output: str

    @property
    def ok(self) -> bool:
        return self.error is None


def _last_line(err: BaseException) -> str:
    lines = [line for line in ANSI.sub("", str(err)).strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else type(err).__name__


PASS_NAMES = ("restart and run all", "run all again")


async def _run(nb, cwd, env, passes, timeout, kernel_name, log) -> tuple:
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    first, error = None, None
    try:
        async with Kernel(nb, cwd=cwd, env=env, timeout=timeout, kernel_name=kernel_name, log=log) as kernel:
            code = kernel.code_cells()
            for run in range(passes):
                for number, index in enumerate(code):
                    try:
                        await kernel.run_cell(index, execution_count=number + 1)
                    except CellExecutionError as err:
                        error = f"{PASS_NAMES[run]}: code cell {number} raised: {_last_line(err)}"
                    except CellTimeoutError:
                        error = f"{PASS_NAMES[run]}: code cell {number} ran longer than {timeout} s"
                    except DeadKernelError:
                        error = f"{PASS_NAMES[run]}: the kernel died in code cell {number}"
                    if error:
                        break
                if first is None:
                    first = copy.deepcopy(nb)
                if error:
                    break
    except Exception as err:  # the kernel died, would not start, a cell timed out ...
        error = error or f"{type(err).__name__}: {_last_line(err)}"
    return (first if first is not None else nb), error


def run_notebook(nb, *, cwd, env: Optional[Mapping[str, str]] = None, passes: int = 1,
                 timeout: float = 600, kernel_name: str = KERNEL_NAME) -> Run:
    """Execute every code cell of a copy of ``nb`` in a fresh kernel, ``passes``
    times (1: restart and run all; 2: then run all again in the same kernel).

    ``cwd`` is the kernel's working directory, ``env`` its environment
    (default ``kernel_env("build")``), ``timeout`` the seconds each cell may
    take.  Stops at the first cell that raises, unless the cell is tagged
    ``raises-exception``.  Never raises because of the notebook: see
    :class:`Run`.
    """
    if passes not in (1, 2):
        raise ValueError(f"run_notebook: passes must be 1 or 2, not {passes!r}")
    nb = copy.deepcopy(nb)
    env = kernel_env("build") if env is None else env
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as log:
        start = time.perf_counter()
        executed, error = _run_sync(nb, cwd, env, passes, timeout, kernel_name, log)
        seconds = time.perf_counter() - start
        log.seek(0)
        output = log.read().strip()
    return Run(notebook=executed, error=error, seconds=seconds, kernel_output=output)


def _run_sync(*args) -> tuple:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_run(*args))
    # Called from a running event loop (a Jupyter kernel): run in a thread.
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(_run(*args))).result()
