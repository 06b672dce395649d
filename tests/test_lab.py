"""``make lab``: the chapters as notebooks in JupyterLab, headless.

The server is started with ``make lab``'s own command (``python -m
tools.lab``, which the Makefile runs; a test below reads the Makefile's
recipe), on a free port, without a browser, with Jupyter's runtime, config and
data folders in a temporary directory (the user's settings, kernelspecs and
workspaces play no part).  Through it:

* the Jupyter Server REST API serves each language's first chapter notebook
  with exactly the cells of the ``.ipynb`` on disk, refuses a request without
  the token (403) and answers 404 for a notebook that does not exist;
* a kernel session for the chapter runs the notebook's first code cell (the
  install cell: nothing to do outside Colab) and a cell importing gradlib,
  over the kernel's websocket, in the chapter's folder, with the book's
  kernel environment (mode ``colab`` of ``gradlib/book/kernel.json``);
* Debian's Chromium (Playwright, ``tools/browsercheck.py``; never
  ``playwright install``) opens ``/lab/tree/en/01_gradients.ipynb`` and the
  notebook's cells render, with no request to any other host;
* the chapter notebooks on disk are left exactly as they were.

The server (and every kernel it started) is shut down at the end, whatever
happened.  The server tests are ``slow`` (``make test``, not ``make check``), all on one
xdist worker;
without JupyterLab, Playwright or Chromium they fail, they never skip.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from tools import browsercheck as bc
from tools import lab
from tools.book import ROOT

CHAPTER = "01_gradients.ipynb"
LANGS = ("en", "zh")
START_TIMEOUT = 120  # seconds for the server to answer
CELL_TIMEOUT = 180  # seconds for a cell (importing gradlib imports TensorFlow)
UI_TIMEOUT_MS = 90_000  # JupyterLab's first load on a busy machine

# JupyterLab comes with the book's tools (the `book` extra), which the
# Colab-like .venv-colab does not have.
pytestmark = pytest.mark.build


def slow(test):
    """A test of the running server: ``slow``, and on the one xdist worker
    that runs the server (``make test`` runs on every core)."""
    return pytest.mark.slow(pytest.mark.xdist_group("lab")(test))


def on_disk(lang: str) -> Path:
    return lab.NOTEBOOK_DIR / lang / CHAPTER


# -- the command (fast) ---------------------------------------------------------


def test_the_command_serves_the_chapters_on_the_port_asked_for():
    cmd = lab.command(0, browser=False, python="/py")
    assert cmd[:3] == ["/py", "-m", "jupyterlab"]
    assert f"--ServerApp.root_dir={ROOT / 'chapters'}" in cmd
    assert "--ServerApp.ip=127.0.0.1" in cmd and "--ServerApp.port=0" in cmd
    assert "--ServerApp.port_retries=0" in cmd  # a taken port fails instead of moving elsewhere
    assert "--no-browser" in cmd and "--no-browser" not in lab.command(8888, browser=True)


def test_the_server_runs_with_the_books_colab_kernel_environment():
    env = lab.environment({"PYTHONPATH": "/elsewhere", "GRADBOOK_BUILD": "1", "HOME": "/home/x"})
    spec = json.loads((ROOT / "gradlib" / "book" / "kernel.json").read_text(encoding="utf-8"))
    assert {k: env[k] for k in spec["quiet"]} == spec["quiet"]
    assert "PYTHONPATH" not in env and "GRADBOOK_BUILD" not in env and env["HOME"] == "/home/x"
    assert env["MPLBACKEND"] == spec["modes"]["colab"]["set"]["MPLBACKEND"]


def test_no_browser_is_opened_without_a_display():
    assert not lab.has_display({}, "linux")
    assert lab.has_display({"DISPLAY": ":0"}, "linux") and lab.has_display({"WAYLAND_DISPLAY": "w"}, "linux")
    assert lab.has_display({}, "darwin")


@pytest.mark.parametrize("port", ["70000", "-1", "eighty"])
def test_a_bad_port_is_refused(port, capsys):
    with pytest.raises(SystemExit) as exit_:
        lab.main(["--port", port, "--print"])
    assert exit_.value.code == 2 and "port" in capsys.readouterr().err
    with pytest.raises(ValueError, match="between 0 and 65535"):
        lab.command(65536)


def test_a_folder_without_notebooks_is_refused(tmp_path):
    assert any("no chapter notebooks" in problem for problem in lab.problems(tmp_path))
    assert lab.problems() == []  # the repository's chapters, with JupyterLab installed


def test_print_shows_the_command(capsys):
    assert lab.main(["--port", "9999", "--no-browser", "--print"]) == 0
    out = capsys.readouterr().out
    assert "-m jupyterlab" in out and "--ServerApp.port=9999" in out and "--no-browser" in out


def test_without_exec_the_server_runs_as_a_child_with_its_arguments_whole(tmp_path):
    """Windows' way (no exec): a path with spaces stays one argument, the
    environment is the one given, and the server's exit code is returned."""
    out = tmp_path / "a folder with spaces" / "argv.txt"
    out.parent.mkdir()
    script = "import os, sys; open(sys.argv[1], 'w').write(os.environ['GB_PROBE']); sys.exit(3)"
    code = lab.run([sys.executable, "-c", script, str(out)], {**os.environ, "GB_PROBE": "seen"}, replace=False)
    assert code == 3 and out.read_text() == "seen"


@pytest.mark.parametrize("system, machine, extra", [("Linux", "x86_64", "cpu"), ("Linux", "aarch64", "tf"),
                                                     ("Darwin", "arm64", "tf")])
def test_make_installs_the_tensorflow_package_published_for_the_platform(tmp_path, system, machine, extra):
    # tensorflow-cpu 2.21 has wheels for Linux x86-64 and Windows only; tensorflow for macOS on arm64 and Linux ARM too.
    fake = tmp_path / "uname"
    fake.write_text(f'#!/bin/sh\ncase "$1" in -s) echo {system};; -m) echo {machine};; esac\n', encoding="utf-8")
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    dry = subprocess.run(["make", "-n", "-B", "venv", "VENV=" + str(tmp_path / "venv")], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True).stdout
    assert f'-e ".[{extra},book,test]"' in dry, dry


def test_make_refuses_a_python_the_pins_do_not_fit(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    old = venv / "bin" / "python"  # a Python 3.10, as far as the check can tell
    old.write_text(f'#!/bin/sh\nexec {sys.executable} -c "import sys; sys.version_info = (3, 10, 12); exec(sys.argv[2])"'
                   ' "$@"\n', encoding="utf-8")
    old.chmod(0o755)
    done = subprocess.run(["make", "-B", "venv", f"VENV={venv}"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode != 0 and "needs Python 3.11.5 to 3.13" in done.stderr, done.stderr[-500:]


def test_make_lab_runs_this_command():
    if shutil.which("make") is None:
        pytest.fail("make is not installed")
    dry = subprocess.run(["make", "-n", "lab", "LAB_PORT=4321", "LAB_ARGS=--no-browser"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    assert re.search(r"^\S*python -m tools\.lab --port 4321 --no-browser$", dry, re.M), dry


# -- the server (slow) ----------------------------------------------------------


@dataclass
class Lab:
    url: str  # ends in "/"
    token: str
    pid: int
    log: Path

    @property
    def headers(self) -> dict:
        return {"Authorization": f"token {self.token}"}

    def api(self, method: str, path: str, **kwargs):
        import requests

        return requests.request(method, self.url + path, headers=self.headers, timeout=30, **kwargs)


def _log_tail(log: Path, lines: int = 30) -> str:
    text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
    return "\n".join(text.splitlines()[-lines:])


def _wait_for_server(process: subprocess.Popen, runtime: Path, log: Path) -> Lab:
    """The running server's address and token, from the runtime file Jupyter
    writes (``jpserver-<pid>.json``: ``tools.lab`` execs the server, so the pid
    is the one started), once ``/api/status`` answers."""
    import requests

    info = runtime / f"jpserver-{process.pid}.json"
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"`python -m tools.lab` exited with status {process.returncode}:\n{_log_tail(log)}")
        if info.is_file():
            try:
                data = json.loads(info.read_text(encoding="utf-8"))
                server = Lab(url=data["url"], token=data["token"], pid=process.pid, log=log)
                if server.api("GET", "api/status").status_code == 200:
                    return server
            except (ValueError, KeyError, requests.ConnectionError):
                pass  # written but not complete yet, or not listening yet
        time.sleep(0.5)
    pytest.fail(f"the JupyterLab server did not answer within {START_TIMEOUT} s:\n{_log_tail(log)}")


def _stop(process: subprocess.Popen, server: "Lab | None") -> None:
    """Shut the server down (its kernels first, through its own API), then
    make sure: terminate, kill, and kill any kernel still alive that it
    started (kernels run in sessions of their own)."""
    import psutil

    try:
        started = psutil.Process(process.pid).children(recursive=True)
    except psutil.Error:
        started = []
    if server is not None and process.poll() is None:
        try:
            server.api("POST", "api/shutdown")
        except Exception:
            pass
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
            try:
                os.killpg(process.pid, sig)
                process.wait(timeout=wait)
                break
            except (ProcessLookupError, subprocess.TimeoutExpired):
                continue
    for child in started:
        try:
            child.kill()
        except psutil.Error:
            pass  # already gone: the shutdown ended it


def _checkpoint_dirs():
    return {path for path in lab.NOTEBOOK_DIR.rglob(".ipynb_checkpoints") if path.is_dir()}


@pytest.fixture(scope="module")
def disk_before():
    """The chapter notebooks' bytes before the server ran."""
    return {lang: on_disk(lang).read_bytes() for lang in LANGS}


@pytest.fixture(scope="module")
def server(tmp_path_factory, disk_before):
    if trouble := lab.problems():
        pytest.fail("; ".join(trouble))
    home = tmp_path_factory.mktemp("jupyter")
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(home / "runtime"), JUPYTER_CONFIG_DIR=str(home / "config"),
               JUPYTER_DATA_DIR=str(home / "data"))
    env.pop("GRADBOOK_INSTALL_SOURCE", None)  # the install cell must find nothing to do
    checkpoints = _checkpoint_dirs()
    log = home / "server.log"
    server = None
    with open(log, "w", encoding="utf-8") as output:
        process = subprocess.Popen([sys.executable, "-m", "tools.lab", "--port", "0", "--no-browser"], cwd=ROOT,
                                   env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            server = _wait_for_server(process, home / "runtime", log)
            yield server
        finally:
            _stop(process, server)
            for made in _checkpoint_dirs() - checkpoints:  # JupyterLab's, not the repository's
                shutil.rmtree(made, ignore_errors=True)


@slow
@pytest.mark.parametrize("lang", LANGS)
def test_the_contents_api_serves_the_chapter_notebook(server, lang):
    reply = server.api("GET", f"api/contents/{lang}/{CHAPTER}", params={"content": 1})
    assert reply.status_code == 200, reply.text[:300]
    model = reply.json()
    assert model["type"] == "notebook" and model["path"] == f"{lang}/{CHAPTER}"
    served = [(cell["cell_type"], cell["source"]) for cell in model["content"]["cells"]]
    disk = nbformat.read(on_disk(lang), as_version=4)
    assert served == [(cell.cell_type, cell.source) for cell in disk.cells]
    code = [source for kind, source in served if kind == "code"]
    assert len(code) > 1 and "GRADBOOK_INSTALL_SOURCE" in code[0]  # the install cell comes first


@slow
def test_a_missing_notebook_is_404_and_no_token_is_403(server):
    assert server.api("GET", "api/contents/en/99_no_such_chapter.ipynb").status_code == 404
    import requests

    anonymous = requests.get(server.url + f"api/contents/en/{CHAPTER}", timeout=30)
    assert anonymous.status_code == 403


def _message(session: str, code: str) -> dict:
    return {"header": {"msg_id": uuid.uuid4().hex, "username": "test", "session": session,
                       "msg_type": "execute_request", "version": "5.3",
                       "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True}}


def execute(socket, session: str, code: str, timeout: float = CELL_TIMEOUT) -> str:
    """Run ``code`` in the kernel behind ``socket`` (the Jupyter Server's
    kernel websocket); returns its stdout, fails on an error or a timeout."""
    request = _message(session, code)
    msg_id = request["header"]["msg_id"]
    socket.send(json.dumps(request))
    out, replied, idle = [], None, False
    deadline = time.monotonic() + timeout
    while not (replied and idle):
        if time.monotonic() > deadline:
            pytest.fail(f"no answer within {timeout} s to: {code}")
        socket.settimeout(max(1.0, deadline - time.monotonic()))
        message = json.loads(socket.recv())
        if message.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind, content = message["msg_type"], message["content"]
        if kind == "stream":
            out.append(content["text"])
        elif kind == "error":
            pytest.fail(f"{code!r} raised {content['ename']}: {content['evalue']}")
        elif kind == "execute_reply":
            replied = content
        elif kind == "status" and content["execution_state"] == "idle":
            idle = True
    assert replied["status"] == "ok", replied
    return "".join(out)


ENV_PROBE = """import json, os, sys
print(json.dumps({"cwd": os.getcwd(), "python": sys.executable,
                  "env": {k: os.environ.get(k) for k in %r}}))"""


@slow
def test_a_kernel_session_runs_the_chapter_with_gradlib(server):
    import websocket

    reply = server.api("POST", "api/sessions", json={"path": f"en/{CHAPTER}", "name": CHAPTER, "type": "notebook",
                                                      "kernel": {"name": "python3"}})
    assert reply.status_code == 201, reply.text[:300]
    session = reply.json()
    try:
        url = server.url.replace("http", "ws", 1) + f"api/kernels/{session['kernel']['id']}/channels"
        socket = websocket.create_connection(url, header=[f"Authorization: token {server.token}"], timeout=60)
        try:
            install = next(c.source for c in nbformat.read(on_disk("en"), 4).cells if c.cell_type == "code")
            assert execute(socket, session["id"], install) == ""  # not Colab, no GRADBOOK_INSTALL_SOURCE
            assert execute(socket, session["id"], "import gradlib\nprint(gradlib.__name__)").strip() == "gradlib"
            expected = lab.environment()
            keys = sorted({*json.loads((ROOT / "gradlib/book/kernel.json").read_text())["quiet"], "MPLBACKEND",
                           "GRADBOOK_BUILD", "PYTHONPATH"})
            seen = json.loads(execute(socket, session["id"], ENV_PROBE % (keys,)))
        finally:
            socket.close()
    finally:
        assert server.api("DELETE", f"api/sessions/{session['id']}").status_code == 204
    assert Path(seen["cwd"]) == on_disk("en").parent  # the chapter's own folder
    assert Path(seen["python"]) == Path(sys.executable)  # the repository's .venv
    assert seen["env"] == {key: expected.get(key) for key in keys}


@slow
def test_jupyterlab_renders_the_notebook_in_chromium(server):
    if reason := bc.browser_missing():
        pytest.fail(reason)
    disk = nbformat.read(on_disk("en"), 4)
    title = next(line[2:] for line in disk.cells[0].source.splitlines() if line.startswith("# "))
    title_words = re.sub(r"[`*]", "", title)
    with bc.launch() as browser, bc.open_page(browser, server.url, f"lab/tree/en/{CHAPTER}?token={server.token}",
                                              settle=False) as visit:
        page = visit.page
        page.set_default_timeout(UI_TIMEOUT_MS)
        assert visit.status == 200
        notebook = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook")
        notebook.locator(".jp-Cell").first.wait_for()
        heading = notebook.locator(".jp-MarkdownCell .jp-RenderedMarkdown h1").first
        heading.wait_for()
        assert title_words in heading.inner_text()
        first_code = notebook.locator(".jp-CodeCell .jp-InputArea-editor").first
        assert "GRADBOOK_INSTALL_SOURCE" in first_code.inner_text()
        assert page.locator(".jp-NotebookPanel .lm-TabBar-tabLabel, .lm-TabBar-tabLabel").filter(
            has_text=CHAPTER).count() >= 1
        assert bc.outside_problems(visit) == []  # JupyterLab needs no other host


@slow
def test_the_chapter_notebooks_on_disk_are_untouched(server, disk_before):
    # Last: after the kernel and the browser have had the notebooks open.
    assert {lang: on_disk(lang).read_bytes() for lang in LANGS} == disk_before
