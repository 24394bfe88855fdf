// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * tests/uapi-errors/commit.c: COMMIT_AND_FETCH, and the replies it
 * carries. What its cases prove:
 *   - COMMIT_AND_FETCH: an unknown commit_id, a double commit, the right
 *     commit_id on the other queue (-ENOENT), a qid past the last queue
 *     (-EINVAL), a queue never registered (-ENOTCONN); a commit with
 *     padding that is not 0 (-EINVAL); a refused commit leaves the request
 *     to the right one;
 *   - replies the kernel refuses (reply-*): payload_sz past the payload
 *     buffer (buffer ring and 7.2's iovec layout) or 0xffffffff, a positive
 *     error, a unique with the interrupt bit (stat(2) gets EINVAL; 7.2
 *     warned on the last), a wrong unique (ENOENT), padding that is not 0
 *     (EINVAL); each followed by a request served right on the same
 *     connection.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "server.h"

/*
 * A COMMIT_AND_FETCH whose commit_id names no request in flight (none was
 * ever sent). Kernel: fuse_uring_commit_fetch(), "req =
 * fuse_request_find(fpq, commit_id); err = -ENOENT; if (!req) { ...
 * return err;".
 */
void case_commit_unknown(const char *name)
{
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	unsigned int q;
	struct conn c;

	if (!qs || qs_alloc(name, qs, qmem_good) || conn_open(&c, name))
		goto out;
	for (q = 0; q < nr_queues; q++)
		if (setup_bufring_queue(name, &c, (uint16_t)q, &qs[q]))
			goto close;
	expect_res(name, -ENOENT, do_commit(&c, 0, 0, 4242));
close:
	conn_close(&c);
out:
	if (qs)
		qs_free(qs);
}

/*
 * A double commit: a COMMIT_AND_FETCH repeating the commit_id of a request
 * already answered (the first commit was accepted). The request has ended
 * and left the processing list. Kernel: the same fuse_request_find() line,
 * -ENOENT.
 */
void case_commit_stale(const char *name)
{
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct served s;
	struct conn c;

	if (!qs || qs_alloc(name, qs, qmem_good) || conn_open(&c, name))
		goto out;
	if (round_trip(name, &c, qs, &s) == 0)
		expect_res(name, -ENOENT, do_commit(&c, s.qid, s.ent, s.unique));
	conn_close(&c);
out:
	if (qs)
		qs_free(qs);
}

/*
 * A COMMIT_AND_FETCH with qid one past the last queue. Kernel:
 * fuse_uring_commit_fetch(), "if (qid >= ring->nr_queues) return -EINVAL;".
 */
void case_commit_qid_beyond_queues(const char *name)
{
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct conn c;

	if (!qs || qs_alloc(name, qs, qmem_good) || conn_open(&c, name))
		goto out;
	if (register_all(name, &c, qs) == 0)
		expect_res(name, -EINVAL, do_commit(&c, (uint16_t)nr_queues, 0, 4242));
	conn_close(&c);
out:
	if (qs)
		qs_free(qs);
}

/*
 * A COMMIT_AND_FETCH on a queue no REGISTER created (the ring exists since
 * FUSE_INIT, its queues do not). Kernel: fuse_uring_commit_fetch(), "queue
 * = READ_ONCE(ring->queues[qid]); if (!queue) return err;" with err =
 * -ENOTCONN.
 */
void case_commit_queue_not_registered(const char *name)
{
	struct conn c;

	if (conn_open(&c, name))
		return;
	expect_res(name, -ENOTCONN, do_commit(&c, 0, 0, 4242));
	conn_close(&c);
}

/*
 * The GETATTR round of the commit cases: every queue registered, stat(2)
 * answered with the commit bent by b, stat(2) getting our reply. Fills s
 * and returns 0, or returns -1 after failing the case.
 */
static int bent_commit_round(const char *name, const struct reply_bend *b,
			     struct served *s)
{
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct conn c;
	int err = -1;

	if (!qs || qs_alloc(name, qs, qmem_good) || conn_open(&c, name))
		goto out;
	if (register_all(name, &c, qs) == 0)
		err = stat_round(name, &c, qs, s, b, 0);
	conn_close(&c);
out:
	if (qs)
		qs_free(qs);
	return err;
}

/*
 * The commit_id of a request in flight, on the other queue: each queue
 * looks requests up in its own processing list. Kernel:
 * fuse_uring_commit_fetch(), "req = fuse_request_find(fpq, commit_id); err
 * = -ENOENT; if (!req) ... return err;" with fpq = &queue->fpq of the
 * queue named by qid. Asserted: -ENOENT, and the request is still there:
 * the COMMIT_AND_FETCH on the right queue is accepted and stat(2) gets our
 * reply.
 */
void case_commit_wrong_qid(const char *name)
{
	struct reply_bend b = { .wrong_qid_first = true };
	struct served s;

	if (!need_two_queues(name) && bent_commit_round(name, &b, &s) == 0)
		expect_res(name, -ENOENT, s.wrong_qid_res);
}

/*
 * The right COMMIT_AND_FETCH of a GETATTR, but from another process: one
 * that holds the /dev/fuse fd and has a ring of its own, but other memory.
 * The kernel copies the reply from the queue's regions at their addresses
 * in the committing task's memory, and the entry's next request into it,
 * so with a buffer ring only the process whose memory the regions are in
 * may commit (kernel patch "refuse io-uring commands from another
 * process's memory": fuse_uring_queue_mm_ok() -> -EINVAL). Before it,
 * the child's commit was accepted, and it answered the GETATTR with
 * whatever its own copy of the regions held. Then the right process
 * commits, and stat(2) gets its reply.
 */
void case_commit_from_another_process(const char *name)
{
	struct reply_bend b = { .other_process_commit_first = true };
	struct served s;

	if (bent_commit_round(name, &b, &s) == 0)
		expect_res(name, -EINVAL, s.other_process_res);
}

/* ---- replies the kernel refuses ------------------------------------------ */

static void poison_slots(struct qmem *qs)
{
	unsigned int q;

	for (q = 0; q < nr_queues; q++)
		memset(qs[q].iov[0].iov_base, POISON, qs[q].depth * HDR_SZ);
}

/*
 * A GETATTR answered with a reply bent by b: the COMMIT_AND_FETCH is
 * accepted (the command is fine), and the request ends with the kernel's
 * error, want_err, which stat(2) returns. Then, with the header slots
 * poisoned again, a second stat(2) is served right: the entry, its buffer
 * and the connection survived the bad reply.
 */
static void reply_case(const char *name, int (*alloc)(const char *, struct qmem *),
		       const struct reply_bend *b, int want_err)
{
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct served s;
	struct conn c;

	if (!qs || qs_alloc(name, qs, alloc) || conn_open(&c, name))
		goto out;
	if (register_all(name, &c, qs) == 0 &&
	    stat_round(name, &c, qs, &s, b, want_err) == 0) {
		poison_slots(qs);
		if (stat_round(name, &c, qs, &s, NULL, 0) == 0)
			pass(name);
	}
	conn_close(&c);
out:
	if (qs)
		qs_free(qs);
}

/*
 * ring_ent_in_out.payload_sz one byte more than the payload buffer (buffer
 * ring: init.buf_size; 7.2's layout: its payload iovec, max_payload_sz).
 * The kernel checks the size against what the request can take before it
 * copies a byte: fuse_uring_commit() -> fuse_uring_copy_from_ring() ->
 * fuse_copy_out_args(cs, args, payload_sz): "if (reqsize < nbytes || ...)
 * return -EINVAL;" (reqsize: GETATTR's fuse_attr_out), and
 * fuse_uring_req_end() ends the request with it: stat(2) fails with EINVAL.
 */
void case_reply_payload_sz_beyond_bufring(const char *name)
{
	struct reply_bend b = { .payload_sz_set = true, .payload_sz = max_payload + 1 };

	reply_case(name, qmem_good, &b, EINVAL);
}

void case_reply_payload_sz_beyond_iovec(const char *name)
{
	struct reply_bend b = { .payload_sz_set = true, .payload_sz = max_payload + 1 };

	reply_case(name, qmem_iovec, &b, EINVAL);
}

/* The same with payload_sz 0xffffffff: no overflow in the size check. */
void case_reply_payload_sz_u32_max(const char *name)
{
	struct reply_bend b = { .payload_sz_set = true, .payload_sz = UINT32_MAX };

	reply_case(name, qmem_good, &b, EINVAL);
}

/*
 * fuse_out_header.unique not the request's (bit 1 flipped). Kernel:
 * fuse_uring_out_header_has_err(), "err = -ENOENT; if (oh->unique !=
 * req->in.h.unique) { pr_warn_ratelimited("unique mismatch ...") ...":
 * stat(2) fails with ENOENT, and the kernel logs the warning line (not a
 * splat).
 */
void case_reply_unique_mismatch(const char *name)
{
	struct reply_bend b = { .unique_xor = 2 };

	reply_case(name, qmem_good, &b, ENOENT);
}

/*
 * fuse_out_header.unique the request's with bit 0, FUSE_INT_REQ_BIT, set:
 * an interrupt reply, though fuse-io-uring sends no FUSE_INTERRUPT. 7.2
 * masked the bit out, accepted the reply and hit WARN_ON_ONCE() (a server
 * could warn, or with panic_on_warn panic, the kernel at will); kernel
 * patch 0012 refuses it: fuse_uring_out_header_has_err(), "if (oh->unique &
 * FUSE_INT_REQ_BIT) { pr_warn_ratelimited(...); goto err; }" with err
 * -EINVAL: stat(2) fails with EINVAL, and the per-case kernel-log check
 * would catch the WARNING.
 */
void case_reply_interrupt_bit(const char *name)
{
	struct reply_bend b = { .unique_xor = 1 };

	reply_case(name, qmem_good, &b, EINVAL);
}

/*
 * fuse_out_header.error positive (5): an error is 0 or -errno. Kernel:
 * fuse_uring_out_header_has_err(), "err = -EINVAL; ... if (oh->error <=
 * -ERESTARTSYS || oh->error > 0) goto err;": stat(2) fails with EINVAL.
 */
void case_reply_error_positive(const char *name)
{
	struct reply_bend b = { .error = 5 };

	reply_case(name, qmem_good, &b, EINVAL);
}

/* ---- padding: bytes with no meaning yet must be 0 ------------------------ */

/*
 * Padding that is not 0 (register.c has the rule and the REGISTER cases):
 * cmd_req.padding of a COMMIT_AND_FETCH, fuse_uring_cmd(), "if
 * (READ_ONCE(cmd_req->padding)) return -EINVAL;"; ring_ent_in_out.padding
 * and .reserved of a reply, fuse_uring_copy_from_ring() (the request ends
 * with it: stat(2) fails with EINVAL). Each was accepted before kernel
 * patch 0004 refused it.
 */

/*
 * A COMMIT_AND_FETCH with cmd_req.padding 1: refused as a command, before
 * it looks the request up, so the request is still there: the same commit
 * with padding 0 is accepted and stat(2) gets our reply.
 */
void case_commit_cmd_padding(const char *name)
{
	struct reply_bend b = { .padded_commit_first = true };
	struct served s;

	if (bent_commit_round(name, &b, &s) == 0)
		expect_res(name, -EINVAL, s.padded_commit_res);
}

void case_reply_ent_padding(const char *name)
{
	struct reply_bend b = { .ent_padding = 1 };

	reply_case(name, qmem_good, &b, EINVAL);
}

/*
 * The same for ring_ent_in_out.reserved, which the kernel writes as 0 with
 * every request. Kernel: fuse_uring_copy_from_ring(), "if
 * (ring_in_out.padding || ring_in_out.reserved) return -EINVAL;".
 */
void case_reply_ent_reserved(const char *name)
{
	struct reply_bend b = { .ent_reserved = 1ULL << 63 };

	reply_case(name, qmem_good, &b, EINVAL);
}
