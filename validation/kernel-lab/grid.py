#!/usr/bin/env python3
"""Driver of the kernel-lab validation grid (host side).

    grid.py plan [BATCH...] [--rep N]    print the runs.txt the guest gets for these batches
    grid.py run BATCH... [--rep N] [--runtime S] [--runs-dir DIR]
                                         boot the lab once, run the batches N times (default 1) inside that boot,
                                         summarise each run into runs/<batches>-<kernel>-<stamp>/runs/<run>/summary.json,
                                         then rebuild results.json
    grid.py draw SEED FIRST              draw a held-out set with a fixed seed: topo files H<FIRST>..., its batch entry
    grid.py summarise RUNDIR             print the summary of one raw run folder (JSON)
    grid.py collect [--md] [--readme]    rebuild results.json and TABLE.md from every runs/*/runs/*/summary.json
    grid.py compare [--model]            cells run on both kernels: the 6.12 - 6.1 difference against the noise
    grid.py boots                        cells run in several boots: the boots' means against the spread within one
    grid.py spread FIRST LAST            the held-out cells H<FIRST>..H<LAST> whose repeats spread: the batch entry
                                         that gives them three more repeats

run, collect, resummarise, compare, boots and spread take --icount: the deterministic lab (qemu's instruction counter
as the guest's clock, one vCPU), whose boots go to runs-icount/ and whose cells to results-icount.json and
TABLE-icount.md; without it, the emulated lab of runs/, results.json and TABLE.md.

The lab is the one lab/setup.sh made: KLAB_DIR, or klab-<KLAB_KERNEL> (6.1 by default) in $TMPDIR (or /tmp).
The kernel series of every run is read from the guest (uname -r); results.json keeps one cell per kernel series.
One qemu at a time: the measurements are timing-sensitive.
"""
import argparse, json, math, os, re, shutil, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
# the repository's own mpathlab, for the commands that predict (spread, compare --model) or end on a closed pipe
SRC = os.path.join(HERE, '..', '..', 'src')
EXP = os.path.join(HERE, 'experiments', 'grid')
RUNS = os.path.join(HERE, 'runs')
# what collect writes, in HERE
RESULTS, FAULT_RESULTS, TABLE = 'results.json', 'results-faults.json', 'TABLE.md'
LAB = os.path.join(HERE, 'lab')
# The deterministic lab (--icount): qemu counts the guest's instructions as its clock (-icount shift=0,
# sleep=off), so every timer fires when due in guest time and the host's load moves only the wall clock.
# One vCPU: qemu 7.2 with -icount stops at bringing up a second one.
ICOUNT_ENV = {'KLAB_ACCEL': 'icount', 'KLAB_SMP': '1'}


def use_icount_lab():
    """Point RUNS, RESULTS, FAULT_RESULTS and TABLE at the deterministic lab's files."""
    global RUNS, RESULTS, FAULT_RESULTS, TABLE
    RUNS = os.path.join(HERE, 'runs-icount')
    RESULTS, FAULT_RESULTS, TABLE = 'results-icount.json', 'results-faults-icount.json', 'TABLE-icount.md'
SEL = {'rr': 'round-robin', 'ql': 'queue-length', 'st': 'service-time', 'hst': 'historical-service-time'}
ABBR = {v: k for k, v in SEL.items()}


def _cells(topo, sels, modes, depths):
    return [(topo, s, m, d) for d in depths for s in sels for m in modes]


def _held_out(*rows):
    """A held-out set's cells: per (topology, selector, depth) that selector and historical-service-time,
    request-based and bio-based."""
    return [cell for topo, sel, depth in rows for cell in _cells(topo, [sel, 'hst'], ['mq', 'bio'], [depth])]


def _hst_cells(*rows):
    """Historical-service-time cells, one per (topology, queue mode, depth)."""
    return [cell for topo, mode, depth in rows for cell in _cells(topo, ['hst'], [mode], [depth])]


# What draw picks from: the held-out sets' ranges (completion times in ms, path queue depths, fio depths)
DRAW_MS = (1, 2, 3, 4, 5, 6, 7, 8, 10)
DRAW_TAGS = (1, 2, 3, 4, 6, 8, 12, 16, 20, 24, 32, 48, 64, None)     # None: null_blk's default (unlimited here)
DRAW_DEPTHS = (8, 16, 20, 24, 32, 40, 48, 64)


def draw_held_out(seed, first, count=10, of_class=7):
    """COUNT topologies named H<FIRST>... drawn with random.Random(SEED): the first OF_CLASS of one completion
    time and 2-4 paths of different queue depths (the same-latency/different-depth class), the rest 2-3 paths of
    different completion times.  Returns [(name, [(ns, tags or None), ...], selector abbreviation, fio depth)]."""
    import random
    rng = random.Random(seed)
    drawn = []
    for i in range(count):
        if i < of_class:
            n = rng.randint(2, 4)
            ms = [rng.choice(DRAW_MS)] * n
            tags = rng.sample(DRAW_TAGS, n)          # all different
        else:
            n = rng.randint(2, 3)
            ms = rng.sample(DRAW_MS, n)
            tags = [rng.choice(DRAW_TAGS) for _ in range(n)]
        drawn.append(('H%d' % (first + i), [(m * 1000000, t) for m, t in zip(ms, tags)],
                      rng.choice(('ql', 'st')), rng.choice(DRAW_DEPTHS)))
    return drawn


def topology_text(paths):
    """A topo/*.txt file: a line per path, its name, completion time (ns) and queue depth if limited."""
    return ''.join('p%d %d%s\n' % (i, ns, '' if tags is None else ' %d' % tags) for i, (ns, tags) in enumerate(paths))


BATCHES = {
    'smoke': _cells('T4q', ['st'], ['mq', 'bio'], [64]),  # a boot test (--runtime 3); collect leaves it out
    # single path and two paths: the emulation cost; selector irrelevant (rr) with identical paths
    'calib': (_cells('c0', ['rr'], ['mq', 'bio'], [1, 64]) + _cells('c1', ['rr'], ['mq', 'bio'], [1, 64])
              + _cells('c4', ['rr'], ['mq', 'bio'], [1, 64]) + _cells('c0x2', ['rr'], ['mq', 'bio'], [1, 64])
              + _cells('c4x2', ['rr'], ['mq', 'bio'], [1, 64])),
    # depth 1 on one path: the wake-up part of the emulation cost (run once plain, once with --append idle=poll)
    'calib1': _cells('c0', ['rr'], ['mq', 'bio'], [1]) + _cells('c4', ['rr'], ['mq', 'bio'], [1]),
    'T4q': _cells('T4q', ['rr', 'ql', 'st', 'hst'], ['mq', 'bio'], [64]) + _cells('T4q', ['st', 'hst'], ['mq', 'bio'], [1]),
    'T4u': _cells('T4u', ['rr', 'ql', 'st', 'hst'], ['mq', 'bio'], [64, 1]),
    'T10': _cells('T10', ['rr', 'ql', 'st', 'hst'], ['mq', 'bio'], [64]),
    # T4q between depth 1 and 64: below, at and above the 16 tags of the four paths
    'T4qd': _cells('T4q', ['rr', 'st'], ['mq', 'bio'], [8, 16, 32]),
    # mixed queue depths, equal completion times: does a selector that ignores tags keep choosing a full path?
    'Tmix': _cells('Tmix', ['rr', 'ql', 'st', 'hst'], ['mq', 'bio'], [64]),
    # same completion time, different queue depths (null_blk hw_queue_depth): two paths at depth ratios
    # 1:4, 2:8, 4:16, 1:8, 8:32, then three and four paths mixing depths; hst/st/ql (rr for reference)
    'depth2': (_cells('D1-4', ['hst', 'st', 'ql'], ['mq', 'bio'], [16]) + _cells('D1-4', ['hst'], ['mq', 'bio'], [4])
               + _cells('D2-8', ['rr', 'ql', 'st', 'hst'], ['mq', 'bio'], [32])
               + _cells('D4-16', ['st', 'hst'], ['mq', 'bio'], [64])
               + _cells('D1-8', ['ql', 'hst'], ['mq', 'bio'], [64])
               + _cells('D8-32', ['hst'], ['mq', 'bio'], [48, 8])),
    'depthN': (_cells('D1-4-16', ['ql', 'st', 'hst'], ['mq', 'bio'], [32])
               + _cells('D1-2-4-8', ['st', 'hst'], ['mq', 'bio'], [64]) + _cells('D1-2-4-8', ['hst'], ['mq', 'bio'], [1])),
    # more repeats of the depthN cells where HST's repeats spread widely (3 and 4 paths, depth 32/64)
    'depthNhst': _cells('D1-4-16', ['hst'], ['mq', 'bio'], [32]) + _cells('D1-2-4-8', ['hst'], ['mq', 'bio'], [64]),
    # held out: topologies fixed (and committed) before the model that predicts them was final, run last
    'heldout': (_cells('H1', ['ql', 'st', 'hst'], ['mq', 'bio'], [24])
                + _cells('H2', ['st', 'hst'], ['mq', 'bio'], [48])
                + _cells('H3', ['hst'], ['mq', 'bio'], [16])
                + _cells('H4', ['st', 'hst'], ['mq', 'bio'], [32])
                + _cells('H5', ['st', 'hst'], ['mq'], [64]) + _cells('H5', ['hst'], ['bio'], [64])
                + _cells('H6', ['st'], ['mq'], [8]) + _cells('H6', ['hst'], ['bio'], [8])),
    # a second held-out set, fixed (and committed) before it ran, with the model frozen at that commit:
    # H7 two latencies, same tags; H8 two shallow fast paths and a deep slow one; H9 same latency, 3 vs 6
    # tags; H10 four paths of three latencies, 8 tags each; H11 two latencies, unlimited tags; H12 two
    # shallow paths of one latency (2 and 6 tags) and a deep slower one
    'heldout2': _held_out(
        ('H7', 'st', 32), ('H8', 'ql', 24), ('H9', 'st', 16), ('H10', 'st', 48), ('H11', 'ql', 16),
        ('H12', 'st', 40)),
    # a third held-out set, fixed (and committed) before it ran, with the model frozen at that commit (ten
    # topologies, six of them the same-latency/different-depth class): H13 2 ms, 2 vs 12 tags; H14 8 ms, 4, 4
    # and 16 tags; H15 3 ms, 1 vs 6 tags; H16 a fast path and two slower ones of 8 and 2 tags; H17 four 5 ms
    # paths of 3, 3, 6 and 12 tags; H18 1 ms with 4 tags against 10 ms with 32; H19 6 ms, unlimited vs 4
    # tags; H20 2, 4 and 8 ms, 16 tags each; H21 10 ms, 2 vs 10 tags; H22 two 3 ms paths of 6 tags and a
    # 9 ms one of 2
    'heldout3': _held_out(
        ('H13', 'ql', 24), ('H14', 'st', 32), ('H15', 'st', 8), ('H16', 'ql', 24), ('H17', 'st', 48),
        ('H18', 'st', 40), ('H19', 'ql', 16), ('H20', 'st', 32), ('H21', 'st', 24), ('H22', 'ql', 16)),
    # a fourth held-out set, fixed (and committed) before it ran, with the model frozen at that commit (eight
    # topologies, four of them the same-latency/different-depth class): H23 1 ms, 4 vs 16 tags; H24 4 ms, 8, 8
    # and 2 tags; H25 3 ms against 12 ms, unlimited tags; H26 two 2 ms paths of 4 tags and two 5 ms of 8; H27
    # 8 ms, 6 vs 24 tags; H28 1 ms with 2 tags against two 3 ms of 8; H29 5 ms, 3 tags vs unlimited; H30 2 ms
    # and two 4 ms paths, 8 tags each
    'heldout4': _held_out(
        ('H23', 'st', 32), ('H24', 'ql', 16), ('H25', 'st', 8), ('H26', 'ql', 32), ('H27', 'st', 48),
        ('H28', 'st', 24), ('H29', 'ql', 12), ('H30', 'st', 16)),
    # a fifth held-out set, fixed (and committed) before it ran and before the request-based dispatch time
    # entered the model, for the deterministic lab (grid.py run --icount); seven of its ten topologies are the
    # same-latency/different-depth class: H31 1 ms, 2 vs 8 tags; H32 4 ms, 3 vs 12; H33 2 ms, 2, 4 and 16;
    # H34 6 ms, 8 tags vs unlimited; H35 3 ms, 5 vs 20; H36 1 ms with 4 tags against 2 ms with 16; H37 four
    # 5 ms paths of 2, 2, 8 and 8 tags; H38 2 ms and 6 ms of 6 tags and 2 ms of 2; H39 10 ms, 1 vs 4 tags;
    # H40 3 ms of 4 and 12 tags and 9 ms of 12
    'heldout5': _held_out(
        ('H31', 'ql', 16), ('H32', 'st', 32), ('H33', 'st', 24), ('H34', 'ql', 40), ('H35', 'st', 48),
        ('H36', 'st', 24), ('H37', 'ql', 32), ('H38', 'st', 16), ('H39', 'st', 8), ('H40', 'ql', 32)),
    # a sixth held-out set for the deterministic lab, fixed (and committed) before it ran and before any model
    # change after the dispatch time was tried; seven of ten the same-latency/different-depth class: H41 4 ms,
    # 8 vs 32 tags; H42 2 ms, 3, 3 and 24; H43 1 ms of 16 tags, 3 ms of 16 and of 4; H44 7 ms, 12 vs 48; H45
    # 5 ms, 10 tags vs unlimited; H46 2 ms of 2 tags against 4 ms of 24; H47 four 3 ms paths of 4, 8, 16 and
    # 16 tags; H48 two 6 ms paths and a 12 ms one, 16 tags each; H49 1 ms, 6 vs 20; H50 8 ms, 2, 10 and 10
    'heldout6': _held_out(
        ('H41', 'st', 40), ('H42', 'ql', 24), ('H43', 'st', 32), ('H44', 'ql', 64), ('H45', 'st', 24),
        ('H46', 'st', 16), ('H47', 'ql', 40), ('H48', 'st', 48), ('H49', 'st', 24), ('H50', 'ql', 20)),
    # a seventh, committed before it ran with the model unchanged since the sixth (seven of ten the class): H51
    # 5 ms, 4 vs 24 tags; H52 1 ms, 3 vs 9; H53 3 ms, 2, 6 and 6; H54 2 ms of 8 tags, 5 ms of 8 and of 2; H55
    # 6 ms, 16 vs 64; H56 4 ms, 6 tags vs unlimited; H57 1 ms of 2 tags against 3 ms of 12; H58 four 2 ms paths
    # of 1, 3, 6 and 12 tags; H59 10 ms, 8 vs 20; H60 3 ms, 6 ms and 12 ms of 6, 6 and 24 tags
    'heldout7': _held_out(
        ('H51', 'st', 32), ('H52', 'ql', 16), ('H53', 'st', 20), ('H54', 'ql', 24), ('H55', 'st', 64),
        ('H56', 'ql', 32), ('H57', 'st', 16), ('H58', 'ql', 32), ('H59', 'st', 40), ('H60', 'ql', 40)),
    # an eighth, committed before it ran and before any model change after the seventh (seven of ten the class):
    # H61 2 ms, 4 vs 16 tags; H62 5 ms, 2 vs 6; H63 1 ms, 8, 8 and 32; H64 3 ms of 4 tags against 6 ms of 16;
    # H65 4 ms, 3, 12 and unlimited; H66 7 ms, 1 vs 8; H67 2 ms and two 4 ms paths, 8 tags each; H68 four 4 ms
    # paths of 2, 4, 8 and 16 tags; H69 8 ms, 12 vs 32; H70 1 ms of 6 tags, 2 ms of 6 and of 2
    'heldout8': _held_out(
        ('H61', 'st', 32), ('H62', 'ql', 16), ('H63', 'st', 48), ('H64', 'st', 24), ('H65', 'ql', 32),
        ('H66', 'st', 16), ('H67', 'ql', 20), ('H68', 'st', 40), ('H69', 'ql', 48), ('H70', 'st', 24)),
    # a ninth, committed before it ran, with the model unchanged since the sixth; drawn with Python's
    # random.Random(2026120709) (seven of ten the class: one latency, 2-4 paths of different depths): H71 4 ms,
    # 4, 6 and 3 tags; H72 10 ms, 1, 24 and 48; H73 3 ms, 3, 12 and 16; H74 10 ms, 12 vs unlimited; H75 1 ms,
    # 24 vs 3; H76 1 ms, 1 vs 32; H77 4 ms, 3, 12 and 16; H78 6 ms of 64 tags, 8 ms unlimited; H79 5 ms of 64,
    # 3 ms of 48; H80 6 ms of 48, 8 ms of 16
    'heldout9': _held_out(
        ('H71', 'ql', 64), ('H72', 'ql', 24), ('H73', 'ql', 24), ('H74', 'st', 48), ('H75', 'st', 20),
        ('H76', 'st', 32), ('H77', 'st', 48), ('H78', 'ql', 40), ('H79', 'st', 20), ('H80', 'ql', 24)),
    # a tenth, committed before it ran, with the model unchanged since the sixth; drawn by `grid.py draw 2026120745
    # 81` (the ninth was drawn by an earlier procedure, not kept): H81 10 ms, 2 vs 24 tags; H82 6 ms, 1 vs 24; H83
    # 4 ms, unlimited vs 32; H84 5 ms, unlimited vs 12; H85 6 ms, 12, 24, 8 and 3; H86 3 ms, 1 vs 32; H87 6 ms, 64,
    # 6 and 3; then H88 3 ms and 8 ms unlimited; H89 10 ms of 20 tags, 2 ms of 4; H90 5 ms of 12, 6 ms of 2
    'heldout10': _held_out(
        ('H81', 'st', 40), ('H82', 'st', 40), ('H83', 'ql', 8), ('H84', 'st', 24), ('H85', 'st', 16),
        ('H86', 'st', 8), ('H87', 'ql', 48), ('H88', 'ql', 24), ('H89', 'st', 24), ('H90', 'st', 64)),
    # an eleventh, the same way (`grid.py draw 2026120746 91`), committed before it ran, the model unchanged: H91 8 ms,
    # 48 vs 20 tags; H92 10 ms, 6, unlimited and 1; H93 2 ms, 24, 32 and 64; H94 10 ms, unlimited vs 1; H95 4 ms, 8,
    # 48, unlimited and 6; H96 10 ms, unlimited, 1 and 6; H97 1 ms, 48, 32 and 8; then H98 10 ms of 16 tags, 5 ms
    # of 32; H99 3 ms of 64, 7 ms of 3; H100 10 ms of 4, 8 ms of 8
    'heldout11': _held_out(
        ('H91', 'ql', 8), ('H92', 'ql', 48), ('H93', 'ql', 16), ('H94', 'ql', 16), ('H95', 'ql', 20),
        ('H96', 'ql', 24), ('H97', 'ql', 24), ('H98', 'ql', 40), ('H99', 'st', 20), ('H100', 'ql', 24)),
    # a twelfth (`grid.py draw 2026120747 101`), committed before it ran, the model unchanged; judged with paths
    # equivalent when their tags cannot fill (validate._groups): H101 7 ms, 24 vs 8 tags; H102 1 ms, 8, 48 and 4;
    # H103 2 ms, 6, 48, unlimited and 12; H104 10 ms, 6, 12 and unlimited; H105 4 ms, 3, 32, 16 and 12; H106 10 ms,
    # 32, 24 and 20; H107 10 ms, 24 vs 2; then H108 1 ms of 12 tags, 4 ms of 8; H109 8 ms of 4, 7 ms of 32; H110
    # 1 ms of 32, 8 ms of 24, 6 ms of 12
    'heldout12': _held_out(
        ('H101', 'ql', 20), ('H102', 'st', 20), ('H103', 'st', 20), ('H104', 'ql', 8), ('H105', 'ql', 8),
        ('H106', 'ql', 8), ('H107', 'ql', 48), ('H108', 'ql', 24), ('H109', 'st', 48), ('H110', 'st', 48)),
    # a thirteenth (`grid.py draw 2026120748 111`), committed before it ran, to judge the timer modes (validate
    # --timers; docs/validation.md): H111 4 ms, unlimited, 6, 2 and 8 tags; H112 8 ms, 6, 32, 8 and 20; H113 7 ms,
    # 24, 12, 2 and 6; H114 3 ms, unlimited vs 16; H115 5 ms, 32, 2 and 3; H116 4 ms, 24 vs 6; H117 1 ms, 8 vs 1;
    # then H118 5 ms of 4 tags, 7 ms and 3 ms unlimited; H119 6 ms of 32, 2 ms of 3; H120 3 ms of 6, 1 ms of 4,
    # 10 ms of 8
    'heldout13': _held_out(
        ('H111', 'st', 8), ('H112', 'ql', 32), ('H113', 'st', 20), ('H114', 'st', 8), ('H115', 'st', 40),
        ('H116', 'ql', 64), ('H117', 'ql', 32), ('H118', 'ql', 32), ('H119', 'st', 48), ('H120', 'st', 8)),
    # a fourteenth (`grid.py draw 2026120749 121`), committed before it ran, to judge a prediction made of four model
    # runs (validate --runs 4; docs/validation.md): H121 7 ms, 6 vs 4 tags; H122 5 ms, 64, 2, 48 and 4; H123 1 ms, 4,
    # 3 and 6; H124 1 ms, 20, 16 and unlimited; H125 6 ms, 8, 2, unlimited and 1; H126 10 ms, 48, 6, 20 and 12; H127
    # 10 ms, unlimited, 2 and 12; then H128 7 ms of 2 tags, 2 ms of 1; H129 5 ms of 32, 4 ms of 24, 2 ms of 32; H130
    # 4 ms of 12, 10 ms of 8, 2 ms of 64
    'heldout14': _held_out(
        ('H121', 'st', 20), ('H122', 'st', 32), ('H123', 'st', 48), ('H124', 'ql', 64), ('H125', 'st', 32),
        ('H126', 'st', 48), ('H127', 'st', 32), ('H128', 'st', 8), ('H129', 'st', 32), ('H130', 'ql', 8)),
    # a fifteenth (`grid.py draw 2026120750 131`), committed before it ran, the model unchanged (no candidate to
    # judge): H131 10 ms, 32 vs 12 tags; H132 7 ms, 8, 16, 3 and 24; H133 1 ms, 24, unlimited and 8; H134 6 ms, 2, 64
    # and unlimited; H135 4 ms, 20, 32 and 1; H136 3 ms, unlimited vs 1; H137 2 ms, 2 vs 32; then H138 3 ms of 1 tag,
    # 4 ms of 6, 5 ms of 2; H139 3 ms of 48, 1 ms of 32; H140 2 ms of 32, 10 ms of 4
    'heldout15': _held_out(
        ('H131', 'st', 8), ('H132', 'ql', 48), ('H133', 'ql', 16), ('H134', 'ql', 48), ('H135', 'ql', 48),
        ('H136', 'ql', 24), ('H137', 'ql', 20), ('H138', 'ql', 16), ('H139', 'st', 40), ('H140', 'ql', 24)),
    # a sixteenth (`grid.py draw 2026120751 141`), committed before it ran; it judges the model as committed
    # before its results are read (the candidate: a completion's CPU time as interrupt work): H141 6 ms, 16 vs
    # 20 tags; H142 3 ms, 6, 3, 32 and 1; H143 7 ms, 4, 48, 12 and 16; H144 5 ms, unlimited, 20, 32 and 2; H145
    # 1 ms, 16, 20 and 1; H146 1 ms, 24, 2, 48 and 12; H147 6 ms, 3, 16 and 1; then H148 2 ms of 2 tags, 5 ms
    # of 16; H149 8 ms of 64, 7 ms of 12, 2 ms of 4; H150 4 ms and 8 ms of 4 tags each
    'heldout16': _held_out(
        ('H141', 'st', 24), ('H142', 'st', 8), ('H143', 'ql', 20), ('H144', 'st', 48), ('H145', 'ql', 20),
        ('H146', 'ql', 16), ('H147', 'ql', 16), ('H148', 'st', 64), ('H149', 'st', 40), ('H150', 'ql', 40)),
    # a seventeenth (`grid.py draw 2026120852 151`), committed before it ran, judging the model as committed
    # before its results are read: H151 6 ms, 4, 6, 8 and 48 tags; H152 4 ms, 20, 4, 48 and 1; H153 4 ms, 16,
    # 3, 20 and 24; H154 6 ms, 1 vs 48; H155 1 ms, 16 vs 20; H156 5 ms, 2, 20 and unlimited; H157 3 ms, 6 vs
    # 48; then H158 6 ms of 4, 3 ms of 8, 5 ms of 4; H159 10 ms of 2, 7 ms of 16, 3 ms of 8; H160 6 ms of 8,
    # 4 ms of 2, 7 ms of 8
    'heldout17': _held_out(
        ('H151', 'st', 32), ('H152', 'ql', 8), ('H153', 'ql', 32), ('H154', 'ql', 24), ('H155', 'st', 48),
        ('H156', 'ql', 8), ('H157', 'ql', 40), ('H158', 'st', 24), ('H159', 'ql', 8), ('H160', 'ql', 40)),
    # three more repeats of every held-out cell (H1-H60) whose three repeats spread (a path's share with a
    # standard deviation above 0.05) on either kernel: chosen from the kernel's repeats alone, not the model's
    # misses; all historical-service-time, most bio-based
    'spread': _hst_cells(
        ('H2', 'bio', 48), ('H3', 'bio', 16), ('H20', 'bio', 32), ('H23', 'bio', 32), ('H24', 'bio', 16),
        ('H24', 'mq', 16), ('H30', 'mq', 16), ('H33', 'bio', 24), ('H37', 'bio', 32), ('H43', 'bio', 32),
        ('H47', 'bio', 40), ('H48', 'bio', 48), ('H50', 'bio', 20), ('H53', 'bio', 20), ('H58', 'bio', 32),
        ('H60', 'bio', 40)),
    # the same for the eighth held-out set (H61-H70), by the same rule, after both kernels had run it
    'spread8': _hst_cells(
        ('H65', 'bio', 32), ('H66', 'bio', 16), ('H67', 'mq', 20), ('H68', 'bio', 40), ('H70', 'bio', 24)),
    # the same for the ninth (H71-H80), by the same rule, after both kernels had run it (all three spread on 6.12)
    'spread9': _hst_cells(('H71', 'bio', 64), ('H73', 'bio', 24), ('H78', 'mq', 40)),
    # the same for the tenth (H81-H90), by the same rule, after both kernels had run it (both spread on 6.12)
    'spread10': _hst_cells(('H85', 'mq', 16), ('H87', 'bio', 48)),
    # the same for the eleventh (H91-H100), by the same rule, after both kernels had run it (all three spread on 6.1)
    'spread11': _hst_cells(('H92', 'bio', 48), ('H95', 'mq', 20), ('H97', 'bio', 24)),
    # the twelfth set's cells whose three repeats spread (a path's share with a standard deviation above 0.05) on
    # either kernel, by the same rule; H108 queue-length bio is the first such cell of another selector
    'spread12': (_hst_cells(('H103', 'mq', 20), ('H104', 'mq', 8), ('H106', 'bio', 8), ('H106', 'mq', 8))
                 + _cells('H108', ['ql'], ['bio'], [24])),
    # the thirteenth and fourteenth sets' cells whose three repeats spread, by the same rule with equivalent paths
    # ranked (`grid.py spread 111 120 --icount`, `grid.py spread 121 130 --icount`, after both kernels had run them)
    'spread13': _hst_cells(('H112', 'bio', 32), ('H113', 'bio', 20), ('H113', 'mq', 20)),
    'spread14': _hst_cells(('H122', 'bio', 32), ('H125', 'bio', 32), ('H125', 'mq', 32), ('H126', 'bio', 48),
                           ('H127', 'bio', 32)),
    # the fifteenth's, by the same rule (`grid.py spread 131 140 --icount`, after both kernels had run it)
    'spread15': _hst_cells(('H132', 'bio', 48), ('H133', 'mq', 16), ('H134', 'bio', 48), ('H138', 'bio', 16)),
    # the sixteenth's and seventeenth's, by the same rule (`grid.py spread 141 160 --icount`, after both kernels had
    # run them)
    'spread17': _hst_cells(('H143', 'bio', 20), ('H144', 'bio', 48), ('H146', 'bio', 16), ('H151', 'bio', 32),
                           ('H152', 'bio', 8), ('H153', 'bio', 32), ('H158', 'bio', 24)),
    # SCSI paths (scsi_debug LUNs, one LUN behind several hosts): S1 the same-latency/different-depth class with
    # sdev queue_depth 2 and 8; S2 a host limit (can_queue 4) shared by two of three paths of queue_depth 4
    'scsi': (_cells('S1', ['rr', 'ql', 'st', 'hst'], ['mq', 'bio'], [16])
             + _cells('S2', ['rr', 'ql', 'st', 'hst'], ['mq', 'bio'], [32])),
    # block tracepoint counts per device (hist triggers): dm starts vs completions = failed map attempts (mq)
    'trace': ([{'trace': 1, 'tag': '-tr'}] + _cells('T4q', ['rr', 'st', 'hst'], ['mq', 'bio'], [64])
              + _cells('T10', ['rr', 'st'], ['mq', 'bio'], [64]) + _cells('Tmix', ['rr', 'st'], ['mq', 'bio'], [64])
              + [{}]),
    # the same-latency / different-depth class traced: requeues of the dm request (request-based: failed clone
    # allocations on a full path) and path request allocations per device
    'tracedepth': ([{'trace': 1, 'tag': '-tr'}] + _cells('D1-4', ['st', 'hst'], ['mq', 'bio'], [16])
                   + _cells('D2-8', ['ql', 'hst'], ['mq', 'bio'], [32]) + [{}]),
    # HST's inputs as the kernel sees them: every path request's issue and completion time (trace buffer) in
    # cells where the prediction starves a slow or deep path the kernel keeps in play
    'tracehst': ([{'trace': 2, 'tag': '-ev'}] + _cells('H6', ['hst'], ['bio'], [8]) + _cells('H4', ['hst'], ['mq', 'bio'], [32])
                 + _cells('D8-32', ['hst'], ['bio'], [48]) + [{}]),
    # the same for the simplest misses of the third held-out set (two paths of one latency, the kernel's deep
    # path more loaded than predicted): H19 (unlimited against 4 tags), H13 (2 against 12 tags)
    'tracehst2': ([{'trace': 2, 'tag': '-ev'}] + _cells('H19', ['hst'], ['bio', 'mq'], [16])
                  + _cells('H13', ['hst'], ['bio'], [24]) + [{}]),
    # the fio task's timing on one path (the calibration's topologies traced): does a single-path run show the
    # bursts of maps and the delay after a completion that the traced HST runs show?
    'tracecalib': ([{'trace': 2, 'tag': '-ev'}] + _cells('c4', ['rr'], ['bio', 'mq'], [64])
                   + _cells('c1', ['rr'], ['bio'], [64]) + [{}]),
    # the guest's CPU time on one path, traced: the fio task's spacing of maps with no completion between them,
    # what each completion's interrupt adds to it (c0, c4), and when a task asleep for a tag issues after the
    # completion that freed it (c4t4: one 4 ms path of 4 tags at depth 16)
    'tracecalib2': ([{'trace': 2, 'tag': '-ev'}] + _cells('c0', ['rr'], ['bio', 'mq'], [64])
                    + _cells('c4t4', ['rr'], ['bio', 'mq'], [16]) + [{}]),
    # fio's own late map, once per round of its queue at depth 64 (c1 traced): is it once per round at other
    # depths too? (c1 at depths 8 and 24, traced; run with --runtime 2)
    'tracecalib3': ([{'trace': 2, 'tag': '-ev'}] + _cells('c1', ['rr'], ['bio'], [8, 24]) + [{}]),
    # the largest historical-service-time misses of the third held-out set traced: does the kernel's fast path
    # (H16 2 ms, H20 2 ms of 2/4/8 ms) go stale and lose choices to "equal usage" as the model's does?
    'tracehst3': ([{'trace': 2, 'tag': '-ev'}] + _cells('H16', ['hst'], ['bio', 'mq'], [24])
                  + _cells('H20', ['hst'], ['bio', 'mq'], [32]) + [{}]),
    # the deterministic lab's largest historical-service-time misses traced (grid.py run --icount): H27 bio
    # (8 ms, 6 against 24 tags), H14 bio, H8 and H30 mq
    'traceicount': ([{'trace': 2, 'tag': '-ev'}] + _cells('H27', ['hst'], ['bio'], [48])
                    + _cells('H14', ['hst'], ['bio'], [32]) + _cells('H8', ['hst'], ['mq'], [24])
                    + _cells('H30', ['hst'], ['mq'], [16]) + [{}]),
    # the deterministic lab's misses after the dispatch time and the wake batches (12-07) traced: H36 mq (1 ms of 4
    # tags, 2 ms of 16), H40 bio (3 ms of 4 and 12 tags, 9 ms of 12), H22 bio queue-length and HST (two 3 ms paths
    # of 6 tags, a 9 ms one of 2: queue-length misses too)
    'traceicount2': ([{'trace': 2, 'tag': '-ev'}] + _cells('H36', ['hst'], ['mq'], [24])
                     + _cells('H40', ['hst'], ['bio'], [32]) + _cells('H22', ['ql', 'hst'], ['bio'], [16]) + [{}]),
    # bio-based misses that the kernel repeats (12-07): H43 service-time and HST (1 ms of 16 tags, 3 ms of 16 and of
    # 4), H50 HST (8 ms, 2, 10 and 10 tags: the kernel loads one of the two 10-tag paths), H58 HST (four 2 ms paths
    # of 1, 3, 6 and 12 tags)
    'traceicount3': ([{'trace': 2, 'tag': '-ev'}] + _cells('H43', ['st', 'hst'], ['bio'], [32])
                     + _cells('H50', ['hst'], ['bio'], [20]) + _cells('H58', ['hst'], ['bio'], [32]) + [{}]),
    # the eighth set's H70 bio HST, where 6.12's first boot (1 ms path 0.50) differed from 6.1's (0.95), and H61 bio
    # HST (2 ms, 4 and 16 tags), a miss of the class on both kernels: run on each kernel
    'traceicount4': ([{'trace': 2, 'tag': '-ev'}] + _cells('H70', ['hst'], ['bio'], [24])
                     + _cells('H61', ['hst'], ['bio'], [32]) + [{}]),
    # the ninth set's misses on both kernels: H72 bio HST (a 1-tag 10 ms path; the kernel's IOPS 0.4 of the
    # model's) and H73 mq HST (3 ms of 3, 12 and 16 tags)
    'traceicount5': ([{'trace': 2, 'tag': '-ev'}] + _cells('H72', ['hst'], ['bio'], [24])
                     + _cells('H73', ['hst'], ['mq'], [24]) + [{}]),
    # the tenth set's misses: H90 service-time bio (6.1; 5 ms of 12 tags, 6 ms of 2, depth 64) and H82 HST bio
    # (6.12; 6 ms of 1 tag and 24: the kernel starves the 1-tag path's submitter on both kernels)
    'traceicount6': ([{'trace': 2, 'tag': '-ev'}] + _cells('H90', ['st'], ['bio'], [64])
                     + _cells('H82', ['hst'], ['bio'], [40]) + [{}]),
    # the twelfth set's bio-based misses of queue-length and service-time: a 1 ms path beside slower paths whose
    # tags fill (H108: 1 ms of 12 tags, 4 ms of 8; H110: 1 ms of 32, 8 ms of 24, 6 ms of 12)
    'traceicount7': ([{'trace': 2, 'tag': '-ev'}] + _cells('H108', ['ql'], ['bio'], [24])
                     + _cells('H110', ['st'], ['bio'], [48]) + [{}]),
    # misses that no timing noise moves (docs/validation.md, the fourteenth set): H46 request-based HST (2 ms of 2
    # tags, 4 ms of 24; the kernel gives the 4 ms path 0.42, the model 0.20) and H24 bio HST (two 4 ms paths of 8
    # tags and one of 2; the kernel shares the two 8-tag paths evenly, the model piles onto one)
    'traceicount8': ([{'trace': 2, 'tag': '-ev'}] + _cells('H46', ['hst'], ['mq'], [16])
                     + _cells('H24', ['hst'], ['bio'], [16]) + [{}]),
    # the fourteenth set's steadiest HST miss (H124: three 1 ms paths of 20, 16 and unlimited tags, bio, depth 64; the
    # 16-tag path 0.375 in every repeat of both kernels, 0.34 in the model), traced; at 38,000 IOPS run it with
    # --runtime 2 so that the trace buffer holds the run
    'traceicount9': ([{'trace': 2, 'tag': '-ev'}] + _cells('H124', ['hst'], ['bio'], [64]) + [{}]),
    # the fifteenth set's largest miss (H135: 4 ms paths of 20, 32 and 1 tags, bio, depth 48; the kernel keeps fio
    # asleep for the 1-tag path's tag at 1600-1800 IOPS, the model runs fed at 5100), traced
    'traceicount10': ([{'trace': 2, 'tag': '-ev'}] + _cells('H135', ['hst'], ['bio'], [48]) + [{}]),
    # queue-length bio cells where the guest with interrupt completions falls into a round-robin lockstep (a third
    # on each path) and the kernel does not (H159 d8: 10 ms of 2 tags, 7 ms of 16, 3 ms of 8; H16 and H54 d24: a
    # fast path beside two slower ones of 8 and 2 tags), and the one-path 4-tag wake calibration (c4t4) for the
    # kernels that have not traced it
    'traceicount11': ([{'trace': 2, 'tag': '-ev'}] + _cells('c4t4', ['rr'], ['bio'], [16])
                      + _cells('H159', ['ql'], ['bio'], [8]) + _cells('H16', ['ql'], ['bio'], [24])
                      + _cells('H54', ['ql'], ['bio'], [24]) + [{}]),
    # mechanisms: mq-deadline on the paths (scheduler tags 2 x 4 = 8 before the 4 driver tags, as a SCSI LUN
    # with one hw queue gets by default); fio pinned to CPU 0 (one hw queue of each path); two fio jobs
    'extra': ([{'sched': 'mq-deadline', 'tag': '-mqdl'}] + _cells('T4q', ['rr', 'st', 'hst'], ['mq', 'bio'], [64])
              + [{'fio': '--cpus_allowed=0', 'tag': '-cpu0'}] + _cells('T4q', ['rr', 'st'], ['mq', 'bio'], [64])
              + [{'fio': '--numjobs=2', 'tag': '-nj2'}] + _cells('T4q', ['rr', 'st'], ['mq', 'bio'], [32])
              + [{}]),
}


# Path faults: a fresh two-path topology per run, fio rate-limited (so the error count of a no-path window is the
# rate times the window, not the guest's speed at failing I/O), every I/O's completion logged. A step is
# <ms after fio starts>/<action>[/<path>[/<arg>]] (experiments/grid/main.sh). multipathd's part is played by
# messages: it reinstates a path its checker finds up again, and no_path_retry N is queue_if_no_path plus
# fail_if_no_path N checker intervals after the last path failed (here 500 ms), then queueing again once a
# path is back.
FAULT_FIO = '--rate_iops=600'
FAULT_RUNTIME = 4
_BOTH = lambda act, t: '%d/%s/p0,%d/%s/p1' % (t, act, t, act)
FAULTS = {   # name: (topology, table features, steps, modes)
    'offline': ('F2', '', '1000/offline/p0,2500/running/p0,2500/reinstate/p0', ['mq', 'bio']),
    'delete': ('F2', '', '1000/delete/p0', ['mq']),
    'poweroff': ('F2n', '', '1000/poweroff/p0', ['mq']),
    'slow': ('F2d', '', '1000/delay/p0/20,2500/delay/p0/0', ['bio']),
    'failmsg': ('F2', '', '1000/fail/p0,2000/reinstate/p0', ['mq']),
    'allq': ('F2', 'queue_if_no_path', ','.join([_BOTH('offline', 1000), _BOTH('running', 2000),
                                                   _BOTH('reinstate', 2000)]), ['mq']),
    'npr': ('F2', 'queue_if_no_path', ','.join([_BOTH('offline', 1000), '1500/fail_if_no_path',
                                                 _BOTH('running', 2500), _BOTH('reinstate', 2500),
                                                 '2500/queue_if_no_path']), ['mq']),
    'allfail': ('F2', '', ','.join([_BOTH('offline', 1000), _BOTH('running', 2000), _BOTH('reinstate', 2000)]),
                ['mq']),
}


def _fault_cells(names, sels=('rr', 'st', 'hst'), depth=16, mode=None):
    out = []
    for n in names:
        topo, feat, steps, modes = FAULTS[n]
        out += [{'fault': '%s %s' % (n, steps), 'feat': feat, 'fio': FAULT_FIO, 'tag': '-' + n,
                 'runtime': FAULT_RUNTIME}] + _cells(topo, list(sels), [mode] if mode else modes, [depth])
    return out + [{}]


BATCHES['faults'] = _fault_cells(FAULTS)
# a boot test of the SCSI host limit and the fault machinery (collect leaves smoke* boots out)
BATCHES['smokescsi'] = (_cells('S2', ['rr'], ['mq'], [32]) + _fault_cells(['offline', 'npr'], sels=('rr',), mode='mq')
                        + _fault_cells(['slow', 'delete'], sels=('st',)))


def runs_txt(batch, rep, runtime, first=0):
    """A batch is a list of (topo, selector, mode, depth) cells and {'sched': name, 'fio': options, 'tag': t,
    'trace': 0|1|2, 'feat': table features, 'fault': '<name> <steps>', 'runtime': s} variant switches (kept until
    the next switch; a new TOPO keeps them too; a variant's runtime replaces the batch's).  Its repeats are
    numbered from FIRST (r<first>, r<first+1>, ...)."""
    plain = {'sched': None, 'fio': '', 'tag': '', 'trace': 0, 'feat': '', 'fault': '', 'runtime': None}
    lines, cur, var = [], None, plain
    for r in range(first, first + rep):
        for item in BATCHES[batch]:
            if isinstance(item, dict):
                prev, var = var, dict(plain, **item)
                lines.append('FIO %s' % var['fio'])
                lines.append('TRACE %d' % var['trace'])
                for k in ('feat', 'fault'):   # only where a variant sets them: older plans stay as they were
                    if var[k] or prev[k]:
                        lines.append('%s %s' % (k.upper(), var[k]))
                if cur and (var['sched'] or prev['sched']):
                    lines.append('SCHED %s' % (var['sched'] or 'none'))   # 'none' is the paths' default here
                continue
            topo, s, m, d = item
            if topo != cur:
                lines.append('TOPO %s' % topo); cur = topo
                if var['sched']:
                    lines.append('SCHED %s' % var['sched'])
            lines.append('RUN %s%s_%s_%s_d%d_r%d %s %s %d %d' % (topo, var['tag'], s, m, d, r, SEL[s], m, d,
                                                                 var['runtime'] or runtime))
    return '\n'.join(lines) + '\n'


def boot_parts(batches, rep, runtime):
    """(batch, its runs.txt part) of one boot: the batches in order, each REP times; a batch named again
    runs again with the next repeat numbers, so `calib BATCH calib` calibrates the guest at both ends of
    the boot (the host's load can change within a boot; validate.py predicts each run with the nearer
    calibration)."""
    seen = {}
    for b in batches:
        yield b, runs_txt(b, rep, runtime, first=seen.get(b, 0))
        seen[b] = seen.get(b, 0) + rep


def boot_plan(batches, rep, runtime):
    """The runs.txt of one boot (boot_parts)."""
    return ''.join(part for _, part in boot_parts(batches, rep, runtime))


def loadavg():
    return open('/proc/loadavg').read().split()[:3]


def host_cpu():
    """(busy, total) jiffies of the host from /proc/stat, and this process's children's CPU seconds."""
    import resource
    v = [int(x) for x in open('/proc/stat').readline().split()[1:]]
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return sum(v) - v[3] - v[4], sum(v), ru.ru_utime + ru.ru_stime


# ---------------------------------------------------------------- per-run summary (host side)
def _stat(path):
    out = {}
    for l in open(path):
        f = l.split()
        out[f[0]] = [int(x) for x in f[1:]]
    return out


def _cpu(path):
    for l in open(path):
        f = l.split()
        if f[0] == 'cpu':
            v = [int(x) for x in f[1:]]
            return {'user': v[0] + v[1], 'system': v[2], 'idle': v[3] + v[4], 'irq': v[5], 'softirq': v[6]}


def _pct(clat, p):
    pc = clat.get('percentile') or {}
    for k, v in pc.items():
        if abs(float(k) - p) < 1e-6:
            return v / 1e3
    return None


def _dbg(rd):
    """blk-mq debugfs counters (dbg_before/after), differenced: {'dev/hctxN/file': [numbers]}."""
    pb, pa = os.path.join(rd, 'dbg_before'), os.path.join(rd, 'dbg_after')
    if not (os.path.exists(pb) and os.path.exists(pa)):
        return None

    def rd_(p):
        out = {}
        for l in open(p):
            f = l.split()
            if f:
                out[f[0]] = [int(x) for x in f[1:] if x.lstrip('-').isdigit()]
        return out
    b, a = rd_(pb), rd_(pa)
    out = {}
    for k, v in a.items():
        w = b.get(k, [0] * len(v))
        if '/dispatched' in k and '/cpu' not in k:
            # histogram "0 n0 1 n1 2 n2 4 n4 ..." -> {bucket: count}
            out[k] = {str(v[i]): v[i + 1] - (w[i + 1] if i + 1 < len(w) else 0) for i in range(0, len(v) - 1, 2)}
        else:
            out[k] = [x - y for x, y in zip(v, w)]
    return out


def _trace(rd, devno):
    """trace_hist (hist triggers keyed by dev) -> {event: {device name: count}}."""
    import re
    p = os.path.join(rd, 'trace_hist')
    if not os.path.exists(p):
        return None
    out = {}
    for l in open(p):
        mm = re.match(r'(\S+) .*dev:\s*(\d+)\s*\}\s*hitcount:\s*(\d+)', l)
        if mm:
            dev = int(mm.group(2))
            key = '%d:%d' % (dev >> 20, dev & 0xfffff)   # the kernel's dev_t: major << 20 | minor
            out.setdefault(mm.group(1), {})[devno.get(key, key)] = int(mm.group(3))
    return out


def kernel_series(release):
    """'6.1' for '6.1.0-57-amd64', '6.12' for '6.12.48+deb12-amd64': the major.minor of a kernel release."""
    mm = re.match(r'(\d+\.\d+)', release or '')
    return mm.group(1) if mm else None


def _run_kernel(rd, meta_kernel):
    """The kernel release a run ran on: its meta's kernel= line, else the boot's uname.txt (older runs)."""
    if meta_kernel:
        return meta_kernel
    up = os.path.join(os.path.dirname(os.path.dirname(rd)), 'uname.txt')
    if os.path.exists(up):
        f = open(up).read().split()
        return f[2] if len(f) > 2 else None
    return None


def _scsi_counters(path):
    """scsi_before/after: 'label iorequest_cnt iodone_cnt ioerr_cnt' (sysfs prints them in hex)."""
    out = {}
    if os.path.exists(path):
        for l in open(path):
            f = l.split()
            if len(f) == 4:
                out[f[0]] = [int(x, 16) for x in f[1:]]
    return out


def _fault_steps(rd):
    """The guest's faults file: T0 (CLOCK_MONOTONIC ns of the dm device's first completed write, the
    schedule's zero); PRE and POST blocks (the paths' stat lines 'D dev fields' and SCSI counters 'C label
    hex...') taken before the first step and after the last; per step its ns at start and end, the schedule's
    ms, the action, its path and argument, the exit status, and 'S <dmsetup status>' after each time's steps.
    -> {'t0_ns', 'pre': {'stat', 'scsi'}, 'post': {...}, 'steps': [...]} or None without a faults file."""
    p = os.path.join(rd, 'faults')
    if not os.path.exists(p):
        return None
    out = {'t0_ns': None, 'pre': {'stat': {}, 'scsi': {}}, 'post': {'stat': {}, 'scsi': {}}, 'steps': []}
    block = None
    for l in open(p):
        f = l.split()
        if not f:
            continue
        if f[0] == 'T0':
            out['t0_ns'] = int(f[1])
        elif f[0] in ('PRE', 'POST'):
            block = out[f[0].lower()]
            block['t_ns'] = int(f[1]) if len(f) > 1 else None
        elif f[0] == 'STEP' and len(f) >= 8:
            out['steps'].append({'t_ns': int(f[1]), 't_end_ns': int(f[2]), 'at_ms': int(f[3]), 'action': f[4],
                                 'target': None if f[5] == '-' else f[5], 'arg': None if f[6] == '-' else f[6],
                                 'rc': int(f[7].split('=')[1]), 'status': None})
        elif f[0] == 'S' and out['steps']:
            out['steps'][-1]['status'] = ' '.join(f[1:])
        elif f[0] == 'D' and block is not None and len(f) > 2:
            block['stat'][f[1]] = [int(x) for x in f[2:]]
        elif f[0] == 'C' and block is not None and len(f) == 5:
            block['scsi'][f[1]] = [int(x, 16) for x in f[2:]]
    return out


def mpath_status_paths(status):
    """dmsetup status of a multipath target -> [{dev, state (A/F), fail_count}] in table order, and the
    first status feature value, MPATHF_QUEUE_IO (1 while I/O waits for a path group's initialisation;
    multipath_status() in drivers/md/dm-mpath.c)."""
    t = status.split()
    if 'multipath' not in t:
        return [], None
    i = t.index('multipath') + 1
    nf = int(t[i]); feats = t[i + 1:i + 1 + nf]; i += 1 + nf
    i += 1 + int(t[i])            # hardware handler status
    npg = int(t[i]); i += 2       # number of groups, the next group to use
    paths = []
    for _ in range(npg):
        i += 1                    # group state (A active, E enabled, D disabled)
        i += 1 + int(t[i])        # the selector's group status
        npath, nargs = int(t[i]), int(t[i + 1]); i += 2
        for _ in range(npath):
            paths.append({'dev': t[i], 'state': t[i + 1], 'fail_count': int(t[i + 2])})
            i += 3 + nargs
    return paths, (int(feats[0]) if feats and feats[0].isdigit() else None)


def _completion_log(rd):
    """fio's per-I/O completion log (write_lat_log, log_avg_msec=0, CLOCK_MONOTONIC ms): sorted
    [(completion ms, completion latency ms)]; None when the run kept none."""
    import glob
    import gzip
    logs = sorted(glob.glob(os.path.join(rd, 'io_clat.*.log'))) or sorted(glob.glob(os.path.join(rd, 'io_clat.*.log.gz')))
    if not logs:
        return None
    out = []
    for lp in logs:
        for l in (gzip.open(lp, 'rt') if lp.endswith('.gz') else open(lp)):
            f = l.split(',')
            if len(f) >= 2 and f[0].strip().isdigit():
                out.append((int(f[0]), int(f[1]) / 1e6))
    return sorted(out)


def _phase_counts(before, after, labels, scsi_b, scsi_a):
    """Completed I/Os per path between two snapshots: a SCSI path's iodone_cnt - ioerr_cnt (commands the LLD
    completed without error), other paths sectors written / 8 (a request failed before it reached the
    driver is still accounted in sectors, so for SCSI paths the midlayer's counters are the truer count)."""
    out = {}
    for l in labels:
        if l in scsi_b and l in scsi_a:
            out[l] = (scsi_a[l][1] - scsi_a[l][2]) - (scsi_b[l][1] - scsi_b[l][2])
        elif l in before and l in after:
            out[l] = (after[l][6] - before[l][6]) // 8
        else:
            out[l] = None
    return out


LOG_METRICS = ('stall_ms', 'stall_new_io_ms', 'recovery_ms', 'max_gap_ms', 'max_lat_after_fault_ms', 'completions_logged', 'iops')


def fault_summary(rd, labels, fio, fs, stat_b, stat_a, scsi_b, scsi_a, status_end, devno):
    """What a fault did to the I/O: fio's errors; the stall (first step -> the next completed I/O), the longest
    time without a completion after it, recovery (last step -> next completion), the worst latency after the
    fault; completions per path before the first step, between the first and the last, after the last; the
    paths' fail counts and states at the end."""
    comp = _completion_log(rd)
    steps = fs['steps']
    first, last = steps[0], steps[-1]
    f_ms, l_ms = first['t_ns'] / 1e6, last['t_end_ns'] / 1e6
    # the steps the schedule puts at the first step's instant are one fault (both paths offline), whole when
    # the last of them has returned: the guest's shell runs them 2-40 ms apart and a step's clock is read
    # before its command, so I/O issued before that return may still reach a path that is up (a race of the
    # lab's shell, not what the host does); new I/O is what fio issues after it
    g_ms = [st for st in steps if st['at_ms'] == first['at_ms']][-1]['t_end_ns'] / 1e6
    out = {'steps': [{k: st[k] for k in ('at_ms', 'action', 'target', 'arg', 'rc')} for st in steps],
           'step_times_ms': [round((st['t_ns'] - first['t_ns']) / 1e6, 2) for st in steps],
           'step_durations_ms': [round((st['t_end_ns'] - st['t_ns']) / 1e6, 2) for st in steps],
           # when the first step came after the first completed write (its schedule said at_ms)
           'first_step_after_io_ms': round((first['t_ns'] - fs['t0_ns']) / 1e6, 1) if fs['t0_ns'] else None,
           # when the paths' counters that cut the phases were read, from the first step
           'snapshot_times_ms': [round((b['t_ns'] - first['t_ns']) / 1e6, 1) if b.get('t_ns') else None
                                 for b in (fs['pre'], fs['post'])],
           'fio_errors': fio.get('total_err'), 'fio_total_ios': fio.get('total_ios')}
    if comp:
        # the log has whole ms: a completion in the fault's own ms counts as after it (stall 0)
        after = [c for c in comp if c[0] >= math.floor(f_ms)]
        out['stall_ms'] = round(max(0.0, after[0][0] - f_ms), 1) if after else None
        # I/O the device had already taken completes whatever happens to the path: the first completion of an
        # I/O issued at or after the fault (completion time - completion latency) is when new I/O gets through
        new = [c for c in after if c[0] - c[1] >= g_ms]
        out['stall_new_io_ms'] = round(new[0][0] - g_ms, 1) if new else None
        rec = [c for c in comp if c[0] >= math.floor(l_ms)]
        out['recovery_ms'] = round(max(0.0, rec[0][0] - l_ms), 1) if rec else None
        times = [f_ms] + [c[0] for c in after]
        out['max_gap_ms'] = round(max(b - a for a, b in zip(times, times[1:])), 1) if after else None
        out['max_lat_after_fault_ms'] = round(max(c[1] for c in after), 2) if after else None
        t0, t1 = comp[0][0], comp[-1][0]
        n_before = sum(1 for c in comp if c[0] < f_ms)
        n_during = sum(1 for c in comp if f_ms <= c[0] < l_ms)
        n_after = len(comp) - n_before - n_during
        out['completions_logged'] = len(comp)
        out['iops'] = {'before': round(n_before / max(f_ms - t0, 1) * 1e3, 1),
                       'during': round(n_during / (l_ms - f_ms) * 1e3, 1) if l_ms > f_ms + 1 else None,
                       'after': round(n_after / max(t1 - l_ms, 1) * 1e3, 1)}
    snaps = [stat_b, fs['pre']['stat'], fs['post']['stat'], stat_a]
    sc = [scsi_b, fs['pre']['scsi'], fs['post']['scsi'], scsi_a]
    # a path gone by a snapshot keeps its line from the one before (the stat files leave it out)
    for i in (1, 2, 3):
        for k, v in snaps[i - 1].items():
            snaps[i].setdefault(k, v)
        for k, v in sc[i - 1].items():
            sc[i].setdefault(k, v)
    out['completions'] = {ph: _phase_counts(snaps[i], snaps[i + 1], labels, sc[i], sc[i + 1])
                          for i, ph in enumerate(('before', 'during', 'after'))}
    aft = out['completions']['after']
    tot = sum(v for v in aft.values() if v) or None
    out['shares_after'] = {l: round(v / tot, 4) if (tot and v is not None) else None for l, v in aft.items()}
    # per SCSI path over the whole run: commands completed with an error, and requests the path ended before
    # the driver saw them (offline/deleted: accounted in sectors, never dispatched); both were retried by
    # dm-mpath on another path or failed to fio
    out['path_errors'] = {l: scsi_a[l][2] - scsi_b[l][2] for l in labels if l in scsi_a and l in scsi_b}
    paths, queued = mpath_status_paths(status_end)
    out['end_paths'] = {devno.get(p['dev'], p['dev']): {'state': p['state'], 'fail_count': p['fail_count']}
                        for p in paths}
    out['end_queue_io'] = queued
    out['status_after_steps'] = [st['status'] for st in steps if st['status']]
    return out


def summarise_run(rd):
    meta = open(os.path.join(rd, 'meta')).read().split('\n')
    m = dict(kv.split('=', 1) for kv in meta[0].split())
    m['fio_extra'] = ''
    m.setdefault('path_scheduler', 'default')
    # A path line per build of the topology: guests before the kernel= line logged every build of a topology
    # (a repeated multi-topology batch rebuilds each), so a label is taken once, from its latest build.
    by_label = {}
    for l in meta[1:]:
        f = l.split()
        if l.startswith('fio_extra='):
            m['fio_extra'] = l[len('fio_extra='):].strip()
        elif l.startswith('kernel='):
            m['kernel'] = l[len('kernel='):].strip()
        elif len(f) >= 5 and f[0] == m['topo']:
            kv = dict(x.split('=', 1) for x in f[3:])
            by_label.pop(f[1], None)
            by_label[f[1]] = {'label': f[1], 'completion_ns': int(kv['completion_nsec']),
                              'hw_queue_depth': int(kv['hw_queue_depth']),
                              'submit_queues': int(kv.get('submit_queues', 1))}
            if kv.get('kind') == 'scsi':   # a scsi_debug LUN: its sdev queue_depth above, its host and can_queue
                by_label[f[1]].update(kind='scsi', host=int(kv['host']), can_queue=int(kv['can_queue']),
                                      block=kv.get('block'))
                if 'driver_max_queue' in kv:
                    by_label[f[1]]['driver_max_queue'] = int(kv['driver_max_queue'])
            elif kv.get('kind') == 'delay':   # dm-delay over a null_blk device: the delay (ms) at the start
                by_label[f[1]].update(kind='delay', delay_ms=int(kv['delay_ms']))
        elif l.startswith('features='):
            m['features'] = l[len('features='):].strip()
        elif l.startswith('fault='):
            m['fault'] = l[len('fault='):].strip()
        elif l.startswith('dm='):
            m['dm'] = l[3:]
        elif l.startswith('dmdev='):
            m['dmdev'] = l[6:].strip()
        elif l.startswith('trace='):
            m['trace'] = l[6:].strip()
        if len(f) >= 3 and f[0] == m['topo'] and ':' in f[2]:
            m.setdefault('devno', {})[f[2]] = f[1]
    paths = list(by_label.values())
    release = _run_kernel(rd, m.get('kernel'))
    b, a = _stat(os.path.join(rd, 'stat_before')), _stat(os.path.join(rd, 'stat_after'))
    fs = _fault_steps(rd)
    for snapshot in (fs['post'], fs['pre']) if fs else ():   # a path a fault removed has no line at the end
        for k, v in snapshot['stat'].items():
            a.setdefault(k, v)
    t0, t1 = (float(x) for x in open(os.path.join(rd, 'uptime')).read().split())
    dev = {}
    for k in a:
        d = [x - y for x, y in zip(a[k], b[k])]
        # /sys/block/X/stat (0-based): 4 = writes, 5 = merged, 6 = sectors written, 7 = write ticks (ms),
        # 9 = io_ticks, 10 = time in queue. Completed writes are counted from the sectors (all I/O is 4k,
        # never merged): 6.1's blk_insert_cloned_request() calls blk_account_io_done() when the direct issue
        # of a clone fails (no driver tag behind a path scheduler), so field 4 then also counts every failed
        # dispatch attempt, while sectors are only added when a request really completes.
        done = d[6] // 8
        dev[k] = {'writes': done, 'ios_accounted': d[4], 'failed_issue_attempts': d[4] - done,
                  'write_merges': d[5], 'write_ticks_ms': d[7], 'io_ticks_ms': d[9],
                  'time_in_queue_ms': d[10], 'mean_write_ms': round(d[7] / d[4], 3) if d[4] else None,
                  'mean_inflight': round(d[10] / ((t1 - t0) * 1e3), 3)}
    labels = [p['label'] for p in paths]
    tot = sum(dev[l]['writes'] for l in labels) or 1
    shares = {l: round(dev[l]['writes'] / tot, 4) for l in labels}
    cb, ca = _cpu(os.path.join(rd, 'cpu_before')), _cpu(os.path.join(rd, 'cpu_after'))
    cpu = {k: ca[k] - cb[k] for k in ca}  # USER_HZ ticks (100/s), summed over the guest's CPUs
    busy = cpu['user'] + cpu['system'] + cpu['irq'] + cpu['softirq']
    allt = busy + cpu['idle']
    queue = {}
    for l in open(os.path.join(rd, 'queue')):
        f = l.split()
        kv = dict(x.split('=', 1) for x in f[1:])
        # a bio-based dm device: 6.1 shows scheduler none and nr_requests 128; 6.12 has neither (empty values)
        queue[f[0]] = {'scheduler': kv['scheduler'].strip('[]') or None,
                       'nr_requests': int(kv['nr_requests']) if kv.get('nr_requests') else None,
                       'nr_hw_queues': int(kv['nr_hw_queues']) if kv['nr_hw_queues'] else None,
                       'hw_tags': int(kv['hw_tags']) if kv.get('hw_tags') else None}
    fio = {}
    fp = os.path.join(rd, 'fio.json')
    if not os.path.exists(fp) and os.path.exists(os.path.join(rd, 'summary.json')):
        fio = json.load(open(os.path.join(rd, 'summary.json'))).get('fio', {})   # fio.json is dropped once summarised
    elif os.path.exists(fp):
        try:
            txt = open(fp).read()
            j = json.loads(txt[txt.index('{'):])
            job = j['jobs'][0]; w = job['write']
            fio = {'iops': round(w['iops'], 1), 'total_ios': w['total_ios'], 'runtime_ms': w['runtime'],
                   'clat_mean_us': round(w['clat_ns']['mean'] / 1e3, 1),
                   'clat_stddev_us': round(w['clat_ns']['stddev'] / 1e3, 1),
                   'clat_p50_us': _pct(w['clat_ns'], 50.0), 'clat_p99_us': _pct(w['clat_ns'], 99.0),
                   'slat_mean_us': round(w['slat_ns']['mean'] / 1e3, 1),
                   'slat_stddev_us': round(w['slat_ns']['stddev'] / 1e3, 1),   # the submission cost's spread
                   'lat_mean_us': round(w['lat_ns']['mean'] / 1e3, 1),
                   'usr_cpu_pct': round(job['usr_cpu'], 2), 'sys_cpu_pct': round(job['sys_cpu'], 2), 'ctx': job['ctx']}
            if 'total_err' in job:   # with continue_on_error: the I/Os that ended in an error
                fio['total_err'] = job['total_err']
        except Exception as e:  # a failed fio run is recorded, not hidden
            fio = {'error': 'fio.json unreadable: %s' % e}
    samples = {'dm_inflight': [], 'path_inflight': {l: [] for l in labels}, 'status': []}
    sp = os.path.join(rd, 'samples')
    if os.path.exists(sp):
        for l in open(sp):
            f = l.split()
            if f[0] == 'I' and len(f) >= 4:
                n = int(f[2]) + int(f[3])
                if f[1] in samples['path_inflight']:
                    samples['path_inflight'][f[1]].append(n)
                else:
                    samples['dm_inflight'].append(n)
            elif f[0] == 'S':
                samples['status'].append(' '.join(f[1:]))
    scsi_b, scsi_a = _scsi_counters(os.path.join(rd, 'scsi_before')), _scsi_counters(os.path.join(rd, 'scsi_after'))
    for snapshot in (fs['post'], fs['pre']) if fs else ():
        for k, v in snapshot['scsi'].items():
            scsi_a.setdefault(k, v)
    status_end = open(os.path.join(rd, 'status_end')).read().strip()
    fault = m.get('fault', '').split()
    extra = {}
    if fault and fs and fs['steps']:
        extra['fault'] = dict(fault_summary(rd, labels, fio, fs, b, a, scsi_b, scsi_a, status_end,
                                            m.get('devno', {})), name=fault[0], schedule=fault[1])
        prev = os.path.join(rd, 'summary.json')
        if not _completion_log(rd) and os.path.exists(prev):
            # the per-I/O log is dropped once summarised: what was read from it is kept from the summary
            old = json.load(open(prev)).get('fault') or {}
            extra['fault'].update({k: old[k] for k in LOG_METRICS if k in old})
    # the SCSI midlayer's own count per path (commands the LLD completed, errors among them), and what the
    # paths completed against what fio counted (they differ by the I/Os in flight when a count was read)
    scsi = {l: {'iorequest': scsi_a[l][0] - scsi_b[l][0], 'iodone': scsi_a[l][1] - scsi_b[l][1],
                'ioerr': scsi_a[l][2] - scsi_b[l][2]} for l in labels if l in scsi_a and l in scsi_b}
    return dict(extra, **{
        'run': os.path.basename(rd), 'kernel': kernel_series(release), 'kernel_release': release,
        'topology': m['topo'], 'selector': m['selector'], 'queue_mode': m['queue_mode'],
        'iodepth': int(m['iodepth']), 'runtime_s': int(m['runtime']), 'selector_args': m['selector_args'],
        'path_scheduler': m['path_scheduler'], 'fio_extra': m['fio_extra'], 'traced': m.get('trace') in ('1', '2'),
        'paths': paths, 'dm': m.get('dm'), 'table': open(os.path.join(rd, 'table')).read().strip(),
        'shares': shares, 'writes_total': tot, 'devices': dev, 'fio': fio, 'queue': queue,
        'guest_cpu': {'ticks': cpu, 'busy_frac_of_2cpus': round(busy / allt, 3) if allt else None,
                      'busy_ms_per_io': round(busy * 10.0 / tot, 3)},
        'guest_seconds': round(t1 - t0, 2), 'guest_uptime_s': round(t0, 2), 'samples': samples,
        'status_end': status_end,
        'blkmq_debugfs': _dbg(rd),
        'trace': _trace(rd, dict(m.get('devno', {}), **({m['dmdev']: m.get('dm')} if m.get('dmdev') else {}))),
        'features': m.get('features', ''), 'scsi': scsi or None,
        'completed_vs_fio': ({'paths': tot, 'fio': fio['total_ios'], 'difference': tot - fio['total_ios']}
                             if 'total_ios' in fio else None),
    })


def _gzip_files(rd, names):
    import gzip
    for f in names:
        with open(os.path.join(rd, f), 'rb') as src, gzip.open(os.path.join(rd, f + '.gz'), 'wb') as dst:
            shutil.copyfileobj(src, dst)


def finish_batch(out):
    """Summarise every run of one boot and shrink the raw files (fio.json -> summary, no big logs)."""
    rr = os.path.join(out, 'runs')
    for name in sorted(os.listdir(rr)) if os.path.isdir(rr) else []:   # a boot that failed wrote no runs
        rd = os.path.join(out, 'runs', name)
        if not os.path.exists(os.path.join(rd, 'stat_after')):
            continue
        s = summarise_run(rd)
        s['batch'] = os.path.basename(out)
        s['host_load'] = json.load(open(os.path.join(out, 'host_load.json')))
        s['kernel_append'] = s['host_load'].get('kernel_append', '')
        json.dump(s, open(os.path.join(rd, 'summary.json'), 'w'), indent=1)
        # a fault run keeps its completion log compressed (about 10 kB): its metrics can be recomputed
        if s.get('fault'):
            _gzip_files(rd, [f for f in os.listdir(rd) if re.match(r'io_clat\.\d+\.log$', f)])
        for big in ['fio.json'] + [f for f in os.listdir(rd) if re.match(r'io_(c|s|)lat\.\d+\.log$', f)]:
            if os.path.exists(os.path.join(rd, big)):
                os.remove(os.path.join(rd, big))
    for big in ('dmesg.txt',):
        p = os.path.join(out, big)
        if os.path.exists(p):
            os.remove(p)
    cl = os.path.join(out, 'console.log')
    if os.path.exists(cl) and os.path.getsize(cl) > 100_000:
        txt = open(cl, errors='replace').read()
        open(cl, 'w').write(txt[:20_000] + '\n[... trimmed by grid.py ...]\n' + txt[-60_000:])


# ---------------------------------------------------------------- results.json
def _mean_sd(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None, None
    mu = sum(xs) / len(xs)
    sd = math.sqrt(sum((x - mu) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else None
    return round(mu, 4), (round(sd, 4) if sd is not None else None)


def variant_name(sched, fio_extra, append=''):
    """'' for the plain grid; otherwise e.g. 'sched=mq-deadline,numjobs=2' (part of the cell's topology name)."""
    parts = []
    if sched and sched not in ('default', 'none'):   # null_blk with 2 hw queues defaults to none
        parts.append('sched=' + sched)
    for o in fio_extra.split() + append.split():
        parts.append(o.lstrip('-'))
    return ','.join(parts)


def _topology_class(topo):
    """Table order of a topology: calibration (c*), the grid (T*), same-latency/different-depth (D*), held out (H*)."""
    base = topo.split('/')[0]
    order = ['c0', 'c1', 'c4', 'c0x2', 'c4x2', 'T4q', 'T4u', 'T10', 'Tmix']
    if base in order:
        return order.index(base), ''
    return {'D': 20, 'H': 30, 'S': 40}.get(base[:1], 99), base


def _cell_order(key):
    kernel, topo, mode, depth, sel = key[:5]
    sels = ['round-robin', 'queue-length', 'service-time', 'historical-service-time']
    return ([int(x) for x in kernel.split('.') if x.isdigit()], _topology_class(topo), topo, mode, -depth,
            sels.index(sel) if sel in sels else 9)


def collect():
    cells, faults = {}, []
    for batch in sorted(os.listdir(RUNS)) if os.path.isdir(RUNS) else []:
        rr = os.path.join(RUNS, batch, 'runs')
        if not os.path.isdir(rr) or batch.startswith('smoke'):   # a boot test, not a measurement
            continue
        for name in sorted(os.listdir(rr)):
            sp = os.path.join(rr, name, 'summary.json')
            if not os.path.exists(sp):
                continue
            s = json.load(open(sp))
            kernel = s.get('kernel') or kernel_series(_run_kernel(os.path.join(rr, name), None)) or 'unknown'
            if s.get('fault'):
                faults.append((kernel, s))
                continue
            variant = variant_name(s.get('path_scheduler', 'default'), s.get('fio_extra', ''),
                                   s.get('kernel_append', '') + (' traced' if s.get('traced') else ''))
            topo = s['topology'] + ('/' + variant if variant else '')
            key = (kernel, topo, s['queue_mode'], s['iodepth'], s['selector'], s['selector_args'])
            c = cells.setdefault(key, {
                'kernel': kernel, 'topology': topo, 'base_topology': s['topology'],
                'path_scheduler': s.get('path_scheduler', 'default'), 'fio_extra': s.get('fio_extra', ''),
                'paths': [dict({'label': p['label'], 'completion_ns': p['completion_ns'],
                                'hw_queue_depth': p['hw_queue_depth']},
                               **{k: p[k] for k in ('kind', 'host', 'can_queue', 'driver_max_queue', 'delay_ms')
                                  if k in p})
                          for p in s['paths']],
                'queue_mode': s['queue_mode'], 'iodepth': s['iodepth'], 'selector': s['selector'],
                'selector_args': s['selector_args'], 'repeats': []})
            dm = s['dm']
            q = s['queue']
            c['repeats'].append({
                'run': '%s/%s' % (s['batch'], s['run']), 'kernel_release': s.get('kernel_release'),
                'shares': s['shares'], 'writes_total': s['writes_total'],
                'fio_iops': s['fio'].get('iops'), 'clat_mean_us': s['fio'].get('clat_mean_us'),
                'clat_p99_us': s['fio'].get('clat_p99_us'), 'slat_mean_us': s['fio'].get('slat_mean_us'),
                'guest_uptime_s': s.get('guest_uptime_s'),
                'path_mean_write_ms': {l: s['devices'][l]['mean_write_ms'] for l in s['shares']},
                'path_mean_inflight': {l: s['devices'][l]['mean_inflight'] for l in s['shares']},
                'dm_mean_inflight': s['devices'][dm]['mean_inflight'] if dm in s['devices'] else None,
                'path_failed_issue_attempts': {l: s['devices'][l].get('failed_issue_attempts') for l in s['shares']},
                'trace_counts': s.get('trace'),
                'path_scsi': s.get('scsi'), 'completed_vs_fio': s.get('completed_vs_fio'),
                'scheduler': {'paths': sorted({q[l]['scheduler'] for l in s['shares']}), 'dm': q.get(dm, {}).get('scheduler')},
                'nr_requests': {'paths': sorted({q[l]['nr_requests'] for l in s['shares']}), 'dm': q.get(dm, {}).get('nr_requests')},
                'hw_tags': {'paths': sorted({q[l]['hw_tags'] for l in s['shares']}), 'dm': q.get(dm, {}).get('hw_tags')},
                'guest_cpu_busy_frac': s['guest_cpu']['busy_frac_of_2cpus'],
                'guest_cpu_busy_ms_per_io': s['guest_cpu']['busy_ms_per_io'],
                'host_load': s['host_load']})
            if s['fio'].get('slat_stddev_us') is not None:     # runs summarised since 12-06 20:40 UTC
                c['repeats'][-1]['slat_stddev_us'] = s['fio']['slat_stddev_us']
    out = []
    for key in sorted(cells, key=_cell_order):
        c = cells[key]
        reps = c['repeats']
        c['n'] = len(reps)
        c['mean_share'], c['stddev_share'] = {}, {}
        for p in c['paths']:
            c['mean_share'][p['label']], c['stddev_share'][p['label']] = _mean_sd([r['shares'][p['label']] for r in reps])
        for f in ('fio_iops', 'clat_mean_us', 'clat_p99_us'):
            c['mean_' + f], c['stddev_' + f] = _mean_sd([r[f] for r in reps])
        # identical paths (same completion time and tags) as a group: which of them HST piles onto is arbitrary,
        # so the group's mean share per path (and its spread over repeats) is the comparable quantity
        groups = {}
        for p in c['paths']:
            groups.setdefault((p['completion_ns'], p['hw_queue_depth']), []).append(p['label'])
        c['groups'] = []
        for (ns, qd), labels in groups.items():
            per = [sum(r['shares'][l] for l in labels) / len(labels) for r in reps]
            mu, sd = _mean_sd(per)
            c['groups'].append({'labels': labels, 'completion_ns': ns, 'hw_queue_depth': qd,
                                'mean_share_per_path': mu, 'stddev_share_per_path': sd})
        # traced runs: requeues of the dm request per completed I/O (request-based: failed maps)
        rq = [(r['trace_counts'] or {}).get('block_rq_requeue', {}) for r in reps if r.get('trace_counts')]
        if rq and len(rq) == len(reps):
            c['mean_dm_requeues_per_io'] = _mean_sd([sum(v for k, v in q.items() if k.startswith('dm-')) / r['writes_total']
                                                     for q, r in zip(rq, reps)])[0]
        c['host_load_1min'] = [r['host_load']['before'][0] for r in reps]
        c['others_cpus'] = [r['host_load'].get('others_cpus') for r in reps]
        # effective per-path service time (device-level latency) and occupancy, averaged over the repeats
        c['mean_path_write_ms'] = {p['label']: _mean_sd([r['path_mean_write_ms'][p['label']] for r in reps])[0]
                                   for p in c['paths']}
        c['mean_path_inflight'] = {p['label']: _mean_sd([r['path_mean_inflight'][p['label']] for r in reps])[0]
                                   for p in c['paths']}
        c['mean_slat_mean_us'] = _mean_sd([r['slat_mean_us'] for r in reps])[0]
        out.append(c)
    json.dump(out, open(os.path.join(HERE, RESULTS), 'w'), indent=1)
    if faults or os.path.exists(os.path.join(HERE, FAULT_RESULTS)):
        json.dump(collect_faults(faults), open(os.path.join(HERE, FAULT_RESULTS), 'w'), indent=1)
    return out


FAULT_METRICS = ('fio_errors', 'fio_total_ios', 'stall_ms', 'stall_new_io_ms', 'recovery_ms', 'max_gap_ms',
                 'max_lat_after_fault_ms')


def collect_faults(runs):
    """Fault cells: one per kernel series, topology, fault, path mode, fio depth and selector; per repeat the
    fault's metrics (fault_summary), then mean and sample stddev of the numeric ones and the mean completions
    per path and phase."""
    cells = {}
    for kernel, s in runs:
        f = s['fault']
        key = (kernel, s['topology'], f['name'], s['queue_mode'], s['iodepth'], s['selector'])
        c = cells.setdefault(key, {
            'kernel': kernel, 'topology': s['topology'], 'fault': f['name'], 'schedule': f['schedule'],
            'steps': [dict(st) for st in f['steps']], 'features': s.get('features', ''),
            'paths': [{k: v for k, v in p.items() if k != 'block'} for p in s['paths']],
            'queue_mode': s['queue_mode'], 'iodepth': s['iodepth'], 'selector': s['selector'],
            'fio_options': s.get('fio_extra', ''), 'runtime_s': s['runtime_s'], 'repeats': []})
        labels = [p['label'] for p in s['paths']]
        # requests a path took and ended without completing them (refused by an offline or dying device,
        # accounted in the path's stat but never written): dm-mpath retried them on another path or failed them
        refused = {l: (s.get('devices') or {}).get(l, {}).get('failed_issue_attempts') for l in labels}
        c['repeats'].append(dict({k: f.get(k) for k in FAULT_METRICS + (
            'iops', 'completions', 'shares_after', 'path_errors', 'end_paths', 'end_queue_io', 'step_times_ms',
            'step_durations_ms', 'snapshot_times_ms', 'first_step_after_io_ms', 'status_after_steps')},
            refused=refused, run='%s/%s' % (s['batch'], s['run']), kernel_release=s.get('kernel_release'),
            host_load=s.get('host_load')))
    out = []
    for key in sorted(cells, key=lambda k: ([int(x) for x in k[0].split('.') if x.isdigit()],) + k[1:]):
        c = cells[key]
        reps = c['repeats']
        c['n'] = len(reps)
        for k in FAULT_METRICS:
            c['mean_' + k], c['stddev_' + k] = _mean_sd([r[k] for r in reps])
        labels = [p['label'] for p in c['paths']]
        c['mean_completions'] = {ph: {l: _mean_sd([(r['completions'] or {}).get(ph, {}).get(l) for r in reps])[0]
                                      for l in labels} for ph in ('before', 'during', 'after')}
        c['mean_shares_after'] = {l: _mean_sd([(r['shares_after'] or {}).get(l) for r in reps])[0] for l in labels}
        c['mean_refused'] = {l: _mean_sd([r['refused'].get(l) for r in reps])[0] for l in labels}
        out.append(c)
    return out


def table(cells):
    rows = []
    for c in cells:
        sh = ' '.join('%s=%.3f±%s' % (l, v, ('%.3f' % c['stddev_share'][l]) if c['stddev_share'][l] is not None else '-')
                      for l, v in c['mean_share'].items())
        rows.append('%-5s %-10s %-4s d%-3d %-4s n=%d iops=%-7s clat=%-8s %s' % (
            c['kernel'], c['topology'], c['queue_mode'], c['iodepth'], ABBR.get(c['selector'], c['selector']), c['n'],
            c['mean_fio_iops'], c['mean_clat_mean_us'], sh))
    return '\n'.join(rows)


def markdown(cells, kernel_column=True):
    """Markdown table: one row per multi-path cell; per group of identical paths (ms/tags, x count) the mean
    share per path and its sample stddev over the repeats; IOPS, clat."""
    k = ('kernel | ', '---|') if kernel_column else ('', '')
    rows = ['| %stopology | mode | depth | selector | n | share per path, by group: mean (stddev) | IOPS mean (sd) '
            '| clat mean ms |' % k[0], '|%s---|---|---|---|---|---|---|---|' % k[1]]
    for c in cells:
        if len(c['paths']) < 2:
            continue
        sh = ', '.join('%gms/%st x%d: %.3f%s' % (
            g['completion_ns'] / 1e6, g['hw_queue_depth'] if g['hw_queue_depth'] < 256 else '-', len(g['labels']),
            g['mean_share_per_path'],
            ' (%.3f)' % g['stddev_share_per_path'] if g['stddev_share_per_path'] is not None else '')
            for g in c['groups'])
        rows.append('| %s%s | %s | %d | %s | %d | %s | %.0f%s | %.1f |' % (
            c['kernel'] + ' | ' if kernel_column else '', c['topology'], c['queue_mode'], c['iodepth'],
            ABBR.get(c['selector'], c['selector']), c['n'], sh,
            c['mean_fio_iops'] or 0, ' (%.0f)' % c['stddev_fio_iops'] if c['stddev_fio_iops'] is not None else '',
            (c['mean_clat_mean_us'] or 0) / 1e3))
    return '\n'.join(rows)


def kernel_differences(cells, a='6.1', b='6.12'):
    """Cells measured on both kernels: per group of identical paths the difference of the mean share per path
    (b - a) and the noise bound, two standard errors of that difference from the repeats' stddevs (null when a
    side has a single repeat). Rows of the largest difference per cell, largest first."""
    key = lambda c: (c['topology'], c['queue_mode'], c['iodepth'], c['selector'], c['selector_args'])
    other = {key(c): c for c in cells if c['kernel'] == b}
    rows = []
    for c in cells:
        d = other.get(key(c)) if c['kernel'] == a else None
        if d is None or len(c['paths']) < 2:
            continue
        best = None
        for ga, gb in zip(c['groups'], d['groups']):
            diff = round(gb['mean_share_per_path'] - ga['mean_share_per_path'], 4)
            sds = [(g['stddev_share_per_path'], n) for g, n in ((ga, c['n']), (gb, d['n']))]
            bound = (2 * math.sqrt(sum(sd ** 2 / n for sd, n in sds))
                     if all(sd is not None for sd, _ in sds) else None)
            if best is None or abs(diff) > abs(best[1]):
                best = ('%gms/%st' % (ga['completion_ns'] / 1e6, ga['hw_queue_depth'] if ga['hw_queue_depth'] < 256
                                      else '-'), diff, bound, ga['labels'])
        rows.append({'cell': '%s %s d%d %s' % (c['topology'], c['queue_mode'], c['iodepth'],
                                               ABBR.get(c['selector'], c['selector'])),
                     'key': '%s %s %s d%d' % (c['topology'], c['selector'], c['queue_mode'], c['iodepth']),
                     'labels': best[3], 'n': (c['n'], d['n']), 'group': best[0], 'diff': round(best[1], 4),
                     'bound': round(best[2], 4) if best[2] is not None else None,
                     'beyond_noise': best[2] is not None and abs(best[1]) > max(best[2], 0.01)})
    return sorted(rows, key=lambda r: -abs(r['diff']))


def model_differences(rows, predicted):
    """Add to kernel_differences' ROWS the model's 6.12 - 6.1 share per path of the same group ('model_diff',
    None where the model has no row) from PREDICTED, mpathlab.validate.compare's rows of the same cells (their
    shares by path label, 'sim_paths'), and whether it reproduces the kernels' difference: the same sign and
    within 0.03 ('reproduced')."""
    sim = {(r['kernel_series'], r['cell']): r['sim_paths'] for r in predicted if not r.get('variant')}

    def mean_share(kernel, key, labels):
        shares = sim.get((kernel, key))
        if shares is None or any(lb not in shares for lb in labels):
            return None
        return sum(shares[lb] for lb in labels) / len(labels)

    for r in rows:
        a, b = mean_share('6.1', r['key'], r['labels']), mean_share('6.12', r['key'], r['labels'])
        r['model_diff'] = None if a is None or b is None else round(b - a, 4)
        r['reproduced'] = (r['model_diff'] is not None and (r['model_diff'] > 0) == (r['diff'] > 0)
                           and abs(r['model_diff'] - r['diff']) <= 0.03)
    return rows


def differences_markdown(rows):
    model = any('model_diff' in r for r in rows)
    out = ['| cell | n (6.1, 6.12) | group | 6.12 - 6.1 share per path | 2 SE of the difference | beyond noise |'
           + (' model\'s 6.12 - 6.1 |' if model else ''), '|---|---|---|---|---|---|' + ('---|' if model else '')]
    for r in rows:
        out.append('| %s | %d, %d | %s | %+.3f | %s | %s |' % (
            r['cell'], r['n'][0], r['n'][1], r['group'], r['diff'],
            '%.3f' % r['bound'] if r['bound'] is not None else '-', 'yes' if r['beyond_noise'] else 'no')
            + (' %s |' % ('-' if r.get('model_diff') is None else '%+.3f' % r['model_diff']) if model else ''))
    if model:
        beyond = [r for r in rows if r['beyond_noise']]
        large = [r for r in beyond if abs(r['diff']) >= 0.03]
        out.append('')
        out.append('beyond the noise: %d cells, the model\'s difference of the same sign and within 0.03 in %d; of '
                   'the %d that differ by 0.03 or more, in %d' % (len(beyond), sum(r['reproduced'] for r in beyond),
                                                                 len(large), sum(r['reproduced'] for r in large)))
    return '\n'.join(out)


def _sums_of_squares(boots):
    """(between the boots' means, within the boots) of a list of per-boot value lists."""
    allx = [x for b in boots for x in b]
    grand = sum(allx) / len(allx)
    means = [sum(b) / len(b) for b in boots]
    return (sum(len(b) * (m - grand) ** 2 for b, m in zip(boots, means)),
            sum((x - m) ** 2 for b, m in zip(boots, means) for x in b))


def boot_spread(cells):
    """Cells whose repeats ran in more than one boot: are a boot's repeats independent draws?  Per cell and
    group of identical paths, a one-way analysis of variance of the share per path with the boot as the factor:
    the sum of squares between the boots' means (SSB, boots - 1 degrees of freedom) and within the boots (SSW,
    repeats - boots).  F = (SSB / df) / (SSW / df) is near 1 when a boot's repeats spread as much as repeats of
    different boots do, and well above 1 when the repeats of one boot agree with each other more than with
    another boot's (then the repeats' standard error understates the noise).  Returns the rows (the group with
    the largest total sum of squares per cell, largest F first) and the pooled F over every row."""
    rows = []
    for c in cells:
        by_boot = {}
        for r in c['repeats']:
            by_boot.setdefault(r['run'].split('/')[0], []).append(r)
        if len(by_boot) < 2 or len(c['paths']) < 2:
            continue
        best = None
        for g in c['groups']:
            boots = [[sum(r['shares'][lb] for lb in g['labels']) / len(g['labels']) for r in rs]
                     for rs in by_boot.values()]
            ssb, ssw = _sums_of_squares(boots)
            if best is None or ssb + ssw > best['ssb'] + best['ssw'] + 1e-12:   # ties: the first group
                best = {'cell': '%s %s %s d%d %s' % (c['kernel'], c['topology'], c['queue_mode'], c['iodepth'],
                                                     ABBR.get(c['selector'], c['selector'])),
                        'group': '%gms/%st' % (g['completion_ns'] / 1e6, g['hw_queue_depth']
                                               if g['hw_queue_depth'] < 256 else '-'),
                        'boot_means': [round(sum(b) / len(b), 4) for b in boots], 'n': [len(b) for b in boots],
                        'ssb': ssb, 'ssw': ssw, 'df_between': len(boots) - 1,
                        'df_within': sum(map(len, boots)) - len(boots)}
        best['f'] = (round((best['ssb'] / best['df_between']) / (best['ssw'] / best['df_within']), 2)
                     if best['df_within'] and best['ssw'] > 1e-12 else None)
        rows.append(best)
    rows = [r for r in rows if r['ssb'] + r['ssw'] > 1e-12]    # shares the same in every repeat say nothing
    pooled = [r for r in rows if r['df_within']]
    num = sum(r['ssb'] for r in pooled) / max(sum(r['df_between'] for r in pooled), 1)
    den = sum(r['ssw'] for r in pooled) / max(sum(r['df_within'] for r in pooled), 1)
    return sorted(rows, key=lambda r: -(r['f'] or 0)), (round(num / den, 2) if den > 1e-12 else None)


def independent_f_counts(rows, draws=2000, seed=1):
    """How many of ROWS would have F above 1 and above 4 if every repeat were an independent draw (normal, the
    same spread in each boot): the expected counts, by drawing each row's repeats DRAWS times."""
    import random
    rnd = random.Random(seed)
    above1 = above4 = 0.0
    for r in rows:
        if not r['df_within']:
            continue
        for _ in range(draws):
            ssb, ssw = _sums_of_squares([[rnd.gauss(0, 1) for _ in range(n)] for n in r['n']])
            f = (ssb / r['df_between']) / (ssw / r['df_within'])
            above1 += f > 1
            above4 += f > 4
    return above1 / draws, above4 / draws


def boot_spread_markdown(rows, pooled):
    out = ['| cell | group | repeats per boot | boots\' means (share per path) | F |', '|---|---|---|---|---|']
    for r in rows:
        out.append('| %s | %s | %s | %s | %s |' % (r['cell'], r['group'], ', '.join(map(str, r['n'])),
                                                  ', '.join('%.3f' % m for m in r['boot_means']),
                                                  '%.2f' % r['f'] if r['f'] is not None else '-'))
    fs = [r['f'] for r in rows if r['f'] is not None]
    expect1, expect4 = independent_f_counts(rows)
    within = [r for r in rows if r['df_within']]
    out.append('')
    out.append('%d cells whose repeats within a boot differ: F above 1 in %d, above 4 in %d (independent repeats: '
               'about %.0f and %.0f; median %s); pooled, F = %s (between the boots\' means, %d degrees of freedom, '
               'against within the boots, %d; near 1: a boot\'s repeats are as independent as repeats of different '
               'boots)' % (len(fs), sum(f > 1 for f in fs), sum(f > 4 for f in fs), expect1, expect4,
                           '%.2f' % sorted(fs)[len(fs) // 2] if fs else '-',
                           '%.2f' % pooled if pooled is not None else '-',
                           sum(r['df_between'] for r in within), sum(r['df_within'] for r in within)))
    return '\n'.join(out)


def readme_block(cells):
    """The generated results section of README.md: per kernel series, the grid (T*), the same-latency /
    different-depth class (D*), the held-out topologies (H*) and the variants."""
    parts = ['Share per path of each group of identical paths (`ms/tags`, `-` = 256 tags): mean over the n '
             'repeats,\nsample stddev in brackets; IOPS from fio; clat = fio\'s mean completion latency.']
    for kernel in sorted({c['kernel'] for c in cells}, key=lambda v: [int(x) for x in v.split('.') if x.isdigit()]):
        kc = [c for c in cells if c['kernel'] == kernel]
        for title, sel in (('grid', lambda t: t[:1] == 'T' and '/' not in t),
                           ('same completion time, different queue depths', lambda t: t[:1] == 'D'),
                           ('held out', lambda t: t[:1] == 'H'),
                           ('SCSI paths (scsi_debug LUNs; `t` = sdev queue_depth)',
                            lambda t: t[:1] == 'S' and '/' not in t),
                           ('variants (`traced` cells count block tracepoints)', lambda t: '/' in t)):
            group = [c for c in kc if sel(c['topology'])]
            if group:
                parts.append('### %s: %s\n\n%s' % (kernel, title, markdown(group, kernel_column=False)))
    rows = kernel_differences(cells)
    if rows:
        parts.append('### 6.12 against 6.1 (cells run on both; largest group difference per cell; beyond noise:\n'
                     'more than two standard errors of the difference and more than 0.01)\n\n'
                     + differences_markdown(rows))
    return '\n\n'.join(parts) + '\n'


def faults_markdown(cells):
    """One row per fault cell: means over the repeats (sample stddev in brackets where n > 1)."""
    def ms(c, k):
        mu, sd = c['mean_' + k], c['stddev_' + k]
        return '-' if mu is None else ('%.1f' % mu) + (' (%.1f)' % sd if sd is not None else '')
    rows = ['| kernel | fault | topology | mode | selector | n | fio errors | stall ms | stall of new I/O ms '
            '| recovery ms | longest gap ms | slowest I/O after ms | share per path after | fail counts at the end |',
            '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|']
    for c in cells:
        fails = {}
        for r in c['repeats']:
            for l, p in (r.get('end_paths') or {}).items():
                fails.setdefault(l, []).append(p['fail_count'])
        rows.append('| %s | %s | %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |' % (
            c['kernel'], c['fault'], c['topology'], c['queue_mode'], ABBR.get(c['selector'], c['selector']), c['n'],
            ms(c, 'fio_errors'), ms(c, 'stall_ms'), ms(c, 'stall_new_io_ms'), ms(c, 'recovery_ms'), ms(c, 'max_gap_ms'),
            ms(c, 'max_lat_after_fault_ms'),
            ' '.join('%s=%.3f' % (l, v) for l, v in c['mean_shares_after'].items() if v is not None) or '-',
            ' '.join('%s=%s' % (l, '/'.join(map(str, v))) for l, v in fails.items()) or '-'))
    return '\n'.join(rows)


def update_readme(cells):
    """Rewrite the generated blocks of README.md: results (between the results-table markers) and faults
    (between the faults-table markers, from results-faults.json)."""
    p = os.path.join(HERE, 'README.md')
    s = open(p).read()
    s = re.sub(r'<!-- results-table-begin -->.*<!-- results-table-end -->',
               lambda m: '<!-- results-table-begin -->\n' + readme_block(cells) + '<!-- results-table-end -->',
               s, flags=re.S)
    fp = os.path.join(HERE, 'results-faults.json')
    if os.path.exists(fp):
        s = re.sub(r'<!-- faults-table-begin -->.*<!-- faults-table-end -->',
                   lambda m: '<!-- faults-table-begin -->\n' + faults_markdown(json.load(open(fp)))
                   + '\n<!-- faults-table-end -->', s, flags=re.S)
    open(p, 'w').write(s)


def lab_dir():
    """The lab setup.sh made: KLAB_DIR, else klab-<KLAB_KERNEL> (default 6.1) in $TMPDIR or /tmp, as run.sh finds it."""
    return os.environ.get('KLAB_DIR') or os.path.join(os.environ.get('TMPDIR') or '/tmp',
                                                      'klab-' + os.environ.get('KLAB_KERNEL', '6.1'))


def die(msg):
    print('grid.py: ' + msg, file=sys.stderr)
    sys.exit(3)


SPREAD_SD = 0.05


def spread_cells(cells, first, last, sd=SPREAD_SD):
    """The plain cells of H<first>..H<last> whose repeats spread on some kernel: a share that validate compares
    (each path's own; among equivalent paths the largest, the next, ... of each run) with a sample standard
    deviation above SD over the repeats.  Ranked, two identical paths that swap between repeats do not count as
    spread.  Returns sorted (topology, selector abbreviation, queue mode, depth) and each one's largest SD."""
    sys.path.insert(0, SRC)
    from mpathlab import validate
    out = {}
    for c in cells:
        m = re.fullmatch(r'H(\d+)', c['topology'])
        if not m or not first <= int(m.group(1)) <= last or len(c.get('repeats') or []) < 2:
            continue
        groups = validate._groups(c)
        runs = validate._kernel_runs(c, groups)
        worst = max((validate._repeat_sd(runs, g) or 0.0) for g in groups)
        key = (c['topology'], ABBR[c['selector']], c['queue_mode'], int(c['iodepth']))
        if worst > sd:
            out[key] = max(out.get(key, 0.0), worst)
    return sorted(out.items(), key=lambda kv: (int(kv[0][0][1:]), kv[0][1], kv[0][2]))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest='cmd', required=True)
    p = sub.add_parser('plan', help='print the runs.txt of each batch')
    p.add_argument('batch', nargs='*', help='batches to print (default: all)')
    p.add_argument('--rep', type=int, default=1, help='repeats of each batch (default 1)')
    p.add_argument('--runtime', type=int, default=8, help='fio runtime per run in seconds (default 8)')
    p = sub.add_parser('run', help='boot once and run a batch')
    p.add_argument('batch', nargs='+', help='one or more of %s, run in this order in one boot' % ', '.join(BATCHES))
    p.add_argument('--rep', type=int, default=1, help='repeats of the batch inside the boot (default 1)')
    p.add_argument('--runtime', type=int, default=8, help='fio runtime per run in seconds (default 8)')
    p.add_argument('--append', default='', help='extra guest kernel command line (KLAB_APPEND), e.g. idle=poll; '
                   'becomes part of the cells\' variant name (default: none)')
    p.add_argument('--runs-dir', default=None, help='write the boot folder under this folder instead of the '
                   'repository\'s runs/ (results.json is then left alone), e.g. to keep held-out runs unseen until '
                   'the model is frozen; move the folder into runs/ and collect later (default: runs/)')
    icount_help = ('the deterministic lab: qemu -icount (guest time = executed instructions, timers on time), one '
                   'vCPU; runs-icount/, results-icount.json, TABLE-icount.md (default: the emulated lab, runs/, '
                   'results.json, TABLE.md)')
    p.add_argument('--icount', action='store_true', help=icount_help)
    p = sub.add_parser('compare', help='cells run on both kernels: 6.12 - 6.1 share per path against the noise')
    p.add_argument('--icount', action='store_true', help=icount_help)
    p.add_argument('--model', action='store_true', help='also the model\'s 6.12 - 6.1 for the same path group, '
                   'predicted as mpathlab validate predicts (default: the kernels only)')
    p = sub.add_parser('boots', help='cells run in more than one boot: the spread of the boots\' means against '
                       'the spread within a boot (are a boot\'s repeats independent?)')
    p.add_argument('--icount', action='store_true', help=icount_help)
    p = sub.add_parser('spread', help='the held-out cells whose repeats spread (a compared share with a standard '
                       'deviation above %.2f on either kernel): the batch entry for three more repeats' % SPREAD_SD)
    p.add_argument('first', type=int, help='number of the first held-out topology (H<first>)')
    p.add_argument('last', type=int, help='number of the last (H<last>)')
    p.add_argument('--icount', action='store_true', help=icount_help)
    p = sub.add_parser('draw', help='draw a held-out set of topologies with a fixed seed: write its topo files '
                       'and print the batch entry for BATCHES')
    p.add_argument('seed', type=int, help='seed of Python\'s random.Random')
    p.add_argument('first', type=int, help='number of the first topology (H<first>)')
    p.add_argument('--count', type=int, default=10, help='topologies to draw (default 10)')
    p.add_argument('--of-class', type=int, default=7, help='how many of them one completion time, different '
                   'queue depths (default 7)')
    p.add_argument('--dry-run', action='store_true', help='print only, write no topo file (default: write)')
    p = sub.add_parser('summarise', help='print the summary of one raw run folder (JSON)')
    p.add_argument('rundir', help='a runs/<boot>/runs/<run> folder (meta, stat_before/after, ...)')
    p = sub.add_parser('resummarise', help='rebuild every summary.json from the raw run files, then results.json')
    p.add_argument('--icount', action='store_true', help=icount_help)
    p = sub.add_parser('collect', help='rebuild results.json and TABLE.md from the run folders')
    p.add_argument('--icount', action='store_true', help=icount_help)
    p.add_argument('--md', action='store_true', help='print a markdown table instead of the text one (default: text)')
    p.add_argument('--readme', action='store_true', help='also rewrite the results block of README.md (default: no)')
    a = ap.parse_args()
    if getattr(a, 'icount', False):
        use_icount_lab()
    for b in getattr(a, 'batch', None) or []:
        if b not in BATCHES:
            die('unknown batch %r (choose from %s)' % (b, ', '.join(BATCHES)))
    if getattr(a, 'rep', 1) < 1 or getattr(a, 'runtime', 8) < 1:
        die('--rep and --runtime must be at least 1')
    if a.cmd == 'plan':
        for b, part in boot_parts(a.batch or BATCHES, a.rep, a.runtime):
            print('# %s' % b); print(part, end='')
        return
    if a.cmd in ('compare', 'boots', 'spread'):       # read the collected cells, write nothing
        if not os.path.exists(os.path.join(HERE, RESULTS)):
            die('no %s: run grid.py collect%s first' % (RESULTS, ' --icount' if a.icount else ''))
        cells = json.load(open(os.path.join(HERE, RESULTS)))
        if a.cmd == 'boots':
            print(boot_spread_markdown(*boot_spread(cells)))
            return
        if a.cmd == 'spread':
            found = spread_cells(cells, a.first, a.last)
            for (topo, sel, mode, depth), sd in found:
                print('# %s %s %s d%d: standard deviation %.3f' % (topo, SEL[sel], mode, depth, sd))
            print(' + '.join('_cells(%r, [%r], [%r], [%d])' % key for key, _ in found) or '(none spread)')
            return
        rows = kernel_differences(cells)
        if a.model:     # the prediction of every cell, as ./mpathlab validate makes it (a few minutes)
            sys.path.insert(0, SRC)
            from mpathlab import validate
            rows = model_differences(rows, validate.compare(cells))
        print(differences_markdown(rows))
        return
    if a.cmd == 'draw':
        if not 0 <= a.of_class <= a.count or a.count < 1:
            die('--count must be at least 1 and --of-class between 0 and --count')
        drawn = draw_held_out(a.seed, a.first, a.count, a.of_class)
        files = {name: os.path.join(EXP, 'topo', name + '.txt') for name, _, _, _ in drawn}
        for path in files.values():
            if os.path.exists(path) and not a.dry_run:
                die('%s exists: a held-out set never reuses a name (choose another first)' % path)
        for name, paths, sel, depth in drawn:
            text = topology_text(paths)
            if not a.dry_run:
                with open(files[name], 'w') as f:
                    f.write(text)
            print('# %s (%s, fio depth %d): %s' % (name, SEL[sel], depth, text.strip().replace('\n', '; ')))
        print('_held_out(%s)' % ', '.join('(%r, %r, %d)' % (name, sel, depth) for name, _, sel, depth in drawn))
        return
    if a.cmd == 'summarise':
        for f in ('meta', 'stat_before', 'stat_after', 'uptime', 'cpu_before', 'cpu_after', 'queue', 'table',
                  'status_end'):
            if not os.path.exists(os.path.join(a.rundir, f)):
                die('%s: no %s file (not a finished run folder)' % (a.rundir, f))
        print(json.dumps(summarise_run(a.rundir), indent=1))
        return
    if a.cmd == 'resummarise':
        for b in sorted(os.listdir(RUNS)):
            if os.path.exists(os.path.join(RUNS, b, 'host_load.json')):
                finish_batch(os.path.join(RUNS, b))
        a.cmd, a.md, a.readme = 'collect', False, False
    if a.cmd == 'collect':
        cells = collect()
        print(markdown(cells) if a.md else table(cells))
        open(os.path.join(HERE, TABLE), 'w').write(markdown(cells) + '\n')
        if a.readme:
            update_readme(cells)
        return
    kl = lab_dir()
    if not os.path.exists(os.path.join(kl, 'kernel-release')):
        die('no kernel lab in %s: run lab/setup.sh (KLAB_KERNEL=6.1|6.12, KLAB_DIR=...) first' % kl)
    series = kernel_series(open(os.path.join(kl, 'kernel-release')).read().strip())
    stamp = time.strftime('%Y%m%dT%H%M%S', time.gmtime())
    out = os.path.join(a.runs_dir or RUNS, '%s-%s-%s' % ('+'.join(a.batch), series, stamp))
    exp = tempfile.mkdtemp(prefix='grid-exp-')
    shutil.copy(os.path.join(EXP, 'main.sh'), exp)
    shutil.copytree(os.path.join(EXP, 'topo'), os.path.join(exp, 'topo'))
    plan = boot_plan(a.batch, a.rep, a.runtime)
    open(os.path.join(exp, 'runs.txt'), 'w').write(plan)
    os.makedirs(out)
    shutil.copy(os.path.join(exp, 'runs.txt'), out)
    lab_env = ICOUNT_ENV if a.icount else {}
    # the lab's kind and the guest's CPUs travel with every run's summary: the prediction's guest takes them
    load = {'before': loadavg(), 'utc_start': stamp, 'kernel_append': a.append,
            'accel': lab_env.get('KLAB_ACCEL', os.environ.get('KLAB_ACCEL', 'tcg')),
            'guest_cpus': int(lab_env.get('KLAB_SMP', os.environ.get('KLAB_SMP', '2')))}
    # the boot's time limit: every run takes its runtime plus a few seconds of setup under emulation
    nruns = sum(1 for l in plan.splitlines() if l.startswith('RUN '))
    env = dict(os.environ, KLAB_DIR=kl, KLAB_APPEND=a.append, **lab_env,
               KLAB_TIMEOUT=os.environ.get('KLAB_TIMEOUT', str(300 + nruns * (a.runtime + 20))))
    t0 = time.time(); hb = host_cpu()
    r = subprocess.run([os.path.join(LAB, 'run.sh'), exp, out], env=env)
    ha = host_cpu()
    wall = max(time.time() - t0, 1e-3)   # a boot that fails at once must not divide by zero below
    load['after'] = loadavg(); load['wall_s'] = round(wall, 1)
    hz = os.sysconf('SC_CLK_TCK')
    # host CPU seconds used by everything, by this boot (qemu and its scripts), and by everyone else
    busy = (ha[0] - hb[0]) / hz; ours = ha[2] - hb[2]
    load['host_busy_cpus'] = round(busy / wall, 2)
    load['qemu_cpus'] = round(ours / wall, 2)
    load['others_cpus'] = round(max(0.0, busy - ours) / wall, 2)
    json.dump(load, open(os.path.join(out, 'host_load.json'), 'w'))
    shutil.rmtree(exp)
    if r.returncode:
        print('grid.py: run.sh exited %d' % r.returncode, file=sys.stderr)
    finish_batch(out)
    if a.runs_dir and os.path.abspath(a.runs_dir) != os.path.abspath(RUNS):
        # kept apart (held out): no shares printed, results.json not rebuilt
        rr = os.path.join(out, 'runs')
        n = sum(os.path.exists(os.path.join(rr, x, 'summary.json')) for x in os.listdir(rr)) if os.path.isdir(rr) else 0
        print('grid.py: %d runs summarised in %s' % (n, out))
        return
    print(table(collect()))


if __name__ == '__main__':
    try:
        main()
    except BrokenPipeError:         # grid.py ... | head
        sys.path.insert(0, SRC)
        from mpathlab.cli import reader_gone
        sys.exit(reader_gone())
