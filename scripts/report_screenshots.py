#!/usr/bin/env python3
"""Regenerate the report screenshots under docs/ (run from the repository root).

    .venv/bin/python scripts/report_screenshots.py

Writes three reports (a run report, a failover run report with two priority
groups, a sweep report), renders each in headless Chromium 1400 px wide,
and saves the whole page scaled to 1000 px wide with a small palette (the top
of the page only if it would still be larger), so every PNG stays under 300 KB.  Needs chromium, matplotlib, Pillow, Dask.
"""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "src"))

from mpathlab.report.browser import measure, screenshot  # noqa: E402

MAX_BYTES = 300 * 1024
SCEN = os.path.join(ROOT, "src", "mpathlab", "scenarios")
EX = os.path.join(ROOT, "examples")


def mpathlab(*args):
    subprocess.run([sys.executable, "-m", "mpathlab"] + list(args) + ["--no-progress"], check=True,
                   env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src")), stdout=subprocess.DEVNULL)


def shrink(src, dst, width=1000):
    from PIL import Image
    im = Image.open(src).convert("RGB")
    h = round(im.height * width / im.width)
    im = im.resize((width, h), Image.LANCZOS)
    while True:
        for colours in (256, 128):   # fewer colours before less page
            # octree keeps the few saturated plot colours that median cut merges into grey
            im.quantize(colors=colours, method=Image.FASTOCTREE, dither=Image.NONE).save(dst, optimize=True)
            if os.path.getsize(dst) <= MAX_BYTES:
                return
        if im.height < 800:
            return
        im = im.crop((0, 0, im.width, int(im.height * 0.9)))   # keep the top of the page


def main():
    out = os.path.join(ROOT, "docs")
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        run = os.path.join(d, "run.html")
        mpathlab("report", os.path.join(SCEN, "hst-2020.toml"), os.path.join(SCEN, "hst-2020-depth64.fio"),
                 "-o", run)
        fo = os.path.join(d, "failover.html")
        mpathlab("report", os.path.join(EX, "failover.toml"), os.path.join(EX, "randwrite.fio"), "-o", fo)
        job = os.path.join(d, "job.fio")
        with open(job, "w") as f:
            f.write("[j]\nrw=randwrite\nbs=4k\nnumber_ios=4000\n")
        table = os.path.join(d, "sweep.csv")
        mpathlab("sweep", os.path.join(SCEN, "hst-2020.toml"), job, "--selectors",
                 "round-robin,queue-length,service-time,historical-service-time", "--iodepths", "1,8,64",
                 "--seeds", "1,2,3", "--set", "paths.sdd.service.mean=100us,400us", "--out", table)
        sw = os.path.join(d, "sweep.html")
        mpathlab("report", "--sweep", table, "-o", sw)
        for name, page in (("report-run", run), ("report-failover", fo), ("report-sweep", sw)):
            m = measure(page, width=1400)
            raw = os.path.join(d, name + ".png")
            screenshot(page, raw, width=1400, height=m["scrollHeight"])
            shrink(raw, os.path.join(out, name + ".png"))
            print("%s.png: %d KB (page %d x %d px)" % (name, os.path.getsize(os.path.join(out, name + ".png"))
                                                       // 1024, m["innerWidth"], m["scrollHeight"]))


if __name__ == "__main__":
    main()
