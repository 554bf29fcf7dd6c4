"""Cross-references are precise: a docs page names another page as a link (the link check in
tests/test_readme_commands.py then resolves it and its anchor), and the source and the scenario files point
to the docs page that explains a thing, never to "the README"."""
import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def plain_references(text):
    """(line, reference) of each page named outside a Markdown link, a code block or a command."""
    text = re.sub(r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"\[[^\]]*\]\([^)]*\)", lambda m: "\n" * m.group(0).count("\n"), text)
    # a command in backticks may name a file; a lone `docs/x.md` in backticks is still a plain reference
    text = re.sub(r"`[^`]*`", lambda m: m.group(0) if not re.search(r"\s", m.group(0))
                  else "\n" * m.group(0).count("\n"), text)
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        out += [(i, m.group(1)) for m in re.finditer(r"(?<![\w/.-])((?:docs/)?[\w-]+\.md(?:#[\w-]+)?)", line)]
        out += [(i, "README") for _ in re.finditer(r"\b(?:see|in) (?:the )?README\b", line)]
    return out


def test_docs_pages_name_each_other_by_link():
    pages = {os.path.basename(f) for f in glob.glob(os.path.join(ROOT, "docs", "*.md"))}
    bad = ["%s:%d: %s" % (os.path.relpath(f, ROOT), i, ref)
           for f in sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))) + [os.path.join(ROOT, "README.md")]
           for i, ref in plain_references(open(f).read())
           if ref == "README" or os.path.basename(ref.partition("#")[0]) in pages | {"README.md"}]
    assert bad == []


def test_the_check_sees_a_plain_reference():
    assert plain_references("as chosen (docs/faults.md) and [ok](faults.md)\n`x docs/y.md`\nsee the README\n") == [
        (1, "docs/faults.md"), (3, "README")]


def test_source_and_scenarios_point_to_a_docs_page_not_the_readme():
    bad = []
    for pattern in ("src/**/*.py", "src/**/*.toml", "src/**/*.fio"):
        for f in glob.glob(os.path.join(ROOT, pattern), recursive=True):
            rel = os.path.relpath(f, ROOT)
            for i, line in enumerate(open(f, encoding="utf-8"), 1):
                if re.search(r"README(?!\.md)", line) and "README.md" not in line:
                    bad.append("%s:%d: %s" % (rel, i, line.strip()))
    assert bad == []
