#!/usr/bin/env python3
"""Generate mpathlab's multipath-tools profile data from a real `multipath -t`.

    scripts/gen-mtools-tables.py VERSION MULTIPATH [--man MANPAGE] [--source TEXT]

MULTIPATH is the binary (/sbin/multipath of a distribution package, or PREFIX/sbin/multipath built by
scripts/build-mtools-upstream.sh); it is run through scripts/mtools-oracle.sh.  Written to
src/mpathlab/mtools/data/multipath-tools-VERSION.json:

- "config": `multipath -t` with no multipath.conf, as a tree: the internal defaults, the built-in
  blacklist and blacklist_exceptions, every built-in device entry (the hardware table), overrides;
- "keywords": for each section, the keywords the binary accepts, in the order it prints them, and whether it
  prints a numeric value quoted (a string keyword) or bare (a number keyword).  Found by probing: a
  configuration that sets every candidate keyword (from the man page and the printed defaults) to 1 in one
  section; the keywords the binary calls invalid are not in the set, the others are printed in its order.

Only facts about the binary's output are stored (keyword names, vendor/product strings and settings).
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORACLE = os.path.join(ROOT, "scripts", "mtools-oracle.sh")
OUTDIR = os.path.join(ROOT, "src", "mpathlab", "mtools", "data")

# keywords to try besides the man page's: old names and options some versions have
EXTRA = ("checker mode uid gid detect_pgpolicy detect_pgpolicy_use_tpg auto_resize purge_disconnected "
         "queue_mode multipath_dir config_dir getuid_callout default_selector selector user_friendly_names "
         "max_sectors_kb pg_timeout flush_on_last_del hwhandler rr_min_io_rq no_path_retry "
         "skip_kpartx uid_attrs vpd_vendor all_tg_pt reservation_key").split()
SECTIONS = ("defaults", "blacklist", "blacklist_exceptions", "devices", "overrides", "multipaths")


def run_oracle(binary: str, text: str):
    with tempfile.TemporaryDirectory() as d:
        conf = os.path.join(d, "multipath.conf")
        with open(conf, "w") as f:
            f.write(text)
        out = os.path.join(d, "o")
        subprocess.run(["bash", ORACLE, binary, conf if text else "-", out], check=True)
        with open(out + ".stdout") as f:
            stdout = f.read()
        with open(out + ".stderr") as f:
            stderr = f.read()
        with open(out + ".rc") as f:
            rc = int(f.read().strip() or "0")
    return stdout, stderr, rc


_KV = re.compile(r'^(\S+)\s+(?:"(.*)"|(\S+))$')


def parse_printed(text: str):
    """The tree of `multipath -t` output: a list of [key, value, quoted] and {"section", "body"}."""
    root: list = []
    stack = [root]
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s:
            continue
        if s == "}":
            stack.pop()
            continue
        if s.endswith("{"):
            node = {"section": s[:-1].strip(), "body": []}
            stack[-1].append(node)
            stack.append(node["body"])
            continue
        m = _KV.match(s)
        if not m:
            raise SystemExit("line %d of multipath -t output not understood: %r" % (n, line))
        quoted = m.group(2) is not None
        stack[-1].append([m.group(1), m.group(2) if quoted else m.group(3), quoted])
    return root


def man_keywords(path: str):
    if not path:
        return []
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", errors="replace") as f:
        lines = f.read().splitlines()
    out = []
    for a, b in zip(lines, lines[1:]):
        if a.startswith(".TP") and b.startswith(".B "):
            w = b.split()[1]
            if re.fullmatch(r"[a-z_0-9]+", w):
                out.append(w)
    return out


def section_of(tree, name):
    for node in tree:
        if isinstance(node, dict) and node["section"] == name:
            return node["body"]
    return []


def probe(binary, candidates, wrap_open, wrap_close, values=None):
    """Set every candidate to 1 (or to values[k]) inside wrap; return (accepted keywords, the binary's
    invalid-keyword set, stdout, stderr)."""
    head = wrap_open.count("\n")
    values = values or {}
    lines = ['%s "%s"' % (k, values[k]) if k in values else "%s 1" % k for k in candidates]
    text = wrap_open + "\n".join(lines) + "\n" + wrap_close
    stdout, stderr, _ = run_oracle(binary, text)
    invalid = set()
    for ln in stderr.splitlines():
        m = re.search(r"line (\d+), invalid keyword(?: in the \S+ section)?: (\S+)", ln)
        if m:
            invalid.add(candidates[int(m.group(1)) - head - 1])
    accepted = [k for k in candidates if k not in invalid]
    return accepted, invalid, stdout, stderr


def printed_order(body, path):
    """Keys printed at a path of nested section names (the first block of each)."""
    for name in path:
        body = section_of(body, name)
    return [(n[0], n[2]) for n in body if isinstance(n, list)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("version")
    ap.add_argument("binary")
    ap.add_argument("--man", default="", help="multipath.conf(5) of this version (keyword candidates)")
    ap.add_argument("--source", default="", help="where the binary came from (stored in the data)")
    a = ap.parse_args()
    stdout, stderr, rc = run_oracle(a.binary, "")
    if rc != 0:
        raise SystemExit("multipath -t failed (rc %d): %s" % (rc, stderr))
    tree = parse_printed(stdout)
    seen = set()
    cands = []
    for k in man_keywords(a.man) + EXTRA + [n[0] for n in section_of(tree, "defaults")] + [
            n[0] for dev in section_of(tree, "devices") for n in dev["body"]]:
        if k not in seen and k not in SECTIONS and k not in ("device", "multipath", "protocol"):
            seen.add(k)
            cands.append(k)
    probes = {
        "defaults": ("defaults {\n", "}\n", ["defaults"]),
        "device": ("devices {\ndevice {\n", "}\n}\n", ["devices", "device"]),
        "overrides": ("overrides {\n", "}\n", ["overrides"]),
        "protocol": ("overrides {\nprotocol {\n", "}\n}\n", ["overrides", "protocol"]),
        "multipath": ("multipaths {\nmultipath {\n", "}\n}\n", ["multipaths", "multipath"]),
        "blacklist": ("blacklist {\n", "}\n", ["blacklist"]),
        "blacklist_exceptions": ("blacklist_exceptions {\n", "}\n", ["blacklist_exceptions"]),
        "blacklist_device": ("blacklist {\ndevice {\n", "}\n}\n", None),
    }
    # typical values (the first the binary prints for each key), so that the second probe prints every
    # accepted keyword and its position in the binary's order is seen
    typical = {}
    for node in section_of(tree, "defaults") + [n for dev in section_of(tree, "devices") for n in dev["body"]]:
        if isinstance(node, list):
            typical.setdefault(node[0], node[1])
    typical.update({"vendor": "V", "product": "P", "revision": "R", "product_blacklist": "X", "wwid": "W",
                    "alias": "A", "vpd_vendor": "hp3par", "hardware_handler": "1 alua", "prio": "alua",
                    "prio_args": "exclusive_pref_bit", "path_checker": "tur", "checker": "tur",
                    "type": "scsi:fcp", "devnode": "x", "property": "x", "protocol": "x",
                    "uid_attrs": "sd:ID_SERIAL"})

    def printed_block(out, path):
        body = parse_printed(out)
        for name in path[:-1]:
            body = section_of(body, name)
        # the user's block is the last one of its kind (devices: after the built-in table)
        blocks = [n for n in body if isinstance(n, dict) and n["section"] == path[-1]]
        return [(n[0], n[2]) for n in blocks[-1]["body"] if isinstance(n, list)] if blocks else []

    keywords = {}
    for sec, (op, cl, path) in probes.items():
        cset = cands + ["protocol"] if sec.startswith("blacklist") else cands
        accepted, invalid, out, err = probe(a.binary, cset, op, cl)
        entry = {"accepted": accepted}
        if sec == "defaults":
            # deprecated keywords: accepted, ignored, with the built-in value 0.10+ names
            dep = {}
            for ln in err.splitlines():
                m = re.search(r'ignoring deprecated option "([^"]+)"(?:, using built-in value: "(.*)")?$', ln)
                if m:
                    dep[m.group(1)] = None if m.group(2) is None else m.group(2).replace(
                        os.path.dirname(os.path.dirname(os.path.abspath(a.binary))) + "/", "/")
            entry["deprecated"] = dep
        if path is not None:
            entry["number_keywords"] = sorted(k for k, q in printed_block(out, path) if not q)
            _, _, out2, _ = probe(a.binary, accepted, op, cl, typical)
            printed2 = printed_block(out2, path)
            entry["printed_order"] = [k for k, _ in printed2]
            # string keywords printed without quotes
            entry["bare_keywords"] = sorted(k for k, q in printed2 if not q and not re.fullmatch(r"-?\d+", typical.get(k, "1")))
        keywords[sec] = entry
    doc = {
        "version": a.version,
        "source": a.source or a.binary,
        "generated_by": "scripts/gen-mtools-tables.py from `multipath -t` (no multipath.conf) and keyword "
                        "probes; facts only (keyword names, vendor/product strings, settings)",
        "hwtable_entries": len(section_of(tree, "devices")),
        "blacklist_device_entries": sum(1 for n in section_of(tree, "blacklist")
                                        if isinstance(n, dict) and n["section"] == "device"),
        "config": tree,
        "keywords": keywords,
    }
    os.makedirs(OUTDIR, exist_ok=True)
    path = os.path.join(OUTDIR, "multipath-tools-%s.json" % a.version)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print("%s: %d device entries, %d built-in blacklist devices, %d defaults" % (
        path, doc["hwtable_entries"], doc["blacklist_device_entries"], len(section_of(tree, "defaults"))))


if __name__ == "__main__":
    sys.exit(main())
