// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * labs/04-zero-copy/exercise.c: the checks of lab 04's TODOs, built with the
 * reader's copy of the server (scripts/exercise; make exercise-check
 * LAB=04). Each hands the reader's zero-copy hooks a zero-copied READ or
 * WRITE on a made-up queue of 8 entries, and reads the SQEs they put on a
 * made-up ring that is never submitted.
 */
#include "fuse-uring.h"
#include "exercise.h"

#include <errno.h>

#define DEPTH 8
#define PSIZE (64 * 1024)
#define SLOTS 4

static struct io_uring_sqe sqes[2 * SLOTS];

/* A zero-copied READ or WRITE in entry 4, as handle_request() passes it. */
struct zc {
	struct fake f;
	struct srv_ent *ent;
	struct fuse_read_in rd;
	struct fuse_write_in wr;
	struct srv_req r;
};

static void zc_request(struct zc *z, uint32_t opcode)
{
	fake_queue(&z->f, SRV_MODE_ZERO_COPY, DEPTH, DEPTH, PSIZE);
	fake_ring(&z->f.q, sqes, SLOTS);
	z->ent = &z->f.q.ents[4];
	fake_request(z->ent, opcode, opcode == FUSE_WRITE ? 10000 : 0, 2,
		     FUSE_URING_ENT_ZERO_COPY);
	z->ent->req = (struct srv_ent_req){
		.unique = 8, .commit_id = 8, .opcode = opcode,
		.payload_sz = opcode == FUSE_WRITE ? 10000 : 0, .buf = -1,
	};
	/* a WRITE has a buffer for its reply, a READ none */
	if (opcode == FUSE_WRITE) {
		z->ent->req.buf = 2;
		z->ent->req.payload = (char *)z->f.q.payload_mem + 2 * PSIZE;
	}
	z->rd = (struct fuse_read_in){ .fh = 7, .offset = 8192, .size = 65536 };
	z->wr = (struct fuse_write_in){ .fh = 9, .offset = 4096, .size = 10000 };
	z->r = (struct srv_req){
		.in = (const void *)z->ent->header->in_out,
		.arg = opcode == FUSE_READ ? (const void *)&z->rd :
					     (const void *)&z->wr,
	};
}

/* The request's operation: sqes[0], the first SQE the hook took. */
static void fixed_op(uint32_t opcode, int op, int fd, unsigned int len,
		     uint64_t off)
{
	const char *name = fuse_opcode_name(opcode);
	struct zc z;
	int err = 0;
	bool taken;
	char what[96];

	zc_request(&z, opcode);
	taken = zero_copy_ops.take_request(z.ent, &z.r, &err);
	if (!taken) {
		wrong("a zero-copied %s: take_request() returned false (err %d): "
		      "it must submit the fixed operation and return true",
		      name, err);
		return;
	}
	/* the fixed operation, and the commit linked behind it */
	if (z.f.q.ring.sq.sqe_tail != 2) {
		wrong("a zero-copied %s: take_request() took %u SQEs, expected 2 "
		      "(the fixed operation, then the commit linked to it)",
		      name, z.f.q.ring.sq.sqe_tail);
		return;
	}
	snprintf(what, sizeof(what), "a zero-copied %s's sqe->opcode", name);
	EXPECT_EQ(what, op, sqes[0].opcode);
	snprintf(what, sizeof(what), "a zero-copied %s's sqe->fd (the fh)", name);
	EXPECT_EQ(what, fd, sqes[0].fd);
	snprintf(what, sizeof(what), "a zero-copied %s's sqe->buf_index (the "
		 "entry id)", name);
	EXPECT_EQ(what, 4, sqes[0].buf_index);
	snprintf(what, sizeof(what), "a zero-copied %s's sqe->addr (offset 0 "
		 "of the fixed buffer)", name);
	EXPECT_EQ(what, 0, sqes[0].addr);
	snprintf(what, sizeof(what), "a zero-copied %s's sqe->len (its size)",
		 name);
	EXPECT_EQ(what, len, sqes[0].len);
	snprintf(what, sizeof(what), "a zero-copied %s's sqe->off (its file "
		 "offset)", name);
	EXPECT_EQ(what, off, sqes[0].off);
}

/* TODO 1: READ_FIXED and WRITE_FIXED with the request's fields. */
static void check_fixed_ops(void)
{
	struct zc z;
	int err = 0;

	fixed_op(FUSE_READ, IORING_OP_READ_FIXED, 7, 65536, 8192);
	fixed_op(FUSE_WRITE, IORING_OP_WRITE_FIXED, 9, 10000, 4096);
	/* only READ and WRITE are ever marked zero-copy */
	zc_request(&z, FUSE_GETATTR);
	if (zero_copy_ops.take_request(z.ent, &z.r, &err) || err != -EPROTO)
		wrong("a GETATTR marked zero-copied: take_request() must refuse "
		      "it with *err = -EPROTO (got %d)", err);
}

/* TODO 2: the fixed operation's CQE comes back to zero_copy_io_done(). */
static void check_tag(void)
{
	struct zc z;
	int err = 0;

	zc_request(&z, FUSE_READ);
	if (!zero_copy_ops.take_request(z.ent, &z.r, &err))
		return;		/* TODO 1's check says why */
	if (sqes[0].user_data != ((uint64_t)(uintptr_t)z.ent | UD_MODE_IO))
		wrong("the READ_FIXED's user_data is %#llx, expected the "
		      "entry's address with UD_MODE_IO set (%#llx): its CQE "
		      "would be taken for a FUSE command's",
		      (unsigned long long)sqes[0].user_data,
		      (unsigned long long)((uintptr_t)z.ent | UD_MODE_IO));
}

/* TODO 3: the reply and the commit once the operation completed. */
static void io_done(uint32_t opcode, int res, int want_err,
		    uint32_t want_payload_sz)
{
	const char *name = fuse_opcode_name(opcode);
	const struct fuse_out_header *oh;
	const struct fuse_uring_cmd_req *req = (const void *)sqes[0].cmd;
	struct zc z;
	char what[128];

	zc_request(&z, opcode);
	z.ent->req.zero_copied = true;
	zero_copy_ops.mode_io_done(z.ent, res);
	oh = (const void *)z.ent->header->in_out;
	snprintf(what, sizeof(what), "after a %s_FIXED of result %d, the "
		 "reply's error", opcode == FUSE_READ ? "READ" : "WRITE", res);
	EXPECT_EQ(what, want_err, oh->error);
	snprintf(what, sizeof(what), "after a %s_FIXED of result %d, the "
		 "reply's payload_sz", opcode == FUSE_READ ? "READ" : "WRITE", res);
	EXPECT_EQ(what, want_payload_sz, z.ent->header->ring_ent_in_out.payload_sz);
	if (opcode == FUSE_WRITE && !want_err) {
		const struct fuse_write_out *wo = z.ent->req.payload;

		EXPECT_EQ("the WRITE's fuse_write_out.size in its payload buffer",
			  res, wo->size);
	}
	snprintf(what, sizeof(what), "after the %s, the commit's cmd_op", name);
	EXPECT_EQ(what, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, sqes[0].cmd_op);
	snprintf(what, sizeof(what), "after the %s, the commit's commit_id", name);
	EXPECT_EQ(what, 8, req->commit_id);
}

/*
 * Linked, take_request() queues the commit at once, with the reply of an
 * operation that moves every byte: TODO 3's code, called with the size.
 */
static void linked_reply(uint32_t opcode, uint32_t want_payload_sz)
{
	const char *name = fuse_opcode_name(opcode);
	/* SQE128: each SQE takes two struct io_uring_sqe, so the second is [2] */
	const struct io_uring_sqe *commit = &sqes[2];
	const struct fuse_uring_cmd_req *req = (const void *)commit->cmd;
	struct zc z;
	int err = 0;
	char what[128];

	zc_request(&z, opcode);
	if (!zero_copy_ops.take_request(z.ent, &z.r, &err) ||
	    z.f.q.ring.sq.sqe_tail != 2)
		return;		/* TODO 1's check says why */
	snprintf(what, sizeof(what), "a zero-copied %s linked to its commit: "
		 "the reply's payload_sz", name);
	EXPECT_EQ(what, want_payload_sz,
		  z.ent->header->ring_ent_in_out.payload_sz);
	snprintf(what, sizeof(what), "a zero-copied %s: the second SQE's cmd_op "
		 "(the linked commit)", name);
	EXPECT_EQ(what, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, commit->cmd_op);
	snprintf(what, sizeof(what), "a zero-copied %s: the linked commit's "
		 "commit_id", name);
	EXPECT_EQ(what, 8, req->commit_id);
	/*
	 * The link is the server's, not a TODO's, but a reader's change can
	 * break it: without IOSQE_IO_LINK the commit may run before the
	 * data moved; without IOSQE_CQE_SKIP_SUCCESS every operation wakes
	 * the server, and a broken link posts a -ECANCELED CQE for the commit.
	 */
	snprintf(what, sizeof(what), "a zero-copied %s: the fixed operation's "
		 "sqe->flags (IOSQE_IO_LINK | IOSQE_CQE_SKIP_SUCCESS)", name);
	EXPECT_EQ(what, IOSQE_IO_LINK | IOSQE_CQE_SKIP_SUCCESS, sqes[0].flags);
	snprintf(what, sizeof(what), "a zero-copied %s: the linked commit's "
		 "sqe->flags (the end of the link)", name);
	EXPECT_EQ(what, 0, commit->flags);
}

/*
 * With --unlinked, take_request() queues the fixed operation alone, and
 * its CQE (no flags) brings the reply: zero_copy_io_done().
 */
static void unlinked(uint32_t opcode)
{
	const char *name = fuse_opcode_name(opcode);
	struct zc z;
	int err = 0;
	char what[128];

	zc_request(&z, opcode);
	z.f.o.unlinked = true;
	if (!zero_copy_ops.take_request(z.ent, &z.r, &err))
		return;		/* TODO 1's check says why */
	snprintf(what, sizeof(what), "a zero-copied %s with --unlinked: the "
		 "SQEs take_request() took (the fixed operation alone)", name);
	EXPECT_EQ(what, 1, z.f.q.ring.sq.sqe_tail);
	snprintf(what, sizeof(what), "a zero-copied %s with --unlinked: the "
		 "fixed operation's sqe->flags (none: its CQE is wanted)", name);
	EXPECT_EQ(what, 0, sqes[0].flags);
}

static void check_reply(void)
{
	linked_reply(FUSE_READ, 65536);
	linked_reply(FUSE_WRITE, sizeof(struct fuse_write_out));
	unlinked(FUSE_READ);
	unlinked(FUSE_WRITE);
	io_done(FUSE_READ, 65536, 0, 65536);
	io_done(FUSE_READ, 100, 0, 100);	/* a short read, at EOF */
	io_done(FUSE_WRITE, 10000, 0, sizeof(struct fuse_write_out));
	io_done(FUSE_READ, -EIO, -EIO, 0);
	io_done(FUSE_WRITE, -ENOSPC, -ENOSPC, 0);
}

EXERCISE_MAIN({ 1, check_fixed_ops }, { 2, check_tag }, { 3, check_reply })
