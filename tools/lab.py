"""Open the book's chapters as notebooks in JupyterLab (``make lab``).

The one home of ``make lab``'s server command: the Makefile runs
``python -m tools.lab`` and ``tests/test_lab.py`` runs the very same command,
headless.  The server

* serves ``chapters/`` (the ``.ipynb`` twins are ``en/NN_name.ipynb`` and
  ``zh/NN_name.ipynb`` there; each notebook's kernel starts in the notebook's
  folder);
* runs with the environment of the book's kernels in mode ``"colab"``
  (``gradlib/book/kernel.json``: TensorFlow quiet and reproducible, inline
  figures, no ``GRADBOOK_BUILD``, no ``PYTHONPATH``), which every kernel it
  starts inherits: the reader's own run of a chapter is a Colab run without
  Colab (the first cell of each notebook installs nothing unless
  ``GRADBOOK_INSTALL_SOURCE`` is set);
* listens on 127.0.0.1 only (``--ip 0.0.0.0`` to reach it from another
  machine), on ``--port`` (0: a free port the system picks), and asks for the
  token it prints;
* adds ``--allow-root`` when run as root (Jupyter refuses root otherwise):
  containers and CI machines run as root;
* opens a browser unless ``--no-browser`` is given or there is no display
  to open one on (Linux without ``DISPLAY``/``WAYLAND_DISPLAY``).

On POSIX this process is replaced by the server (``exec``), so Ctrl-C and
the signals of whoever started it reach JupyterLab itself.  Windows has no
``exec`` (its ``os.execv*`` would split a path with spaces into several
arguments): there the server runs as a child, which gets Ctrl-C from the
console, and this process waits for it.

Usage: ``python -m tools.lab [--port N] [--ip ADDRESS] [--no-browser] [--print]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Mapping, Optional

from tools import book
from tools.book import ROOT

NOTEBOOK_DIR = ROOT / "chapters"
MODE = "colab"  # the kernel environment of a reader's own run (gradlib/book/kernel.json)
DEFAULT_PORT = 8888
DEFAULT_IP = "127.0.0.1"


def environment(base: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """The server's environment (its kernels inherit it): :data:`MODE`'s
    kernel environment over ``base`` (default: this process's)."""
    return book.kernel().kernel_env(MODE, base)


def has_display(env: Mapping[str, str] = os.environ, platform: str = sys.platform) -> bool:
    """Whether a browser can be opened: always on macOS and Windows, on
    Linux only under X11 or Wayland."""
    return not platform.startswith("linux") or bool(env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"))


def command(port: int = DEFAULT_PORT, *, ip: str = DEFAULT_IP, browser: bool = True,
            notebook_dir: Path = NOTEBOOK_DIR, python: str = sys.executable) -> List[str]:
    """The JupyterLab server command: ``python -m jupyterlab ...`` serving
    ``notebook_dir`` on ``ip:port`` (a taken port is an error, never silently
    another one: the address asked for is the address served)."""
    if not 0 <= port <= 65535:
        raise ValueError(f"port must be between 0 and 65535, not {port}")
    cmd = [python, "-m", "jupyterlab", f"--ServerApp.root_dir={notebook_dir}", f"--ServerApp.ip={ip}",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0"]
    if not browser:
        cmd.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # a container or CI machine (Jupyter refuses root otherwise)
        cmd.append("--allow-root")
    return cmd


def problems(notebook_dir: Path = NOTEBOOK_DIR) -> List[str]:
    """Why the server cannot serve the chapters: JupyterLab not installed,
    no notebooks in ``notebook_dir``."""
    found = []
    if importlib.util.find_spec("jupyterlab") is None:
        found.append(f"JupyterLab is not installed in {sys.prefix}: run `make venv` (the `book` extra installs it)")
    if not any(Path(notebook_dir).glob("*/*.ipynb")):
        found.append(f"{notebook_dir} has no chapter notebooks (*/NN_name.ipynb): run `make notebooks`")
    return found


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be between 0 and 65535, not {port}")
    return port


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.lab", description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=_port, default=DEFAULT_PORT,
                        help=f"port to listen on (default {DEFAULT_PORT}; 0: any free port)")
    parser.add_argument("--ip", default=DEFAULT_IP, help=f"address to listen on (default {DEFAULT_IP})")
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser")
    parser.add_argument("--print", action="store_true", help="print the command and exit")
    args = parser.parse_args(argv)
    browser = not args.no_browser and has_display()
    cmd = command(args.port, ip=args.ip, browser=browser)
    if args.print:
        print(shlex.join(cmd))
        return 0
    if trouble := problems():
        for problem in trouble:
            print(problem, file=sys.stderr)
        return 2
    if not args.no_browser and not browser:
        print("no display: not opening a browser; open the address below in one", file=sys.stderr)
    return run(cmd, environment())


def run(cmd: List[str], env: Mapping[str, str], *, replace: bool = os.name != "nt") -> int:
    """Run the server ``cmd``: in place of this process (``replace``, POSIX),
    or as a child whose exit code is returned (Windows)."""
    sys.stdout.flush()
    sys.stderr.flush()
    if replace:
        os.execve(cmd[0], cmd, dict(env))
    child = subprocess.Popen(cmd, env=dict(env))
    while True:
        try:
            return child.wait()
        except KeyboardInterrupt:  # the console sent Ctrl-C to the server too: it decides when to stop
            continue


if __name__ == "__main__":
    raise SystemExit(main())
