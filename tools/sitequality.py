"""Lighthouse and axe-core on every page of the built site (_build/html).

* :func:`lighthouse`: Lighthouse (npm ``lighthouse``, run by
  ``tools/lighthouse.mjs``) on each page, desktop preset, no throttling, in
  Debian's Chromium: the four category scores, the metrics (FCP, LCP, TBT,
  CLS, speed index, bytes) and the audits that cost points.
* :func:`axe`: axe-core (npm ``axe-core``) injected into each page by
  Playwright, in light and in dark mode: its violations, by impact.

:data:`TARGETS` are the figures every page must reach; :func:`lighthouse_problems`
and :func:`axe_problems` list what misses them.  The browser tests assert them
(performance with :data:`PERFORMANCE_MARGIN` for a slower, busier machine: the
other figures do not depend on the machine) and ``make bench`` reports them.

Usage: ``python -m tools.sitequality [--out report.json] [--pages PAGE ...]``;
prints a table per page and exits 1 when a page misses a target.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from tools import book
from tools import browsercheck as bc
from tools.book import ROOT

RUNNER = ROOT / "tools" / "lighthouse.mjs"
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
TARGETS = {"performance": 95, "accessibility": 100, "best-practices": 100, "seo": 95, "cls": 0.02}
PERFORMANCE_MARGIN = 5  # the tests accept performance >= 90: timing depends on the machine and its load
AXE_BLOCKING = ("critical", "serious")  # impacts that fail a page
MODES = ("light", "dark")
LIGHTHOUSE_TIMEOUT_S = 120  # per page


def log(message: str) -> None:
    print(f"[sitequality] {message}", file=sys.stderr, flush=True)


def pages(root: Path = ROOT) -> List[str]:
    """Every page of the site a reader lands on: the chapter pages (both
    languages, toc order), the landing page, the search page and the index."""
    return ["index.html", *book.site_pages(root=root), "search.html", "genindex.html"]


def missing() -> Optional[str]:
    """Why the tools cannot run, or None."""
    if shutil.which("node") is None:
        return "`node` is not on PATH (Debian's nodejs)"
    for path in (ROOT / "node_modules" / "lighthouse", AXE):
        if not path.exists():
            return f"{path} is missing: `npm ci` (make test and make bench run it) installs it"
    return bc.browser_missing()


# -- Lighthouse ---------------------------------------------------------------


def lighthouse(base: str, paths: Sequence[str], chromium: Path = bc.CHROMIUM) -> Dict[str, dict]:
    """``{page: {"scores", "metrics", "failing", "lighthouse"}}`` for ``paths`` under ``base``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "lighthouse.json"
        command = ["node", str(RUNNER), str(chromium), base, str(out), *paths]
        log(f"Lighthouse on {len(paths)} pages")
        done = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=LIGHTHOUSE_TIMEOUT_S * len(paths) + 60)
        if done.returncode != 0 or not out.is_file():
            raise RuntimeError(f"Lighthouse failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
        return json.loads(out.read_text(encoding="utf-8"))


def lighthouse_problems(result: dict, performance_margin: int = 0) -> List[str]:
    """What one page's Lighthouse result misses of :data:`TARGETS`."""
    problems = []
    for category, score in result["scores"].items():
        floor = TARGETS[category] - (performance_margin if category == "performance" else 0)
        if score is None or score < floor:
            lost = ", ".join(f"{a['id']} {a['value']}".strip() for a in result["failing"][category]) or "-"
            problems.append(f"{category} {score} < {floor} (audits: {lost})")
    cls = result["metrics"]["cls"]
    if cls is None or cls > TARGETS["cls"]:
        problems.append(f"cumulative layout shift {cls} > {TARGETS['cls']}")
    return problems


# -- axe-core -----------------------------------------------------------------

_AXE_RUN_JS = """async () => {
  const result = await axe.run(document, {resultTypes: ['violations']});
  return result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => ({target: n.target.join(' '), html: n.html.slice(0, 160),
                              summary: (n.failureSummary || '').slice(0, 300)}))}));
}"""

# The site skips rendering sections and cells far off screen (content-visibility:
# auto, gradbook.css); axe needs every element laid out to measure its colours, so
# it sees them all rendered.
_RENDER_ALL_CSS = ".bd-article section, .bd-article div.cell { content-visibility: visible !important; }"

_SET_MODE_JS = """mode => {
  localStorage.setItem('mode', mode); localStorage.setItem('theme', mode);
  document.documentElement.dataset.mode = mode; document.documentElement.dataset.theme = mode;
}"""


def axe(browser, base: str, paths: Sequence[str], modes: Sequence[str] = MODES) -> Dict[str, Dict[str, list]]:
    """``{page: {mode: [violation, ...]}}``: axe-core's violations on each page,
    in each colour mode (the theme's light and dark; set as a reader's switch does)."""
    results: Dict[str, Dict[str, list]] = {}
    for path in paths:
        log(f"axe: {path}")
        results[path] = {}
        for mode in modes:
            with bc.open_page(browser, base, path, settle=False) as visit:
                visit.page.evaluate(_SET_MODE_JS, mode)
                visit.page.reload(wait_until="load")
                visit.page.add_style_tag(content=_RENDER_ALL_CSS)
                visit.page.add_script_tag(path=str(AXE))
                results[path][mode] = visit.page.evaluate(_AXE_RUN_JS)
    return results


def axe_problems(result: Dict[str, list], blocking: Sequence[str] = AXE_BLOCKING) -> List[str]:
    """The violations of one page's :func:`axe` result at a ``blocking`` impact."""
    problems = []
    for mode, violations in result.items():
        for v in violations:
            if v["impact"] in blocking:
                where = "; ".join(n["target"] for n in v["nodes"][:4])
                problems.append(f"{mode}: {v['impact']} {v['id']} ({v['help']}) x{len(v['nodes'])}: {where}")
    return problems


def axe_counts(result: Dict[str, list]) -> Dict[str, int]:
    """``{impact: number of failing elements}`` over the modes of one page."""
    counts: Dict[str, int] = {}
    for violations in result.values():
        for v in violations:
            counts[v["impact"]] = counts.get(v["impact"], 0) + len(v["nodes"])
    return counts


# -- the report ---------------------------------------------------------------


def median_run(runs: Sequence[dict]) -> dict:
    """Of several Lighthouse runs of one page, the one with the median performance score (the
    lower middle one of an even number): Lighthouse's own advice for a figure that varies."""
    if not runs:
        raise ValueError("median_run needs at least one run")
    ordered = sorted(runs, key=lambda run: run["scores"]["performance"] or 0)
    return ordered[(len(ordered) - 1) // 2]


def measure(html: Path = bc.HTML, paths: Optional[Sequence[str]] = None, runs: int = 1) -> Dict[str, dict]:
    """``{page: {"lighthouse": ..., "axe": ...}}`` for every page (or ``paths``) of the site in ``html``;
    with ``runs`` > 1, Lighthouse measures every page that many times and each keeps its median run."""
    if runs < 1:
        raise ValueError(f"runs must be at least 1, not {runs}")
    paths = list(paths or pages())
    with bc.serve(html) as base:
        measured = [lighthouse(base, paths) for _ in range(runs)]
        scores = {path: median_run([m[path] for m in measured]) for path in paths}
        with bc.launch() as browser:
            violations = axe(browser, base, paths)
    return {path: {"lighthouse": scores[path], "axe": violations[path]} for path in paths}


def table(report: Dict[str, dict]) -> str:
    """One line per page: the four scores, CLS, TBT, bytes and axe's serious/critical count."""
    lines = [f"{'page':34} perf a11y best  seo    cls   tbt_ms    bytes  axe(serious+critical)"]
    for path, r in report.items():
        s, m = r["lighthouse"]["scores"], r["lighthouse"]["metrics"]
        counts = axe_counts(r["axe"])
        blocking = sum(counts.get(impact, 0) for impact in AXE_BLOCKING)
        lines.append(f"{path:34} {s['performance']:4} {s['accessibility']:4} {s['best-practices']:4} {s['seo']:4} "
                     f"{m['cls']:6.3f} {m['tbt_ms']:8} {m['bytes']:8} {blocking:5}")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("html", nargs="?", type=Path, default=bc.HTML)
    parser.add_argument("--pages", nargs="*", help="pages to measure (default: every page)")
    parser.add_argument("--out", type=Path, help="also write the whole report here (JSON)")
    args = parser.parse_args(argv)
    if reason := missing():
        print(reason, file=sys.stderr)
        return 2
    book.kernel().apply("test")
    paths = args.pages or [p for p in pages() if (args.html / p).is_file()]  # an older build may lack new pages
    report = measure(args.html, paths)
    if args.out:
        args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    print(table(report))
    failed = 0
    for path, r in report.items():
        problems = lighthouse_problems(r["lighthouse"]) + axe_problems(r["axe"])
        for problem in problems:
            print(f"{path}: {problem}")
        failed += bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
