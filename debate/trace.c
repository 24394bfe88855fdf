// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * debate/trace.c: read a trace, and derive from it what the simulation
 * needs: each request's buffer need, its service time, and which earlier
 * request it waited for.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define PAGE 4096u

/* ---- reading ------------------------------------------------------------ */

enum col { C_SEQ, C_PID, C_QID, C_OP, C_SEND, C_DISP, C_DONE, C_END, C_IN,
	   C_OUT, C_ERR, C_BUF, C_WAIT, C_NWAIT, C_NCOLS };
static const char *const col_names[C_NCOLS] = {
	"seq", "pid", "qid", "op", "send", "disp", "done", "end", "in", "out",
	"err", "buf", "wait", "nwait",
};

static void chomp(char *s)
{
	size_t n = strlen(s);

	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = 0;
}

/* Split a CSV line in place (no quoting: the trace has none). */
static int split(char *line, char **f, int max)
{
	int n = 0;

	f[n++] = line;
	for (char *p = line; *p && n < max; p++) {
		if (*p == ',') {
			*p = 0;
			f[n++] = p + 1;
		}
	}
	return n;
}

static bool num(const char *s, int64_t *v)
{
	char *end;

	if (!*s)
		return false;
	errno = 0;
	*v = strtoll(s, &end, 10);
	return !*end && !errno;
}

/* Copy at most len - 1 bytes and terminate; longer values are cut. */
static void copy_str(char *dst, size_t len, const char *src)
{
	size_t n = strlen(src);

	if (n >= len)
		n = len - 1;
	memcpy(dst, src, n);
	dst[n] = 0;
}

const char *trace_meta(const struct trace *t, const char *key)
{
	for (int i = 0; i < t->nmeta; i++)
		if (!strcmp(t->meta[i][0], key))
			return t->meta[i][1];
	return NULL;
}

int trace_parse(struct trace *t, FILE *f, char *err, size_t errlen)
{
	char line[1024];
	char *fld[32];
	int col[C_NCOLS];
	bool have_header = false;
	size_t cap = 0, lineno = 0;
	int maxq = -1;

	memset(t, 0, sizeof(*t));
	t->depth = 8;
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		chomp(line);
		if (line[0] == '#') {
			char *colon = strchr(line, ':');

			if (colon && t->nmeta < TRACE_MAX_META && line[1] == ' ') {
				*colon = 0;
				copy_str(t->meta[t->nmeta][0], sizeof(t->meta[0][0]), line + 2);
				copy_str(t->meta[t->nmeta][1], sizeof(t->meta[0][1]),
					 colon[1] == ' ' ? colon + 2 : colon + 1);
				t->nmeta++;
			}
			continue;
		}
		if (!line[0])
			continue;
		int nf = split(line, fld, 32);

		if (!have_header) {
			for (int c = 0; c < C_NCOLS; c++) {
				col[c] = -1;
				for (int i = 0; i < nf; i++)
					if (!strcmp(fld[i], col_names[c]))
						col[c] = i;
				if (col[c] < 0) {
					snprintf(err, errlen, "line %zu: no column '%s' in the header",
						 lineno, col_names[c]);
					return -1;
				}
			}
			have_header = true;
			continue;
		}
		if (t->n == cap) {
			cap = cap ? cap * 2 : 1024;
			struct req *nr = realloc(t->r, cap * sizeof(*nr));

			if (!nr) {
				snprintf(err, errlen, "out of memory");
				return -1;
			}
			t->r = nr;
		}
		struct req *r = &t->r[t->n];
		int64_t v[C_NCOLS];

		memset(r, 0, sizeof(*r));
		for (int c = 0; c < C_NCOLS; c++) {
			const char *s;

			if (col[c] >= nf) {
				snprintf(err, errlen, "line %zu: %d fields, too few", lineno, nf);
				return -1;
			}
			s = fld[col[c]];
			if (c == C_OP) {
				copy_str(r->op, sizeof(r->op), s);
				continue;
			}
			if ((c == C_BUF || c == C_WAIT) && !strcmp(s, "-")) {
				v[c] = -1;
				continue;
			}
			if (!num(s, &v[c])) {
				snprintf(err, errlen, "line %zu: %s '%s' is not a number",
					 lineno, col_names[c], s);
				return -1;
			}
		}
		r->seq = (int)v[C_SEQ];
		r->pid = (int)v[C_PID];
		r->qid = (int)v[C_QID];
		r->send = v[C_SEND];
		r->disp = r->send + v[C_DISP];
		r->done = r->send + v[C_DONE];
		r->end = r->send + v[C_END];
		r->in = (uint32_t)v[C_IN];
		r->out = (uint32_t)v[C_OUT];
		r->err = (int)v[C_ERR];
		r->buf = (int)v[C_BUF];
		r->wait = v[C_WAIT] < 0 ? -1 : r->send + v[C_WAIT];
		r->nwait = (int)v[C_NWAIT];
		r->dep = -1;
		if (r->qid < 0 || r->qid > 1023 || r->send < 0 || r->disp < r->send ||
		    r->done < r->disp || r->end < r->done) {
			snprintf(err, errlen, "line %zu: times or qid out of order", lineno);
			return -1;
		}
		if (t->n && r->send < t->r[t->n - 1].send) {
			snprintf(err, errlen, "line %zu: not sorted by send", lineno);
			return -1;
		}
		if (r->qid > maxq)
			maxq = r->qid;
		t->n++;
	}
	if (!have_header) {
		snprintf(err, errlen, "no header row");
		return -1;
	}
	t->nqueues = maxq + 1;
	const char *q = trace_meta(t, "queues");

	if (q && atoi(q) > t->nqueues)
		t->nqueues = atoi(q);
	const char *d = trace_meta(t, "depth");

	if (d && atoi(d) > 0)
		t->depth = atoi(d);
	return 0;
}

int trace_read(struct trace *t, const char *path, char *err, size_t errlen)
{
	FILE *f;
	bool piped = false;
	int ret;
	size_t n = strlen(path);

	if (!strcmp(path, "-")) {
		f = stdin;
	} else if (n > 3 && !strcmp(path + n - 3, ".xz")) {
		char cmd[4200];

		if (strchr(path, '\'') || n > 4000) {
			snprintf(err, errlen, "%s: cannot quote this path", path);
			return -1;
		}
		snprintf(cmd, sizeof(cmd), "xz -dc -- '%s'", path);
		f = popen(cmd, "r");
		piped = true;
	} else {
		f = fopen(path, "r");
	}
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	ret = trace_parse(t, f, err, errlen);
	if (piped) {
		int st = pclose(f);

		if (!ret && st != 0) {
			snprintf(err, errlen, "%s: xz -dc failed (status %d)", path, st);
			ret = -1;
		}
	} else if (f != stdin) {
		fclose(f);
	}
	return ret;
}

void trace_free(struct trace *t)
{
	free(t->r);
	t->r = NULL;
	t->n = 0;
}

/* ---- what a request needs ------------------------------------------------ */

static uint32_t round_page(uint32_t v)
{
	return (uint32_t)(((uint64_t)v + PAGE - 1) / PAGE * PAGE);
}

/*
 * Requests that carry nothing after their op header and get no reply
 * arguments: the kernel lends them no buffer (fuse_uring_req_has_payload()).
 * Used only for traces that do not say (iovec mode).
 */
static const char *const no_payload_ops[] = {
	"FLUSH", "RELEASE", "RELEASEDIR", "FSYNC", "FSYNCDIR", "FALLOCATE",
	"ACCESS", "SETLK", "SETLKW", NULL,
};

bool req_payload(const struct req *r)
{
	if (r->buf >= 0)
		return r->buf == 1;
	if (r->in || r->out)
		return true;
	for (int i = 0; no_payload_ops[i]; i++)
		if (!strcmp(r->op, no_payload_ops[i]))
			return false;
	return true;
}

/*
 * The buffer a request needs is what the kernel knows when it picks one:
 * the larger of what goes in (the trace's "in") and the room the reply may
 * take. For most opcodes the reply has a fixed size, which is what the
 * trace's "out" shows. For the others:
 *   READ      asks for whole pages: the reply rounded up to 4 KiB (exact
 *             for page-cache reads and for direct reads that are not short)
 *   READDIR,  ask for the getdents64 buffer of the caller, clamped to
 *   READDIRPLUS  4 KiB..max_pages (fuse_readdir_uncached()); glibc's
 *             readdir() passes 32 KiB, so NEED_DECLARED takes
 *             max(32 KiB, reply); NEED_REPLY takes the reply rounded up to
 *             4 KiB, what a kernel that shrank READDIR to the buffer it
 *             found would need
 *   READLINK  one page
 * A request with payload needs at least one byte; nothing needs more than
 * max_payload.
 */
uint32_t req_need(const struct req *r, enum need_rule rule, uint32_t max_payload)
{
	uint32_t n;

	if (!req_payload(r))
		return 0;
	n = r->in > r->out ? r->in : r->out;
	if (!strcmp(r->op, "READ")) {
		n = round_page(r->out);
		if (n < PAGE)
			n = PAGE;
		if (r->in > n)
			n = r->in;
	} else if (!strcmp(r->op, "READDIR") || !strcmp(r->op, "READDIRPLUS")) {
		n = round_page(r->out);
		if (n < PAGE)
			n = PAGE;
		if (rule == NEED_DECLARED && n < 32 * KIB)
			n = 32 * KIB;
	} else if (!strcmp(r->op, "READLINK")) {
		n = PAGE;
	}
	if (n == 0)
		n = 1;
	if (n > max_payload)
		n = max_payload;
	return n;
}

/* ---- service times --------------------------------------------------------- */

static const struct req *cmp_base;

static int by_done(const void *a, const void *b)
{
	const struct req *x = &cmp_base[*(const size_t *)a];
	const struct req *y = &cmp_base[*(const size_t *)b];

	if (x->done != y->done)
		return x->done < y->done ? -1 : 1;
	if (x->disp != y->disp)
		return x->disp < y->disp ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int by_pid_end(const void *a, const void *b)
{
	const struct req *x = &cmp_base[*(const size_t *)a];
	const struct req *y = &cmp_base[*(const size_t *)b];

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median (the lower middle one of an even count); sorts v. */
static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[(n - 1) / 2];
}

static double req_bytes(const struct req *r)
{
	return (double)r->in + (double)r->out;
}

/*
 * The busy periods of each queue's server thread in the captured run. The
 * reference server handles the requests of a queue one after the other on
 * one thread, and commits them in batches, so one request's own time cannot
 * be read off the trace, but a period's can: a period starts when a request
 * reaches an idle thread (at max(its send, the previous commit)) and goes on
 * while each next request (in commit order) was dispatched before the
 * previous one was committed. *first gets the index (into ord) where each
 * period starts; returns the number of periods.
 */
static size_t busy_periods(const struct trace *t, const size_t *ord, size_t n,
			   size_t *first, int64_t *start)
{
	size_t g = 0;
	int64_t prev_done = INT64_MIN;

	for (size_t i = 0; i < n; i++) {
		const struct req *r = &t->r[ord[i]];

		if (i == 0 || r->disp >= prev_done) {
			first[g] = i;
			start[g] = i == 0 || r->send > prev_done ? r->send : prev_done;
			g++;
		}
		prev_done = r->done;
	}
	return g;
}

void trace_prepare(struct trace *t, const struct prep_opts *o)
{
	size_t n = t->n;
	size_t *ord = malloc((n + 1) * sizeof(*ord));
	size_t *first = malloc((n + 1) * sizeof(*first));
	int64_t *start = malloc((n + 1) * sizeof(*start));
	size_t *qstart = calloc((size_t)t->nqueues + 1, sizeof(*qstart));
	size_t *qn = calloc((size_t)t->nqueues + 1, sizeof(*qn));
	size_t *gfirst = malloc((n + 1) * sizeof(*gfirst));
	int64_t *gstart = malloc((n + 1) * sizeof(*gstart));
	size_t *gq = malloc((n + 1) * sizeof(*gq));
	size_t ng = 0;

	if (!ord || !first || !start || !qstart || !qn || !gfirst || !gstart || !gq) {
		fprintf(stderr, "debate-sim: out of memory\n");
		exit(2);
	}
	for (size_t i = 0; i < n; i++) {
		t->r[i].payload = req_payload(&t->r[i]);
		t->r[i].need = req_need(&t->r[i], o->need, o->max_payload);
		t->r[i].dep = -1;
		t->r[i].gap = 0;
	}

	/* requests of each queue, in commit order; then its busy periods */
	for (size_t i = 0; i < n; i++)
		qn[t->r[i].qid]++;
	for (int q = 1; q <= t->nqueues; q++)
		qstart[q] = qstart[q - 1] + qn[q - 1];
	memset(qn, 0, ((size_t)t->nqueues + 1) * sizeof(*qn));
	for (size_t i = 0; i < n; i++) {
		int q = t->r[i].qid;

		ord[qstart[q] + qn[q]++] = i;
	}
	cmp_base = t->r;
	for (int q = 0; q < t->nqueues; q++) {
		size_t m = qn[q], k;

		qsort(ord + qstart[q], m, sizeof(*ord), by_done);
		k = busy_periods(t, ord + qstart[q], m, first, start);
		for (size_t g = 0; g < k; g++) {
			gfirst[ng] = qstart[q] + first[g];
			gstart[ng] = start[g];
			gq[ng] = (size_t)q;
			ng++;
		}
	}

	/*
	 * The model, from the periods with a single request (most of them):
	 * c0 is the median time of one with at most 4 KiB of payload, and the
	 * time per byte the median of (time - c0) / bytes over the others.
	 * Medians, because a shared host stalls the guest now and then. With
	 * no period of a kind, c0 or the time per byte is 0.
	 */
	double *small = malloc((ng + 1) * sizeof(*small));
	double *large = malloc((ng + 1) * sizeof(*large));
	size_t ns = 0, nl = 0;
	double c0 = 0, b = 0;

	if (!small || !large) {
		fprintf(stderr, "debate-sim: out of memory\n");
		exit(2);
	}
	for (size_t g = 0; g < ng; g++) {
		int q = (int)gq[g];
		size_t lim = g + 1 < ng && gq[g + 1] == gq[g] ? gfirst[g + 1] : qstart[q] + qn[q];
		const struct req *r = &t->r[ord[gfirst[g]]];

		if (lim - gfirst[g] != 1)
			continue;
		if (req_bytes(r) <= PAGE)
			small[ns++] = (double)(r->done - gstart[g]);
	}
	if (ns)
		c0 = median(small, ns);
	for (size_t g = 0; g < ng; g++) {
		int q = (int)gq[g];
		size_t lim = g + 1 < ng && gq[g + 1] == gq[g] ? gfirst[g + 1] : qstart[q] + qn[q];
		const struct req *r = &t->r[ord[gfirst[g]]];
		double d;

		if (lim - gfirst[g] != 1 || req_bytes(r) <= PAGE)
			continue;
		d = (double)(r->done - gstart[g]) - c0;
		large[nl++] = (d > 0 ? d : 0) / req_bytes(r);
	}
	if (nl)
		b = median(large, nl);
	free(small);
	free(large);
	t->c0 = c0;
	t->per_byte = b;
	t->groups = (int)ng;

	/* each request's service time */
	for (size_t g = 0; g < ng; g++) {
		int q = (int)gq[g];
		size_t lim = g + 1 < ng && gq[g + 1] == gq[g] ? gfirst[g + 1] : qstart[q] + qn[q];
		double wsum = 0, cum = 0;
		int64_t dur = t->r[ord[lim - 1]].done - gstart[g], given = 0;

		for (size_t i = gfirst[g]; i < lim; i++)
			wsum += c0 + b * req_bytes(&t->r[ord[i]]);
		for (size_t i = gfirst[g]; i < lim; i++) {
			struct req *r = &t->r[ord[i]];
			double w = c0 + b * req_bytes(r);

			if (o->svc == SVC_FIT) {
				r->svc = (int64_t)llround(w);
			} else {
				/* shares that add up to the period exactly */
				cum += wsum > 0 ? w / wsum : 1.0 / (double)(lim - gfirst[g]);
				int64_t upto = (int64_t)llround(cum * (double)dur);

				r->svc = upto - given;
				given = upto;
			}
			if (r->svc < 1)
				r->svc = 1;
		}
	}

	/*
	 * Closed loop: a request follows the last request of its task that had
	 * ended when it was sent (the task may have waited for that one), and
	 * keeps the same gap after it in the simulation.
	 */
	for (size_t i = 0; i < n; i++)
		ord[i] = i;
	qsort(ord, n, sizeof(*ord), by_pid_end);
	for (size_t i = 0; i < n; i++) {
		struct req *r = &t->r[i];
		/* binary search among the same pid for the last end <= send */
		size_t lo = 0, hi = n;

		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			const struct req *m = &t->r[ord[mid]];

			if (m->pid < r->pid || (m->pid == r->pid && m->end <= r->send))
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo > 0 && t->r[ord[lo - 1]].pid == r->pid && ord[lo - 1] != i) {
			r->dep = (int)ord[lo - 1];
			r->gap = r->send - t->r[ord[lo - 1]].end;
		}
	}
	free(ord);
	free(first);
	free(start);
	free(qstart);
	free(qn);
	free(gfirst);
	free(gstart);
	free(gq);
}
