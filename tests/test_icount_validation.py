"""The simulator against the deterministic kernel lab (grid.py --icount: Debian 6.1 and 6.12 in qemu with
the instruction counter as the guest's clock, one vCPU; validation/kernel-lab/results-icount.json).

Every cell is a held-out topology (H1-H160) predicted from the topology and a guest fitted on the same boot's
single-path calibration cells; docs/validation.md, "The deterministic lab", gives the protocol and the misses.
"""
import inspect
import json
import os

import pytest
from conftest import require
from mpathlab import validate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_ICOUNT = os.path.join(ROOT, "validation", "kernel-lab", "results-icount.json")

# Cells the prediction misses here (beyond 0.03 and two standard errors of the kernel's mean over its
# repeats: three, six where three spread, batch spread); a cell leaves the list when it is predicted, and a new miss fails the test.
# Equivalent paths are compared by rank (validate._groups; from 12-07, after the eleventh set): that added
# 6.1 H3 bio and H30 mq here, where the kernel shares unevenly among identical paths and the model more so.  Two model changes
# made after this table was read took cells off it, so those are not predictions (docs/validation.md): the
# dm queue's dispatch time per request, ten request-based historical-service-time cells; a task asleep for
# a tag woken per batch of freed tags, five bio-based ones (H14, H27 on both kernels, 6.12 H23).
KNOWN_MISSES_ICOUNT = {
    ("6.1", "H22 queue-length bio d16"),
    ("6.1", "H22 historical-service-time bio d16"),
    ("6.1", "H23 historical-service-time bio d32"),
    ("6.1", "H24 historical-service-time bio d16"),
    ("6.1", "H3 historical-service-time bio d16"),
    ("6.1", "H30 historical-service-time mq d16"),
    ("6.1", "H4 historical-service-time bio d32"),
    ("6.1", "H8 historical-service-time mq d24"),
    ("6.12", "H10 historical-service-time bio d48"),
    ("6.12", "H24 historical-service-time bio d16"),
    ("6.12", "H29 historical-service-time mq d12"),
    ("6.12", "H30 historical-service-time mq d16"),
    ("6.12", "H4 service-time bio d32"),
    ("6.12", "H4 historical-service-time bio d32"),
    ("6.12", "H7 historical-service-time mq d32"),
}


@pytest.fixture(scope="module")
def icount_rows():
    path = require(RESULTS_ICOUNT, "the deterministic lab's results (validation/kernel-lab/results-icount.json)")
    with open(path) as f:
        cells = json.load(f)
    return cells, [r for r in validate.compare(cells) if not r["variant"]]


# The guest every held-out set up to the fifteenth was predicted with, and the sixteenth judged against a
# candidate (test_sixteenth_set_decides_the_deterministic_labs_completions): the lists of those sets' misses
# are that model's, as predicted.
AS_PREDICTED = {"timers": "stretches", "completion": "queued"}


@pytest.fixture(scope="module")
def predicted_rows(icount_rows):
    cells, rows = icount_rows
    if (validate.TIMERS_OF_LAB["icount"], validate.COMPLETION_OF_LAB["icount"]) == tuple(AS_PREDICTED.values()):
        return rows
    return [r for r in validate.compare(cells, **AS_PREDICTED) if not r["variant"]]


def _of_sets(rows, first, last):
    """The rows (or cells) of the held-out topologies H<first>..H<last>."""
    return [r for r in rows if r["topology"] in ["H%d" % i for i in range(first, last + 1)]]


def _decided_counts(cells, first, last, boots, options):
    """For each of ``options`` (name: compare's keyword arguments), the cells of H<first>..H<last> within the
    tolerance, both kernels together, counted on the repeats of the boots that decided a rule (their UTC
    starts) only: the repeats a spread batch added later do not change a decision already taken."""
    chosen = []
    for c in _of_sets(cells, first, last):
        reps = [r for r in c["repeats"] if validate.boot_of(r) in boots]
        chosen.append(dict(c, repeats=reps, n=len(reps)))
    counts = {}
    for name, kw in options.items():
        rows = [r for r in validate.compare(chosen, all_cells=cells, **kw) if not r["variant"]]
        assert len(rows) == 80 and all(r["n"] >= 3 for r in rows)
        counts[name] = sum(r["within"] != "no" for r in rows)
    return counts


def test_deterministic_lab_guest_is_one_vcpu_with_timers_on_time(icount_rows):
    cells, rows = icount_rows
    boots = {k: validate.calibration_boots(cells, k) for k in ("6.1", "6.12")}
    guests = {validate.fit_guest(cells, k, s, m) for k in boots for s in boots[k] for m in ("bio", "mq")}
    # every boot calibrated itself: a guest per boot and mode (6.1's first boots ran one repeat, then two)
    assert len(boots["6.1"]) >= 3 and len(boots["6.12"]) >= 1 and len(guests) == 2 * sum(map(len, boots.values()))
    for g in guests:
        assert g.cpus == 1 and g.late_ns < 20_000 and 10_000 < g.submit_ns + g.complete_ns < 25_000, g.describe()
        # request-based dm's dispatch time per request: c0's mq CPU per I/O less its bio one, a few us
        assert (1_000 < g.dispatch_ns < 5_000) if g.queue_mode == "mq" else g.dispatch_ns == 0, g.describe()


def test_deterministic_lab_predicted_from_the_topology(predicted_rows):
    rows = _of_sets(predicted_rows, 1, 30)
    assert {r["kernel_series"] for r in rows} == {"6.1", "6.12"}
    assert all(r["n"] >= 3 for r in rows), [(r["kernel_series"], r["cell"], r["n"]) for r in rows if r["n"] < 3]
    for kernel in ("6.1", "6.12"):
        assert len([r for r in rows if r["kernel_series"] == kernel]) == 117
    missed = {(r["kernel_series"], r["cell"]) for r in rows if r["within"] == "no"}
    new = ["%s %s: kernel %.3f predicted %.3f" % (r["kernel_series"], r["cell"], r["kernel"][r["worst_path"]],
                                                  r["sim"][r["worst_path"]])
           for r in rows if (r["kernel_series"], r["cell"]) in missed - KNOWN_MISSES_ICOUNT]
    assert not new, new
    fixed = sorted(KNOWN_MISSES_ICOUNT - missed)
    assert not fixed, fixed
    # queue-length and service-time within 0.03 in all but one cell of 58 on each kernel
    for kernel in ("6.1", "6.12"):
        others = [r for r in rows if r["kernel_series"] == kernel and "historical" not in r["cell"]]
        assert len(others) == 58 and sum(r["within"] == "no" for r in others) == 1, kernel


def test_deterministic_lab_iops_within_a_tenth(icount_rows):
    """With the timers on time the prediction's IOPS are fio's: within 10% in more than nine cells of ten."""
    rows = icount_rows[1]
    for kernel, ratios in validate.iops_ratios(rows).items():
        assert sum(abs(x - 1) <= 0.1 for x in ratios) > 0.9 * len(ratios), kernel


# The fifth held-out set (H31-H40): committed before it ran and before the two model changes above, both
# committed before its results were read, so this is a prediction of both (docs/validation.md, "The fifth
# held-out set").  Every miss is listed; a new one fails the test, and so does one that is now predicted.
KNOWN_MISSES_HELDOUT5 = {
    ("6.1", "H36 historical-service-time mq d24"),
    ("6.1", "H40 historical-service-time bio d32"),
    ("6.12", "H31 historical-service-time mq d16"),
    # the kernel's six repeats in two modes (the 16-tag path 0.88 or 0.25), the model in the first
    ("6.12", "H33 historical-service-time bio d24"),
    ("6.12", "H36 historical-service-time mq d24"),
    # with six repeats (batch spread): the kernel gives each 2-tag path 0.11-0.12, the model 0.06
    ("6.1", "H37 historical-service-time bio d32"),
    ("6.12", "H37 historical-service-time bio d32"),
}
# The sixth (H41-H50): committed before it ran and before any model change after the two above.  By rank among
# equivalent paths (since 12-07) 6.12 H48 bio and H50 mq on both kernels miss too: 6.12 H48 bio's two identical
# paths share nearly evenly in the kernel (the lesser 0.35) while the model piles onto one (0.06).
KNOWN_MISSES_HELDOUT6 = {
    ("6.1", "H43 service-time bio d32"),
    ("6.1", "H43 historical-service-time bio d32"),
    ("6.1", "H43 historical-service-time mq d32"),
    ("6.1", "H44 historical-service-time mq d64"),
    ("6.1", "H46 historical-service-time mq d16"),
    ("6.1", "H50 historical-service-time bio d20"),
    ("6.1", "H50 historical-service-time mq d20"),
    ("6.12", "H48 historical-service-time bio d48"),
    ("6.12", "H50 historical-service-time mq d20"),
    ("6.12", "H43 service-time bio d32"),
    ("6.12", "H43 historical-service-time bio d32"),
    ("6.12", "H43 historical-service-time mq d32"),
    ("6.12", "H46 historical-service-time mq d16"),
    ("6.12", "H50 historical-service-time bio d20"),
}


# The seventh (H51-H60): committed before it ran, the model unchanged since the sixth
KNOWN_MISSES_HELDOUT7 = {
    ("6.1", "H54 historical-service-time mq d24"),
    ("6.1", "H57 historical-service-time mq d16"),
    ("6.1", "H58 historical-service-time bio d32"),
    ("6.12", "H53 historical-service-time bio d20"),
    ("6.12", "H56 historical-service-time bio d32"),
    ("6.12", "H57 historical-service-time mq d16"),
    ("6.12", "H58 historical-service-time bio d32"),
    ("6.12", "H59 historical-service-time bio d40"),
}


# The eighth (H61-H70): committed before it ran, the model unchanged since the sixth.  With three repeats
# per cell 35 of 40 on each kernel; five HST bio cells whose repeats spread got three more in another boot
# (batch spread8), which makes 6.1 H70 and 6.12 H65, H66 misses (six repeats: a smaller standard error).
KNOWN_MISSES_HELDOUT8 = {
    ("6.1", "H61 historical-service-time bio d32"),
    ("6.1", "H65 historical-service-time bio d32"),
    ("6.1", "H67 historical-service-time mq d20"),
    ("6.1", "H69 historical-service-time bio d48"),
    ("6.1", "H70 historical-service-time bio d24"),
    ("6.1", "H70 historical-service-time mq d24"),
    ("6.12", "H61 historical-service-time bio d32"),
    ("6.12", "H64 historical-service-time mq d24"),
    ("6.12", "H65 historical-service-time bio d32"),
    ("6.12", "H66 historical-service-time bio d16"),
    ("6.12", "H67 historical-service-time mq d20"),
    ("6.12", "H68 historical-service-time bio d40"),
    ("6.12", "H69 historical-service-time bio d48"),
    ("6.12", "H70 historical-service-time bio d24"),
}


# The ninth (H71-H80): drawn with a fixed seed, committed before it ran, the model unchanged since the sixth.
# With three repeats 36 and 35 of 40; three cells whose repeats spread got three more (batch spread9): 6.1 H78
# mq comes within the tolerance, 6.12 H71 bio leaves it.  H72 bio: the kernel runs starved by its 1-tag path
# on both kernels, the model (seed 1) fed; its seed 2 runs starved too (docs/validation.md).
KNOWN_MISSES_HELDOUT9 = {
    ("6.1", "H72 historical-service-time bio d24"),
    ("6.1", "H73 historical-service-time bio d24"),
    ("6.1", "H73 historical-service-time mq d24"),
    ("6.12", "H71 historical-service-time bio d64"),
    ("6.12", "H72 historical-service-time bio d24"),
    ("6.12", "H73 historical-service-time mq d24"),
    ("6.12", "H75 historical-service-time bio d20"),
    ("6.12", "H80 historical-service-time bio d24"),
    ("6.12", "H80 historical-service-time mq d24"),
}


# The tenth (H81-H90): drawn by `grid.py draw 2026120745 81`, committed before it ran, the model unchanged.  H85
# (four 6 ms paths; 5, 4, 4 and 3 of every 16 requests) is one state in every run, kernel and model, but which
# of three paths carries the 5 differs from run to run; H82 bio: the kernel starves as in H72, the model with
# 6.12's guest runs fed (with 6.1's, starved).  Three more repeats of H85 mq and H87 bio (spread10) moved nothing.
KNOWN_MISSES_HELDOUT10 = {
    ("6.1", "H85 historical-service-time mq d16"),
    ("6.1", "H90 service-time bio d64"),
    ("6.12", "H82 historical-service-time bio d40"),
    ("6.12", "H85 historical-service-time bio d16"),
}


# The eleventh (H91-H100): drawn by `grid.py draw 2026120746 91`, committed before it ran, the model unchanged.
# H94 bio (10 ms, unlimited and 1 tag): the kernel starves as in H72 and H82, the model starts so and leaves by
# 4 s; H93 (three 2 ms paths, none of which fills), compared by rank since 12-07: bio within, mq not (the
# smallest share 0.29 in the model, 0.32 in the kernel); 6.1 H97 bio by rank: the 48- and 32-tag paths never
# fill at depth 24, and the kernel gives the lesser of them 0.26, the model 0.34.
# Three cells spread on 6.1 (H92 bio, H95 mq, H97 bio); their three more (spread11) put 6.12 H95 mq out.
KNOWN_MISSES_HELDOUT11 = {
    ("6.1", "H100 historical-service-time bio d24"),
    ("6.1", "H100 historical-service-time mq d24"),
    ("6.1", "H92 historical-service-time bio d48"),
    ("6.1", "H93 historical-service-time mq d16"),
    ("6.1", "H94 historical-service-time bio d16"),
    ("6.1", "H97 historical-service-time bio d24"),
    ("6.1", "H98 historical-service-time mq d40"),
    ("6.12", "H100 historical-service-time mq d24"),
    ("6.12", "H93 historical-service-time mq d16"),
    ("6.12", "H94 historical-service-time bio d16"),
    ("6.12", "H95 historical-service-time bio d20"),
    ("6.12", "H95 historical-service-time mq d20"),
    ("6.12", "H97 historical-service-time bio d24"),
    ("6.12", "H98 historical-service-time mq d40"),
}


# The twelfth (H101-H110): drawn by `grid.py draw 2026120747 101`, committed before it ran, the model unchanged,
# judged with equivalent paths by rank (committed before it ran too).  H108 and H110 bio (a 1 ms path beside
# slower paths whose tags fill) miss with every selector: the kernel makes 4200-6000 IOPS, the model 6000-10400,
# giving the fast path more; the first queue-length and service-time misses since the tenth set.
KNOWN_MISSES_HELDOUT12 = {
    ("6.1", "H102 historical-service-time bio d20"),
    ("6.1", "H102 historical-service-time mq d20"),
    ("6.1", "H103 historical-service-time bio d20"),
    ("6.1", "H103 historical-service-time mq d20"),
    ("6.1", "H108 historical-service-time bio d24"),
    ("6.1", "H108 queue-length bio d24"),
    ("6.1", "H110 historical-service-time bio d48"),
    ("6.1", "H110 service-time bio d48"),
    ("6.12", "H102 historical-service-time bio d20"),
    ("6.12", "H102 historical-service-time mq d20"),
    ("6.12", "H103 historical-service-time mq d20"),
    ("6.12", "H104 historical-service-time mq d8"),
    ("6.12", "H108 historical-service-time bio d24"),
    ("6.12", "H108 queue-length bio d24"),
    ("6.12", "H110 historical-service-time bio d48"),
    ("6.12", "H110 service-time bio d48"),
}


# The thirteenth (H111-H120): drawn by `grid.py draw 2026120748 111`, committed before it ran with the rule that
# decides the deterministic lab's timer mode on it (below).  With the stretches 34 and 35 of 40; three more
# repeats of its three cells that spread (spread13) bring 6.12 H112 bio within two standard errors.
KNOWN_MISSES_HELDOUT13 = {
    ("6.1", "H112 historical-service-time bio d32"),
    ("6.1", "H112 historical-service-time mq d32"),
    ("6.1", "H113 historical-service-time bio d20"),
    ("6.1", "H113 historical-service-time mq d20"),
    ("6.1", "H115 historical-service-time bio d40"),
    ("6.1", "H120 historical-service-time mq d8"),
    ("6.12", "H113 historical-service-time bio d20"),
    ("6.12", "H115 historical-service-time bio d40"),
    ("6.12", "H118 historical-service-time bio d32"),
    ("6.12", "H119 historical-service-time mq d48"),
}
# H111-H120 within the tolerance, both kernels together, with each timer mode (validate --timers)
COUNTS_HELDOUT13 = {"stretches": 69, "jitter": 67}


# The fourteenth (H121-H130): drawn by `grid.py draw 2026120749 121`, committed before it ran with the rule that
# decides on it between one model run and the mean of four (below).  With one run 37 and 38 of 40.  Three more
# repeats of its five cells that spread (spread14): 6.1 H122 bio comes within the tolerance, 6.1 H125 bio leaves
# it (the kernel's 8-tag path 0.61 in five of six repeats; the model, like 6.12's kernel, loads the unlimited one).
KNOWN_MISSES_HELDOUT14 = {
    ("6.1", "H123 historical-service-time bio d48"),
    ("6.1", "H124 historical-service-time bio d64"),
    ("6.1", "H125 historical-service-time bio d32"),
    ("6.12", "H124 historical-service-time bio d64"),
    ("6.12", "H126 historical-service-time bio d48"),
}
# H121-H130 within the tolerance, both kernels together, by model runs per prediction (validate --runs)
COUNTS_HELDOUT14 = {1: 75, 4: 76}


# The fifteenth (H131-H140): drawn by `grid.py draw 2026120750 131`, committed before it ran, the model unchanged.
# 33 and 34 of 40 on their own three repeats, 32 and 33 after three more repeats of its four cells that spread
# (spread15): 6.1 H132 and H138 bio leave two standard errors (on H132 the kernel's 24-tag path takes 0.05 in two
# repeats and 0.86 in four, the model 0.06), 6.1 H133 mq comes within the tolerance, 6.12 H134 bio leaves two
# standard errors.
KNOWN_MISSES_HELDOUT15 = {
    ("6.1", "H132 historical-service-time bio d48"),
    ("6.1", "H134 historical-service-time bio d48"),
    ("6.1", "H135 historical-service-time bio d48"),
    ("6.1", "H137 historical-service-time bio d20"),
    ("6.1", "H138 historical-service-time bio d16"),
    ("6.1", "H138 historical-service-time mq d16"),
    ("6.1", "H139 historical-service-time bio d40"),
    ("6.1", "H139 historical-service-time mq d40"),
    ("6.12", "H133 historical-service-time bio d16"),
    ("6.12", "H133 historical-service-time mq d16"),
    ("6.12", "H134 historical-service-time bio d48"),
    ("6.12", "H135 historical-service-time bio d48"),
    ("6.12", "H136 historical-service-time bio d24"),
    ("6.12", "H139 historical-service-time bio d40"),
    ("6.12", "H139 historical-service-time mq d40"),
}


# The sixteenth (H141-H150): drawn by `grid.py draw 2026120751 141`, committed before it ran; the candidate (the
# completion's CPU time as interrupt work, a tag's sleeper issuing 7 us after, every timer late by the same) and
# the rule that decides it committed before its runs were read.  The candidate's misses: the deterministic lab's
# model from then on.
KNOWN_MISSES_HELDOUT16 = {
    ("6.1", "H143 historical-service-time bio d20"),
    ("6.1", "H144 historical-service-time bio d48"),
    ("6.1", "H144 historical-service-time mq d48"),
    ("6.1", "H145 historical-service-time bio d20"),
    ("6.1", "H146 historical-service-time bio d16"),
    ("6.1", "H148 historical-service-time mq d64"),
    ("6.1", "H149 historical-service-time mq d40"),
    ("6.12", "H142 historical-service-time bio d8"),
    ("6.12", "H142 historical-service-time mq d8"),
    ("6.12", "H143 historical-service-time bio d20"),
    ("6.12", "H143 historical-service-time mq d20"),
    ("6.12", "H144 historical-service-time bio d48"),
    ("6.12", "H145 historical-service-time bio d20"),
    ("6.12", "H146 historical-service-time bio d16"),
    ("6.12", "H146 historical-service-time mq d16"),
    ("6.12", "H147 historical-service-time bio d16"),
    ("6.12", "H149 historical-service-time mq d40"),
}
COUNTS_HELDOUT16 = {"queued": 64, "interrupt": 65}
# the model the sixteenth set chose, as it was when the set was listed (the seventeenth added late wakes)
AS_PREDICTED16 = {"timers": "constant", "completion": "interrupt", "wakes": "prompt"}


def test_sixteenth_set_decides_the_deterministic_labs_completions(icount_rows):
    """The rule committed with H141-H150 before their runs were read (docs/validation.md, "The sixteenth held-out
    set: the completion as an interrupt"): the deterministic lab takes --timers constant --completion interrupt
    if that gets more of the set's 80 cells within the tolerance than the model as it was; otherwise that model
    stays.  Counted on the repeats of the set's own two boots; the emulated lab keeps its model either way."""
    cells, rows = icount_rows
    counts = _decided_counts(cells, 141, 150, ("20261207T223321", "20261207T232019"),
                             {"queued": AS_PREDICTED, "interrupt": AS_PREDICTED16})
    assert counts == COUNTS_HELDOUT16
    took = counts["interrupt"] > counts["queued"]
    assert (validate.TIMERS_OF_LAB["icount"], validate.COMPLETION_OF_LAB["icount"]) == (
        ("constant", "interrupt") if took else tuple(AS_PREDICTED.values()))
    assert (validate.TIMERS_OF_LAB["tcg"], validate.COMPLETION_OF_LAB["tcg"]) == ("stretches", "queued")
    # and the set's misses with the model it chose, every repeat counted
    mine = [r for r in validate.compare(_of_sets(cells, 141, 150), all_cells=cells, **AS_PREDICTED16)
            if not r["variant"]]
    assert len(mine) == 80 and all(r["n"] >= 3 for r in mine)
    assert {(r["kernel_series"], r["cell"]) for r in mine if r["within"] == "no"} == KNOWN_MISSES_HELDOUT16


# The seventeenth (H151-H160): drawn by `grid.py draw 2026120852 151`, committed before it ran; the candidate (a
# share of the tag sleepers' wakes late, each kernel's own measure from the lab's traces) and the rule that
# decides it committed before its runs were read.  The candidate's misses: the deterministic lab's model from then
# on.
KNOWN_MISSES_HELDOUT17 = {
    ("6.1", "H151 historical-service-time bio d32"),
    ("6.1", "H151 historical-service-time mq d32"),
    ("6.1", "H152 historical-service-time bio d8"),
    ("6.1", "H152 historical-service-time mq d8"),
    ("6.1", "H159 queue-length bio d8"),
    ("6.1", "H160 historical-service-time mq d40"),
    ("6.12", "H152 historical-service-time mq d8"),
    ("6.12", "H153 historical-service-time bio d32"),
    ("6.12", "H154 historical-service-time bio d24"),
    ("6.12", "H159 queue-length bio d8"),
    ("6.12", "H160 historical-service-time mq d40"),
}
COUNTS_HELDOUT17 = {"prompt": 68, "late": 69}


def test_seventeenth_set_decides_the_deterministic_labs_wakes(icount_rows):
    """The rule committed with the candidate before H151-H160's runs were read (docs/validation.md, "The
    seventeenth held-out set: late wakes"): the deterministic lab takes --wakes late if that gets more of the set's
    80 cells within the tolerance than prompt wakes; otherwise prompt stays.  Counted on the repeats of the set's
    own two boots; the emulated lab's guest has no woken issue either way."""
    cells, rows = icount_rows
    counts = _decided_counts(cells, 151, 160, ("20261208T005533", "20261208T014013"),
                             {wakes: dict(AS_PREDICTED16, wakes=wakes) for wakes in ("prompt", "late")})
    assert counts == COUNTS_HELDOUT17
    assert validate.WAKES_OF_LAB == {"tcg": "prompt", "icount": "late" if counts["late"] > counts["prompt"]
                                     else "prompt"}
    mine = _of_sets(rows, 151, 160)
    assert len(mine) == 80 and all(r["n"] >= 3 for r in mine)
    assert {(r["kernel_series"], r["cell"]) for r in mine if r["within"] == "no"} == KNOWN_MISSES_HELDOUT17


@pytest.mark.parametrize("first,known,kernels_run", [(31, KNOWN_MISSES_HELDOUT5, ["6.1", "6.12"]),
                                                     (41, KNOWN_MISSES_HELDOUT6, ["6.1", "6.12"]),
                                                     (51, KNOWN_MISSES_HELDOUT7, ["6.1", "6.12"]),
                                                     (61, KNOWN_MISSES_HELDOUT8, ["6.1", "6.12"]),
                                                     (71, KNOWN_MISSES_HELDOUT9, ["6.1", "6.12"]),
                                                     (81, KNOWN_MISSES_HELDOUT10, ["6.1", "6.12"]),
                                                     (91, KNOWN_MISSES_HELDOUT11, ["6.1", "6.12"]),
                                                     (101, KNOWN_MISSES_HELDOUT12, ["6.1", "6.12"]),
                                                     (111, KNOWN_MISSES_HELDOUT13, ["6.1", "6.12"]),
                                                     (121, KNOWN_MISSES_HELDOUT14, ["6.1", "6.12"]),
                                                     (131, KNOWN_MISSES_HELDOUT15, ["6.1", "6.12"])])
def test_held_out_sets_of_the_deterministic_lab_predicted(predicted_rows, first, known, kernels_run):
    rows = _of_sets(predicted_rows, first, first + 9)
    kernels = sorted({r["kernel_series"] for r in rows})
    assert kernels == kernels_run
    for kernel in kernels:
        mine = [r for r in rows if r["kernel_series"] == kernel]
        assert len(mine) == 40 and all(r["n"] >= 3 for r in mine), kernel
    missed = {(r["kernel_series"], r["cell"]) for r in rows if r["within"] == "no"}
    assert missed == known, sorted(missed)


def test_readme_states_the_deterministic_labs_totals(icount_rows):
    """The README's table of the deterministic lab is this table's count, not a number copied once."""
    import re
    readme = open(os.path.join(ROOT, "README.md")).read()
    rows = _of_sets(icount_rows[1], 1, 160)
    hst = lambda r: "historical" in r["cell"]
    late = lambda r: int(r["topology"][1:]) >= 31
    for label, keep in (("deterministic", lambda r: True), ("of which queue-length and service-time",
                                                            lambda r: not hst(r)),
                        ("of which historical-service-time", hst), ("of which H31-H160", late)):
        line = re.search(r"^\| %s[^|]*\| (\d+) \| (\d+) \| (\d+) \|$" % re.escape(label), readme, re.M)
        assert line, label
        n, k61, k612 = map(int, line.groups())
        for kernel, stated in (("6.1", k61), ("6.12", k612)):
            mine = [r for r in rows if r["kernel_series"] == kernel and keep(r)]
            assert (len(mine), sum(r["within"] != "no" for r in mine)) == (n, stated), (label, kernel)


def test_thirteenth_set_decides_the_deterministic_labs_timers(icount_rows):
    """The rule committed with H111-H120 before they ran (docs/validation.md, "The thirteenth held-out set:
    stretches or jitter"): the deterministic lab takes the jitter if it gets more of the set's 80 cells within
    the tolerance than the stretches; otherwise the stretches stay.  Counted on the repeats of the set's own
    two boots."""
    counts = _decided_counts(icount_rows[0], 111, 120, ("20261207T155134", "20261207T161812"),
                             {timers: {"timers": timers, "completion": "queued"} for timers in ("stretches", "jitter")})
    assert counts == COUNTS_HELDOUT13
    chose = "jitter" if counts["jitter"] > counts["stretches"] else "stretches"
    # the sixteenth set replaced that choice with its candidate's timers (test below)
    assert validate.TIMERS_OF_LAB["icount"] == ("constant" if validate.COMPLETION_OF_LAB["icount"] == "interrupt"
                                                else chose)
    assert validate.TIMERS_OF_LAB["tcg"] == "stretches"


def test_fourteenth_set_decides_the_number_of_model_runs(icount_rows):
    """The rule committed with H121-H130 before they ran (docs/validation.md, "The fourteenth held-out set: one
    run or the mean of four"): the table's prediction becomes the mean of four model runs if that gets at least
    two more of the set's 80 cells within the tolerance than one run; otherwise one run stays.  Counted on the
    repeats of the set's own two boots."""
    counts = _decided_counts(icount_rows[0], 121, 130, ("20261207T171251", "20261207T174127"),
                             {runs: dict(AS_PREDICTED, runs=runs) for runs in COUNTS_HELDOUT14})
    assert counts == COUNTS_HELDOUT14
    # the table's own prediction (compare's default, and so validate's) is what the rule chose
    chose = 4 if counts[4] >= counts[1] + 2 else 1
    assert inspect.signature(validate.compare).parameters["runs"].default == chose


def test_guest_with_its_completion_as_an_interrupt_and_constant_timers():
    """--completion interrupt: a fifth of the CPU time per I/O is the completion's interrupt work (the rest
    the submission), and a tag's sleeper issues 7 us after; --timers constant: each completion late by the
    lateness itself, with no timers held."""
    g = validate.Guest("6.1", 8_000, 6_000, 3_000, ["c0 bio d64"], timers="constant", completion="interrupt")
    host = g.host()
    assert (host.submit_ns, host.complete_ns, host.completion_irq, host.woken_issue_ns) == (11_200, 2_800, True, 7_000)
    assert host.timer_away_ns == 0 and g.service(4_000_000).mean_ns == 4_003_000
    assert "completion 3 us as interrupt work, a tag's sleeper issuing 7 us after" in g.describe()
    assert "timer late 3 (the same per completion) us" in g.describe()
    queued = validate.Guest("6.1", 8_000, 6_000, 3_000, ["c0 bio d64"]).host()
    assert (queued.submit_ns, queued.complete_ns, queued.completion_irq, queued.woken_issue_ns) == (8_000, 6_000,
                                                                                                   False, 0)
    assert queued.timer_away_ns > 0
    with pytest.raises(ValueError, match="completion must be one of queued, interrupt"):
        validate.Guest("6.1", 8_000, 6_000, 3_000, [], completion="irq")


def test_guest_with_late_wakes():
    """--wakes late: a share of the tag sleepers' wakes issues later still, each kernel's own measure (1% by 9 us
    on 6.1, 0.8% by 5 us on 6.12); only where a sleeper's issue is modelled at all (the interrupt completion)."""
    for kernel, share, late_ns, said in (("6.1", 0.01, 9_000, "1% of them 9 us"), ("6.12", 0.008, 5_000,
                                                                                  "0.8% of them 5 us")):
        g = validate.Guest(kernel, 8_000, 6_000, 3_000, ["c0 bio d64"], timers="constant", completion="interrupt",
                           wakes="late")
        host = g.host()
        assert (host.woken_issue_ns, host.woken_late_share, host.woken_late_ns) == (7_000, share, late_ns)
        assert "a tag's sleeper issuing 7 us after, %s later" % said in g.describe()
    prompt = validate.Guest("6.1", 8_000, 6_000, 3_000, [], timers="constant", completion="interrupt").host()
    queued = validate.Guest("6.1", 8_000, 6_000, 3_000, [], wakes="late").host()
    assert (prompt.woken_late_ns, queued.woken_late_ns, queued.woken_issue_ns) == (0, 0, 0)
    with pytest.raises(ValueError, match="wakes must be one of prompt, late"):
        validate.Guest("6.1", 8_000, 6_000, 3_000, [], wakes="sometimes")
