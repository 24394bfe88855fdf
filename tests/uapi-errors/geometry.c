// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * tests/uapi-errors/geometry.c: the buffer ring's geometry and its entry
 * ids. What its cases prove:
 *   - the buffer ring's geometry: queue_depth, buf_size, the headers and
 *     payload regions (-EINVAL, and what is accepted: 65535 buffers, a
 *     region not a multiple of buf_size, misaligned or unmapped headers);
 *   - entry ids (sqe->buf_index): past queue_depth, 65535 on the first
 *     REGISTER (-EINVAL), an id registered twice and a REGISTER more than
 *     queue_depth (-EBUSY).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cases.h"
#include "server.h"

/* ---- the buffer ring's geometry ----------------------------------------- */

/*
 * init.queue_depth 0. Kernel: fuse_uring_bufring_setup(),
 * "if (!queue_depth || !buf_size) return -EINVAL;".
 */
static void bend_depth_zero(struct reg *r, struct qmem *q)
{
	(void)q;
	r->depth = 0;
}

void case_depth_zero(const char *name)
{
	first_register(name, -EINVAL, bend_depth_zero);
}

/* init.buf_size 0. Kernel: the same line as queue_depth 0. */
static void bend_buf_size_zero(struct reg *r, struct qmem *q)
{
	(void)q;
	r->buf_size = 0;
}

void case_buf_size_zero(const char *name)
{
	first_register(name, -EINVAL, bend_buf_size_zero);
}

/*
 * init.queue_depth one more than the headers region (iov[0]) has slots
 * for. Kernel: fuse_uring_bufring_setup(), "if (headers_size < queue_depth
 * * sizeof(struct fuse_uring_req_header)) return -EINVAL;".
 */
static void bend_depth_beyond_headers(struct reg *r, struct qmem *q)
{
	r->depth = (uint16_t)(q->iov[0].iov_len / HDR_SZ + 1);
}

void case_depth_beyond_headers(const char *name)
{
	first_register(name, -EINVAL, bend_depth_beyond_headers);
}

/*
 * init.buf_size one byte short of the ring's max_payload_sz (the payload
 * region still holds NBUFS such buffers). Kernel: fuse_uring_bufring_setup(),
 * "if (buf_size < queue->ring->max_payload_sz) return -EINVAL;".
 */
static void bend_buf_size_short(struct reg *r, struct qmem *q)
{
	(void)q;
	r->buf_size = max_payload - 1;
}

void case_buf_size_short(const char *name)
{
	first_register(name, -EINVAL, bend_buf_size_short);
}

/*
 * A NULL payload region: a NULL buffer address is how the kernel marks an
 * entry without a buffer. Kernel: fuse_uring_bufring_setup(),
 * "if (!payload) return -EINVAL;".
 */
static void bend_payload_null(struct reg *r, struct qmem *q)
{
	(void)r;
	q->iov[1].iov_base = NULL;
}

void case_payload_null(const char *name)
{
	first_register(name, -EINVAL, bend_payload_null);
}

/*
 * A payload region one byte short of one buffer: floor(len / buf_size) is 0
 * buffers. Kernel: fuse_uring_bufring_setup(), "nr_bufs = payload_size /
 * buf_size; if (!nr_bufs || nr_bufs > U16_MAX) return -EINVAL;".
 */
static void bend_payload_short(struct reg *r, struct qmem *q)
{
	q->iov[1].iov_len = r->buf_size - 1;
}

void case_payload_short(const char *name)
{
	first_register(name, -EINVAL, bend_payload_short);
}

/*
 * The payload region as buffer ids see it: 65536 buffers do not fit the u16
 * buf_id, 65535 do. The region is reserved PROT_NONE (512 MiB of address
 * space, no memory): REGISTER only records addresses, and nothing is sent.
 * Kernel: the nr_bufs line above, "nr_bufs > U16_MAX".
 */
static void payload_nbufs(const char *name, size_t nbufs, int want)
{
	size_t len = nbufs * max_payload;
	void *region = map_anon(len, PROT_NONE);
	struct qmem q;
	struct conn c;
	struct reg r;

	if (!region) {
		fail(name, "set-up: mmap %zu MiB PROT_NONE: %s", len >> 20,
		     strerror(errno));
		return;
	}
	if (qmem_good(name, &q) == 0) {
		q.iov[1] = (struct iovec){ region, len };
		r = reg_bufring(0, 0, &q);
		if (conn_open(&c, name) == 0) {
			expect_res(name, want, do_register(&c, &r));
			conn_close(&c);
		}
		qmem_free(&q);
	}
	munmap(region, len);
}

void case_payload_too_many_bufs(const char *name)
{
	payload_nbufs(name, 65536, -EINVAL);
}

void case_payload_u16_max_bufs(const char *name)
{
	payload_nbufs(name, 65535, ACCEPTED);
}

/*
 * An entry id (sqe->buf_index) equal to init.queue_depth, after entry 0
 * set the queue up. Kernel: fuse_uring_create_ring_ent(),
 * "if (ent->id >= queue->bufring->queue_depth) { ... err = -EINVAL;".
 */
void case_entry_id_beyond_depth(const char *name)
{
	struct qmem q;
	struct conn c;
	struct reg r;

	if (qmem_good(name, &q))
		return;
	if (conn_open(&c, name) == 0) {
		r = reg_bufring(0, 0, &q);
		if (setup_register(name, &c, &r) == 0) {
			r.ent = q.depth;
			expect_res(name, -EINVAL, do_register(&c, &r));
		}
		conn_close(&c);
	}
	qmem_free(&q);
}

/*
 * A payload region of 1.5 buffers. The kernel does not require a multiple
 * of buf_size: fuse_uring_bufring_setup() takes "nr_bufs = payload_size /
 * buf_size", floor(1.5) = 1 buffer, and ignores the rest. Documented
 * behaviour, asserted as such: REGISTER is accepted on every queue, and a
 * request gets buffer 0, the only one.
 */
static int alloc_one_and_a_half(const char *name, struct qmem *q)
{
	return qmem_alloc(name, q, DEPTH, max_payload,
			  max_payload + (size_t)max_payload / 2);
}

void case_payload_not_multiple(const char *name)
{
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct served s;
	struct conn c;

	if (!qs || qs_alloc(name, qs, alloc_one_and_a_half) || conn_open(&c, name))
		goto out;
	if (round_trip(name, &c, qs, &s) == 0) {
		if (s.buf_id == 0)
			pass(name);
		else
			fail(name, "1.5 buffers make 1 (id 0), the kernel picked buf_id %u",
			     s.buf_id);
	}
	conn_close(&c);
out:
	if (qs)
		qs_free(qs);
}

/*
 * A headers region at an odd address. The kernel has no alignment check
 * (fuse_uring_bufring_setup() checks only the length) and copies headers
 * with copy_to_user()/copy_from_user(), which take any address. Asserted as
 * such: REGISTER is accepted and a request is served through the odd slot.
 */
static int alloc_misaligned(const char *name, struct qmem *q)
{
	if (qmem_good(name, q))
		return -1;
	q->iov[0].iov_base = (char *)q->hmap + 1;	/* qmem_alloc left a spare byte */
	return 0;
}

void case_headers_misaligned(const char *name)
{
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct served s;
	struct conn c;

	if (!qs || qs_alloc(name, qs, alloc_misaligned) || conn_open(&c, name))
		goto out;
	if (round_trip(name, &c, qs, &s) == 0) {
		printf("# misaligned headers at %p: GETATTR served on queue %u entry %u\n",
		       qs[s.qid].iov[0].iov_base, s.qid, s.ent);
		pass(name);
	}
	conn_close(&c);
out:
	if (qs)
		qs_free(qs);
}

/*
 * A headers region that is not mapped (munmap'ed after mmap). REGISTER
 * cannot tell: import_iovec() checks only that the range is user space.
 * The copy of the request's headers fails instead: copy_header_to_ring()
 * returns -EFAULT, fuse_uring_prepare_send() ends the request with it, and
 * fuse_uring_send_in_task() puts the entry back as available without a CQE.
 * Asserted as such: REGISTER accepted, stat(2) fails with EFAULT, the
 * server sees no CQE, and the kernel does not oops (the guest script checks
 * the log).
 */
void case_headers_unmapped(const char *name)
{
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct stat_job *j = NULL;
	bool joined = false;
	unsigned int q;
	struct conn c;
	uint64_t ud;
	int res;

	if (!qs || qs_alloc(name, qs, qmem_good) || conn_open(&c, name))
		goto out;
	if (stat_start(name, &j))	/* its stack mapped before the holes */
		goto close;
	for (q = 0; q < nr_queues; q++) {
		munmap(qs[q].hmap, qs[q].hmap_len);
		qs[q].hmap = NULL;
		if (setup_bufring_queue(name, &c, (uint16_t)q, &qs[q]))
			goto close;
	}
	stat_go(j);
	joined = stat_join(j, REQUEST_MS) == 0;
	if (!joined)
		fail(name, "stat(2) still blocked after %d ms", REQUEST_MS);
	else if (j->err != EFAULT)
		fail(name, "expected stat(2) to fail with EFAULT, got %s",
		     j->err ? strerror(j->err) : "success");
	else if (wait_cqe_ms(&c, ACCEPT_MS, &ud, &res) == 0)
		fail(name, "stat(2) got EFAULT, but the ring has a CQE: kind %u "
		     "q=%u ent=%u res %d", UD_KIND(ud), UD_QID(ud), UD_ENT(ud), res);
	else
		pass(name);
close:
	conn_close(&c);
	stat_end(j, joined);
out:
	if (qs)
		qs_free(qs);
}

/* ---- entry ids, in use -------------------------------------------------- */

/*
 * Entry id 1 registered twice on queue 0, while entry 0 is still free (so
 * it is the id that is refused, not the count). Kernel (patch 0011):
 * fuse_uring_create_ring_ent(), "if (test_and_set_bit(ent->id,
 * queue->bufring->ent_ids)) { ... "Entry id %u in use" ... err = -EBUSY;".
 */
void case_entry_id_in_use(const char *name)
{
	struct qmem q;
	struct conn c;
	struct reg r;

	if (qmem_good(name, &q))
		return;
	if (conn_open(&c, name) == 0) {
		r = reg_bufring(0, 1, &q);
		if (setup_register(name, &c, &r) == 0)
			expect_res(name, -EBUSY, do_register(&c, &r));
		conn_close(&c);
	}
	qmem_free(&q);
}

/*
 * One REGISTER more than init.queue_depth: every entry id 0..depth-1 is
 * registered (accepted), then one more. The kernel counts no entries; a
 * REGISTER needs an id below queue_depth that is free, and none is: entry
 * id 0 again gets -EBUSY (the same test_and_set_bit() line as
 * entry-id-in-use; an id >= depth is entry-id-beyond-queue-depth's
 * -EINVAL).
 */
void case_register_count_beyond_depth(const char *name)
{
	struct qmem q;
	struct conn c;
	struct reg r;

	if (qmem_good(name, &q))
		return;
	if (conn_open(&c, name) == 0) {
		if (setup_bufring_queue(name, &c, 0, &q) == 0) {
			r = reg_bufring(0, 0, &q);
			expect_res(name, -EBUSY, do_register(&c, &r));
		}
		conn_close(&c);
	}
	qmem_free(&q);
}

/*
 * sqe->buf_index 65535 (the largest a u16 holds) on the queue's first
 * REGISTER: the queue and its buffer ring are set up from it, then its
 * entry id is out of range. Kernel: fuse_uring_create_ring_ent(), "if
 * (ent->id >= queue->bufring->queue_depth) { ... err = -EINVAL;".
 */
static void bend_entry_id_u16_max(struct reg *r, struct qmem *q)
{
	(void)q;
	r->ent = UINT16_MAX;
}

void case_entry_id_u16_max(const char *name)
{
	first_register(name, -EINVAL, bend_entry_id_u16_max);
}
