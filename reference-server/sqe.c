// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * sqe.c: the SQEs every mode submits, and the --trace line of a ring
 * request. FUSE's commands are IORING_OP_URING_CMD on /dev/fuse, with the
 * command in the second half of an SQE128 slot.
 */
#include "fuse-uring.h"

#include <stdlib.h>
#include <string.h>

/* The command must fit the 80 bytes an SQE128 entry has after sqe->cmd. */
_Static_assert(sizeof(struct fuse_uring_cmd_req) <= 80,
	       "fuse_uring_cmd_req must fit sqe->cmd");
_Static_assert(_Alignof(struct srv_ent) > UD_MODE_IO,
	       "the low bit of an entry's address must be free");

/*
 * The SQ has 2 * queue_depth + 1 slots: two per entry (each has at most
 * two operations queued at once, zero-copy's fixed I/O and the commit
 * linked behind it) and one for the stop poll, so it cannot be full.
 */
struct io_uring_sqe *queue_sqe(struct srv_queue *q)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);

	if (!sqe) {
		fprintf(stderr, SRV_NAME ": queue %u: SQ full (bug)\n", q->qid);
		abort();
	}
	return sqe;
}

/* doc: sqe-begin */
/*
 * liburing 2.3 (Debian bookworm) has no io_uring_prep_uring_cmd(), so fill
 * the SQE by hand: IORING_OP_URING_CMD on /dev/fuse, the command in
 * cmd_op, struct fuse_uring_cmd_req in the 80-byte sqe->cmd area that only
 * an SQE128 ring has (fuse_uring_cmd() refuses others with -EINVAL).
 */
void prep_fuse_cmd(struct io_uring_sqe *sqe, struct srv_ent *ent,
		   uint32_t cmd_op, uint64_t commit_id)
{
	struct srv_queue *q = ent->queue;
	struct fuse_uring_cmd_req *req = (void *)sqe->cmd;

	/*
	 * exercise 01.2 begin: the SQE of a FUSE command
	 * hint: clear the whole SQE128 slot (two struct io_uring_sqe) first:
	 *       it holds the last command's fields. Then the uring_cmd
	 *       opcode on the /dev/fuse fd (q->s->devfd) and cmd_op. In req,
	 *       which lives in sqe->cmd: the queue's id and commit_id. A
	 *       REGISTER also points sqe->addr at the entry's iovec pair
	 *       (ent->iov), with sqe->len = 2.
	 * read: docs/stock-protocol.rst, "Registering an entry"
	 * stub: (void)q;
	 * stub: (void)req;
	 * stub: (void)commit_id;
	 */
	memset(sqe, 0, 2 * sizeof(*sqe));	/* an SQE128 slot */
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = q->s->devfd;
	sqe->cmd_op = cmd_op;
	if (cmd_op == FUSE_IO_URING_CMD_REGISTER) {
		/* iov[0] the header slot, iov[1] the payload; len must be 2 */
		sqe->addr = (uint64_t)(uintptr_t)ent->iov;
		sqe->len = 2;
	}
	/*
	 * COMMIT_AND_FETCH is the same in every mode but one: the kernel
	 * reads qid and commit_id, finds the entry by the request it answers,
	 * and knows its header slot and buffer itself. (7.3's fixed pool
	 * wants its fixed-buffer flag and index on every command: the mode's
	 * prep_commit hook.)
	 */
	req->qid = (uint16_t)q->qid;
	req->commit_id = commit_id;	/* ignored by REGISTER */
	/* exercise 01.2 end */
	if (cmd_op == FUSE_IO_URING_CMD_COMMIT_AND_FETCH &&
	    q->s->ops->prep_commit)
		q->s->ops->prep_commit(sqe, ent);
	io_uring_sqe_set_data(sqe, ent);
	ent->last_cmd = cmd_op;
}
/* doc: sqe-end */

const char *cmd_name(uint32_t cmd_op)
{
	return cmd_op == FUSE_IO_URING_CMD_REGISTER ?
	       "FUSE_IO_URING_CMD_REGISTER" :
	       "FUSE_IO_URING_CMD_COMMIT_AND_FETCH";
}

/*
 * One --trace line per ring request: in= is the request's payload_sz, out=
 * the reply's. With a buffer ring it adds the buffer the request had
 * (buf=N, buf=- for none; with a pool, the buffer at offset N x
 * --payload-size), with zero-copy whether its data was zero-copied
 * (zc=1: it was in the request's folios, moved by READ_FIXED/WRITE_FIXED).
 */
void trace_ring(const struct srv_ent *ent, size_t out_len, int err)
{
	const struct srv_queue *q = ent->queue;
	const struct srv_ent_req *r = &ent->req;
	enum srv_mode mode = q->s->opts->mode;
	char bufstr[16] = "", zcstr[8] = "";

	bool shared = mode_uses_bufring(mode) || mode_uses_pool(mode);

	if (shared && r->buf >= 0)
		snprintf(bufstr, sizeof(bufstr), " buf=%d", r->buf);
	else if (shared)
		snprintf(bufstr, sizeof(bufstr), " buf=-");
	if (mode_zero_copy(mode))
		snprintf(zcstr, sizeof(zcstr), " zc=%d", r->zero_copied);
	fprintf(stderr, "trace ring q=%u ent=%u op=%s unique=%llu "
		"commit_id=%llu arg=%zu in=%u out=%zu error=%d%s%s\n",
		q->qid, ent->id, fuse_opcode_name(r->opcode),
		(unsigned long long)r->unique,
		(unsigned long long)r->commit_id, r->arg_len, r->payload_sz,
		err ? 0 : out_len, err, bufstr, zcstr);
}
