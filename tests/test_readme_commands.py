"""Every command of the README, as written, on a fresh clone; and every relative link of README.md and docs/.

The clone is `git clone` of this checkout (its committed HEAD). Its `.venv` is what `scripts/setup.sh`
makes, except that the Python packages come from the environment running the tests (a .pth file) instead
of a download: setup.sh itself runs as written and builds the clone's compiled core. Each command runs with
bash in the clone's root and must exit 0; the test suite's own command is the one left out (it is what is
running). Commands that take longer than a few seconds are marked `slow` (all run in CI; the whole file
takes two to four minutes on a loaded 2-core machine)."""
import os
import re
import subprocess
import sys
import sysconfig

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
NOT_RUN = {"bash scripts/test.sh": "the test suite this test is part of (CI runs it)"}
SLOW = ("sweep", "report", "--conf", "nvme", "faults", "reproduce hst-", "setup.sh")
WIDTH = 100
# a dm table as dmsetup or multipathd prints it stays on one line, to be copied whole
TABLE_LINE = re.compile(r"\b(multipath|loaded) \d+ ")


def readme_blocks(text):
    """The commands of each ```sh block: continuation lines joined, trailing comments dropped."""
    blocks = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        cmds = [re.sub(r"\s+#\s.*$", "", line).strip() for line in re.sub(r"\\\n\s*", " ", block).splitlines()]
        blocks.append([c for c in cmds if c])
    return blocks


BLOCKS = readme_blocks(open(README).read())
COMMANDS = [c for b in BLOCKS for c in b]


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    if subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True).returncode != 0:
        pytest.skip("not a git checkout")
    d = tmp_path_factory.mktemp("fresh") / "mpathlab"
    subprocess.run(["git", "clone", "-q", ROOT, str(d)], check=True)
    # .venv as setup.sh leaves it, with this environment's packages instead of a download
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(d / ".venv")], check=True)
    site = subprocess.run([str(d / ".venv/bin/python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(site, "outer-env.pth"), "w") as f:
        f.write("\n".join(p for p in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}) + "\n")
    return d


def test_the_readme_has_the_documented_commands():
    assert "bash scripts/test.sh" in COMMANDS
    assert COMMANDS[0].startswith("bash scripts/setup.sh && ./mpathlab reproduce")
    assert len(COMMANDS) >= 15


@pytest.mark.parametrize("block", [
    pytest.param([c for c in b if c not in NOT_RUN], id=b[0][:50],
                 marks=[pytest.mark.slow] if any(s in c for c in b for s in SLOW) else [])
    for b in BLOCKS if any(c not in NOT_RUN for c in b)])
def test_readme_commands_run_as_written_on_a_fresh_clone(clone, block):
    # one block's commands in order (the sweep's report reads the sweep's CSV)
    env = dict(os.environ, MPATHLAB_CACHE_DIR=str(clone / ".cache"))
    env.pop("PYTHONPATH", None)
    for cmd in block:
        p = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], cwd=str(clone), env=env, capture_output=True,
                           text=True, timeout=600)
        assert p.returncode == 0, "%s\nexit %d\n%s\n%s" % (cmd, p.returncode, p.stdout[-2000:], p.stderr[-2000:])
        assert p.stdout.strip() or " -o " in cmd, cmd
        assert "Traceback" not in p.stderr, p.stderr[-2000:]
        wide = [l for l in p.stdout.splitlines() if len(l) > WIDTH and not TABLE_LINE.search(l)]
        assert not wide, "%s: lines over %d columns:\n%s" % (cmd, WIDTH, "\n".join(wide[:5]))


# -- links ----------------------------------------------------------------------------------------------------

def _anchors(path):
    """GitHub's anchors for the headings of a Markdown file."""
    out, fence = set(), False
    for line in open(path):
        if line.startswith("```"):
            fence = not fence
        m = None if fence else re.match(r"#{1,6}\s+(.*)", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            n = 1
            base = slug
            while slug in out:
                slug, n = "%s-%d" % (base, n), n + 1
            out.add(slug)
    return out


def _markdown_files():
    files = [README] + [os.path.join(ROOT, "docs", f) for f in sorted(os.listdir(os.path.join(ROOT, "docs")))
                        if f.endswith(".md")]
    return files


def _links(path):
    text = re.sub(r"```.*?```", "", open(path).read(), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return re.findall(r"\]\(([^)\s]+)\)", text)


def test_every_relative_link_and_anchor_resolves():
    bad = []
    checked = 0
    for md in _markdown_files():
        for link in _links(md):
            if re.match(r"[a-z]+:", link):
                continue            # http(s), mailto: not checked offline
            target, _, anchor = link.partition("#")
            path = os.path.normpath(os.path.join(os.path.dirname(md), target)) if target else md
            checked += 1
            if not os.path.exists(path):
                bad.append("%s: %s (no such file)" % (os.path.relpath(md, ROOT), link))
            elif anchor and (not path.endswith(".md") or anchor not in _anchors(path)):
                bad.append("%s: %s (no such heading)" % (os.path.relpath(md, ROOT), link))
    assert checked >= 30
    assert not bad, "\n".join(bad)


def test_the_link_check_sees_a_broken_anchor(tmp_path):
    p = tmp_path / "a.md"
    p.write_text("# Title\n## Simulating: topology and job files\n")
    assert _anchors(str(p)) == {"title", "simulating-topology-and-job-files"}


def test_every_docs_page_is_one_click_from_the_readme():
    linked = {os.path.normpath(l.partition("#")[0]) for l in _links(README)}
    pages = {os.path.join("docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md")}
    assert pages <= linked, sorted(pages - linked)


def test_the_readme_stays_short():
    assert len(open(README).read().splitlines()) <= 250


def test_no_development_issue_numbers_or_paths_outside_the_repository():
    # the product's text cites public sources, never the development tracker or a machine's folders
    rule = re.compile(r"shared/|issue [0-9]")
    files = subprocess.run(["git", "-C", ROOT, "ls-files", "src", "README.md", "docs", "bench"],
                           capture_output=True, text=True, check=True).stdout.split()
    assert len(files) > 50
    hits = []
    for f in files:
        try:
            text = open(os.path.join(ROOT, f), encoding="utf-8").read()
        except (UnicodeDecodeError, FileNotFoundError):
            continue            # binary (the screenshots) or deleted in the tree
        hits += ["%s:%d: %s" % (f, n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if rule.search(line)]
    assert not hits, "\n".join(hits)
    assert rule.search("as reported in issue 14") and rule.search("../shared/kernel-lab")
