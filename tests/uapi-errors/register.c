// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * tests/uapi-errors/register.c: the connection and the REGISTER command.
 * What its cases prove:
 *   - control-bufring-every-queue-getattr: the well-formed set-up the other
 *     cases break one field at a time registers on every queue and carries
 *     a real request (a GETATTR from stat(2)) to the right header slot
 *     (pinned.c has the same control with both regions pinned). Without
 *     it, a refusal could just as well mean that the set-up was wrong;
 *   - the connection: FUSE_INIT offers FUSE_HAS_URING_BUFRING exactly when
 *     it offers FUSE_OVER_IO_URING; REGISTER before the FUSE_INIT reply
 *     (-EAGAIN, then accepted once INIT is answered), without
 *     FUSE_OVER_IO_URING in INIT and after a failed REGISTER (-EOPNOTSUPP),
 *     on a ring without SQE128, an unknown command op, an unknown flag, a
 *     qid past the last queue, padding that is not 0 (-EINVAL); a REGISTER
 *     refused once the ring is ready, which leaves the ring serving;
 *   - a REGISTER refused for want of a resource (-EPERM, -EBUSY; pinned.c
 *     has -ENOMEM) is tried again on the same connection when the server
 *     set FUSE_HAS_URING_BUFRING in its FUSE_INIT reply, and switches
 *     io_uring off when it did not (register-retry-*,
 *     register-eperm-without-retry-flag-switches-off);
 *   - queues that disagree (cross-queue-*, same-queue-*: -EINVAL).
 */
#include <errno.h>
#include <linux/capability.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cases.h"
#include "server.h"

/* ---- the controls and the connection ------------------------------------ */

/*
 * Positive control: a well-formed buffer ring on every queue registers
 * (every SQE stays queued, no CQE), and a GETATTR arrives on it in the
 * header slot of the entry whose REGISTER completed, with a buffer the
 * kernel picked, and our reply reaches stat(2).
 */
void case_control(const char *name)
{
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct served s;
	struct conn c;

	if (!qs || qs_alloc(name, qs, qmem_good) || conn_open(&c, name))
		goto out;
	if (round_trip(name, &c, qs, &s) == 0) {
		printf("# control: GETATTR unique %llu on queue %u, entry %u (header "
		       "slot %u), kernel-chosen buf_id %u; stat(2) got st_size %#llx\n",
		       (unsigned long long)s.unique, s.qid, s.ent, s.ent, s.buf_id,
		       MARKER_SIZE);
		pass(name);
	}
	conn_close(&c);
out:
	if (qs)
		qs_free(qs);
}

/*
 * A server must know that the kernel reads the REGISTER flags before it
 * uses a buffer ring: a kernel without the series takes a buffer-ring
 * REGISTER for an iovec one, and every entry shares header slot 0. Patch 14
 * offers FUSE_HAS_URING_BUFRING in FUSE_INIT whenever it offers
 * FUSE_OVER_IO_URING (fuse_new_init(): "flags |= FUSE_OVER_IO_URING |
 * FUSE_HAS_URING_BUFRING;"), and neither with enable_uring off.
 */
void case_init_offers_has_uring_bufring(const char *name)
{
	const char *what;
	struct conn c;
	int err;

	if (conn_open(&c, name))
		return;
	conn_close(&c);
	if (!(init_offered & FUSE_HAS_URING_BUFRING)) {
		fail(name, "FUSE_INIT offered %#llx: FUSE_OVER_IO_URING without "
		     "FUSE_HAS_URING_BUFRING (%#llx)",
		     (unsigned long long)init_offered,
		     (unsigned long long)FUSE_HAS_URING_BUFRING);
		return;
	}
	if (!set_enable_uring('0')) {
		fail(name, "set-up: cannot write %s", ENABLE_URING);
		return;
	}
	init_offered = 0;
	if (conn_open_init(&c, name, INIT_LATER) == 0) {
		err = answer_init(c.fd, INIT_NO_URING, &what);
		conn_close(&c);
		if (err != -EOPNOTSUPP)
			fail(name, "enable_uring off: FUSE_INIT offered %#llx "
			     "(answer_init: %d), expected no FUSE_OVER_IO_URING",
			     (unsigned long long)init_offered, err);
		else if (init_offered & FUSE_HAS_URING_BUFRING)
			fail(name, "enable_uring off: FUSE_INIT offered "
			     "FUSE_HAS_URING_BUFRING (%#llx) without "
			     "FUSE_OVER_IO_URING",
			     (unsigned long long)init_offered);
		else
			pass(name);
	}
	if (!set_enable_uring('1'))
		fail(name, "clean-up: cannot write %s", ENABLE_URING);
}

/*
 * A flag bit other than FUSE_URING_BUFRING. Bit 63: v2's later patches
 * define bits 1-3, this one stays unknown whatever the series grows to.
 * Kernel: fuse_uring_register(), "if (!init_flags_valid(init_flags))
 * return -EINVAL;".
 */
void case_unknown_flag(const char *name)
{
	struct qmem q;
	struct conn c;
	struct reg r;

	if (qmem_good(name, &q))
		return;
	if (conn_open(&c, name) == 0) {
		r = reg_bufring(0, 0, &q);
		r.flags |= 1ULL << 63;
		expect_res(name, -EINVAL, do_register(&c, &r));
		conn_close(&c);
	}
	qmem_free(&q);
}

/*
 * REGISTER before the FUSE_INIT reply was written: the mount sent FUSE_INIT,
 * the server has not answered, so the ring is not sized yet. Kernel:
 * fuse_uring_cmd(), "if (!smp_load_acquire(&fch->initialized)) return
 * -EAGAIN;". fuse_uring_cmd() returns before its REGISTER branch, so this
 * does not switch io_uring off: io_uring punts the -EAGAIN to io-wq
 * (uring_cmd has no poll to wait on), which issues it once more, gets
 * -EAGAIN again and posts that as the CQE; hence the longer wait. Asserted:
 * exactly -EAGAIN, and after we answer FUSE_INIT the same REGISTER is
 * accepted (so the -EAGAIN was about INIT, not about the REGISTER).
 */
void case_register_before_init(const char *name)
{
	const char *what;
	struct qmem q;
	struct conn c;
	struct reg r;
	char buf[48];
	int res, err;

	if (qmem_good(name, &q))
		return;
	if (conn_open_init(&c, name, INIT_LATER) == 0) {
		r = reg_bufring(0, 0, &q);
		res = do_register_ms(&c, &r, REQUEST_MS);
		if (res != -EAGAIN) {
			expect_res(name, -EAGAIN, res);
		} else if ((err = answer_init(c.fd, INIT_URING, &what))) {
			fail(name, "set-up: %s: %s", what, strerror(-err));
		} else {
			res = do_register(&c, &r);
			if (res == ACCEPTED)
				pass(name);
			else
				fail(name, "-EAGAIN before FUSE_INIT, but after it the "
				     "REGISTER got %s, not accepted",
				     res_str(res, buf, sizeof(buf)));
		}
		conn_close(&c);
	}
	qmem_free(&q);
}

/*
 * A FUSE_INIT reply without FUSE_OVER_IO_URING: the connection has no ring,
 * and fch->io_uring stays 0. Kernel: fuse_uring_cmd(), "if
 * (!fch->io_uring) { ... "fuse-io-uring not enabled on this connection" ...
 * return -EOPNOTSUPP;" (enable_uring is on, main() set it).
 */
void case_register_without_over_io_uring(const char *name)
{
	struct qmem q;
	struct conn c;
	struct reg r;

	if (qmem_good(name, &q))
		return;
	if (conn_open_init(&c, name, INIT_NO_URING) == 0) {
		r = reg_bufring(0, 0, &q);
		expect_res(name, -EOPNOTSUPP, do_register(&c, &r));
		conn_close(&c);
	}
	qmem_free(&q);
}

/*
 * A well-formed REGISTER after a failed one: the failure switched io_uring
 * off for the connection. Kernel: fuse_uring_cmd(), REGISTER branch, "if
 * (err) { ... fch->io_uring = 0;", then for the next command "if
 * (!fch->io_uring) ... return -EOPNOTSUPP;". The failed one is
 * queue-depth-zero's (-EINVAL, asserted as a set-up step).
 */
void case_register_after_failed_register(const char *name)
{
	struct qmem q;
	struct conn c;
	struct reg r;
	char buf[48];
	int res;

	if (qmem_good(name, &q))
		return;
	if (conn_open(&c, name) == 0) {
		r = reg_bufring(0, 0, &q);
		r.depth = 0;
		res = do_register(&c, &r);
		if (res != -EINVAL) {
			fail(name, "set-up: REGISTER with queue_depth 0: expected "
			     "-EINVAL, got %s", res_str(res, buf, sizeof(buf)));
		} else {
			r = reg_bufring(0, 0, &q);
			expect_res(name, -EOPNOTSUPP, do_register(&c, &r));
		}
		conn_close(&c);
	}
	qmem_free(&q);
}

/*
 * A refused REGISTER once the ring is ready (every queue has entries, and
 * requests go to the ring): entry id 0 of queue 0 again, which is in use
 * (-EBUSY). It is refused alone (kernel patch 0013: fuse_uring_cmd()
 * clears fch->io_uring only "if (!READ_ONCE(fch->ring->ready))"): a
 * stat(2) afterwards is served on the ring. 7.2 switched io_uring off for
 * the connection on any refused REGISTER; after the ring was ready the
 * GETATTR still went to the ring, and its COMMIT_AND_FETCH got
 * -EOPNOTSUPP: the request waited for an abort.
 */
void case_register_refused_after_ready(const char *name)
{
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct served s;
	struct conn c;
	struct reg r;
	char buf[48];
	int res;

	if (!qs || qs_alloc(name, qs, qmem_good) || conn_open(&c, name))
		goto out;
	if (register_all(name, &c, qs) == 0) {
		r = reg_bufring(0, 0, &qs[0]);
		res = do_register(&c, &r);
		if (res != -EBUSY)
			fail(name, "set-up: REGISTER of entry 0 again: expected -EBUSY, "
			     "got %s", res_str(res, buf, sizeof(buf)));
		else if (stat_round(name, &c, qs, &s, NULL, 0) == 0)
			pass(name);
	}
	conn_close(&c);
out:
	if (qs)
		qs_free(qs);
}

/* ---- a REGISTER refused for want of a resource, then tried again -------- */

/*
 * Zero-copy asked for without CAP_SYS_ADMIN (-EPERM) as the connection's
 * first REGISTER, by a server whose FUSE_INIT reply set
 * FUSE_HAS_URING_BUFRING: io_uring stays on (kernel patch 0020:
 * fuse_uring_register_retryable()), and the server steps down to a plain
 * buffer ring on the same connection. Before 0020 the refusal switched
 * io_uring off, and the second REGISTER got -EOPNOTSUPP.
 */
static int register_zero_copy_without_cap(const char *name, struct conn *c,
					  struct qmem *q)
{
	struct reg r;
	int err, res;

	q->flags = ZERO_COPY_ALL;
	r = reg_bufring(0, 0, q);
	err = cap_effective(CAP_SYS_ADMIN, false);
	if (err) {
		q->flags = FUSE_URING_BUFRING;
		return fail(name, "set-up: drop CAP_SYS_ADMIN: %s", strerror(-err)),
		       NOT_SUBMITTED;
	}
	res = do_register(c, &r);
	cap_effective(CAP_SYS_ADMIN, true);
	q->flags = FUSE_URING_BUFRING;
	return res;
}

void case_register_retry_after_eperm(const char *name)
{
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct conn c;
	int res;

	if (!qs || qs_alloc(name, qs, qmem_good))
		goto out;
	if (conn_open_init(&c, name, INIT_URING_RETRY) == 0) {
		res = register_zero_copy_without_cap(name, &c, &qs[0]);
		if (res == -EPERM)
			retry_and_serve(name, &c, qs, "zero-copy without "
					"CAP_SYS_ADMIN was refused with -EPERM", 0);
		else if (res != NOT_SUBMITTED)
			expect_res(name, -EPERM, res);
		conn_close(&c);
	}
out:
	if (qs)
		qs_free(qs);
}

/*
 * An entry id in use (-EBUSY) before the ring is ready: queue 0's entry 0
 * twice, while the other queues have no entry yet. With the retry flag
 * the next REGISTER, entry 1, is accepted and the ring gets ready. Needs
 * a second queue: with one, the first REGISTER makes the ring ready, and
 * a refusal after that fails alone anyway (patch 0013).
 */
void case_register_retry_after_ebusy(const char *name)
{
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct conn c;
	struct reg r;
	int res;

	if (!qs || need_two_queues(name) || qs_alloc(name, qs, qmem_good))
		goto out;
	if (conn_open_init(&c, name, INIT_URING_RETRY) == 0) {
		r = reg_bufring(0, 0, &qs[0]);
		if (setup_register(name, &c, &r) == 0) {
			res = do_register(&c, &r);
			if (res == -EBUSY)
				retry_and_serve(name, &c, qs, "entry 0 of queue 0 "
						"again was refused with -EBUSY", 1);
			else
				expect_res(name, -EBUSY, res);
		}
		conn_close(&c);
	}
out:
	if (qs)
		qs_free(qs);
}

/*
 * The same -EPERM for a server whose FUSE_INIT reply did not set
 * FUSE_HAS_URING_BUFRING (libfuse, or any v2 client): io_uring goes off
 * as before, so that a server which falls back to /dev/fuse gets its
 * requests there. Kernel: fuse_uring_register_refused().
 */
void case_register_eperm_without_retry_flag(const char *name)
{
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct conn c;
	struct reg r;
	int res;

	if (!qs || qs_alloc(name, qs, qmem_good))
		goto out;
	if (conn_open(&c, name) == 0) {
		res = register_zero_copy_without_cap(name, &c, &qs[0]);
		r = reg_bufring(0, 0, &qs[0]);
		if (res == -EPERM)
			expect_res(name, -EOPNOTSUPP, do_register(&c, &r));
		else if (res != NOT_SUBMITTED)
			expect_res(name, -EPERM, res);
		conn_close(&c);
	}
out:
	if (qs)
		qs_free(qs);
}

/* ---- one process's memory per queue ------------------------------------- */

static int register_in(struct conn *c2, const void *arg)
{
	return do_register(c2, arg);
}

/*
 * A buffer-ring queue's first REGISTER brings its regions, at addresses in
 * the registering process's memory. A second process that holds the
 * /dev/fuse fd (forked here; passed over SCM_RIGHTS would do the same) and
 * registers entry 1 of that queue from its own ring would have the kernel
 * copy its requests to those addresses in its own memory, where nothing
 * of the queue is; in pinned mode, into the first process's pages.
 * Refused with -EINVAL (kernel patch "refuse io-uring commands from
 * another process's memory": fuse_uring_queue_mm_ok()); before it, the
 * REGISTER was accepted.
 */
void case_register_from_another_process(const char *name)
{
	struct qmem q;
	struct conn c;
	struct reg r;

	if (qmem_good(name, &q))
		return;
	if (conn_open(&c, name) == 0) {
		r = reg_bufring(0, 0, &q);
		if (setup_register(name, &c, &r) == 0) {
			r = reg_bufring(0, 1, &q);
			expect_res(name, -EINVAL,
				   in_other_process(name, &c, register_in, &r));
		}
		conn_close(&c);
	}
	qmem_free(&q);
}

/* ---- padding: bytes with no meaning yet must be 0 ------------------------ */

/*
 * The uapi's padding: cmd_req.padding (every command), cmd_req.init.padding
 * (REGISTER) and ring_ent_in_out.padding (a reply). 7.2 and the v2 series
 * never read them, so a server could leave anything there, and no later
 * kernel could give those bytes a meaning without breaking it. Refused with
 * -EINVAL (kernel patch 0004): fuse_uring_cmd(), "if
 * (READ_ONCE(cmd_req->padding)) return -EINVAL;", fuse_uring_register(),
 * "if (!init_flags_valid(init_flags) || READ_ONCE(cmd_req->init.padding))
 * return -EINVAL;", and
 * fuse_uring_copy_from_ring(), "if (ring_in_out.padding) return -EINVAL;"
 * (the request ends with it: stat(2) fails with EINVAL). Every case here
 * was accepted before that patch refused it.
 */
static void bend_cmd_padding(struct reg *r, struct qmem *q)
{
	(void)q;
	r->padding = 1;
}

void case_register_cmd_padding(const char *name)
{
	first_register(name, -EINVAL, bend_cmd_padding);
}

static void bend_init_padding(struct reg *r, struct qmem *q)
{
	(void)q;
	r->init_padding = 0x8000;
}

void case_register_init_padding(const char *name)
{
	first_register(name, -EINVAL, bend_init_padding);
}

/* 7.2's layout has the same bytes: a 7.2 server that zeroes its SQEs is fine */
void case_register_cmd_padding_iovec(const char *name)
{
	struct qmem q;
	struct conn c;
	struct reg r;

	if (qmem_iovec(name, &q))
		return;
	r = reg_iovec(0, &q);
	r.padding = 1;
	if (conn_open(&c, name) == 0) {
		expect_res(name, -EINVAL, do_register(&c, &r));
		conn_close(&c);
	}
	qmem_free(&q);
}

/* ---- the command: queue id, ring, op -------------------------------------- */

/*
 * A qid one past the last queue (one queue per possible CPU). Kernel:
 * fuse_uring_register(), "if (qid >= ring->nr_queues) { ... return
 * -EINVAL;".
 */
static void bend_qid_beyond_queues(struct reg *r, struct qmem *q)
{
	(void)q;
	r->qid = (uint16_t)nr_queues;
}

void case_register_qid_beyond_queues(const char *name)
{
	first_register(name, -EINVAL, bend_qid_beyond_queues);
}

/*
 * The well-formed REGISTER on a ring without IORING_SETUP_SQE128: its SQEs
 * have no room for struct fuse_uring_cmd_req. Kernel: fuse_uring_cmd(),
 * "if (!(issue_flags & IO_URING_F_SQE128)) return -EINVAL;" (io_uring_cmd()
 * sets that flag only for an SQE128 ring). The SQE is 64 bytes: only they
 * are cleared and filled, the command's fields cannot be sent.
 */
void case_register_without_sqe128(const char *name)
{
	struct io_uring ring64;
	struct io_uring_sqe *sqe;
	struct qmem q;
	struct conn c;
	int err, res;

	if (qmem_good(name, &q))
		return;
	if (conn_open(&c, name) == 0) {
		err = io_uring_queue_init(4, &ring64, 0);
		if (err) {
			fail(name, "set-up: io_uring_queue_init(64-byte SQEs): %s",
			     strerror(-err));
		} else {
			sqe = io_uring_get_sqe(&ring64);
			if (!sqe)
				abort();	/* a fresh ring has SQEs */
			memset(sqe, 0, sizeof(*sqe));
			sqe->opcode = IORING_OP_URING_CMD;
			sqe->fd = c.fd;
			sqe->cmd_op = FUSE_IO_URING_CMD_REGISTER;
			sqe->addr = (uintptr_t)q.iov;
			sqe->len = 2;
			sqe->user_data = UD(UD_REGISTER, 0, 0);
			if (io_uring_submit(&ring64) != 1) {
				fail(name, "set-up: io_uring_submit failed");
			} else {
				struct __kernel_timespec ts = { .tv_sec = REQUEST_MS / 1000 };
				struct io_uring_cqe *cqe;

				/* a refusal comes inline; wait as for any CQE */
				do {
					err = io_uring_wait_cqe_timeout(&ring64, &cqe, &ts);
				} while (err == -EINTR);
				res = ACCEPTED;
				if (err == 0) {
					res = cqe->res;
					io_uring_cqe_seen(&ring64, cqe);
				}
				expect_res(name, -EINVAL, res);
			}
			io_uring_queue_exit(&ring64);
		}
		conn_close(&c);
	}
	qmem_free(&q);
}

/*
 * A command op FUSE does not know: FUSE_IO_URING_CMD_INVALID (0), which the
 * uapi reserves as never valid. Kernel: fuse_uring_cmd(), "default: return
 * -EINVAL;" (reached on an initialized io_uring connection).
 */
void case_unknown_cmd_op(const char *name)
{
	struct fuse_uring_cmd_req req = { .qid = 0 };
	uint64_t ud = UD(UD_REGISTER, 0, 0);
	struct conn c;

	if (conn_open(&c, name))
		return;
	if (!fuse_cmd_sqe(&c, FUSE_IO_URING_CMD_INVALID, &req, ud))
		fail(name, "set-up: no SQE");
	else
		expect_res(name, -EINVAL, submit_and_reap(&c, ud));
	conn_close(&c);
}

/* ---- queues that disagree -------------------------------------------------- */

/*
 * Queues of one connection that disagree (cross-queue cases): queue 0 is
 * registered first and must be accepted, which shows that its set-up is
 * valid on its own; queue 1 then differs from it in one respect only. The
 * set-ups used are each accepted somewhere as a first REGISTER: the
 * control's, the odd one in its own case (queue 0 here), the iovec one in
 * cross-queue-iovec-then-bufring. So the -EINVAL is for disagreeing. All
 * queues of a connection must agree on the flags, init.buf_size and
 * init.queue_depth: the first queue created fixes them. Kernel:
 * fuse_uring_create_queue(), "if (!fuse_uring_config_matches(ring, queue,
 * init_flags)) { ... return ERR_PTR(-EINVAL);". (A kernel before that
 * check fails these cases with "got accepted".)
 */
static void cross_queue(const char *name, struct qmem *q0, bool q0_bufring,
			struct qmem *q1, bool q1_bufring)
{
	struct conn c;
	struct reg r;

	if (need_two_queues(name) || conn_open(&c, name))
		return;
	r = q0_bufring ? reg_bufring(0, 0, q0) : reg_iovec(0, q0);
	if (setup_register(name, &c, &r) == 0) {
		r = q1_bufring ? reg_bufring(1, 0, q1) : reg_iovec(1, q1);
		expect_res(name, -EINVAL, do_register(&c, &r));
	}
	conn_close(&c);
}

/* Queue 0 with FUSE_URING_BUFRING, queue 1 without. */
void case_cross_bufring_then_iovec(const char *name)
{
	struct qmem q0, q1;

	if (qmem_good(name, &q0))
		return;
	if (qmem_iovec(name, &q1) == 0) {
		cross_queue(name, &q0, true, &q1, false);
		qmem_free(&q1);
	}
	qmem_free(&q0);
}

/* Queue 0 without FUSE_URING_BUFRING, queue 1 with it. */
void case_cross_iovec_then_bufring(const char *name)
{
	struct qmem q0, q1;

	if (qmem_iovec(name, &q0))
		return;
	if (qmem_good(name, &q1) == 0) {
		cross_queue(name, &q0, false, &q1, true);
		qmem_free(&q1);
	}
	qmem_free(&q0);
}

/* Queue 0 with buffers twice the size of queue 1's (the control's). */
void case_cross_buf_size(const char *name)
{
	struct qmem q0, q1;

	if (qmem_alloc(name, &q0, DEPTH, 2 * max_payload,
		       NBUFS * 2 * (size_t)max_payload))
		return;
	if (qmem_good(name, &q1) == 0) {
		cross_queue(name, &q0, true, &q1, true);
		qmem_free(&q1);
	}
	qmem_free(&q0);
}

/* Queue 0 twice as deep as queue 1 (the control's depth). */
void case_cross_queue_depth(const char *name)
{
	struct qmem q0, q1;

	if (qmem_alloc(name, &q0, 2 * DEPTH, max_payload,
		       NBUFS * (size_t)max_payload))
		return;
	if (qmem_good(name, &q1) == 0) {
		cross_queue(name, &q0, true, &q1, true);
		qmem_free(&q1);
	}
	qmem_free(&q0);
}

/*
 * One queue registered one way, then the other. The queue's first REGISTER
 * decides. Kernel: fuse_uring_register(), "else if
 * (!queue_init_flags_consistent(queue, init_flags)) return -EINVAL;".
 */
static void same_queue(const char *name, bool first_bufring)
{
	struct qmem good, iovec_q;
	struct conn c;
	struct reg first, second;

	if (qmem_good(name, &good))
		return;
	if (qmem_iovec(name, &iovec_q) == 0) {
		first = first_bufring ? reg_bufring(0, 0, &good) : reg_iovec(0, &iovec_q);
		second = first_bufring ? reg_iovec(0, &iovec_q) : reg_bufring(0, 1, &good);
		if (conn_open(&c, name) == 0) {
			if (setup_register(name, &c, &first) == 0)
				expect_res(name, -EINVAL, do_register(&c, &second));
			conn_close(&c);
		}
		qmem_free(&iovec_q);
	}
	qmem_free(&good);
}

void case_same_bufring_then_iovec(const char *name)
{
	same_queue(name, true);
}

void case_same_iovec_then_bufring(const char *name)
{
	same_queue(name, false);
}
