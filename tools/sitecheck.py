"""Find TensorFlow/absl/CUDA log noise in the built book.

The book is built with quiet kernels (``TF_CPP_MIN_LOG_LEVEL=2``, oneDNN off)
and ``stderr_output: remove-warn``, so no page should show a kernel's logs.
:func:`log_noise` checks the result, page by page:

* any stderr output block (myst-nb renders stderr as ``div.output.stderr``),
  wherever it is;
* inside cell outputs (elements with class ``cell_output`` or ``output``),
  any text matching :data:`NOISE`: oneDNN and CPU feature notices, absl and
  glog lines (``I0000 00:00:...``), ``WARNING:tensorflow:``, CUDA plugin
  registration and driver messages, TF-TRT warnings.

Prose and code inputs are not scanned: a chapter may quote a log line.

Usage: ``python -m tools.sitecheck [_build/html]``; exit 1 when noise is found.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from bs4 import BeautifulSoup

from tools import book
from tools.book import ROOT

NOISE = re.compile(
    "|".join(
        [
            r"oneDNN custom operations",
            r"cpu_feature_guard",
            r"This TensorFlow binary is optimized",
            r"absl::InitializeLog",
            r"(?m:^\s*[IWEF]\d{4} \d\d:\d\d:\d+(?:\.\d+)?\s)",  # glog: I0000 00:00:17953.87
            r"WARNING:tensorflow:",
            r"Unable to register cu(?:DNN|FFT|BLAS)",
            r"Could not find cuda drivers",
            r"TF-TRT Warning",
            r"computation_placer",
        ]
    )
)


def _line_at(text: str, index: int, width: int = 120) -> str:
    """The line of ``text`` holding ``index``, whitespace collapsed, shortened."""
    begin = text.rfind("\n", 0, index) + 1
    end = text.find("\n", index)
    line = " ".join(text[begin: end if end >= 0 else None].split())
    return line if len(line) <= width else line[: width - 3] + "..."


def page_noise(html: str) -> list[str]:
    """Snippets of the log noise in one HTML page."""
    soup = BeautifulSoup(html, "html.parser")
    found = []
    for block in soup.select(".stderr"):
        text = block.get_text().strip()
        found.append("stderr output: " + _line_at(text, 0))
    outputs = soup.select(".cell_output, .output")
    ids = {id(el) for el in outputs}
    for element in outputs:
        if any(id(parent) in ids for parent in element.parents):
            continue  # scan outermost output elements only
        if "stderr" in element.get("class", []) or element.select(".stderr"):
            continue  # already reported as a whole
        text = element.get_text()
        for match in NOISE.finditer(text):
            found.append(_line_at(text, match.end() - 1))
    return list(dict.fromkeys(found))


def log_noise(html_dir: Path) -> list[str]:
    """``"page: snippet"`` for every piece of log noise in the built site."""
    html_dir = Path(html_dir)
    problems = []
    for page in sorted(html_dir.rglob("*.html")):
        rel = page.relative_to(html_dir)
        if any(part.startswith("_") for part in rel.parts[:-1]):
            continue  # _static, _sources, _images ...
        for snippet in page_noise(page.read_text(encoding="utf-8", errors="replace")):
            problems.append(f"{rel.as_posix()}: {snippet}")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("html_dir", nargs="?", type=Path, default=ROOT / "_build" / "html")
    args = parser.parse_args(argv)
    if not args.html_dir.is_dir():
        print(f"{args.html_dir} does not exist: run `make book` first", file=sys.stderr)
        return 2
    return book.cli(log_noise(args.html_dir))


if __name__ == "__main__":
    raise SystemExit(main())
