// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * tests/uapi-errors/pinned.c: pinned headers and pinned payload buffers
 * (kernel patches 0005, 0006). What its cases prove:
 *   - pinned-*: flags without a buffer ring, misaligned regions,
 *     RLIMIT_MEMLOCK exactly enough and a page short (-ENOMEM), a refusal
 *     that pins nothing, regions larger than the queue uses (charged only
 *     what it uses);
 *   - control-pinned-every-queue-getattr: the well-formed set-up with both
 *     regions pinned carries a request, as the unpinned control does.
 *
 * The RLIMIT_MEMLOCK cases turn CAP_IPC_LOCK off in this thread's
 * effective set and lower its RLIMIT_MEMLOCK soft limit for one REGISTER,
 * and put them back after it: the kernel checks them in the task that
 * submits, which is this one (io_uring issues the command inline).
 */
#include <errno.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "cases.h"
#include "server.h"

/* ---- capabilities and RLIMIT_MEMLOCK ------------------------------------ */

/*
 * One REGISTER of a pinned queue without CAP_IPC_LOCK, under an
 * RLIMIT_MEMLOCK soft limit of limit bytes: the kernel charges the pinned
 * pages to the user's locked memory (account_pinned_pages(), "if
 * (new_pages > page_limit) return -ENOMEM;"). Returns the command's
 * result; the capability and the limit are back as they were after it.
 */
static int register_without_ipc_lock(const char *name, struct conn *c,
				     const struct reg *r, rlim_t limit)
{
	struct rlimit old, rl;
	int res, err;

	if (getrlimit(RLIMIT_MEMLOCK, &old) < 0)
		return fail(name, "set-up: getrlimit: %s", strerror(errno)), NOT_SUBMITTED;
	rl = (struct rlimit){ .rlim_cur = limit, .rlim_max = old.rlim_max };
	if (setrlimit(RLIMIT_MEMLOCK, &rl) < 0)
		return fail(name, "set-up: setrlimit: %s", strerror(errno)), NOT_SUBMITTED;
	err = cap_effective(CAP_IPC_LOCK, false);
	if (err) {
		setrlimit(RLIMIT_MEMLOCK, &old);
		return fail(name, "set-up: drop CAP_IPC_LOCK: %s", strerror(-err)),
		       NOT_SUBMITTED;
	}
	res = do_register(c, r);
	cap_effective(CAP_IPC_LOCK, true);
	setrlimit(RLIMIT_MEMLOCK, &old);
	return res;
}

/* The pages a pinned queue of the well-formed layout pins, in bytes. */
static size_t pinned_bytes(const struct qmem *q)
{
	return page_round(q->iov[0].iov_len) + page_round(q->iov[1].iov_len);
}

/*
 * A pinned flag without FUSE_URING_BUFRING, on 7.2's per-entry layout:
 * there is no headers or payload region to pin. Kernel: init_flags_valid(),
 * "if ((init_flags & pinned) && !(init_flags & FUSE_URING_BUFRING)) return
 * false;" -> fuse_uring_register() returns -EINVAL.
 */
static void pinned_without_bufring(const char *name, uint64_t flag)
{
	struct qmem q;
	struct conn c;
	struct reg r;

	if (qmem_iovec(name, &q))
		return;
	r = reg_iovec(0, &q);
	r.flags = flag;
	if (conn_open(&c, name) == 0) {
		expect_res(name, -EINVAL, do_register(&c, &r));
		conn_close(&c);
	}
	qmem_free(&q);
}

void case_pinned_headers_without_bufring(const char *name)
{
	pinned_without_bufring(name, FUSE_URING_PINNED_HEADERS);
}

void case_pinned_buffers_without_bufring(const char *name)
{
	pinned_without_bufring(name, FUSE_URING_PINNED_BUFFERS);
}

/*
 * A pinned region one byte past a page boundary. Unpinned, the same
 * headers region is accepted (headers-misaligned-accepted-and-served);
 * pinned, the kernel maps whole pages and wants the region to start one.
 * Kernel: fuse_bufring_pin_mem(), "if (!PAGE_ALIGNED(addr)) return
 * -EINVAL;".
 */
static void bend_pinned_headers_misaligned(struct reg *r, struct qmem *q)
{
	r->flags |= FUSE_URING_PINNED_HEADERS;
	q->iov[0].iov_base = (char *)q->hmap + 1;	/* the spare byte */
}

void case_pinned_headers_misaligned(const char *name)
{
	first_register(name, -EINVAL, bend_pinned_headers_misaligned);
}

static void bend_pinned_buffers_misaligned(struct reg *r, struct qmem *q)
{
	r->flags |= FUSE_URING_PINNED_BUFFERS;
	/* still a whole buffer: only the alignment is wrong */
	q->iov[1].iov_base = (char *)q->pmap + 1;
	q->iov[1].iov_len -= 1;
}

void case_pinned_buffers_misaligned(const char *name)
{
	first_register(name, -EINVAL, bend_pinned_buffers_misaligned);
}

/*
 * Both regions pinned, RLIMIT_MEMLOCK exactly their pages, no
 * CAP_IPC_LOCK: accepted, and /proc/self/status shows the pages as VmPin.
 * The limit counts every process of the user: this passes only if nothing
 * else holds pinned pages (a leak from an earlier connection would fail
 * it), so it runs before the other pinned cases.
 */
void case_pinned_memlock_exact(const char *name)
{
	struct qmem q;
	struct conn c;
	struct reg r;
	long before, after;
	int res;

	if (qmem_good(name, &q))
		return;
	q.flags |= PINNED;
	r = reg_bufring(0, 0, &q);
	if (conn_open(&c, name) == 0) {
		before = vmpin_kb();
		res = register_without_ipc_lock(name, &c, &r, pinned_bytes(&q));
		after = vmpin_kb();
		if (res == NOT_SUBMITTED)
			;	/* failed already */
		else if (res != ACCEPTED)
			expect_res(name, ACCEPTED, res);
		else if (after - before != (long)(pinned_bytes(&q) / 1024))
			fail(name, "VmPin grew by %ld kB, the regions have %zu kB",
			     after - before, pinned_bytes(&q) / 1024);
		else {
			printf("# %s: RLIMIT_MEMLOCK %zu B, VmPin %ld -> %ld kB\n",
			       name, pinned_bytes(&q), before, after);
			pass(name);
		}
		conn_close(&c);
	}
	qmem_free(&q);
}

/* One page less than the regions pin: -ENOMEM, whatever else is pinned. */
void case_pinned_over_memlock(const char *name)
{
	struct qmem q;
	struct conn c;
	struct reg r;
	int res;

	if (qmem_good(name, &q))
		return;
	q.flags |= PINNED;
	r = reg_bufring(0, 0, &q);
	if (conn_open(&c, name) == 0) {
		res = register_without_ipc_lock(name, &c, &r,
						pinned_bytes(&q) - page_size);
		if (res != NOT_SUBMITTED)
			expect_res(name, -ENOMEM, res);
		conn_close(&c);
	}
	qmem_free(&q);
}

/*
 * The same refusal (-ENOMEM, over RLIMIT_MEMLOCK) as the first REGISTER
 * of a server whose FUSE_INIT reply set FUSE_HAS_URING_BUFRING: io_uring
 * stays on (kernel patch 0020), and the server steps down to unpinned
 * regions on the same connection. Before 0020 the second REGISTER got
 * -EOPNOTSUPP.
 */
void case_register_retry_after_enomem(const char *name)
{
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct conn c;
	struct reg r;
	int res;

	if (!qs || qs_alloc(name, qs, qmem_good))
		goto out;
	if (conn_open_init(&c, name, INIT_URING_RETRY) == 0) {
		qs[0].flags |= PINNED;
		r = reg_bufring(0, 0, &qs[0]);
		res = register_without_ipc_lock(name, &c, &r,
						pinned_bytes(&qs[0]) - page_size);
		qs[0].flags = FUSE_URING_BUFRING;
		if (res == -ENOMEM)
			retry_and_serve(name, &c, qs, "pinned regions over "
					"RLIMIT_MEMLOCK were refused with -ENOMEM", 0);
		else if (res != NOT_SUBMITTED)
			expect_res(name, -ENOMEM, res);
		conn_close(&c);
	}
out:
	if (qs)
		qs_free(qs);
}

/*
 * Regions larger than the queue uses: a headers region of 16 pages for
 * DEPTH slots of 288 bytes, or a payload region with max_payload - 1 bytes
 * after its last whole buffer. RLIMIT_MEMLOCK is exactly what the queue
 * uses, no CAP_IPC_LOCK: accepted, and VmPin grows by exactly that. The
 * kernel pins, maps and charges the slots and the whole buffers only
 * (kernel patches 0005, 0006: fuse_uring_bufring_setup(), "queue_depth *
 * sizeof(struct fuse_uring_req_header)" and "(size_t)nr_bufs * buf_size");
 * it used to take each region's whole iov_len, and this REGISTER got
 * -ENOMEM.
 */
static void pinned_region_larger(const char *name, size_t headers_extra,
				 size_t payload_extra)
{
	size_t used, hlen, plen;
	struct qmem q;
	struct conn c;
	struct reg r;
	long before, after;
	int res;

	if (qmem_good(name, &q))
		return;
	used = page_round(q.iov[0].iov_len) + page_round(q.iov[1].iov_len);
	hlen = q.iov[0].iov_len + headers_extra;
	plen = q.iov[1].iov_len + payload_extra;
	munmap(q.hmap, q.hmap_len);
	munmap(q.pmap, q.pmap_len);
	q.hmap_len = page_round(hlen);
	q.pmap_len = page_round(plen);
	q.hmap = map_anon(q.hmap_len, PROT_READ | PROT_WRITE);
	q.pmap = map_anon(q.pmap_len, PROT_READ | PROT_WRITE);
	if (!q.hmap || !q.pmap) {
		fail(name, "set-up: mmap: %s", strerror(errno));
		goto out;
	}
	q.iov[0] = (struct iovec){ q.hmap, hlen };
	q.iov[1] = (struct iovec){ q.pmap, plen };
	q.flags |= PINNED;
	r = reg_bufring(0, 0, &q);
	if (conn_open(&c, name) == 0) {
		before = vmpin_kb();
		res = register_without_ipc_lock(name, &c, &r, used);
		after = vmpin_kb();
		if (res == NOT_SUBMITTED)
			;	/* failed already */
		else if (res != ACCEPTED)
			fail(name, "regions of %zu and %zu B, RLIMIT_MEMLOCK %zu B (what "
			     "the queue uses): expected accepted, got %d (%s)",
			     hlen, plen, used, res, strerror(res < 0 ? -res : 0));
		else if (after - before != (long)(used / 1024))
			fail(name, "VmPin grew by %ld kB, the queue uses %zu kB",
			     after - before, used / 1024);
		else {
			printf("# %s: regions %zu + %zu B, VmPin +%ld kB\n",
			       name, hlen, plen, after - before);
			pass(name);
		}
		conn_close(&c);
	}
out:
	qmem_free(&q);
}

void case_pinned_headers_region_larger(const char *name)
{
	pinned_region_larger(name, 16 * page_size, 0);
}

void case_pinned_buffers_region_larger(const char *name)
{
	pinned_region_larger(name, 0, max_payload - 1);
}

/* Resident pages of [p, p + len), by mincore(); -1 on error. */
static long resident_pages(void *p, size_t len)
{
	size_t n = len / page_size, i;
	unsigned char *vec = malloc(n);
	long count = 0;

	if (!vec)
		return -1;
	if (mincore(p, len, vec) < 0) {
		free(vec);
		return -1;
	}
	for (i = 0; i < n; i++)
		count += vec[i] & 1;
	free(vec);
	return count;
}

/*
 * A payload region of 32 MiB the server never touched, RLIMIT_MEMLOCK one
 * page, no CAP_IPC_LOCK: -ENOMEM, and not one page of the region was
 * faulted in. The kernel checks the limit before it pins (kernel patch
 * 0005: fuse_bufring_pin_mem() calls account_pinned_pages() first); it used
 * to pin first, and pinning for writing faults every page in: a server
 * without privileges made the kernel allocate, pin and map any amount of
 * memory for the length of each REGISTER.
 */
void case_pinned_over_memlock_pins_nothing(const char *name)
{
	const size_t len = 32 << 20;
	struct qmem q;
	struct conn c;
	struct reg r;
	long resident;
	int res;

	if (qmem_good(name, &q))
		return;
	munmap(q.pmap, q.pmap_len);
	q.pmap_len = len;
	q.pmap = map_anon(len, PROT_READ | PROT_WRITE);
	if (!q.pmap) {
		fail(name, "set-up: mmap: %s", strerror(errno));
		goto out;
	}
	q.iov[1] = (struct iovec){ q.pmap, len };
	q.flags |= PINNED;
	r = reg_bufring(0, 0, &q);
	if (conn_open(&c, name) == 0) {
		res = register_without_ipc_lock(name, &c, &r, page_size);
		resident = resident_pages(q.pmap, len);
		if (res == NOT_SUBMITTED)
			;	/* failed already */
		else if (res != -ENOMEM)
			expect_res(name, -ENOMEM, res);
		else if (resident != 0)
			fail(name, "-ENOMEM, but %ld of the region's %zu pages were "
			     "faulted in: the kernel pinned before it checked the limit",
			     resident, len / page_size);
		else
			pass(name);
		conn_close(&c);
	}
out:
	qmem_free(&q);
}

/*
 * The positive control with both regions pinned: the kernel reads the
 * GETATTR's headers from, and writes its reply to, the pinned mappings.
 */
void case_control_pinned(const char *name)
{
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct served s;
	struct conn c;

	if (!qs || qs_alloc(name, qs, alloc_pinned) || conn_open(&c, name))
		goto out;
	if (round_trip(name, &c, qs, &s) == 0)
		pass(name);
	conn_close(&c);
out:
	if (qs)
		qs_free(qs);
}

/*
 * Eight REGISTERs race to create one pinned queue: queue 0, entry ids 0-7,
 * 32 MiB of payload buffers, each from a thread and a ring of its own,
 * released together, with RLIMIT_MEMLOCK at one and a half times what the
 * queue pins and no CAP_IPC_LOCK (a capability is per thread: each racer
 * drops it). Each first REGISTER used to pin and charge the regions before
 * it looked whether another had created the queue meanwhile, so the losers
 * of the race met a full RLIMIT_MEMLOCK and got -ENOMEM (which, before the
 * ring is ready, switches io_uring off for the connection). With the
 * queues created under ring->create_lock (kernel patch "create an io-uring
 * queue once when REGISTERs race"), the first pins once, the others find
 * its queue: all eight are accepted, and VmPin grows by exactly what one
 * queue pins.
 */
#define RACERS 8

struct racer {
	pthread_t th;
	pthread_barrier_t *go;
	struct conn c;		/* the connection's fd, a ring of its own */
	struct reg r;
	int res;
};

static void *race_register(void *arg)
{
	struct racer *rc = arg;

	rc->res = NOT_SUBMITTED;
	if (io_uring_queue_init(16, &rc->c.ring, IORING_SETUP_SQE128) ||
	    cap_effective(CAP_IPC_LOCK, false)) {
		pthread_barrier_wait(rc->go);
		return NULL;
	}
	pthread_barrier_wait(rc->go);
	/* the REGISTER runs inside io_uring_enter(): a refusal's CQE is there */
	rc->res = do_register(&rc->c, &rc->r);
	return NULL;
}

void case_register_race_pins_once(const char *name)
{
	static struct racer rcs[RACERS];
	pthread_barrier_t go;
	struct rlimit old, rl;
	struct qmem q;
	struct conn c;
	long before, after;
	int refused = 0, first_err = 0, unsure = 0, i;
	char buf[48];

	/* 32 MiB of buffers: pinning them takes long enough to race */
	if (qmem_alloc(name, &q, RACERS, max_payload, 32u << 20))
		return;
	q.flags |= PINNED;
	if (getrlimit(RLIMIT_MEMLOCK, &old) < 0) {
		fail(name, "set-up: getrlimit: %s", strerror(errno));
		goto out;
	}
	if (conn_open(&c, name))
		goto out;
	rl.rlim_cur = pinned_bytes(&q) * 3 / 2;
	/* as root, above the hard limit too (8 MiB by default) */
	rl.rlim_max = old.rlim_max > rl.rlim_cur ? old.rlim_max : rl.rlim_cur;
	if (setrlimit(RLIMIT_MEMLOCK, &rl) < 0) {
		fail(name, "set-up: RLIMIT_MEMLOCK %llu: %s",
		     (unsigned long long)rl.rlim_cur, strerror(errno));
		conn_close(&c);
		goto out;
	}
	before = vmpin_kb();
	pthread_barrier_init(&go, NULL, RACERS);
	for (i = 0; i < RACERS; i++) {
		rcs[i] = (struct racer){ .go = &go, .c = { .fd = c.fd },
					 .r = reg_bufring(0, (uint16_t)i, &q) };
		pthread_create(&rcs[i].th, NULL, race_register, &rcs[i]);
	}
	for (i = 0; i < RACERS; i++) {
		pthread_join(rcs[i].th, NULL);
		if (rcs[i].res == NOT_SUBMITTED)
			unsure++;
		else if (rcs[i].res != ACCEPTED && refused++ == 0)
			first_err = rcs[i].res;
	}
	pthread_barrier_destroy(&go);
	after = vmpin_kb();
	setrlimit(RLIMIT_MEMLOCK, &old);
	printf("# %s: %d REGISTERs from %d threads at once, %d refused%s%s, "
	       "VmPin %ld -> %ld kB, one queue pins %zu kB\n",
	       name, RACERS - unsure, RACERS, refused,
	       refused ? ", the first with " : "",
	       refused ? res_str(first_err, buf, sizeof(buf)) : "", before,
	       after, pinned_bytes(&q) / 1024);
	if (unsure)
		fail(name, "%d racers could not set up their ring or drop "
		     "CAP_IPC_LOCK", unsure);
	else if (refused)
		fail(name, "%d of the %d REGISTERs were refused, the first with %s",
		     refused, RACERS, res_str(first_err, buf, sizeof(buf)));
	else if (after - before != (long)(pinned_bytes(&q) / 1024))
		fail(name, "VmPin grew by %ld kB, one queue pins %zu kB",
		     after - before, pinned_bytes(&q) / 1024);
	else
		pass(name);
	/* the racers' rings hold their entries: gone with the rings */
	for (i = 0; i < RACERS; i++)
		if (rcs[i].res != NOT_SUBMITTED)
			io_uring_queue_exit(&rcs[i].c.ring);
	conn_close(&c);
out:
	qmem_free(&q);
}
