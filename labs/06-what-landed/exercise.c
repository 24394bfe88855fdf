// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * labs/06-what-landed/exercise.c: the checks of lab 06's TODOs, built with
 * the reader's copy of the server (scripts/exercise; make exercise-check
 * LAB=06). Each calls the reader's pool.c, through pool_ops and
 * pool_zero_copy_ops, on a made-up queue of 8 entries and 4 pool buffers of
 * 64 KiB, and says what Linux 7.3 would have made of the result.
 *
 * This file, like every file of the server but pool.c, sees the v2
 * series' uapi (scripts/exercise builds it so). It reads the three fields
 * that only 7.3 names by their place: ent_zero_copy_buf_index is bytes
 * 24-25 of fuse_uring_cmd_req, offset bytes 20-23 of fuse_uring_ent_in_out,
 * and FOPEN_IO_URING_ZERO_COPY is 1 << 8 (docs/uapi.rst).
 */
#include "fuse-uring.h"
#include "exercise.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEPTH 8
#define NBUFS 4
#define PSIZE (64 * 1024)
#define FOPEN_ZERO_COPY_7_3 (1U << 8)

static uint16_t zero_copy_index(const struct io_uring_sqe *sqe)
{
	uint16_t v;

	memcpy(&v, (const char *)sqe->cmd + 24, sizeof(v));
	return v;
}

/* TODO 1: REGISTER and COMMIT_AND_FETCH in each pool mode. */
static void commands(enum srv_mode mode, const struct srv_mode_ops *ops,
		     bool fixed, uint16_t want_zc)
{
	struct io_uring_sqe sqe[2];
	struct fake f;
	struct srv_ent *ent;
	char what[128];

	fake_queue(&f, mode, DEPTH, NBUFS, PSIZE);
	f.s.ops = ops;
	ent = &f.q.ents[5];
	ops->ent_init(ent);
	prep_fuse_cmd(sqe, ent, FUSE_IO_URING_CMD_REGISTER, 0);
	ops->prep_register(sqe, ent);
	snprintf(what, sizeof(what), "in %s mode, REGISTER's sqe->uring_cmd_flags "
		 "(IORING_URING_CMD_FIXED for a fixed pool)", mode_name(mode));
	EXPECT_EQ(what, fixed ? IORING_URING_CMD_FIXED : 0u, sqe[0].uring_cmd_flags);
	snprintf(what, sizeof(what), "in %s mode, REGISTER's sqe->buf_index (the "
		 "pool's slot, POOL_FIXED_SLOT)", mode_name(mode));
	EXPECT_EQ(what, 0, sqe[0].buf_index);
	snprintf(what, sizeof(what), "in %s mode, entry 5's "
		 "ent_zero_copy_buf_index (0 but on a zero-copy queue: then "
		 "POOL_ENT_SLOT(ent))", mode_name(mode));
	EXPECT_EQ(what, want_zc, zero_copy_index(sqe));
	EXPECT_EQ("sqe->len (set by prep_fuse_cmd(); keep it)", 2, sqe[0].len);

	/* the commit: prep_fuse_cmd() calls the mode's prep_commit hook */
	prep_fuse_cmd(sqe, ent, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, 77);
	snprintf(what, sizeof(what), "in %s mode, COMMIT_AND_FETCH's "
		 "sqe->uring_cmd_flags (7.3 refuses a fixed pool's commit "
		 "without IORING_URING_CMD_FIXED: EINVAL)", mode_name(mode));
	EXPECT_EQ(what, fixed ? IORING_URING_CMD_FIXED : 0u, sqe[0].uring_cmd_flags);
	snprintf(what, sizeof(what), "in %s mode, COMMIT_AND_FETCH's "
		 "sqe->buf_index", mode_name(mode));
	EXPECT_EQ(what, 0, sqe[0].buf_index);
}

static void check_commands(void)
{
	commands(SRV_MODE_POOL, &pool_ops, false, 0);
	commands(SRV_MODE_POOL_FIXED, &pool_ops, true, 0);
	commands(SRV_MODE_POOL_ZERO_COPY, &pool_zero_copy_ops, true, 1 + 5);
}

/* TODO 2: the payload at pool + offset. */
static void set_offset(struct srv_ent *ent, uint32_t off)
{
	memcpy((char *)&ent->header->ring_ent_in_out + 20, &off, sizeof(off));
}

static void payload_at(struct fake *f, uint32_t opcode, uint32_t payload_sz,
		       unsigned int buf)
{
	struct srv_ent *ent = &f->q.ents[2];
	char *want = (char *)f->q.payload_mem + (size_t)buf * PSIZE;
	int ret;

	fake_request(ent, opcode, payload_sz, 0, 0);
	set_offset(ent, buf * PSIZE);
	ret = pool_ops.find_payload(ent);
	if (ret)
		wrong("a %s at offset %u: pool_find_payload() returned %d, "
		      "expected 0", fuse_opcode_name(opcode), buf * PSIZE, ret);
	else if (ent->req.payload != want)
		wrong("a %s at offset %u (buffer %u of %u KiB): payload is %+td "
		      "bytes into the pool, expected %u", fuse_opcode_name(opcode),
		      buf * PSIZE, buf, PSIZE / 1024,
		      ent->req.payload ? (char *)ent->req.payload -
		      (char *)f->q.payload_mem : -1, buf * PSIZE);
	else if (ent->req.buf != (int)buf)
		wrong("a %s at offset %u: req.buf (for --trace) is %d, expected "
		      "the buffer's index, %u", fuse_opcode_name(opcode),
		      buf * PSIZE, ent->req.buf, buf);
}

static void refused(struct fake *f, uint32_t off, const char *why)
{
	struct srv_ent *ent = &f->q.ents[2];
	int ret;

	fake_request(ent, FUSE_WRITE, 4096, 0, 0);
	set_offset(ent, off);
	ret = pool_ops.find_payload(ent);
	if (ret != -EPROTO)
		wrong("a WRITE at offset %u (%s): pool_find_payload() returned "
		      "%d, expected -EPROTO (%d)", off, why, ret, -EPROTO);
	else if (ent->req.payload)
		wrong("a WRITE at offset %u (%s): payload is set, expected NULL",
		      off, why);
}

static void check_payload(void)
{
	struct fake f;

	fake_queue(&f, SRV_MODE_POOL, DEPTH, NBUFS, PSIZE);
	payload_at(&f, FUSE_WRITE, 4096, 3);
	payload_at(&f, FUSE_READ, 0, 1);
	payload_at(&f, FUSE_GETATTR, 0, 0);
	refused(&f, NBUFS * PSIZE, "one buffer past the pool");
	refused(&f, PSIZE + 4096, "inside buffer 1, not its start");
}

/* TODO 3: FOPEN_IO_URING_ZERO_COPY in OPEN and CREATE replies. */
static uint32_t open_flags_after(struct fake *f, uint32_t opcode, int fd,
				 uint32_t flags)
{
	static char out[256];
	struct fuse_in_header in = { .opcode = opcode };
	struct srv_req r = { .in = &in, .out = out, .out_size = sizeof(out) };
	struct fuse_open_out *oo = (void *)out;

	memset(out, 0, sizeof(out));
	if (opcode == FUSE_CREATE) {
		oo = (void *)(out + sizeof(struct fuse_entry_out));
		r.out_len = sizeof(struct fuse_entry_out) + sizeof(*oo);
	} else {
		r.out_len = sizeof(*oo);
	}
	oo->fh = (uint64_t)fd;
	oo->open_flags = flags;
	pool_zero_copy_ops.reply_ready(&f->q.ents[0], &r);
	return oo->open_flags;
}

static void check_open(void)
{
	char tmpl[] = "/tmp/exercise06-XXXXXX";
	int fd = mkstemp(tmpl);
	struct fake f;
	uint32_t got;

	if (fd < 0) {
		wrong("could not make a temporary file for the check");
		return;
	}
	fake_queue(&f, SRV_MODE_POOL_ZERO_COPY, DEPTH, NBUFS, PSIZE);
	got = open_flags_after(&f, FUSE_OPEN, fd, FOPEN_KEEP_CACHE);
	if (got != (FOPEN_KEEP_CACHE | FOPEN_ZERO_COPY_7_3))
		wrong("an OPEN reply with FOPEN_KEEP_CACHE: open_flags %#x, "
		      "expected %#x: FOPEN_IO_URING_ZERO_COPY added, the other "
		      "flags kept", got, FOPEN_KEEP_CACHE | FOPEN_ZERO_COPY_7_3);
	got = open_flags_after(&f, FUSE_CREATE, fd, 0);
	if (got != FOPEN_ZERO_COPY_7_3)
		wrong("a CREATE reply: its fuse_open_out (after fuse_entry_out) "
		      "has open_flags %#x, expected FOPEN_IO_URING_ZERO_COPY (%#x)",
		      got, FOPEN_ZERO_COPY_7_3);
	f.o.zero_copy_min = 8192;	/* the file is empty */
	got = open_flags_after(&f, FUSE_OPEN, fd, 0);
	if (got)
		wrong("--zero-copy-min=8K and an empty file: open_flags %#x, "
		      "expected 0: the file is smaller than the minimum", got);
	if (ftruncate(fd, 8192) == 0 &&
	    (got = open_flags_after(&f, FUSE_OPEN, fd, 0)) != FOPEN_ZERO_COPY_7_3)
		wrong("--zero-copy-min=8K and an 8 KiB file: open_flags %#x, "
		      "expected %#x: it is big enough", got, FOPEN_ZERO_COPY_7_3);
	close(fd);
	unlink(tmpl);
}

EXERCISE_MAIN({ 1, check_commands }, { 2, check_payload }, { 3, check_open })
