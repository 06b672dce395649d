"""The site's downloads, for readers who cannot reach GitHub or Colab.

``make book`` writes, into the built site's ``downloads/`` folder:

* ``gradbook-notebooks.zip``: the repository's source (every file git
  tracks: the chapter notebooks and their MyST sources, ``gradlib``, the
  Makefile, the pinned requirements), unpacked to ``gradbook/``; with it
  ``pip install ./gradbook`` installs gradlib and ``make lab`` opens the
  notebooks, without GitHub.
* ``gradbook-site.zip``: the whole built site (PDF editions and the source
  archive included, so that the offline copy's links to them work), unpacked
  to ``gradbook-site/``, to read offline.

Both archives are reproducible: the same files give the same bytes (fixed
timestamps and order).  Usage: ``python -m tools.downloads [_build/html]``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Tuple

from tools.book import ROOT

FOLDER = "downloads"
NOTEBOOKS = "gradbook-notebooks.zip"
SITE = "gradbook-site.zip"
SOURCE_PREFIX = "gradbook"
SITE_PREFIX = "gradbook-site"
STAMP = (2026, 1, 1, 0, 0, 0)  # every entry's date: archives depend on their content only
# Never in the source archive, even when a checkout without git is walked.
NOT_SOURCE = {".git", ".venv", ".venv-colab", "_build", "node_modules", ".pytest_cache", ".hypothesis",
              "__pycache__", ".ruff_cache", ".ipynb_checkpoints"}


def source_files(root: Path = ROOT) -> List[str]:
    """The repository's files, relative to ``root``: what git tracks, or (no git) a walk without build folders."""
    if (root / ".git").exists():
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout
        files = [name for name in listed.decode("utf-8").split("\0") if name]
    else:
        files = [str(p.relative_to(root)) for p in root.rglob("*")
                 if p.is_file() and not NOT_SOURCE.intersection(p.relative_to(root).parts)]
    files = sorted(f for f in files if (root / f).is_file())
    if not files:
        raise ValueError(f"{root}: no source files found")
    return files


def write_zip(target: Path, entries: Iterable[Tuple[Path, str]]) -> int:
    """Write ``(file, name in the archive)`` pairs to ``target``, sorted, with fixed dates; returns the count."""
    target.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    tmp = target.with_suffix(".zip.part")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        for path, name in sorted(entries, key=lambda entry: entry[1]):
            info = zipfile.ZipInfo(name, date_time=STAMP)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, path.read_bytes())
            count += 1
    tmp.replace(target)
    return count


def write_downloads(html: Path, root: Path = ROOT) -> List[Path]:
    """Both archives into ``html/downloads``; the site archive holds everything
    but itself (the source archive included: the offline pages link to it)."""
    html = Path(html)
    if not (html / "index.html").is_file():
        raise FileNotFoundError(f"{html} has no built site (index.html): run `make book`")
    folder = html / FOLDER
    notebooks = folder / NOTEBOOKS
    write_zip(notebooks, ((root / f, f"{SOURCE_PREFIX}/{f}") for f in source_files(root)))
    site = folder / SITE
    itself = {site, site.with_suffix(".zip.part")}
    pages = [p for p in html.rglob("*") if p.is_file() and p not in itself]
    write_zip(site, ((p, f"{SITE_PREFIX}/{p.relative_to(html).as_posix()}") for p in pages))
    return [notebooks, site]


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("html", nargs="?", type=Path, default=ROOT / "_build" / "html")
    args = parser.parse_args(argv)
    try:
        written = write_downloads(args.html)
    except (FileNotFoundError, ValueError) as error:
        print(f"downloads: {error}", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
