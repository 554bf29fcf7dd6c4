/*
 * mpathlab kernel shim (MIT, part of mpathlab; no kernel code in here).
 *
 * The kernel types and APIs that dm path selectors (drivers/md/dm-ps-*.c)
 * use, re-created for userspace so that such a file compiles unmodified into
 * a shared library that mpathlab loads with ctypes.  Every <linux/...>
 * header the build generates includes only this file, so there is one place
 * per concept.  Time, the current CPU and the CPU topology are injected by
 * mpathlab before each call (mpl_runtime.c); printk output is captured.
 *
 * Semantics follow what the selectors rely on: u64 is unsigned long long,
 * atomics and refcounts wrap like the kernel's (built with
 * -fno-strict-overflow), sscanf() is the kernel's (no '+', no '-' for %u,
 * wrap on overflow), %*pb prints a bitmap in 32-bit hex chunks and
 * cpumask_parse() follows lib/bitmap.c's bitmap_parse(), quirks included.
 */
#ifndef MPL_KERNEL_H
#define MPL_KERNEL_H

/* libc first: glibc redirects sscanf to __isoc99_sscanf inside <stdio.h>,
 * so our #define sscanf must come after it. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <limits.h>
#include <sys/types.h>

/* ---- types ------------------------------------------------------------ */
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;   /* the kernel's u64 is unsigned long long */
typedef signed char s8;
typedef short s16;
typedef int s32;
typedef long long s64;
typedef u8 __u8;
typedef u16 __u16;
typedef u32 __u32;
typedef u64 __u64;
typedef s32 __s32;
typedef s64 __s64;
typedef u64 sector_t;
typedef u64 blkcnt_t_mpl;
typedef unsigned int gfp_t;
typedef unsigned int fmode_t;
typedef s64 ktime_t;
typedef unsigned long uintptr_mpl_t;

#define BITS_PER_LONG 64
#define BITS_PER_BYTE 8
#ifndef ULLONG_MAX
#define ULLONG_MAX (~0ULL)
#endif
#define U8_MAX  ((u8)~0U)
#define U16_MAX ((u16)~0U)
#define U32_MAX ((u32)~0U)
#define U64_MAX ((u64)~0ULL)
#define S32_MAX ((s32)(U32_MAX >> 1))
#define S64_MAX ((s64)(U64_MAX >> 1))

/* kernel-internal errno values that libc does not define */
#ifndef ENOTSUPP
#define ENOTSUPP 524
#endif

/* ---- compiler ----------------------------------------------------------- */
#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define __init
#define __exit
#define __initdata
#define __percpu
#define __user
#define __rcu
#define __iomem
#define __force
#define __must_check
#define __read_mostly
#undef __always_inline
#define __always_inline inline __attribute__((always_inline))
#define noinline __attribute__((noinline))
#define __maybe_unused __attribute__((unused))
#define __packed __attribute__((packed))
#define fallthrough __attribute__((fallthrough))
#define READ_ONCE(x) (*(volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v) (*(volatile __typeof__(x) *)&(x) = (v))
#define barrier() __asm__ __volatile__("" ::: "memory")
#define smp_mb() barrier()
#define smp_rmb() barrier()
#define smp_wmb() barrier()
#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define BUILD_BUG_ON(c) ((void)sizeof(char[1 - 2 * !!(c)]))
#define BUG() mpl_bug(__FILE__, __LINE__, "BUG()")
#define BUG_ON(c) do { if (unlikely(c)) mpl_bug(__FILE__, __LINE__, "BUG_ON(" #c ")"); } while (0)
#define WARN_ON(c) ({ int __w = !!(c); if (unlikely(__w)) mpl_warn(__FILE__, __LINE__, #c); unlikely(__w); })
#define WARN_ON_ONCE(c) WARN_ON(c)
#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#define BITS_TO_LONGS(n) DIV_ROUND_UP(n, BITS_PER_LONG)
#define BITS_TO_U32(n) DIV_ROUND_UP(n, 32)
#define BIT(n) (1UL << (n))
#define BIT_ULL(n) (1ULL << (n))

void mpl_bug(const char *file, int line, const char *what) __attribute__((noreturn));
void mpl_warn(const char *file, int line, const char *what);

/* min/max/clamp with single evaluation (the kernel's also type-check) */
#define min(a, b) ({ __typeof__(a) __a = (a); __typeof__(b) __b = (b); __a < __b ? __a : __b; })
#define max(a, b) ({ __typeof__(a) __a = (a); __typeof__(b) __b = (b); __a > __b ? __a : __b; })
#define min_t(t, a, b) ({ t __a = (a); t __b = (b); __a < __b ? __a : __b; })
#define max_t(t, a, b) ({ t __a = (a); t __b = (b); __a > __b ? __a : __b; })
#define clamp(v, lo, hi) min(max(v, lo), hi)
#define clamp_t(t, v, lo, hi) min_t(t, max_t(t, v, lo), hi)
#define clamp_val(v, lo, hi) clamp_t(__typeof__(v), v, lo, hi)
#define swap(a, b) do { __typeof__(a) __t = (a); (a) = (b); (b) = __t; } while (0)

static inline u64 div64_u64(u64 a, u64 b) { return a / b; }
static inline s64 div64_s64(s64 a, s64 b) { return a / b; }
static inline u64 div_u64(u64 a, u32 b) { return a / b; }
#define do_div(n, base) ({ u32 __b = (base); u32 __r = (u32)((n) % __b); (n) /= __b; __r; })

/* ---- lists (include/linux/list.h semantics) ------------------------------ */
struct list_head { struct list_head *next, *prev; };
struct hlist_node { struct hlist_node *next, **pprev; };
#define LIST_HEAD_INIT(name) { &(name), &(name) }
#define LIST_HEAD(name) struct list_head name = LIST_HEAD_INIT(name)

static inline void INIT_LIST_HEAD(struct list_head *h) { h->next = h; h->prev = h; }
static inline void mpl_list_link(struct list_head *n, struct list_head *before, struct list_head *after)
{
	after->prev = n;
	n->next = after;
	n->prev = before;
	before->next = n;
}
static inline void mpl_list_unlink(struct list_head *e)
{
	e->next->prev = e->prev;
	e->prev->next = e->next;
}
static inline void list_add(struct list_head *n, struct list_head *head) { mpl_list_link(n, head, head->next); }
static inline void list_add_tail(struct list_head *n, struct list_head *head) { mpl_list_link(n, head->prev, head); }
static inline void list_del(struct list_head *e)
{
	mpl_list_unlink(e);
	e->next = (struct list_head *)0x100;   /* poisoned, as LIST_POISON1/2 */
	e->prev = (struct list_head *)0x122;
}
static inline void list_del_init(struct list_head *e) { mpl_list_unlink(e); INIT_LIST_HEAD(e); }
static inline void list_move(struct list_head *e, struct list_head *head) { mpl_list_unlink(e); list_add(e, head); }
#ifdef MPL_SHIM_FAULT_LIST_MOVE_TAIL_TO_HEAD
/* A deliberately broken shim (build option) so the differential tests can be seen to fail. */
static inline void list_move_tail(struct list_head *e, struct list_head *head) { mpl_list_unlink(e); list_add(e, head); }
#else
static inline void list_move_tail(struct list_head *e, struct list_head *head) { mpl_list_unlink(e); list_add_tail(e, head); }
#endif
static inline int list_empty(const struct list_head *head) { return head->next == head; }
static inline int list_is_singular(const struct list_head *head) { return !list_empty(head) && head->next == head->prev; }
static inline int list_is_last(const struct list_head *e, const struct list_head *head) { return e->next == head; }
static inline int list_is_first(const struct list_head *e, const struct list_head *head) { return e->prev == head; }
static inline void list_rotate_left(struct list_head *head) { if (!list_empty(head)) list_move_tail(head->next, head); }
static inline void list_splice_tail_init(struct list_head *list, struct list_head *head)
{
	if (!list_empty(list)) {
		struct list_head *first = list->next, *last = list->prev, *at = head->prev;
		first->prev = at; at->next = first; last->next = head; head->prev = last;
		INIT_LIST_HEAD(list);
	}
}
#define list_entry(ptr, type, member) container_of(ptr, type, member)
#define list_first_entry(head, type, member) list_entry((head)->next, type, member)
#define list_last_entry(head, type, member) list_entry((head)->prev, type, member)
#define list_first_entry_or_null(head, type, member) \
	(list_empty(head) ? NULL : list_first_entry(head, type, member))
#define list_next_entry(pos, member) list_entry((pos)->member.next, __typeof__(*(pos)), member)
#define list_prev_entry(pos, member) list_entry((pos)->member.prev, __typeof__(*(pos)), member)
#define list_entry_is_head(pos, head, member) (&(pos)->member == (head))
#define list_for_each(pos, head) for (pos = (head)->next; pos != (head); pos = pos->next)
#define list_for_each_safe(pos, n, head) \
	for (pos = (head)->next, n = pos->next; pos != (head); pos = n, n = pos->next)
#define list_for_each_entry(pos, head, member) \
	for (pos = list_first_entry(head, __typeof__(*pos), member); \
	     !list_entry_is_head(pos, head, member); pos = list_next_entry(pos, member))
#define list_for_each_entry_reverse(pos, head, member) \
	for (pos = list_last_entry(head, __typeof__(*pos), member); \
	     !list_entry_is_head(pos, head, member); pos = list_prev_entry(pos, member))
#define list_for_each_entry_safe(pos, n, head, member) \
	for (pos = list_first_entry(head, __typeof__(*pos), member), n = list_next_entry(pos, member); \
	     !list_entry_is_head(pos, head, member); pos = n, n = list_next_entry(n, member))

/* ---- memory --------------------------------------------------------------- */
#define GFP_KERNEL 0x1u
#define GFP_ATOMIC 0x2u
#define GFP_NOIO   0x4u
#define GFP_NOWAIT 0x8u
#define __GFP_ZERO 0x100u
static inline void *kmalloc(size_t n, gfp_t f) { return (f & __GFP_ZERO) ? calloc(1, n ? n : 1) : malloc(n ? n : 1); }
static inline void *kzalloc(size_t n, gfp_t f) { (void)f; return calloc(1, n ? n : 1); }
static inline void *kcalloc(size_t k, size_t n, gfp_t f) { (void)f; return calloc(k ? k : 1, n ? n : 1); }
static inline void *kmalloc_array(size_t k, size_t n, gfp_t f) { (void)f; return malloc((k * n) ? (k * n) : 1); }
static inline void *kvmalloc(size_t n, gfp_t f) { return kmalloc(n, f); }
static inline void *kvzalloc(size_t n, gfp_t f) { return kzalloc(n, f); }
static inline void kfree(const void *p) { free((void *)p); }
static inline void kvfree(const void *p) { free((void *)p); }
static inline char *kstrdup(const char *s, gfp_t f) { (void)f; return s ? strdup(s) : NULL; }

/* ---- locks (single-threaded here: mpathlab serialises calls) -------------- */
typedef struct { int mpl_unused; } spinlock_t;
typedef struct { int mpl_unused; } rwlock_t;
struct mutex { int mpl_unused; };
#define DEFINE_SPINLOCK(x) spinlock_t x = { 0 }
#define DEFINE_MUTEX(x) struct mutex x = { 0 }
#define spin_lock_init(l) ((void)(l))
#define spin_lock(l) ((void)(l))
#define spin_unlock(l) ((void)(l))
#define spin_lock_irq(l) ((void)(l))
#define spin_unlock_irq(l) ((void)(l))
#define spin_lock_bh(l) ((void)(l))
#define spin_unlock_bh(l) ((void)(l))
#define spin_lock_irqsave(l, flags) do { (void)(l); (flags) = 0; } while (0)
#define spin_unlock_irqrestore(l, flags) do { (void)(l); (void)(flags); } while (0)
#define mutex_init(m) ((void)(m))
#define mutex_lock(m) ((void)(m))
#define mutex_unlock(m) ((void)(m))
#define rcu_read_lock() do { } while (0)
#define rcu_read_unlock() do { } while (0)
#define preempt_disable() do { } while (0)
#define preempt_enable() do { } while (0)
#define local_irq_save(flags) ((flags) = 0)
#define local_irq_restore(flags) ((void)(flags))

/* ---- atomics and refcounts: 32-bit wrap-around like the kernel's ---------- */
typedef struct { int counter; } atomic_t;
typedef struct { s64 counter; } atomic64_t;
typedef struct { atomic_t refs; } refcount_t;
#define ATOMIC_INIT(i) { (i) }
static inline int atomic_read(const atomic_t *v) { return v->counter; }
static inline void atomic_set(atomic_t *v, int i) { v->counter = i; }
static inline int atomic_add_return(int i, atomic_t *v) { v->counter = (int)((unsigned int)v->counter + (unsigned int)i); return v->counter; }
static inline int atomic_sub_return(int i, atomic_t *v) { v->counter = (int)((unsigned int)v->counter - (unsigned int)i); return v->counter; }
static inline void atomic_add(int i, atomic_t *v) { atomic_add_return(i, v); }
static inline void atomic_sub(int i, atomic_t *v) { atomic_sub_return(i, v); }
static inline void atomic_inc(atomic_t *v) { atomic_add_return(1, v); }
static inline void atomic_dec(atomic_t *v) { atomic_sub_return(1, v); }
static inline int atomic_inc_return(atomic_t *v) { return atomic_add_return(1, v); }
static inline int atomic_dec_return(atomic_t *v) { return atomic_sub_return(1, v); }
static inline int atomic_dec_and_test(atomic_t *v) { return atomic_sub_return(1, v) == 0; }
static inline int atomic_xchg(atomic_t *v, int n) { int o = v->counter; v->counter = n; return o; }
static inline int atomic_cmpxchg(atomic_t *v, int o, int n) { int c = v->counter; if (c == o) v->counter = n; return c; }
static inline s64 atomic64_read(const atomic64_t *v) { return v->counter; }
static inline void atomic64_set(atomic64_t *v, s64 i) { v->counter = i; }
static inline s64 atomic64_add_return(s64 i, atomic64_t *v) { v->counter = (s64)((u64)v->counter + (u64)i); return v->counter; }
static inline void atomic64_add(s64 i, atomic64_t *v) { atomic64_add_return(i, v); }
static inline void atomic64_sub(s64 i, atomic64_t *v) { atomic64_add_return(-(u64)i, v); }
static inline void atomic64_inc(atomic64_t *v) { atomic64_add_return(1, v); }
static inline void atomic64_dec(atomic64_t *v) { atomic64_add_return(-1, v); }
static inline void refcount_set(refcount_t *r, int n) { r->refs.counter = n; }
static inline unsigned int refcount_read(const refcount_t *r) { return (unsigned int)r->refs.counter; }
static inline void refcount_inc(refcount_t *r) { atomic_inc(&r->refs); }
static inline void refcount_dec(refcount_t *r) { atomic_dec(&r->refs); }
static inline bool refcount_dec_and_test(refcount_t *r) { return atomic_dec_and_test(&r->refs); }

/* ---- time: injected by mpathlab before every call ------------------------- */
#define NSEC_PER_USEC 1000L
#define NSEC_PER_MSEC 1000000L
#define NSEC_PER_SEC  1000000000L
#define USEC_PER_SEC  1000000L
#define MSEC_PER_SEC  1000L
#ifndef HZ
#define HZ 250
#endif
#define INITIAL_JIFFIES ((unsigned long)(unsigned int)(-300 * HZ))
extern u64 mpl_now_ktime;    /* ktime_get_ns(): the selector's clock */
extern u64 mpl_now_sched;    /* sched_clock(): HST's select clock in 5.8-5.17 */
extern unsigned long mpl_jiffies;
#define jiffies mpl_jiffies
#define jiffies_64 ((u64)mpl_jiffies)
static inline u64 ktime_get_ns(void) { return mpl_now_ktime; }
static inline ktime_t ktime_get(void) { return (ktime_t)mpl_now_ktime; }
static inline u64 ktime_get_raw_ns(void) { return mpl_now_ktime; }
static inline u64 ktime_get_mono_fast_ns(void) { return mpl_now_ktime; }
static inline s64 ktime_to_ns(ktime_t k) { return k; }
static inline s64 ktime_to_us(ktime_t k) { return k / 1000; }
static inline ktime_t ns_to_ktime(u64 ns) { return (ktime_t)ns; }
static inline ktime_t ktime_sub(ktime_t a, ktime_t b) { return a - b; }
static inline ktime_t ktime_add(ktime_t a, ktime_t b) { return a + b; }
static inline s64 ktime_us_delta(ktime_t a, ktime_t b) { return (a - b) / 1000; }
static inline u64 sched_clock(void) { return mpl_now_sched; }
static inline u64 local_clock(void) { return mpl_now_sched; }
#define time_after(a, b) ((long)((b) - (a)) < 0)
#define time_before(a, b) time_after(b, a)
#define time_after_eq(a, b) ((long)((a) - (b)) >= 0)
#define time_before_eq(a, b) time_after_eq(b, a)
#define time_after64(a, b) ((s64)((b) - (a)) < 0)
#define time_before64(a, b) time_after64(b, a)
#define time_after_eq64(a, b) ((s64)((a) - (b)) >= 0)
#define time_before_eq64(a, b) time_after_eq64(b, a)
static inline unsigned int jiffies_to_usecs(unsigned long j) { return (unsigned int)((USEC_PER_SEC / HZ) * j); }
static inline u64 jiffies_to_nsecs(unsigned long j) { return (u64)jiffies_to_usecs(j) * NSEC_PER_USEC; }
static inline unsigned int jiffies_to_msecs(unsigned long j) { return (unsigned int)((MSEC_PER_SEC / HZ) * j); }
static inline unsigned long msecs_to_jiffies(unsigned int m) { return DIV_ROUND_UP((unsigned long)m, MSEC_PER_SEC / HZ); }
static inline unsigned long usecs_to_jiffies(unsigned int u) { return DIV_ROUND_UP((unsigned long)u, USEC_PER_SEC / HZ); }
static inline u64 nsecs_to_jiffies(u64 n) { return n / (NSEC_PER_SEC / HZ); }

/* ---- CPUs: the submitting CPU and the topology are injected --------------- */
#define NR_CPUS 8192
struct cpumask { unsigned long bits[BITS_TO_LONGS(NR_CPUS)]; };
typedef struct cpumask *cpumask_var_t;   /* CONFIG_CPUMASK_OFFSTACK, as Debian builds */
extern unsigned int mpl_nr_cpu_ids;
extern int mpl_cur_cpu;
#define nr_cpu_ids mpl_nr_cpu_ids
#define nr_cpumask_bits mpl_nr_cpu_ids
#define cpumask_bits(m) ((m)->bits)
#define cpumask_pr_args(m) nr_cpu_ids, cpumask_bits(m)
int mpl_cpu_to_node(int cpu);
const struct cpumask *mpl_cpumask_of_node(int node);
unsigned int mpl_cpumask_next(int n, const struct cpumask *m);
int mpl_bitmap_parse(const char *buf, unsigned int buflen, unsigned long *maskp, int nmaskbits);
#define cpu_to_node(cpu) mpl_cpu_to_node(cpu)
#define cpumask_of_node(node) mpl_cpumask_of_node(node)
#define numa_node_id() mpl_cpu_to_node(mpl_cur_cpu)
#define get_cpu() (mpl_cur_cpu)
#define put_cpu() do { } while (0)
#define smp_processor_id() (mpl_cur_cpu)
#define raw_smp_processor_id() (mpl_cur_cpu)
#define num_online_cpus() (mpl_nr_cpu_ids)
#define num_possible_cpus() (mpl_nr_cpu_ids)
static inline bool zalloc_cpumask_var(cpumask_var_t *m, gfp_t f) { *m = kzalloc(sizeof(struct cpumask), f); return *m != NULL; }
static inline bool alloc_cpumask_var(cpumask_var_t *m, gfp_t f) { return zalloc_cpumask_var(m, f); }
static inline void free_cpumask_var(cpumask_var_t m) { kfree(m); }
static inline void cpumask_set_cpu(unsigned int c, struct cpumask *m) { m->bits[c / BITS_PER_LONG] |= 1UL << (c % BITS_PER_LONG); }
static inline void cpumask_clear_cpu(int c, struct cpumask *m) { m->bits[c / BITS_PER_LONG] &= ~(1UL << (c % BITS_PER_LONG)); }
static inline bool cpumask_test_cpu(int c, const struct cpumask *m) { return (m->bits[c / BITS_PER_LONG] >> (c % BITS_PER_LONG)) & 1; }
static inline void cpumask_clear(struct cpumask *m) { memset(m, 0, sizeof(*m)); }
static inline unsigned int cpumask_first(const struct cpumask *m) { return mpl_cpumask_next(-1, m); }
static inline unsigned int cpumask_next(int n, const struct cpumask *m) { return mpl_cpumask_next(n, m); }
static inline bool cpumask_empty(const struct cpumask *m) { return cpumask_first(m) >= nr_cpu_ids; }
static inline unsigned int cpumask_weight(const struct cpumask *m)
{
	unsigned int n = 0, c;
	for (c = cpumask_first(m); c < nr_cpu_ids; c = cpumask_next(c, m))
		n++;
	return n;
}
static inline int cpumask_parse(const char *buf, struct cpumask *m)
{
	return mpl_bitmap_parse(buf, UINT_MAX, cpumask_bits(m), nr_cpumask_bits);
}
#define for_each_cpu(cpu, mask) \
	for ((cpu) = mpl_cpumask_next(-1, (mask)); (cpu) < nr_cpu_ids; (cpu) = mpl_cpumask_next((cpu), (mask)))
#define for_each_possible_cpu(cpu) for ((cpu) = 0; (cpu) < nr_cpu_ids; (cpu)++)
#define for_each_online_cpu(cpu) for_each_possible_cpu(cpu)
/* per-CPU variables: one copy per possible CPU */
#define DEFINE_PER_CPU(type, name) __typeof__(type) name[NR_CPUS]
#define per_cpu(var, cpu) ((var)[cpu])
#define this_cpu_ptr(ptr) (&(ptr)[mpl_cur_cpu])
#define per_cpu_ptr(ptr, cpu) (&(ptr)[cpu])
#define alloc_percpu(type) ((type *)calloc(NR_CPUS, sizeof(type)))
#define free_percpu(p) free(p)

/* ---- strings and parsing with kernel semantics ---------------------------- */
int mpl_sscanf(const char *buf, const char *fmt, ...) __attribute__((format(scanf, 2, 3)));
int mpl_vsscanf(const char *buf, const char *fmt, va_list ap);
int mpl_scnprintf(char *buf, size_t size, const char *fmt, ...);
int mpl_vscnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int mpl_snprintf(char *buf, size_t size, const char *fmt, ...);
int mpl_kstrtoull(const char *s, unsigned int base, unsigned long long *res);
int mpl_kstrtoll(const char *s, unsigned int base, long long *res);
#define sscanf mpl_sscanf
#define vsscanf mpl_vsscanf
#define scnprintf mpl_scnprintf
#define vscnprintf mpl_vscnprintf
#define snprintf mpl_snprintf
#define sprintf(buf, ...) mpl_snprintf(buf, INT_MAX, __VA_ARGS__)
#define kstrtoull mpl_kstrtoull
#define kstrtoll mpl_kstrtoll
static inline int kstrtoul(const char *s, unsigned int b, unsigned long *r) { unsigned long long v; int e = mpl_kstrtoull(s, b, &v); if (!e) *r = v; return e; }
static inline int kstrtouint(const char *s, unsigned int b, unsigned int *r) { unsigned long long v; int e = mpl_kstrtoull(s, b, &v); if (e) return e; if (v != (unsigned int)v) return -ERANGE; *r = v; return 0; }
static inline int kstrtoint(const char *s, unsigned int b, int *r) { long long v; int e = mpl_kstrtoll(s, b, &v); if (e) return e; if (v != (int)v) return -ERANGE; *r = v; return 0; }
static inline int kstrtou64(const char *s, unsigned int b, u64 *r) { return mpl_kstrtoull(s, b, r); }
static inline int kstrtou32(const char *s, unsigned int b, u32 *r) { return kstrtouint(s, b, r); }
static inline int kstrtos64(const char *s, unsigned int b, s64 *r) { return mpl_kstrtoll(s, b, r); }
/* the kernel's ctype treats Latin-1 NBSP (0xa0) as space too */
static inline int mpl_isspace(int c) { c &= 0xff; return c == ' ' || (c >= '\t' && c <= '\r') || c == 0xa0; }
static inline int mpl_isdigit(int c) { return c >= '0' && c <= '9'; }
static inline int mpl_isxdigit(int c) { return mpl_isdigit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f'); }
static inline int hex_to_bin(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}
static inline char *skip_spaces(const char *s) { while (mpl_isspace(*s)) s++; return (char *)s; }
#define isspace(c) mpl_isspace(c)
#define isdigit(c) mpl_isdigit(c)
#define isxdigit(c) mpl_isxdigit(c)

/* ---- printk, captured for mpathlab (dmesg) -------------------------------- */
#define KERN_SOH "\001"
#define KERN_EMERG   KERN_SOH "0"
#define KERN_ALERT   KERN_SOH "1"
#define KERN_CRIT    KERN_SOH "2"
#define KERN_ERR     KERN_SOH "3"
#define KERN_WARNING KERN_SOH "4"
#define KERN_NOTICE  KERN_SOH "5"
#define KERN_INFO    KERN_SOH "6"
#define KERN_DEBUG   KERN_SOH "7"
#define KERN_CONT    KERN_SOH "c"
int mpl_printk(const char *fmt, ...);
#define printk mpl_printk
#define pr_err(fmt, ...) mpl_printk(KERN_ERR fmt, ##__VA_ARGS__)
#define pr_warn(fmt, ...) mpl_printk(KERN_WARNING fmt, ##__VA_ARGS__)
#define pr_info(fmt, ...) mpl_printk(KERN_INFO fmt, ##__VA_ARGS__)
#define pr_debug(fmt, ...) do { } while (0)
#define printk_ratelimit() 1

/* ---- modules --------------------------------------------------------------- */
struct module { int mpl_unused; };
#define THIS_MODULE ((struct module *)0)
/* module_init must be callable: it defines the entry point mpathlab calls. */
#define module_init(fn) __attribute__((visibility("default"))) int mpl_module_init(void) { return fn(); }
#define module_exit(fn) __attribute__((visibility("default"))) void mpl_module_exit(void) { fn(); }
#define MPL_MODINFO extern int mpl_modinfo_unused
#define MODULE_LICENSE(x) MPL_MODINFO
#define MODULE_AUTHOR(x) MPL_MODINFO
#define MODULE_DESCRIPTION(x) MPL_MODINFO
#define MODULE_VERSION(x) MPL_MODINFO
#define MODULE_ALIAS(x) MPL_MODINFO
#define MODULE_PARM_DESC(a, b) MPL_MODINFO
#define MODULE_SOFTDEP(x) MPL_MODINFO
#define module_param(n, t, p) MPL_MODINFO
#define module_param_named(n, v, t, p) MPL_MODINFO
#define EXPORT_SYMBOL(x) MPL_MODINFO
#define EXPORT_SYMBOL_GPL(x) MPL_MODINFO
static inline int try_module_get(struct module *m) { (void)m; return 1; }
static inline void module_put(struct module *m) { (void)m; }
static inline int request_module(const char *fmt, ...) { (void)fmt; return -ENOENT; }

/* ---- odds and ends dm.h and dm-stats.h name ------------------------------- */
struct kobject { int mpl_unused; };
enum kobject_action { KOBJ_ADD, KOBJ_REMOVE, KOBJ_CHANGE, KOBJ_MOVE, KOBJ_ONLINE, KOBJ_OFFLINE, KOBJ_BIND, KOBJ_UNBIND };
struct completion { int done; };
struct block_device;
struct gendisk;
struct request_queue;
struct request;
struct bio;
struct queue_limits;
struct hd_geometry;
struct dm_stats_last_position;

#endif /* MPL_KERNEL_H */
