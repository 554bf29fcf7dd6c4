/*
 * mpathlab kernel shim runtime (MIT; no kernel code in here).
 *
 * Linked into every selector library: the state mpathlab injects (clock,
 * CPU, topology), the kernel library functions a selector calls (sscanf,
 * scnprintf with %*pb, bitmap_parse, printk capture), the one-type registry
 * that module_init fills, and the mpl_* entry points the ctypes wrapper
 * (mpathlab/kernelc/selector.py) calls.  Each entry point first installs the
 * caller's environment in the globals the shim headers read.
 */
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "mpl_dm.h"
#include "dm-path-selector.h"

#define MPL_EXPORT __attribute__((visibility("default")))

/* The runtime itself prints with libc; only selector code gets the shim's. */
#undef snprintf
#undef sprintf

static int mpl_isalnum_ext(char c)
{
	return mpl_isdigit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

u64 mpl_now_ktime;
u64 mpl_now_sched;
unsigned long mpl_jiffies;
unsigned int mpl_nr_cpu_ids = 1;
int mpl_cur_cpu;

/* ---- the crash guard ------------------------------------------------------------
 * A selector that faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL, BUG() -> abort) or never returns
 * would take mpathlab down with exit 139 and nothing said, or hang it.  While an entry point
 * runs, mpl_call names it: a fault then prints one line naming the selector and the call and
 * exits MPL_EXIT_SELECTOR (documented in docs/limits.md); a watchdog thread does the same
 * when one call runs longer than the budget.  Faults outside a call go to the previous handler. */
#define MPL_EXIT_SELECTOR 6
static const char *volatile mpl_call;          /* the selector hook running, NULL between calls */
static volatile unsigned long mpl_call_seq;    /* one more per call: the watchdog sees progress */
static char mpl_label[600];                    /* "round-robin (/path/dm-ps-round-robin.c)" */
static char mpl_bug_where[300];
static unsigned int mpl_budget_ms;
static const int mpl_fatal[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
static struct sigaction mpl_old_action[5];

#define MPL_CALL(name) do { mpl_call_seq++; mpl_call = (name); } while (0)
#define MPL_DONE() do { mpl_call = NULL; } while (0)

static void mpl_say(const char *s) { ssize_t r = write(2, s, strlen(s)); (void)r; }

static void mpl_report_and_exit(const char *what, const char *call, const char *tail)
{
	mpl_say("mpathlab: error: C selector ");
	mpl_say(mpl_label);
	mpl_say(what);
	mpl_say(call);
	mpl_say(" call");
	mpl_say(tail);
	mpl_say("\n");
	_exit(MPL_EXIT_SELECTOR);
}

static void mpl_on_fault(int sig, siginfo_t *si, void *uc)
{
	const char *call = mpl_call;
	unsigned int i;
	(void)si;
	(void)uc;
	if (call) {
		const char *name = sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGFPE ? "SIGFPE" :
				   sig == SIGILL ? "SIGILL" : "SIGABRT";
		mpl_say("mpathlab: error: C selector ");
		mpl_say(mpl_label);
		mpl_say(" crashed (");
		mpl_say(name);
		if (mpl_bug_where[0]) {
			mpl_say(", ");
			mpl_say(mpl_bug_where);
		}
		mpl_say(") in its ");
		mpl_say(call);
		mpl_say(" call\n");
		_exit(MPL_EXIT_SELECTOR);
	}
	for (i = 0; i < sizeof(mpl_fatal) / sizeof(mpl_fatal[0]); i++)
		if (mpl_fatal[i] == sig)
			sigaction(sig, &mpl_old_action[i], NULL);
	if (sig == SIGABRT)
		raise(sig);     /* a fault re-executes the instruction under the restored handler */
}

static void *mpl_watchdog(void *arg)
{
	unsigned long seen = 0;
	struct timespec tick, since = {0, 0}, now;
	unsigned int step = mpl_budget_ms / 10 ? mpl_budget_ms / 10 : 1;
	(void)arg;
	tick.tv_sec = step / 1000;
	tick.tv_nsec = (long)(step % 1000) * 1000000L;
	for (;;) {
		const char *call;
		nanosleep(&tick, NULL);
		call = mpl_call;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (!call || mpl_call_seq != seen) {
			seen = mpl_call_seq;
			since = now;
			continue;
		}
		if ((now.tv_sec - since.tv_sec) * 1000.0 + (now.tv_nsec - since.tv_nsec) / 1e6 >= mpl_budget_ms) {
			char tail[160];
			snprintf(tail, sizeof(tail), " within %u ms (MPATHLAB_C_CALL_BUDGET_MS)", mpl_budget_ms);
			mpl_report_and_exit(" did not return from its ", call, tail);
		}
	}
	return NULL;
}

/* Install the guard for this library: its label for messages and the per-call budget (0: no watchdog). */
MPL_EXPORT int mpl_guard_start(const char *label, unsigned int budget_ms)
{
	static int started;
	struct sigaction sa;
	stack_t ss, old_ss;
	unsigned int i;
	pthread_t t;

	snprintf(mpl_label, sizeof(mpl_label), "%s", label);
	if (started)
		return 0;
	started = 1;
	/* a runaway recursion overflows the stack: the handler needs one of its own */
	if (sigaltstack(NULL, &old_ss) == 0 && (old_ss.ss_flags & SS_DISABLE)) {
		ss.ss_size = 65536;
		ss.ss_sp = malloc(ss.ss_size);
		ss.ss_flags = 0;
		if (ss.ss_sp)
			sigaltstack(&ss, NULL);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = mpl_on_fault;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(mpl_fatal) / sizeof(mpl_fatal[0]); i++)
		sigaction(mpl_fatal[i], &sa, &mpl_old_action[i]);
	mpl_budget_ms = budget_ms;
	if (budget_ms && pthread_create(&t, NULL, mpl_watchdog, NULL) == 0)
		pthread_detach(t);
	return 0;
}

/* ---- failures inside the selector ------------------------------------------ */
void mpl_bug(const char *file, int line, const char *what)
{
	if (mpl_call)
		snprintf(mpl_bug_where, sizeof(mpl_bug_where), "%s at %s:%d", what, file, line);
	else
		fprintf(stderr, "mpathlab kernel shim: %s at %s:%d\n", what, file, line);
	abort();
}

/* ---- dmesg capture ---------------------------------------------------------- */
#define MPL_DMESG_SIZE 65536
static char mpl_dmesg[MPL_DMESG_SIZE];
MPL_EXPORT int mpl_dmesg_len;            /* bytes waiting; read by mpathlab */
MPL_EXPORT int mpl_dmesg_lost;           /* lines dropped because the buffer was full */

static void mpl_dmesg_append(char level, const char *text)
{
	size_t n = strlen(text);
	/* one record: level character, the text, then a newline */
	if ((size_t)mpl_dmesg_len + n + 2 >= MPL_DMESG_SIZE) {
		mpl_dmesg_lost++;
		return;
	}
	mpl_dmesg[mpl_dmesg_len++] = level;
	memcpy(mpl_dmesg + mpl_dmesg_len, text, n);
	mpl_dmesg_len += n;
	if (!n || text[n - 1] != '\n')
		mpl_dmesg[mpl_dmesg_len++] = '\n';
}

MPL_EXPORT int mpl_dmesg_take(char *buf, int size)
{
	int n = mpl_dmesg_len < size ? mpl_dmesg_len : size;
	memcpy(buf, mpl_dmesg, n);
	memmove(mpl_dmesg, mpl_dmesg + n, mpl_dmesg_len - n);
	mpl_dmesg_len -= n;
	return n;
}

int mpl_printk(const char *fmt, ...)
{
	char line[1024];
	char level = '4';   /* printk's default loglevel */
	va_list ap;
	int n;

	if (fmt[0] == '\001' && fmt[1]) {
		level = fmt[1];
		fmt += 2;
	}
	va_start(ap, fmt);
	n = mpl_vscnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	mpl_dmesg_append(level, line);
	return n;
}

void mpl_warn(const char *file, int line, const char *what)
{
	char text[512];
	mpl_scnprintf(text, sizeof(text), "WARNING: %s at %s:%d\n", what, file, line);
	mpl_dmesg_append('4', text);
}

/* ---- sscanf as lib/vsprintf.c behaves -------------------------------------- */
/*
 * Differences from glibc that selectors depend on: a numeric conversion
 * skips leading white space (kernel isspace, NBSP included), accepts '-'
 * only for signed conversions and never '+', wraps silently on overflow,
 * and stores the low bits for the qualifier given.  %c never skips space.
 */
static const char *mpl_parse_ull(const char *s, unsigned int base, int width, unsigned long long *out)
{
	unsigned long long v = 0;
	const char *start;
	int d;

	if (base == 0) {
		base = 10;
		if (s[0] == '0') {
			base = 8;
			if ((s[1] | 0x20) == 'x' && mpl_isxdigit(s[2]) && (width < 0 || width > 2)) {
				base = 16;
				s += 2;
				if (width > 0)
					width -= 2;
			}
		}
	} else if (base == 16 && s[0] == '0' && (s[1] | 0x20) == 'x' && (width < 0 || width > 2)) {
		s += 2;
		if (width > 0)
			width -= 2;
	}
	start = s;
	while (width != 0 && *s) {
		d = hex_to_bin((unsigned char)*s);
		if (d < 0 || (unsigned int)d >= base)
			break;
		v = v * base + (unsigned int)d;   /* wraps like the kernel's */
		s++;
		if (width > 0)
			width--;
	}
	*out = v;
	return s == start ? NULL : s;
}

int mpl_vsscanf(const char *buf, const char *fmt, va_list ap)
{
	const char *str = buf;
	int num = 0;

	while (*fmt) {
		int width = -1, is_sign = 0, neg = 0;
		unsigned int base = 10;
		char qual = 0;
		unsigned long long v;
		const char *next;

		if (mpl_isspace(*fmt)) {
			fmt = skip_spaces(fmt);
			str = skip_spaces(str);
			continue;
		}
		if (*fmt != '%' || fmt[1] == '%') {
			if (*fmt == '%')
				fmt++;
			if (*fmt++ != *str++)
				break;
			continue;
		}
		fmt++;
		if (*fmt == '*') {   /* skip a field: up to the next white space */
			if (!*str)
				break;
			while (*fmt && *fmt != '%' && !mpl_isspace(*fmt))
				fmt++;
			while (*str && !mpl_isspace(*str))
				str++;
			continue;
		}
		if (mpl_isdigit(*fmt)) {
			width = 0;
			while (mpl_isdigit(*fmt))
				width = width * 10 + (*fmt++ - '0');
			if (width <= 0)
				break;
		}
		if (*fmt == 'h' || *fmt == 'l' || *fmt == 'L' || *fmt == 'z') {
			qual = *fmt++;
			if (qual == 'h' && *fmt == 'h') {
				qual = 'H';
				fmt++;
			} else if (qual == 'l' && *fmt == 'l') {
				qual = 'L';
				fmt++;
			}
		}
		if (!*fmt)
			break;
		if (*fmt == 'n') {
			*va_arg(ap, int *) = (int)(str - buf);
			fmt++;
			continue;
		}
		if (!*str)
			break;
		switch (*fmt++) {
		case 'c': {
			char *c = va_arg(ap, char *);
			if (width < 0)
				width = 1;
			do {
				*c++ = *str++;
			} while (--width > 0 && *str);
			num++;
			continue;
		}
		case 's': {
			char *s = va_arg(ap, char *);
			if (width < 0)
				width = SHRT_MAX;
			str = skip_spaces(str);
			while (*str && !mpl_isspace(*str) && width-- > 0)
				*s++ = *str++;
			*s = '\0';
			num++;
			continue;
		}
		case 'o': base = 8; break;
		case 'x': case 'X': base = 16; break;
		case 'i': base = 0; is_sign = 1; break;
		case 'd': is_sign = 1; break;
		case 'u': break;
		default:
			return num;   /* unsupported conversion: stop as the kernel does */
		}
		str = skip_spaces(str);
		if (is_sign && *str == '-') {
			if (width == 1)
				break;
			neg = 1;
		}
		{
			char first = neg ? str[1] : str[0];
			if (!first || (base == 16 && !mpl_isxdigit(first)) ||
			    ((base == 10 || base == 0) && !mpl_isdigit(first)) ||
			    (base == 8 && (!mpl_isdigit(first) || first > '7')))
				break;
		}
		next = mpl_parse_ull(str + neg, base, width < 0 ? -1 : width - neg, &v);
		if (!next)
			break;
		if (neg)
			v = -v;
		switch (qual) {
		case 'H': if (is_sign) *va_arg(ap, signed char *) = (signed char)v; else *va_arg(ap, unsigned char *) = (unsigned char)v; break;
		case 'h': if (is_sign) *va_arg(ap, short *) = (short)v; else *va_arg(ap, unsigned short *) = (unsigned short)v; break;
		case 'l': if (is_sign) *va_arg(ap, long *) = (long)v; else *va_arg(ap, unsigned long *) = (unsigned long)v; break;
		case 'L': if (is_sign) *va_arg(ap, long long *) = (long long)v; else *va_arg(ap, unsigned long long *) = v; break;
		case 'z': *va_arg(ap, size_t *) = (size_t)v; break;
		default: if (is_sign) *va_arg(ap, int *) = (int)v; else *va_arg(ap, unsigned int *) = (unsigned int)v; break;
		}
		num++;
		str = next;
	}
	return num;
}

int mpl_sscanf(const char *buf, const char *fmt, ...)
{
	va_list ap;
	int n;
	va_start(ap, fmt);
	n = mpl_vsscanf(buf, fmt, ap);
	va_end(ap);
	return n;
}

/* kstrto*: optional '+' (and '-' for signed), digits, one optional trailing newline */
static int mpl_kstrto(const char *s, unsigned int base, unsigned long long *res, int *neg)
{
	unsigned long long v = 0, prev;
	int any = 0, d;

	*neg = 0;
	if (*s == '+')
		s++;
	else if (*s == '-') {
		*neg = 1;
		s++;
	}
	if (base == 0) {
		base = 10;
		if (s[0] == '0') {
			base = 8;
			if ((s[1] | 0x20) == 'x') {
				base = 16;
				s += 2;
			}
		}
	} else if (base == 16 && s[0] == '0' && (s[1] | 0x20) == 'x')
		s += 2;
	while ((d = hex_to_bin((unsigned char)*s)) >= 0 && (unsigned int)d < base) {
		prev = v;
		v = v * base + (unsigned int)d;
		if (v / base != prev && prev)   /* overflow check on the way */
			return -ERANGE;
		any = 1;
		s++;
	}
	if (!any)
		return -EINVAL;
	if (*s == '\n')
		s++;
	if (*s)
		return -EINVAL;
	*res = v;
	return 0;
}

int mpl_kstrtoull(const char *s, unsigned int base, unsigned long long *res)
{
	int neg, e = mpl_kstrto(s, base, res, &neg);
	if (!e && neg)
		return -EINVAL;
	return e;
}

int mpl_kstrtoll(const char *s, unsigned int base, long long *res)
{
	unsigned long long v;
	int neg, e = mpl_kstrto(s, base, &v, &neg);
	if (e)
		return e;
	if (neg) {
		if (v > (unsigned long long)LLONG_MAX + 1)
			return -ERANGE;
		*res = (long long)(0 - v);
	} else {
		if (v > (unsigned long long)LLONG_MAX)
			return -ERANGE;
		*res = (long long)v;
	}
	return 0;
}

/* ---- printf with the kernel's bitmap extension ------------------------------ */
/* %*pb: hex in 32-bit chunks, most significant first, comma separated, the
 * top chunk only as wide as the bits it holds; %*pbl: ranges "0-3,8". */
static int mpl_bitmap_test(const unsigned long *m, unsigned int bit)
{
	return (m[bit / BITS_PER_LONG] >> (bit % BITS_PER_LONG)) & 1;
}

static int mpl_emit_bitmap(char *out, size_t size, const unsigned long *m, int nbits, int list)
{
	size_t pos = 0;
	int n;
#define MPL_PUT(...) do { n = snprintf(out + (pos < size ? pos : size), pos < size ? size - pos : 0, __VA_ARGS__); pos += n; } while (0)
	if (nbits <= 0)
		return 0;
	if (list) {
		int bit = 0, first = 1;
		while (bit < nbits) {
			int end;
			if (!mpl_bitmap_test(m, bit)) {
				bit++;
				continue;
			}
			end = bit;
			while (end + 1 < nbits && mpl_bitmap_test(m, end + 1))
				end++;
			if (end > bit)
				MPL_PUT("%s%d-%d", first ? "" : ",", bit, end);
			else
				MPL_PUT("%s%d", first ? "" : ",", bit);
			first = 0;
			bit = end + 1;
		}
	} else {
		int chunks = (nbits + 31) / 32, c;
		for (c = chunks - 1; c >= 0; c--) {
			unsigned int word = (unsigned int)(m[(c * 32) / BITS_PER_LONG] >> ((c * 32) % BITS_PER_LONG));
			int bits = 32, width = 8;
			if (c == chunks - 1) {
				bits = nbits - c * 32;
				width = (bits + 3) / 4;
				if (bits < 32)
					word &= (1U << bits) - 1;
			}
			MPL_PUT("%s%0*x", c == chunks - 1 ? "" : ",", width, word);
		}
	}
#undef MPL_PUT
	return (int)pos;
}

/*
 * Walk the format one conversion at a time: %*pb/%*pbl are handled here,
 * every other conversion is passed with its own argument to libc.
 * Returns the length the full output would have (like vsnprintf).
 */
static int mpl_vformat(char *buf, size_t size, const char *fmt, va_list ap)
{
	size_t pos = 0;
	char spec[32];

	while (*fmt) {
		const char *p = fmt;
		size_t sl = 0;
		int star_w = 0, star_p = 0, w = 0, pr = 0, n = 0;
		char qual[3] = "";
		char *dst = buf + (pos < size ? pos : size);
		size_t room = pos < size ? size - pos : 0;

		if (*p != '%') {
			if (room > 1)
				*dst = *p;
			pos++;
			fmt++;
			continue;
		}
		spec[sl++] = *p++;
		if (*p == '%') {
			if (room > 1)
				*dst = '%';
			pos++;
			fmt = p + 1;
			continue;
		}
		while (*p && strchr("-+ #0", *p) && sl < 20)
			spec[sl++] = *p++;
		if (*p == '*') {
			star_w = 1;
			spec[sl++] = *p++;
		} else
			while (mpl_isdigit(*p) && sl < 20)
				spec[sl++] = *p++;
		if (*p == '.') {
			spec[sl++] = *p++;
			if (*p == '*') {
				star_p = 1;
				spec[sl++] = *p++;
			} else
				while (mpl_isdigit(*p) && sl < 24)
					spec[sl++] = *p++;
		}
		while (*p && strchr("hlLzjt", *p) && strlen(qual) < 2) {
			qual[strlen(qual)] = *p;
			spec[sl++] = *p++;
		}
		if (!*p)
			break;
		spec[sl++] = *p;
		spec[sl] = '\0';
		if (star_w)
			w = va_arg(ap, int);
		if (star_p)
			pr = va_arg(ap, int);
		if (*p == 'p' && p[1] == 'b') {
			const unsigned long *m = va_arg(ap, const unsigned long *);
			int list = p[2] == 'l';
			n = mpl_emit_bitmap(dst, room, m, star_w ? w : 0, list);
			fmt = p + 2 + list;
			pos += n;
			continue;
		}
		fmt = p + 1;
		if (*p == 'p') {
			while (mpl_isalnum_ext(*fmt))   /* other %p extensions: print the pointer */
				fmt++;
		}
#define MPL_ONE(val) (star_w && star_p ? snprintf(dst, room, spec, w, pr, val) : \
		      star_w ? snprintf(dst, room, spec, w, val) : star_p ? snprintf(dst, room, spec, pr, val) : \
		      snprintf(dst, room, spec, val))
		switch (*p) {
		case 'd': case 'i': case 'u': case 'x': case 'X': case 'o': case 'c':
			if (!strcmp(qual, "ll") || !strcmp(qual, "L") || !strcmp(qual, "j"))
				n = MPL_ONE(va_arg(ap, long long));
			else if (!strcmp(qual, "l") || !strcmp(qual, "z") || !strcmp(qual, "t"))
				n = MPL_ONE(va_arg(ap, long));
			else
				n = MPL_ONE(va_arg(ap, int));
			break;
		case 's':
			n = MPL_ONE(va_arg(ap, const char *));
			break;
		case 'p':
			n = MPL_ONE(va_arg(ap, void *));
			break;
		case 'e': case 'f': case 'g': case 'E': case 'G':
			n = MPL_ONE(va_arg(ap, double));
			break;
		default:
			n = 0;
			break;
		}
#undef MPL_ONE
		pos += n;
	}
	if (size)
		buf[pos < size ? pos : size - 1] = '\0';
	return (int)pos;
}

int mpl_vscnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	int n = mpl_vformat(buf, size, fmt, ap);
	if (!size)
		return 0;
	return (size_t)n < size ? n : (int)size - 1;
}

int mpl_scnprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;
	va_start(ap, fmt);
	n = mpl_vscnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

int mpl_snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;
	va_start(ap, fmt);
	n = mpl_vformat(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

/* ---- bitmap_parse (lib/bitmap.c semantics) ----------------------------------- */
/*
 * Hex digits in 32-bit chunks, scanned from the end of the string (which
 * ends at NUL or the first newline).  Runs of white space and commas separate
 * chunks.  A chunk holds at most eight digits; after eight, a ninth hex digit
 * is -EOVERFLOW but any other character is stepped over unchecked (so
 * "x00000001" parses as CPU 0).  A non-hex character inside a chunk is
 * -EINVAL; more chunks than the bitmap holds, or a bit set at or beyond
 * nmaskbits in the top chunk, is -EOVERFLOW.
 */
static int mpl_chunk_sep(char c) { return mpl_isspace(c) || c == ','; }

int mpl_bitmap_parse(const char *buf, unsigned int buflen, unsigned long *maskp, int nmaskbits)
{
	const char *nl = memchr(buf, '\n', strnlen(buf, buflen));
	long end = (long)(nl ? nl - buf : (long)strnlen(buf, buflen)) - 1;
	int max_chunks = BITS_TO_U32(nmaskbits), chunk = 0, b;
	u32 words[NR_CPUS / 32];

	memset(words, 0, sizeof(words));
	for (;;) {
		u32 word = 0;
		int digits;

		while (end >= 0 && mpl_chunk_sep(buf[end]))
			end--;
		if (end < 0)
			break;
		if (chunk >= max_chunks)
			return -EOVERFLOW;
		for (digits = 0; digits < 8; digits++) {
			int v = hex_to_bin((unsigned char)buf[end--]);
			if (v < 0)
				return -EINVAL;
			word |= (u32)v << (4 * digits);
			if (end < 0 || mpl_chunk_sep(buf[end]))
				break;
		}
		if (digits == 8 && hex_to_bin((unsigned char)buf[end--]) >= 0)
			return -EOVERFLOW;
		words[chunk++] = word;
	}
	/* bits above nmaskbits in the top chunk make the mask too big */
	if (chunk * 32 >= nmaskbits) {
		for (b = nmaskbits; b < chunk * 32; b++)
			if ((words[b / 32] >> (b % 32)) & 1)
				return -EOVERFLOW;
	}
	memset(maskp, 0, BITS_TO_LONGS(nmaskbits) * sizeof(unsigned long));
	for (b = 0; b < nmaskbits; b++)
		if ((words[b / 32] >> (b % 32)) & 1)
			maskp[b / BITS_PER_LONG] |= 1UL << (b % BITS_PER_LONG);
	return 0;
}

/* ---- CPUs and topology ------------------------------------------------------- */
unsigned int mpl_cpumask_next(int n, const struct cpumask *m)
{
	unsigned int c;
	for (c = (unsigned int)(n + 1); c < mpl_nr_cpu_ids; c++)
		if ((m->bits[c / BITS_PER_LONG] >> (c % BITS_PER_LONG)) & 1)
			return c;
	return mpl_nr_cpu_ids;
}

/* The topology of the selector instance being called (set per call). */
struct mpl_topology {
	unsigned int nr_cpu_ids;
	int *node_of;                 /* per CPU */
	int nr_nodes;
	struct cpumask *node_masks;   /* per node */
};
static struct mpl_topology *mpl_topo;

int mpl_cpu_to_node(int cpu)
{
	if (!mpl_topo || cpu < 0 || (unsigned int)cpu >= mpl_topo->nr_cpu_ids)
		return 0;
	return mpl_topo->node_of[cpu];
}

const struct cpumask *mpl_cpumask_of_node(int node)
{
	static struct cpumask empty;
	if (!mpl_topo || node < 0 || node >= mpl_topo->nr_nodes)
		return &empty;
	return &mpl_topo->node_masks[node];
}

/* ---- the selector type that module_init registers ------------------------------ */
extern int mpl_module_init(void);
static struct path_selector_type *mpl_type;
static int mpl_registered;

int dm_register_path_selector(struct path_selector_type *type)
{
	if (mpl_type)
		return -EEXIST;   /* one selector type per library */
	mpl_type = type;
	return 0;
}

int dm_unregister_path_selector(struct path_selector_type *type)
{
	if (type != mpl_type)
		return -EINVAL;
	mpl_type = NULL;
	return 0;
}

void dm_pg_init_complete(struct dm_path *path, unsigned int err_flags)
{
	(void)path;
	(void)err_flags;
}

/* ---- entry points for mpathlab -------------------------------------------------- */
struct mpl_ps {
	struct path_selector ps;
	struct mpl_topology topo;
};

struct mpl_path {
	struct dm_path path;
	struct dm_dev dev;
};

static void mpl_enter(struct mpl_ps *p, u64 ktime, u64 sched)
{
	mpl_now_ktime = ktime;
	mpl_now_sched = sched;
	mpl_jiffies = INITIAL_JIFFIES + (unsigned long)(ktime / (NSEC_PER_SEC / HZ));
	if (p) {
		mpl_topo = &p->topo;
		mpl_nr_cpu_ids = p->topo.nr_cpu_ids;
	}
}

/* Run module_init once; returns its result, or -ENOENT if it registered nothing. */
MPL_EXPORT int mpl_load(void)
{
	int r;
	if (mpl_registered)
		return 0;
	MPL_CALL("module_init");
	r = mpl_module_init();
	MPL_DONE();
	if (r < 0)
		return r;
	if (!mpl_type)
		return -ENOENT;
#ifdef MPL_FEATURES_OVERRIDE
	/* build option: the feature flags as if the type declared these */
	mpl_type->features = MPL_FEATURES_OVERRIDE;
#endif
	mpl_registered = 1;
	return 0;
}

MPL_EXPORT const char *mpl_type_name(void) { return mpl_type ? mpl_type->name : NULL; }
MPL_EXPORT unsigned int mpl_type_features(void) { return mpl_type->features; }
MPL_EXPORT unsigned int mpl_type_table_args(void) { return mpl_type->table_args; }
MPL_EXPORT unsigned int mpl_type_info_args(void) { return mpl_type->info_args; }
/* which optional hooks the type has: 1 start_io, 2 end_io, 4 status, 8 fail/reinstate */
MPL_EXPORT int mpl_type_hooks(void)
{
	return (mpl_type->start_io ? 1 : 0) | (mpl_type->end_io ? 2 : 0) | (mpl_type->status ? 4 : 0) |
	       (mpl_type->fail_path && mpl_type->reinstate_path ? 8 : 0);
}

MPL_EXPORT struct mpl_ps *mpl_create(unsigned int argc, char **argv, unsigned int nr_cpu_ids,
				     const int *node_of, u64 ktime, u64 sched, int *ret)
{
	struct mpl_ps *p = calloc(1, sizeof(*p));
	unsigned int c;
	int nodes = 1;

	if (!p) {
		*ret = -ENOMEM;
		return NULL;
	}
	p->topo.nr_cpu_ids = nr_cpu_ids ? nr_cpu_ids : 1;
	if (p->topo.nr_cpu_ids > NR_CPUS)
		p->topo.nr_cpu_ids = NR_CPUS;
	p->topo.node_of = calloc(p->topo.nr_cpu_ids, sizeof(int));
	for (c = 0; c < p->topo.nr_cpu_ids; c++) {
		p->topo.node_of[c] = node_of ? node_of[c] : 0;
		if (p->topo.node_of[c] + 1 > nodes)
			nodes = p->topo.node_of[c] + 1;
	}
	p->topo.nr_nodes = nodes;
	p->topo.node_masks = calloc(nodes, sizeof(struct cpumask));
	for (c = 0; c < p->topo.nr_cpu_ids; c++)
		if (p->topo.node_of[c] >= 0)
			cpumask_set_cpu(c, &p->topo.node_masks[p->topo.node_of[c]]);
	p->ps.type = mpl_type;
	mpl_enter(p, ktime, sched);
	MPL_CALL("create");
	*ret = mpl_type->create(&p->ps, argc, argv);
	MPL_DONE();
	if (*ret) {
		free(p->topo.node_masks);
		free(p->topo.node_of);
		free(p);
		return NULL;
	}
	return p;
}

MPL_EXPORT void mpl_destroy(struct mpl_ps *p)
{
	mpl_enter(p, mpl_now_ktime, mpl_now_sched);
	if (mpl_type->destroy) {
		MPL_CALL("destroy");
		mpl_type->destroy(&p->ps);
		MPL_DONE();
	}
	free(p->topo.node_masks);
	free(p->topo.node_of);
	free(p);
}

MPL_EXPORT int mpl_add_path(struct mpl_ps *p, int argc, char **argv, const char **error,
			    struct mpl_path **out, u64 ktime)
{
	struct mpl_path *mp = calloc(1, sizeof(*mp));
	char *err = NULL;
	int r;

	*error = NULL;
	*out = NULL;
	if (!mp)
		return -ENOMEM;
	mp->path.dev = &mp->dev;
	mpl_enter(p, ktime, ktime);
	MPL_CALL("add_path");
	r = mpl_type->add_path(&p->ps, &mp->path, argc, argv, &err);
	MPL_DONE();
	if (r) {
		*error = err;
		free(mp);
		return r;
	}
	*out = mp;
	return 0;
}

MPL_EXPORT void mpl_free_path(struct mpl_path *mp) { free(mp); }

MPL_EXPORT struct mpl_path *mpl_select(struct mpl_ps *p, size_t nr_bytes, u64 ktime, u64 sched, int cpu)
{
	struct dm_path *path;
	mpl_enter(p, ktime, sched);
	mpl_cur_cpu = cpu;
	MPL_CALL("select_path");
	path = mpl_type->select_path(&p->ps, nr_bytes);
	MPL_DONE();
	return path ? container_of(path, struct mpl_path, path) : NULL;
}

MPL_EXPORT void mpl_fail(struct mpl_ps *p, struct mpl_path *mp, u64 ktime)
{
	mpl_enter(p, ktime, ktime);
	MPL_CALL("fail_path");
	mpl_type->fail_path(&p->ps, &mp->path);
	MPL_DONE();
}

MPL_EXPORT int mpl_reinstate(struct mpl_ps *p, struct mpl_path *mp, u64 ktime)
{
	int r;
	mpl_enter(p, ktime, ktime);
	MPL_CALL("reinstate_path");
	r = mpl_type->reinstate_path(&p->ps, &mp->path);
	MPL_DONE();
	return r;
}

MPL_EXPORT int mpl_start_io(struct mpl_ps *p, struct mpl_path *mp, size_t nr_bytes, u64 ktime)
{
	int r;
	mpl_enter(p, ktime, ktime);
	MPL_CALL("start_io");
	r = mpl_type->start_io ? mpl_type->start_io(&p->ps, &mp->path, nr_bytes) : 0;
	MPL_DONE();
	return r;
}

MPL_EXPORT int mpl_end_io(struct mpl_ps *p, struct mpl_path *mp, size_t nr_bytes, u64 start_time, u64 ktime)
{
	int r;
	mpl_enter(p, ktime, ktime);
	MPL_CALL("end_io");
	r = mpl_type->end_io ? mpl_type->end_io(&p->ps, &mp->path, nr_bytes, start_time) : 0;
	MPL_DONE();
	return r;
}

MPL_EXPORT int mpl_status(struct mpl_ps *p, struct mpl_path *mp, int type, char *result, unsigned int maxlen,
			  u64 ktime)
{
	int r;
	mpl_enter(p, ktime, ktime);
	result[0] = '\0';
	if (!mpl_type->status)
		return 0;
	MPL_CALL("status");
	r = mpl_type->status(&p->ps, mp ? &mp->path : NULL, (status_type_t)type, result, maxlen);
	MPL_DONE();
	return r;
}
