"""Regenerate docs/report.png, the README's picture of the HTML report.

Releases a ``dpmic demo``-like table (the demo's generated columns, 200,000
rows, eps = 1, in-process Dask, an uncapped ledger of its own), writes the
result's page with ``result.to_html`` and photographs it with headless Chromium
(Debian package ``chromium``). The picture is reduced to a palette PNG so that it
stays small (under 300 KB).

    python tools/readme_screenshot.py [--out docs/report.png] [--keep-html PATH]

The noise differs on every run, so the picture does too.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import dpmic_dask as dm  # noqa: E402
from dpmic_dask.batch.demo import DEMO_BOUNDS, demo_frame  # noqa: E402

WIDTH, HEIGHT = 1200, 900
LIMIT = 300_000  # bytes


def release_page(path: Path, rows: int, eps: float) -> Path:
    """The HTML page of one private release of the demo table."""
    ddf = demo_frame(rows, partitions=4)
    result = ddf.dpmic.pairwise(eps, bounds=DEMO_BOUNDS, dataset="demo",
                                ledger=dm.InMemoryLedger(uncapped=True))
    return Path(result.to_html(path))


def photograph(page: Path, shot: Path, profile: Path) -> None:
    """A ``WIDTH x HEIGHT`` screenshot of ``page`` by headless Chromium."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("headless Chromium is not installed (apt-get install chromium)")
    subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", f"--user-data-dir={profile}",
         f"--window-size={WIDTH},{HEIGHT}", "--hide-scrollbars",
         f"--screenshot={shot}", page.as_uri()],
        check=True, capture_output=True, timeout=120)


def shrink(shot: Path, out: Path) -> int:
    """Write ``shot`` to ``out`` as a palette PNG; returns its size in bytes."""
    from PIL import Image  # pillow comes with matplotlib (the plot extra)

    for colours in (256, 128, 64):
        Image.open(shot).convert("RGB").quantize(colours).save(out, optimize=True)
        if out.stat().st_size < LIMIT:
            break
    return out.stat().st_size


def main(argv=None) -> None:
    """Release, write the page, photograph it, shrink the picture."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "report.png")
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--eps", type=float, default=1.0)
    parser.add_argument("--keep-html", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        page = release_page(args.keep_html or tmp / "report.html", args.rows, args.eps)
        photograph(page, tmp / "shot.png", tmp / "profile")
        size = shrink(tmp / "shot.png", args.out)
    print(f"wrote {args.out} ({size / 1000:.0f} KB, {WIDTH} x {HEIGHT})")


if __name__ == "__main__":
    main()
