/*
 * mpathlab._fastcore: an optional compiled core for the simulator.
 *
 * It runs the same model as the pure-Python engine (mpathlab/sim/engine.py)
 * for closed-loop jobs and jobs with arrival.py's IoGen (mixed sizes, trims,
 * open-loop arrivals; section "IoGen") -- selectors in C or called in Python (SEL_PY), SCSI paths
 * (section "SCSI paths", sim/scsi.py), faults,
 * messages and several priority groups through calls back into the Python
 * target for the rare events (sim/fast.py says what and why) -- and produces
 * bit-identical results: the same
 * Mersenne Twister streams as Python's `random` module, the same floating
 * point operations for service times and statistics, and the same event
 * order (a binary heap keyed on (time, sequence number)).  The Python engine
 * stays the reference; tests compare the two run for run.
 *
 * The selector logic below is written from the behaviour described in
 * the mpathlab.selectors modules (itself a description of the kernel's modules).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------------ MT19937 */
#define MT_N 624
#define MT_M 397

typedef struct {
    uint32_t mt[MT_N];
    int mti;
} mt_state;

static void mt_init_genrand(mt_state *s, uint32_t seed)
{
    s->mt[0] = seed;
    for (int i = 1; i < MT_N; i++)
        s->mt[i] = 1812433253U * (s->mt[i - 1] ^ (s->mt[i - 1] >> 30)) + (uint32_t)i;
    s->mti = MT_N;
}

/* Python's seed(int): init_by_array over the 32-bit words of the integer. */
static void mt_seed_u64(mt_state *s, uint64_t seed)
{
    uint32_t key[2];
    int klen;
    key[0] = (uint32_t)seed;
    key[1] = (uint32_t)(seed >> 32);
    klen = key[1] ? 2 : 1;
    mt_init_genrand(s, 19650218U);
    int i = 1, j = 0;
    int k = MT_N > klen ? MT_N : klen;
    for (; k; k--) {
        s->mt[i] = (s->mt[i] ^ ((s->mt[i - 1] ^ (s->mt[i - 1] >> 30)) * 1664525U)) + key[j] + (uint32_t)j;
        i++; j++;
        if (i >= MT_N) { s->mt[0] = s->mt[MT_N - 1]; i = 1; }
        if (j >= klen) j = 0;
    }
    for (k = MT_N - 1; k; k--) {
        s->mt[i] = (s->mt[i] ^ ((s->mt[i - 1] ^ (s->mt[i - 1] >> 30)) * 1566083941U)) - (uint32_t)i;
        i++;
        if (i >= MT_N) { s->mt[0] = s->mt[MT_N - 1]; i = 1; }
    }
    s->mt[0] = 0x80000000U;
}

static uint32_t mt_next(mt_state *s)
{
    static const uint32_t mag01[2] = {0x0U, 0x9908b0dfU};
    uint32_t y;
    if (s->mti >= MT_N) {
        int kk;
        for (kk = 0; kk < MT_N - MT_M; kk++) {
            y = (s->mt[kk] & 0x80000000U) | (s->mt[kk + 1] & 0x7fffffffU);
            s->mt[kk] = s->mt[kk + MT_M] ^ (y >> 1) ^ mag01[y & 1U];
        }
        for (; kk < MT_N - 1; kk++) {
            y = (s->mt[kk] & 0x80000000U) | (s->mt[kk + 1] & 0x7fffffffU);
            s->mt[kk] = s->mt[kk + (MT_M - MT_N)] ^ (y >> 1) ^ mag01[y & 1U];
        }
        y = (s->mt[MT_N - 1] & 0x80000000U) | (s->mt[0] & 0x7fffffffU);
        s->mt[MT_N - 1] = s->mt[MT_M - 1] ^ (y >> 1) ^ mag01[y & 1U];
        s->mti = 0;
    }
    y = s->mt[s->mti++];
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680U;
    y ^= (y << 15) & 0xefc60000U;
    y ^= (y >> 18);
    return y;
}

static double mt_random(mt_state *s)
{
    uint32_t a = mt_next(s) >> 5, b = mt_next(s) >> 6;
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

/* ------------------------------------------------------------ statistics */
#define PLAT_BITS 6
#define PLAT_VAL (1 << PLAT_BITS)
#define NBUCKETS 4096

typedef struct {
    int64_t n, min, max;
    double mean, m2;
    int64_t *hist;
} lat_stats;

static int bucket_of(int64_t v)
{
    if (v < PLAT_VAL)
        return (int)v;
    int msb = 63 - __builtin_clzll((uint64_t)v);
    int error_bits = msb - PLAT_BITS;
    int base = (error_bits + 1) << PLAT_BITS;
    return base + (int)((v >> error_bits) & (PLAT_VAL - 1));
}

static void lat_add(lat_stats *s, int64_t v)
{
    int64_t n = s->n + 1;
    s->n = n;
    if (n == 1) {
        s->min = s->max = v;
    } else if (v < s->min) {
        s->min = v;
    } else if (v > s->max) {
        s->max = v;
    }
    double d = (double)v - s->mean;
    s->mean += d / (double)n;
    s->m2 += d * ((double)v - s->mean);
    int b = bucket_of(v);
    if (b >= NBUCKETS) b = NBUCKETS - 1;
    s->hist[b]++;
}

/* ------------------------------------------------------------ model state */
/* The constants and the layout of every tuple that crosses to Python: generated from
   mpathlab/sim/boundary.py (SEL_PY: a selector written in Python, called through the C API;
   EV_WORK .. EV_STEAL are the Python engine's EV_CALL events of sim/blockqueue.py and sim/host.py) */
#include "_fastcore_boundary.h"

/* a FIFO of io ids (collections.deque in the Python engine) */
typedef struct {
    int64_t *v;
    int64_t head, len, cap;
} ring_t;

static int ring_push(ring_t *r, int64_t id)
{
    if (r->len == r->cap) {
        int64_t nc = r->cap ? r->cap * 2 : 64;
        int64_t *nv = PyMem_Malloc((size_t)nc * sizeof(int64_t));
        if (!nv) return -1;
        for (int64_t i = 0; i < r->len; i++)
            nv[i] = r->v[(r->head + i) % r->cap];
        PyMem_Free(r->v);
        r->v = nv;
        r->head = 0;
        r->cap = nc;
    }
    r->v[(r->head + r->len) % r->cap] = id;
    r->len++;
    return 0;
}

static int64_t ring_pop(ring_t *r)
{
    int64_t id = r->v[r->head];
    r->head = (r->head + 1) % r->cap;
    r->len--;
    return id;
}

static int64_t ring_at(const ring_t *r, int64_t k)
{
    return r->v[(r->head + k) % r->cap];
}

/* del deque[k] */
static void ring_remove_at(ring_t *r, int64_t k)
{
    for (int64_t i = k; i + 1 < r->len; i++)
        r->v[(r->head + i) % r->cap] = r->v[(r->head + i + 1) % r->cap];
    r->len--;
}

/* sim/scsi.py ScsiHost: a host's tag set, shared by its LUNs (can_queue 0 = unlimited) */
typedef struct {
    int64_t can_queue, tags_used;
    int nactive;            /* len(ScsiHost.active) */
    ring_t sleepers;        /* bio-based I/O whose task sleeps for a tag (its path names its device) */
} scsi_host_t;

/* sim/scsi.py ScsiDevice: what the per-I/O path needs.  The error classes and the retry counts stay
   in the Python ScsiDevice, which the core calls while one is set (python) */
typedef struct {
    int host;               /* index into sim_t.scsi_hosts */
    int state;              /* index into fast.py SCSI_STATES (0: running) */
    int active;             /* in its host's ScsiHost.active */
    int run_pending, python;
    int64_t queue_depth, device_busy, tags_held, restarts, device_blocked, nr_cmds, iodone_cnt, rejected;
    ring_t budget_wait;
} scsi_dev_t;

/* historical-service-time's per-path state (struct path_info of dm-ps-historical-service.c) */
typedef struct {
    uint64_t hst, outstanding, stale_after, last_finish;
} hst_path_t;

/* A selector's per-path state (struct path_info of the dm-ps-*.c modules): one per path of each
   host's table (sim_t.sel_all; sim_t.sel is the current host's, see "multi-host") */
typedef struct selpath {
    uint32_t repeat_count, rt;
    int32_t qlen_sel;       /* queue-length: atomic int */
    int32_t inflight_size;  /* service-time: atomic int */
    hst_path_t h;           /* historical-service-time */
    int valid_count;        /* HST: the valid_count of this path's group's selector */
    int pg;                 /* index of the path's priority group */
    const struct selector_ops *ops;     /* that group's selector (the ops table below) */
} selpath_t;

typedef struct {
    /* device */
    int parallelism, busy;
    int64_t delay_ns;
    double ns_per_kib;
    double slow_factor;     /* PathDevice.slow_factor: a 'slow' fault multiplies service times */
    int dist;
    double mean, lam, mu, sigma;
    double *samples;
    Py_ssize_t nsamples;
    mt_state rng;
    int64_t dispatched, completed, in_flight, peak_in_flight, errors;
    int offline;            /* PathDevice.offline: a 'fail' fault */
    int64_t fail_latency_ns;
    ring_t queue;           /* ios waiting for the device (PathDevice.queue) */
    /* the path's hardware queues (sim/blockqueue.py Hctx) */
    int nhw;
    struct hctx *hw;
    scsi_dev_t *sd;         /* PathDevice.scsi: a SCSI path (NULL: a null_blk-like device) */
    lat_stats lat;          /* latency of the I/O this path completed */
} path_t;

/* sim/blockqueue.py Hctx: one hardware queue's tags (0 = unlimited / no scheduler) and waiters */
typedef struct hctx {
    int64_t nr_tags, nr_sched_tags, tags_used, sched_tags_used;
    int64_t wake_batch, freed_while_waited;     /* Hctx.batch_done: sbitmap_queue_wake_up's batches */
    ring_t dispatch, sleepers;
} hctx_t;

/* Hctx.batch_done */
static int hctx_batch_done(hctx_t *q)
{
    if (++q->freed_while_waited < q->wake_batch)
        return 0;
    q->freed_while_waited -= q->wake_batch;
    return 1;
}

typedef struct {
    int64_t bs, iodepth, remaining, stop_ns, startdelay_ns, inflight, submitted, completed, end_ns;
    int cpu, blocked;
    int stopped, continue_on_error, first_error;    /* first_error: index into _Target.errors */
    int64_t errored, last_error_ns;
    double read_fraction;
    mt_state rng;
    lat_stats rlat, wlat;
    int64_t bytes_read, bytes_written;
    /* fio's bw/iops samples: per 500 ms since the job started,
       {read, write, trim bytes, read, write, trim I/Os} (RateWindows) */
    int64_t *win;
    int64_t nwin, capwin;
    int64_t depth_map[7];   /* fio's io_u_map (iodepth_level) */
    int64_t lat_ranges[32]; /* fio's io_u_lat_n/u/m (lat_range_index) */
    /* JobState.gen: mixed sizes, trims, open-loop arrivals (NULL: the plain closed loop) */
    struct iogen *gen;
    int64_t wake_ns;        /* JobState.wake_ns: the pending EV_SUBMIT of an open-loop job, -1 none */
    lat_stats tlat;         /* JobState.trim_lat (allocated for a job with a generator) */
    int64_t bytes_trimmed;
    int mh;                 /* JobState.host: the host whose target maps its I/O (multi-host) */
} job_t;

typedef struct {
    int job, path;
    int ddir;               /* SimIO.ddir: DDIR_READ, DDIR_WRITE or DDIR_TRIM */
    int64_t nr_bytes;       /* MpathIO.nr_bytes: the job's bs, or what its IoGen drew */
    int mapped;             /* MpathIO.mapped_once */
    int64_t submit_ns, start_time_ns;
    int cpu_work;           /* host, while on or waiting for a CPU: WORK_SUBMIT, WORK_COMPLETE (of an I/O that
                               failed on its path) or WORK_REAP (fio's side of one dm has ended) */
    int scsi_err;           /* EV_SCSI_REJECT: the status scsi_device_state_check gave (ERR_*) */
    int64_t serial;         /* the I/O's number in the run (the key of ScsiDevice.retries) */
    uint64_t dm_start_jiffies;
} io_t;

typedef struct {
    int64_t t;
    int64_t seq;
    int kind;
    int64_t obj;
} event_t;

typedef struct {
    event_t *ev;
    int64_t n, cap;
} heap_t;

static int heap_less(const event_t *a, const event_t *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static int heap_push(heap_t *h, event_t e)
{
    if (h->n == h->cap) {
        int64_t nc = h->cap ? h->cap * 2 : 1024;
        event_t *ne = PyMem_Realloc(h->ev, (size_t)nc * sizeof(event_t));
        if (!ne) return -1;
        h->ev = ne;
        h->cap = nc;
    }
    int64_t i = h->n++;
    while (i > 0) {
        int64_t p = (i - 1) >> 1;
        if (!heap_less(&e, &h->ev[p])) break;
        h->ev[i] = h->ev[p];
        i = p;
    }
    h->ev[i] = e;
    return 0;
}

/* heapq.heappop's moves (its _siftup: the smaller child rises to a leaf, then the moved event sifts
   back up), so the array holds the events exactly where the Python engine's heap list does: an NVMe
   controller's cancellation (nvme/run.py _cancel_tagset) walks that list in array order */
static void heap_siftup(heap_t *h, int64_t pos)
{
    event_t *a = h->ev;
    int64_t end = h->n, start = pos, c = 2 * pos + 1;
    event_t item = a[pos];
    while (c < end) {
        if (c + 1 < end && !heap_less(&a[c], &a[c + 1])) c++;
        a[pos] = a[c];
        pos = c;
        c = 2 * pos + 1;
    }
    while (pos > start) {
        int64_t p = (pos - 1) >> 1;
        if (!heap_less(&item, &a[p])) break;
        a[pos] = a[p];
        pos = p;
    }
    a[pos] = item;
}

static event_t heap_pop(heap_t *h)
{
    event_t last = h->ev[--h->n];
    if (!h->n) return last;
    event_t top = h->ev[0];
    h->ev[0] = last;
    heap_siftup(h, 0);
    return top;
}

/* heapq.heapify */
static void heap_heapify(heap_t *h)
{
    for (int64_t i = h->n / 2 - 1; i >= 0; i--)
        heap_siftup(h, i);
}

/* sim/host.py Cpu */
enum { WORK_SUBMIT = 1, WORK_COMPLETE = 2, WORK_REAP = 3 };

typedef struct {
    int busy;
    int64_t current;        /* io on the CPU, -1 when idle */
    ring_t queue;           /* ios waiting, each knows its work (io_t.cpu_work) */
    int64_t busy_ns, idle_since;
    int64_t busy_until;     /* when the work on it ends (interrupt work pushes it back) */
    int64_t irq_until;      /* when the interrupt work taken so far ends */
} cpu_t;

/* One host of a multi-host run (sim/hosts.py): what of its target the core switches to when an I/O
   of that host maps or completes (the fields of sim_t of the same names; see "multi-host") */
typedef struct mhost {
    selpath_t *sel;
    int *valid, *path_active;
    int nvalid, first_choice;
    int64_t map_misses;
    PyObject *py_select, *py_start, *py_end, *py_pgpaths, *py_index;
    PyObject *target;
    int target_simple, nr_valid_paths, queue_if_no_path, kick_pending, cur_pg;
} mhost_t;

typedef struct {
    int selector;
    int npaths;
    path_t *paths;
    selpath_t *sel;         /* the selector's state of each path (the current host's table) */
    int *valid;             /* valid-list order (indices into paths) */
    int njobs;
    job_t *jobs;
    io_t *ios;
    int64_t nios, capios;
    int64_t *free_ios;
    int64_t nfree;
    heap_t heap;
    int64_t seq;
    int64_t now;
    int64_t base_ns;
    /* HST */
    uint32_t weights[HST_WEIGHTS];
    uint32_t threshold;
    /* io-affinity: CPU -> path (-1: no mapping), CPU -> NUMA node, map_misses */
    int nr_cpu_ids;
    int *ioa_map, *ioa_node;
    int64_t map_misses;
    int has_select_offset;
    int64_t select_offset;
    /* timing */
    int bio, rq_stats, use_hr, hz;
    uint64_t initial_jiffies;
    /* block layer (sim/blockqueue.py BlockLayer): blk = any path has finite tags */
    int blk;
    ring_t waiting;         /* the dm queue, request-based */
    ring_t requeue;         /* its requeue list (IoPath._requeue_list); requeue_gen: the latest kick */
    int64_t requeue_gen;
    int stalled, sched_restart, dispatching;   /* dispatching: a run is between two requests */
    int64_t work_gen, work_latency, dispatch_cost, resource_stalls;
    /* host (sim/host.py): host = a CPU cost is set */
    int host, ncpus;
    cpu_t *cpus;
    int64_t submit_ns_cost, complete_ns_cost, wake_ns_cost, steal_ns, steal_period_ns;
    int completion_irq;         /* HostModel.completion_irq: the completion's CPU time is interrupt work */
    int64_t woken_issue;        /* HostModel.woken_issue_ns */
    int64_t woken_late;         /* HostModel.woken_late: woken_late_ns, for the wakes hashed below woken_late_below */
    uint64_t woken_late_below, woken;   /* woken: the tag sleepers woken so far */
    int64_t timer_away_ns, timer_period_ns;             /* HostModel.timer_fires */
    uint64_t timer_seed;
    /* faults (Simulation._fault): fail, reinstate (its message goes to the target) and slow; obj of
       EV_FAULT indexes these */
    int nfaults;
    int *fault_path, *fault_action, *fault_msg, *fault_state;
    double *fault_factor;
    int64_t *fault_after;
    /* the Python target (fast.py _Target) for the rare events: faults that fail or reinstate a
       path, dm messages, I/O errors, mapping while no path or a pg switch is pending.  target_simple:
       the target is in the state where map is select_path + start_io (bit 0; every per-I/O step in C)
       or where map fails every I/O (bit 1) or requeues it after 100 ms (bit 2) without changing anything;
       bits 3 and 4: path_error on an already failed path (see there) */
    PyObject *target;
    int target_simple, nr_valid_paths, queue_if_no_path, kick_pending;
    ring_t held_bios;       /* TARGET_QUEUE_BIO: bios mapped while the target holds every bio, not yet
                               handed to it (flush_held_bios, before any call into the target) */
    int64_t state_changes, errored;
    int nvalid;             /* valid paths of the selector (the head of valid[]) */
    int *path_active;       /* PGPath.is_active of each path, as the target last said */
    /* dispatch windows (Simulation._windows): npaths counts per window_ns since the start */
    int64_t window_ns, nwindows, capwindows;
    int64_t *windows;
    /* SEL_PY: the Python selector, its bound select_path/start_io/end_io, the pgpath of each
       path (what the selector knows paths by), pgpath -> index, and the Simulation whose
       now and _cur_cpu the selector's clock and cpu read */
    PyObject *py_select, *py_start, *py_end, *py_pgpaths, *py_index, *py_sim;   /* per group: lists */
    int cur_pg;             /* the group the core selects in (the target's current group) */
    int *pg_sel;            /* SEL_* of each group */
    int npgs, any_c_sel;    /* any_c_sel: some group's selector is one of the core's */
    int64_t py_now_set;
    /* SCSI paths (sim/scsi.py ScsiQueues): their devices and hosts; scsi_dying: a deleted device whose
       path the target still has active (map goes through the target, which fails it); scsi: the
       fast.py _ScsiBridge the rare decisions are made in */
    scsi_dev_t *scsi_devs;
    scsi_host_t *scsi_hosts;
    int nscsi_hosts, scsi_dying;
    /* per state: the status scsi_queue_rq gives (0: the LLD takes it; ERR_* / _Target.errors index)
       and whether it counts a refusal, as ScsiDevice.state_check says; the state whose queue is dying */
    int nscsi_states, *scsi_state_status, *scsi_state_counts, scsi_dying_state;
    PyObject *scsi;
    /* a fault study's record (Simulation(record_completions=True)): completion times of the I/O that
       completed, and the path errors dm-mpath took back instead of ending the I/O with them */
    int record_done;
    int64_t *done_at, ndone, capdone, requeued_errors;
    /* results */
    int64_t submitted, completed, events;
    int first_choice;       /* index of the first path chosen (current_pgpath) */
    int64_t tl_step, next_tl, tl_count, next_tl_count;
    PyObject *timeline;
    PyObject *progress;
    int64_t next_progress, expected, horizon;
    /* multi-host (sim/hosts.py): nmh hosts, each with its own target over the shared paths; cur_mh's
       state is in the fields above, the others' in mh[]; host_port[h * npaths + i]: I/Os host h
       dispatched to path i (MultiHostSimulation.host_port) */
    int nmh, cur_mh;
    mhost_t *mh;
    selpath_t *sel_all;
    int *valid_all, *path_active_all;
    int64_t *host_port;
    struct nvme_core *nvme;     /* an NVMe run: the head's state (section "NVMe head"), else NULL */
} sim_t;

static int fail_device(sim_t *s, path_t *p);
static int nvme_hold(sim_t *s, int c);
static int nvme_transport_lost(sim_t *s, int c);

/* the NVMe head (its section below): the hooks the dm engine calls in an NVMe run */
static int nvme_map_io(sim_t *s, int64_t id);
static int nvme_path_done(sim_t *s, int64_t id, int err);
static PyObject *nvme_hot_out(sim_t *s);
static int nvme_state_in(sim_t *s, PyObject *st);

static int push_ev(sim_t *s, int64_t t, int kind, int64_t obj)
{
    event_t e = {t, s->seq++, kind, obj};
    return heap_push(&s->heap, e);
}

static uint64_t jiffies_now(sim_t *s)
{
    return s->initial_jiffies + (uint64_t)(((__int128)(s->base_ns + s->now) * s->hz) / 1000000000LL);
}

static uint64_t jiffies_to_nsecs(sim_t *s, uint64_t j)
{
    uint32_t us;
    if (1000000 % s->hz == 0)
        us = (uint32_t)((uint64_t)(1000000 / s->hz) * j);
    else
        us = (uint32_t)((j * 1000000ULL) / (uint64_t)s->hz);
    return (uint64_t)us * 1000ULL;
}

/* --------------------------------------------------------------- service */
static double nv_magic;

static double sample_service(path_t *p)
{
    switch (p->dist) {
    case DIST_EXP:
        if (p->mean == 0.0) return 0.0;
        return -log(1.0 - mt_random(&p->rng)) / p->lam;
    case DIST_LOGNORMAL: {
        if (p->mean == 0.0) return 0.0;
        double z;
        for (;;) {
            double u1 = mt_random(&p->rng);
            double u2 = 1.0 - mt_random(&p->rng);
            z = nv_magic * (u1 - 0.5) / u2;
            double zz = z * z / 4.0;
            if (zz <= -log(u2)) break;
        }
        return exp(p->mu + z * p->sigma);
    }
    case DIST_EMPIRICAL: {
        double r = mt_random(&p->rng);
        return p->samples[(Py_ssize_t)(r * (double)p->nsamples)];
    }
    default:
        return p->mean;
    }
}

static int64_t service_ns(path_t *p, int64_t nr_bytes)
{
    double st = sample_service(p);
    if (p->ns_per_kib != 0.0)
        st += p->ns_per_kib * (double)nr_bytes / 1024.0;
    if (p->slow_factor != 1.0)
        st *= p->slow_factor;
    int64_t v = (int64_t)st;
    return v > 0 ? v : 1;
}

/* host.py mix64: splitmix64's output function */
static uint64_t mix64(uint64_t x)
{
    uint64_t z = x + 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* HostModel.timer_fires: a completion due while the timers' vCPU is away fires when it is back */
static int64_t timer_fires(sim_t *s, int64_t due)
{
    int64_t away = s->timer_away_ns;
    if (!away)
        return due;
    int64_t k = due / s->timer_period_ns;
    int64_t start = k * s->timer_period_ns + (int64_t)(mix64((uint64_t)k + ((uint64_t)s->timer_seed << 40))
                                                     % (uint64_t)(s->timer_period_ns - away));
    return (start <= due && due < start + away) ? start + away : due;
}

/* HostModel.woken_late: how much later than woken_issue the N-th woken tag sleeper of the run issues
   (WOKEN_LATE_SALT: the generated header's) */
static int64_t host_woken_late(sim_t *s, uint64_t n)
{
    if (!s->woken_late || (mix64(((s->timer_seed << 40) + n) ^ WOKEN_LATE_SALT) >= s->woken_late_below))
        return 0;
    return s->woken_late;
}

/* -------------------------------------------------------------- selectors */
/* A selector's valid list (path indices): take the one at POS, moving it to the tail
   (list_move_tail, as the kernel's selectors do with the path they choose) */
static int valid_take(int *valid, int n, int pos)
{
    int v = valid[pos];
    if (pos != n - 1) {
        memmove(&valid[pos], &valid[pos + 1], (size_t)(n - 1 - pos) * sizeof(int));
        valid[n - 1] = v;
    }
    return v;
}

static int32_t st_cmp(selpath_t *a, selpath_t *b, uint64_t incoming)
{
    uint64_t sz1 = (uint64_t)(int64_t)a->inflight_size, sz2 = (uint64_t)(int64_t)b->inflight_size;
    uint32_t rt1 = a->rt, rt2 = b->rt;
    const uint64_t maxsz = UINT64_MAX >> 7;
    if (rt1 == rt2)
        return (int32_t)(uint32_t)(sz1 - sz2);
    if (sz1 == sz2 || !rt1 || !rt2)
        return (int32_t)(rt2 - rt1);
    sz1 += incoming;
    sz2 += incoming;
    if (sz1 >= maxsz || sz2 >= maxsz) {
        sz1 >>= 7;
        sz2 >>= 7;
    }
    uint64_t st1 = sz1 * rt2, st2 = sz2 * rt1;
    if (st1 != st2)
        return (int32_t)(uint32_t)(st1 - st2);
    return (int32_t)(rt2 - rt1);
}

static int sign64(int64_t d) { return d < 0 ? -1 : (d > 0); }

/* Sign of the HST comparison: < 0 when candidate 1 beats best-so-far 2. */
static int hst_compare_vals(uint32_t thr, uint64_t hst1, uint64_t out1, uint64_t st1,
                            uint64_t hst2, uint64_t out2, uint64_t st2, uint64_t now)
{
    int over;
    if (hst1 > hst2)
        over = hst1 > (uint64_t)thr * hst2;
    else
        over = hst2 > (uint64_t)thr * hst1;
    if (!over)
        return sign64((int64_t)(out1 - out2));
    /* an idle stale path is probed; of two idle paths the staler wins */
    if ((!out1 && st1 < now) || (!out2 && st2 < now) || (!out1 && !out2))
        return sign64((int64_t)((out2 ? 0 : st1) - (out1 ? 0 : st2)));
    int p2_better;
    if (out1 == out2) {
        p2_better = hst1 > hst2;
    } else {
        if (out1 >= 1024 || out2 >= 1024) {   /* overflow guard */
            hst1 >>= 10;
            hst2 >>= 10;
        }
        p2_better = (1 + out1) * hst1 > (1 + out2) * hst2;
    }
    /* a stale winner is limited to equal usage */
    if (p2_better)
        return st2 < now ? sign64((int64_t)(out1 - out2)) : 1;
    return st1 < now ? sign64((int64_t)(out1 - out2)) : -1;
}

static uint64_t hst_updated(const uint32_t *weights, uint64_t hst, uint64_t st)
{
    uint64_t sample = st << 10;
    const uint64_t fmax = UINT64_MAX >> 10;
    if (sample > fmax) sample = fmax;
    uint64_t bucket = st >> 24;
    uint64_t w = weights[bucket < 64 ? bucket : 63];
    return (hst * w + sample * (1024 - w) + 512) >> 10;
}

/* historical-service-time, its one C implementation: the core keeps an hst_path_t inside each
   path_t, HSTCore an array of them; both pass the first one's address and the stride. */
static inline int hst_select_pos(const char *base, size_t stride, const int *valid, int n, uint32_t thr,
                                 uint64_t now)
{
    const hst_path_t *best = (const hst_path_t *)(base + (size_t)valid[0] * stride);
    int best_k = 0;
    for (int k = 1; k < n; k++) {
        const hst_path_t *h = (const hst_path_t *)(base + (size_t)valid[k] * stride);
        if (hst_compare_vals(thr, h->hst, h->outstanding, h->stale_after,
                             best->hst, best->outstanding, best->stale_after, now) < 0) {
            best = h;
            best_k = k;
        }
    }
    return best_k;
}

static inline void hst_end(hst_path_t *h, const uint32_t *weights, int valid_count, uint64_t now, uint64_t start)
{
    if ((int64_t)(start - h->last_finish) < 0)
        start = h->last_finish;
    h->last_finish = now;
    uint64_t st = ((int64_t)(now - start) < 0) ? 0 : now - start;
    h->outstanding -= 1;
    h->hst = hst_updated(weights, h->hst, st);
    h->stale_after = now + (uint64_t)(int64_t)valid_count * (h->hst >> 10);
}

/* The selector's clock() and cpu() read Simulation.now and _cur_cpu: keep them current. */
static int py_set_clock(sim_t *s)
{
    if (s->py_now_set == s->now) return 0;
    PyObject *t = PyLong_FromLongLong(s->now);
    if (!t) return -1;
    int r = PyObject_SetAttrString(s->py_sim, "now", t);
    Py_DECREF(t);
    s->py_now_set = s->now;
    return r;
}

/* Multipath.choose_pgpath -> ps.select_path for a Python selector: -1 on an error */
static int py_select_path(sim_t *s, int64_t nr_bytes, int cpu)
{
    if (py_set_clock(s) < 0) return -1;
    PyObject *c = PyLong_FromLong(cpu);
    if (!c) return -1;
    int r = PyObject_SetAttrString(s->py_sim, "_cur_cpu", c);
    Py_DECREF(c);
    if (r < 0) return -1;
    PyObject *nb = PyLong_FromLongLong(nr_bytes);
    if (!nb) return -1;
    PyObject *pgpath = PyObject_CallOneArg(PyList_GET_ITEM(s->py_select, s->cur_pg), nb);
    Py_DECREF(nb);
    if (!pgpath) return -1;
    PyObject *idx = PyDict_GetItemWithError(s->py_index, pgpath);
    Py_DECREF(pgpath);
    if (!idx) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "the selector chose no path of the table although every path is "
                            "valid; run it on the Python engine (engine='python') to see what the target does");
        return -1;
    }
    return (int)PyLong_AsLong(idx);
}

static int py_io_hook(sim_t *s, PyObject *fn, int pi, int64_t nr_bytes, PyObject *start)
{
    if (py_set_clock(s) < 0) { Py_XDECREF(start); return -1; }
    PyObject *r = start
        ? PyObject_CallFunction(fn, "OLN", PyList_GET_ITEM(s->py_pgpaths, pi), (long long)nr_bytes, start)
        : PyObject_CallFunction(fn, "OL", PyList_GET_ITEM(s->py_pgpaths, pi), (long long)nr_bytes);
    if (!r) return -1;
    Py_DECREF(r);
    return 0;
}

/* ------------------------------------------- the Python target, for the rare events */
/* The C selectors' state, for the Python selector object the target calls: (per-path
   (qlen, in_flight_size, hst, outstanding, stale_after, last_finish, valid_count of its group),
   valid order of the group the core selects in) */
/* One path's selector state as a SelPathState tuple, and back */
static PyObject *sel_path_out(const selpath_t *p)
{
    sel_path_state_t r = {p->qlen_sel, p->inflight_size, p->h.hst, p->h.outstanding, p->h.stale_after,
                          p->h.last_finish, p->valid_count};
    return Py_BuildValue(SEL_PATH_STATE_FORMAT, SEL_PATH_STATE_VALUES(r));
}

static int sel_path_in(selpath_t *p, PyObject *t)
{
    sel_path_state_t r;
    if (!PyArg_ParseTuple(t, SEL_PATH_STATE_FIELDS, SEL_PATH_STATE_REFS(&r)))
        return -1;
    p->qlen_sel = r.qlen; p->inflight_size = r.in_flight_size; p->valid_count = r.valid_count;
    p->h.hst = r.hst; p->h.outstanding = r.outstanding; p->h.stale_after = r.stale_after;
    p->h.last_finish = r.last_finish;
    return 0;
}

static PyObject *sel_state_out(sim_t *s)
{
    if (s->nvme)
        return nvme_hot_out(s);
    if (!s->any_c_sel)
        Py_RETURN_NONE;
    PyObject *paths = PyList_New(s->npaths), *order = PyList_New(s->nvalid);
    if (!paths || !order) { Py_XDECREF(paths); Py_XDECREF(order); return NULL; }
    for (int i = 0; i < s->npaths; i++) {
        PyObject *t = sel_path_out(&s->sel[i]);
        if (!t) { Py_DECREF(paths); Py_DECREF(order); return NULL; }
        PyList_SET_ITEM(paths, i, t);
    }
    for (int i = 0; i < s->nvalid; i++)
        PyList_SET_ITEM(order, i, PyLong_FromLong(s->valid[i]));
    return Py_BuildValue("(NN)", paths, order);
}

static int sel_state_in(sim_t *s, PyObject *st)
{
    if (s->nvme)
        return nvme_state_in(s, st);
    if (st == Py_None)
        return 0;
    PyObject *paths, *order;
    if (!PyArg_ParseTuple(st, "O!O!", &PyList_Type, &paths, &PyList_Type, &order))
        return -1;
    for (int i = 0; i < s->npaths; i++)
        if (sel_path_in(&s->sel[i], PyList_GET_ITEM(paths, i)) < 0)
            return -1;
    s->nvalid = (int)PyList_GET_SIZE(order);
    for (int i = 0; i < s->nvalid; i++)
        s->valid[i] = (int)PyLong_AsLong(PyList_GET_ITEM(order, i));
    return PyErr_Occurred() ? -1 : 0;
}

/* Call _Target.<name>(selector state, *args): the target acts in Python, then its state, its
   flags and the events it scheduled (kicks, timers, messages) come back.  Returns the result. */
static int read_active(sim_t *s, PyObject *active)
{
    if (!PyList_Check(active) || PyList_GET_SIZE(active) != s->npaths) {
        PyErr_SetString(PyExc_ValueError, "the target's flags need every path's is_active");
        return -1;
    }
    for (int i = 0; i < s->npaths; i++)
        s->path_active[i] = PyObject_IsTrue(PyList_GET_ITEM(active, i));
    return 0;
}

static void scsi_update_dying(sim_t *s);

/* The target's flags (sim/boundary.py TargetFlags) into the core; state_changes is the caller's */
static int set_target_flags(sim_t *s, const target_flags_t *fl)
{
    s->nr_valid_paths = fl->nr_valid_paths;
    s->target_simple = fl->bits;
    s->queue_if_no_path = fl->queue_if_no_path;
    s->kick_pending = fl->kick_pending;
    s->cur_pg = fl->current_pg;
    if (read_active(s, fl->active) < 0) return -1;
    scsi_update_dying(s);
    return 0;
}

static int requeue_kick(sim_t *s, int64_t delay_ns);
/* _Target.queue_bios: the held bios into the target's queue, in their order */
static int flush_held_bios(sim_t *s)
{
    if (!s->held_bios.len) return 0;
    PyObject *l = PyList_New(s->held_bios.len);
    if (!l) return -1;
    for (Py_ssize_t k = 0; s->held_bios.len; k++) {
        io_t *io = &s->ios[ring_pop(&s->held_bios)];
        PyObject *t = Py_BuildValue("(LLLiL)", (long long)(io - s->ios), (long long)io->nr_bytes,
                                    (long long)io->dm_start_jiffies, io->mapped, (long long)io->start_time_ns);
        if (!t) { Py_DECREF(l); return -1; }
        PyList_SET_ITEM(l, k, t);
    }
    PyObject *r = PyObject_CallMethod(s->target, "queue_bios", "N", l);
    if (!r) return -1;
    Py_DECREF(r);
    return 0;
}

static PyObject *target_call(sim_t *s, const char *name, PyObject *args)
{
    if (!args) return NULL;
    PyObject *st = NULL, *fn = NULL, *full = NULL, *ret = NULL, *res = NULL;
    if (flush_held_bios(s) < 0 || py_set_clock(s) < 0 || !(st = sel_state_out(s))) goto out;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (!(full = PyTuple_New(n + 1))) goto out;
    PyTuple_SET_ITEM(full, 0, st);
    st = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_INCREF(PyTuple_GET_ITEM(args, i));
        PyTuple_SET_ITEM(full, i + 1, PyTuple_GET_ITEM(args, i));
    }
    if (!(fn = PyObject_GetAttrString(s->target, name)) || !(ret = PyObject_Call(fn, full, NULL))) goto out;
    PyObject *result, *st_in, *events;
    target_flags_t fl;
    if (!PyArg_ParseTuple(ret, "OO" TARGET_FLAGS_FORMAT "O!", &result, &st_in, TARGET_FLAGS_REFS(&fl),
                          &PyList_Type, &events)
            || set_target_flags(s, &fl) < 0)
        goto out;
    s->state_changes += fl.state_changes;
    if (sel_state_in(s, st_in) < 0) goto out;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(events); i++) {
        core_event_t e;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(events, i), CORE_EVENT_FIELDS, CORE_EVENT_REFS(&e)))
            goto out;
        if (e.kind == EV_DEV_FAIL || e.kind == EV_DEV_RESTORE) {    /* what a daemon did to a device, now */
            if (e.obj < 0 || e.obj >= s->npaths) {
                PyErr_SetString(PyExc_ValueError, "a daemon's device operation on an unknown device");
                goto out;
            }
            if (e.kind == EV_DEV_RESTORE)
                s->paths[e.obj].offline = 0;
            else if (fail_device(s, &s->paths[e.obj]) < 0)
                goto out;
        } else if (e.kind == EV_NVME_HOLD) {        /* an NVMe head holds a lost controller's requests, now */
            if (!s->nvme || e.obj < 0 || e.obj >= s->npaths) {
                PyErr_SetString(PyExc_ValueError, "an NVMe hold of an unknown controller");
                goto out;
            }
            if (nvme_hold(s, (int)e.obj) < 0)
                goto out;
        /* EV_REQUEUE: the target kicked the requeue list (process_queued_io_list): the core's kick */
        } else if ((e.kind == EV_REQUEUE ? requeue_kick(s, e.t - s->now) : push_ev(s, e.t, e.kind, e.obj)) < 0) {
            goto out;
        }
    }
    Py_INCREF(result);
    res = result;
out:
    Py_XDECREF(st);
    Py_XDECREF(fn);
    Py_XDECREF(full);
    Py_XDECREF(ret);
    Py_DECREF(args);
    return res;
}

/* ------------------------------------------------------ selector ops table */
/* The core's struct path_selector_type (drivers/md/dm-path-selector.h): one entry per selector, and
   the engine calls a group's selector only through its entry.  select_path returns the chosen path's
   index (-1 with a Python error set); the selector moves it in its valid list as the kernel's does.
   Adding a selector at C speed: its functions and entry here, its SEL_ in sim/boundary.py, its class
   in sim/fast.py's table (docs/selector-walkthrough.md). */
typedef struct selector_ops {
    const char *name;
    int (*select_path)(sim_t *s, int64_t nr_bytes, int cpu);
    int (*start_io)(sim_t *s, selpath_t *p, int64_t nr_bytes);
    int (*end_io)(sim_t *s, selpath_t *p, int64_t nr_bytes, uint64_t start);
} selector_ops_t;

static int no_start_io(sim_t *s, selpath_t *p, int64_t nr_bytes) { return 0; }
static int no_end_io(sim_t *s, selpath_t *p, int64_t nr_bytes, uint64_t start) { return 0; }

/* round-robin (dm-ps-round-robin.c): the head of the valid list */
static int rr_select_path(sim_t *s, int64_t nr_bytes, int cpu)
{
    return valid_take(s->valid, s->nvalid, 0);
}

/* queue-length (dm-ps-queue-length.c): the fewest I/Os in flight, the first idle one at once */
static int ql_select_path(sim_t *s, int64_t nr_bytes, int cpu)
{
    int n = s->nvalid, best_i = 0;
    int *v = s->valid;
    selpath_t *best = NULL;
    for (int i = 0; i < n; i++) {
        selpath_t *p = &s->sel[v[i]];
        if (!best || p->qlen_sel < best->qlen_sel) {
            best = p;
            best_i = i;
        }
        if (best->qlen_sel == 0) break;
    }
    return valid_take(v, n, best_i);
}

static int ql_start_io(sim_t *s, selpath_t *p, int64_t nr_bytes)
{
    p->qlen_sel = (int32_t)((uint32_t)p->qlen_sel + 1U);
    return 0;
}

static int ql_end_io(sim_t *s, selpath_t *p, int64_t nr_bytes, uint64_t start)
{
    p->qlen_sel = (int32_t)((uint32_t)p->qlen_sel - 1U);
    return 0;
}

/* service-time (dm-ps-service-time.c): the least in-flight bytes per relative throughput */
static int st_select_path(sim_t *s, int64_t nr_bytes, int cpu)
{
    int n = s->nvalid, best_i = 0;
    int *v = s->valid;
    selpath_t *best = &s->sel[v[0]];
    for (int i = 1; i < n; i++) {
        selpath_t *p = &s->sel[v[i]];
        if (st_cmp(p, best, (uint64_t)nr_bytes) < 0) {
            best = p;
            best_i = i;
        }
    }
    return valid_take(v, n, best_i);
}

static int st_start_io(sim_t *s, selpath_t *p, int64_t nr_bytes)
{
    p->inflight_size = (int32_t)((uint32_t)p->inflight_size + (uint32_t)nr_bytes);
    return 0;
}

static int st_end_io(sim_t *s, selpath_t *p, int64_t nr_bytes, uint64_t start)
{
    p->inflight_size = (int32_t)((uint32_t)p->inflight_size - (uint32_t)nr_bytes);
    return 0;
}

/* historical-service-time (dm-ps-historical-service.c), through hst_select_pos and hst_end above */
static int hst_select_path(sim_t *s, int64_t nr_bytes, int cpu)
{
    uint64_t now = (uint64_t)(s->base_ns + s->now + (s->has_select_offset ? s->select_offset : 0));
    int pos = hst_select_pos((const char *)&s->sel[0].h, sizeof(selpath_t), s->valid, s->nvalid, s->threshold, now);
    return valid_take(s->valid, s->nvalid, pos);
}

static int hst_start_io(sim_t *s, selpath_t *p, int64_t nr_bytes)
{
    p->h.outstanding += 1;
    return 0;
}

static int hst_end_io(sim_t *s, selpath_t *p, int64_t nr_bytes, uint64_t start)
{
    hst_end(&p->h, s->weights, p->valid_count, (uint64_t)(s->base_ns + s->now), start);
    return 0;
}

/* io-affinity (dm-ps-io-affinity.c): the submitting CPU's path; else the first mapped CPU of its
   node, else of all (every path is valid here: with faults io-affinity runs as SEL_PY) */
static int ioa_select_path(sim_t *s, int64_t nr_bytes, int cpu)
{
    int pi = cpu >= 0 && cpu < s->nr_cpu_ids ? s->ioa_map[cpu] : -1;
    if (pi >= 0)
        return pi;
    s->map_misses++;
    if (cpu >= 0 && cpu < s->nr_cpu_ids)
        for (int c = 0; c < s->nr_cpu_ids; c++)
            if (s->ioa_node[c] == s->ioa_node[cpu] && s->ioa_map[c] >= 0)
                return s->ioa_map[c];
    for (int c = 0; c < s->nr_cpu_ids; c++)
        if (s->ioa_map[c] >= 0)
            return s->ioa_map[c];
    PyErr_SetString(PyExc_RuntimeError, "io-affinity: no CPU is mapped");
    return -1;
}

/* any other selector: its Python select_path, start_io and end_io (per group; None: no I/O hooks) */
static int py_start_io(sim_t *s, selpath_t *p, int64_t nr_bytes)
{
    PyObject *fn = PyList_GET_ITEM(s->py_start, p->pg);
    return fn != Py_None ? py_io_hook(s, fn, (int)(p - s->sel), nr_bytes, NULL) : 0;
}

static int py_end_io(sim_t *s, selpath_t *p, int64_t nr_bytes, uint64_t start)
{
    PyObject *fn = PyList_GET_ITEM(s->py_end, p->pg);
    return fn != Py_None ? py_io_hook(s, fn, (int)(p - s->sel), nr_bytes, PyLong_FromUnsignedLongLong(start)) : 0;
}

static const selector_ops_t selector_ops[] = {
    [SEL_RR] = {"round-robin", rr_select_path, no_start_io, no_end_io},
    [SEL_QL] = {"queue-length", ql_select_path, ql_start_io, ql_end_io},
    [SEL_ST] = {"service-time", st_select_path, st_start_io, st_end_io},
    [SEL_HST] = {"historical-service-time", hst_select_path, hst_start_io, hst_end_io},
    [SEL_PY] = {"python", py_select_path, py_start_io, py_end_io},
    [SEL_IOA] = {"io-affinity", ioa_select_path, no_start_io, no_end_io},
};
#define NR_SELECTOR_OPS ((int)(sizeof(selector_ops) / sizeof(selector_ops[0])))

static int select_path(sim_t *s, int64_t nr_bytes, int cpu)
{
    return selector_ops[s->pg_sel[s->cur_pg]].select_path(s, nr_bytes, cpu);
}

static int sel_start(sim_t *s, selpath_t *p, int64_t nr_bytes)
{
    return p->ops->start_io(s, p, nr_bytes);
}

static int sel_end(sim_t *s, selpath_t *p, int64_t nr_bytes, uint64_t start)
{
    return p->ops->end_io(s, p, nr_bytes, start);
}

/* ------------------------------------------------------------- multi-host */
/* sim/hosts.py MultiHostSimulation: every host maps through its own target (its selector's state,
   valid list, first choice and Python hooks) over the shared path devices.  sim_t holds the current
   host's; an I/O of another host that maps or completes switches it (pointers only, no copying). */
static void mh_save(sim_t *s)
{
    mhost_t *m = &s->mh[s->cur_mh];
    m->sel = s->sel; m->valid = s->valid; m->nvalid = s->nvalid; m->first_choice = s->first_choice;
    m->map_misses = s->map_misses;
    m->py_select = s->py_select; m->py_start = s->py_start; m->py_end = s->py_end;
    m->py_pgpaths = s->py_pgpaths; m->py_index = s->py_index;
    m->path_active = s->path_active; m->target = s->target; m->target_simple = s->target_simple;
    m->nr_valid_paths = s->nr_valid_paths; m->queue_if_no_path = s->queue_if_no_path;
    m->kick_pending = s->kick_pending; m->cur_pg = s->cur_pg;
}

static void mh_enter(sim_t *s, int h)
{
    if (h == s->cur_mh)
        return;
    mh_save(s);
    mhost_t *m = &s->mh[h];
    s->sel = m->sel; s->valid = m->valid; s->nvalid = m->nvalid; s->first_choice = m->first_choice;
    s->map_misses = m->map_misses;
    s->py_select = m->py_select; s->py_start = m->py_start; s->py_end = m->py_end;
    s->py_pgpaths = m->py_pgpaths; s->py_index = m->py_index;
    s->path_active = m->path_active; s->target = m->target; s->target_simple = m->target_simple;
    s->nr_valid_paths = m->nr_valid_paths; s->queue_if_no_path = m->queue_if_no_path;
    s->kick_pending = m->kick_pending; s->cur_pg = m->cur_pg;
    s->cur_mh = h;
}

/* A host's table for the core (fast.py _host_cfg): its selectors' path states, valid order, Python hooks
   and, with several priority groups, its Python target (fast.py _Target) and that target's flags; the
   groups, relative throughputs and selector kinds are host 0's (one table for all).  Filled through
   sim_t after switching to the host, as host 0's is. */
static int mh_load(sim_t *s, int h, PyObject *hd)
{
    mhost_t *m = &s->mh[h];
    PyObject *states = PyDict_GetItemString(hd, "sel"), *order = PyDict_GetItemString(hd, "order");
    PyObject *target = PyDict_GetItemString(hd, "target");
    if (!states || !PyList_Check(states) || PyList_GET_SIZE(states) != s->npaths || !order
            || !PyList_Check(order) || PyList_GET_SIZE(order) > s->npaths || !target) {
        PyErr_SetString(PyExc_ValueError, "a host needs every path's selector state, a valid order and a target");
        return -1;
    }
    m->sel = s->sel_all + (size_t)h * s->npaths;
    m->valid = s->valid_all + (size_t)h * s->npaths;
    m->path_active = s->path_active_all + (size_t)h * s->npaths;
    m->first_choice = -1;
    m->py_select = PyDict_GetItemString(hd, "py_select");
    m->py_start = PyDict_GetItemString(hd, "py_start");
    m->py_end = PyDict_GetItemString(hd, "py_end");
    m->py_pgpaths = PyDict_GetItemString(hd, "py_pgpaths");
    m->py_index = PyDict_GetItemString(hd, "py_index");
    if (s->py_select && !(m->py_select && m->py_start && m->py_end && m->py_pgpaths && m->py_index)) {
        PyErr_SetString(PyExc_ValueError, "a host with a Python selector needs its hooks");
        return -1;
    }
    mh_enter(s, h);
    for (int i = 0; i < s->npaths; i++) {
        s->sel[i] = s->sel_all[i];      /* host 0's relative throughput, group and selector */
        if (sel_path_in(&s->sel[i], PyList_GET_ITEM(states, i)) < 0)
            return -1;
    }
    s->nvalid = (int)PyList_GET_SIZE(order);
    for (int i = 0; i < s->nvalid; i++)
        s->valid[i] = (int)PyLong_AsLong(PyList_GET_ITEM(order, i));
    s->target = target == Py_None ? NULL : target;
    if (!s->target) {
        s->nr_valid_paths = s->target_simple = 1;
    } else {
        target_flags_t fl;
        if (!PyArg_ParseTuple(PyDict_GetItemString(hd, "target_flags"), TARGET_FLAGS_FIELDS, TARGET_FLAGS_REFS(&fl))
                || set_target_flags(s, &fl) < 0)
            return -1;
    }
    return PyErr_Occurred() ? -1 : 0;
}

/* The hosts' tables from cfg["hosts"] (host 0 is the run's own), and the per-host dispatch counts */
static int mh_setup(sim_t *s, PyObject *hosts)
{
    s->nmh = (int)PyList_GET_SIZE(hosts) + 1;
    s->mh = PyMem_Calloc((size_t)s->nmh, sizeof(mhost_t));
    s->host_port = PyMem_Calloc((size_t)s->nmh * s->npaths, sizeof(int64_t));
    selpath_t *sel = PyMem_Realloc(s->sel_all, (size_t)s->nmh * s->npaths * sizeof(selpath_t));
    if (sel) s->sel_all = s->sel = sel;
    int *valid = PyMem_Realloc(s->valid_all, (size_t)s->nmh * s->npaths * sizeof(int));
    if (valid) s->valid_all = s->valid = valid;
    int *active = PyMem_Realloc(s->path_active_all, (size_t)s->nmh * s->npaths * sizeof(int));
    if (active) s->path_active_all = s->path_active = active;
    if (!s->mh || !s->host_port || !sel || !valid || !active) {
        PyErr_NoMemory();
        return -1;
    }
    for (int h = 1; h < s->nmh; h++)
        if (mh_load(s, h, PyList_GET_ITEM(hosts, h - 1)) < 0)
            return -1;
    mh_enter(s, 0);
    return 0;
}

/* What each host's target ends with (fast.py _write_back_hosts), and host 0's state back in sim_t
   for the run's own results */
static PyObject *mh_results(sim_t *s)
{
    if (!s->nmh)
        return PyList_New(0);
    mh_enter(s, 0);
    mh_save(s);
    PyObject *out = PyList_New(s->nmh);
    for (int h = 0; out && h < s->nmh; h++) {
        mhost_t *m = &s->mh[h];
        PyObject *states = PyList_New(s->npaths), *order = PyList_New(m->nvalid);
        PyObject *ports = PyList_New(s->npaths);
        if (!states || !order || !ports) {
            Py_XDECREF(states); Py_XDECREF(order); Py_XDECREF(ports); Py_DECREF(out);
            return NULL;
        }
        for (int i = 0; i < s->npaths; i++) {
            PyList_SET_ITEM(states, i, sel_path_out(&m->sel[i]));
            PyList_SET_ITEM(ports, i, PyLong_FromLongLong(s->host_port[(size_t)h * s->npaths + i]));
        }
        for (int i = 0; i < m->nvalid; i++)
            PyList_SET_ITEM(order, i, PyLong_FromLong(m->valid[i]));
        if (PyErr_Occurred()) {     /* an item above could not be built */
            Py_DECREF(states); Py_DECREF(order); Py_DECREF(ports); Py_DECREF(out);
            return NULL;
        }
        PyObject *t = Py_BuildValue("{s:N,s:N,s:i,s:L,s:N}", "sel", states, "order", order,
                                    "first_choice", m->first_choice, "map_misses", (long long)m->map_misses,
                                    "host_port", ports);
        if (!t) { Py_DECREF(out); return NULL; }
        PyList_SET_ITEM(out, h, t);
    }
    return out;
}

static void mh_count_dispatch(sim_t *s, int64_t id)
{
    io_t *io = &s->ios[id];
    s->host_port[(size_t)s->jobs[io->job].mh * s->npaths + io->path]++;
}

/* ----------------------------------------------------------------- engine */
static int64_t new_io(sim_t *s)
{
    if (s->nfree)
        return s->free_ios[--s->nfree];
    if (s->nios == s->capios) {
        int64_t nc = s->capios ? s->capios * 2 : 1024;
        io_t *ni = PyMem_Realloc(s->ios, (size_t)nc * sizeof(io_t));
        int64_t *nf = PyMem_Realloc(s->free_ios, (size_t)nc * sizeof(int64_t));
        if (!ni || !nf) return -1;
        s->ios = ni;
        s->free_ios = nf;
        s->capios = nc;
    }
    return s->nios++;
}

static int arrive(sim_t *s, int64_t id);
static int complete_io(sim_t *s, int64_t id);
static int path_done_ok(sim_t *s, int64_t id);
static int reap_io(sim_t *s, int64_t id);
static int cpu_run(sim_t *s, int64_t id, int work);
static int submit_more(sim_t *s, int ji);
static int blk_insert(sim_t *s, int64_t id);
static int blk_start(sim_t *s, int64_t id, path_t *p);

/* ------------------------------------------------- SCSI paths (sim/scsi.py) */
/* Function for function as sim/scsi.py: scsi_may_queue = ScsiHost.may_queue, scsi_get_tag = get_tag,
   scsi_put_tag = put_tag, scsi_get_budget = ScsiDevice.get_budget, scsi_state_check = state_check
   (a table fast.py asked of state_check for each state, and the states faults set are sim/scsi.py's
   FAULT_STATES), scsi_command_result = command_result (the good case here; an error class or a
   pending retry through the Python ScsiDevice), and ScsiQueues' alloc_clone / issue_directly (in
   map_io, map_in_target, issue_directly), start, _issue, complete, retry, _schedule_run, _run,
   set_state. */
static int start_io_on_path(sim_t *s, int64_t id);

static int scsi_may_queue(scsi_host_t *h, scsi_dev_t *sd, int users)
{
    int64_t cq = h->can_queue;
    if (users <= 1 || !cq || cq == 1)
        return 1;
    int64_t depth = (cq + users - 1) / users;
    if (depth < BLK_MQ_TAG_MIN) depth = BLK_MQ_TAG_MIN;
    return sd->tags_held < depth;
}

/* would ScsiHost.get_tag give SD a tag (its queue counted active, as get_tag marks it first) */
static int scsi_tag_free(sim_t *s, scsi_dev_t *sd)
{
    scsi_host_t *h = &s->scsi_hosts[sd->host];
    if (h->can_queue && h->tags_used >= h->can_queue)
        return 0;
    return scsi_may_queue(h, sd, h->nactive + !sd->active);
}

static void scsi_mark_active(sim_t *s, scsi_dev_t *sd)
{
    if (!sd->active) {
        sd->active = 1;
        s->scsi_hosts[sd->host].nactive++;
    }
}

static int scsi_get_tag(sim_t *s, scsi_dev_t *sd)
{
    scsi_mark_active(s, sd);
    if (!scsi_tag_free(s, sd))
        return 0;
    s->scsi_hosts[sd->host].tags_used++;
    sd->tags_held++;
    return 1;
}

static void scsi_put_tag(sim_t *s, scsi_dev_t *sd)
{
    s->scsi_hosts[sd->host].tags_used--;
    sd->tags_held--;
}

static int scsi_get_budget(scsi_dev_t *sd)
{
    if (sd->queue_depth && sd->device_busy >= sd->queue_depth) {
        sd->restarts++;
        return 0;
    }
    if (sd->device_blocked) {
        if (sd->device_busy || sd->device_blocked > 1) {
            if (!sd->device_busy)
                sd->device_blocked--;
            sd->restarts++;
            return 0;
        }
        sd->device_blocked = 0;
    }
    sd->device_busy++;
    return 1;
}

/* the status the command gets before the LLD sees it (0: the LLD takes it) */
static int scsi_state_check(sim_t *s, scsi_dev_t *sd)
{
    sd->rejected += s->scsi_state_counts[sd->state];
    return s->scsi_state_status[sd->state];
}

/* 0 good, SCSI_RESULT_RETRY, or the status dm's end_io gets (ERR_* / _Target.errors index); -2 error */
static int scsi_command_result(sim_t *s, int pi, int64_t id)
{
    scsi_dev_t *sd = s->paths[pi].sd;
    if (!sd->python) {
        sd->iodone_cnt++;
        sd->nr_cmds++;
        return 0;
    }
    scsi_cmd_t c = {0, sd->nr_cmds, sd->iodone_cnt, sd->device_blocked, 1};
    PyObject *r = PyObject_CallMethod(s->scsi, "command_result", "iL" SCSI_CMD_FORMAT, pi,
                                      (long long)s->ios[id].serial, SCSI_CMD_VALUES(c));
    if (!r) return -2;
    int ok = PyArg_ParseTuple(r, SCSI_CMD_FIELDS, SCSI_CMD_REFS(&c));
    Py_DECREF(r);
    if (!ok) return -2;
    sd->nr_cmds = c.nr_cmds;
    sd->iodone_cnt = c.iodone_cnt;
    sd->device_blocked = c.device_blocked;
    sd->python = c.python;
    return c.result;
}

/* request-based, a deleted device whose path is still active makes map go through the target (its
   clone allocation fails the path; bio-based, scsi_queue_rq refuses the bio like an offline device's) */
static void scsi_update_dying(sim_t *s)
{
    if (!s->scsi_devs || s->bio) return;
    s->scsi_dying = 0;
    for (int i = 0; i < s->npaths; i++)
        if (s->paths[i].sd && s->paths[i].sd->state == s->scsi_dying_state && s->path_active[i])
            s->scsi_dying++;
}

static int scsi_schedule_run(sim_t *s, int pi, int64_t delay_ns)
{
    scsi_dev_t *sd = s->paths[pi].sd;
    if (sd->run_pending) return 0;
    sd->run_pending = 1;
    return push_ev(s, s->now + delay_ns + s->work_latency, EV_SCSI_RUN, pi);
}

/* EV_SCSI_RUN: waiting requests get budgets in order; with nothing in flight, a re-run */
static int scsi_run(sim_t *s, int pi)
{
    scsi_dev_t *sd = s->paths[pi].sd;
    sd->run_pending = 0;
    while (sd->budget_wait.len && scsi_get_budget(sd))
        if (start_io_on_path(s, ring_pop(&sd->budget_wait)) < 0) return -1;
    if (sd->budget_wait.len && !sd->device_busy) {
        int first = sd->device_blocked >= SCSI_DEFAULT_DEVICE_BLOCKED - 1;
        return scsi_schedule_run(s, pi, first ? 0 : BLK_MQ_RESOURCE_DELAY_NS);
    }
    return 0;
}

/* ScsiQueues._issue: 1 the driver starts it now, 0 it waits for a budget, -1 error */
static int scsi_issue(sim_t *s, int64_t id, scsi_dev_t *sd)
{
    if (sd->budget_wait.len || !scsi_get_budget(sd))
        return ring_push(&sd->budget_wait, id) < 0 ? -1 : 0;
    return 1;
}

/* ScsiQueues.start (bio-based) */
static int scsi_start(sim_t *s, int64_t id, scsi_dev_t *sd)
{
    if (!scsi_get_tag(s, sd)) {
        s->jobs[s->ios[id].job].blocked = 1;
        return ring_push(&s->scsi_hosts[sd->host].sleepers, id) < 0 ? -1 : 0;
    }
    return scsi_issue(s, id, sd);
}

/* ScsiQueues.complete */
static int scsi_complete(sim_t *s, int pi)
{
    scsi_dev_t *sd = s->paths[pi].sd;
    scsi_host_t *h = &s->scsi_hosts[sd->host];
    sd->device_busy--;
    scsi_put_tag(s, sd);
    if (sd->budget_wait.len) {
        sd->restarts = 0;
        if (scsi_schedule_run(s, pi, 0) < 0) return -1;
    }
    for (int64_t k = 0; k < h->sleepers.len; k++) {
        int64_t nxt = ring_at(&h->sleepers, k);
        scsi_dev_t *nsd = s->paths[s->ios[nxt].path].sd;
        if (scsi_get_tag(s, nsd)) {
            ring_remove_at(&h->sleepers, k);
            int r = scsi_issue(s, nxt, nsd);
            if (r < 0 || (r > 0 && start_io_on_path(s, nxt) < 0)) return -1;
            return push_ev(s, s->now, EV_WAKE, nxt);
        }
    }
    return 0;
}

/* ScsiQueues.retry */
static int scsi_retry(sim_t *s, int64_t id)
{
    int pi = s->ios[id].path;
    scsi_dev_t *sd = s->paths[pi].sd;
    sd->device_busy--;
    if (ring_push(&sd->budget_wait, id) < 0) return -1;
    return scsi_schedule_run(s, pi, 0);
}

/* ScsiQueues.set_state */
static int scsi_set_state(sim_t *s, int pi, int state)
{
    scsi_dev_t *sd = s->paths[pi].sd;
    sd->state = state;
    scsi_update_dying(s);
    if (state == 0 && sd->budget_wait.len)
        return scsi_schedule_run(s, pi, 0);
    return 0;
}

/* Simulation._start: the driver has the request */
static int start_io_on_path(sim_t *s, int64_t id)
{
    path_t *p = &s->paths[s->ios[id].path];
    if (p->sd && p->sd->state) {
        int err = scsi_state_check(s, p->sd);      /* scsi_queue_rq refuses it: completed at once */
        if (err) {
            s->ios[id].scsi_err = err;
            return push_ev(s, s->now, EV_SCSI_REJECT, id);
        }
    }
    if (p->offline)
        return push_ev(s, s->now + p->fail_latency_ns, EV_ERRDONE, id);
    if (p->delay_ns)
        return push_ev(s, s->now + p->delay_ns, EV_ARRIVE, id);
    return arrive(s, id);
}

/* Simulation._map's per-window dispatch count (Simulation._windows) */
static int window_count(sim_t *s, int pi)
{
    int64_t k = s->now / s->window_ns;
    if (k >= s->capwindows) {
        int64_t nc = s->capwindows ? s->capwindows * 2 : 64;
        while (nc <= k) nc *= 2;
        int64_t *nw = PyMem_Realloc(s->windows, (size_t)(nc * s->npaths) * sizeof(int64_t));
        if (!nw) return -1;
        memset(nw + s->capwindows * s->npaths, 0, (size_t)((nc - s->capwindows) * s->npaths) * sizeof(int64_t));
        s->windows = nw;
        s->capwindows = nc;
    }
    if (k >= s->nwindows) s->nwindows = k + 1;
    s->windows[k * s->npaths + pi]++;
    return 0;
}

/* Simulation._map: 1 mapped, 0 BLK_STS_RESOURCE (request-based clone without a tag), -1 error */
static int issue_mapped(sim_t *s, int64_t id);
static int issue_directly(sim_t *s, int64_t id);
static int clone_tag_free(hctx_t *q);
static void clone_tag_take(hctx_t *q);
static int complete_err(sim_t *s, int64_t id, int err);
static int path_error(sim_t *s, int64_t id, int err);
static int map_in_target(sim_t *s, int64_t id);
static int requeue_rq(sim_t *s, int64_t id, int64_t delay_ns);

static int map_io(sim_t *s, int64_t id)
{
    io_t *io = &s->ios[id];
    job_t *job = &s->jobs[io->job];
    mh_enter(s, job->mh);
    if (s->target && !(s->target_simple & TARGET_SIMPLE)) {
        if (s->target_simple & TARGET_REQUEUE) {     /* no path, request-based, queueing: DM_MAPIO_DELAY_REQUEUE */
            io->mapped = 1;
            return requeue_rq(s, id, REQUEUE_DELAY_NS) < 0 ? -1 : 1;
        }
        if (s->target_simple & TARGET_QUEUE_BIO) {  /* no path, bio-based, queue_if_no_path: held */
            if (!io->mapped)
                io->start_time_ns = 0;
            io->mapped = 1;
            return ring_push(&s->held_bios, id) < 0 ? -1 : 1;
        }
        if (!(s->target_simple & TARGET_KILL))
            return map_in_target(s, id);
        /* Multipath.map with no path and no queueing: DM_MAPIO_KILL (target state unchanged) */
        if (s->bio && !io->mapped)
            io->start_time_ns = 0;
        io->mapped = 1;
        return complete_err(s, id, ERR_IOERR) < 0 ? -1 : 1;
    }
    if (s->scsi_dying)      /* the selector may pick a deleted device's path: the target fails it */
        return map_in_target(s, id);
    io->mapped = 1;
    int pi = select_path(s, io->nr_bytes, job->cpu);
    if (pi < 0) return -1;
    if (s->first_choice < 0 && !s->target) s->first_choice = pi;
    path_t *p = &s->paths[pi];
    io->path = pi;
    hctx_t *q = &p->hw[job->cpu % p->nhw];      /* BlockLayer._hctx */
    if (s->blk && !s->bio) {
        /* BlockLayer.alloc_clone: BLK_MQ_REQ_NOWAIT; no tag -> DM_MAPIO_REQUEUE, no start_io */
        if (p->sd) {
            if (!scsi_get_tag(s, p->sd)) return 0;
        } else {
            if (!clone_tag_free(q)) return 0;
            clone_tag_take(q);
        }
    }
    if (s->bio)
        io->start_time_ns = s->use_hr ? s->base_ns + s->now : 0;
    else
        io->start_time_ns = s->rq_stats ? s->base_ns + s->now : 0;
    if (sel_start(s, &s->sel[pi], io->nr_bytes) < 0) return -1;
    return issue_directly(s, id);
}

/* BlockLayer.alloc_clone's tag: a scheduler tag on a path with a scheduler, else a driver tag */
static int clone_tag_free(hctx_t *q)
{
    if (q->nr_sched_tags)
        return q->sched_tags_used < q->nr_sched_tags;
    return !q->nr_tags || q->tags_used < q->nr_tags;
}

static void clone_tag_take(hctx_t *q)
{
    if (q->nr_sched_tags)
        q->sched_tags_used++;
    else
        q->tags_used++;
}

/* BlockLayer.issue_directly, then the rest of Simulation._map: 1 issued, 0 BLK_STS_RESOURCE, -1 error */
static int issue_directly(sim_t *s, int64_t id)
{
    io_t *io = &s->ios[id];
    path_t *p = &s->paths[io->path];
    hctx_t *q = &p->hw[s->jobs[io->job].cpu % p->nhw];
    if (s->blk && !s->bio && p->sd) {
        /* ScsiQueues.issue_directly: no budget, the clone is released (its tag back) */
        if (!scsi_get_budget(p->sd)) {
            io->start_time_ns = 0;
            if (sel_end(s, &s->sel[io->path], io->nr_bytes, 0) < 0) return -1;
            scsi_put_tag(s, p->sd);
            return 0;
        }
    } else if (s->blk && !s->bio && q->nr_sched_tags) {
        /* the clone needs a driver tag too */
        if (q->nr_tags && q->tags_used >= q->nr_tags) {
            io->start_time_ns = 0;
            if (sel_end(s, &s->sel[io->path], io->nr_bytes, 0) < 0) return -1;      /* multipath_release_clone */
            q->sched_tags_used--;
            return 0;
        }
        q->tags_used++;
    }
    return issue_mapped(s, id);
}

/* the rest of Simulation._map once the target remapped the I/O to a path */
static int issue_mapped(sim_t *s, int64_t id)
{
    int pi = s->ios[id].path;
    path_t *p = &s->paths[pi];
    p->dispatched++;
    if (s->host_port)
        mh_count_dispatch(s, id);
    if (s->window_ns && window_count(s, pi) < 0) return -1;
    p->in_flight++;
    if (p->in_flight > p->peak_in_flight) p->peak_in_flight = p->in_flight;
    if (s->blk) {
        int r = blk_start(s, id, p);
        if (r <= 0) return r < 0 ? -1 : 1;
    }
    return start_io_on_path(s, id) < 0 ? -1 : 1;
}

/* Simulation._map through the Python target: no valid path, or queueing or a pg switch pending
   (never with path tags: eligible() refuses those with faults and messages) */
static int map_in_target(sim_t *s, int64_t id)
{
    io_t *io = &s->ios[id];
    job_t *job = &s->jobs[io->job];
    PyObject *free = Py_None;       /* request-based with tags: which paths have a clone tag for this I/O */
    Py_INCREF(free);
    if (s->blk && !s->bio) {
        Py_DECREF(free);
        if (!(free = PyList_New(s->npaths))) return -1;
        for (int i = 0; i < s->npaths; i++) {
            path_t *p = &s->paths[i];
            PyObject *f;
            if (!p->sd)
                f = PyBool_FromLong(clone_tag_free(&p->hw[job->cpu % p->nhw]));
            else if (p->sd->state == s->scsi_dying_state) {     /* ScsiQueues.alloc_clone: the queue is dying */
                f = Py_None;
                Py_INCREF(f);
            } else
                f = PyBool_FromLong(scsi_tag_free(s, p->sd));
            PyList_SET_ITEM(free, i, f);
        }
    }
    PyObject *r = target_call(s, "map", Py_BuildValue("(LLLiLiN)", (long long)id, (long long)io->nr_bytes,
        s->bio ? (long long)io->dm_start_jiffies : -1LL, io->mapped, (long long)io->start_time_ns, job->cpu,
        free));
    if (!r) return -1;
    int code, pi;
    long long start;
    int ok = PyArg_ParseTuple(r, "iiL", &code, &pi, &start);
    Py_DECREF(r);
    if (!ok) return -1;
    io->mapped = 1;
    io->start_time_ns = start;
    switch (code) {
    case MAP_REMAPPED:
        io->path = pi;
        if (s->blk && !s->bio) {    /* the clone tag the target's alloc_clone was told is free */
            if (s->paths[pi].sd)
                scsi_get_tag(s, s->paths[pi].sd);
            else
                clone_tag_take(&s->paths[pi].hw[job->cpu % s->paths[pi].nhw]);
        }
        return issue_directly(s, id);
    case MAP_DELAY_REQUEUE:     /* request-based only */
        return requeue_rq(s, id, REQUEUE_DELAY_NS) < 0 ? -1 : 1;
    case MAP_REQUEUE:
        if (s->blk && !s->bio) {    /* no tag for the clone (pi: the path asked; get_tag marked it active) */
            if (pi >= 0 && s->paths[pi].sd)
                scsi_mark_active(s, s->paths[pi].sd);
            return 0;
        }
        /* 1 us keeps a persistent requeue from spinning at one instant */
        return push_ev(s, s->now + 1000, EV_RETRY, id) < 0 ? -1 : 1;
    case MAP_KILL:
        return complete_err(s, id, ERR_IOERR) < 0 ? -1 : 1;
    default:            /* MAP_SUBMITTED: queued inside the target until a kick */
        return 1;
    }
}

/* Simulation._dispatch */
static int dispatch(sim_t *s, int64_t id)
{
    if (s->nvme)
        return nvme_map_io(s, id) < 0 ? -1 : 0;
    if (s->blk && !s->bio)
        return blk_insert(s, id);
    return map_io(s, id) < 0 ? -1 : 0;
}

/* IoPath._kick_requeue: blk_mq_delay_kick_requeue_list, a mod_delayed_work (the latest kick wins) */
static int requeue_kick(sim_t *s, int64_t delay_ns)
{
    s->requeue_gen++;
    return push_ev(s, s->now + delay_ns, EV_REQUEUE, s->requeue_gen);
}

/* IoPath._requeue: dm_requeue_original_request (request-based) */
static int requeue_rq(sim_t *s, int64_t id, int64_t delay_ns)
{
    if (ring_push(&s->requeue, id) < 0) return -1;
    return requeue_kick(s, delay_ns);
}

/* IoPath._run_requeue_list: the listed requests (not those requeued meanwhile) go back to the dm queue */
static int requeue_run(sim_t *s)
{
    for (int64_t n = s->requeue.len; n > 0; n--)
        if (dispatch(s, ring_pop(&s->requeue)) < 0) return -1;
    return 0;
}

/* ------------------------------------------------- block layer (blockqueue.py) */
/* BlockLayer._mod_work: hctx->run_work, the latest request wins */
static int blk_mod_work(sim_t *s, int64_t delay_ns)
{
    s->work_gen++;
    return push_ev(s, s->now + delay_ns + s->work_latency, EV_WORK, s->work_gen);
}

/* BlockLayer.insert */
static int blk_insert(sim_t *s, int64_t id)
{
    if (ring_push(&s->waiting, id) < 0) return -1;
    return blk_mod_work(s, 0);
}

/* BlockLayer._dispatch: map in order, one request per dispatch_cost, until BLK_STS_RESOURCE */
static int blk_dispatch(sim_t *s)
{
    s->dispatching = 0;
    while (s->waiting.len) {
        int64_t id = s->waiting.v[s->waiting.head];
        int r = map_io(s, id);
        if (r < 0) return -1;
        if (r == 0) {
            s->stalled = 1;
            s->resource_stalls++;
            return blk_mod_work(s, s->sched_restart ? BLK_MQ_RESOURCE_DELAY_NS : 0);
        }
        ring_pop(&s->waiting);
        if (s->dispatch_cost && s->waiting.len) {
            s->dispatching = 1;
            return push_ev(s, s->now + s->dispatch_cost, EV_DISPATCH, 0);
        }
    }
    s->stalled = 0;
    return 0;
}

/* BlockLayer._run */
static int blk_run(sim_t *s)
{
    if (s->stalled)
        s->sched_restart = 1;
    return s->dispatching ? 0 : blk_dispatch(s);
}

static int blk_sleep(sim_t *s, int64_t id, hctx_t *q)
{
    s->jobs[s->ios[id].job].blocked = 1;
    return ring_push(&q->sleepers, id);
}

/* BlockLayer.start: 1 the driver starts it now, 0 it waits, -1 error */
static int blk_start(sim_t *s, int64_t id, path_t *p)
{
    if (!s->bio)
        return 1;
    if (p->sd)
        return scsi_start(s, id, p->sd);
    hctx_t *q = &p->hw[s->jobs[s->ios[id].job].cpu % p->nhw];
    if (q->nr_sched_tags) {
        if (q->sched_tags_used >= q->nr_sched_tags)
            return blk_sleep(s, id, q) < 0 ? -1 : 0;
        q->sched_tags_used++;
        if (q->dispatch.len || (q->nr_tags && q->tags_used >= q->nr_tags))
            return ring_push(&q->dispatch, id) < 0 ? -1 : 0;
        q->tags_used++;
        return 1;
    }
    if (q->nr_tags && q->tags_used >= q->nr_tags)
        return blk_sleep(s, id, q) < 0 ? -1 : 0;
    q->tags_used++;
    return 1;
}

/* BlockLayer._wake_batch: up to a batch of the tasks asleep on q get their tag and go on */
static int blk_wake_batch(sim_t *s, hctx_t *q)
{
    for (int64_t n = q->wake_batch < q->sleepers.len ? q->wake_batch : q->sleepers.len; n > 0; n--) {
        if (q->nr_sched_tags ? q->sched_tags_used >= q->nr_sched_tags : (q->nr_tags && q->tags_used >= q->nr_tags))
            break;
        int64_t nxt = ring_pop(&q->sleepers);
        int64_t at = s->now + s->woken_issue;     /* when the woken task goes on */
        if (q->nr_sched_tags)
            q->sched_tags_used++;
        if (q->nr_sched_tags && (q->dispatch.len || (q->nr_tags && q->tags_used >= q->nr_tags))) {
            if (ring_push(&q->dispatch, nxt) < 0) return -1;
        } else if (s->woken_issue) {          /* BlockLayer._woken_start, woken_issue (and woken_late) later */
            q->tags_used++;
            at += host_woken_late(s, ++s->woken);
            if (push_ev(s, at, EV_WOKEN_START, nxt) < 0) return -1;
        } else {
            q->tags_used++;
            if (start_io_on_path(s, nxt) < 0) return -1;
        }
        if (push_ev(s, at, EV_WAKE, nxt) < 0) return -1;
    }
    return 0;
}

/* BlockLayer.complete */
static int blk_complete(sim_t *s, path_t *p, int64_t id)
{
    hctx_t *q = &p->hw[s->jobs[s->ios[id].job].cpu % p->nhw];
    if (p->sd && scsi_complete(s, (int)(p - s->paths)) < 0)
        return -1;
    if (!s->bio) {
        if (!p->sd) {
            q->tags_used--;
            if (q->nr_sched_tags)
                q->sched_tags_used--;
        }
        if (s->sched_restart) {
            s->sched_restart = 0;
            if (s->waiting.len)
                return blk_mod_work(s, 0);
        }
        return 0;
    }
    if (p->sd)
        return 0;
    if (q->nr_sched_tags) {
        q->sched_tags_used--;
        q->tags_used--;
        if (q->dispatch.len) {
            q->tags_used++;
            if (start_io_on_path(s, ring_pop(&q->dispatch)) < 0) return -1;
        }
    } else {
        q->tags_used--;
    }
    if (q->sleepers.len && hctx_batch_done(q))
        return blk_wake_batch(s, q);
    return 0;
}

/* BlockLayer._wake */
static int blk_wake(sim_t *s, int64_t id)
{
    int ji = s->ios[id].job;
    s->jobs[ji].blocked = 0;
    return submit_more(s, ji);
}

/* ------------------------------------------------------------ host (host.py) */
/* id -1: other tenants' work (Host._steal) */
static int cpu_begin(sim_t *s, int ci, int64_t id, int64_t wake)
{
    cpu_t *c = &s->cpus[ci];
    int64_t cost = id < 0 ? s->steal_ns
                 : s->ios[id].cpu_work == WORK_SUBMIT ? s->submit_ns_cost : s->complete_ns_cost;
    c->busy = 1;
    c->current = id;
    c->busy_ns += cost;
    c->busy_until = s->now + wake + cost;
    return push_ev(s, c->busy_until, EV_CPU, ci);
}

static int cpu_run_on(sim_t *s, int ci, int64_t id)
{
    if (s->cpus[ci].busy)
        return ring_push(&s->cpus[ci].queue, id);
    return cpu_begin(s, ci, id, s->now > s->cpus[ci].idle_since ? s->wake_ns_cost : 0);
}

/* Simulation._active */
static int sim_active(sim_t *s)
{
    for (int i = 0; i < s->njobs; i++) {
        job_t *j = &s->jobs[i];
        if (j->inflight || (!j->stopped && j->remaining != 0 && (j->stop_ns < 0 || s->now < j->stop_ns)))
            return 1;
    }
    return 0;
}

/* Host._steal */
static int cpu_steal(sim_t *s, int ci)
{
    if (!sim_active(s))
        return 0;
    if (cpu_run_on(s, ci, -1) < 0) return -1;
    return push_ev(s, s->now + s->steal_period_ns, EV_STEAL, ci);
}

static int cpu_run(sim_t *s, int64_t id, int work)
{
    int ci = s->jobs[s->ios[id].job].cpu % s->ncpus;
    s->ios[id].cpu_work = work;
    if (s->cpus[ci].busy)
        return ring_push(&s->cpus[ci].queue, id);
    return cpu_begin(s, ci, id, s->now > s->cpus[ci].idle_since ? s->wake_ns_cost : 0);
}

/* Host._interrupt: the completion's CPU time runs now, after the interrupt work before it, and pushes back
   the work on the CPU; fio has the I/O back when it ends (EV_IRQ_END) */
static int cpu_interrupt(sim_t *s, int64_t id)
{
    cpu_t *c = &s->cpus[s->jobs[s->ios[id].job].cpu % s->ncpus];
    c->irq_until = (s->now > c->irq_until ? s->now : c->irq_until) + s->complete_ns_cost;
    c->busy_ns += s->complete_ns_cost;
    if (c->busy) {
        c->busy_until += s->complete_ns_cost;
    } else {
        c->busy = 1;
        c->current = -1;
        c->busy_until = c->irq_until;
        if (push_ev(s, c->busy_until, EV_CPU, (int64_t)(c - s->cpus)) < 0) return -1;
    }
    return push_ev(s, c->irq_until, EV_IRQ_END, id);
}

/* Host._end */
static int cpu_end(sim_t *s, int ci)
{
    cpu_t *c = &s->cpus[ci];
    if (s->now < c->busy_until)         /* interrupt work pushed it back meanwhile */
        return push_ev(s, c->busy_until, EV_CPU, ci);
    int64_t id = c->current;
    c->current = -1;
    if (c->queue.len) {
        if (cpu_begin(s, ci, ring_pop(&c->queue), 0) < 0) return -1;
    } else {
        c->busy = 0;
        c->idle_since = s->now;
    }
    if (id < 0)
        return 0;
    if (s->ios[id].cpu_work == WORK_SUBMIT) {     /* Host._submitted */
        int ji = s->ios[id].job;
        s->jobs[ji].blocked = 0;
        if (dispatch(s, id) < 0) return -1;
        return submit_more(s, ji);
    }
    if (s->ios[id].cpu_work == WORK_REAP)         /* Host._reaped */
        return reap_io(s, id);
    return path_error(s, id, ERR_TRANSPORT);      /* Host._completed: a failed I/O */
}

static int arrive(sim_t *s, int64_t id)
{
    io_t *io = &s->ios[id];
    path_t *p = &s->paths[io->path];
    if (p->offline)
        return push_ev(s, s->now + p->fail_latency_ns, EV_ERRDONE, id);
    if (p->busy < p->parallelism) {
        p->busy++;
        return push_ev(s, timer_fires(s, s->now + service_ns(p, io->nr_bytes)), EV_DONE, id);
    }
    return ring_push(&p->queue, id);
}

/* ------------------------------------------------- IoGen (sim/arrival.py) */
/* The generator of a job with mixed sizes, trims or open-loop arrivals, function for function
   as arrival.py's IoGen (gen_ddir = IoGen._ddir, gen_size = _size, gen_draw = _draw,
   gen_advance_rate = _advance_rate, gen_next_io = next_io) and with its field names.  Only the
   part eligible() lets into the core is here: verify, flow, latency_target, iodepth_low draining
   and cpuio burners stay in Python.  Python's None is -1 in the fields that can hold it (they
   are never negative otherwise).
   Bit for bit: the stream is IoGen.rng itself (random.Random(seed ^ 0x5EED), its state handed
   over and back, so the seeding exists only in arrival.py); mt_random is random.random() (53 bits
   from two draws); every float step below is the one Python performs, in its order (int -> double
   conversions, then IEEE double * / + -, and libm's log as math.log calls it); int() of a
   positive double is a C cast (truncation). */

/* workload/fio.py READ, WRITE, TRIM (SimIO.ddir) */
enum { DDIR_READ = 0, DDIR_WRITE = 1, DDIR_TRIM = 2 };
/* JobSpec.ddir_mode; read, write and trim are the direction they issue */
enum { MODE_READ = 0, MODE_WRITE = 1, MODE_TRIM = 2, MODE_MIX = 3, MODE_TRIMWRITE = 4 };
/* where JobSpec gives the sizes: bs_rwt, bsrange_rwt or bssplit_rwt */
enum { SIZES_BS = 0, SIZES_BSRANGE = 1, SIZES_BSSPLIT = 2 };
#define BSSPLIT_MAX 64          /* fio's BSSPLIT_MAX (workload/fio.py parse_bssplit refuses more) */
/* IoGen.next_io's answers: a (direction, bytes), a time to ask again (an int), None */
enum { GEN_ERROR = -1, GEN_NONE = 0, GEN_WAIT = 1, GEN_IO = 2 };

typedef struct iogen {
    /* the job's spec, as IoGen reads it */
    int ddir_mode, sizes, bs_unaligned;
    int poisson;                /* rate_process=poisson (else linear) */
    int think_issue;            /* thinktime_blocks_type=issue (else complete) */
    int64_t bs_rwt[3], bsrange_rwt[3][2];
    int nsplit[3];
    int64_t split_size[3][BSSPLIT_MAX];
    double split_weight[3][BSSPLIT_MAX];
    double split_total[3];      /* sum(w for _, w in ch), as Python summed it (sim/fast_gen.py) */
    int64_t thinktime_ns, thinktime_blocks;
    /* IoGen's state */
    mt_state rng;               /* IoGen.rng: random.Random(seed ^ 0x5EED), handed over as its getstate() */
    int64_t bytes_left, ios_left;
    int64_t issued_bytes[3];
    double next_ns[3];          /* the rate schedule, ns since the job started: a float, as in Python */
    double last_poisson[3];
    int pending_d;              /* IoGen.pending: (pending_d, pending_n), pending_d -1 for None */
    int64_t pending_n;
    int64_t batch, think_until, trim_next_write;
    int writing_done, done;
    int64_t rate_sleep, rate_wake;  /* IoGen.rate_sleep / rate_wake (-1: None) */
    int64_t bps[3], minbs[3];
} iogen_t;

/* IoGen._ddir: a mix draws from the job's own stream (JobState.rng), as the closed loop does */
static int gen_ddir(iogen_t *g, job_t *job)
{
    if (g->ddir_mode == MODE_MIX) {
        double rf = job->read_fraction;
        return rf >= 1.0 || (rf > 0.0 && mt_random(&job->rng) < rf) ? DDIR_READ : DDIR_WRITE;
    }
    if (g->ddir_mode == MODE_TRIMWRITE)     /* each block is trimmed, then written with the trim's size */
        return g->trim_next_write >= 0 ? DDIR_WRITE : DDIR_TRIM;
    return g->ddir_mode;
}

/* IoGen._size: fio's get_next_buflen */
static int64_t gen_size(iogen_t *g, int d)
{
    int64_t n, minbs, maxbs;
    if (d == DDIR_WRITE && g->trim_next_write >= 0) {
        n = g->trim_next_write;
        g->trim_next_write = -1;
        return n;
    }
    if (g->sizes == SIZES_BSSPLIT) {
        int k = g->nsplit[d];
        const int64_t *size = g->split_size[d];
        const double *w = g->split_weight[d];
        if (k == 1) {
            n = size[0];
        } else {
            /* rng.random() * sum(weights), then walk the weights subtracting, all in doubles as Python */
            double r = mt_random(&g->rng) * g->split_total[d];
            n = size[k - 1];
            for (int i = 0; i < k; i++) {
                if (r < w[i]) {
                    n = size[i];
                    break;
                }
                r -= w[i];
            }
        }
        minbs = maxbs = size[0];
        for (int i = 1; i < k; i++) {
            if (size[i] < minbs) minbs = size[i];
            if (size[i] > maxbs) maxbs = size[i];
        }
    } else if (g->sizes == SIZES_BSRANGE) {
        minbs = g->bsrange_rwt[d][0];
        maxbs = g->bsrange_rwt[d][1];
        if (minbs == maxbs)
            return minbs;
        /* int(maxbs * rng.random()): the int as a double (exact below 2^53), the product truncated */
        n = minbs + (int64_t)((double)maxbs * mt_random(&g->rng));
    } else {
        return g->bs_rwt[d];
    }
    if (!g->bs_unaligned)
        n -= n % minbs;         /* both positive: C's % is Python's */
    return n < maxbs ? n : maxbs;
}

/* IoGen._draw: 1 with the next I/O of the job's own pattern in *d, *n; 0 when that is done */
static int gen_draw(sim_t *s, job_t *job, iogen_t *g, int *d, int64_t *n)
{
    if (g->writing_done)
        return 0;
    if ((g->ios_left >= 0 && g->ios_left <= 0) || (job->stop_ns >= 0 && s->now >= job->stop_ns)) {
        g->writing_done = 1;
        return 0;
    }
    *d = gen_ddir(g, job);
    *n = gen_size(g, *d);
    if (g->bytes_left >= 0 && !(g->ddir_mode == MODE_TRIMWRITE && *d == DDIR_WRITE)) {
        if (g->bytes_left < g->minbs[*d]) {
            g->writing_done = 1;
            return 0;
        }
        if (*n > g->bytes_left)
            *n = g->bytes_left - g->bytes_left % g->minbs[*d];
        g->bytes_left -= *n;
    }
    if (g->ios_left >= 0)
        g->ios_left--;
    if (g->ddir_mode == MODE_TRIMWRITE && *d == DDIR_TRIM)
        g->trim_next_write = *n;
    return 1;
}

/* IoGen._advance_rate: fio's usec_for_io */
static void gen_advance_rate(iogen_t *g, int d, int64_t n)
{
    int64_t bps = g->bps[d];
    if (!bps)
        return;
    g->issued_bytes[d] += n;
    if (g->poisson) {
        /* iops = bps / minbs (Python's true division of two ints below 2^53: one rounding, as here);
           last_poisson += -math.log(1.0 - rng.random()) * 1e9 / iops, left to right */
        double iops = (double)bps / (double)g->minbs[d];
        g->last_poisson[d] += -log(1.0 - mt_random(&g->rng)) * 1e9 / iops;   /* not * (1e9 / iops) */
        g->next_ns[d] = g->last_poisson[d];
    } else {
        /* issued_bytes * 1e9 / bps: the int made a double, then two float operations */
        g->next_ns[d] = (double)g->issued_bytes[d] * 1e9 / (double)bps;
    }
}

/* IoGen.next_io: GEN_IO with (*d, *n) to submit now; GEN_WAIT: ask again at *at; GEN_NONE:
   nothing now (done, or waiting for completions) */
static int gen_next_io(sim_t *s, job_t *job, iogen_t *g, int *d, int64_t *n, int64_t *at)
{
    int64_t now = s->now, stop = job->stop_ns;
    if (g->done)
        return GEN_NONE;
    if (g->thinktime_ns && g->batch >= g->thinktime_blocks && !g->writing_done) {
        if (!g->think_issue && job->inflight)
            return GEN_NONE;                    /* complete_io asks again */
        if (g->think_until < 0)
            g->think_until = now + g->thinktime_ns;
        if (now < g->think_until) {
            *at = stop < 0 || g->think_until < stop ? g->think_until : stop;
            return GEN_WAIT;
        }
        g->batch = 0;
        g->think_until = -1;
    }
    if (g->pending_d < 0) {
        if (!gen_draw(s, job, g, &g->pending_d, &g->pending_n)) {
            g->pending_d = -1;
            g->done = 1;
            job->remaining = 0;
            return GEN_NONE;
        }
    }
    *d = g->pending_d;
    *n = g->pending_n;
    if (g->bps[*d]) {
        /* job.start_ns + int(next_ns): the float truncated toward zero */
        double next = g->next_ns[*d];
        if (!(next < 4611686018427387904.0)) {      /* 2^62: beyond the core's int64 clock */
            PyErr_SetString(PyExc_OverflowError, "a rate schedule beyond 2^62 ns");
            return GEN_ERROR;
        }
        int64_t due = job->startdelay_ns + (int64_t)next;
        /* fio's rate_ddir: ahead of the rate, the sleep measured now, taken once every I/O in
           flight is reaped (io_u_quiesce) */
        if (g->rate_sleep < 0 && g->rate_wake < 0 && due > now)
            g->rate_sleep = due - now;
        if (g->rate_sleep >= 0) {
            if (job->inflight)
                return GEN_NONE;                /* complete_io asks again */
            g->rate_wake = now + g->rate_sleep;
            g->rate_sleep = -1;
        }
        if (g->rate_wake >= 0) {
            if (now < g->rate_wake) {
                *at = stop < 0 || g->rate_wake < stop ? g->rate_wake : stop;
                return GEN_WAIT;
            }
            g->rate_wake = -1;                  /* the sleep is over: the I/O goes out */
        }
    }
    g->pending_d = -1;
    gen_advance_rate(g, *d, *n);
    g->batch++;
    if (g->thinktime_ns && g->think_issue && g->batch >= g->thinktime_blocks)
        g->think_until = now + g->thinktime_ns;     /* fio thinks right after issuing the batch */
    return GEN_IO;
}

/* IoGen's state in and out (sim/boundary.py GenState), and the stream as random's getstate() words */
static int gen_state_in(iogen_t *g, PyObject *st, PyObject *rng)
{
    gen_state_t r;
    if (!PyArg_ParseTuple(st, GEN_STATE_FIELDS, GEN_STATE_REFS(&r)))
        return -1;
    g->bytes_left = r.bytes_left; g->ios_left = r.ios_left;
    for (int d = 0; d < 3; d++) {
        g->issued_bytes[d] = r.issued_bytes[d];
        g->next_ns[d] = r.next_ns[d];
        g->last_poisson[d] = r.last_poisson[d];
    }
    g->pending_d = r.pending_d; g->pending_n = r.pending_n; g->batch = r.batch;
    g->think_until = r.think_until; g->trim_next_write = r.trim_next_write;
    g->writing_done = r.writing_done; g->done = r.done;
    g->rate_sleep = r.rate_sleep; g->rate_wake = r.rate_wake;
    if (!PyTuple_Check(rng) || PyTuple_GET_SIZE(rng) != MT_N + 1) {
        PyErr_SetString(PyExc_ValueError, "the generator's stream must be random's 625 state words");
        return -1;
    }
    for (int i = 0; i < MT_N; i++)
        g->rng.mt[i] = (uint32_t)PyLong_AsUnsignedLong(PyTuple_GET_ITEM(rng, i));
    g->rng.mti = (int)PyLong_AsLong(PyTuple_GET_ITEM(rng, MT_N));
    return PyErr_Occurred() ? -1 : 0;
}

static PyObject *gen_state_out(iogen_t *g)
{
    PyObject *rng = PyTuple_New(MT_N + 1);
    if (!rng) return NULL;
    for (int i = 0; i < MT_N; i++)
        PyTuple_SET_ITEM(rng, i, PyLong_FromUnsignedLong(g->rng.mt[i]));
    PyTuple_SET_ITEM(rng, MT_N, PyLong_FromLong(g->rng.mti));
    gen_state_t r = {g->bytes_left, g->ios_left, {g->issued_bytes[0], g->issued_bytes[1], g->issued_bytes[2]},
                     {g->next_ns[0], g->next_ns[1], g->next_ns[2]},
                     {g->last_poisson[0], g->last_poisson[1], g->last_poisson[2]}, g->pending_d, g->pending_n,
                     g->batch, g->think_until, g->trim_next_write, g->writing_done, g->done,
                     g->rate_sleep, g->rate_wake};
    return Py_BuildValue("(" GEN_STATE_FORMAT "N)", GEN_STATE_VALUES(r), rng);
}

static int get_i64_triple(PyObject *d, const char *k, int64_t out[3])
{
    long long a, b, c;
    PyObject *v = PyDict_GetItemString(d, k);
    if (!v) { PyErr_Format(PyExc_KeyError, "missing %s", k); return -1; }
    if (!PyArg_ParseTuple(v, "LLL", &a, &b, &c)) return -1;
    out[0] = a; out[1] = b; out[2] = c;
    return 0;
}

/* the generator of one job from fast.py's _gen_cfg */
static iogen_t *gen_load(PyObject *gd)
{
    iogen_t *g = PyMem_Calloc(1, sizeof(iogen_t));
    if (!g) { PyErr_NoMemory(); return NULL; }
    PyObject *v;
    long long x;
#define GEN_INT(field, key) \
    if (!(v = PyDict_GetItemString(gd, key))) { PyErr_Format(PyExc_KeyError, "missing %s", key); goto fail; } \
    x = PyLong_AsLongLong(v); if (x == -1 && PyErr_Occurred()) goto fail; g->field = x;
    GEN_INT(ddir_mode, "ddir_mode")
    GEN_INT(sizes, "sizes")
    GEN_INT(bs_unaligned, "bs_unaligned")
    GEN_INT(poisson, "poisson")
    GEN_INT(think_issue, "think_issue")
    GEN_INT(thinktime_ns, "thinktime_ns")
    GEN_INT(thinktime_blocks, "thinktime_blocks")
#undef GEN_INT
    if (get_i64_triple(gd, "bs_rwt", g->bs_rwt) < 0 || get_i64_triple(gd, "bps", g->bps) < 0
            || get_i64_triple(gd, "minbs", g->minbs) < 0)
        goto fail;
    v = PyDict_GetItemString(gd, "bsrange_rwt");      /* ((lo, hi) per direction) or None */
    if (v && v != Py_None) {
        long long r[3][2];
        if (!PyArg_ParseTuple(v, "(LL)(LL)(LL)", &r[0][0], &r[0][1], &r[1][0], &r[1][1], &r[2][0], &r[2][1]))
            goto fail;
        for (int d = 0; d < 3; d++) {
            g->bsrange_rwt[d][0] = r[d][0];
            g->bsrange_rwt[d][1] = r[d][1];
        }
    }
    v = PyDict_GetItemString(gd, "bssplit_rwt");      /* ([(size, weight)...] per direction, total) or None */
    if (v && v != Py_None) {
        PyObject *lists, *totals;
        if (!PyArg_ParseTuple(v, "OO", &lists, &totals)) goto fail;
        for (int d = 0; d < 3; d++) {
            PyObject *ch = PySequence_GetItem(lists, d);
            PyObject *tot = PySequence_GetItem(totals, d);
            if (!ch || !tot) { Py_XDECREF(ch); Py_XDECREF(tot); goto fail; }
            g->split_total[d] = PyFloat_AsDouble(tot);
            Py_DECREF(tot);
            Py_ssize_t k = PySequence_Size(ch);
            if (k < 1 || k > BSSPLIT_MAX) {
                Py_DECREF(ch);
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "bssplit: 1 to 64 sizes per direction");
                goto fail;
            }
            g->nsplit[d] = (int)k;
            for (Py_ssize_t i = 0; i < k; i++) {
                PyObject *e = PySequence_GetItem(ch, i);
                long long size;
                int ok = e && PyArg_ParseTuple(e, "Ld", &size, &g->split_weight[d][i]);
                Py_XDECREF(e);
                if (!ok) { Py_DECREF(ch); goto fail; }
                g->split_size[d][i] = size;
            }
            Py_DECREF(ch);
        }
    }
    PyObject *st = PyDict_GetItemString(gd, "state"), *rng = PyDict_GetItemString(gd, "rng");
    if (!st || !rng) { PyErr_SetString(PyExc_KeyError, "missing the generator's state"); goto fail; }
    if (gen_state_in(g, st, rng) < 0) goto fail;
    return g;
fail:
    PyMem_Free(g);
    return NULL;
}

#define FIO_AVG_TIME_NS 500000000LL

static int depth_index(int64_t depth)
{
    int idx = 0;
    if (depth >= 64) return 6;
    while (depth > 1) { depth >>= 1; idx++; }
    return idx;
}

static int lat_range_index(int64_t ns)
{
    static const int64_t edges[10] = {2, 4, 10, 20, 50, 100, 250, 500, 750, 1000};
    int64_t v;
    int base;
    if (ns < 1000) { v = ns; base = 0; }
    else if (ns < 1000000) { v = ns / 1000; base = 10; }
    else {
        v = ns / 1000000;
        if (v >= 2000) return 31;
        if (v >= 1000) return 30;
        base = 20;
    }
    for (int i = 0; i < 10; i++)
        if (v < edges[i]) return base + i;
    return base + 9;
}

static int window_add(job_t *job, int64_t t_rel, int ddir, int64_t nbytes)
{
    int64_t k = t_rel / FIO_AVG_TIME_NS;
    if (k >= job->capwin) {
        int64_t nc = job->capwin ? job->capwin * 2 : 16;
        while (nc <= k) nc *= 2;
        int64_t *nw = PyMem_Realloc(job->win, (size_t)nc * 6 * sizeof(int64_t));
        if (!nw) return -1;
        memset(nw + job->capwin * 6, 0, (size_t)(nc - job->capwin) * 6 * sizeof(int64_t));
        job->win = nw;
        job->capwin = nc;
    }
    if (k >= job->nwin) job->nwin = k + 1;
    int64_t *w = job->win + k * 6;
    w[ddir] += nbytes;
    w[3 + ddir] += 1;
    return 0;
}

static int submit_more(sim_t *s, int ji)
{
    job_t *job = &s->jobs[ji];
    iogen_t *g = job->gen;
    /* (IoGen.over: past the stop, a generator without verify issues nothing more) */
    if (job->stopped || (job->stop_ns >= 0 && s->now >= job->stop_ns)) {
        if (g && !job->inflight && !job->stopped) {
            if (job->wake_ns == s->now)
                job->end_ns = s->now;   /* it slept (think time, rate) until its runtime ended: fio counts the sleep */
            else if (job->end_ns == s->now && g->thinktime_ns && !g->think_issue
                     && g->batch >= g->thinktime_blocks)
                /* its last I/O completed after the runtime ended: fio still thinks in full */
                job->end_ns = s->now + g->thinktime_ns;
        }
        return 0;
    }
    while (job->inflight < job->iodepth) {
        if (job->blocked)
            return 0;
        if (job->last_error_ns == s->now)
            return 0;   /* resubmitted by the EV_SUBMIT queued at the error */
        int ddir;
        int64_t nr_bytes;
        if (g) {
            /* (JobState.remaining stays None until the generator is done) */
            int64_t at;
            int r = gen_next_io(s, job, g, &ddir, &nr_bytes, &at);
            if (r == GEN_ERROR) return -1;
            if (r == GEN_NONE) return 0;
            if (r == GEN_WAIT) {                /* open loop: not before this time */
                if (job->wake_ns != at) {
                    job->wake_ns = at;
                    return push_ev(s, at, EV_SUBMIT, ji);
                }
                return 0;
            }
        } else {
            if (job->remaining >= 0) {
                if (job->remaining <= 0) return 0;
                job->remaining--;
            }
            double rf = job->read_fraction;
            ddir = rf >= 1.0 || (rf > 0.0 && mt_random(&job->rng) < rf) ? DDIR_READ : DDIR_WRITE;
            nr_bytes = job->bs;
        }
        int64_t id = new_io(s);
        if (id < 0) return -1;
        io_t *io = &s->ios[id];
        io->job = ji;
        io->submit_ns = s->now;
        io->ddir = ddir;
        io->nr_bytes = nr_bytes;
        io->mapped = 0;
        job->inflight++;
        job->depth_map[depth_index(job->inflight)]++;
        job->submitted++;
        s->submitted++;
        io->serial = s->submitted;
        if (s->bio)
            io->dm_start_jiffies = jiffies_now(s);
        if (s->host && s->submit_ns_cost) {       /* Host.submit */
            job->blocked = 1;
            if (cpu_run(s, id, WORK_SUBMIT) < 0) return -1;
            continue;
        }
        if (dispatch(s, id) < 0) return -1;
    }
    return 0;
}

static int io_done(sim_t *s, int64_t id);

/* Simulation._path_done without an error: dm ends the I/O (the selector's end_io, its tags back) */
static int complete_io(sim_t *s, int64_t id)
{
    if (s->nvme)
        return nvme_path_done(s, id, 0);
    io_t *io = &s->ios[id];
    path_t *p = &s->paths[io->path];
    p->in_flight--;
    uint64_t start;
    if (s->bio)
        start = io->start_time_ns ? (uint64_t)io->start_time_ns : jiffies_to_nsecs(s, io->dm_start_jiffies);
    else
        start = (uint64_t)io->start_time_ns;
    mh_enter(s, s->jobs[io->job].mh);
    if (sel_end(s, &s->sel[io->path], io->nr_bytes, start) < 0) return -1;
    if (s->blk && blk_complete(s, p, id) < 0) return -1;
    return io_done(s, id);
}

/* the rest of Simulation._path_done for an I/O that completed without an error; fio reaps it (_reap) */
static int io_done(sim_t *s, int64_t id)
{
    io_t *io = &s->ios[id];
    path_t *p = &s->paths[io->path];
    p->completed++;
    lat_add(&p->lat, s->now - io->submit_ns);
    if (s->host && s->complete_ns_cost && s->completion_irq)
        return cpu_interrupt(s, id);
    if (s->host && s->complete_ns_cost)          /* Simulation._reap: fio reaps it after the CPU time */
        return cpu_run(s, id, WORK_REAP);
    return reap_io(s, id);
}

/* Simulation._complete without an error: fio has the I/O back */
static int reap_io(sim_t *s, int64_t id)
{
    io_t *io = &s->ios[id];
    job_t *job = &s->jobs[io->job];
    job->inflight--;
    job->completed++;
    s->completed++;
    int64_t lat = s->now - io->submit_ns;
    if (io->ddir == DDIR_READ) {
        lat_add(&job->rlat, lat);
        job->bytes_read += io->nr_bytes;
    } else if (io->ddir == DDIR_TRIM) {
        lat_add(&job->tlat, lat);
        job->bytes_trimmed += io->nr_bytes;
    } else {
        lat_add(&job->wlat, lat);
        job->bytes_written += io->nr_bytes;
    }
    if (window_add(job, s->now - job->startdelay_ns, io->ddir, io->nr_bytes) < 0) return -1;
    job->lat_ranges[lat_range_index(lat)]++;
    job->end_ns = s->now;
    s->free_ios[s->nfree++] = id;
    if (s->record_done) {
        if (s->ndone == s->capdone) {
            int64_t nc = s->capdone ? s->capdone * 2 : 1024;
            int64_t *nd = PyMem_Realloc(s->done_at, (size_t)nc * sizeof(int64_t));
            if (!nd) return -1;
            s->done_at = nd;
            s->capdone = nc;
        }
        s->done_at[s->ndone++] = s->now;
    }
    return submit_more(s, io->job);
}

/* Simulation._path_done without an error from the path: a SCSI path's midlayer decides first */
static int path_done_ok(sim_t *s, int64_t id)
{
    int pi = s->ios[id].path;
    if (s->paths[pi].sd) {
        int r = scsi_command_result(s, pi, id);
        if (r == -2) return -1;
        if (r == SCSI_RESULT_RETRY)     /* below dm: the command goes round the device again */
            return scsi_retry(s, id);
        if (r)
            return path_error(s, id, r);
    }
    return complete_io(s, id);
}

/* Simulation._complete with an error (err: index into _Target.errors) */
static int complete_err(sim_t *s, int64_t id, int err)
{
    int ji = s->ios[id].job;
    job_t *job = &s->jobs[ji];
    job->inflight--;
    job->errored++;
    s->errored++;
    if (!job->first_error) job->first_error = err;
    job->end_ns = s->now;
    s->free_ios[s->nfree++] = id;
    if (job->last_error_ns == s->now)
        return 0;       /* a resubmission is already queued */
    job->last_error_ns = s->now;
    if (!job->continue_on_error) {
        job->stopped = 1;
        return 0;
    }
    return push_ev(s, s->now + RESUBMIT_AFTER_ERROR_NS, EV_SUBMIT, ji);
}

/* Simulation._path_done with an error (ERR_* / _Target.errors index): the Python target's end_io decides */
static int path_error(sim_t *s, int64_t id, int error)
{
    if (s->nvme)
        return nvme_path_done(s, id, error);
    io_t *io = &s->ios[id];
    path_t *p = &s->paths[io->path];
    int code, err;
    p->in_flight--;
    mh_enter(s, s->jobs[io->job].mh);
    if ((s->target_simple & (TARGET_END_REQUEUE | TARGET_END_FAIL)) && !s->path_active[io->path]
            && (error == ERR_TRANSPORT || error == ERR_IOERR)) {
        /* request-based, a path error on a path the target has failed already: end_io changes nothing
           but the selector's end_io (bit 3: END_REQUEUE; bit 4: no path, no queueing: END_DONE with the
           error) */
        if (sel_end(s, &s->sel[io->path], io->nr_bytes, (uint64_t)io->start_time_ns) < 0) return -1;
        code = (s->target_simple & TARGET_END_REQUEUE) ? END_REQUEUE : END_DONE;
        err = (s->target_simple & TARGET_END_REQUEUE) ? 0 : error;
    } else {
        PyObject *r = target_call(s, "end_io", Py_BuildValue("(LLiLLii)", (long long)id,
            (long long)io->nr_bytes, io->path, (long long)io->start_time_ns,
            s->bio ? (long long)io->dm_start_jiffies : -1LL, io->mapped, error));
        if (!r) return -1;
        int ok = PyArg_ParseTuple(r, "ii", &code, &err);
        Py_DECREF(r);
        if (!ok) return -1;
    }
    if (s->blk && blk_complete(s, p, id) < 0) return -1;
    p->errors++;
    if (code != END_DONE)
        s->requeued_errors++;
    switch (code) {
    case END_DONE:
        if (!err) {
            PyErr_SetString(PyExc_RuntimeError, "the target completed a failed I/O without an error");
            return -1;
        }
        return complete_err(s, id, err);
    case END_REQUEUE:
        if (!s->bio) return requeue_rq(s, id, 0);
        return push_ev(s, s->now, EV_RETRY, id);    /* bio-based (a noflush suspend): back to dm core */
    case END_DELAY_REQUEUE:     /* request-based only */
        return requeue_rq(s, id, REQUEUE_DELAY_NS);
    default:            /* END_INCOMPLETE: the target queued it and will kick */
        return 0;
    }
}

/* ------------------------------------------------------- NVMe head (nvme/head.py) */
/* An NVMe run (nvme/core.py): the head's per-I/O steps in C, function for function as nvme/head.py and
   the policies have them -- the path choice of numa, round-robin and queue-depth, driver_start with
   the cross-node cost, and end_io of a request that completes without a status.  Everything rare
   (no usable path, an error status, a retry on the same path, failover, ANA log reads, controller
   loss and reconnects, iopolicy writes: every message and timer of the head) is the Python head's,
   called through nvme/core.py; each call sends the state the core changes (NvmeHot) and takes back
   the head's state (NvmeState), so each algorithm exists once and both sides stay one state.
   Controllers are known by their path device's index. */

/* what the head keeps of one request (nvme/head.py _Req) */
typedef struct {
    int head;               /* the namespace head (nsid - 1) */
    int cpu, retries;       /* _Req.cpu, _Req.retries */
    int started, counted, policy_gen;   /* _Req.started, .counted, .policy (the run's policies in turn) */
    int held;               /* the Python head holds the I/O (queued, failed over, retried): it maps it */
    int64_t start_ns;
} nvme_io_t;

typedef struct nvme_core {
    int nctrl, nheads, nnodes, ncpus, marginal_aware;
    int64_t cross_node_cost;
    int policy, policy_gen, counts_active;
    int *node_of_cpu;       /* HostModel.node_of_cpu of each CPU a job runs on */
    int *numa_node;         /* per controller, -1 NUMA_NO_NODE */
    int *distance;          /* [node * nctrl + ctrl]: HostModel.distance to the controller's node */
    int *io_ok, *live, *marginal, *nr_active, *injecting;     /* per controller (NvmeCtrl) */
    int *npaths;            /* per head */
    int *path_ctrl, *path_ana, *path_disabled;  /* [head * nctrl + k]: the head's k-th path (NvmePath) */
    int *pos;               /* [head * nctrl + ctrl]: k of the controller's path in the head, -1 none */
    int *current;           /* [head * nnodes + node]: the node's current path (a controller), -1 none */
    int *target_live;       /* [head * nctrl + ctrl]: the array's ANA state of the head's group is live */
    int *job_head;          /* NvmeHead.nshead_for: each job's head, -1 before its first I/O */
    int nassigned;
    int recovery;           /* HeadTimers.recovery_ns > 0: a failed device's controller learns of the loss */
    ring_t *held;           /* per controller: started requests held since the loss (run.py attach: held) */
    nvme_io_t *io;          /* per I/O id */
    int64_t capio;
} nvme_core_t;

static nvme_io_t *nvme_io(sim_t *s, int64_t id)
{
    nvme_core_t *nv = s->nvme;
    if (nv->capio < s->capios) {
        nvme_io_t *n = PyMem_Realloc(nv->io, (size_t)s->capios * sizeof(nvme_io_t));
        if (!n) { PyErr_NoMemory(); return NULL; }
        nv->io = n;
        nv->capio = s->capios;
    }
    return &nv->io[id];
}

/* policy.py path_is_optimized, of the controller's path in head h */
static int nvme_optimized(nvme_core_t *nv, int h, int c)
{
    int k = nv->pos[h * nv->nctrl + c];
    return nv->live[c] && nv->path_ana[h * nv->nctrl + k] == NVME_ANA_OPTIMIZED && !nv->marginal[c];
}

/* policy.py find_nearest (__nvme_find_path): the nearest optimized path, else the nearest
   non-optimized one; the winner becomes the node's current path.  A controller, or -1. */
static int nvme_find_nearest(nvme_core_t *nv, int h, int node, int use_distance)
{
    const int *ctrl = nv->path_ctrl + h * nv->nctrl, *ana = nv->path_ana + h * nv->nctrl;
    const int *dis = nv->path_disabled + h * nv->nctrl;
    int found = -1, fallback = -1, found_d = INT_MAX, fallback_d = INT_MAX;
    for (int k = 0; k < nv->npaths[h]; k++) {
        if (dis[k]) continue;
        int c = ctrl[k];
        int d = use_distance && nv->numa_node[c] >= 0 ? nv->distance[node * nv->nctrl + c] : NVME_LOCAL_DISTANCE;
        if (ana[k] == NVME_ANA_OPTIMIZED && !nv->marginal[c]) {
            if (d < found_d) { found_d = d; found = c; }
        } else if (ana[k] != NVME_ANA_OTHER) {
            if (d < fallback_d) { fallback_d = d; fallback = c; }
        }
    }
    if (found < 0) found = fallback;
    if (found >= 0) nv->current[h * nv->nnodes + node] = found;
    return found;
}

/* numa.py Numa.find_path: the node's current path while it is optimized, else the nearest */
static int nvme_numa_path(nvme_core_t *nv, int h, int node)
{
    int c = nv->current[h * nv->nnodes + node];
    if (c < 0 || !nvme_optimized(nv, h, c))
        return nvme_find_nearest(nv, h, node, 1);
    return c;
}

/* round_robin.py RoundRobin.find_path: the walk after the node's current path */
static int nvme_round_robin_path(nvme_core_t *nv, int h, int node)
{
    int *cur = &nv->current[h * nv->nnodes + node];
    int old = *cur;
    if (old < 0)
        return nvme_find_nearest(nv, h, node, 0);
    const int *ctrl = nv->path_ctrl + h * nv->nctrl, *ana = nv->path_ana + h * nv->nctrl;
    const int *dis = nv->path_disabled + h * nv->nctrl;
    int n = nv->npaths[h], i = nv->pos[h * nv->nctrl + old];
    if (i < 0) {
        PyErr_SetString(PyExc_RuntimeError, "nvme: a current path that is not in its head");
        return -2;
    }
    if (n == 1)
        return dis[i] ? -1 : old;
    int found = -1;
    for (int k = 1; k < n; k++) {
        int j = (i + k) % n;
        if (dis[j]) continue;
        if (ana[j] == NVME_ANA_OPTIMIZED) {
            found = ctrl[j];
            if (!nv->marginal[found]) {
                *cur = found;
                return found;
            }
        } else if (ana[j] == NVME_ANA_NON_OPTIMIZED) {
            found = ctrl[j];
        }
    }
    if (!dis[i] && (ana[i] == NVME_ANA_OPTIMIZED || (found < 0 && ana[i] == NVME_ANA_NON_OPTIMIZED)))
        return old;
    if (found < 0)
        return -1;
    *cur = found;
    return found;
}

/* queue_depth.py QueueDepth.find_path: the fewest requests in flight per controller */
static int nvme_queue_depth_path(nvme_core_t *nv, int h, int node)
{
    const int *ctrl = nv->path_ctrl + h * nv->nctrl, *ana = nv->path_ana + h * nv->nctrl;
    const int *dis = nv->path_disabled + h * nv->nctrl;
    int best_opt = -1, best_nonopt = -1;
    int64_t min_opt = 0xFFFFFFFFLL, min_nonopt = 0xFFFFFFFFLL;
    for (int k = 0; k < nv->npaths[h]; k++) {
        int c = ctrl[k];
        if (dis[k] || nv->marginal[c]) continue;
        int64_t depth = nv->nr_active[c];
        if (ana[k] == NVME_ANA_OPTIMIZED) {
            if (depth < min_opt) { min_opt = depth; best_opt = c; }
        } else if (ana[k] == NVME_ANA_NON_OPTIMIZED) {
            if (depth < min_nonopt) { min_nonopt = depth; best_nonopt = c; }
        }
        if (min_opt == 0)
            return best_opt;
    }
    int found = best_opt >= 0 ? best_opt : best_nonopt;
    if (found < 0 && nv->marginal_aware)
        return nvme_find_nearest(nv, h, node, 0);
    return found;
}

/* the policy's find_path: a controller, -1 no path, -2 an error */
static int nvme_find_path(nvme_core_t *nv, int h, int node)
{
    switch (nv->policy) {
    case NVME_POLICY_NUMA: return nvme_numa_path(nv, h, node);
    case NVME_POLICY_ROUND_ROBIN: return nvme_round_robin_path(nv, h, node);
    default: return nvme_queue_depth_path(nv, h, node);
    }
}

/* Simulation._map's MAP_REMAPPED and _start: the path's counts, then NvmeHead.driver_start (a
   controller neither live nor deleting fails the request at once), extra_delay_ns, the transport */
static int nvme_issue(sim_t *s, int64_t id)
{
    nvme_core_t *nv = s->nvme;
    nvme_io_t *r = &nv->io[id];
    int c = s->ios[id].path;
    path_t *p = &s->paths[c];
    p->dispatched++;
    if (s->window_ns && window_count(s, c) < 0) return -1;
    p->in_flight++;
    if (p->in_flight > p->peak_in_flight) p->peak_in_flight = p->in_flight;
    r->started = 0;
    if (!nv->io_ok[c])
        return push_ev(s, s->now, EV_ERRDONE, id);
    r->started = 1;
    r->policy_gen = nv->policy_gen;
    r->counted = nv->counts_active;
    if (r->counted)
        nv->nr_active[c]++;
    r->start_ns = s->base_ns + s->now;
    int64_t delay = p->delay_ns;
    if (nv->numa_node[c] >= 0 && nv->cross_node_cost && nv->node_of_cpu[r->cpu] != nv->numa_node[c])
        delay += nv->cross_node_cost;
    if (p->offline)
        return push_ev(s, s->now + p->fail_latency_ns, EV_ERRDONE, id);
    if (delay)
        return push_ev(s, s->now + delay, EV_ARRIVE, id);
    return arrive(s, id);
}

/* NvmeHead.map in Python (NvmeMapResult) */
static int nvme_map_in_head(sim_t *s, int64_t id)
{
    nvme_io_t *r = &s->nvme->io[id];
    PyObject *res = target_call(s, "map", Py_BuildValue("(LiLi)", (long long)id, r->head,
                                                        (long long)s->ios[id].nr_bytes, r->cpu));
    if (!res) return -1;
    nvme_map_result_t m;
    int ok = PyArg_ParseTuple(res, NVME_MAP_RESULT_FIELDS, NVME_MAP_RESULT_REFS(&m));
    Py_DECREF(res);
    if (!ok) return -1;
    switch (m.code) {
    case MAP_REMAPPED:
        r->held = 0;
        r->retries = m.retries;
        s->ios[id].path = m.ctrl;
        return nvme_issue(s, id);
    case MAP_SUBMITTED:     /* on the head's requeue list until a kick */
        r->held = 1;
        return 0;
    default:                /* MAP_KILL */
        r->held = 0;
        return complete_err(s, id, ERR_IOERR);
    }
}

/* Simulation._map through NvmeHead.map: the policy's choice in C while the head does not hold the I/O */
static int nvme_map_io(sim_t *s, int64_t id)
{
    nvme_core_t *nv = s->nvme;
    io_t *io = &s->ios[id];
    nvme_io_t *r = nvme_io(s, id);
    if (!r) return -1;
    if (!io->mapped) {          /* a new I/O (submit_more clears mapped) */
        io->mapped = 1;
        r->held = 0;
        if (nv->job_head[io->job] < 0)
            nv->job_head[io->job] = nv->nassigned++ % nv->nheads;
        r->head = nv->job_head[io->job];
    }
    r->cpu = s->jobs[io->job].cpu;
    if (!r->held) {
        int c = nvme_find_path(nv, r->head, nv->node_of_cpu[r->cpu]);
        if (c < -1) return -1;
        if (c >= 0) {
            r->retries = 0;
            io->path = c;
            return nvme_issue(s, id);
        }
    }
    return nvme_map_in_head(s, id);
}

/* Simulation._path_done with NvmeHead.end_io: a request started on a controller that has no status
   queued, in an ANA state that answers, completes here; any other end is the Python head's
   (err: 0, or the job error code of the transport's status) */
static int nvme_path_done(sim_t *s, int64_t id, int err)
{
    nvme_core_t *nv = s->nvme;
    nvme_io_t *r = &nv->io[id];
    int c = s->ios[id].path;
    path_t *p = &s->paths[c];
    p->in_flight--;
    if (!err && r->started && !nv->injecting[c] && nv->target_live[r->head * nv->nctrl + c]) {
        if (r->counted && nv->nr_active[c] > 0)
            nv->nr_active[c]--;
        return io_done(s, id);
    }
    PyObject *res = target_call(s, "end_io", Py_BuildValue("(LiiiiiiiLi)", (long long)id, r->head, c, r->cpu,
        r->retries, r->started, r->counted, r->policy_gen, (long long)r->start_ns, err));
    if (!res) return -1;
    int code, errcode;
    int ok = PyArg_ParseTuple(res, "ii", &code, &errcode);
    Py_DECREF(res);
    if (!ok) return -1;
    if (err) {
        p->errors++;
        if (code != END_DONE)
            s->requeued_errors++;   /* the head took the I/O back (another path, or the same later) */
    }
    if (code == END_DONE)
        return errcode ? complete_err(s, id, errcode) : io_done(s, id);
    r->held = 1;    /* END_REQUEUE: failed over, or retried on its path; the head maps it again */
    return push_ev(s, s->now, EV_RETRY, id);
}

typedef struct {
    int64_t submit_ns, order, id;
} nvme_abort_t;

static int nvme_abort_cmp(const void *a, const void *b)
{
    const nvme_abort_t *x = a, *y = b;
    if (x->submit_ns != y->submit_ns) return x->submit_ns < y->submit_ns ? -1 : 1;
    return x->order < y->order ? -1 : (x->order > y->order);
}

/* nvme/run.py _pull_started: every request controller C started and has not completed, out of the event
   queue (the heap's array order, then the device queue) onto OUT; a request the device is serving keeps
   its server until the service ends (EV_NVME_FREE) */
static int nvme_pull(sim_t *s, int c, ring_t *out)
{
    heap_t *h = &s->heap;
    path_t *p = &s->paths[c];
    int64_t n = 0;
    for (int64_t i = 0; i < h->n; i++) {
        event_t e = h->ev[i];
        if ((e.kind == EV_ARRIVE || e.kind == EV_DONE) && s->ios[e.obj].path == c) {
            if (ring_push(out, e.obj) < 0) return -1;
            if (e.kind == EV_ARRIVE)
                continue;
            e.kind = EV_NVME_FREE;
            e.obj = c;
        }
        h->ev[n++] = e;
    }
    h->n = n;
    heap_heapify(h);
    while (p->queue.len)
        if (ring_push(out, ring_pop(&p->queue)) < 0) return -1;
    return 0;
}

/* EV_NVME_HOLD (run.py attach's hold_in_flight): the lost controller's started requests wait for the cancel */
static int nvme_hold(sim_t *s, int c)
{
    return nvme_pull(s, c, &s->nvme->held[c]);
}

/* EV_NVME_CANCEL, nvme/run.py _cancel_tagset: the requests held since the loss and those still under way
   end now with HOST_ABORTED_CMD, in submission order (for equal times, in the order they were pulled) */
static int nvme_cancel(sim_t *s, int c)
{
    ring_t *all = &s->nvme->held[c];
    if (nvme_pull(s, c, all) < 0) return -1;
    int64_t na = all->len;
    nvme_abort_t *ab = PyMem_Malloc((size_t)(na + 1) * sizeof(nvme_abort_t));
    if (!ab) { PyErr_NoMemory(); return -1; }
    for (int64_t i = 0; i < na; i++) {
        int64_t id = ring_pop(all);
        ab[i].submit_ns = s->ios[id].submit_ns;
        ab[i].order = i;
        ab[i].id = id;
    }
    qsort(ab, (size_t)na, sizeof(nvme_abort_t), nvme_abort_cmp);
    int rc = 0;
    for (int64_t i = 0; i < na && rc == 0; i++)
        rc = nvme_path_done(s, ab[i].id, ERR_HOST_ABORTED);
    PyMem_Free(ab);
    return rc;
}

/* Simulation.fail_device with a recovery time (run.py attach's fail_and_tell): the controller learns of
   the loss first (NvmeHead.transport_lost), holding what it had started */
static int nvme_transport_lost(sim_t *s, int c)
{
    PyObject *r = target_call(s, "transport_lost", Py_BuildValue("(i)", c));
    if (!r) return -1;
    Py_DECREF(r);
    return 0;
}

/* EV_NVME_FREE, nvme/run.py _server_free: the device ends the service of a cancelled request */
static int nvme_server_free(sim_t *s, int c)
{
    path_t *p = &s->paths[c];
    if (p->queue.len) {
        int64_t nxt = ring_pop(&p->queue);
        return push_ev(s, s->now + service_ns(p, s->ios[nxt].nr_bytes), EV_DONE, nxt);
    }
    p->busy--;
    return 0;
}

static PyObject *int_list(const int *v, int n)
{
    PyObject *l = PyList_New(n);
    for (int i = 0; l && i < n; i++) {
        PyObject *x = PyLong_FromLong(v[i]);
        if (!x) { Py_DECREF(l); return NULL; }
        PyList_SET_ITEM(l, i, x);
    }
    return l;
}

/* NvmeHot: what the core changed since the Python head last looked */
static PyObject *nvme_hot_out(sim_t *s)
{
    nvme_core_t *nv = s->nvme;
    PyObject *cur = PyList_New(nv->nheads);
    if (!cur) return NULL;
    for (int h = 0; h < nv->nheads; h++) {
        PyObject *l = int_list(nv->current + h * nv->nnodes, nv->nnodes);
        if (!l) { Py_DECREF(cur); return NULL; }
        PyList_SET_ITEM(cur, h, l);
    }
    nvme_hot_t hot = {int_list(nv->nr_active, nv->nctrl), cur, int_list(nv->job_head, s->njobs)};
    PyObject *r = hot.nr_active && hot.job_head ? Py_BuildValue(NVME_HOT_FORMAT, NVME_HOT_VALUES(hot)) : NULL;
    Py_XDECREF(hot.nr_active);
    Py_XDECREF(hot.job_head);
    Py_DECREF(cur);
    return r;
}

static int read_ints(PyObject *l, int *out, int n, const char *what)
{
    if (!PyList_Check(l) || PyList_GET_SIZE(l) != n) {
        PyErr_Format(PyExc_ValueError, "nvme: %s needs %d values", what, n);
        return -1;
    }
    for (int i = 0; i < n; i++)
        out[i] = (int)PyLong_AsLong(PyList_GET_ITEM(l, i));
    return PyErr_Occurred() ? -1 : 0;
}

/* NvmeState: the Python head's state after a call (or at the start) */
static int nvme_state_in(sim_t *s, PyObject *st)
{
    nvme_core_t *nv = s->nvme;
    nvme_state_t r;
    if (!PyArg_ParseTuple(st, NVME_STATE_FIELDS, NVME_STATE_REFS(&r)))
        return -1;
    if (r.policy < NVME_POLICY_NUMA || r.policy > NVME_POLICY_QUEUE_DEPTH) {
        PyErr_SetString(PyExc_ValueError, "nvme: an I/O policy the core has not");
        return -1;
    }
    nv->policy = r.policy;
    nv->policy_gen = r.policy_gen;
    nv->counts_active = r.counts_active;
    if (!PyList_Check(r.ctrls) || PyList_GET_SIZE(r.ctrls) != nv->nctrl
            || !PyList_Check(r.heads) || PyList_GET_SIZE(r.heads) != nv->nheads) {
        PyErr_SetString(PyExc_ValueError, "nvme: a state of every controller and head");
        return -1;
    }
    for (int c = 0; c < nv->nctrl; c++) {
        nvme_ctrl_t x;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(r.ctrls, c), NVME_CTRL_FIELDS, NVME_CTRL_REFS(&x)))
            return -1;
        nv->io_ok[c] = x.io_ok;
        nv->live[c] = x.live;
        nv->marginal[c] = x.marginal;
        nv->nr_active[c] = x.nr_active;
        nv->injecting[c] = x.injecting;
    }
    for (int h = 0; h < nv->nheads; h++) {
        nvme_head_state_t hs;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(r.heads, h), NVME_HEAD_STATE_FIELDS, NVME_HEAD_STATE_REFS(&hs)))
            return -1;
        if (!PyList_Check(hs.paths) || PyList_GET_SIZE(hs.paths) > nv->nctrl) {
            PyErr_SetString(PyExc_ValueError, "nvme: a head's paths");
            return -1;
        }
        int base = h * nv->nctrl;
        nv->npaths[h] = (int)PyList_GET_SIZE(hs.paths);
        for (int c = 0; c < nv->nctrl; c++)
            nv->pos[base + c] = -1;
        for (int k = 0; k < nv->npaths[h]; k++) {
            nvme_path_t np;
            if (!PyArg_ParseTuple(PyList_GET_ITEM(hs.paths, k), NVME_PATH_FIELDS, NVME_PATH_REFS(&np)))
                return -1;
            if (np.ctrl < 0 || np.ctrl >= nv->nctrl) {
                PyErr_SetString(PyExc_ValueError, "nvme: a path on an unknown controller");
                return -1;
            }
            nv->path_ctrl[base + k] = np.ctrl;
            nv->path_ana[base + k] = np.ana;
            nv->path_disabled[base + k] = np.disabled;
            nv->pos[base + np.ctrl] = k;
        }
        if (read_ints(hs.current, nv->current + h * nv->nnodes, nv->nnodes, "current") < 0
                || read_ints(hs.target_live, nv->target_live + base, nv->nctrl, "target_live") < 0)
            return -1;
    }
    return 0;
}

static int64_t get_i64(PyObject *d, const char *k, int *err);

/* the "nvme" entry of fast_simulate's configuration (nvme/core.py run) */
static int nvme_load(sim_t *s, PyObject *d)
{
    int err = 0;
    nvme_core_t *nv = PyMem_Calloc(1, sizeof(nvme_core_t));
    if (!nv) { PyErr_NoMemory(); return -1; }
    s->nvme = nv;
    nv->nctrl = s->npaths;
    nv->nheads = (int)get_i64(d, "nheads", &err);
    nv->nnodes = (int)get_i64(d, "nnodes", &err);
    nv->marginal_aware = (int)get_i64(d, "marginal_aware", &err);
    nv->cross_node_cost = get_i64(d, "cross_node_cost", &err);
    nv->nassigned = (int)get_i64(d, "nassigned", &err);
    PyObject *cpus = PyDict_GetItemString(d, "node_of_cpu");
    if (err || nv->nheads < 1 || nv->nnodes < 1 || !cpus || !PyList_Check(cpus)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "nvme: heads, nodes and CPUs");
        return -1;
    }
    nv->ncpus = (int)PyList_GET_SIZE(cpus);
    int hc = nv->nheads * nv->nctrl;
    nv->node_of_cpu = PyMem_Calloc((size_t)nv->ncpus + 1, sizeof(int));
    nv->numa_node = PyMem_Calloc((size_t)nv->nctrl, sizeof(int));
    nv->distance = PyMem_Calloc((size_t)(nv->nnodes * nv->nctrl), sizeof(int));
    nv->io_ok = PyMem_Calloc((size_t)nv->nctrl, sizeof(int));
    nv->live = PyMem_Calloc((size_t)nv->nctrl, sizeof(int));
    nv->marginal = PyMem_Calloc((size_t)nv->nctrl, sizeof(int));
    nv->nr_active = PyMem_Calloc((size_t)nv->nctrl, sizeof(int));
    nv->injecting = PyMem_Calloc((size_t)nv->nctrl, sizeof(int));
    nv->npaths = PyMem_Calloc((size_t)nv->nheads, sizeof(int));
    nv->path_ctrl = PyMem_Calloc((size_t)hc, sizeof(int));
    nv->path_ana = PyMem_Calloc((size_t)hc, sizeof(int));
    nv->path_disabled = PyMem_Calloc((size_t)hc, sizeof(int));
    nv->pos = PyMem_Calloc((size_t)hc, sizeof(int));
    nv->target_live = PyMem_Calloc((size_t)hc, sizeof(int));
    nv->current = PyMem_Calloc((size_t)(nv->nheads * nv->nnodes), sizeof(int));
    nv->job_head = PyMem_Calloc((size_t)s->njobs + 1, sizeof(int));
    nv->held = PyMem_Calloc((size_t)nv->nctrl, sizeof(ring_t));
    nv->recovery = (int)get_i64(d, "recovery", &err);
    if (!nv->node_of_cpu || !nv->numa_node || !nv->distance || !nv->io_ok || !nv->live || !nv->marginal
            || !nv->nr_active || !nv->injecting || !nv->npaths || !nv->path_ctrl || !nv->path_ana
            || !nv->path_disabled || !nv->pos || !nv->target_live || !nv->current || !nv->job_head || !nv->held
            || err) {
        PyErr_NoMemory();
        return -1;
    }
    if (read_ints(cpus, nv->node_of_cpu, nv->ncpus, "node_of_cpu") < 0
            || read_ints(PyDict_GetItemString(d, "numa_node"), nv->numa_node, nv->nctrl, "numa_node") < 0
            || read_ints(PyDict_GetItemString(d, "distance"), nv->distance, nv->nnodes * nv->nctrl, "distance") < 0
            || read_ints(PyDict_GetItemString(d, "job_head"), nv->job_head, s->njobs, "job_head") < 0)
        return -1;
    for (int i = 0; i < nv->ncpus; i++)
        if (nv->node_of_cpu[i] < 0 || nv->node_of_cpu[i] >= nv->nnodes) {
            PyErr_SetString(PyExc_ValueError, "nvme: a CPU on an unknown node");
            return -1;
        }
    for (int i = 0; i < s->njobs; i++)
        if (s->jobs[i].cpu < 0 || s->jobs[i].cpu >= nv->ncpus) {
            PyErr_SetString(PyExc_ValueError, "nvme: a job on a CPU without a node");
            return -1;
        }
    PyObject *st = PyDict_GetItemString(d, "state");
    if (!st) {
        PyErr_SetString(PyExc_ValueError, "nvme: the head's state");
        return -1;
    }
    return nvme_state_in(s, st);
}

static void nvme_free(sim_t *s)
{
    nvme_core_t *nv = s->nvme;
    if (!nv) return;
    PyMem_Free(nv->node_of_cpu);
    PyMem_Free(nv->numa_node);
    PyMem_Free(nv->distance);
    PyMem_Free(nv->io_ok);
    PyMem_Free(nv->live);
    PyMem_Free(nv->marginal);
    PyMem_Free(nv->nr_active);
    PyMem_Free(nv->injecting);
    PyMem_Free(nv->npaths);
    PyMem_Free(nv->path_ctrl);
    PyMem_Free(nv->path_ana);
    PyMem_Free(nv->path_disabled);
    PyMem_Free(nv->pos);
    PyMem_Free(nv->target_live);
    PyMem_Free(nv->current);
    PyMem_Free(nv->job_head);
    for (int c = 0; nv->held && c < nv->nctrl; c++)
        PyMem_Free(nv->held[c].v);
    PyMem_Free(nv->held);
    PyMem_Free(nv->io);
    PyMem_Free(nv);
    s->nvme = NULL;
}

/* Simulation.fail_device */
static int fail_device(sim_t *s, path_t *p)
{
    p->offline = 1;
    while (p->queue.len) {
        int64_t id = ring_pop(&p->queue);
        if (push_ev(s, s->now + p->fail_latency_ns, EV_ERRDONE, id) < 0) return -1;
    }
    return 0;
}

/* A fault fails a plain device (Simulation.fail_device); with an NVMe recovery time the controller
   learns of the loss first (run.py attach's fail_and_tell: NvmeHead.transport_lost) */
static int fault_fail(sim_t *s, int pi)
{
    if (s->nvme && s->nvme->recovery && nvme_transport_lost(s, pi) < 0) return -1;
    return fail_device(s, &s->paths[pi]);
}

/* Simulation._fault and _scsi_fault */
static int fault(sim_t *s, int fi)
{
    int pi = s->fault_path[fi];
    path_t *p = &s->paths[pi];
    int action = s->fault_action[fi];
    s->state_changes--;
    switch (action) {
    case FAULT_FAIL:
        return fault_fail(s, pi);
    case FAULT_REINSTATE:   /* multipathd's path checker notices and reinstates the path */
        p->offline = 0;
        if (p->sd && scsi_set_state(s, pi, 0) < 0) return -1;
        s->state_changes++;
        return push_ev(s, s->now + s->fault_after[fi], EV_MESSAGE, s->fault_msg[fi]);
    case FAULT_SLOW:
        p->slow_factor = s->fault_factor[fi];
        return 0;
    case FAULT_ERROR: {     /* the class is set on the Python ScsiDevice, which decides each command's end */
        if (!p->sd) return 0;
        PyObject *r = PyObject_CallMethod(s->scsi, "error_fault", "i", fi);
        if (!r) return -1;
        p->sd->python = PyObject_IsTrue(r);
        Py_DECREF(r);
        return p->sd->python < 0 ? -1 : 0;
    }
    default:                /* FAULT_STATE: the device's state (a plain device fails, or works again) */
        if (!p->sd) {
            if (!s->fault_state[fi]) {
                p->offline = 0;
                return 0;
            }
            return fault_fail(s, pi);
        }
        return scsi_set_state(s, pi, s->fault_state[fi]);
    }
}

/* ------------------------------------------- a user-space daemon's timers (mtools/daemon.py) */
/* multipathd's loop (`run --conf`): each timer of the daemon is an EV_DAEMON event the core pops in
   order; the daemon itself runs in Python (sim/fast.py _Target.daemon), told first what of the run
   it reads (RunState: the result's counts, the jobs', the devices', the pending state changes).
   Its dm messages go through the target as any message; what it does to a device comes back as
   EV_DEV_FAIL/EV_DEV_RESTORE among the events of the call (target_call applies them at once); a
   table reload comes back as the new priority groups (CoreGroups, apply_groups). */
static PyObject *run_state(sim_t *s)
{
    PyObject *jobs = PyList_New(s->njobs), *devs = PyList_New(s->npaths);
    if (!jobs || !devs) { Py_XDECREF(jobs); Py_XDECREF(devs); return NULL; }
    for (int i = 0; i < s->njobs; i++) {
        job_t *j = &s->jobs[i];
        job_run_state_t r = {j->inflight, j->stopped, j->remaining};
        PyObject *t = Py_BuildValue(JOB_RUN_STATE_FORMAT, JOB_RUN_STATE_VALUES(r));
        if (!t) { Py_DECREF(jobs); Py_DECREF(devs); return NULL; }
        PyList_SET_ITEM(jobs, i, t);
    }
    for (int i = 0; i < s->npaths; i++) {
        dev_run_state_t r = {s->paths[i].in_flight, s->paths[i].offline};
        PyObject *t = Py_BuildValue(DEV_RUN_STATE_FORMAT, DEV_RUN_STATE_VALUES(r));
        if (!t) { Py_DECREF(jobs); Py_DECREF(devs); return NULL; }
        PyList_SET_ITEM(devs, i, t);
    }
    run_state_t r = {s->completed, s->errored, s->state_changes, jobs, devs};
    PyObject *out = Py_BuildValue(RUN_STATE_FORMAT, RUN_STATE_VALUES(r));
    Py_DECREF(jobs);
    Py_DECREF(devs);
    return out;
}

/* The priority groups of a table the daemon loaded (CoreGroups): each group's selector, each path's
   group and relative throughput, HST's arguments; the selectors' state came with the call (sel_state_in) */
static int apply_groups(sim_t *s, PyObject *groups)
{
    core_groups_t g;
    if (!PyArg_ParseTuple(groups, CORE_GROUPS_FIELDS, CORE_GROUPS_REFS(&g)))
        return -1;
    if (!PyList_Check(g.pg_selectors) || PyList_GET_SIZE(g.pg_selectors) < 1 || !PyList_Check(g.pg)
            || PyList_GET_SIZE(g.pg) != s->npaths || !PyList_Check(g.rt) || PyList_GET_SIZE(g.rt) != s->npaths
            || !PyList_Check(g.weights) || PyList_GET_SIZE(g.weights) != HST_WEIGHTS) {
        PyErr_SetString(PyExc_ValueError, "a reloaded table's groups: a selector per group, a group per path");
        return -1;
    }
    int npgs = (int)PyList_GET_SIZE(g.pg_selectors);
    int *sel = PyMem_Calloc((size_t)npgs, sizeof(int));
    if (!sel) { PyErr_NoMemory(); return -1; }
    int any_c = 0;
    for (int i = 0; i < npgs; i++) {
        sel[i] = (int)PyLong_AsLong(PyList_GET_ITEM(g.pg_selectors, i));
        if (sel[i] < 0 || sel[i] >= NR_SELECTOR_OPS || sel[i] == SEL_PY || sel[i] == SEL_IOA) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "a reloaded table's selector the core runs only from the start");
            PyMem_Free(sel);
            return -1;
        }
        any_c |= sel[i] != SEL_PY;
    }
    for (int i = 0; i < s->npaths; i++) {
        int pg = (int)PyLong_AsLong(PyList_GET_ITEM(g.pg, i));
        if (pg < 0 || pg >= npgs) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a path of an unknown group");
            PyMem_Free(sel);
            return -1;
        }
        s->sel[i].pg = pg;
        s->sel[i].ops = &selector_ops[sel[pg]];
        s->sel[i].rt = (uint32_t)PyLong_AsUnsignedLong(PyList_GET_ITEM(g.rt, i));
    }
    for (int i = 0; i < HST_WEIGHTS; i++)
        s->weights[i] = (uint32_t)PyLong_AsUnsignedLong(PyList_GET_ITEM(g.weights, i));
    s->threshold = (uint32_t)g.threshold;
    PyMem_Free(s->pg_sel);
    s->pg_sel = sel;
    s->npgs = npgs;
    s->any_c_sel = any_c;
    return PyErr_Occurred() ? -1 : 0;
}

/* EV_DAEMON: the daemon's timer OBJ fires */
static int daemon_event(sim_t *s, int64_t obj)
{
    PyObject *run = run_state(s);
    if (!run) return -1;
    PyObject *r = target_call(s, "daemon", Py_BuildValue("(LN)", (long long)obj, run));
    if (!r) return -1;
    int rc = r == Py_None ? 0 : apply_groups(s, r);
    Py_DECREF(r);
    return rc;
}

/* EV_KICK: the target hands back its queued bios, mapped again */
static int kick(sim_t *s)
{
    mh_enter(s, 0);     /* (several hosts: only host 0's target queues; sim/hosts.py refuses the others') */
    PyObject *ids = target_call(s, "kick", PyTuple_New(0));
    if (!ids) return -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ids); i++) {
        if (dispatch(s, PyLong_AsLongLong(PyList_GET_ITEM(ids, i))) < 0) { Py_DECREF(ids); return -1; }
    }
    Py_DECREF(ids);
    return 0;
}

static int target_event(sim_t *s, const char *name, int64_t obj)
{
    mh_enter(s, 0);     /* the events the run loop gives the target (Simulation.mp: host 0's) */
    PyObject *r = target_call(s, name, Py_BuildValue("(L)", (long long)obj));
    if (!r) return -1;
    Py_DECREF(r);
    return 0;
}

/* EV_MESSAGE: the message with the run's counters (RunState: a target's own timer stops when the
   workload is done or no I/O has ended for long, Simulation._message) */
static int message_event(sim_t *s, int64_t index)
{
    mh_enter(s, 0);
    PyObject *run = run_state(s);
    if (!run) return -1;
    PyObject *r = target_call(s, "message", Py_BuildValue("(LN)", (long long)index, run));
    if (!r) return -1;
    Py_DECREF(r);
    return 0;
}

static int record_timeline(sim_t *s)
{
    PyObject *counts = PyList_New(s->npaths);
    if (!counts) return -1;
    for (int i = 0; i < s->npaths; i++)
        PyList_SET_ITEM(counts, i, PyLong_FromLongLong(s->paths[i].in_flight));
    PyObject *item = Py_BuildValue("(LN)", (long long)s->now, counts);
    if (!item) return -1;
    int r = PyList_Append(s->timeline, item);
    Py_DECREF(item);
    return r;
}

static int run_loop(sim_t *s, int64_t hard_stop, int *stalled)
{
    while (s->heap.n) {
        event_t e = heap_pop(&s->heap);
        if (hard_stop >= 0 && e.t > hard_stop) {
            heap_push(&s->heap, e);
            *stalled = 1;
            break;
        }
        s->now = e.t;
        s->events++;
        if (e.kind == EV_DONE) {
            path_t *p = &s->paths[s->ios[e.obj].path];
            if (p->queue.len) {
                int64_t nxt = ring_pop(&p->queue);
                if (push_ev(s, timer_fires(s, e.t + service_ns(p, s->ios[nxt].nr_bytes)), EV_DONE, nxt) < 0)
                    return -1;
            } else {
                p->busy--;
            }
            if (s->host && s->complete_ns_cost && p->offline) {    /* Host.complete of a failed I/O */
                if (cpu_run(s, e.obj, WORK_COMPLETE) < 0) return -1;
            } else if (p->offline) {                    /* Simulation._path_done with a transport error */
                if (path_error(s, e.obj, ERR_TRANSPORT) < 0) return -1;
            } else if (path_done_ok(s, e.obj) < 0) return -1;
            if (s->progress != Py_None && s->completed >= s->next_progress) {
                s->next_progress += 65536;
                double f = 0.0;
                if (s->expected) f = (double)s->completed / (double)s->expected;
                else if (s->horizon) f = (double)s->now / (double)s->horizon;
                if (f > 1.0) f = 1.0;
                PyObject *r = PyObject_CallFunction(s->progress, "d", f);
                if (!r) return -1;
                Py_DECREF(r);
            }
            if (s->tl_step && e.t >= s->next_tl) {
                s->next_tl = e.t + s->tl_step;
                if (record_timeline(s) < 0) return -1;
            } else if (s->tl_count && s->completed >= s->next_tl_count) {
                s->next_tl_count += s->tl_count;
                if (record_timeline(s) < 0) return -1;
            }
        } else if (e.kind == EV_ARRIVE) {
            if (arrive(s, e.obj) < 0) return -1;
        } else if (e.kind == EV_WORK) {         /* BlockLayer._work */
            if (e.obj == s->work_gen && blk_run(s) < 0) return -1;
        } else if (e.kind == EV_DISPATCH) {     /* BlockLayer._dispatch */
            if (blk_dispatch(s) < 0) return -1;
        } else if (e.kind == EV_WAKE) {
            if (blk_wake(s, e.obj) < 0) return -1;
        } else if (e.kind == EV_CPU) {
            if (cpu_end(s, (int)e.obj) < 0) return -1;
        } else if (e.kind == EV_IRQ_END) {      /* Host._reaped after Host._interrupt */
            if (reap_io(s, e.obj) < 0) return -1;
        } else if (e.kind == EV_WOKEN_START) {  /* BlockLayer._woken_start */
            if (start_io_on_path(s, e.obj) < 0) return -1;
        } else if (e.kind == EV_STEAL) {
            if (cpu_steal(s, (int)e.obj) < 0) return -1;
        } else if (e.kind == EV_RETRY) {
            mh_enter(s, 0);     /* the Python run loop asks Simulation.mp: host 0's target */
            if (!s->nr_valid_paths && !s->state_changes && !s->kick_pending && s->queue_if_no_path) {
                /* No path and nothing left that could bring one back: the kernel would
                   queue (or retry) forever.  Stop here. */
                heap_push(&s->heap, e);
                *stalled = 1;
                break;
            }
            if (dispatch(s, e.obj) < 0) return -1;
        } else if (e.kind == EV_REQUEUE) {
            if (e.obj != s->requeue_gen) continue;     /* re-armed since */
            if (!s->nr_valid_paths && !s->state_changes && !s->kick_pending && s->queue_if_no_path) {
                heap_push(&s->heap, e);     /* as EV_RETRY: nothing can bring a path back */
                *stalled = 1;
                break;
            }
            if (requeue_run(s) < 0) return -1;
        } else if (e.kind == EV_ERRDONE) {
            if (path_error(s, e.obj, ERR_TRANSPORT) < 0) return -1;
        } else if (e.kind == EV_SCSI_RUN) {
            if (scsi_run(s, (int)e.obj) < 0) return -1;
        } else if (e.kind == EV_SCSI_REJECT) {     /* IoPath._scsi_rejected */
            if (path_error(s, e.obj, s->ios[e.obj].scsi_err) < 0) return -1;
        } else if (e.kind == EV_KICK) {
            if (kick(s) < 0) return -1;
        } else if (e.kind == EV_MESSAGE) {
            if (message_event(s, e.obj) < 0) return -1;
        } else if (e.kind == EV_NOPATH_TIMEOUT) {
            if (target_event(s, "nopath_timeout", e.obj) < 0) return -1;
        } else if (e.kind == EV_ACTIVATED) {
            if (target_event(s, "activated", e.obj) < 0) return -1;
        } else if (e.kind == EV_FAULT) {
            if (fault(s, (int)e.obj) < 0) return -1;
        } else if (e.kind == EV_DAEMON) {
            if (daemon_event(s, e.obj) < 0) return -1;
        } else if (e.kind == EV_NVME_CANCEL) {
            if (nvme_cancel(s, (int)e.obj) < 0) return -1;
        } else if (e.kind == EV_NVME_FREE) {
            if (nvme_server_free(s, (int)e.obj) < 0) return -1;
        } else {
            if (submit_more(s, (int)e.obj) < 0) return -1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------ Python glue */
static int64_t get_i64(PyObject *d, const char *k, int *err)
{
    PyObject *v = PyDict_GetItemString(d, k);
    if (!v) { PyErr_Format(PyExc_KeyError, "missing %s", k); *err = 1; return 0; }
    long long r = PyLong_AsLongLong(v);
    if (r == -1 && PyErr_Occurred()) *err = 1;
    return r;
}

static uint64_t get_u64(PyObject *d, const char *k, int *err)
{
    PyObject *v = PyDict_GetItemString(d, k);
    if (!v) { PyErr_Format(PyExc_KeyError, "missing %s", k); *err = 1; return 0; }
    unsigned long long r = PyLong_AsUnsignedLongLong(v);
    if (r == (unsigned long long)-1 && PyErr_Occurred()) *err = 1;
    return r;
}

static double get_f(PyObject *d, const char *k, int *err)
{
    PyObject *v = PyDict_GetItemString(d, k);
    if (!v) { PyErr_Format(PyExc_KeyError, "missing %s", k); *err = 1; return 0; }
    double r = PyFloat_AsDouble(v);
    if (r == -1.0 && PyErr_Occurred()) *err = 1;
    return r;
}

static PyObject *hist_dict(lat_stats *l)
{
    PyObject *d = PyDict_New();
    if (!d || !l->hist) return d;       /* (no histogram: a direction the job never issues) */
    for (int i = 0; i < NBUCKETS; i++) {
        if (!l->hist[i]) continue;
        PyObject *k = PyLong_FromLong(i), *v = PyLong_FromLongLong(l->hist[i]);
        if (!k || !v || PyDict_SetItem(d, k, v) < 0) {
            Py_XDECREF(k); Py_XDECREF(v); Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(k); Py_DECREF(v);
    }
    return d;
}

static PyObject *lat_tuple(lat_stats *l)
{
    PyObject *h = hist_dict(l);
    if (!h) return NULL;
    lat_state_t r = {l->n, l->min, l->max, l->mean, l->m2, h};
    PyObject *t = Py_BuildValue(LAT_STATE_FORMAT, LAT_STATE_VALUES(r));
    Py_DECREF(h);
    return t;
}

static void sim_free(sim_t *s)
{
    if (s->paths) {
        for (int i = 0; i < s->npaths; i++) {
            PyMem_Free(s->paths[i].queue.v);
            PyMem_Free(s->paths[i].samples);
            for (int h = 0; s->paths[i].hw && h < s->paths[i].nhw; h++) {
                PyMem_Free(s->paths[i].hw[h].dispatch.v);
                PyMem_Free(s->paths[i].hw[h].sleepers.v);
            }
            PyMem_Free(s->paths[i].hw);
            PyMem_Free(s->paths[i].lat.hist);
        }
    }
    if (s->jobs) {
        for (int i = 0; i < s->njobs; i++) {
            PyMem_Free(s->jobs[i].rlat.hist);
            PyMem_Free(s->jobs[i].wlat.hist);
            PyMem_Free(s->jobs[i].tlat.hist);
            PyMem_Free(s->jobs[i].gen);
            PyMem_Free(s->jobs[i].win);
        }
    }
    if (s->scsi_devs)
        for (int i = 0; i < s->npaths; i++)
            PyMem_Free(s->scsi_devs[i].budget_wait.v);
    if (s->scsi_hosts)
        for (int i = 0; i < s->nscsi_hosts; i++)
            PyMem_Free(s->scsi_hosts[i].sleepers.v);
    PyMem_Free(s->scsi_devs);
    PyMem_Free(s->scsi_hosts);
    PyMem_Free(s->done_at);
    PyMem_Free(s->paths);
    PyMem_Free(s->sel_all);
    PyMem_Free(s->valid_all);
    PyMem_Free(s->mh);
    PyMem_Free(s->host_port);
    PyMem_Free(s->pg_sel);
    PyMem_Free(s->path_active_all);
    PyMem_Free(s->jobs);
    PyMem_Free(s->ios);
    PyMem_Free(s->free_ios);
    PyMem_Free(s->heap.ev);
    PyMem_Free(s->waiting.v);
    PyMem_Free(s->requeue.v);
    PyMem_Free(s->held_bios.v);
    if (s->cpus) {
        for (int i = 0; i < s->ncpus; i++)
            PyMem_Free(s->cpus[i].queue.v);
    }
    PyMem_Free(s->cpus);
    PyMem_Free(s->ioa_map);
    PyMem_Free(s->ioa_node);
    PyMem_Free(s->fault_path);
    PyMem_Free(s->fault_action);
    PyMem_Free(s->fault_msg);
    PyMem_Free(s->fault_state);
    PyMem_Free(s->scsi_state_status);
    PyMem_Free(s->scsi_state_counts);
    PyMem_Free(s->fault_after);
    PyMem_Free(s->fault_factor);
    PyMem_Free(s->windows);
    Py_XDECREF(s->timeline);
    nvme_free(s);
}

static PyObject *fast_simulate(PyObject *self, PyObject *args)
{
    PyObject *cfg;
    if (!PyArg_ParseTuple(args, "O!", &PyDict_Type, &cfg))
        return NULL;
    sim_t s;
    memset(&s, 0, sizeof(s));
    int err = 0;
    s.selector = (int)get_i64(cfg, "selector", &err);
    s.base_ns = get_i64(cfg, "base_ns", &err);
    s.bio = (int)get_i64(cfg, "bio", &err);
    s.rq_stats = (int)get_i64(cfg, "rq_stats", &err);
    s.use_hr = (int)get_i64(cfg, "use_hr", &err);
    s.hz = (int)get_i64(cfg, "hz", &err);
    s.initial_jiffies = get_u64(cfg, "initial_jiffies", &err);
    s.threshold = (uint32_t)get_u64(cfg, "threshold", &err);
    s.has_select_offset = (int)get_i64(cfg, "has_select_offset", &err);
    s.select_offset = get_i64(cfg, "select_offset", &err);
    s.tl_step = get_i64(cfg, "timeline_step", &err);
    s.tl_count = get_i64(cfg, "timeline_count", &err);
    s.next_tl_count = s.tl_count;
    s.expected = get_i64(cfg, "expected", &err);
    s.horizon = get_i64(cfg, "horizon", &err);
    int64_t hard_stop = get_i64(cfg, "hard_stop", &err);
    s.blk = (int)get_i64(cfg, "blk", &err);
    s.host = (int)get_i64(cfg, "host", &err);
    s.ncpus = (int)get_i64(cfg, "ncpus", &err);
    s.submit_ns_cost = get_i64(cfg, "submit_cost", &err);
    s.complete_ns_cost = get_i64(cfg, "complete_cost", &err);
    s.wake_ns_cost = get_i64(cfg, "wake_cost", &err);
    s.completion_irq = (int)get_i64(cfg, "completion_irq", &err);
    s.woken_issue = get_i64(cfg, "woken_issue", &err);
    s.woken_late = get_i64(cfg, "woken_late", &err);
    s.woken_late_below = get_u64(cfg, "woken_late_below", &err);
    s.steal_ns = get_i64(cfg, "steal_ns", &err);
    s.steal_period_ns = get_i64(cfg, "steal_period", &err);
    s.timer_away_ns = get_i64(cfg, "timer_away", &err);
    s.timer_period_ns = get_i64(cfg, "timer_period", &err);
    s.timer_seed = get_u64(cfg, "timer_seed", &err);
    s.work_latency = get_i64(cfg, "work_latency", &err);
    s.dispatch_cost = get_i64(cfg, "dispatch_cost", &err);
    s.progress = PyDict_GetItemString(cfg, "progress");
    if (!s.progress) s.progress = Py_None;
    s.first_choice = -1;
    s.next_progress = 65536;
    s.window_ns = get_i64(cfg, "window_ns", &err);
    s.record_done = (int)get_i64(cfg, "record_done", &err);
    if (s.selector == SEL_IOA) {
        PyObject *m = PyDict_GetItemString(cfg, "ioa_map"), *nd = PyDict_GetItemString(cfg, "ioa_node");
        if (!m || !nd || !PyList_Check(m) || !PyList_Check(nd) || PyList_GET_SIZE(m) != PyList_GET_SIZE(nd)) {
            PyErr_SetString(PyExc_ValueError, "io-affinity needs ioa_map and ioa_node of one length");
            return NULL;
        }
        s.nr_cpu_ids = (int)PyList_GET_SIZE(m);
        s.ioa_map = PyMem_Calloc((size_t)s.nr_cpu_ids + 1, sizeof(int));
        s.ioa_node = PyMem_Calloc((size_t)s.nr_cpu_ids + 1, sizeof(int));
        if (!s.ioa_map || !s.ioa_node) { sim_free(&s); return PyErr_NoMemory(); }
        for (int c = 0; c < s.nr_cpu_ids; c++) {
            s.ioa_map[c] = (int)PyLong_AsLong(PyList_GET_ITEM(m, c));
            s.ioa_node[c] = (int)PyLong_AsLong(PyList_GET_ITEM(nd, c));
        }
        s.map_misses = get_i64(cfg, "map_misses", &err);
        if (PyErr_Occurred()) { sim_free(&s); return NULL; }
    }
    s.py_now_set = -1;
    s.state_changes = get_i64(cfg, "state_changes", &err);
    if (err) return NULL;
    s.target = PyDict_GetItemString(cfg, "target");
    if (s.target == Py_None) s.target = NULL;
    target_flags_t flags0 = {0};
    if (s.target && !PyArg_ParseTuple(PyDict_GetItemString(cfg, "target_flags"), TARGET_FLAGS_FIELDS,
                                      TARGET_FLAGS_REFS(&flags0)))
        return NULL;
    if (!s.target) s.nr_valid_paths = s.target_simple = 1;
    s.py_sim = PyDict_GetItemString(cfg, "py_sim");     /* whose now the Python side reads */
    if (PyDict_GetItemString(cfg, "py_select")) {
        /* per group: the selector's bound select_path, start_io and end_io (None: no I/O hooks) */
        s.py_select = PyDict_GetItemString(cfg, "py_select");
        s.py_start = PyDict_GetItemString(cfg, "py_start");
        s.py_end = PyDict_GetItemString(cfg, "py_end");
        s.py_pgpaths = PyDict_GetItemString(cfg, "py_pgpaths");
        s.py_index = PyDict_GetItemString(cfg, "py_index");
        if (!s.py_select || !PyList_Check(s.py_select) || !s.py_start || !PyList_Check(s.py_start)
                || !s.py_end || !PyList_Check(s.py_end) || !s.py_pgpaths || !PyList_Check(s.py_pgpaths)
                || !s.py_index || !PyDict_Check(s.py_index) || !s.py_sim) {
            PyErr_SetString(PyExc_ValueError, "a Python selector needs py_select, py_start, py_end, py_pgpaths, "
                            "py_index and py_sim");
            return NULL;
        }
    }
    PyObject *w = PyDict_GetItemString(cfg, "weights");
    if (!w || !PyList_Check(w) || PyList_GET_SIZE(w) != HST_WEIGHTS) {
        PyErr_SetString(PyExc_ValueError, "weights must be a list of 64 ints");
        return NULL;
    }
    for (int i = 0; i < 64; i++)
        s.weights[i] = (uint32_t)PyLong_AsUnsignedLong(PyList_GET_ITEM(w, i));
    if (PyErr_Occurred()) return NULL;

    PyObject *paths = PyDict_GetItemString(cfg, "paths");
    PyObject *jobs = PyDict_GetItemString(cfg, "jobs");
    PyObject *order = PyDict_GetItemString(cfg, "order");
    if (!paths || !PyList_Check(paths) || !jobs || !PyList_Check(jobs) || !order || !PyList_Check(order)) {
        PyErr_SetString(PyExc_ValueError, "paths, jobs and order must be lists");
        return NULL;
    }
    s.npaths = (int)PyList_GET_SIZE(paths);
    s.njobs = (int)PyList_GET_SIZE(jobs);
    if (s.npaths < 1 || PyList_GET_SIZE(order) > s.npaths) {
        PyErr_SetString(PyExc_ValueError, "need at least one path and a full valid order");
        return NULL;
    }
    s.paths = PyMem_Calloc((size_t)s.npaths, sizeof(path_t));
    s.sel = s.sel_all = PyMem_Calloc((size_t)s.npaths, sizeof(selpath_t));
    s.valid = s.valid_all = PyMem_Calloc((size_t)s.npaths, sizeof(int));
    s.path_active = s.path_active_all = PyMem_Calloc((size_t)s.npaths, sizeof(int));
    s.jobs = PyMem_Calloc((size_t)(s.njobs ? s.njobs : 1), sizeof(job_t));
    s.timeline = PyList_New(0);
    if (s.ncpus < 1) s.ncpus = 1;
    s.cpus = PyMem_Calloc((size_t)s.ncpus, sizeof(cpu_t));
    if (!s.paths || !s.sel || !s.valid || !s.path_active || !s.jobs || !s.timeline || !s.cpus) {
        sim_free(&s);
        return PyErr_NoMemory();
    }
    for (int i = 0; i < s.ncpus; i++)
        s.cpus[i].current = -1;
    PyObject *pgs = PyDict_GetItemString(cfg, "pg_selectors");   /* SEL_* of each group */
    if (!pgs || !PyList_Check(pgs) || PyList_GET_SIZE(pgs) < 1) {
        PyErr_SetString(PyExc_ValueError, "pg_selectors must list each group's selector");
        sim_free(&s);
        return NULL;
    }
    s.npgs = (int)PyList_GET_SIZE(pgs);
    if (!(s.pg_sel = PyMem_Calloc((size_t)s.npgs, sizeof(int)))) { sim_free(&s); return PyErr_NoMemory(); }
    for (int i = 0; i < s.npgs; i++) {
        s.pg_sel[i] = (int)PyLong_AsLong(PyList_GET_ITEM(pgs, i));
        if (s.pg_sel[i] < 0 || s.pg_sel[i] >= NR_SELECTOR_OPS) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "pg_selectors: a selector the core has not");
            sim_free(&s);
            return NULL;
        }
        s.any_c_sel |= s.pg_sel[i] != SEL_PY;
    }
    if (s.target && set_target_flags(&s, &flags0) < 0) { sim_free(&s); return NULL; }
    /* the device states (fast.py SCSI_STATES): what scsi_queue_rq does in each, the dying one */
    PyObject *st = PyDict_GetItemString(cfg, "scsi_state_status"), *sc = PyDict_GetItemString(cfg, "scsi_state_counts");
    s.scsi_dying_state = (int)get_i64(cfg, "scsi_dying_state", &err);
    if (err || !st || !sc || !PyList_Check(st) || !PyList_Check(sc) || PyList_GET_SIZE(st) < 1
            || PyList_GET_SIZE(st) != PyList_GET_SIZE(sc)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "the core needs each device state's status");
        sim_free(&s);
        return NULL;
    }
    s.nscsi_states = (int)PyList_GET_SIZE(st);
    s.scsi_state_status = PyMem_Calloc((size_t)s.nscsi_states, sizeof(int));
    s.scsi_state_counts = PyMem_Calloc((size_t)s.nscsi_states, sizeof(int));
    if (!s.scsi_state_status || !s.scsi_state_counts) { sim_free(&s); return PyErr_NoMemory(); }
    for (int i = 0; i < s.nscsi_states; i++) {
        s.scsi_state_status[i] = (int)PyLong_AsLong(PyList_GET_ITEM(st, i));
        s.scsi_state_counts[i] = (int)PyLong_AsLong(PyList_GET_ITEM(sc, i));
    }
    if (PyErr_Occurred()) { sim_free(&s); return NULL; }
    /* SCSI paths: each host's can_queue; a path's host index (-1: not SCSI) and queue_depth below */
    PyObject *cq = PyDict_GetItemString(cfg, "scsi_can_queue");
    if (cq && PyList_Check(cq) && PyList_GET_SIZE(cq)) {
        s.scsi = PyDict_GetItemString(cfg, "scsi");
        s.nscsi_hosts = (int)PyList_GET_SIZE(cq);
        s.scsi_hosts = PyMem_Calloc((size_t)s.nscsi_hosts, sizeof(scsi_host_t));
        s.scsi_devs = PyMem_Calloc((size_t)s.npaths, sizeof(scsi_dev_t));
        if (!s.scsi_hosts || !s.scsi_devs) { sim_free(&s); return PyErr_NoMemory(); }
        for (int i = 0; i < s.nscsi_hosts; i++)
            s.scsi_hosts[i].can_queue = PyLong_AsLongLong(PyList_GET_ITEM(cq, i));
        if (!s.scsi || PyErr_Occurred()) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "SCSI paths need the scsi bridge");
            sim_free(&s);
            return NULL;
        }
    }
    PyObject *nvd = PyDict_GetItemString(cfg, "nvme");    /* an NVMe run: the head's static facts and state */
    for (int i = 0; i < s.npaths; i++) {
        PyObject *pd = PyList_GET_ITEM(paths, i);
        path_t *p = &s.paths[i];
        p->parallelism = (int)get_i64(pd, "parallelism", &err);
        p->delay_ns = get_i64(pd, "delay_ns", &err);
        p->ns_per_kib = get_f(pd, "ns_per_kib", &err);
        p->slow_factor = get_f(pd, "slow_factor", &err);
        p->fail_latency_ns = get_i64(pd, "fail_latency_ns", &err);
        p->offline = (int)get_i64(pd, "offline", &err);     /* a daemon may have failed it before the run */
        p->dist = (int)get_i64(pd, "dist", &err);
        p->mean = get_f(pd, "mean", &err);
        p->lam = p->mean != 0.0 ? 1.0 / p->mean : 0.0;
        p->mu = get_f(pd, "mu", &err);
        p->sigma = get_f(pd, "sigma", &err);
        selpath_t *sp = &s.sel[i];
        sp->rt = (uint32_t)get_u64(pd, "rt", &err);
        sp->h.hst = get_u64(pd, "hst", &err);
        sp->h.outstanding = get_u64(pd, "outstanding", &err);
        sp->h.stale_after = get_u64(pd, "stale_after", &err);
        sp->h.last_finish = get_u64(pd, "last_finish", &err);
        sp->valid_count = (int)get_i64(pd, "valid_count", &err);
        sp->pg = (int)get_i64(pd, "pg", &err);
        if (sp->pg < 0 || sp->pg >= s.npgs) {
            PyErr_SetString(PyExc_ValueError, "a path of an unknown group");
            sim_free(&s);
            return NULL;
        }
        sp->ops = &selector_ops[s.pg_sel[sp->pg]];
        int host = (int)get_i64(pd, "scsi_host", &err);
        if (host >= 0) {
            if (host >= s.nscsi_hosts) {
                PyErr_SetString(PyExc_ValueError, "a SCSI path of an unknown host");
                sim_free(&s);
                return NULL;
            }
            p->sd = &s.scsi_devs[i];
            p->sd->host = host;
            p->sd->queue_depth = get_i64(pd, "queue_depth", &err);
        }
        p->nhw = (int)get_i64(pd, "nr_hw_queues", &err);
        if (p->nhw < 1) p->nhw = 1;
        p->hw = PyMem_Calloc((size_t)p->nhw, sizeof(hctx_t));
        if (!p->hw) { sim_free(&s); return PyErr_NoMemory(); }
        for (int h = 0; h < p->nhw; h++) {
            p->hw[h].nr_tags = get_i64(pd, "hctx_tags", &err);
            p->hw[h].nr_sched_tags = get_i64(pd, "hctx_sched_tags", &err);
            p->hw[h].wake_batch = get_i64(pd, "hctx_wake_batch", &err);
        }
        mt_seed_u64(&p->rng, get_u64(pd, "seed", &err));
        p->lat.hist = PyMem_Calloc(NBUCKETS, sizeof(int64_t));
        if (!p->lat.hist) { sim_free(&s); return PyErr_NoMemory(); }
        PyObject *smp = PyDict_GetItemString(pd, "samples");
        if (smp && PyList_Check(smp) && PyList_GET_SIZE(smp)) {
            p->nsamples = PyList_GET_SIZE(smp);
            p->samples = PyMem_Malloc((size_t)p->nsamples * sizeof(double));
            if (!p->samples) { sim_free(&s); return PyErr_NoMemory(); }
            for (Py_ssize_t k = 0; k < p->nsamples; k++)
                p->samples[k] = PyFloat_AsDouble(PyList_GET_ITEM(smp, k));
        }
        if (err || PyErr_Occurred()) { sim_free(&s); return NULL; }
    }
    for (int i = 0; i < s.njobs; i++) {
        PyObject *jd = PyList_GET_ITEM(jobs, i);
        job_t *j = &s.jobs[i];
        j->bs = get_i64(jd, "bs", &err);
        j->iodepth = get_i64(jd, "iodepth", &err);
        j->remaining = get_i64(jd, "remaining", &err);
        j->stop_ns = get_i64(jd, "stop_ns", &err);
        j->startdelay_ns = get_i64(jd, "startdelay_ns", &err);
        j->read_fraction = get_f(jd, "read_fraction", &err);
        j->cpu = (int)get_i64(jd, "cpu", &err);
        j->continue_on_error = (int)get_i64(jd, "continue_on_error", &err);
        PyObject *mh = PyDict_GetItemString(jd, "host");      /* multi-host: the job's host (else 0) */
        j->mh = mh ? (int)PyLong_AsLong(mh) : 0;
        j->last_error_ns = -1;
        j->wake_ns = -1;
        j->end_ns = j->startdelay_ns;
        PyObject *gd = PyDict_GetItemString(jd, "gen");
        if (gd && gd != Py_None) {
            if (!(j->gen = gen_load(gd)) || !(j->tlat.hist = PyMem_Calloc(NBUCKETS, sizeof(int64_t)))) {
                if (!PyErr_Occurred()) PyErr_NoMemory();
                sim_free(&s);
                return NULL;
            }
        }
        mt_seed_u64(&j->rng, get_u64(jd, "seed", &err));
        /* a histogram only for a direction the job can issue (submit_more: read_fraction 1 reads only, 0
           writes only; a generator may do anything): 1,000 hosts' read jobs would zero 32 MB for nothing */
        int reads = j->gen || j->read_fraction > 0.0, writes = j->gen || j->read_fraction < 1.0;
        j->rlat.hist = reads ? PyMem_Calloc(NBUCKETS, sizeof(int64_t)) : NULL;
        j->wlat.hist = writes ? PyMem_Calloc(NBUCKETS, sizeof(int64_t)) : NULL;
        if ((reads && !j->rlat.hist) || (writes && !j->wlat.hist)) { sim_free(&s); return PyErr_NoMemory(); }
        if (err) { sim_free(&s); return NULL; }
    }

    if (nvd && nvd != Py_None && nvme_load(&s, nvd) < 0) { sim_free(&s); return NULL; }
    int stalled = 0;
    int rc = 0;
    s.nvalid = (int)PyList_GET_SIZE(order);    /* the first group's valid list */
    for (int i = 0; i < s.nvalid; i++)
        s.valid[i] = (int)PyLong_AsLong(PyList_GET_ITEM(order, i));
    PyObject *hosts = PyDict_GetItemString(cfg, "hosts");  /* multi-host: hosts 1.. (fast.py _host_cfg) */
    if (hosts && (!PyList_Check(hosts) || mh_setup(&s, hosts) < 0)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "hosts must be a list");
        sim_free(&s);
        return NULL;
    }
    for (int i = 0; i < s.njobs; i++)
        if (s.jobs[i].mh < 0 || s.jobs[i].mh >= (s.nmh ? s.nmh : 1)) {
            PyErr_SetString(PyExc_ValueError, "a job of an unknown host");
            sim_free(&s);
            return NULL;
        }
    /* the faults: (path, action, factor, reinstate_after_ns, index of its reinstate_path message) */
    PyObject *faults = PyDict_GetItemString(cfg, "faults");
    if (faults && PyList_Check(faults) && PyList_GET_SIZE(faults)) {
        s.nfaults = (int)PyList_GET_SIZE(faults);
        s.fault_path = PyMem_Calloc((size_t)s.nfaults, sizeof(int));
        s.fault_action = PyMem_Calloc((size_t)s.nfaults, sizeof(int));
        s.fault_msg = PyMem_Calloc((size_t)s.nfaults, sizeof(int));
        s.fault_factor = PyMem_Calloc((size_t)s.nfaults, sizeof(double));
        s.fault_state = PyMem_Calloc((size_t)s.nfaults, sizeof(int));
        s.fault_after = PyMem_Calloc((size_t)s.nfaults, sizeof(int64_t));
        if (!s.fault_path || !s.fault_action || !s.fault_msg || !s.fault_factor || !s.fault_after || !s.fault_state) {
            sim_free(&s);
            return PyErr_NoMemory();
        }
        for (int i = 0; i < s.nfaults; i++) {
            core_fault_t f;
            if (!PyArg_ParseTuple(PyList_GET_ITEM(faults, i), CORE_FAULT_FIELDS, CORE_FAULT_REFS(&f))
                    || f.path < 0 || f.path >= s.npaths) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "fault on an unknown path");
                sim_free(&s);
                return NULL;
            }
            s.fault_path[i] = f.path;
            s.fault_action[i] = f.action;
            s.fault_factor[i] = f.factor;
            s.fault_after[i] = f.reinstate_after_ns;
            s.fault_msg[i] = f.message;
            if (f.action == FAULT_STATE && (f.state < 0 || f.state >= s.nscsi_states)) {
                PyErr_SetString(PyExc_ValueError, "a fault to a state the core was not told of");
                sim_free(&s);
                return NULL;
            }
            s.fault_state[i] = f.state;
        }
    }
    /* Simulation.__init__ schedules the faults and messages first: (t, kind, obj) in that order */
    PyObject *initial = PyDict_GetItemString(cfg, "initial");
    for (Py_ssize_t i = 0; initial && i < PyList_GET_SIZE(initial) && rc == 0; i++) {
        core_event_t e;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(initial, i), CORE_EVENT_FIELDS, CORE_EVENT_REFS(&e))) {
            sim_free(&s);
            return NULL;
        }
        rc = push_ev(&s, e.t, e.kind, e.obj);
    }
    if (s.host && s.steal_ns)           /* Host.start */
        for (int i = 0; i < s.ncpus && rc == 0; i++)
            rc = push_ev(&s, s.steal_period_ns, EV_STEAL, i);
    for (int i = 0; i < s.njobs && rc == 0; i++) {
        if (s.jobs[i].startdelay_ns)
            rc = push_ev(&s, s.jobs[i].startdelay_ns, EV_SUBMIT, i);
        else
            rc = submit_more(&s, i);
    }
    if (rc == 0)
        rc = run_loop(&s, hard_stop, &stalled);
    if (rc == 0 && s.target)
        rc = flush_held_bios(&s);      /* the target's queue holds them at the end (counted pending) */
    if (rc < 0) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        sim_free(&s);
        return NULL;
    }
    int64_t pending = 0, pending_reap = 0;    /* pending_reap: SimResult.pending_reap, dm ended, not reaped */
    if (stalled) {
        /* I/O still under way: events carrying an I/O, device queues, and
           what the block layer and the CPUs hold (BlockLayer.drain, Host.drain) */
        for (int64_t i = 0; i < s.heap.n; i++) {
            int kind = s.heap.ev[i].kind;
            pending += kind == EV_DONE || kind == EV_ARRIVE || kind == EV_RETRY || kind == EV_ERRDONE
                       || kind == EV_SCSI_REJECT || kind == EV_IRQ_END || kind == EV_WOKEN_START;
            pending_reap += kind == EV_IRQ_END;     /* Host._reaped after Host._interrupt */
        }
        pending += s.waiting.len + s.requeue.len;
        for (int i = 0; i < s.npaths; i++) {
            pending += s.paths[i].queue.len;
            for (int h = 0; h < s.paths[i].nhw; h++)
                pending += s.paths[i].hw[h].dispatch.len + s.paths[i].hw[h].sleepers.len;
            if (s.paths[i].sd)
                pending += s.paths[i].sd->budget_wait.len;      /* ScsiQueues.drain */
            s.paths[i].in_flight = 0;
        }
        for (int i = 0; i < s.nscsi_hosts; i++)
            pending += s.scsi_hosts[i].sleepers.len;
        for (int i = 0; i < s.ncpus; i++) {
            ring_t *r = &s.cpus[i].queue;
            for (int64_t k = 0; k < r->len; k++) {
                int64_t id = r->v[(r->head + k) % r->cap];
                pending += id >= 0;                             /* -1: other tenants' work */
                pending_reap += id >= 0 && s.ios[id].cpu_work == WORK_REAP;
            }
            pending += s.cpus[i].current >= 0;
            pending_reap += s.cpus[i].current >= 0 && s.ios[s.cpus[i].current].cpu_work == WORK_REAP;
        }
    }
    PyObject *rhosts = mh_results(&s);     /* and host 0's target back in s */
    if (!rhosts) { sim_free(&s); return NULL; }
    PyObject *rcpus = PyList_New(s.ncpus);
    if (!rcpus) { Py_DECREF(rhosts); sim_free(&s); return NULL; }
    for (int i = 0; i < s.ncpus; i++)
        PyList_SET_ITEM(rcpus, i, PyLong_FromLongLong(s.cpus[i].busy_ns));

    PyObject *rpaths = PyList_New(s.npaths), *rjobs = PyList_New(s.njobs), *rorder = PyList_New(s.nvalid);
    PyObject *rwin = PyDict_New();
    if (!rpaths || !rjobs || !rorder || !rwin) goto fail;
    for (int64_t k = 0; k < s.nwindows; k++) {
        int64_t *w = s.windows + k * s.npaths, any = 0;
        for (int i = 0; i < s.npaths; i++) any |= w[i];
        if (!any) continue;         /* Simulation._windows holds only windows with a dispatch */
        PyObject *wl = PyList_New(s.npaths), *key = PyLong_FromLongLong(k);
        if (!wl || !key) { Py_XDECREF(wl); Py_XDECREF(key); goto fail; }
        for (int i = 0; i < s.npaths; i++)
            PyList_SET_ITEM(wl, i, PyLong_FromLongLong(w[i]));
        int r = PyDict_SetItem(rwin, key, wl);
        Py_DECREF(wl); Py_DECREF(key);
        if (r < 0) goto fail;
    }
    for (int i = 0; i < s.npaths; i++) {
        path_t *p = &s.paths[i];
        PyObject *pl = lat_tuple(&p->lat);
        if (!pl) goto fail;
        PyObject *t = Py_BuildValue("{s:L,s:L,s:L,s:L,s:i,s:i,s:K,s:K,s:K,s:K,s:d,s:L,s:i,s:N}",
            "dispatched", (long long)p->dispatched, "completed", (long long)p->completed,
            "in_flight", (long long)p->in_flight, "peak_in_flight", (long long)p->peak_in_flight,
            "qlen", (int)s.sel[i].qlen_sel, "in_flight_size", (int)s.sel[i].inflight_size,
            "hst", (unsigned long long)s.sel[i].h.hst, "outstanding", (unsigned long long)s.sel[i].h.outstanding,
            "stale_after", (unsigned long long)s.sel[i].h.stale_after,
            "last_finish", (unsigned long long)s.sel[i].h.last_finish,
            "slow_factor", p->slow_factor, "errors", (long long)p->errors, "offline", p->offline, "lat", pl);
        if (!t) goto fail;
        PyList_SET_ITEM(rpaths, i, t);
        if (p->sd) {        /* the ScsiDevice's state (fast.py _write_back) */
            scsi_dev_t *sd = p->sd;
            PyObject *sc = Py_BuildValue("{s:i,s:i,s:i,s:L,s:L,s:L,s:L,s:L,s:L,s:L}", "state", sd->state,
                "active", sd->active, "run_pending", sd->run_pending, "device_busy", (long long)sd->device_busy,
                "tags_held", (long long)sd->tags_held, "restarts", (long long)sd->restarts,
                "device_blocked", (long long)sd->device_blocked, "nr_cmds", (long long)sd->nr_cmds,
                "iodone_cnt", (long long)sd->iodone_cnt, "rejected", (long long)sd->rejected);
            int bad = !sc || PyDict_SetItemString(t, "scsi", sc) < 0;
            Py_XDECREF(sc);
            if (bad) goto fail;
        }
    }
    for (int i = 0; i < s.nvalid; i++)
        PyList_SET_ITEM(rorder, i, PyLong_FromLong(s.valid[i]));
    for (int i = 0; i < s.njobs; i++) {
        job_t *j = &s.jobs[i];
        PyObject *rl = lat_tuple(&j->rlat), *wl = lat_tuple(&j->wlat);
        PyObject *wins = PyList_New(j->nwin);
        PyObject *dmap = Py_BuildValue("[LLLLLLL]", (long long)j->depth_map[0], (long long)j->depth_map[1],
            (long long)j->depth_map[2], (long long)j->depth_map[3], (long long)j->depth_map[4],
            (long long)j->depth_map[5], (long long)j->depth_map[6]);
        PyObject *lr = PyList_New(32);
        if (!rl || !wl || !wins || !dmap || !lr) {
            Py_XDECREF(rl); Py_XDECREF(wl); Py_XDECREF(wins); Py_XDECREF(dmap); Py_XDECREF(lr); goto fail;
        }
        for (int k = 0; k < 32; k++)
            PyList_SET_ITEM(lr, k, PyLong_FromLongLong(j->lat_ranges[k]));
        for (int64_t k = 0; k < j->nwin; k++) {
            int64_t *w = j->win + k * 6;
            PyObject *wt = Py_BuildValue("(LLLLLL)", (long long)w[0], (long long)w[1], (long long)w[2],
                                         (long long)w[3], (long long)w[4], (long long)w[5]);
            if (!wt) { Py_DECREF(rl); Py_DECREF(wl); Py_DECREF(wins); Py_DECREF(dmap); Py_DECREF(lr); goto fail; }
            PyList_SET_ITEM(wins, k, wt);
        }
        PyObject *t = Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:i,s:i,s:L,s:N,s:N,s:N,s:N,s:N}",
            "submitted", (long long)j->submitted, "completed", (long long)j->completed,
            "remaining", (long long)j->remaining, "end_ns", (long long)j->end_ns,
            "bytes_read", (long long)j->bytes_read, "bytes_written", (long long)j->bytes_written,
            "errored", (long long)j->errored, "stopped", j->stopped, "first_error", j->first_error,
            "last_error_ns", (long long)j->last_error_ns,
            "read_lat", rl, "write_lat", wl, "windows", wins, "depth_map", dmap, "lat_ranges", lr);
        if (!t) goto fail;
        PyList_SET_ITEM(rjobs, i, t);
        if (j->gen) {       /* a generator's job: its trims, wake-up and IoGen state (fast.py _write_back) */
            PyObject *tl = lat_tuple(&j->tlat), *gs = gen_state_out(j->gen);
            PyObject *bt = PyLong_FromLongLong(j->bytes_trimmed), *wk = PyLong_FromLongLong(j->wake_ns);
            int bad = !tl || !gs || !bt || !wk || PyDict_SetItemString(t, "trim_lat", tl) < 0
                || PyDict_SetItemString(t, "gen", gs) < 0 || PyDict_SetItemString(t, "bytes_trimmed", bt) < 0
                || PyDict_SetItemString(t, "wake_ns", wk) < 0;
            Py_XDECREF(tl); Py_XDECREF(gs); Py_XDECREF(bt); Py_XDECREF(wk);
            if (bad) goto fail;
        }
    }
    PyObject *rdone = PyList_New(s.ndone), *rscsi = PyList_New(s.nscsi_hosts);
    if (!rdone || !rscsi) { Py_XDECREF(rdone); Py_XDECREF(rscsi); goto fail; }
    for (int64_t k = 0; k < s.ndone; k++)
        PyList_SET_ITEM(rdone, k, PyLong_FromLongLong(s.done_at[k]));
    for (int i = 0; i < s.nscsi_hosts; i++)
        PyList_SET_ITEM(rscsi, i, PyLong_FromLongLong(s.scsi_hosts[i].tags_used));
    PyObject *res = Py_BuildValue("{s:N,s:N,s:N,s:L,s:L,s:L,s:L,s:L,s:i,s:i,s:O,s:L,s:N,s:N,s:L,s:L,s:L,s:N,s:L,s:N,s:N}",
        "paths", rpaths, "jobs", rjobs, "order", rorder, "submitted", (long long)s.submitted,
        "completed", (long long)s.completed, "events", (long long)s.events, "pending", (long long)pending,
        "pending_reap", (long long)pending_reap,
        "stalled", stalled, "first_choice", s.first_choice, "timeline", s.timeline,
        "resource_stalls", (long long)s.resource_stalls, "cpu_busy_ns", rcpus, "windows", rwin,
        "now", (long long)s.now, "errored", (long long)s.errored, "map_misses", (long long)s.map_misses,
        "done_at", rdone, "requeued_errors", (long long)s.requeued_errors, "scsi_tags_used", rscsi,
        "hosts", rhosts);
    rcpus = rhosts = NULL;
    if (res && s.nvme) {
        PyObject *nv = nvme_hot_out(&s);      /* the head's final state */
        if (!nv || PyDict_SetItemString(res, "nvme", nv) < 0) Py_CLEAR(res);
        Py_XDECREF(nv);
    }
    sim_free(&s);
    return res;
fail:
    Py_XDECREF(rhosts);
    Py_XDECREF(rwin);
    Py_XDECREF(rcpus);
    Py_XDECREF(rpaths);
    Py_XDECREF(rjobs);
    Py_XDECREF(rorder);
    sim_free(&s);
    return NULL;
}


/* ------------------------------------------------- HSTCore: a selector type */
/* historical-service-time for a caller in Python (selectors/accelerated.py): the same hst_path_t,
   hst_select_pos, hst_end and valid_take as the core's selector */
typedef struct {
    PyObject_HEAD
    int n, cap, nvalid;
    hst_path_t *paths;
    int *valid;          /* valid list, indices */
    char *failed;
    int valid_count;
    uint32_t threshold;
    uint32_t weights[HST_WEIGHTS];
} HSTCore;

static void HSTCore_dealloc(HSTCore *self)
{
    PyMem_Free(self->paths);
    PyMem_Free(self->valid);
    PyMem_Free(self->failed);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int HSTCore_init(HSTCore *self, PyObject *args, PyObject *kw)
{
    PyObject *w;
    unsigned long thr;
    if (!PyArg_ParseTuple(args, "O!k", &PyList_Type, &w, &thr)) return -1;
    if (PyList_GET_SIZE(w) != HST_WEIGHTS) { PyErr_SetString(PyExc_ValueError, "64 weights"); return -1; }
    for (int i = 0; i < HST_WEIGHTS; i++)
        self->weights[i] = (uint32_t)PyLong_AsUnsignedLong(PyList_GET_ITEM(w, i));
    self->threshold = (uint32_t)thr;
    return PyErr_Occurred() ? -1 : 0;
}

static PyObject *HSTCore_add(HSTCore *self, PyObject *noargs)
{
    if (self->n == self->cap) {
        int nc = self->cap ? self->cap * 2 : 8;
        hst_path_t *a = PyMem_Realloc(self->paths, nc * sizeof(hst_path_t));
        if (!a) return PyErr_NoMemory();
        self->paths = a;
        int *v = PyMem_Realloc(self->valid, nc * sizeof(int)); if (!v) return PyErr_NoMemory(); self->valid = v;
        char *f = PyMem_Realloc(self->failed, nc); if (!f) return PyErr_NoMemory(); self->failed = f;
        self->cap = nc;
    }
    int i = self->n++;
    self->paths[i] = (hst_path_t){1024, 0, 0, 0};
    self->failed[i] = 0;
    self->valid[self->nvalid++] = i;
    self->valid_count++;
    return PyLong_FromLong(i);
}

static int core_index(HSTCore *self, PyObject *arg)
{
    long i = PyLong_AsLong(arg);
    if (i == -1 && PyErr_Occurred()) return -1;
    if (i < 0 || i >= self->n) { PyErr_SetString(PyExc_IndexError, "no such path"); return -1; }
    return (int)i;
}

static PyObject *HSTCore_select(HSTCore *self, PyObject *arg)
{
    uint64_t now = PyLong_AsUnsignedLongLongMask(arg);
    if (PyErr_Occurred()) return NULL;
    if (!self->nvalid) Py_RETURN_NONE;
    int pos = hst_select_pos((const char *)self->paths, sizeof(hst_path_t), self->valid, self->nvalid,
                             self->threshold, now);
    return PyLong_FromLong(valid_take(self->valid, self->nvalid, pos));
}

static PyObject *HSTCore_start(HSTCore *self, PyObject *arg)
{
    int i = core_index(self, arg);
    if (i < 0) return NULL;
    self->paths[i].outstanding += 1;
    Py_RETURN_NONE;
}

static PyObject *HSTCore_end(HSTCore *self, PyObject *args)
{
    int i;
    unsigned long long now, start;
    if (!PyArg_ParseTuple(args, "iKK", &i, &now, &start)) return NULL;
    if (i < 0 || i >= self->n) { PyErr_SetString(PyExc_IndexError, "no such path"); return NULL; }
    hst_end(&self->paths[i], self->weights, self->valid_count, now, start);
    Py_RETURN_NONE;
}

static void remove_valid(HSTCore *self, int i)
{
    for (int k = 0; k < self->nvalid; k++)
        if (self->valid[k] == i) {
            memmove(&self->valid[k], &self->valid[k + 1], (size_t)(self->nvalid - 1 - k) * sizeof(int));
            self->nvalid--;
            return;
        }
}

static PyObject *HSTCore_fail(HSTCore *self, PyObject *arg)
{
    int i = core_index(self, arg);
    if (i < 0) return NULL;
    remove_valid(self, i);
    self->failed[i] = 1;
    self->valid_count--;
    Py_RETURN_NONE;
}

static PyObject *HSTCore_reinstate(HSTCore *self, PyObject *arg)
{
    int i = core_index(self, arg);
    if (i < 0) return NULL;
    remove_valid(self, i);   /* list_move_tail: from wherever it is */
    self->valid[self->nvalid++] = i;
    self->failed[i] = 0;
    self->valid_count++;
    Py_RETURN_NONE;
}

static PyObject *HSTCore_state(HSTCore *self, PyObject *arg)
{
    int i = core_index(self, arg);
    if (i < 0) return NULL;
    hst_path_t *h = &self->paths[i];
    return Py_BuildValue("(KKKK)", (unsigned long long)h->hst, (unsigned long long)h->outstanding,
                         (unsigned long long)h->stale_after, (unsigned long long)h->last_finish);
}

static PyObject *HSTCore_order(HSTCore *self, PyObject *noargs)
{
    PyObject *l = PyList_New(self->nvalid);
    if (!l) return NULL;
    for (int k = 0; k < self->nvalid; k++)
        PyList_SET_ITEM(l, k, PyLong_FromLong(self->valid[k]));
    return l;
}

static PyObject *HSTCore_get_valid_count(HSTCore *self, void *c) { return PyLong_FromLong(self->valid_count); }

static PyMethodDef HSTCore_methods[] = {
    {"add", (PyCFunction)HSTCore_add, METH_NOARGS, "add a path; returns its index"},
    {"select", (PyCFunction)HSTCore_select, METH_O, "select(now) -> index or None"},
    {"start", (PyCFunction)HSTCore_start, METH_O, "start_io(index)"},
    {"end", (PyCFunction)HSTCore_end, METH_VARARGS, "end_io(index, now, start_time)"},
    {"fail", (PyCFunction)HSTCore_fail, METH_O, "fail_path(index)"},
    {"reinstate", (PyCFunction)HSTCore_reinstate, METH_O, "reinstate_path(index)"},
    {"state", (PyCFunction)HSTCore_state, METH_O, "(hst, outstanding, stale_after, last_finish)"},
    {"order", (PyCFunction)HSTCore_order, METH_NOARGS, "the valid list, as indices"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef HSTCore_getset[] = {
    {"valid_count", (getter)HSTCore_get_valid_count, NULL, "selector-wide valid path count", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject HSTCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mpathlab._fastcore.HSTCore",
    .tp_basicsize = sizeof(HSTCore),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)HSTCore_init,
    .tp_dealloc = (destructor)HSTCore_dealloc,
    .tp_methods = HSTCore_methods,
    .tp_getset = HSTCore_getset,
    .tp_doc = "Historical-service-time selector state and decisions, in C.",
};

/* A bare event loop with the same heap, for the benchmark's floor. */
static PyObject *bare_loop(PyObject *self, PyObject *args)
{
    long long n;
    if (!PyArg_ParseTuple(args, "L", &n)) return NULL;
    heap_t h = {0};
    int64_t seq = 0;
    for (int i = 0; i < 64; i++) {
        event_t e = {i, seq++, 0, i};
        if (heap_push(&h, e) < 0) { PyMem_Free(h.ev); return PyErr_NoMemory(); }
    }
    for (long long i = 0; i < n; i++) {
        event_t e = heap_pop(&h);
        event_t f = {e.t + 100 + (e.obj & 7), seq++, 0, e.obj};
        heap_push(&h, f);
    }
    PyMem_Free(h.ev);
    return PyLong_FromLongLong(seq);
}

static PyMethodDef methods[] = {
    {"simulate", fast_simulate, METH_VARARGS, "Run the compiled simulation core on a config dict."},
    {"bare_loop", bare_loop, METH_VARARGS, "Pop and push n events on the core's heap (benchmark floor)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_fastcore", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fastcore(void)
{
    nv_magic = 4 * exp(-0.5) / sqrt(2.0);
    if (PyType_Ready(&HSTCoreType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (!m) return NULL;
    Py_INCREF(&HSTCoreType);
    if (PyModule_AddObject(m, "HSTCore", (PyObject *)&HSTCoreType) < 0) {
        Py_DECREF(&HSTCoreType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
