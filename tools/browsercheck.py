"""Check the built book (_build/html) in a real headless Chromium.

The site is served from a local HTTP server on 127.0.0.1 and driven with
Playwright's Python API against Debian's ``/usr/bin/chromium`` (Playwright's
own browser downloads are never used).  Every request to any other host is
aborted before it leaves the browser, and recorded: such a request is a fault.

Each check returns a list of human-readable problems (empty when the page is
fine), so the tests can also prove that a check detects what it should:

* :func:`console_problems`: console errors and uncaught exceptions;
* :func:`outside_problems`: requests to hosts other than the local server;
* :func:`explorer_problems`: each explorer first shows the curves the
  server rendered; moving each control redraws them, moving it back restores
  exactly the server-rendered ``points``;
* :func:`math_problems`: every math element was typeset (by KaTeX, at build
  time), and KaTeX's stylesheet and font loaded;
* :func:`language_switch_problems`: the language switch leads to the twin;
* :func:`weight_problems`: bytes a chapter page transfers, outside the
  shared ``_static/`` assets, stay within :data:`WEIGHT_BUDGET`;
* :func:`search_problems`: the site's search finds chapter pages of a language.

Console errors listed in :data:`KNOWN_CONSOLE_ERRORS` (not the book's fault,
each with its cause) are reported as notes instead of problems.

:func:`check_page` runs the page checks on one chapter page.

Usage: ``python -m tools.browsercheck [_build/html]``; exit 1 on any problem.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import os
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple
from urllib.parse import unquote, urljoin, urlsplit

from tools import book
from tools.book import ROOT

HTML = Path(os.environ.get("GRADBOOK_HTML", ROOT / "_build" / "html"))
CHROMIUM = Path(os.environ.get("GRADBOOK_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # Defence in depth behind the request guard: no host name resolves.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]
SEARCHES = {"zh": "梯度", "en": "gradient"}  # a word the site search must find in each language's chapters
SHARED = "_static/"  # assets every page loads; not counted in a page's weight
WEIGHT_BUDGET = 1_500_000  # bytes per chapter page, outside _static/
TIMEOUT_MS = 20_000
# Console errors that are not the book's fault, by message, with their cause.
# Each one is still printed by the tests; delete an entry as soon as it is fixed.
KNOWN_CONSOLE_ERRORS: Dict[str, str] = {}  # message fragment -> why it is tolerated (none today)
BLOCKED = "net::ERR_BLOCKED_BY_CLIENT"  # how a request the guard aborted fails (Chromium adds ".Inspector")


# -- the book's pages ---------------------------------------------------------


def twin(path: str) -> str:
    """The other language's page of a chapter page."""
    return book.twin_page(path)


# -- the local server ---------------------------------------------------------


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a page loads ~80 files
    disable_nagle_algorithm = True

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


class _QuietServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], ConnectionError):
            return  # the browser dropped a connection it no longer needed
        super().handle_error(request, client_address)


@contextlib.contextmanager
def serve(directory: Path) -> Iterator[str]:
    """Serve ``directory`` on a free port of 127.0.0.1; yields the base URL (ends in ``/``)."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = _QuietServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="gradbook-site", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


# -- the browser --------------------------------------------------------------


def browser_missing(executable: Path = CHROMIUM) -> Optional[str]:
    """Why no browser can be started, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed: `make venv` (the `test` extra) installs it"
    if not (executable.is_file() and os.access(executable, os.X_OK)):
        return (
            f"{executable} is missing: install Debian's Chromium "
            "(`make browser`, i.e. apt-get install chromium); never `playwright install`"
        )
    return None


@contextlib.contextmanager
def launch(executable: Path = CHROMIUM):
    """A headless Chromium (Playwright ``Browser``) for the duration of the block."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(executable), args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Visit:
    """One page opened in a fresh browser context, with what it did."""

    page: "object"  # playwright.sync_api.Page
    base: str
    path: str
    status: Optional[int] = None
    console_errors: List[str] = field(default_factory=list)
    outside: List[str] = field(default_factory=list)  # requests the guard aborted
    failed: Dict[str, str] = field(default_factory=dict)  # url -> failure text
    responses: List["object"] = field(default_factory=list)  # playwright Responses

    @property
    def url(self) -> str:
        return urljoin(self.base, self.path)


def _is_local(url: str, base: str) -> bool:
    parts, home = urlsplit(url), urlsplit(base)
    if parts.scheme not in ("http", "https", "ws", "wss"):
        return True  # data:, blob:, about: never reach a network
    return (parts.scheme, parts.netloc) == (home.scheme, home.netloc)


_LAZY_JS = "() => document.querySelectorAll('[loading=lazy]').length"


@contextlib.contextmanager
def open_page(browser, base: str, path: str, *, settle: bool = True) -> Iterator[Visit]:
    """Open ``base + path`` in a new browser context (empty cache) and yield its :class:`Visit`.

    Requests (and WebSockets) to any other origin are aborted in the browser
    and recorded in ``visit.outside``; console errors, uncaught exceptions,
    responses and failed requests are recorded too.  With ``settle``, content
    loaded lazily is scrolled into view and waited for (for the page weight).
    """
    context = browser.new_context(service_workers="block", viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    visit = Visit(page=page, base=base, path=path)

    def guard(route):
        url = route.request.url
        if _is_local(url, base):
            route.continue_()
        else:
            visit.outside.append(url)
            route.abort("blockedbyclient")

    elsewhere = re.compile("^(?!" + re.escape(base) + ")")
    context.route(elsewhere, guard)
    if hasattr(context, "route_web_socket"):  # Playwright >= 1.48: WebSockets bypass route()

        def guard_socket(socket):
            visit.outside.append(socket.url)
            socket.close()  # never connected to the server

        context.route_web_socket(re.compile("^(?!" + re.escape(base.replace("http", "ws", 1)) + ")"), guard_socket)
    page.on("console", lambda m: m.type == "error" and visit.console_errors.append(_console_text(m)))
    page.on("pageerror", lambda e: visit.console_errors.append(f"uncaught {e}"))
    page.on("response", lambda r: visit.responses.append(r))
    page.on("requestfailed", lambda r: visit.failed.__setitem__(r.url, r.failure or "failed"))
    try:
        response = page.goto(visit.url, wait_until="load")
        visit.status = response.status if response else None
        if settle and page.evaluate(_LAZY_JS):
            # What loads only when scrolled into view counts too.
            page.evaluate("() => window.scrollTo(0, document.documentElement.scrollHeight)")
            page.wait_for_load_state("networkidle")
            page.evaluate("() => window.scrollTo(0, 0)")
        yield visit
    finally:
        context.close()


def _console_text(message) -> str:
    where = message.location or {}
    url = where.get("url") or ""
    return f"{message.text}" + (f" ({url}:{where.get('lineNumber', 0) + 1})" if url else "")


# -- checks -------------------------------------------------------------------


def load_problems(visit: Visit) -> List[str]:
    if visit.status != 200:
        return [f"{visit.path}: HTTP status {visit.status}"]
    return []


def _known(text: str, known: Dict[str, str]) -> bool:
    return any(message in text for message in known)


def console_problems(visit: Visit, known: Dict[str, str] = KNOWN_CONSOLE_ERRORS) -> List[str]:
    """Console errors and uncaught exceptions, except the ``known`` ones."""
    return [f"console error: {text}" for text in visit.console_errors if not _known(text, known)]


def known_console_errors(visit: Visit, known: Dict[str, str] = KNOWN_CONSOLE_ERRORS) -> List[str]:
    """The console errors :func:`console_problems` lets pass, each with its explanation."""
    return [
        f"known console error, not counted (see KNOWN_CONSOLE_ERRORS in tools/browsercheck.py): {text}"
        for text in visit.console_errors
        if _known(text, known)
    ]


def outside_problems(visit: Visit) -> List[str]:
    """Requests to any host other than the local server (each was aborted, never sent)."""
    return [f"request to another host (blocked): {url}" for url in visit.outside]


_OPTIONS_JS = """el => el.tagName === 'SELECT'
  ? Array.from(el.options, o => o.value)
  : (() => { const lo = +el.min, hi = +el.max, step = +el.step || 1, out = [];
             for (let v = lo; v <= hi + 1e-9 && out.length < 1000; v += step) out.push(String(+v.toFixed(10)));
             return out; })()"""
_SET_RANGE_JS = "(el, v) => { el.value = v; el.dispatchEvent(new Event('input', {bubbles: true})); }"
_POINTS_JS = """root => Array.from(root.querySelectorAll('polyline.gbx-curve-0, polyline.gbx-curve-1'),
                        p => p.getAttribute('points'))"""


def _set_control(control, tag: str, value: str) -> None:
    if tag == "select":
        control.select_option(value=value)
    else:
        control.evaluate(_SET_RANGE_JS, value)


def rendered_points(html: str) -> Dict[str, List[str]]:
    """``{explorer id: [points of polyline.gbx-curve-0, of .gbx-curve-1]}`` as
    the server rendered them (the page's HTML, before any script ran)."""
    from bs4 import BeautifulSoup

    found = {}
    for i, explorer in enumerate(BeautifulSoup(html, "html.parser").select("div.gradbook-explorer")):
        key = explorer.get("id") or f"#{i + 1}"
        found[key] = [p.get("points") for cls in ("gbx-curve-0", "gbx-curve-1")
                      for p in explorer.select(f"polyline.{cls}")]
    return found


def points_problems(what: str, expected: List[str], shown: List[str]) -> List[str]:
    """``what`` went wrong when the curves ``shown`` are not the server-rendered ``expected``."""
    if shown == expected:
        return []
    for k, (want, got) in enumerate(zip(expected, shown)):
        if want != got:
            return [f"{what}: curve {k} points differ from the server-rendered ones "
                    f"({(got or '')[:60]!r}... vs {(want or '')[:60]!r}...)"]
    return [f"{what}: {len(shown)} curves, the server rendered {len(expected)}"]


def explorer_problems(page, rendered: Optional[Dict[str, List[str]]] = None) -> List[str]:
    """Each ``div.gradbook-explorer`` first shows the server-rendered curves;
    moving each control to another option redraws them, and moving it back
    restores exactly the server-rendered ``points`` (a projection bug, a
    flipped axis or a wrong frame in the script fails this).  ``rendered``:
    :func:`rendered_points` of the page (default: the page's HTML fetched
    again from the server)."""
    if rendered is None:
        rendered = rendered_points(page.request.get(page.url).text())
    problems = []
    explorers = page.locator("div.gradbook-explorer")
    for i in range(explorers.count()):
        explorer = explorers.nth(i)
        key = explorer.get_attribute("id") or f"#{i + 1}"
        name = f"explorer {explorer.get_attribute('id') or '#' + str(i + 1)}"
        if explorer.locator("polyline.gbx-curve-0").count() != 1 or explorer.locator("polyline.gbx-curve-1").count() != 1:
            problems.append(f"{name}: expected one polyline.gbx-curve-0 and one polyline.gbx-curve-1")
            continue
        initial = rendered.get(key)
        if initial is None:
            problems.append(f"{name}: not in the server-rendered page")
            continue
        problems += points_problems(f"{name} on load", initial, explorer.evaluate(_POINTS_JS))
        controls = explorer.locator("[data-index]")
        if controls.count() == 0:
            problems.append(f"{name}: no controls ([data-index])")
            continue
        for j in range(controls.count()):
            control = controls.nth(j)
            tag = control.evaluate("el => el.tagName.toLowerCase()")
            label = f"control {control.get_attribute('aria-label') or j!r} (<{tag}> data-index={control.get_attribute('data-index')})"
            original = control.input_value()
            before = explorer.evaluate(_POINTS_JS)
            tried, changed = [], False
            for value in control.evaluate(_OPTIONS_JS):
                if value == original:
                    continue
                _set_control(control, tag, value)
                tried.append(value)
                if explorer.evaluate(_POINTS_JS) != before:
                    changed = True
                    break
            if tried:
                _set_control(control, tag, original)
                problems += points_problems(f"{name}: after moving {label} back to {original}",
                                            initial, explorer.evaluate(_POINTS_JS))
            if not tried:
                problems.append(f"{name}: {label} has no other option to move to")
            elif not changed:
                problems.append(
                    f"{name}: moving {label} from {original} to {', '.join(tried)} did not change the curves"
                )
    return problems


_MATH_JS = """async () => {
  const math = Array.from(document.querySelectorAll('span.math, div.math'));
  if (!math.length) return {math: 0};
  await document.fonts.ready;
  const first = document.querySelector('.katex');
  return {
    math: math.length,
    typeset: math.filter(el => el.querySelector('.katex')).length,
    raw: math.filter(el => !el.querySelector('.katex')).map(el => el.textContent.trim().slice(0, 60)),
    styled: !!first && getComputedStyle(first).fontFamily.includes('KaTeX_Main'),
    font: document.fonts.check('1em KaTeX_Main'),
    errors: Array.from(document.querySelectorAll('.katex-error'), el => el.textContent.slice(0, 80)),
  };
}"""


def math_problems(page) -> List[str]:
    """On a page with math (Sphinx's ``span.math``/``div.math``), every element
    was typeset at build time by KaTeX, and KaTeX's stylesheet and font loaded."""
    info = page.evaluate(_MATH_JS)
    if not info["math"]:
        return []
    problems = []
    if info["raw"]:
        shown = "; ".join(info["raw"][:5])
        problems.append(f"{len(info['raw'])} of {info['math']} math elements not typeset by KaTeX: {shown}")
    if info["typeset"] and not info["styled"]:
        problems.append("KaTeX's stylesheet did not load: the math is unstyled")
    elif info["typeset"] and not info["font"]:
        problems.append("KaTeX's font KaTeX_Main did not load")
    problems += [f"KaTeX error: {text}" for text in info["errors"]]
    return problems


def language_switch_problems(visit: Visit) -> List[str]:
    """Clicking ``p.gradbook-lang-switch a`` leads to the twin page (navigates away)."""
    page, expected = visit.page, urlsplit(urljoin(visit.base, twin(visit.path))).path
    link = page.locator("p.gradbook-lang-switch a[href]")
    if link.count() == 0:
        return ["no language switch link (p.gradbook-lang-switch a)"]
    try:
        with page.expect_navigation(wait_until="commit", timeout=10_000) as navigation:
            link.first.click()
    except Exception as error:  # noqa: BLE001 - a Playwright timeout, reported as a problem
        return [f"clicking the language switch did not navigate: {str(error).splitlines()[0]}"]
    problems = []
    got = unquote(urlsplit(page.url).path)
    if got != expected:
        problems.append(f"language switch leads to {got}, not the twin {expected}")
    response = navigation.value
    if response is None or response.status != 200:
        problems.append(f"language switch target {got}: HTTP status {response.status if response else None}")
    return problems


@dataclass
class Weight:
    """Bytes one page transferred from the local server, outside the shared assets."""

    path: str
    files: Dict[str, int]  # site path -> body bytes
    shared: int  # bytes under _static/, not counted

    @property
    def total(self) -> int:
        return sum(self.files.values())

    def line(self) -> str:
        biggest = max(self.files.items(), key=lambda item: item[1], default=("-", 0))
        return (
            f"{self.path:<40} {self.total / 1e3:9.1f} kB in {len(self.files):2d} files"
            f"   (largest {biggest[0]} {biggest[1] / 1e3:.1f} kB; _static/ not counted: {self.shared / 1e6:.2f} MB)"
        )


def page_weight(visit: Visit) -> Weight:
    """Body bytes of every response from the local server, split into counted and shared."""
    home = urlsplit(visit.base).path
    files: Dict[str, int] = {}
    shared = 0
    for response in visit.responses:
        if not _is_local(response.url, visit.base):
            continue
        path = unquote(urlsplit(response.url).path).removeprefix(home)
        try:
            size = len(response.body())
        except Exception:  # noqa: BLE001 - a redirect or an aborted response has no body
            size = int(response.headers.get("content-length", 0) or 0)
        if path.startswith(SHARED):
            shared += size
        else:
            files[path] = files.get(path, 0) + size
    return Weight(path=visit.path, files=files, shared=shared)


def weight_problems(weight: Weight, budget: int = WEIGHT_BUDGET) -> List[str]:
    if weight.total > budget:
        top = sorted(weight.files.items(), key=lambda item: -item[1])[:5]
        listing = ", ".join(f"{path} {size / 1e3:.1f} kB" for path, size in top)
        return [f"page weight {weight.total / 1e6:.2f} MB exceeds the budget of {budget / 1e6:.2f} MB: {listing}"]
    return []


def weight_table(weights: List[Weight], budget: int = WEIGHT_BUDGET) -> str:
    head = f"page weight outside _static/ (budget {budget / 1e6:.1f} MB per page)"
    lines = [head, "-" * len(head)]
    lines += [("  " if w.total <= budget else "! ") + w.line() for w in weights]
    return "\n".join(lines)


@dataclass
class PageReport:
    path: str
    problems: Dict[str, List[str]]
    weight: Weight
    seconds: float
    notes: List[str] = field(default_factory=list)  # known console errors, not counted

    def all_problems(self) -> List[str]:
        return [f"{self.path} [{check}] {p}" for check, found in self.problems.items() for p in found]


def check_page(browser, base: str, path: str, budget: int = WEIGHT_BUDGET) -> PageReport:
    """Every page check on one chapter page; the language switch goes last (it navigates)."""
    start = time.perf_counter()
    problems: Dict[str, List[str]] = {}
    with open_page(browser, base, path) as visit:
        problems["load"] = load_problems(visit)
        problems["explorers"] = explorer_problems(visit.page)
        problems["math"] = math_problems(visit.page)
        weight = page_weight(visit)
        problems["weight"] = weight_problems(weight, budget)
        problems["language switch"] = language_switch_problems(visit)
        problems["console"] = console_problems(visit)
        problems["outside hosts"] = outside_problems(visit)
        notes = known_console_errors(visit)
    found = {check: found for check, found in problems.items() if found}
    return PageReport(path, found, weight, time.perf_counter() - start, notes)


# -- search -------------------------------------------------------------------


def search(browser, base: str, query: str, start: str) -> Tuple[List[str], List[str]]:
    """Search ``query`` through the search dialog of page ``start`` (Ctrl+K, type, Enter).

    Returns the site paths of the result links and the problems met on the way
    (including console errors and requests to other hosts on the search page).
    """
    with open_page(browser, base, start, settle=False) as visit:
        page = visit.page
        page.keyboard.press("Control+k")
        field_ = page.locator("#pst-search-dialog input[name=q]")
        try:
            field_.wait_for(state="visible", timeout=5_000)
        except Exception:  # noqa: BLE001
            return [], [f"{start}: Ctrl+K did not open the search dialog"]
        field_.fill(query)
        with page.expect_navigation(wait_until="load"):
            field_.press("Enter")
        problems = []
        expected = "search-zh.html" if start.startswith("chapters/zh/") else "search.html"  # one per language
        if not urlsplit(page.url).path.endswith("/" + expected):
            problems.append(f"the search form of {start} led to {page.url}, not {expected}")
        try:
            page.wait_for_function(
                "() => { const s = document.querySelector('#search-results p.search-summary');"
                " return s && s.textContent.trim().length > 0; }",
                timeout=TIMEOUT_MS,
            )
        except Exception:  # noqa: BLE001
            problems.append(f"search for {query!r} did not finish")
        hrefs = page.eval_on_selector_all(
            "#search-results ul.search li a[href]", "links => links.map(a => a.href)"
        )
        # Each result's excerpt arrives after its page is fetched; a formula in it reads once, as text.
        try:
            page.wait_for_function(
                "() => { const items = document.querySelectorAll('#search-results ul.search li');"
                " return [...items].every(li => li.querySelector('p.context')); }", timeout=10_000)
        except Exception:  # noqa: BLE001
            pass  # a page whose text has no match gets no excerpt: check those that came
        excerpts = page.eval_on_selector_all("#search-results ul.search li p.context",
                                             "ps => ps.map(p => p.textContent)")
        tex = sorted({m for text in excerpts for m in re.findall(r"\\[A-Za-z]+", text)})
        if tex:
            problems.append(f"search for {query!r}: excerpts show TeX ({', '.join(tex[:5])}): formulas are not text")
        home = urlsplit(base).path
        paths = [unquote(urlsplit(href).path).removeprefix(home) for href in hrefs]
        problems += console_problems(visit) + outside_problems(visit)
        return paths, problems


def search_problems(found: List[str], query: str, lang: str, pages: List[str]) -> List[str]:
    """The results ``found`` by :func:`search` for ``query`` include chapter pages of ``lang`` among
    ``pages``, and no page of another language's chapters (each language's search keeps to its own)."""
    wanted = {p for p in pages if p.startswith(f"chapters/{lang}/")}
    if not found:
        return [f"search for {query!r} returned no results"]
    problems = []
    if not wanted & set(found):
        problems.append(f"search for {query!r} returned no {lang} chapter page; results: "
                        f"{', '.join(dict.fromkeys(found))}")
    others = [other for other in book.languages() if other != lang]
    foreign = [p for p in dict.fromkeys(found) if any(p.startswith(f"chapters/{other}/") for other in others)]
    if foreign:
        problems.append(f"the {lang} search for {query!r} returned pages of another language: {', '.join(foreign)}")
    return problems


# -- command line -------------------------------------------------------------


def search_start(lang: str, root: Path = ROOT) -> str:
    """The page a search in ``lang`` starts from: its first numbered chapter."""
    return book.site_path(book.chapters(lang, root)[0], root)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("html", nargs="?", type=Path, default=HTML)
    parser.add_argument("--root", type=Path, default=ROOT, help="book root (default: the repository)")
    args = parser.parse_args(argv)
    if not (args.html / "index.html").is_file():
        print(f"{args.html} has no built site: run `make book` first", file=sys.stderr)
        return 2
    if reason := browser_missing():
        print(reason, file=sys.stderr)
        return 2
    pages = book.site_pages(root=args.root)
    problems, notes, weights = [], [], []
    with serve(args.html) as base, launch() as browser:
        for path in pages:
            report = check_page(browser, base, path)
            problems += report.all_problems()
            notes += [f"{path}: {note}" for note in report.notes]
            weights.append(report.weight)
        for lang, query in SEARCHES.items():
            found, trouble = search(browser, base, query, search_start(lang, args.root))
            problems += trouble + search_problems(found, query, lang, pages)
    print(weight_table(weights))
    for note in notes:
        print(note)
    return book.cli(problems)


if __name__ == "__main__":
    raise SystemExit(main())
