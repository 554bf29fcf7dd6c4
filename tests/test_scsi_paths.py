"""SCSI path devices (sim/scsi.py): the midlayer's budget, the host's shared tags, device states, error
classes and retries, checked against hand-computed runs (constant service times, so every instant is
known) and against invariants on random topologies."""
from __future__ import annotations

import random

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib  # type: ignore

from mpathlab.sim.engine import Simulation
from mpathlab.sim.fast import eligible
from mpathlab.sim.scsi import ERRORS, SDEV_OFFLINE, ScsiDevice, ScsiHost, ScsiHostModel
from mpathlab.target import blk_path_error
from mpathlab.topology import topology_from_dict
from mpathlab.workload.fio import parse_fio

MS = 1_000_000


class Recorder(Simulation):
    """A run that keeps (time, path, error) of every I/O fio sees end."""

    def _complete(self, io, error):
        self.ends.append((self.now, error))
        super()._complete(io, error)


def run(topo: str, job: str, **kw):
    t = topology_from_dict(tomllib.loads(topo), "t.toml")
    sim = Recorder(t.table, t.paths, parse_fio(job).jobs, engine="python", **{**t.sim_kwargs(), **kw})
    sim.ends = []
    res = sim.run()
    res.check_accounting()
    return sim, res


def path(name, minor, *, qd=None, host=None, service="1ms", par=8, faults=""):
    lines = ["[paths.%s]" % name, 'devt = "8:%d"' % minor, 'kind = "scsi"', 'service = "%s"' % service,
             "parallelism = %d" % par]
    if qd:
        lines.append("queue_depth = %d" % qd)
    if host:
        lines.append('scsi_host = "%s"' % host)
    if faults:
        lines.append("faults = [%s]" % faults)
    return "\n".join(lines) + "\n"


def table(selector_paths, features="0", selector="round-robin"):
    devs = " ".join("%s 1" % p for p in selector_paths)
    return '[multipath]\ntable = "0 1048576 multipath %s 0 1 1 %s 0 %d 1 %s"\n' % (
        features, selector, len(selector_paths), devs)


def job(depth, n=None, extra=""):
    j = "[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=%d\n" % depth
    return j + ("number_ios=%d\n" % n if n else "runtime=40ms\ntime_based\n") + extra


def test_a_path_at_its_queue_depth_refuses_the_request_and_dm_requeues_it():
    # One path, queue_depth 2, 1 ms per command, fio iodepth 4, 8 I/Os.  dm's queue maps the requests in
    # turn: two get budgets, the third is refused (BLK_STS_RESOURCE: clone released, the request stays
    # at the head), dm re-runs at once and is refused again (now SCHED_RESTART), then the completions at
    # 1 ms restart it.  So two complete each ms, and four dispatches are refused (at 0, 0, 1 and 2 ms).
    sim, res = run(table(["sda"]) + path("sda", 0, qd=2), job(4, 8))
    assert [t for t, _ in sim.ends] == [1 * MS, 1 * MS, 2 * MS, 2 * MS, 3 * MS, 3 * MS, 4 * MS, 4 * MS]
    assert sim.blk.resource_stalls == 4
    dev = sim.devices[0]
    assert dev.peak_in_flight == 2 and dev.scsi.device_busy == 0 and dev.scsi.host.tags_used == 0
    # the compiled core runs SCSI paths (tests/test_fastcore_scsi.py compares it with this engine)
    t = topology_from_dict(tomllib.loads(table(["sda"]) + path("sda", 0, qd=2)), "t.toml")
    assert eligible(Simulation(t.table, t.paths, parse_fio(job(4, 8)).jobs, **t.sim_kwargs())) == ""


def test_bio_based_the_request_waits_in_the_path_queue_for_a_budget():
    # Bio-based: no budget, the request keeps its tag and waits in the path's queue; the completion of
    # the device's command runs the queue (scsi_run_queue_async).  Same times, nothing requeued in dm.
    t = table(["sda"], features="2 queue_mode bio") + path("sda", 0, qd=2)
    sim, res = run(t, job(4, 8))
    assert [t for t, _ in sim.ends] == [1 * MS, 1 * MS, 2 * MS, 2 * MS, 3 * MS, 3 * MS, 4 * MS, 4 * MS]
    assert sim.blk.resource_stalls == 0 and sim.devices[0].peak_in_flight == 4     # dm counts the waiting


def test_two_paths_share_their_hosts_can_queue():
    # Two paths behind one host of can_queue 8, no queue_depth.  With both queues active blk-mq's fair
    # share lets each hold max(ceil(8/2), 4) = 4 tags: 8 commands at a time, 4 per path, so 32 I/Os at
    # iodepth 16 end in 4 rounds of 1 ms.  Behind hosts of their own they would run 16 at a time.
    hosts = "[scsi_hosts.h0]\ncan_queue = 8\n"
    sim, res = run(table(["sda", "sdb"]) + path("sda", 0, host="h0", par=16) + path("sdb", 16, host="h0", par=16)
                   + hosts, job(16, 32))
    assert [t for t, _ in sim.ends] == [m * MS for m in (1, 2, 3, 4) for _ in range(8)]
    assert [d.peak_in_flight for d in sim.devices] == [4, 4]
    sim, res = run(table(["sda", "sdb"]) + path("sda", 0, par=16) + path("sdb", 16, par=16), job(16, 32))
    assert [t for t, _ in sim.ends] == [m * MS for m in (1, 2) for _ in range(16)]


def test_fair_share_of_a_host_tag_set():
    # hctx_may_queue: depth = max(ceil(can_queue / users), 4); one user takes everything
    h = ScsiHost(ScsiHostModel("h", can_queue=10))
    a, b, c = (ScsiDevice(h, 0) for _ in range(3))
    assert sum(a.host.get_tag(a) for _ in range(12)) == 10        # alone: the whole set
    for _ in range(10):
        h.put_tag(a)
    h.active.update((a, b, c))
    assert [sum(h.get_tag(d) for _ in range(8)) for d in (a, b, c)] == [4, 4, 2]   # ceil(10/3)=4; 2 left


def test_an_offline_paths_waiting_io_is_retried_on_the_other_path():
    # Bio-based rr over sda (queue_depth 1) and sdb.  At 0 ms: io1 -> sda (runs), io2 -> sdb, io3 -> sda
    # (waits for the budget), io4 -> sdb.  sda goes offline at 0.5 ms; io1, already with the LLD, still
    # completes at 1 ms, and fio's next two I/Os (io5 after io1, io7 after io4) are mapped to sda too,
    # behind io3.  io1's completion runs sda's queue: io3 is refused by scsi_queue_rq (offline:
    # BLK_STS_IOERR), a path error, so dm fails sda and io3 goes to sdb; each refusal frees the budget
    # and runs the queue again, so io5 and io7 are refused and moved the same way.  All end at 2 ms.
    t = (table(["sda", "sdb"], features="2 queue_mode bio")
         + path("sda", 0, qd=1, faults='{ at = "500us", action = "offline" }') + path("sdb", 16))
    sim, res = run(t, job(4, 8))
    sda, sdb = sim.devices
    assert res.errored == 0 and sda.completed == 1 and sda.errors == 3 and sda.scsi.rejected == 3
    assert sdb.completed == 7 and sim.mp.pgpaths[0].fail_count == 1
    assert sorted(t for t, _ in sim.ends)[:7] == [1 * MS] * 3 + [2 * MS] * 4


def test_request_based_offline_path_fails_at_the_first_clone_and_io_moves_on():
    # Request-based: after sda goes offline the next clone sent to it is refused with BLK_STS_IOERR at
    # once; multipath_end_io fails the path and requeues the request, which runs on sdb.  No error for fio.
    t = table(["sda", "sdb"]) + path("sda", 0, faults='{ at = "2500us", action = "offline" }') + path("sdb", 16)
    sim, res = run(t, job(2, 20))
    sda, sdb = sim.devices
    assert res.errored == 0 and sda.errors == 1 and sim.mp.nr_valid_paths == 1
    assert sda.completed == 3 and sdb.completed == 17        # one of each pair at 1, 2 and 3 ms on sda


def test_a_powered_off_path_is_failed_through_pg_init_and_its_request_waits_100ms():
    # Request-based: the disk's queue dies at once (a null_blk device powered off), so the clone
    # allocation fails and dm-mpath calls activate_or_offline_path: pg_init_done(SCSI_DH_DEV_OFFLINED)
    # fails the path and kicks the requeue list (process_queued_io_list), then the request is requeued
    # with DM_MAPIO_DELAY_REQUEUE, which re-arms the list's work to 100 ms; the other I/O carries on on sdb.
    t = table(["sda", "sdb"]) + path("sda", 0, faults='{ at = "2500us", action = "poweroff" }') + path("sdb", 16)
    sim, res = run(t, job(2, 20))
    assert res.errored == 0 and sim.mp.nr_valid_paths == 1
    late = [t for t, _ in sim.ends if t > 50 * MS]
    assert late == [104 * MS]           # mapped at 3 ms, requeued to 103 ms, served in 1 ms


def test_a_deleted_lun_is_cancelled_first_and_fails_its_path_at_once():
    # A sysfs delete puts the LUN in SDEV_CANCEL before sd_remove tears its disk down (scsi_sysfs.c
    # __scsi_remove_device): the clone sent to it at 3 ms is refused with BLK_STS_OFFLINE
    # (scsi_device_state_check), a path error, so multipath_end_io fails sda and requeues the request at
    # once: it runs on sdb and ends at 4 ms, nothing waits 100 ms.
    t = table(["sda", "sdb"]) + path("sda", 0, faults='{ at = "2500us", action = "delete" }') + path("sdb", 16)
    sim, res = run(t, job(2, 20))
    sda, sdb = sim.devices
    assert res.errored == 0 and sim.mp.nr_valid_paths == 1 and sda.errors == 1 and sda.scsi.rejected == 1
    assert max(t for t, _ in sim.ends) < 20 * MS and sda.completed == 3 and sdb.completed == 17


def test_queue_if_no_path_holds_io_until_reinstatement():
    # Bio-based, queue_if_no_path: both paths go offline at 10.5 ms.  The I/Os in flight complete at
    # 11 ms; the next two are refused, both paths fail, and the bios wait in the target.  At 30 ms the
    # paths come back (reinstate_path, as multipathd sends it): the held bios end at 31 ms.  No errors.
    f = '{ at = "10500us", action = "offline" }, { at = "30ms", action = "reinstate" }'
    t = (table(["sda", "sdb"], features="3 queue_if_no_path queue_mode bio")
         + path("sda", 0, faults=f) + path("sdb", 16, faults=f))
    sim, res = run(t, job(2, 30))
    times = [t for t, _ in sim.ends]
    assert res.errored == 0 and res.completed == 30
    assert max(t for t in times if t < 30 * MS) == 11 * MS and min(t for t in times if t > 11 * MS) == 31 * MS
    assert times.count(11 * MS) == 2 and times.count(31 * MS) == 2


class Submits(Recorder):
    """Also keeps (submitted, ended, error) of every I/O, in ms."""

    def _complete(self, io, error):
        self.subs.append((io.submit_ns / MS, self.now / MS, error))
        super()._complete(io, error)


def run_submits(topo: str, jb: str):
    t = topology_from_dict(tomllib.loads(topo), "t.toml")
    sim = Submits(t.table, t.paths, parse_fio(jb).jobs, engine="python", **t.sim_kwargs())
    sim.ends, sim.subs = [], []
    res = sim.run()
    res.check_accounting()
    return sim, res


def test_request_based_queue_if_no_path_resumes_at_the_reinstatement():
    # Request-based, queue_if_no_path, both paths offline at 10.5 ms.  The I/Os in flight end at 11 ms;
    # the next two are refused (offline), both paths fail, and with no path left each map is
    # DM_MAPIO_DELAY_REQUEUE: the requests sit on the dm queue's requeue list, its work re-armed to
    # 100 ms (111 ms).  At 30 ms the first reinstate_path calls process_queued_io_list, which kicks the
    # list at once: the held requests are mapped at 30 ms and end at 31 ms, not at 112 ms.
    f = '{ at = "10500us", action = "offline" }, { at = "30ms", action = "reinstate" }'
    t = table(["sda", "sdb"], features="1 queue_if_no_path") + path("sda", 0, faults=f) + path("sdb", 16, faults=f)
    sim, res = run(t, job(2, 30))
    times = [t for t, _ in sim.ends]
    assert res.errored == 0 and res.completed == 30
    assert max(t for t in times if t < 30 * MS) == 11 * MS and min(t for t in times if t > 11 * MS) == 31 * MS
    assert times.count(31 * MS) == 2


def test_fail_if_no_path_fails_the_held_requests_at_the_message():
    # As above without a path coming back: the fail_if_no_path message at 20 ms clears queueing and
    # kicks the requeue list (queue_if_no_path(m, false) -> process_queued_io_list), so the two requests
    # held since 11 ms are mapped again at 20 ms and killed (DM_MAPIO_KILL): fio sees their errors at
    # 20 ms; it resubmits each 10 us later (continue_on_error) and every new I/O fails at once.
    off = '{ at = "10500us", action = "offline" }'
    t = (table(["sda", "sdb"], features="1 queue_if_no_path") + path("sda", 0, faults=off)
         + path("sdb", 16, faults=off) + '[[messages]]\nat = "20ms"\nmessage = "fail_if_no_path"\n')
    sim, res = run_submits(t, job(2, extra="continue_on_error=io\n"))
    errs = [x for x in sim.subs if x[2]]
    assert errs[:2] == [(11.0, 20.0, "ioerr"), (11.0, 20.0, "ioerr")]
    assert all(sub == end for sub, end, _ in errs[2:]) and errs[2][0] == 20.01
    assert res.completed == 22 and res.errored == len(errs)


def test_an_immediate_requeue_runs_a_delayed_request_early():
    # The requeue list has one delayed work (blk_mq_delay_kick_requeue_list is a mod_delayed_work: the
    # latest kick decides).  sda powers off at 2.5 ms: the request mapped to it at 3 ms fails its clone
    # allocation on the dying queue and waits DM_MAPIO_DELAY_REQUEUE (to 103 ms).  At 10.5 ms sdb's
    # transport drops: its command of 10 ms ends with a transport error at 11 ms, multipath_end_io
    # requeues it at once (DM_ENDIO_REQUEUE, delay 0), and that kick runs the whole list: both requests
    # go to sdc at 11 ms and end at 12 ms.
    t = (table(["sda", "sdb", "sdc"]) + path("sda", 0, faults='{ at = "2500us", action = "poweroff" }')
         + path("sdb", 16, faults='{ at = "10500us", action = "fail" }') + path("sdc", 32))
    sim, res = run_submits(t, job(3, 40))
    assert [x for x in sim.subs if x[1] - x[0] > 1.5] == [(3.0, 12.0, None), (10.0, 12.0, None)]
    assert res.errored == 0 and sim.devices[1].errors == 1


def test_without_queue_if_no_path_fio_gets_the_errors():
    # The same fault with neither queueing nor a timeout: each I/O mapped while no path is left fails with
    # EIO: the two I/Os mapped at 11 ms, then, as fio with continue_on_error resubmits 10 us after a
    # failure (jobrules.RESUBMIT_AFTER_ERROR_NS) and the resubmitted I/O fails at once, one every 10 us
    # up to 30 ms inclusive: at 30 ms the device is back but the reinstate_path message comes after the
    # resubmission of that instant.
    f = '{ at = "10500us", action = "offline" }, { at = "30ms", action = "reinstate" }'
    t = table(["sda", "sdb"], features="2 queue_mode bio") + path("sda", 0, faults=f) + path("sdb", 16, faults=f)
    sim, res = run(t, job(2, extra="continue_on_error=io\n"))
    errs = [t for t, e in sim.ends if e]
    assert errs[0] == 11 * MS and errs[-1] == 30 * MS
    assert len(errs) == res.errored == 2 + (30 * MS - 11 * MS) // 10_000
    assert all(e == "ioerr" for t, e in sim.ends if e)


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_error_classes_end_as_the_kernel_decides(name):
    # every command of sda fails with the class.  A retried class goes round the device SD_MAX_RETRIES
    # (5) more times, each retry waiting for device_blocked (3) to count down; then dm sees the final
    # status: a path error fails sda and the I/O runs on sdb, anything else goes to fio.
    cls = ERRORS[name]
    f = '{ at = "0", action = "error", error = "%s" }' % name
    t = table(["sda", "sdb"]) + path("sda", 0, faults=f) + path("sdb", 16)
    sim, res = run(t, job(1, 4, extra="continue_on_error=io\n"))
    sda = sim.devices[0]
    tries = 1 + (5 if cls.retried else 0)
    assert sda.scsi.iodone_cnt >= tries and sda.scsi.ioerr_cnt >= tries
    if blk_path_error(cls.status):
        assert res.errored == 0 and sim.mp.nr_valid_paths == 1 and sim.ends[0][1] is None
        if cls.retried:     # 6 tries of 1 ms on sda, 5 x 3 ms of device_blocked, then 1 ms on sdb
            assert sim.ends[0][0] == 6 * MS + 5 * 3 * MS + 1 * MS
        else:               # one try on sda, then sdb
            assert sim.ends[0][0] == 2 * MS
    else:
        # round-robin sends every other I/O to sda: those two fail, and the path stays
        assert res.errored == 2 and sim.mp.nr_valid_paths == 2 and sim.ends[0][1] == cls.status


def test_bad_scsi_topologies_name_the_file_and_line(tmp_path):
    from mpathlab.topology import TopologyError, load_topology
    cases = {
        'queue_depth = 0': "queue_depth must be a whole number",
        'scsi_host = "nope"': "names no [scsi_hosts.NAME] section",
        'hw_queue_depth = 4\nqueue_depth = 2': "hw_queue_depth is not modelled on a SCSI device",
    }
    for bad, msg in cases.items():
        p = tmp_path / "t.toml"
        p.write_text(table(["sda"]) + path("sda", 0) + bad + "\n")
        with pytest.raises(TopologyError) as e:
            load_topology(str(p))
        assert msg in str(e.value) and "t.toml" in str(e.value) and ":8:" in str(e.value)
    p.write_text(table(["sda"]) + path("sda", 0).replace('kind = "scsi"\n', "") + "queue_depth = 2\n")
    with pytest.raises(TopologyError, match='needs kind = "scsi"'):
        load_topology(str(p))


@pytest.mark.parametrize("seed", range(6))
def test_invariants_on_random_scsi_topologies(seed):
    # Random paths on random hosts, both dm modes, random faults: every I/O is accounted for, nothing is
    # left holding a budget or a tag, a device never holds more commands than its queue_depth, a host
    # never more than its can_queue.
    rng = random.Random(seed)
    n = rng.randint(2, 4)
    names = ["sd%s" % "abcd"[i] for i in range(n)]
    hosts = {"h%d" % i: rng.randint(1, 8) for i in range(rng.randint(1, 2))}
    text = table(names, features=rng.choice(["0", "2 queue_mode bio", "1 queue_if_no_path"]),
                 selector=rng.choice(["round-robin", "queue-length", "service-time"]))
    qds = {}
    for i, nm in enumerate(names):
        qds[nm] = rng.randint(1, 6)
        faults = ""
        if rng.random() < 0.5:
            faults = '{ at = "%dus", action = "%s" }, { at = "%dus", action = "reinstate" }' % (
                rng.randint(100, 5000), rng.choice(["offline", "fail", "slow"]), rng.randint(6000, 9000))
        text += path(nm, 16 * i, qd=qds[nm], host=rng.choice(sorted(hosts)), service="%dus" % rng.randint(50, 900),
                     par=rng.randint(1, 8), faults=faults.replace('"slow" }', '"slow", factor = 4.0 }'))
    for h, cq in hosts.items():
        text += "[scsi_hosts.%s]\ncan_queue = %d\n" % (h, cq)
    used = {h for h in hosts if 'scsi_host = "%s"' % h in text}
    for h in set(hosts) - used:
        text = text.replace("[scsi_hosts.%s]\ncan_queue = %d\n" % (h, hosts[h]), "")
    peaks = []

    class Watch(Recorder):
        def _start(self, io, dev):
            sd = dev.scsi
            peaks.append((sd.device_busy <= sd.queue_depth, sd.host.tags_used <= (sd.host.model.can_queue or 1 << 30)))
            super()._start(io, dev)

    t = topology_from_dict(tomllib.loads(text), "t.toml")
    sim = Watch(t.table, t.paths, parse_fio(job(rng.choice([1, 4, 16]), extra="continue_on_error=io\n")).jobs,
                engine="python", **t.sim_kwargs())
    sim.ends = []
    res = sim.run()
    res.check_accounting()
    assert all(a and b for a, b in peaks)
    if not res.pending:
        assert all(d.scsi.device_busy == 0 and not d.scsi.budget_wait for d in sim.devices)
        assert all(h.tags_used == 0 for h in sim.blk.scsi.hosts)


def test_a_kernel_lab_scsi_cell_becomes_scsi_devices_on_shared_hosts():
    # the lab's S2: p0 and p1 behind host 0 (can_queue 4), p2 behind host 1; queue_depth 4 each
    from mpathlab.validate import path_models
    cell = {"paths": [{"label": "p%d" % i, "completion_ns": 4_000_000, "hw_queue_depth": 4, "kind": "scsi",
                       "host": h, "can_queue": 4} for i, h in enumerate((0, 0, 1))],
            "iodepth": 32, "repeats": []}
    p0, p1, p2 = path_models(cell)
    assert p0.scsi_host is p1.scsi_host and p2.scsi_host is not p0.scsi_host
    assert [p.queue_depth for p in (p0, p1, p2)] == [4, 4, 4] and p0.scsi_host.can_queue == 4
    assert not p0.hw_queue_depth and p0.parallelism == 4


class CutAtTheStart(Simulation):
    """A run cut short before its first event: what the jobs issued at time 0 is still under way."""

    def run_plan(self):
        expected, horizon, _, tl_step, tl_count = super().run_plan()
        return expected, horizon, -1, tl_step, tl_count


def test_a_refused_io_still_scheduled_when_the_run_is_cut_short_counts_as_pending():
    # sda is offline from the start: fio's 2 I/Os at time 0 are mapped to it, and scsi_queue_rq refuses
    # both by the device state (scsi_device_state_check: BLK_STS_IOERR); their completions are scheduled
    # for that instant, but the run stops before any event, so both are still dm's I/O: pending.
    t = topology_from_dict(tomllib.loads(table(["sda"], features="2 queue_mode bio") + path("sda", 0, qd=8)),
                           "t.toml")
    sim = CutAtTheStart(t.table, t.paths, parse_fio(job(2, 4)).jobs, engine="python", **t.sim_kwargs())
    sim.devices[0].scsi.state = SDEV_OFFLINE
    res = sim.run()
    assert res.stalled and res.submitted == 2 and res.completed == res.errored == 0
    assert sim.devices[0].scsi.rejected == 2
    assert res.pending == 2
    res.check_accounting()
