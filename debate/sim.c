// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * debate/sim.c: the designs' buffers, and the replay.
 *
 * Every queue of the mount is simulated as the patched kernel runs it
 * (fs/fuse/dev_uring.c), with the payload buffers of one design:
 *
 *   - A queue has one ring, or two for design (d). A ring has its entries,
 *     its list of waiting requests (fuse_req_queue), its buffers and one
 *     server thread (SERVER_BATCH, the reference server's loop, or
 *     SERVER_SERIAL) or as many as it has requests (SERVER_ASYNC).
 *   - A request arrives on its queue (the trace's qid). If an entry is free
 *     and, when it has payload, a buffer for it can be taken, it is
 *     dispatched at once; otherwise it joins the end of the list. As in
 *     fuse_uring_queue_fuse_req(), a newcomer that can go goes, even past
 *     requests that wait.
 *   - A dispatched request holds its entry and its buffer until the server
 *     thread has worked on it for its service time and committed it. In
 *     SERVER_BATCH the thread takes every dispatched request that is there
 *     when it is idle, works on them in turn, and commits them all at the
 *     end: a request keeps its buffer until the last of its batch is done.
 *   - On a commit the buffer goes back and the entry is free. Who takes it
 *     depends on the policy:
 *       POLICY_PASS, the series' kernel (fuse_uring_ent_assign_req() and
 *       fuse_uring_send_waiting(), patch 0019): while there are free
 *       entries, the request at the head of the list goes if it needs no
 *       buffer or one can be taken; when the head cannot, the requests
 *       that need no buffer go past it, and those that need one wait in
 *       order behind it.
 *       POLICY_HEAD, v2 as posted (and the series before 0019): the entry
 *       tries the request at the head, once, and parks otherwise; the
 *       requests behind it wait, those without payload included.
 *       POLICY_SCAN walks the whole list and dispatches every request that
 *       finds an entry and a buffer, in any order.
 *   - A request "waits for a buffer" when taking one failed while an entry
 *     was free for it: that is when the kernel emits
 *     fuse_uring_wait_buffer. Its wait runs from that first refusal to its
 *     dispatch.
 *
 * Time is in ticks of one microsecond of the captured run's trace clock.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* ---- sizes ------------------------------------------------------------- */

uint64_t parse_size(const char *s)
{
	uint64_t v = 0;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return 0;
	while (isdigit((unsigned char)*p)) {
		v = v * 10 + (uint64_t)(*p - '0');
		if (v > (1ull << 40))
			return 0;
		p++;
	}
	switch (*p) {
	case 'K': case 'k': v *= KIB; p++; break;
	case 'M': case 'm': v *= MIB; p++; break;
	case 'G': case 'g': v *= 1024ull * MIB; p++; break;
	default: break;
	}
	return *p ? 0 : v;
}

void format_size(uint64_t v, char *buf, size_t len)
{
	if (v && v % MIB == 0)
		snprintf(buf, len, "%lluM", (unsigned long long)(v / MIB));
	else if (v && v % KIB == 0)
		snprintf(buf, len, "%lluK", (unsigned long long)(v / KIB));
	else
		snprintf(buf, len, "%llu", (unsigned long long)v);
}

/* ---- designs ------------------------------------------------------------- */

/* "SIZE*N" */
static int parse_class(const char *s, uint32_t *size, int *count)
{
	char tmp[64];
	const char *star = strchr(s, '*');
	char *end;
	long n;
	uint64_t sz;

	if (!star || (size_t)(star - s) >= sizeof(tmp))
		return -1;
	memcpy(tmp, s, (size_t)(star - s));
	tmp[star - s] = 0;
	sz = parse_size(tmp);
	n = strtol(star + 1, &end, 10);
	if (!sz || sz > 64ull * MIB || *end || n < 1 || n > 65535)
		return -1;
	*size = (uint32_t)sz;
	*count = (int)n;
	return 0;
}

static int parse_classes(struct ring_spec *rs, const char *list, char *err, size_t errlen)
{
	char buf[256];
	char *save = NULL;

	snprintf(buf, sizeof(buf), "%s", list);
	rs->nclasses = 0;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint32_t size;
		int count, i;

		if (rs->nclasses == MAX_CLASSES) {
			snprintf(err, errlen, "more than %d classes", MAX_CLASSES);
			return -1;
		}
		if (parse_class(tok, &size, &count)) {
			snprintf(err, errlen, "'%s' is not SIZE*COUNT", tok);
			return -1;
		}
		/* keep them sorted, smallest first */
		for (i = rs->nclasses; i > 0 && rs->class_size[i - 1] > size; i--) {
			rs->class_size[i] = rs->class_size[i - 1];
			rs->class_count[i] = rs->class_count[i - 1];
		}
		if (i > 0 && rs->class_size[i - 1] == size) {
			snprintf(err, errlen, "class %s given twice", tok);
			return -1;
		}
		rs->class_size[i] = size;
		rs->class_count[i] = count;
		rs->nclasses++;
	}
	if (!rs->nclasses) {
		snprintf(err, errlen, "no classes");
		return -1;
	}
	return 0;
}

int design_parse(struct design *d, const char *spec, int depth,
		 uint32_t max_payload, char *err, size_t errlen)
{
	const char *arg = strchr(spec, ':');
	struct ring_spec *r0 = &d->ring[0];

	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", spec);
	d->nrings = 1;
	r0->entries = depth;
	arg = arg ? arg + 1 : NULL;
	if (depth < 1) {
		snprintf(err, errlen, "depth must be at least 1");
		return -1;
	}
	if (!strcmp(spec, "a")) {
		r0->kind = AL_ENTRY;
		r0->bufsize = max_payload;
		return 0;
	}
	if (!strncmp(spec, "b:", 2)) {
		char *end;
		long n = strtol(arg, &end, 10);

		if (*end || n < 1 || n > 65535) {
			snprintf(err, errlen, "%s: b:N needs N in 1..65535", spec);
			return -1;
		}
		r0->kind = AL_RING;
		r0->bufsize = max_payload;
		r0->nbufs = (int)n;
		return 0;
	}
	if (!strncmp(spec, "c:", 2) || !strncmp(spec, "c+:", 3)) {
		r0->kind = AL_CLASSES;
		r0->upgrade = spec[1] == '+';
		if (parse_classes(r0, arg, err, errlen))
			return -1;
		if (r0->class_size[r0->nclasses - 1] < max_payload) {
			snprintf(err, errlen, "%s: the largest class must hold %u bytes",
				 spec, max_payload);
			return -1;
		}
		return 0;
	}
	if (!strncmp(spec, "d:", 2)) {
		const char *slash = strchr(arg, '/');
		char meta[64];
		struct ring_spec *r1 = &d->ring[1];

		if (!slash || (size_t)(slash - arg) >= sizeof(meta)) {
			snprintf(err, errlen, "%s: d:SIZE*N/SIZE*N", spec);
			return -1;
		}
		memcpy(meta, arg, (size_t)(slash - arg));
		meta[slash - arg] = 0;
		d->nrings = 2;
		*r1 = *r0;
		r0->kind = r1->kind = AL_RING;
		if (parse_class(meta, &r0->bufsize, &r0->nbufs) ||
		    parse_class(slash + 1, &r1->bufsize, &r1->nbufs)) {
			snprintf(err, errlen, "%s: d:SIZE*N/SIZE*N", spec);
			return -1;
		}
		if (r1->bufsize < max_payload || r0->bufsize >= r1->bufsize) {
			snprintf(err, errlen, "%s: the data ring's buffers must hold %u bytes, "
				 "the metadata ring's be smaller", spec, max_payload);
			return -1;
		}
		d->route = r0->bufsize;
		return 0;
	}
	if (!strncmp(spec, "e:", 2)) {
		char size[64];
		const char *slash = strchr(arg, '/');
		size_t len = slash ? (size_t)(slash - arg) : strlen(arg);
		uint64_t p;

		if (len >= sizeof(size) || (slash && strcmp(slash, "/split"))) {
			snprintf(err, errlen, "%s: e:SIZE or e:SIZE/split", spec);
			return -1;
		}
		memcpy(size, arg, len);
		size[len] = 0;
		p = parse_size(size);
		r0->split = slash ? 64 * KIB : 0;

		if (p < max_payload) {
			snprintf(err, errlen, "%s: the pool must hold at least %u bytes", spec,
				 max_payload);
			return -1;
		}
		r0->kind = AL_POOL;
		r0->pool = p;
		r0->grain = 4 * KIB;
		return 0;
	}
	snprintf(err, errlen, "unknown design '%s' (a, b:N, c:..., c+:..., d:.../..., e:SIZE)", spec);
	return -1;
}

static uint64_t ring_reserved(const struct ring_spec *rs)
{
	uint64_t v = 0;

	switch (rs->kind) {
	case AL_ENTRY: return (uint64_t)rs->entries * rs->bufsize;
	case AL_RING: return (uint64_t)rs->nbufs * rs->bufsize;
	case AL_CLASSES:
		for (int i = 0; i < rs->nclasses; i++)
			v += (uint64_t)rs->class_size[i] * (uint64_t)rs->class_count[i];
		return v;
	case AL_POOL: return rs->pool;
	}
	return 0;
}

uint64_t design_reserved(const struct design *d)
{
	uint64_t v = 0;

	for (int i = 0; i < d->nrings; i++)
		v += ring_reserved(&d->ring[i]);
	return v;
}

/* ---- allocators ------------------------------------------------------------ */

struct extent {
	uint64_t off, len;
};

struct alloc {
	const struct ring_spec *rs;
	int free_bufs;			/* AL_RING */
	int class_free[MAX_CLASSES];	/* AL_CLASSES */
	struct extent *ext;		/* AL_POOL: free extents, by offset */
	size_t next, cap;
	uint64_t free_bytes;
};

/* What a request holds: how many bytes, and where they came from. */
struct hold {
	uint64_t bytes;
	int cls;
	uint64_t off;
};

static int alloc_init(struct alloc *a, const struct ring_spec *rs)
{
	memset(a, 0, sizeof(*a));
	a->rs = rs;
	a->free_bufs = rs->nbufs;
	for (int i = 0; i < rs->nclasses; i++)
		a->class_free[i] = rs->class_count[i];
	if (rs->kind == AL_POOL) {
		a->cap = 64;
		a->ext = malloc(a->cap * sizeof(*a->ext));
		if (!a->ext)
			return -1;
		a->ext[0] = (struct extent){ 0, rs->pool };
		a->next = 1;
		a->free_bytes = rs->pool;
	}
	return 0;
}

static void alloc_fini(struct alloc *a)
{
	free(a->ext);
}

static uint64_t pool_round(const struct ring_spec *rs, uint32_t need)
{
	return ((uint64_t)need + rs->grain - 1) / rs->grain * rs->grain;
}

/*
 * Take a buffer for a request needing `need` bytes. 0 and *h filled, or -1.
 * *frag is set when a pool refuses with enough free bytes in pieces too
 * small; *upgraded when a class bigger than the request's own was taken.
 */
static int alloc_take(struct alloc *a, uint32_t need, struct hold *h, bool *frag,
		      bool *upgraded)
{
	const struct ring_spec *rs = a->rs;

	*frag = false;
	*upgraded = false;
	switch (rs->kind) {
	case AL_ENTRY:
		h->bytes = rs->bufsize;
		return 0;
	case AL_RING:
		if (!a->free_bufs)
			return -1;
		a->free_bufs--;
		h->bytes = rs->bufsize;
		return 0;
	case AL_CLASSES: {
		int c = 0;

		while (c < rs->nclasses && rs->class_size[c] < need)
			c++;
		if (c == rs->nclasses)
			return -1;
		int own = c;

		while (c < rs->nclasses && !a->class_free[c] && rs->upgrade)
			c++;
		if (c == rs->nclasses || !a->class_free[c])
			return -1;
		a->class_free[c]--;
		h->cls = c;
		h->bytes = rs->class_size[c];
		*upgraded = c != own;
		return 0;
	}
	case AL_POOL: {
		uint64_t len = pool_round(rs, need);
		bool top = rs->split && len <= rs->split;

		for (size_t k = 0; k < a->next; k++) {
			/* first fit from the bottom, or last fit from the top */
			size_t i = top ? a->next - 1 - k : k;

			if (a->ext[i].len < len)
				continue;
			h->bytes = len;
			if (top) {
				h->off = a->ext[i].off + a->ext[i].len - len;
			} else {
				h->off = a->ext[i].off;
				a->ext[i].off += len;
			}
			a->ext[i].len -= len;
			if (!a->ext[i].len) {
				memmove(&a->ext[i], &a->ext[i + 1], (a->next - i - 1) * sizeof(*a->ext));
				a->next--;
			}
			a->free_bytes -= len;
			return 0;
		}
		*frag = a->free_bytes >= len;
		return -1;
	}
	}
	return -1;
}

static void alloc_give(struct alloc *a, const struct hold *h)
{
	const struct ring_spec *rs = a->rs;

	switch (rs->kind) {
	case AL_ENTRY:
		return;
	case AL_RING:
		a->free_bufs++;
		return;
	case AL_CLASSES:
		a->class_free[h->cls]++;
		return;
	case AL_POOL: {
		size_t i = 0;

		while (i < a->next && a->ext[i].off < h->off)
			i++;
		bool left = i > 0 && a->ext[i - 1].off + a->ext[i - 1].len == h->off;
		bool right = i < a->next && h->off + h->bytes == a->ext[i].off;

		if (left && right) {
			a->ext[i - 1].len += h->bytes + a->ext[i].len;
			memmove(&a->ext[i], &a->ext[i + 1], (a->next - i - 1) * sizeof(*a->ext));
			a->next--;
		} else if (left) {
			a->ext[i - 1].len += h->bytes;
		} else if (right) {
			a->ext[i].off = h->off;
			a->ext[i].len += h->bytes;
		} else {
			if (a->next == a->cap) {
				struct extent *n = realloc(a->ext, 2 * a->cap * sizeof(*n));

				if (!n) {
					fprintf(stderr, "debate-sim: out of memory\n");
					exit(2);
				}
				a->ext = n;
				a->cap *= 2;
			}
			memmove(&a->ext[i + 1], &a->ext[i], (a->next - i) * sizeof(*a->ext));
			a->ext[i] = (struct extent){ h->off, h->bytes };
			a->next++;
		}
		a->free_bytes += h->bytes;
		return;
	}
	}
}

/* ---- the simulation --------------------------------------------------------- */

/* A list of request indices: the waiting list, a server thread's queue. */
struct list {
	int *v;
	size_t head, tail, cap;
};

static void list_push(struct list *l, int x)
{
	if (l->tail == l->cap) {
		if (l->head > 0) {
			memmove(l->v, l->v + l->head, (l->tail - l->head) * sizeof(*l->v));
			l->tail -= l->head;
			l->head = 0;
		} else {
			size_t nc = l->cap ? l->cap * 2 : 64;
			int *n = realloc(l->v, nc * sizeof(*n));

			if (!n) {
				fprintf(stderr, "debate-sim: out of memory\n");
				exit(2);
			}
			l->v = n;
			l->cap = nc;
		}
	}
	l->v[l->tail++] = x;
}

static size_t list_len(const struct list *l)
{
	return l->tail - l->head;
}

static void list_remove_at(struct list *l, size_t i)
{
	memmove(&l->v[l->head + i], &l->v[l->head + i + 1],
		(l->tail - l->head - i - 1) * sizeof(*l->v));
	l->tail--;
}

struct ring {
	const struct ring_spec *rs;
	struct alloc al;
	int free_entries;
	struct list waiting;	/* fuse_req_queue */
	struct list thread;	/* dispatched, not yet done: in service first */
	int in_service;		/* serial, batch: the request being worked on, -1 */
	size_t batch;		/* batch: requests of the current batch left */
	bool batch_large;	/* batch: the current batch holds a large request */
};

struct event {
	int64_t t;
	int kind;		/* 0 commit, 1 arrival: commits first */
	int idx;
};

struct state {
	const struct trace *t;
	const struct design *d;
	const struct sim_opts *o;
	struct ring *rings;	/* queue q, ring k: rings[q * nrings + k] */
	struct event *heap;
	size_t nheap, capheap;
	struct req_result *rr;
	struct hold *holds;
	int64_t now, last;
	uint64_t held, needsum;
	int inflight;
	struct sim_result *res;
	int *child_start, *child;	/* closed loop: who follows whom */
};

static struct req_result *last_rr;
static size_t last_n;

const struct req_result *sim_last_requests(void)
{
	return last_rr;
}

static bool ev_before(const struct event *a, const struct event *b)
{
	if (a->t != b->t)
		return a->t < b->t;
	if (a->kind != b->kind)
		return a->kind < b->kind;
	return a->idx < b->idx;
}

static void heap_push(struct state *s, int64_t t, int kind, int idx)
{
	if (s->nheap == s->capheap) {
		size_t nc = s->capheap ? s->capheap * 2 : 256;
		struct event *n = realloc(s->heap, nc * sizeof(*n));

		if (!n) {
			fprintf(stderr, "debate-sim: out of memory\n");
			exit(2);
		}
		s->heap = n;
		s->capheap = nc;
	}
	size_t i = s->nheap++;

	s->heap[i] = (struct event){ t, kind, idx };
	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (!ev_before(&s->heap[i], &s->heap[p]))
			break;
		struct event tmp = s->heap[p];

		s->heap[p] = s->heap[i];
		s->heap[i] = tmp;
		i = p;
	}
}

static struct event heap_pop(struct state *s)
{
	struct event top = s->heap[0];
	size_t i = 0;

	s->heap[0] = s->heap[--s->nheap];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < s->nheap && ev_before(&s->heap[l], &s->heap[m]))
			m = l;
		if (r < s->nheap && ev_before(&s->heap[r], &s->heap[m]))
			m = r;
		if (m == i)
			break;
		struct event tmp = s->heap[m];

		s->heap[m] = s->heap[i];
		s->heap[i] = tmp;
		i = m;
	}
	return top;
}

static bool is_small(const struct state *s, int i)
{
	return s->t->r[i].need <= s->o->small;
}

static bool is_large(const struct state *s, int i)
{
	return s->t->r[i].need > s->o->large;
}

/* Time passes: small requests behind a large one in a list gather HOL time. */
static void hol_list(struct state *s, const struct list *l, int64_t dt)
{
	bool large_ahead = false;

	for (size_t k = l->head; k < l->tail; k++) {
		int i = l->v[k];

		if (large_ahead && is_small(s, i))
			s->rr[i].hol += dt;
		if (is_large(s, i))
			large_ahead = true;
	}
}

/* SERVER_BATCH: nothing of a batch is committed before all of it is done,
 * so a large request in the batch holds up every small one in the thread's
 * list; without one, the list is as in hol_list(). */
static void hol_batch(struct state *s, const struct ring *rg, int64_t dt)
{
	if (!rg->batch_large) {
		hol_list(s, &rg->thread, dt);
		return;
	}
	for (size_t k = rg->thread.head; k < rg->thread.tail; k++)
		if (is_small(s, rg->thread.v[k]))
			s->rr[rg->thread.v[k]].hol += dt;
}

static void advance(struct state *s, int64_t t)
{
	int64_t dt = t - s->last;
	size_t nr = (size_t)s->t->nqueues * (size_t)s->d->nrings;

	if (dt > 0) {
		for (size_t k = 0; k < nr; k++) {
			hol_list(s, &s->rings[k].waiting, dt);
			if (s->o->server == SERVER_SERIAL)
				hol_list(s, &s->rings[k].thread, dt);
			else if (s->o->server == SERVER_BATCH)
				hol_batch(s, &s->rings[k], dt);
		}
	}
	s->last = t;
	s->now = t;
}

static void start_service(struct state *s, struct ring *rg, int i)
{
	rg->in_service = i;
	heap_push(s, s->now + s->t->r[i].svc, 0, i);
}

/* SERVER_BATCH: the thread takes every request in its list as one batch. */
static void start_batch(struct state *s, struct ring *rg)
{
	rg->batch = list_len(&rg->thread);
	rg->batch_large = false;
	for (size_t k = rg->thread.head; k < rg->thread.tail; k++)
		if (is_large(s, rg->thread.v[k]))
			rg->batch_large = true;
	if (rg->batch)
		start_service(s, rg, rg->thread.v[rg->thread.head]);
}

static void dispatch(struct state *s, struct ring *rg, int i)
{
	const struct req *r = &s->t->r[i];

	rg->free_entries--;
	s->rr[i].disp = s->now;
	s->res->queue_ticks += s->now - s->rr[i].arrive;
	if (s->rr[i].buf_waited)
		s->res->buf_wait_ticks += s->now - s->rr[i].first_refusal;
	if (s->rr[i].buf_waited && s->now - s->rr[i].first_refusal > s->res->buf_wait_max)
		s->res->buf_wait_max = s->now - s->rr[i].first_refusal;
	if (r->payload) {
		s->held += s->holds[i].bytes;
		s->needsum += r->need;
		if (s->held > s->res->peak_held)
			s->res->peak_held = s->held;
		if (s->needsum > s->res->peak_need)
			s->res->peak_need = s->needsum;
	}
	if (++s->inflight > s->res->peak_inflight)
		s->res->peak_inflight = s->inflight;
	if (s->o->server == SERVER_ASYNC) {
		heap_push(s, s->now + r->svc, 0, i);
		return;
	}
	list_push(&rg->thread, i);
	if (rg->in_service != -1)
		return;		/* busy, or committing a batch */
	if (s->o->server == SERVER_BATCH)
		start_batch(s, rg);
	else
		start_service(s, rg, rg->thread.v[rg->thread.head]);
}

/* Can request i go now: a free entry, and a buffer if it needs one. Marks
 * a refusal (a wait for a buffer) when only the buffer was missing. */
static bool try_take(struct state *s, struct ring *rg, int i)
{
	const struct req *r = &s->t->r[i];
	bool frag, up;

	if (!rg->free_entries)
		return false;
	if (!r->payload)
		return true;
	if (alloc_take(&rg->al, r->need, &s->holds[i], &frag, &up)) {
		if (!s->rr[i].buf_waited) {
			s->rr[i].buf_waited = true;
			s->rr[i].first_refusal = s->now;
			s->res->buf_waits++;
			if (frag)
				s->res->frag_waits++;
		}
		return false;
	}
	if (up)
		s->res->upgrades++;
	return true;
}

/* A commit freed an entry and a buffer: who takes them (see the top). */
static void serve_waiting(struct state *s, struct ring *rg)
{
	struct list *w = &rg->waiting;
	enum dispatch_policy p = s->o->policy;

	if (p == POLICY_HEAD) {
		if (list_len(w)) {
			int i = w->v[w->head];

			if (try_take(s, rg, i)) {
				w->head++;
				dispatch(s, rg, i);
			}
		}
		return;
	}
	for (size_t k = 0; k < list_len(w) && rg->free_entries;) {
		int i = w->v[w->head + k];
		/* POLICY_PASS: past the head only what needs no buffer */
		bool may = p == POLICY_SCAN || k == 0 || !s->t->r[i].payload;

		if (may && try_take(s, rg, i)) {
			list_remove_at(w, k);
			dispatch(s, rg, i);
		} else {
			k++;
		}
	}
}

static struct ring *ring_of(struct state *s, int i)
{
	const struct req *r = &s->t->r[i];
	int k = 0;

	if (s->d->nrings == 2)
		k = r->need <= s->d->route ? 0 : 1;
	s->rr[i].ring = k;
	return &s->rings[r->qid * s->d->nrings + k];
}

static void arrive(struct state *s, int i)
{
	struct ring *rg = ring_of(s, i);

	s->rr[i].arrive = s->now;
	if (!rg->free_entries)
		s->rr[i].entry_waited = true;
	if (try_take(s, rg, i)) {
		dispatch(s, rg, i);
		return;
	}
	if (s->rr[i].entry_waited)
		s->res->entry_waits++;
	list_push(&rg->waiting, i);
}

/* The kernel takes in request i's reply (fuse_uring_commit()). */
static void commit(struct state *s, struct ring *rg, int i)
{
	const struct req *r = &s->t->r[i];

	s->rr[i].end = s->now + (r->end - r->done);
	if (r->payload) {
		alloc_give(&rg->al, &s->holds[i]);
		s->held -= s->holds[i].bytes;
		s->needsum -= r->need;
	}
	s->inflight--;
	rg->free_entries++;
	serve_waiting(s, rg);
	/* closed loop: the requests that followed this one */
	for (int k = s->child_start[i]; k < s->child_start[i + 1]; k++) {
		int c = s->child[k];

		heap_push(s, s->rr[i].end + s->t->r[c].gap, 1, c);
	}
}

/* The server thread is done with request i. */
static void service_done(struct state *s, int i)
{
	struct ring *rg = &s->rings[s->t->r[i].qid * s->d->nrings + s->rr[i].ring];

	switch (s->o->server) {
	case SERVER_ASYNC:
		commit(s, rg, i);
		return;
	case SERVER_SERIAL:
		/* on to the next dispatched request, then the commit */
		rg->thread.head++;
		rg->in_service = -1;
		if (list_len(&rg->thread))
			start_service(s, rg, rg->thread.v[rg->thread.head]);
		commit(s, rg, i);
		return;
	case SERVER_BATCH:
		rg->in_service = -1;
		if (--rg->batch > 0) {
			/* the next of the batch: it sits right after i */
			size_t pos = rg->thread.head;

			while (rg->thread.v[pos] != i)
				pos++;
			start_service(s, rg, rg->thread.v[pos + 1]);
			return;
		}
		/* the whole batch is done: commit it, in order, then the next */
		{
			size_t n = 0;

			while (rg->thread.v[rg->thread.head + n] != i)
				n++;
			n++;
			/* commit() may dispatch into the list: take the batch first */
			int *b = malloc(n * sizeof(*b));

			if (!b) {
				fprintf(stderr, "debate-sim: out of memory\n");
				exit(2);
			}
			memcpy(b, &rg->thread.v[rg->thread.head], n * sizeof(*b));
			rg->thread.head += n;
			rg->in_service = -2;	/* committing: dispatch() must not start */
			for (size_t k = 0; k < n; k++)
				commit(s, rg, b[k]);
			free(b);
			rg->in_service = -1;
			start_batch(s, rg);
		}
		return;
	}
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static int64_t p99(int64_t *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_i64);
	return v[(n * 99 + 99) / 100 - 1];
}

int simulate(const struct trace *t, const struct design *d,
	     const struct sim_opts *o, struct sim_result *res)
{
	struct state s = { .t = t, .d = d, .o = o, .res = res };
	size_t n = t->n, nr = (size_t)t->nqueues * (size_t)d->nrings;
	int rc = 0;

	memset(res, 0, sizeof(*res));
	res->requests = n;
	res->reserved = design_reserved(d) * (uint64_t)t->nqueues;
	s.rings = calloc(nr, sizeof(*s.rings));
	s.rr = calloc(n + 1, sizeof(*s.rr));
	s.holds = calloc(n + 1, sizeof(*s.holds));
	s.child_start = calloc(n + 2, sizeof(*s.child_start));
	s.child = calloc(n + 1, sizeof(*s.child));
	if (!s.rings || !s.rr || !s.holds || !s.child_start || !s.child) {
		rc = -1;
		goto out;
	}
	for (size_t k = 0; k < nr; k++) {
		s.rings[k].rs = &d->ring[k % (size_t)d->nrings];
		s.rings[k].free_entries = s.rings[k].rs->entries;
		s.rings[k].in_service = -1;
		if (alloc_init(&s.rings[k].al, s.rings[k].rs)) {
			rc = -1;
			goto out;
		}
	}
	for (size_t i = 0; i < n; i++) {
		s.rr[i].first_refusal = -1;
		if (t->r[i].payload)
			res->with_payload++;
	}

	/* arrivals: at the trace's times (open), or after what they followed */
	for (size_t i = 0; i < n; i++) {
		int dep = o->replay == REPLAY_CLOSED ? t->r[i].dep : -1;

		if (dep >= 0)
			s.child_start[dep + 1]++;
		else
			heap_push(&s, t->r[i].send, 1, (int)i);
	}
	for (size_t i = 0; i < n; i++)
		s.child_start[i + 1] += s.child_start[i];
	{
		int *fill = calloc(n + 1, sizeof(*fill));

		if (!fill) {
			rc = -1;
			goto out;
		}
		for (size_t i = 0; i < n; i++) {
			int dep = o->replay == REPLAY_CLOSED ? t->r[i].dep : -1;

			if (dep >= 0)
				s.child[s.child_start[dep] + fill[dep]++] = (int)i;
		}
		free(fill);
	}

	s.last = n ? t->r[0].send : 0;
	for (;;) {
		while (s.nheap) {
			struct event e = heap_pop(&s);

			advance(&s, e.t);
			if (e.kind == 0)
				service_done(&s, e.idx);
			else
				arrive(&s, e.idx);
		}
		/* Nothing left to happen, yet requests wait: no commit will come
		 * to take them. Count it and let every ring try its list. */
		bool stuck = false;

		for (size_t k = 0; k < nr; k++) {
			if (list_len(&s.rings[k].waiting) && s.rings[k].free_entries) {
				size_t before = list_len(&s.rings[k].waiting);

				serve_waiting(&s, &s.rings[k]);
				if (list_len(&s.rings[k].waiting) < before) {
					res->kicks++;
					stuck = true;
				}
			}
		}
		if (!stuck)
			break;
	}
	for (size_t k = 0; k < nr; k++) {
		if (list_len(&s.rings[k].waiting)) {
			fprintf(stderr, "debate-sim: %s: %zu requests never dispatched\n",
				d->name, list_len(&s.rings[k].waiting));
			rc = -1;
		}
	}

	/* latencies */
	{
		int64_t *lat = malloc((n + 1) * sizeof(*lat));
		int64_t *slat = malloc((n + 1) * sizeof(*slat));
		int64_t first = INT64_MAX, last = INT64_MIN, sum = 0, ssum = 0;
		size_t ns = 0;

		if (!lat || !slat) {
			free(lat);
			free(slat);
			rc = -1;
			goto out;
		}
		for (size_t i = 0; i < n; i++) {
			const struct req_result *q = &s.rr[i];

			lat[i] = q->end - q->arrive;
			sum += lat[i];
			if (q->arrive < first)
				first = q->arrive;
			if (q->end > last)
				last = q->end;
			if (is_small(&s, (int)i)) {
				slat[ns++] = lat[i];
				ssum += lat[i];
			}
			if (q->hol > 0) {
				res->hol_small++;
				res->hol_ticks += q->hol;
			}
		}
		res->small = ns;
		res->lat_mean = n ? sum / (int64_t)n : 0;
		res->small_lat_mean = ns ? ssum / (int64_t)ns : 0;
		res->lat_p99 = p99(lat, n);
		res->small_lat_p99 = p99(slat, ns);
		res->makespan = n ? last - first : 0;
		free(lat);
		free(slat);
	}
out:
	if (s.rings)
		for (size_t k = 0; k < nr; k++) {
			alloc_fini(&s.rings[k].al);
			free(s.rings[k].waiting.v);
			free(s.rings[k].thread.v);
		}
	free(s.rings);
	free(s.heap);
	free(s.holds);
	free(s.child_start);
	free(s.child);
	free(last_rr);
	last_rr = s.rr;
	last_n = n;
	return rc;
}
