// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * labs/01-first-ring/exercise.c: the checks of lab 01's TODOs, built with
 * the reader's copy of the server (scripts/exercise; make exercise-check
 * LAB=01). Each calls the reader's code on a made-up iovec queue of 8
 * entries with 64 KiB payload buffers, on a made-up SQE128 ring.
 */
#include "fuse-uring.h"
#include "exercise.h"

#include <errno.h>

#define DEPTH 8
#define PSIZE (64 * 1024)

/* TODO 1: iov[0] the entry's header slot, iov[1] its payload buffer. */
static void check_buffers(void)
{
	struct fake f;
	struct srv_ent *ent;
	char *want;

	fake_queue(&f, SRV_MODE_IOVEC, DEPTH, 0, PSIZE);
	ent = &f.q.ents[3];
	want = (char *)f.q.payload_mem + 3 * PSIZE;
	iovec_ops.ent_init(ent);
	if (ent->iov[0].iov_base != ent->header)
		wrong("entry 3's iov[0] does not start at its header slot "
		      "(ent->header): the kernel would write requests elsewhere");
	EXPECT_EQ("entry 3's iov[0].iov_len (the header slot)",
		  sizeof(struct fuse_uring_req_header), ent->iov[0].iov_len);
	if (ent->payload != want)
		wrong("entry 3's payload is %s, expected slice 3 of the payload "
		      "region (payload_mem + 3 x %d)",
		      ent->payload ? "somewhere else" : "NULL", PSIZE);
	if (ent->iov[1].iov_base != want)
		wrong("entry 3's iov[1] does not start at its payload buffer, "
		      "slice 3 of the payload region");
	EXPECT_EQ("entry 3's iov[1].iov_len (its payload buffer, "
		  "--payload-size)", PSIZE, ent->iov[1].iov_len);
}

/*
 * Every byte of the SQE128 slot is what the command sets, and 0 elsewhere:
 * the kernel reads fields a stale byte would make wrong (flags, ioprio,
 * buf_index, the rest of struct fuse_uring_cmd_req). want is built here
 * from the protocol, field by field.
 */
static void slot_exact(const struct io_uring_sqe *got, struct srv_ent *ent,
		       uint32_t cmd_op, uint64_t commit_id, const char *cmd)
{
	struct io_uring_sqe want[2];
	struct fuse_uring_cmd_req *req = (void *)want[0].cmd;
	const unsigned char *g = (const void *)got, *w = (const void *)want;

	memset(want, 0, sizeof(want));
	want[0].opcode = IORING_OP_URING_CMD;
	want[0].fd = 42;
	want[0].cmd_op = cmd_op;
	if (cmd_op == FUSE_IO_URING_CMD_REGISTER) {
		want[0].addr = (uint64_t)(uintptr_t)ent->iov;
		want[0].len = 2;
	}
	req->qid = 1;
	req->commit_id = commit_id;
	want[0].user_data = got[0].user_data;	/* set outside the TODO */
	for (size_t i = 0; i < sizeof(want); i++) {
		if (g[i] != w[i]) {
			wrong("%s: byte %zu of the SQE128 slot is %#x, expected %#x "
			      "(clear both struct io_uring_sqe first, then set only "
			      "the command's fields)", cmd, i, g[i], w[i]);
			return;
		}
	}
}

/* TODO 2: the SQE of REGISTER and of COMMIT_AND_FETCH. */
static void check_sqe(void)
{
	struct io_uring_sqe sqe[2];
	struct fuse_uring_cmd_req *req = (void *)sqe[0].cmd;
	struct fake f;
	struct srv_ent *ent;

	fake_queue(&f, SRV_MODE_IOVEC, DEPTH, 0, PSIZE);
	ent = &f.q.ents[6];
	iovec_ops.ent_init(ent);

	memset(sqe, 0xa5, sizeof(sqe));		/* what the last command left */
	prep_fuse_cmd(sqe, ent, FUSE_IO_URING_CMD_REGISTER, 0);
	EXPECT_EQ("REGISTER's sqe->opcode (IORING_OP_URING_CMD)",
		  IORING_OP_URING_CMD, sqe[0].opcode);
	EXPECT_EQ("REGISTER's sqe->fd (the /dev/fuse fd, q->s->devfd)", 42,
		  sqe[0].fd);
	EXPECT_EQ("REGISTER's sqe->cmd_op", FUSE_IO_URING_CMD_REGISTER,
		  sqe[0].cmd_op);
	if (sqe[0].addr != (uint64_t)(uintptr_t)ent->iov)
		wrong("REGISTER's sqe->addr is not the address of the entry's "
		      "iovec pair (ent->iov)");
	EXPECT_EQ("REGISTER's sqe->len (two iovecs)", 2, sqe[0].len);
	EXPECT_EQ("REGISTER's req->qid (the queue's id)", 1, req->qid);
	EXPECT_EQ("REGISTER's req->flags (stock 7.2 has none; was the slot "
		  "cleared?)", 0, req->flags);
	EXPECT_EQ("REGISTER's sqe->flags (was the slot cleared?)", 0,
		  sqe[0].flags);
	slot_exact(sqe, ent, FUSE_IO_URING_CMD_REGISTER, 0, "REGISTER");
	memset(sqe, 0xa5, sizeof(sqe));
	prep_fuse_cmd(sqe, ent, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, 77);
	EXPECT_EQ("COMMIT_AND_FETCH's sqe->opcode", IORING_OP_URING_CMD,
		  sqe[0].opcode);
	EXPECT_EQ("COMMIT_AND_FETCH's sqe->cmd_op",
		  FUSE_IO_URING_CMD_COMMIT_AND_FETCH, sqe[0].cmd_op);
	EXPECT_EQ("COMMIT_AND_FETCH's req->commit_id (the request's)", 77,
		  req->commit_id);
	EXPECT_EQ("COMMIT_AND_FETCH's req->qid", 1, req->qid);
	EXPECT_EQ("COMMIT_AND_FETCH's sqe->addr (only REGISTER names "
		  "buffers)", 0, sqe[0].addr);
	EXPECT_EQ("COMMIT_AND_FETCH's sqe->len", 0, sqe[0].len);
	slot_exact(sqe, ent, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, 77,
		   "COMMIT_AND_FETCH");
}

/* TODO 3: the reply where the request was. */
static void check_reply(void)
{
	struct fake f;
	struct srv_ent *ent;
	struct fuse_uring_req_header *h;
	const struct fuse_out_header *oh;

	fake_queue(&f, SRV_MODE_IOVEC, DEPTH, 0, PSIZE);
	ent = &f.q.ents[0];
	h = ent->header;
	oh = (const void *)h->in_out;

	fake_request(ent, FUSE_GETATTR, 0, 0, 0);
	build_ring_reply(h, 99, 0, sizeof(struct fuse_attr_out));
	EXPECT_EQ("a GETATTR reply's fuse_out_header.unique", 99, oh->unique);
	EXPECT_EQ("a GETATTR reply's fuse_out_header.error", 0, oh->error);
	EXPECT_EQ("a GETATTR reply's fuse_out_header.len (header and data)",
		  sizeof(*oh) + sizeof(struct fuse_attr_out), oh->len);
	EXPECT_EQ("a GETATTR reply's ring_ent_in_out.payload_sz (the data "
		  "in the payload buffer)", sizeof(struct fuse_attr_out),
		  h->ring_ent_in_out.payload_sz);

	fake_request(ent, FUSE_LOOKUP, 6, 0, 0);
	build_ring_reply(h, 100, -ENOENT, 128);
	EXPECT_EQ("an error reply's fuse_out_header.error", -ENOENT, oh->error);
	EXPECT_EQ("an error reply's fuse_out_header.len (no data)", sizeof(*oh),
		  oh->len);
	EXPECT_EQ("an error reply's payload_sz (no data)", 0,
		  h->ring_ent_in_out.payload_sz);
	EXPECT_EQ("an error reply's fuse_out_header.unique", 100, oh->unique);
}

EXERCISE_MAIN({ 1, check_buffers }, { 2, check_sqe }, { 3, check_reply })
