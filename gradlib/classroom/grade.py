"""Grade students' notebooks: run each one headless, then run the book's checks.

Usage::

    python -m gradlib.grade SUBMISSIONS... --out grades.csv
        [--timeout 600] [--check-timeout 60] [--lang auto|en|zh] [--jobs 1]

``--jobs N`` grades N notebooks at the same time (one kernel each);
``--kernel`` names the Jupyter kernel (default ``python3``).  For every
submitted ``.ipynb`` the grader

1. reads it and finds its chapter and language: from the check cells (the
   cells that call ``gradlib.exercises.check("chNN-exK", answer, lang=...)``,
   tagged ``gradbook-check`` with ``metadata["gradbook"]["exercise"]`` in the
   student edition made by ``tools/student_edition.py``), else from the
   notebook metadata ``metadata["gradbook"]`` that edition writes, else from
   the exercise labels (``en-ch01-ex2``) of its markdown;
2. executes the notebook's code cells in order in a fresh kernel (nbclient,
   errors allowed, a temporary working directory, the kernel's own
   stdout/stderr discarded).  The cells share one budget of ``--timeout``
   seconds (:data:`NOTEBOOK_TIMEOUT`, 600, by default: an untouched chapter 5
   notebook alone takes about two minutes on a 2-core machine): the cell that
   is running when the budget runs out is interrupted and the later cells are
   not run (notes column).  A cell that ignores the interrupt (code that
   catches KeyboardInterrupt and goes on) gets :data:`INTERRUPT_GRACE` (10)
   seconds to stop; then the grader kills the kernel, and every exercise gets
   status ``timeout`` with a message saying that the notebook ignored the
   interrupt in that cell, so its answers could not be checked;
3. in the same kernel, for every exercise of the chapter that has an
   automatic check, looks the answer up by its name
   (:func:`gradlib.exercises.answer_name`, e.g. ``second_derivative``; the
   name used in the notebook's own check cell is tried second), runs
   ``gradlib.exercises.check`` on it (at most ``--check-timeout`` seconds
   each, :data:`CHECK_TIMEOUT` by default; a check whose answer ignores the
   interrupt gets :data:`INTERRUPT_GRACE` seconds too, then the kernel is
   killed and the exercises not checked yet get ``timeout``) and prints the
   :class:`~gradlib.exercises.Feedback` as JSON (base64-encoded, between two
   copies of a random marker; also the cell's value, in case the notebook
   replaced ``print`` or ``sys.stdout``), which the grader parses; when the
   answer is still the student edition's stub, the row says
   ``not-attempted`` instead of the check's message (see below);
4. kills the kernel.  A watchdog kills it as well, as a last resort, when
   the whole notebook takes longer than its budgets (startup,
   :data:`STARTUP_TIMEOUT` = 60 s, + ``--timeout`` + one ``--check-timeout``
   per exercise + :data:`WATCHDOG_GRACE` = 30 s).

A notebook need not contain the whole chapter: the answers are found by
name, so a trimmed notebook with only the setup cell and the exercise cells
is graded the same way (the tests use this to stay fast).

The CSV has one row per (file, exercise), in the order the files were given:

``file``        the path as given on the command line;
``chapter``     ``ch01`` ...;
``exercise``    ``ch01-ex2`` (empty on a row about the whole file);
``answer``      the function that was graded (``second_derivative``);
``lang``        the language of the messages: the notebook's (``en``/``zh``,
                from its check cells) unless ``--lang`` forces one, English
                when it cannot be determined;
``status``      ``graded`` (the check ran), ``not-attempted`` (every
                definition of the answer function in the notebook is the
                student edition's stub, unchanged apart from comments and
                spacing, and the check failed: 0 points),
                ``not-defined``, ``timeout`` (the notebook's or the check's
                time ran out, or the notebook ignored the interrupt and its
                kernel was killed), ``kernel-died``, ``no-result`` (the
                check ran but its result never reached the grader: the
                notebook silenced both ``print`` and IPython's output
                display), ``grader-error`` (the grader or the check itself
                failed, not the student's code: a check that raised, message
                ``common.check_failed``, is one; an answer
                that calls ``sys.exit()`` is ``graded``, with the check's
                message ``common.exit``), ``no-exercises``,
                ``invalid-notebook`` or ``file-not-found``;
``passed``      1 or 0 (0 unless the check ran and passed);
``check_cell``  ``present`` or ``deleted``: whether the notebook still has the
                check cell of that exercise;
``feedback``    the check's message, or what happened instead;
``notes``       what went wrong in the file as a whole (the first cells that
                raised, except those tagged ``raises-exception``, which the
                book expects to raise; the cell that ran out of time; a dead
                kernel), the same on each of its rows.

Every problem becomes rows, never an aborted run: a file that does not exist
or is not a notebook (one row), cells that raise (the other answers are still
graded; an answer that was never defined gets "not defined"), a notebook that
loops forever (interrupted; rows with status ``timeout`` for answers not
defined by then), a kernel that dies.  A deleted check cell is reported on
the exercise's row (``check_cell`` = ``deleted``, and the feedback says so),
but the answer is still graded when the notebook defines it elsewhere: the
function, not the cell, is the student's work; filter on ``check_cell`` to
treat it otherwise.

``not-attempted`` needs the stub's fingerprint, which the student edition
(``tools/student_edition.py``) writes into each check cell's metadata
(``metadata["gradbook"]["stub"]``, :func:`stub_fingerprint`: a hash of the
stub's ``def`` as :func:`ast.unparse` writes it).  The grader compares it with
the ``def`` of the graded function that the notebook's code leaves in place
(:func:`definition_fingerprint`, static, no kernel involved), and only for an
answer that failed its check.  Notebooks without the fingerprint (older
student editions, the book's own chapters) are graded as before.

Exit status: 0 when the run completes (whatever the students' results), 2
for a usage error.  Not a sandbox: the notebooks run with the grader's
permissions, and a student who patches ``gradlib`` from the notebook can fool
the checks.  Grade trusted submissions, or run the grader in a container.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import base64
import concurrent.futures
import csv
import dataclasses
import hashlib
import json
import math
import re
import secrets
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence

from .catalogue import LANGUAGES, Text, message, seconds_text

CHECK_TAG = "gradbook-check"

# The grader's budgets, in seconds (the defaults of the command line's options and of grade_file).
NOTEBOOK_TIMEOUT = 600  # --timeout: all of a notebook's cells together
CHECK_TIMEOUT = 60      # --check-timeout: each exercise's check
STARTUP_TIMEOUT = 60    # a fresh kernel's start
INTERRUPT_GRACE = 10    # an interrupted cell's time to stop before the grader kills its kernel
WATCHDOG_GRACE = 30     # the watchdog's margin over the other budgets
COLUMNS = ["file", "chapter", "exercise", "answer", "lang", "status", "passed",
           "check_cell", "feedback", "notes"]

EXERCISE_ID = re.compile(r"ch\d\d-ex\d+")
EXERCISE_LABEL = re.compile(r"\b(?P<lang>en|zh)-(?P<id>ch\d\d-ex\d+)\b")
CHAPTER_LABEL = re.compile(r"^\((?P<lang>en|zh)-(?P<chapter>ch\d\d)\)=\s*$", re.M)



# -- reading a notebook --------------------------------------------------------


def _msg(key: str, lang: str, **values) -> str:
    """The grader's message ``key`` ("grade.<key>" in the catalogue), in ``lang`` (English if unknown)."""
    return message("grade." + key, lang if lang in LANGUAGES else "en", **values)


def _count(key: str, lang: str, count: int) -> str:
    """The grader's message ``key`` about ``count`` things: ``key + "_one"`` when there is one."""
    return _msg(key + "_one" if count == 1 else key, lang, count=count)


def _parse(source: str) -> Optional[ast.Module]:
    """A code cell's source as an AST (IPython's ``%magic`` and ``!shell`` lines blanked); None if it does not parse."""
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def stub_fingerprint(function: ast.AST) -> str:
    """The fingerprint of a function (or class) definition (its decorators, signature and body, as
    :func:`ast.unparse` writes them): comments and spacing do not change it, any edit of the code does."""
    return "sha256:" + hashlib.sha256(ast.unparse(function).encode("utf-8")).hexdigest()[:32]


def binding_fingerprints(nb, name: str) -> List[Optional[str]]:
    """Every statement of the notebook's code cells that binds ``name``, in order, as the
    :func:`stub_fingerprint` of a top-level ``def`` or ``class`` or None for any other binding (an assignment, an
    import, a nested ``def``, a ``for`` target ...); cells that do not parse bind nothing (they never run).
    """
    found: List[Optional[str]] = []
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        tree = _parse(_text(cell.get("source")))
        if tree is None:
            continue
        top = {id(node) for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        bindings = []
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
                fingerprint = stub_fingerprint(node) if id(node) in top else None
            elif isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
                fingerprint = None
            elif isinstance(node, ast.alias) and (node.asname or node.name.split(".")[0]) == name:
                fingerprint = None
            elif isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
                fingerprint = None
            else:
                continue
            bindings.append(((getattr(node, "lineno", 0), getattr(node, "col_offset", 0)), fingerprint))
        found.extend(fingerprint for _, fingerprint in sorted(bindings, key=lambda b: b[0]))
    return found


def definition_fingerprint(nb, name: str) -> Optional[str]:
    """The :func:`stub_fingerprint` of the function ``name`` the notebook's code cells leave defined,
    read statically: the last statement that binds ``name``, when it is a top-level ``def``.

    None when the last binding is anything else (an assignment, an import, a nested ``def``, a ``for``
    target ...) or there is none; cells that do not parse bind nothing (they never run).
    """
    found = binding_fingerprints(nb, name)
    return found[-1] if found else None


def _untouched(nb, name: str, stub: str) -> bool:
    """The notebook binds ``name`` only to the stub: not an attempt anywhere (an attempt in a cell
    above the stub's, which the stub then replaces, is still an attempt)."""
    found = binding_fingerprints(nb, name)
    return bool(found) and all(fingerprint == stub for fingerprint in found)


def check_calls(source: str) -> List[Dict[str, Optional[str]]]:
    """The ``exercises.check(...)`` calls in a code cell's source, in order:
    ``{"exercise": "ch01-ex2", "answer": "second_derivative", "lang": "en"}``
    (``answer``/``lang`` None when not a plain name / not given).

    The source is parsed with :mod:`ast` (IPython's ``%magic`` and ``!shell``
    lines blanked first).  A cell that still does not parse (the student's
    syntax error) is read line by line: a check call that fits on one line is
    found, one spread over several lines of a broken cell is not (the cell's
    ``gradbook`` metadata still names its exercise, see :func:`inspect_notebook`).
    """
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]
    try:
        trees = [ast.parse("\n".join(lines))]
    except SyntaxError:
        trees = []
        for line in lines:
            if "check(" in line:
                try:
                    trees.append(ast.parse(line.strip()))
                except SyntaxError:
                    continue
    calls = []
    for tree in trees:
        found = [node for node in ast.walk(tree) if _is_check_call(node)]
        for node in sorted(found, key=lambda n: (n.lineno, n.col_offset)):
            answer = node.args[1].id if len(node.args) > 1 and isinstance(node.args[1], ast.Name) else None
            lang = next((k.value.value for k in node.keywords if k.arg == "lang" and isinstance(k.value, ast.Constant)
                         and k.value.value in LANGUAGES), None)
            calls.append({"exercise": node.args[0].value, "answer": answer, "lang": lang})
    return calls


def _is_check_call(node: ast.AST) -> bool:
    """``<...>exercises.check("chNN-exK", ...)``."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "check"):
        return False
    owner = node.func.value
    name = owner.attr if isinstance(owner, ast.Attribute) else owner.id if isinstance(owner, ast.Name) else None
    first = node.args[0] if node.args else None
    return (name == "exercises" and isinstance(first, ast.Constant) and isinstance(first.value, str)
            and EXERCISE_ID.fullmatch(first.value) is not None)


def _text(source: Any) -> str:
    return "".join(source) if isinstance(source, list) else str(source or "")


@dataclasses.dataclass
class NotebookInfo:
    """What the grader learns from a notebook without running it."""

    chapters: List[str]
    lang: Optional[str]
    checks: Dict[str, Dict[str, Any]]  # exercise id -> {"cell": index, "answer": name, "lang": ...}
    # exercise id -> the stub_fingerprint of its answer's stub, from the check cell's metadata (student edition)
    stubs: Dict[str, str] = dataclasses.field(default_factory=dict)


def inspect_notebook(nb) -> NotebookInfo:
    """Chapters, language and check cells of a notebook (an nbformat node or dict)."""
    checks: Dict[str, Dict[str, Any]] = {}
    tagged: List[str] = []  # exercises of the check cells the student edition marked
    langs: List[str] = []
    stubs: Dict[str, str] = {}
    for index, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        meta = (cell.get("metadata") or {}).get("gradbook") or {}
        if isinstance(meta, dict) and isinstance(meta.get("exercise"), str):
            tagged.append(meta["exercise"])
            if isinstance(meta.get("stub"), str):
                stubs.setdefault(meta["exercise"], meta["stub"])
        calls = check_calls(_text(cell.get("source")))
        for call in calls:
            checks.setdefault(call["exercise"], {"cell": index, "answer": call["answer"], "lang": call["lang"]})
            if call["lang"]:
                langs.append(call["lang"])
        # a check cell whose call was edited beyond recognition still counts by its metadata
        if isinstance(meta, dict) and isinstance(meta.get("exercise"), str) and not calls \
                and re.fullmatch(r"ch\d\d-ex\d+", meta["exercise"]) and "check(" in _text(cell.get("source")):
            checks.setdefault(meta["exercise"], {"cell": index, "answer": meta.get("answer"),
                                                 "lang": meta.get("lang")})
    # the marked check cells decide the chapter, so a student's extra check of
    # another chapter's exercise does not add that chapter
    chapters = sorted({e.split("-")[0] for e in tagged if e in checks} or {e.split("-")[0] for e in checks})
    nb_meta = (nb.get("metadata") or {}).get("gradbook") or {}
    if not isinstance(nb_meta, dict):
        nb_meta = {}
    markdown = "\n".join(_text(c.get("source")) for c in nb.get("cells", []) if c.get("cell_type") == "markdown")
    if not chapters and isinstance(nb_meta.get("chapter"), str) and re.fullmatch(r"ch\d\d", nb_meta["chapter"]):
        chapters = [nb_meta["chapter"]]
    if not chapters:
        chapters = sorted({m.group("id").split("-")[0] for m in EXERCISE_LABEL.finditer(markdown)}
                          | {m.group("chapter") for m in CHAPTER_LABEL.finditer(markdown)})
    lang = None
    if langs:
        lang = max(LANGUAGES, key=langs.count)
    elif nb_meta.get("lang") in LANGUAGES:
        lang = nb_meta["lang"]
    else:
        labels = [m.group("lang") for m in EXERCISE_LABEL.finditer(markdown)]
        labels += [m.group("lang") for m in CHAPTER_LABEL.finditer(markdown)]
        if labels:
            lang = max(LANGUAGES, key=labels.count)
    return NotebookInfo(chapters, lang, checks, stubs)


def _read(path: Path, lang: str = "en"):
    """The notebook at ``path``, or a string saying (in ``lang``) why it is not one."""
    import nbformat

    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return _msg("not_utf8", lang)
    except OSError as err:
        return _msg("unreadable", lang, error=err.strerror or err)
    try:
        raw = json.loads(text)
    except ValueError as err:
        return _msg("not_json", lang, error=err)
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        return _msg("no_cells", lang)
    try:
        with warnings.catch_warnings():  # e.g. cells without ids: nbformat adds them
            warnings.simplefilter("ignore")
            nb = nbformat.reads(text, as_version=4)
    except Exception as err:  # nbformat raises several kinds
        return f"{type(err).__name__}: {str(err).splitlines()[0][:150] if str(err) else ''}"
    for cell in nb.cells:
        if cell.get("cell_type") not in ("code", "markdown", "raw") or not isinstance(cell.get("source"), str):
            return _msg("bad_cell", lang)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nb


def chapter_exercises(chapters: Iterable[str]) -> List[str]:
    """The registered (auto-checked) exercise ids of these chapters, sorted."""
    from gradlib import exercises

    wanted = set(chapters)
    return [i for i in exercises.exercise_ids() if i.split("-")[0] in wanted]


# -- running a notebook -------------------------------------------------------

GRADE_CELL = '''\
def _gradbook_grade(exercise, names, lang, token):
    import base64, json
    namespace = globals()
    result = {"exercise": exercise, "status": "not-defined"}
    try:
        name = next((n for n in names if n in namespace), None)
        if name is not None:
            import gradlib.exercises
            # --check-timeout bounds the check (the grader interrupts the kernel), not check()'s own limit
            feedback = gradlib.exercises.check(exercise, namespace[name], lang=lang, timeout=None)
            result.update(status="graded", answer=name, passed=feedback.passed is True,
                          message=str(feedback.message), key=getattr(feedback, "key", None))
    except (Exception, SystemExit) as err:
        result.update(status="grader-error", message=f"{type(err).__name__}: {err}"[:500])
    payload = token + base64.b64encode(json.dumps(result).encode()).decode() + token
    try:
        print(payload, flush=True)
    except Exception:
        pass
    return payload
_gradbook_grade(%r, %r, %r, %r)
'''

@dataclasses.dataclass
class _Run:
    """What happened while running one notebook (filled in as it goes, so a
    watchdog that stops the run still has the partial results)."""

    results: Dict[str, Dict[str, Any]] = dataclasses.field(default_factory=dict)
    errors: List[str] = dataclasses.field(default_factory=list)
    timeout_cell: Optional[int] = None
    timeout_line: str = ""
    skipped: int = 0
    killed_cell: Optional[int] = None   # the cell that ignored the interrupt (its kernel was killed)
    killed_check: Optional[str] = None  # the answer whose check ignored the interrupt (its kernel was killed)
    died: Optional[str] = None
    watchdog: Optional[float] = None
    failure: Optional[str] = None


def _error_of(cell) -> Optional[str]:
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            value = str(output.get("evalue", "")).strip().splitlines()
            return f"{output.get('ename', 'Error')}: {value[0][:150] if value else ''}".rstrip(": ")
    return None


def _first_line(cell) -> str:
    """The cell's first line of code, quoted, to say which cell "cell 7" is."""
    line = next((l.strip() for l in _text(cell.get("source")).splitlines() if l.strip()), "")
    line = line.replace("`", "'")
    return f"`{line[:60]}{'…' if len(line) > 60 else ''}`"


def _payloads(cell, token: str) -> List[dict]:
    pattern = re.compile(re.escape(token) + r"([A-Za-z0-9+/=]+)" + re.escape(token))
    texts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            texts.append(_text(output.get("text")))
        elif output.get("output_type") in ("execute_result", "display_data"):
            texts.append(_text((output.get("data") or {}).get("text/plain")))
    found = []
    for match in pattern.finditer("\n".join(texts)):
        try:
            found.append(json.loads(base64.b64decode(match.group(1)).decode()))
        except (ValueError, UnicodeDecodeError):
            continue
    return found


async def _run_notebook(nb, exercises_to_check: Sequence[str], names: Dict[str, List[str]], lang: str,
                        run: _Run, *, timeout: float, check_timeout: float, kernel_name: str,
                        startup_timeout: float) -> None:
    """Run the notebook's cells in one fresh kernel (the book's runner, environment "grade"), then the checks."""
    import nbformat
    from nbclient.exceptions import DeadKernelError

    from ..book.kernel import Kernel, kernel_env

    token = f"@@gradbook-{secrets.token_hex(8)}@@"
    with tempfile.TemporaryDirectory(prefix="gradbook-grade-") as workdir:
        async with Kernel(nb, cwd=workdir, env=kernel_env("grade"), kernel_name=kernel_name,
                          startup_timeout=startup_timeout, allow_errors=True, interrupt_on_timeout=True,
                          error_on_timeout={"ename": "Timeout", "evalue": "stopped by the grader",
                                            "traceback": []}) as kernel:
            deadline = time.monotonic() + timeout
            code_cells = kernel.code_cells()
            for position, index in enumerate(code_cells):
                remaining = deadline - time.monotonic()
                cell = nb.cells[index]
                if remaining <= 0:
                    run.timeout_cell, run.timeout_line = index + 1, _first_line(cell)
                    run.skipped = len(code_cells) - position - 1
                    break
                try:
                    await kernel.run_cell(index, timeout=remaining, execution_count=position + 1)
                except DeadKernelError:
                    run.died = _msg("in_cell", lang, cell=index + 1)
                    return
                if time.monotonic() >= deadline:
                    run.timeout_cell, run.timeout_line = index + 1, _first_line(cell)
                    run.skipped = len(code_cells) - position - 1
                    if not await kernel.idle(INTERRUPT_GRACE):  # the cell ignored the interrupt
                        run.killed_cell = index + 1
                        await kernel.kill()
                        return
                    break
                error = _error_of(cell)
                if error and "raises-exception" not in cell.metadata.get("tags", []):
                    run.errors.append(_msg("cell_raised", lang, cell=index + 1, line=_first_line(cell),
                                           error=error))

            for exercise in exercises_to_check:
                nb.cells.append(nbformat.v4.new_code_cell(GRADE_CELL % (exercise, names[exercise], lang, token)))
                started = time.monotonic()
                try:
                    cell = await kernel.run_cell(len(nb.cells) - 1, timeout=check_timeout)
                except DeadKernelError:
                    run.died = _msg("in_check", lang)
                    return
                found = [p for p in _payloads(cell, token) if p.get("exercise") == exercise]
                if found:
                    run.results[exercise] = found[-1]
                elif time.monotonic() - started >= check_timeout:
                    run.results[exercise] = {"exercise": exercise, "status": "timeout"}
                    if not await kernel.idle(INTERRUPT_GRACE):  # the answer ignored the interrupt
                        run.killed_check = names[exercise][0] if names[exercise] else exercise
                        await kernel.kill()
                        return
                else:
                    run.results[exercise] = {"exercise": exercise, "status": "no-result"}


# -- grading one file ---------------------------------------------------------------

async def grade_file(path: Path, *, display: Optional[str] = None, timeout: float = NOTEBOOK_TIMEOUT,
                     check_timeout: float = CHECK_TIMEOUT, lang: str = "auto", kernel_name: str = "python3",
                     startup_timeout: float = STARTUP_TIMEOUT) -> List[Dict[str, Any]]:
    """Grade one submission; return its CSV rows (dicts keyed by :data:`COLUMNS`, plus ``key``: see :func:`_row`)."""
    from gradlib import exercises

    file = display if display is not None else str(path)
    path = Path(path)
    fallback = lang if lang in LANGUAGES else "en"
    if not path.is_file():
        return [_row(file, fallback, status="file-not-found", feedback=_msg("file_not_found", fallback))]
    nb = _read(path, fallback)
    if isinstance(nb, str):
        return [_row(file, fallback, status="invalid-notebook", feedback=_msg("invalid", fallback, error=nb))]

    info = inspect_notebook(nb)
    lang = lang if lang in LANGUAGES else (info.lang or "en")
    expected = chapter_exercises(info.chapters)
    if not expected:
        return [_row(file, lang, chapter=" ".join(info.chapters), status="no-exercises",
                     feedback=_msg("no_exercises", lang))]

    names = {}
    for exercise in expected:
        candidates = [exercises.answer_name(exercise), (info.checks.get(exercise) or {}).get("answer")]
        names[exercise] = [n for i, n in enumerate(candidates) if n and n not in candidates[:i]]

    run = _Run()
    limit = startup_timeout + timeout + check_timeout * len(expected) + WATCHDOG_GRACE
    try:
        await asyncio.wait_for(
            _run_notebook(nb, expected, names, lang, run, timeout=timeout, check_timeout=check_timeout,
                          kernel_name=kernel_name, startup_timeout=startup_timeout), limit)
    except asyncio.TimeoutError:
        run.watchdog = limit
    except Exception as err:  # a kernel that cannot start, a broken channel ...
        run.failure = f"{type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}"

    notes = _notes(run, lang, timeout, check_timeout)
    rows = []
    for exercise in expected:
        name = names[exercise][0] if names[exercise] else ""
        values = dict(chapter=exercise.split("-")[0], exercise=exercise, answer=name, notes=notes,
                      check_cell="present" if exercise in info.checks else "deleted")
        result = run.results.get(exercise)
        if result and result.get("status") == "graded" and result.get("passed") is not True \
                and exercise in info.stubs \
                and _untouched(nb, result.get("answer", name), info.stubs[exercise]):
            result = dict(result, status="not-attempted")
        values.update(_outcome(result, run, name, lang, timeout, check_timeout))
        row = _row(file, lang, **values)
        if exercise not in info.checks:
            _mark_deleted(row, exercise, lang)
        rows.append(row)
    return rows


# -- the report: rows from what happened -------------------------------------------


def _row(file: str, lang: str, **values) -> Dict[str, Any]:
    """A row: the :data:`COLUMNS`, plus ``key``, the catalogue key of its feedback (not written to the CSV)."""
    row = {column: "" for column in COLUMNS}
    row.update(file=file, lang=lang, passed=0)
    row.update(values)
    row["key"] = getattr(row["feedback"], "key", None)
    row["feedback"] = str(row["feedback"])
    return row


def _notes(run: _Run, lang: str, timeout: float, check_timeout: float) -> str:
    """The notes column: what went wrong in the file as a whole."""
    notes = list(run.errors[:3])
    if len(run.errors) > 3:
        notes.append(_count("more_errors", lang, len(run.errors) - 3))
    if run.timeout_cell:
        notes.append(_msg("cell_killed" if run.killed_cell else "cell_timeout", lang, cell=run.timeout_cell,
                          line=run.timeout_line, seconds=seconds_text(timeout),
                          skipped=_count("skipped", lang, run.skipped)))
    if run.killed_check:
        notes.append(_msg("check_killed", lang, name=run.killed_check, seconds=seconds_text(check_timeout)))
    if run.died:
        notes.append(_msg("kernel_died", lang, where=run.died))
    return "; ".join(notes)


def _outcome(result: Optional[Dict[str, Any]], run: _Run, name: str, lang: str, timeout: float,
             check_timeout: float) -> Dict[str, Any]:
    """Status, passed, answer and feedback of one exercise's row."""
    if result is None:
        if run.watchdog is not None:
            return dict(status="timeout", feedback=_msg("watchdog", lang, seconds=seconds_text(run.watchdog)))
        if run.killed_cell:
            return dict(status="timeout", feedback=_msg("interrupt_ignored", lang, name=name, cell=run.killed_cell,
                                                        seconds=seconds_text(timeout)))
        if run.killed_check:
            return dict(status="timeout", feedback=_msg("check_interrupt_ignored", lang, name=name,
                                                        other=run.killed_check,
                                                        seconds=seconds_text(check_timeout)))
        if run.died:
            return dict(status="kernel-died", feedback=_msg("kernel_died", lang, where=run.died))
        return dict(status="grader-error", feedback=_msg("grader_error", lang, error=run.failure or "?"))
    status = result["status"]
    if status == "graded" and result.get("key") == "common.check_failed":  # a bug of the check, not the answer's
        return dict(status="grader-error", answer=result.get("answer", name),
                    feedback=Text(result.get("message", ""), result.get("key")))
    if status == "graded":
        return dict(status="graded", answer=result.get("answer", name), passed=int(result.get("passed") is True),
                    feedback=Text(result.get("message", ""), result.get("key")))
    if status == "not-attempted":
        return dict(status="not-attempted", answer=result.get("answer", name),
                    feedback=_msg("not_attempted", lang, name=result.get("answer", name)))
    if status == "not-defined" and run.timeout_cell:
        return dict(status="timeout", feedback=_msg("not_defined_timeout", lang, name=name,
                                                    seconds=seconds_text(timeout), cell=run.timeout_cell))
    if status == "not-defined":
        return dict(status="not-defined", feedback=_msg("not_defined", lang, name=name))
    if status == "timeout":
        return dict(status="timeout", feedback=_msg("check_timeout", lang, name=name,
                                                    seconds=seconds_text(check_timeout)))
    if status == "no-result":
        return dict(status="no-result", feedback=_msg("no_result", lang))
    return dict(status="grader-error", feedback=_msg("grader_error", lang, error=result.get("message", "?")))


def _mark_deleted(row: Dict[str, Any], exercise: str, lang: str) -> None:
    """Say in the feedback that the exercise's check cell was deleted (the row's key stays the outcome's)."""
    deleted = _msg("deleted", lang, exercise=exercise) + _msg("separator", lang)
    if row["status"] == "graded":
        row["feedback"] = deleted + _msg("deleted_graded", lang, name=row["answer"], message=row["feedback"])
    else:
        row["feedback"] = deleted + row["feedback"]


# -- grading many files --------------------------------------------------------------


async def grade_files(paths: Sequence, *, jobs: int = 1, progress=None, **options) -> List[Dict[str, Any]]:
    """Grade several submissions, ``jobs`` at a time; rows in the order of ``paths``."""
    semaphore = asyncio.Semaphore(max(1, jobs))

    async def one(path):
        async with semaphore:
            try:
                rows = await grade_file(Path(path), display=str(path), **options)
            except Exception as err:  # never stop the run for one file
                rows = [_row(str(path), "en", status="grader-error",
                             feedback=_msg("grader_error", "en", error=f"{type(err).__name__}: {err}"))]
            if progress is not None:
                progress(str(path), rows)
            return rows

    results = await asyncio.gather(*(one(p) for p in paths))
    return [row for rows in results for row in rows]


def grade(paths: Sequence, **options) -> List[Dict[str, Any]]:
    """Synchronous :func:`grade_files`: grade the notebooks at ``paths``, return the rows.

    Works in a script and in a Jupyter cell alike: where an event loop is
    already running (as in a notebook), the grading runs on its own loop in
    a worker thread.  In a notebook, ``await grade_files(...)`` does the same.
    """
    paths = list(paths)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(grade_files(paths, **options))
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(grade_files(paths, **options))).result()


def write_csv(rows: Sequence[Dict[str, Any]], out: Path) -> None:
    """Write the rows as UTF-8 CSV with the header :data:`COLUMNS`."""
    out = Path(out)
    with out.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


# -- command line --------------------------------------------------------------

def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds; got {text!r}")
    return value


def _report(file: str, rows: List[Dict[str, Any]]) -> None:
    graded = [r for r in rows if r["exercise"]]
    if graded:
        passed = sum(int(r["passed"]) for r in graded)
        print(f"{file}: {passed}/{len(graded)} passed", file=sys.stderr, flush=True)
    else:
        print(f"{file}: {rows[0]['status']}", file=sys.stderr, flush=True)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gradlib.grade",
        description="Run students' notebooks headless and grade their exercises into a CSV.")
    parser.add_argument("submissions", nargs="+", metavar="SUBMISSION", help="the students' .ipynb files")
    parser.add_argument("--out", required=True, type=Path, help="the CSV to write (one row per file and exercise)")
    parser.add_argument("--timeout", type=_positive, default=NOTEBOOK_TIMEOUT,
                        help=f"seconds for running a notebook's cells (default {NOTEBOOK_TIMEOUT})")
    parser.add_argument("--check-timeout", type=_positive, default=CHECK_TIMEOUT,
                        help=f"seconds for each exercise check (default {CHECK_TIMEOUT})")
    parser.add_argument("--lang", choices=("auto",) + LANGUAGES, default="auto",
                        help="language of the messages: the notebook's (auto, English if unknown) or forced")
    parser.add_argument("--jobs", type=int, default=1, help="notebooks graded at the same time (default 1)")
    parser.add_argument("--kernel", default="python3", help="the Jupyter kernel to run them in (default python3)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    try:
        import nbclient  # noqa: F401
        import nbformat  # noqa: F401
        from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
    except ImportError as err:
        parser.error(f"the grader needs nbclient, nbformat, jupyter_client and ipykernel ({err}): "
                     "pip install \"gradlib[classroom]\"")
    try:
        KernelSpecManager().get_kernel_spec(args.kernel)
    except NoSuchKernel:
        parser.error(f"no Jupyter kernel named {args.kernel!r} (see `jupyter kernelspec list`)")
    out = args.out
    if out.exists() and out.is_dir():
        parser.error(f"--out {out} is a directory")
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = grade(args.submissions, timeout=args.timeout, check_timeout=args.check_timeout, lang=args.lang,
                 jobs=args.jobs, kernel_name=args.kernel, progress=_report)
    try:
        write_csv(rows, out)
    except OSError as err:
        parser.error(f"cannot write {out}: {err}")
    print(f"wrote {len(rows)} rows to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
