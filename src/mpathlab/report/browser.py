"""Render a report in headless Chromium: measure the page, or take a screenshot.

Used by the tests (the page has its plots and nothing overflows the window)
and by scripts/report_screenshots.py (the PNGs under docs/).  Needs the
``chromium`` binary (Debian's chromium package).
"""
from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import tempfile
from typing import Optional

# Written into the page after it has loaded: the window and document widths,
# every image's natural size, and any element that sticks out to the right
# of the window outside a box that scrolls on its own.
MEASURE_JS = """
<script>
window.addEventListener('load', function () {
  var W = window.innerWidth;
  var out = {innerWidth: W, scrollWidth: document.documentElement.scrollWidth,
             scrollHeight: document.documentElement.scrollHeight,
             bodyScrollWidth: document.body.scrollWidth,
             images: Array.from(document.images).map(function (i) {
               return {alt: i.alt, complete: i.complete, naturalWidth: i.naturalWidth,
                       naturalHeight: i.naturalHeight, right: i.getBoundingClientRect().right}; }),
             overflowing: Array.from(document.querySelectorAll('body *')).filter(function (e) {
               return !e.closest('.scroll') && e.getBoundingClientRect().right > W + 0.5; })
               .map(function (e) { return e.tagName + (e.className ? '.' + e.className : ''); }).slice(0, 20),
             scrollBoxes: Array.from(document.querySelectorAll('.scroll')).map(function (e) {
               return {right: e.getBoundingClientRect().right, scrollWidth: e.scrollWidth,
                       clientWidth: e.clientWidth}; })};
  var pre = document.createElement('pre');
  pre.id = 'mpathlab-measure';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


def chromium_binary() -> Optional[str]:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _run(args, timeout: int) -> str:
    with tempfile.TemporaryDirectory(prefix="mpathlab-chromium-") as profile:
        cmd = [chromium_binary() or "chromium", "--headless", "--no-sandbox", "--disable-gpu",
               "--hide-scrollbars", "--no-first-run", "--user-data-dir=%s" % profile] + args
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                           universal_newlines=True)
        if r.returncode != 0:
            raise RuntimeError("chromium failed (%d): %s" % (r.returncode, r.stderr.strip()[-500:]))
        return r.stdout


def measure(html_path: str, width: int = 1400, height: int = 1000, timeout: int = 180) -> dict:
    """Load a copy of the page with MEASURE_JS in a ``width`` px window; return the measurements."""
    with open(html_path) as f:
        page = f.read()
    with tempfile.TemporaryDirectory(prefix="mpathlab-measure-") as d:
        probe = os.path.join(d, "page.html")
        with open(probe, "w") as f:
            f.write(page.replace("</body>", MEASURE_JS + "</body>", 1))
        dom = _run(["--window-size=%d,%d" % (width, height), "--virtual-time-budget=15000", "--dump-dom",
                    "file://" + probe], timeout)
    m = re.search(r'<pre id="mpathlab-measure">(.*?)</pre>', dom, re.S)
    if not m:
        raise RuntimeError("the measuring script did not run (no result in the DOM)")
    return json.loads(html.unescape(m.group(1)))


def screenshot(html_path: str, png_path: str, width: int = 1400, height: int = 2000, timeout: int = 180) -> None:
    """A PNG of the top ``height`` px of the page in a ``width`` px window."""
    _run(["--window-size=%d,%d" % (width, height), "--virtual-time-budget=15000",
          "--screenshot=%s" % os.path.abspath(png_path), "file://" + os.path.abspath(html_path)], timeout)
    if not os.path.exists(png_path):
        raise RuntimeError("chromium wrote no screenshot")
