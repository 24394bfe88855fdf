// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * labs/02-buffer-rings/exercise.c: the checks of lab 02's TODOs, built with
 * the reader's copy of the server (scripts/exercise; make exercise-check
 * LAB=02). Each calls the reader's bufring.c on a made-up queue of 8 entries
 * and 4 payload buffers of 64 KiB, and says what the kernel would have made
 * of the result.
 */
#include "fuse-uring.h"
#include "exercise.h"

#include <errno.h>

#define DEPTH 8
#define NBUFS 4
#define PSIZE (64 * 1024)

/* TODO 1: the buffer-ring fields of REGISTER, in two modes. */
static void register_fields(enum srv_mode mode, uint64_t want_flags)
{
	struct io_uring_sqe sqe[2];
	struct fuse_uring_cmd_req *req = (void *)sqe[0].cmd;
	struct fake f;
	struct srv_ent *ent;
	char what[96];

	fake_queue(&f, mode, DEPTH, NBUFS, PSIZE);
	ent = &f.q.ents[5];
	bufring_ops.ent_init(ent);
	prep_fuse_cmd(sqe, ent, FUSE_IO_URING_CMD_REGISTER, 0);
	bufring_prep_register(sqe, ent);

	if (req->flags != want_flags)
		wrong("in %s mode REGISTER's flags are %#llx, expected %#llx, "
		      "the flags of that mode (bufring_register_flags()): the "
		      "kernel would set the queue up for another mode, or take "
		      "it for an iovec REGISTER", mode_name(mode),
		      (unsigned long long)req->flags,
		      (unsigned long long)want_flags);
	snprintf(what, sizeof(what), "REGISTER's init.buf_size (--payload-size "
		 "%d)", PSIZE);
	EXPECT_EQ(what, PSIZE, req->init.buf_size);
	snprintf(what, sizeof(what), "REGISTER's init.queue_depth (--queue-depth "
		 "%d)", DEPTH);
	EXPECT_EQ(what, DEPTH, req->init.queue_depth);
	EXPECT_EQ("entry 5's sqe->buf_index (its header slot)", 5,
		  sqe[0].buf_index);
	/* what prep_fuse_cmd() set must survive */
	EXPECT_EQ("sqe->cmd_op (set by prep_fuse_cmd(); keep it)",
		  FUSE_IO_URING_CMD_REGISTER, sqe[0].cmd_op);
	EXPECT_EQ("req->qid (set by prep_fuse_cmd(); keep it)", 1, req->qid);
	EXPECT_EQ("sqe->len (set by prep_fuse_cmd(); keep it)", 2, sqe[0].len);
}

static void check_register(void)
{
	register_fields(SRV_MODE_BUFRING, FUSE_URING_BUFRING);
	register_fields(SRV_MODE_PINNED_HEADERS,
			FUSE_URING_BUFRING | FUSE_URING_PINNED_HEADERS);
}

/* TODO 3: the payload by buf_id, for requests that have one. */
static void payload_of(struct fake *f, uint32_t opcode, uint32_t payload_sz,
		       unsigned int buf_id)
{
	struct srv_ent *ent = &f->q.ents[2];
	char *want = (char *)f->q.payload_mem + (size_t)buf_id * PSIZE;
	int ret;

	fake_request(ent, opcode, payload_sz, buf_id, 0);
	ret = bufring_find_payload(ent);
	if (ret) {
		wrong("a %s with buf_id %u: bufring_find_payload() returned %d, "
		      "expected 0", fuse_opcode_name(opcode), buf_id, ret);
		return;
	}
	if (!ent->req.payload && !bufring_req_has_buf(ent->header))
		wrong("a %s with buf_id %u: bufring_req_has_buf() (TODO 2) says "
		      "it has no buffer, so its payload is NULL",
		      fuse_opcode_name(opcode), buf_id);
	else if (!ent->req.payload)
		wrong("a %s with buf_id %u: the payload is NULL, expected the "
		      "payload region + %u x %d bytes: the server would find no "
		      "buffer and fail the request", fuse_opcode_name(opcode),
		      buf_id, buf_id, PSIZE);
	else if (ent->req.payload != want)
		wrong("a %s with buf_id %u: the payload is not the payload "
		      "region + %u x %d bytes: the server would read and write "
		      "another request's buffer", fuse_opcode_name(opcode),
		      buf_id, buf_id, PSIZE);
	if (ent->req.buf != (int)buf_id)
		wrong("a %s with buf_id %u: ent->req.buf is %d, expected %u "
		      "(--trace prints it as buf=)", fuse_opcode_name(opcode),
		      buf_id, ent->req.buf, buf_id);
}

static void check_payload(void)
{
	struct fake f;
	struct srv_ent *ent;
	int ret;

	fake_queue(&f, SRV_MODE_BUFRING, DEPTH, NBUFS, PSIZE);
	payload_of(&f, FUSE_WRITE, 4096, 3);
	payload_of(&f, FUSE_WRITE, 100, 1);
	payload_of(&f, FUSE_READ, 0, 0);	/* a READ's reply needs one */
	payload_of(&f, FUSE_READ, 0, 2);

	/* a buf_id past the region: refuse, never point outside it */
	ent = &f.q.ents[2];
	fake_request(ent, FUSE_WRITE, 4096, NBUFS, 0);
	ret = bufring_find_payload(ent);
	if (ret != -EPROTO)
		wrong("a WRITE with buf_id %d, one past the queue's %d buffers: "
		      "bufring_find_payload() returned %d, expected -EPROTO (%d)",
		      NBUFS, NBUFS, ret, -EPROTO);
	else if (ent->req.payload)
		wrong("a WRITE with buf_id %d, past the region: payload is set, "
		      "expected NULL", NBUFS);
}

/* TODO 2: which requests were lent a buffer; buf_id 0 in every case. */
static void has_buf(uint32_t opcode, uint32_t payload_sz, uint64_t flags,
		    bool want, const char *why)
{
	struct fake f;
	bool got;

	fake_queue(&f, SRV_MODE_ZERO_COPY, DEPTH, NBUFS, PSIZE);
	fake_request(&f.q.ents[0], opcode, payload_sz, 0, flags);
	got = bufring_req_has_buf(f.q.ents[0].header);
	if (got != want)
		wrong("a %s%s with payload_sz %u: bufring_req_has_buf() says %s, "
		      "expected %s: %s", flags ? "zero-copied " : "",
		      fuse_opcode_name(opcode), payload_sz, got ? "true" : "false",
		      want ? "true" : "false", why);
}

static void check_has_buf(void)
{
	has_buf(FUSE_WRITE, 4096, 0, true, "its data is in the buffer");
	has_buf(FUSE_READ, 0, 0, true,
		"the data it reads back goes in the buffer (out args)");
	has_buf(FUSE_GETATTR, 0, 0, true,
		"its reply, fuse_attr_out, goes in the buffer (out args)");
	has_buf(FUSE_FLUSH, 0, 0, false,
		"no arguments after its header and no reply data: the kernel "
		"lent it nothing, and buf_id 0 may be another entry's buffer");
	has_buf(FUSE_RELEASE, 0, 0, false,
		"no payload either way: buf_id 0 means none here");
	/* opcode 7 was never used: fuse_op_info() has no row for it */
	has_buf(7, 0, 0, false,
		"an opcode the table does not know has no reply data to hold");
	has_buf(FUSE_READ, 0, FUSE_URING_ENT_ZERO_COPY, false,
		"a zero-copied READ's data goes straight to the caller's pages");
	has_buf(FUSE_WRITE, 4096, FUSE_URING_ENT_ZERO_COPY, true,
		"a zero-copied WRITE still gets a buffer, for its reply "
		"(fuse_write_out)");
}

EXERCISE_MAIN({ 1, check_register }, { 2, check_has_buf }, { 3, check_payload })
