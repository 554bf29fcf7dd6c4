"""The host's CPUs: where fio's job clones run, and what each I/O costs them.

Each CPU is a server like a path device's: work waits in FIFO order and
runs for its cost.  An I/O costs ``submit_cost`` on its job's CPU before
it reaches the multipath target (fio, io_submit, dm's map, the driver's
queue_rq) and ``complete_cost`` on the same CPU after its device finishes
(the completion interrupt and softirq run where the request was submitted,
then fio reaps it) before the target's end_io sees it.  While a job's CPU
works on its submission the job submits nothing else, as a task in
io_submit does.  ``wake_cost`` is the latency of waking an idle CPU
(a halted vCPU, a deep C-state): work that finds its CPU idle since an
earlier instant starts that much later.  ``steal`` is the fraction of each
CPU that other tenants take (a vCPU descheduled by a busy host): every
``steal_period`` each CPU gets ``steal x steal_period`` of foreign work,
queued behind what is already waiting (a model of preemption that keeps
the CPU a FIFO server), so completions are then handled in bursts.
``work_latency`` is how long deferred kernel work (kblockd's runs of the
dm queue, sim/blockqueue.py) waits before it runs.  ``dispatch_cost`` is
the time a run of the request-based dm queue spends on each request it
maps (blk_mq_dispatch_rq_list -> dm_mq_queue_rq: the selector, the clone's
allocation, the path driver's queue_rq), so a run maps one request per
dispatch_cost, not all at one instant; it is time in the dispatching
context, not charged to a job's CPU (the calibrated cost per I/O holds
it).  All default to 0,
under which no CPU is ever busy and results are those of a host with
infinitely fast CPUs.  Where the completion cost sits: the device's
interrupt ends the I/O in dm before any of it (null_blk's timer mode
completes in a hardirq hrtimer callback, ``null_cmd_timer_expired`` ->
``end_cmd`` -> ``blk_mq_end_request``, drivers/block/null_blk/main.c; the
bio's ``clone_endio`` calls the target's end_io there; a request-based
clone's completion finishes the dm request in a softirq on the
interrupt's exit or in an IPI to the submitting CPU,
blk_mq_complete_request_remote), so the selector's end_io, the tag's
release and a sleeping submitter's wake-up happen at the completion
instant; the completion's CPU time then delays only fio's reap, queued
on the job's CPU.  A failed I/O still waits for its CPU time before dm
sees it (the fault studies' timing).

``completion_irq`` makes that completion time interrupt work, as the
kernel runs it: it starts at once on the job's CPU (after interrupt work
already running there) and pushes back whatever that CPU was doing, a
submission included, by its length; fio has the I/O back when it ends.
Without it (the default) the completion time queues behind the CPU's
work.  ``woken_issue`` is how long after the completion that freed a tag a
task asleep for one issues its I/O (bio-based: the interrupt's work, then
the task is scheduled and returns from blk_mq_get_tag); 0 issues it at
that instant.

``timer_away`` and ``timer_period`` place the device completions in time
the way a guest's timers fire: the emulated devices (null_blk in timer mode,
scsi_debug) complete on an hrtimer of the guest, whose interrupt an emulator
on a busy host delivers late; held for ``timer_away`` of every
``timer_period``, every completion due in that window fires together when
it is delivered, while the CPUs go on working (the kernel lab's traces show
fio running on the timer's own vCPU meanwhile: docs/validation.md).  0 (the
default): completions fire when due.

``cpu_nodes`` gives the NUMA node of each CPU and ``node_distance`` the
distances between nodes (default 10 local, 20 remote, as the kernel's
node_distance without an SLIT).  This is the one place the nodes of the
host's CPUs are defined: the NVMe ``numa`` iopolicy (mpathlab.nvme) picks
by the node of the CPU an I/O is submitted on (its job's CPU mod cpus).

fio's cpuio jobs burn these CPUs (``spin``): a burner spins for its
cycle's wall time on its job's CPU, as fio's usec_spin does.  It is the
lowest-priority work there: I/O work and other tenants' work preempt it at
once (the kernel's softirqs do; a woken fio task preempts a CPU hog under
CFS), so I/O never queues behind a burn, but a spinning CPU is not idle and
its I/O pays no ``wake_cost``.  The burner's CPU time (fio's usr_cpu) is its
spin time less that preempting work, split evenly among burners sharing a CPU.

In the kernel lab (qemu TCG) this is the emulation cost of the I/O path,
which the guest sees as latency; docs/validation.md ("The guest model") gives
the calibrated values.
"""
from __future__ import annotations

from collections import deque


# Where a completion's CPU time goes, by name (topology files' [host] completion, validate --completion):
# queued behind the CPU's work, or as interrupt work (HostModel.completion_irq)
COMPLETION_MODES = ("queued", "interrupt")


class HostModel:
    """[host] of a topology: number of CPUs and per-I/O CPU costs in ns."""

    def __init__(self, cpus: int = 1, submit_ns: int = 0, complete_ns: int = 0, wake_ns: int = 0,
                 steal: float = 0.0, steal_period_ns: int = 6_000_000, work_latency_ns: int = 0,
                 cpu_nodes=None, node_distance=None, timer_away_ns: int = 0, timer_period_ns: int = 6_000_000,
                 dispatch_ns: int = 0, completion_irq: bool = False, woken_issue_ns: int = 0,
                 woken_late_share: float = 0.0, woken_late_ns: int = 0):
        if cpus < 1 or submit_ns < 0 or complete_ns < 0 or wake_ns < 0:
            raise ValueError("host: cpus must be >= 1 and costs must not be negative")
        if not 0.0 <= steal < 1.0 or steal_period_ns < 1:
            raise ValueError("host: steal must be from 0 to below 1 and steal_period positive")
        if work_latency_ns < 0 or dispatch_ns < 0 or woken_issue_ns < 0:
            raise ValueError("host: work_latency, dispatch_cost and woken_issue must not be negative")
        self.completion_irq = bool(completion_irq)     # the completion's CPU time preempts the job's CPU
        self.woken_issue_ns = int(woken_issue_ns)       # a task asleep for a tag issues this long after
        if not 0.0 <= woken_late_share <= 1.0 or woken_late_ns < 0:
            raise ValueError("host: woken_late_share must be from 0 to 1 and woken_late not negative")
        # and a share of those wakes (drawn per wake from the run's seed) woken_late_ns later still: the
        # guest's other work now and then in the way (woken_late)
        self.woken_late_share = float(woken_late_share)
        self.woken_late_ns = int(woken_late_ns)
        if timer_period_ns < 1 or not 0 <= timer_away_ns < timer_period_ns:
            raise ValueError("host: timer_away must be from 0 to below a positive timer_period")
        self.timer_away_ns = int(timer_away_ns)
        self.timer_period_ns = int(timer_period_ns)
        self.work_latency_ns = int(work_latency_ns)     # deferred kernel work (kblockd) waits this long
        self.dispatch_ns = int(dispatch_ns)             # a dm queue run maps one request per this
        self.steal = float(steal)
        self.steal_period_ns = int(steal_period_ns)
        self.cpus = int(cpus)
        self.submit_ns = int(submit_ns)
        self.complete_ns = int(complete_ns)
        self.wake_ns = int(wake_ns)
        self.cpu_nodes = [0] * self.cpus if cpu_nodes is None else [int(n) for n in cpu_nodes]
        if len(self.cpu_nodes) != self.cpus or min(self.cpu_nodes) < 0:
            raise ValueError("host: cpu_nodes needs one node number >= 0 per CPU (%d)" % self.cpus)
        n = max(self.cpu_nodes) + 1
        if node_distance is None:
            node_distance = [[10 if i == j else 20 for j in range(n)] for i in range(n)]
        self.node_distance = [[int(v) for v in r] for r in node_distance]
        if len(self.node_distance) < n or any(len(r) != len(self.node_distance) for r in self.node_distance):
            raise ValueError("host: node_distance must be a square table covering the CPUs' %d node(s)" % n)

    def woken_late(self, n: int, seed: int = 0) -> int:
        """How much later than woken_issue the ``n``-th woken task of a run issues: woken_late_ns for a
        share woken_late_share of them, picked by hashing ``n`` and the run's seed (the same in both
        engines)."""
        if not self.woken_late_ns or mix64((((seed << 40) + n) & _M64) ^ WOKEN_LATE_SALT) >= self.woken_late_below:
            return 0
        return self.woken_late_ns

    @property
    def woken_late_below(self) -> int:
        """woken_late draws a late wake when the hash is below this (an integer, for both engines alike)."""
        return min(int(self.woken_late_share * 2.0 ** 64), _M64)

    @property
    def nr_nodes(self) -> int:
        return len(self.node_distance)

    def node_of_cpu(self, cpu: int) -> int:
        """The node of the CPU a job on CPU ``cpu`` runs on (CPU n runs on CPU n mod cpus, as in Host)."""
        return self.cpu_nodes[cpu % self.cpus]

    def distance(self, a: int, b: int) -> int:
        return self.node_distance[a][b]

    def timer_fires(self, due: int, seed: int = 0) -> int:
        """When a device's completion timer due at ``due`` fires: the guest's timers are held
        ``timer_away`` of every ``timer_period``, from an offset in each period drawn by hashing
        the period's number and the run's seed (the same in both engines), and a timer due while
        they are held fires at the stretch's end."""
        away = self.timer_away_ns
        if not away:
            return due
        k = due // self.timer_period_ns
        start = k * self.timer_period_ns + mix64((k + (seed << 40)) & _M64) % (self.timer_period_ns - away)
        return start + away if start <= due < start + away else due

    @property
    def steal_ns(self) -> int:
        """Foreign work per CPU per steal_period."""
        return int(self.steal * self.steal_period_ns)

    @property
    def costs(self) -> bool:
        return bool(self.submit_ns or self.complete_ns or self.steal_ns or self.work_latency_ns or self.dispatch_ns)


_M64 = (1 << 64) - 1
# HostModel.woken_late's hash input differs from timer_fires' by this, so that the two draws are unrelated
WOKEN_LATE_SALT = 0x776F6B656E   # "woken"


def mix64(x: int) -> int:
    """splitmix64's output function of ``x`` (u64): a fixed pseudo-random number per period."""
    z = (x + 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def _nothing(_) -> None:
    pass


class Cpu:
    __slots__ = ("busy", "queue", "busy_ns", "current", "idle_since", "busy_until", "spinners", "spin_share",
                 "spin_t", "irq_until")

    def __init__(self):
        self.busy = False
        self.idle_since = 0
        self.queue = deque()    # (cost, fn, arg): arg is the I/O or (I/O, error)
        self.busy_ns = 0
        self.current = None     # (fn, arg) of the work on it now, as queued; None while idle
        self.busy_until = 0     # when the work now on it ends
        self.spinners = 0       # cpuio burners spinning here now
        self.spin_share = 0.0   # CPU time one burner here has had since the start (ns)
        self.spin_t = 0         # when spin_share was last brought up to date
        self.irq_until = 0      # when the interrupt work taken so far ends (HostModel.completion_irq)


class Host:
    def __init__(self, sim, model: HostModel):
        self.sim = sim
        self.model = model
        self.cpus = [Cpu() for _ in range(model.cpus)]

    def start(self) -> None:
        """At the start of a run: other tenants begin taking their share of each CPU."""
        if self.model.steal_ns:
            for i in range(len(self.cpus)):
                self.sim.call_at(self.sim.now + self.model.steal_period_ns, self._steal, i)

    def _steal(self, i) -> None:
        if not self.sim._active():
            return      # nothing left to run: let the event loop end
        self._run(self.cpus[i], self.model.steal_ns, _nothing, None)
        self.sim.call_at(self.sim.now + self.model.steal_period_ns, self._steal, i)

    def _cpu(self, job) -> Cpu:
        # a job on CPU n of a bigger machine runs on CPU n mod cpus here
        return self.cpus[job.cpu % len(self.cpus)]

    def _run(self, cpu: Cpu, cost: int, fn, io) -> None:
        if cpu.busy:
            cpu.queue.append((cost, fn, io))
            return
        now = self.sim.now
        idle = now > cpu.idle_since and not cpu.spinners
        self._begin(cpu, cost, fn, io, self.model.wake_ns if idle else 0)

    def _begin(self, cpu: Cpu, cost: int, fn, io, wake: int = 0) -> None:
        if cpu.spinners:
            # this work preempts the burners spinning here: it is not their CPU time
            self._spin_update(cpu)
            cpu.spin_share -= cost / cpu.spinners
        cpu.busy = True
        cpu.current = (fn, io)
        cpu.busy_ns += cost
        cpu.busy_until = self.sim.now + wake + cost
        self.sim.call_at(cpu.busy_until, self._end, (cpu, fn, io))

    def _end(self, arg) -> None:
        cpu, fn, io = arg
        if self.sim.now < cpu.busy_until:       # interrupt work pushed it back meanwhile
            self.sim.call_at(cpu.busy_until, self._end, arg)
            return
        cpu.current = None
        if cpu.queue:
            self._begin(cpu, *cpu.queue.popleft())
        else:
            cpu.busy = False
            cpu.idle_since = self.sim.now
        fn(io)

    # -- the two costs ------------------------------------------------------
    def submit(self, job, io) -> bool:
        """Charge the submission of ``io``; True if it is now on (or waiting for) the CPU."""
        if not self.model.submit_ns:
            return False
        job.blocked = True
        self._run(self._cpu(job), self.model.submit_ns, self._submitted, io)
        return True

    def _submitted(self, io) -> None:
        job = io.job
        job.blocked = False
        self.sim._dispatch(io)
        self.sim._submit_more(job)

    def complete(self, io, error) -> None:
        """The device finished ``io``.  Done: dm ends it at once (the device's interrupt runs
        the whole bio/request completion, see below) and its CPU time delays fio's reap
        (``reap``).  Failed: charged first, then ended in the target."""
        if not self.model.complete_ns or error is None:
            self.sim._path_done(io, error)
            return
        self._run(self._cpu(io.job), self.model.complete_ns, self._completed, (io, error))

    def _completed(self, item) -> None:
        self.sim._path_done(*item)

    def reap(self, io) -> None:
        """fio gets ``io`` back after its completion's CPU time: queued on its job's CPU, or as interrupt
        work there (``completion_irq``)."""
        if self.model.completion_irq:
            self._interrupt(self._cpu(io.job), self.model.complete_ns, self._reaped, io)
        else:
            self._run(self._cpu(io.job), self.model.complete_ns, self._reaped, io)

    def _interrupt(self, cpu: Cpu, cost: int, fn, io) -> None:
        """Interrupt work on ``cpu``: it runs now, after the interrupt work already taken there, and the
        work the CPU was doing ends that much later; ``fn(io)`` when it is done."""
        now = self.sim.now
        cpu.irq_until = max(now, cpu.irq_until) + cost
        cpu.busy_ns += cost
        if cpu.spinners:        # it preempts the burners spinning here, as any I/O work does
            self._spin_update(cpu)
            cpu.spin_share -= cost / cpu.spinners
        if cpu.busy:
            cpu.busy_until += cost
        else:       # an idle CPU is busy with the interrupt: work arriving meanwhile waits for it
            cpu.busy = True
            cpu.busy_until = cpu.irq_until
            self.sim.call_at(cpu.busy_until, self._end, (cpu, _nothing, None))
        self.sim.call_at(cpu.irq_until, fn, io)

    def _reaped(self, io) -> None:
        self.sim._complete(io, None)

    # -- cpuio burners --------------------------------------------------------
    def _spin_update(self, cpu: Cpu) -> None:
        now = self.sim.now
        if cpu.spinners:
            cpu.spin_share += (now - cpu.spin_t) / cpu.spinners
        cpu.spin_t = now

    def spin(self, job, on: bool) -> None:
        """A cpuio burn of ``job`` starts (on) or ends on its CPU; at the end
        its CPU time is added to ``job.usr_ns``."""
        cpu = self._cpu(job)
        self._spin_update(cpu)
        if on:
            cpu.spinners += 1
            job.spin_mark = cpu.spin_share
            if cpu.busy:        # preempted at once until the work on the CPU now is done
                job.spin_mark += (cpu.busy_until - self.sim.now) / cpu.spinners
            return
        cpu.spinners -= 1
        job.usr_ns += max(0, int(cpu.spin_share - job.spin_mark))
        if not cpu.spinners and not cpu.busy:
            cpu.idle_since = self.sim.now

    def drain(self) -> int:
        """I/O waiting for or on a CPU when a run is cut short (counted as pending), dropped."""
        n = 0
        for c in self.cpus:
            held = [(fn, arg) for _, fn, arg in c.queue] + ([c.current] if c.current is not None else [])
            # other tenants' work and interrupt work on an idle CPU carry no I/O (arg None); a reap's I/O dm has
            # ended already
            n += sum(1 for _, arg in held if arg is not None)
            self.sim.result.pending_reap += sum(1 for fn, _ in held if fn == self._reaped)
            c.queue.clear()
            c.current = None
            c.busy = False
        return n
