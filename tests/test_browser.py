"""The built site in a real headless Chromium (Playwright + Debian's /usr/bin/chromium).

Every chapter page, in both languages: no console errors, no request to any
other host, explorers redraw when a control moves, math is typeset, the
language switch leads to the twin, and the page stays within its weight
budget.  Plus the site search, in both languages, and fault injection on a
copy of the site to prove the checks detect what they claim to.

The site is served from 127.0.0.1; a request to any other host is aborted in
the browser (never sent) and fails the test.  Without a build (`make book`),
Playwright or Chromium (`make browser`), these tests fail; they never skip.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tools import book
from tools import browsercheck as bc

pytestmark = pytest.mark.site

PAGES = book.site_pages()
OUTSIDE_URL = "https://example.invalid/pixel.png"
FAULT_ERROR = "gradbook fault injection"


@pytest.fixture(scope="session")
def site() -> Path:
    if not (bc.HTML / "index.html").is_file():
        pytest.fail(f"{bc.HTML} has no built site: run `make book` first")
    return bc.HTML


@pytest.fixture(scope="module")  # closed before other test modules run
def browser():
    if reason := bc.browser_missing():
        pytest.fail(reason)
    with bc.launch() as browser:
        yield browser


@pytest.fixture(scope="module")  # closed before other test modules run
def server(site):
    with bc.serve(site) as base:
        yield base


class Measured(dict):
    """Results measured once per module, computed on first use whatever the
    test order (or -k selection): ``measured.get_or(key, compute)``."""

    def get_or(self, key, compute):
        if key not in self:
            self[key] = compute()
        return self[key]


@pytest.fixture(scope="module")
def weights(browser, server) -> Measured:
    return Measured()


@pytest.fixture(scope="module")
def searches(browser, server) -> Measured:
    return Measured()


def _weight(browser, server, path):
    with bc.open_page(browser, server, path) as visit:
        return bc.page_weight(visit)


def test_toc_lists_chapter_pages():
    assert PAGES, "no chapter pages in _toc.yml"
    names = {lang: [p.rsplit("/", 1)[1] for p in book.site_pages(lang)] for lang in book.languages()}
    assert names["en"] and names["en"] == names["zh"], names
    assert [bc.twin(p) for p in book.site_pages("en")] == book.site_pages("zh")


@pytest.mark.parametrize("path", PAGES, ids=[p.removeprefix("chapters/").removesuffix(".html") for p in PAGES])
def test_chapter_page(browser, server, path, weights, record_property):
    report = bc.check_page(browser, server, path)
    weights[path] = report.weight
    record_property("weight_bytes", report.weight.total)
    print(report.weight.line(), f"  [{report.seconds:.1f} s]")
    for note in report.notes:
        print(note)
    problems = report.all_problems()
    assert not problems, "\n".join(problems + ["", report.weight.line()])


@pytest.mark.parametrize("lang, query", list(bc.SEARCHES.items()), ids=list(bc.SEARCHES))
def test_search_finds_chapters(browser, server, query, lang, searches):
    start = bc.search_start(lang)
    found, problems = bc.search(browser, server, query, start)
    searches[query] = found
    print(f"search {query!r} from {start}: {len(found)} results: {', '.join(dict.fromkeys(found))}")
    problems += bc.search_problems(found, query, lang, PAGES)
    assert not problems, "\n".join(problems)


def test_weight_table(browser, server, weights, record_property):
    """The weight of every chapter page, as one table (measured here if not yet measured)."""
    measured = [weights.get_or(path, lambda path=path: _weight(browser, server, path)) for path in PAGES]
    table = bc.weight_table(measured)
    record_property("weights", {w.path: w.total for w in measured})
    print(table)
    over = [problem for w in measured for problem in bc.weight_problems(w)]
    assert not over, "\n".join(over + ["", table])


# -- fault injection on a copy of the site ------------------------------------


def _first(pages: list[str], lang: str, marker: str, html: Path) -> str:
    for path in pages:
        if path.startswith(f"chapters/{lang}/") and marker in (html / path).read_text(encoding="utf-8"):
            return path
    pytest.fail(f"no {lang} chapter page contains {marker!r}")


def _edit(path: Path, old: str, new: str, count: int = 1) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{path}: {old!r} not found"
    path.write_text(text.replace(old, new, count), encoding="utf-8")


@pytest.fixture(scope="module")
def faulty(site, tmp_path_factory):
    """A copy of the site with one fault per page, served from a second server."""
    root = tmp_path_factory.mktemp("faulty") / "html"
    shutil.copytree(site, root)
    pages = {
        "explorer": _first(PAGES, "en", 'class="gradbook-explorer"', root),
        "outside": PAGES[-1],
        "switch": _first(PAGES, "zh", "gradbook-lang-switch", root),
        "console": PAGES[0],
    }
    # (a) the explorer script does nothing
    (root / "_static" / "gradbook-explorer.js").write_text("/* no-op (fault injection) */\n", encoding="utf-8")
    # (b) an image from another host
    _edit(root / pages["outside"], "</body>", f'<img src="{OUTSIDE_URL}" alt=""></body>')
    # (c) no language switch
    page = root / pages["switch"]
    text = page.read_text(encoding="utf-8")
    text, n = re.subn(r'<p class="gradbook-lang-switch">.*?</p>', "", text, flags=re.S)
    assert n, f"{page}: no language switch to remove"
    page.write_text(text, encoding="utf-8")
    # (d) an uncaught exception and KaTeX's stylesheet missing
    _edit(root / pages["console"], "</body>", f'<script>throw new Error("{FAULT_ERROR}")</script></body>')
    _edit(root / pages["console"], "_static/katex/katex.min.css", "_static/katex/missing.css")
    with bc.serve(root) as base:
        yield base, pages


def test_broken_explorer_script_is_detected(browser, faulty):
    base, pages = faulty
    with bc.open_page(browser, base, pages["explorer"], settle=False) as visit:
        problems = bc.explorer_problems(visit.page)
    print("\n".join(problems))
    assert problems, "a no-op explorer script went unnoticed"
    assert all("did not change the curves" in p for p in problems), problems
    assert any("explorer gradbook-explorer-" in p and "control" in p for p in problems), problems


@pytest.fixture(scope="module")
def flipped(site, tmp_path_factory):
    """A copy of the site whose explorer script draws y upside down."""
    root = tmp_path_factory.mktemp("flipped") / "html"
    shutil.copytree(site, root)
    _edit(root / "_static" / "gradbook-explorer.js", "(1 - (y[i] - ylim[0])", "((y[i] - ylim[0])")
    with bc.serve(root) as base:
        yield base, _first(PAGES, "en", 'class="gradbook-explorer"', root)


def test_a_wrong_projection_is_detected(browser, flipped):
    """Curves that change, but not to what the server renders, fail the explorer check."""
    base, path = flipped
    with bc.open_page(browser, base, path, settle=False) as visit:
        problems = bc.explorer_problems(visit.page)
    print("\n".join(problems))
    assert problems and all("differ from the server-rendered" in p for p in problems), problems
    assert any("after moving" in p and "back to" in p for p in problems), problems


def test_request_to_another_host_is_blocked_and_reported(browser, faulty):
    base, pages = faulty
    with bc.open_page(browser, base, pages["outside"]) as visit:
        problems = bc.outside_problems(visit)
        failed = dict(visit.failed)
    print("\n".join(problems))
    assert problems == [f"request to another host (blocked): {OUTSIDE_URL}"], problems
    # Aborted by the guard inside the browser (Chromium says ERR_BLOCKED_BY_CLIENT.Inspector:
    # blocked through DevTools interception), not a DNS failure on its way out.
    assert failed.get(OUTSIDE_URL, "").startswith(bc.BLOCKED), failed


def test_missing_language_switch_is_detected(browser, faulty):
    base, pages = faulty
    with bc.open_page(browser, base, pages["switch"], settle=False) as visit:
        problems = bc.language_switch_problems(visit)
    assert problems == ["no language switch link (p.gradbook-lang-switch a)"], problems


def test_console_error_and_unrendered_math_are_detected(browser, faulty):
    base, pages = faulty
    with bc.open_page(browser, base, pages["console"], settle=False) as visit:
        console = bc.console_problems(visit)
        math = bc.math_problems(visit.page)
    print("\n".join(console + math))
    assert any(FAULT_ERROR in p for p in console), console
    assert any("missing.css" in p and "404" in p for p in console), console  # the failed stylesheet load
    assert math and "KaTeX's stylesheet did not load" in math[0], math


def test_weight_budget_is_enforced(browser, server, weights):
    weight = weights.get_or(PAGES[0], lambda: _weight(browser, server, PAGES[0]))
    assert weight.total > 1000 and bc.weight_problems(weight) == []
    problems = bc.weight_problems(weight, budget=1000)
    assert problems and "exceeds the budget" in problems[0], problems


def test_search_checks_the_language(browser, server, searches):
    found = searches.get_or("梯度", lambda: bc.search(browser, server, "梯度", bc.search_start("zh"))[0])
    assert bc.search_problems(found, "梯度", "zh", PAGES) == []
    problems = bc.search_problems(found, "梯度", "en", PAGES)  # Chinese results, taken for an English search
    assert problems and "no en chapter page" in problems[0] and "another language" in problems[-1], problems
    assert bc.search_problems([], "梯度", "zh", PAGES) == ["search for '梯度' returned no results"]


EQUATION_BOXES_JS = """() => [...document.querySelectorAll('div.math > .katex-display')].map(box => {
  box.scrollLeft = 0;
  const r = box.parentElement.getBoundingClientRect();  // div.math, which hides what overflows it
  const glyphs = [...box.querySelectorAll('.katex-html .katex-base, .katex-html .base')].map(b => b.getBoundingClientRect());
  const left = Math.min(...glyphs.map(g => g.left)), right = Math.max(...glyphs.map(g => g.right));
  return {text: box.textContent.slice(0, 40), clipped: left < r.left - 1, overflows: box.scrollWidth > box.clientWidth + 1,  // as gradbook-page.js
          stop: box.tabIndex === 0, offCentre: Math.abs((left - r.left) - (r.right - right))};
})"""


@pytest.mark.parametrize("width", [390, 1280])
@pytest.mark.parametrize("path", [p for p in PAGES if p.rsplit("/", 1)[1] in ("02_stop_gradient.html", "06_dann.html")])
def test_display_equations_are_centred_and_never_lose_their_left_part(browser, server, path, width):
    page = browser.new_page(viewport={"width": width, "height": 900})
    try:
        page.goto(server + path, wait_until="load")
        page.evaluate("() => new Promise(done => { let y = 0; const t = setInterval(() => { window.scrollBy(0, 600);"
                      " y += 600; if (y > document.body.scrollHeight) { clearInterval(t); done(); } }, 20); })")
        page.wait_for_timeout(300)
        boxes = page.evaluate(EQUATION_BOXES_JS)
    finally:
        page.close()
    assert boxes, f"{path} has no display equation"
    for box in boxes:
        assert not box["clipped"], box  # the start of the formula is on screen, or scrolled to
        if box["overflows"]:
            assert box["stop"], box  # a wide formula scrolls, by keyboard too
        else:
            assert box["offCentre"] <= 2, box  # centred, as MathJax centres it


# An output block filling its cell, with a focus-sized outline drawn around it: which of
# the outline's four sides are painted (a side missing means the page clips focus rings).
OUTLINE_SIDES_JS = """async () => {
  const block = [...document.querySelectorAll('.bd-article div.cell > .cell_output > .output')]
    .find(el => { const h = el.closest('div.cell').getBoundingClientRect().height; return h > 60 && h < 600; });
  block.scrollIntoView({block: 'center'});
  block.style.outline = '5px solid rgb(255, 0, 255)';  // a magenta no page draws
  block.style.outlineOffset = '0px';
  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
  const r = block.getBoundingClientRect();
  return [r.left, r.top, r.right, r.bottom];
}"""


@pytest.mark.parametrize("path", [p for p in PAGES if p.endswith("02_stop_gradient.html")])
def test_a_focus_outline_at_the_edge_of_a_cell_is_painted_whole(browser, server, path):
    # The site skips rendering off-screen sections and cells (content-visibility, gradbook.css),
    # which clips their painting to the box unless overflow-clip-margin leaves room.
    import io

    from PIL import Image

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.goto(server + path, wait_until="load")
        left, top, right, bottom = (round(v) for v in page.evaluate(OUTLINE_SIDES_JS))
        image = Image.open(io.BytesIO(page.screenshot())).convert("RGB")
    finally:
        page.close()

    def red(x, y):
        r, g, b = image.getpixel((x, y))
        return r > 200 and g < 60 and b > 200

    mid_x, mid_y = (left + right) // 2, (top + bottom) // 2
    sides = {"top": red(mid_x, top - 3), "bottom": red(mid_x, bottom + 2),
             "left": red(left - 3, mid_y), "right": red(right + 2, mid_y)}
    assert all(sides.values()), sides
