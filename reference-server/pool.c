// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * pool.c: the design Linux 7.3 merged instead of the v2 series, a payload
 * pool per queue (7.3's fs/fuse/dev_uring.c, and its uapi page,
 * Documentation/filesystems/fuse/uapi/fuse-uapi-io-uring.rst). This file
 * alone is compiled against 7.3's linux/fuse.h (build/headers-7.3; see the
 * Makefile and the top of fuse-uring.h): it is the only one that names
 * what 7.3 added.
 *
 * What it adds to the stock path, in three modes, a ladder:
 *
 * - pool: before a queue's first REGISTER, two commands that complete at
 *   once: FUSE_IO_URING_CMD_ADD_QUEUE creates the queue, and
 *   FUSE_IO_URING_CMD_ADD_BUFPOOL gives it one payload region, which the
 *   kernel cuts into buffers of the ring's max payload size. Each entry
 *   then registers its own header slot, as in iovec mode, and no payload
 *   (iov[1] = {NULL, 0}). A request with payload gets a free buffer of the
 *   pool, and ent_in_out.offset says where it starts.
 * - pool-fixed: the pool is first registered with io_uring as a fixed
 *   buffer, and ADD_BUFPOOL says so (IORING_URING_CMD_FIXED, and the
 *   buffer's index). io_uring pinned it once, at registration; the kernel
 *   imports it for each request instead of pinning the user pages anew.
 *   From then on every REGISTER and COMMIT_AND_FETCH of the queue must
 *   carry the same flag and index, or the kernel refuses it (-EINVAL).
 * - pool-zero-copy: pool-fixed, and the queue is added with
 *   FUSE_URING_ZERO_COPY (CAP_SYS_ADMIN). Each entry reserves a slot of
 *   the same fixed-buffer table, where the kernel lends the pages of a
 *   READ or WRITE of a file the server opened with
 *   FOPEN_IO_URING_ZERO_COPY; the server moves the data with
 *   READ_FIXED/WRITE_FIXED (zero-copy.c, as in v2).
 */
#include "fuse-uring.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#ifndef FUSE_HAS_IO_URING_BUFPOOL
#error "pool.c needs 7.3's linux/fuse.h: make headers, or HDR73=DIR/include"
#endif

/*
 * The ring's fixed-buffer table: slot 0 is the pool (pool-fixed and
 * pool-zero-copy), slot 1 + id entry id's zero-copy slot: the pool holds
 * slot 0, so the entries start at 1. (On a queue without zero-copy, 7.3
 * wants ent_zero_copy_buf_index 0.)
 */
#define POOL_FIXED_SLOT 0
#define POOL_ENT_SLOT0 1
#define POOL_ENT_SLOT(ent) (POOL_ENT_SLOT0 + (ent)->id)

/*
 * user_data of ADD_QUEUE and ADD_BUFPOOL: neither an entry (whose address
 * is 8-byte aligned) nor UD_STOP.
 */
#define UD_POOL_CMD 2ULL

/* what FUSE_INIT must offer, for messages (srv_mode_ops.kernel) */
#define POOL_KERNEL "FUSE_HAS_IO_URING_BUFPOOL (Linux 7.3 or later)"

/*
 * zero-copy.c, compiled against the v2 series' uapi, tells a zero-copied
 * request by v2's FUSE_URING_ENT_ZERO_COPY, 1 << 0 (req_zero_copied()).
 * pool-zero-copy relies on 7.3's flag being the same bit.
 */
_Static_assert(FUSE_URING_ENT_ZERO_COPY == 1,
	       "7.3's FUSE_URING_ENT_ZERO_COPY is not v2's: see zero-copy.c");

static bool pool_fixed(enum srv_mode m)
{
	return m == SRV_MODE_POOL_FIXED || m == SRV_MODE_POOL_ZERO_COPY;
}

/* doc: pool-ent-begin */
/*
 * The entry's own header slot, as in iovec mode, and no payload: with a
 * pool the kernel refuses a REGISTER whose iov[1] names any memory
 * (-EINVAL), since the payload comes from the pool.
 */
static void pool_ent_init(struct srv_ent *ent)
{
	ent->payload = NULL;
	ent->iov[0] = (struct iovec){ ent->header, sizeof(*ent->header) };
	ent->iov[1] = (struct iovec){ NULL, 0 };
}
/* doc: pool-ent-end */

/* doc: pool-table-begin */
/*
 * pool-fixed and above: the ring's fixed-buffer table, before the
 * FUSE_INIT reply. One slot for the pool, which io_uring pins now, and
 * charges to RLIMIT_MEMLOCK and VmPin if we lack CAP_IPC_LOCK (preflight.c
 * counted it); pool-zero-copy adds one empty slot per entry, where the
 * kernel will lend a request's pages.
 * ADD_BUFPOOL's len is 32 bits: a pool of 4 GiB or more cannot be named.
 */
static int pool_ring_init(struct srv_queue *q, const char **what)
{
	const struct srv_opts *o = q->s->opts;
	struct iovec pool = { q->payload_mem, q->payload_mem_size };
	unsigned int slots = 1;
	int err;

	*what = "the pool: --nbufs x --payload-size must stay below 4 GiB "
		"(ADD_BUFPOOL's len is 32 bits)";
	if (q->payload_mem_size > UINT32_MAX)
		return -E2BIG;
	if (!pool_fixed(o->mode))
		return 0;
	if (mode_zero_copy(o->mode))
		slots += o->queue_depth;
	*what = "io_uring_register_buffers_sparse";
	err = io_uring_register_buffers_sparse(&q->ring, slots);
	if (err)
		return err;
	*what = "io_uring_register_buffers_update_tag (the pool)";
	err = io_uring_register_buffers_update_tag(&q->ring, POOL_FIXED_SLOT,
						   &pool, NULL, 1);
	return err < 0 ? err : 0;
}
/* doc: pool-table-end */

/*
 * One queue command, ADD_QUEUE or ADD_BUFPOOL, submitted and waited for:
 * both complete at once, with 0 or -errno. Nothing else is in flight on
 * this ring yet (the REGISTERs come after them), so the next CQE is its.
 */
static int pool_queue_cmd(struct srv_queue *q, struct io_uring_sqe *sqe)
{
	struct io_uring_cqe *cqe;
	int ret;

	io_uring_sqe_set_data64(sqe, UD_POOL_CMD);
	ret = io_uring_submit(&q->ring);
	if (ret < 0)
		return ret;
	ret = io_uring_wait_cqe(&q->ring, &cqe);
	if (ret < 0)
		return ret;
	ret = cqe->user_data == UD_POOL_CMD ? cqe->res : -EPROTO;
	io_uring_cqe_seen(&q->ring, cqe);
	return ret;
}

/* An SQE128 slot for a queue command: /dev/fuse, cmd_op, the queue's id. */
static struct fuse_uring_cmd_req *pool_prep_cmd(struct srv_queue *q,
						struct io_uring_sqe *sqe,
						uint32_t cmd_op)
{
	struct fuse_uring_cmd_req *req = (void *)sqe->cmd;

	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = q->s->devfd;
	sqe->cmd_op = cmd_op;
	req->qid = (uint16_t)q->qid;
	return req;
}

/* doc: pool-add-begin */
/*
 * The queue, and its pool, before any REGISTER of it (after the INIT
 * reply: before it, -EAGAIN):
 *
 * - ADD_QUEUE creates queue qid; -EEXIST if it exists, which a REGISTER
 *   would have done (a REGISTER on a new qid creates a queue without
 *   pool). FUSE_URING_ZERO_COPY in flags makes it a zero-copy queue, and
 *   needs CAP_SYS_ADMIN (-EPERM).
 * - ADD_BUFPOOL gives it the payload region: bufpool.uaddr and .len; flags
 *   and bufpool.reserved must be 0. The kernel cuts it into len / the
 *   ring's max payload size buffers (-EINVAL if that is 0, and if the queue
 *   already chose a payload mode). With IORING_URING_CMD_FIXED in
 *   sqe->uring_cmd_flags, sqe->buf_index names the fixed buffer the pool
 *   is: the kernel keeps that index and asks it of every later command.
 */
static int pool_queue_add(struct srv_queue *q, const char **what)
{
	const struct srv_opts *o = q->s->opts;
	struct fuse_uring_cmd_req *req;
	struct io_uring_sqe *sqe;
	int err;

	*what = "FUSE_IO_URING_CMD_ADD_QUEUE";
	sqe = queue_sqe(q);
	req = pool_prep_cmd(q, sqe, FUSE_IO_URING_CMD_ADD_QUEUE);
	if (mode_zero_copy(o->mode))
		req->flags = FUSE_URING_ZERO_COPY;
	err = pool_queue_cmd(q, sqe);
	if (err)
		return err;

	*what = "FUSE_IO_URING_CMD_ADD_BUFPOOL";
	sqe = queue_sqe(q);
	req = pool_prep_cmd(q, sqe, FUSE_IO_URING_CMD_ADD_BUFPOOL);
	req->bufpool.uaddr = (uint64_t)(uintptr_t)q->payload_mem;
	req->bufpool.len = (uint32_t)q->payload_mem_size;
	if (pool_fixed(o->mode)) {
		sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
		sqe->buf_index = POOL_FIXED_SLOT;
	}
	return pool_queue_cmd(q, sqe);
}
/* doc: pool-add-end */

/* doc: pool-register-begin */
/*
 * What REGISTER and COMMIT_AND_FETCH carry beyond the stock fields. A
 * fixed pool binds both to its flag and index (fuse_uring_cmd_index_ok()
 * in 7.3: -EINVAL without). On a zero-copy queue, REGISTER also names the
 * entry's own slot of the table, ent_zero_copy_buf_index; on any other
 * queue it must be 0.
 */
static void pool_prep_fixed(struct io_uring_sqe *sqe, struct srv_ent *ent)
{
	/*
	 * exercise 06.1 begin: a fixed pool's flag and index, on every command
	 * hint: only in the fixed modes (pool_fixed()): the SQE says it uses
	 *       a fixed buffer (IORING_URING_CMD_FIXED, in
	 *       sqe->uring_cmd_flags) and which (sqe->buf_index), the slot
	 *       pool_ring_init() put the pool in, POOL_FIXED_SLOT. In plain
	 *       pool mode both stay 0. On a zero-copy queue REGISTER also
	 *       names the entry's own slot, ent_zero_copy_buf_index =
	 *       POOL_ENT_SLOT(ent) (in pool_prep_register(), below).
	 * read: docs/pool.rst, "The fixed pool"
	 * stub: (void)sqe;
	 * stub: (void)ent;
	 */
	if (!pool_fixed(ent->queue->s->opts->mode))
		return;
	sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
	sqe->buf_index = POOL_FIXED_SLOT;
	/* exercise 06.1 end */
}

static void pool_prep_register(struct io_uring_sqe *sqe, struct srv_ent *ent)
{
	struct fuse_uring_cmd_req *req = (void *)sqe->cmd;

	pool_prep_fixed(sqe, ent);
	/*
	 * exercise 06.1 begin: a fixed pool's flag and index (the zero-copy slot)
	 * stub: (void)req;
	 */
	if (mode_zero_copy(ent->queue->s->opts->mode))
		req->ent_zero_copy_buf_index = (uint16_t)POOL_ENT_SLOT(ent);
	/* exercise 06.1 end */
}
/* doc: pool-register-end */

/* doc: pool-has-buf-begin */
/*
 * Did the kernel give this request a buffer of the pool? Only if it has
 * payload to copy (fuse_uring_req_has_copyable_payload() in 7.3):
 * arguments after the op header (payload_sz > 0) or a reply with data.
 * ent_in_out.offset cannot say so: it is 0 both for "no buffer" and for
 * the first buffer, which another entry may hold. A zero-copied READ
 * has nothing else to copy and gets none; a zero-copied WRITE gets one
 * for its reply, fuse_write_out, though payload_sz counts its data.
 */
static bool pool_req_has_buf(const struct fuse_uring_req_header *hdr)
{
	const struct fuse_in_header *in = (const void *)hdr->in_out;
	const struct fuse_op_info *op = fuse_op_info(in->opcode);

	if (hdr->ring_ent_in_out.flags & FUSE_URING_ENT_ZERO_COPY)
		return in->opcode == FUSE_WRITE;
	return hdr->ring_ent_in_out.payload_sz > 0 || (op && op->out_args);
}
/* doc: pool-has-buf-end */

/* doc: pool-request-begin */
/*
 * Where the request's payload is: pool + ent_in_out.offset, a whole
 * buffer of --payload-size bytes (the ring's max payload size, which
 * FUSE_INIT set to it). An offset that is not a buffer's start, or lies
 * past the pool, is the kernel's bug or a stranger's: -EPROTO.
 */
static int pool_find_payload(struct srv_ent *ent)
{
	const struct srv_queue *q = ent->queue;
	const struct srv_opts *o = q->s->opts;
	uint32_t off = ent->header->ring_ent_in_out.offset;

	ent->req.buf = -1;
	ent->req.payload = NULL;
	if (!pool_req_has_buf(ent->header))
		return 0;
	/*
	 * exercise 06.2 begin: the request's payload, by offset
	 * hint: the kernel wrote where the buffer it chose starts, in bytes
	 *       from the start of the pool, into ring_ent_in_out.offset (off,
	 *       above). The pool is q->payload_mem: o->nbufs buffers of
	 *       o->payload_size bytes. An offset that is not the start of one
	 *       of them is the kernel's bug or a stranger's: print it on
	 *       stderr (queue, entry, offset) and return -EPROTO. Set
	 *       ent->req.payload, and ent->req.buf to the buffer's index (for
	 *       --trace).
	 * read: docs/pool.rst, "A request's payload"
	 * stub: (void)q;
	 * stub: (void)o;
	 * stub: (void)off;
	 */
	if (off % o->payload_size ||
	    off / o->payload_size >= o->nbufs) {
		fprintf(stderr, SRV_NAME ": queue %u entry %u: the kernel put "
			"the payload at offset %u of a pool of %u x %zu B\n",
			q->qid, ent->id, off, o->nbufs, o->payload_size);
		return -EPROTO;
	}
	ent->req.buf = (int)(off / o->payload_size);
	ent->req.payload = (char *)q->payload_mem + off;
	/* exercise 06.2 end */
	return 0;
}
/* doc: pool-request-end */

/* pool and pool-fixed: the flags and index tell them apart */
const struct srv_mode_ops pool_ops = {
	.init_needs = FUSE_HAS_IO_URING_BUFPOOL,
	.kernel = POOL_KERNEL,
	.ent_init = pool_ent_init,
	.ring_init = pool_ring_init,
	.queue_add = pool_queue_add,
	.prep_register = pool_prep_register,
	.prep_commit = pool_prep_fixed,
	.find_payload = pool_find_payload,
};

#ifdef SRV_WITH_ZERO_COPY
/* doc: pool-zero-copy-open-begin */
/*
 * pool-zero-copy: 7.3 lends a request's pages only for files whose OPEN,
 * CREATE or TMPFILE reply carried FOPEN_IO_URING_ZERO_COPY (can_zero_copy_req():
 * a READ or WRITE with its data in pages, on a zero-copy queue). The
 * choice is per open file: this server asks for every file, or with
 * --zero-copy-min only for files at least that big when opened, whose
 * large reads pay for the registration of their pages (a file CREATE
 * makes is empty, and is then copied). The reply of CREATE and TMPFILE
 * is fuse_entry_out, then fuse_open_out; fh is the backing file's fd.
 */
static void pool_zero_copy_open(struct srv_ent *ent, struct srv_req *r)
{
	size_t min = ent->queue->s->opts->zero_copy_min;
	struct fuse_open_out *oo;
	struct stat st;

	if (r->in->opcode == FUSE_OPEN && r->out_len >= sizeof(*oo))
		oo = r->out;
	else if ((r->in->opcode == FUSE_CREATE ||
		  r->in->opcode == FUSE_TMPFILE) &&
		 r->out_len >= sizeof(struct fuse_entry_out) + sizeof(*oo))
		oo = (void *)((char *)r->out + sizeof(struct fuse_entry_out));
	else
		return;
	/*
	 * exercise 06.3 begin: zero-copy, per file
	 * hint: oo is the reply's fuse_open_out. Ask 7.3 to zero-copy this
	 *       file's READs and WRITEs by setting FOPEN_IO_URING_ZERO_COPY in
	 *       its open_flags (keep the other flags). With --zero-copy-min
	 *       (min, above; 0: every file), only a file at least that big:
	 *       fstat() the backing file, whose fd is oo->fh; a file fstat()
	 *       cannot see is not asked for.
	 * read: docs/pool.rst, "Zero-copy, per file"
	 * stub: (void)min;
	 * stub: (void)st;
	 */
	if (min && (fstat((int)oo->fh, &st) || (size_t)st.st_size < min))
		return;
	oo->open_flags |= FOPEN_IO_URING_ZERO_COPY;
	/* exercise 06.3 end */
}
/* doc: pool-zero-copy-open-end */

/*
 * pool-zero-copy: the pool's hooks, the per-file opt-in, and zero-copy.c's
 * fixed operations on the entry's own slot (1 + id).
 */
const struct srv_mode_ops pool_zero_copy_ops = {
	.init_needs = FUSE_HAS_IO_URING_BUFPOOL,
	.kernel = POOL_KERNEL,
	.ent_init = pool_ent_init,
	.ring_init = pool_ring_init,
	.queue_add = pool_queue_add,
	.prep_register = pool_prep_register,
	.prep_commit = pool_prep_fixed,
	.find_payload = pool_find_payload,
	.take_request = zero_copy_take_request,
	.mode_io_done = zero_copy_io_done,
	.reply_ready = pool_zero_copy_open,
	.zero_copy_slot0 = POOL_ENT_SLOT0,
};
#endif
