// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * zero-copy.c: the last rung (kernel-patches/0008), pinned-buffers plus
 * FUSE_URING_ZERO_COPY. The data of a READ or WRITE stays in the caller's
 * folios: the kernel registers them in the queue's ring as the fixed buffer
 * at the entry's id, and the server moves the data itself with
 * READ_FIXED/WRITE_FIXED. What this adds to the buffer ring: a sparse
 * fixed-buffer table per ring, and one more step before such a request's
 * commit.
 */
#include "fuse-uring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* the whole series' uapi: buffer rings (0004) to FUSE_HAS_URING_BUFRING (0014) */
#ifndef FUSE_HAS_URING_BUFRING
#error "linux/fuse.h is not the v2 series' uapi: rebuild build/headers from the whole series (make headers)"
#endif

static void zero_copy_link_commit(struct srv_ent *ent,
				  struct io_uring_sqe *io_sqe);
static void zero_copy_commit(struct srv_ent *ent, int res);

/*
 * The fixed-buffer slot where the kernel lends entry ent a request's
 * pages: its id in v2; in 7.3 the slot its REGISTER reserved (pool.c
 * reserves 1 + id). The operations on it are the same in both designs,
 * so pool.c's zero-copy mode uses the functions below as they are.
 */
static int zero_copy_slot(const struct srv_ent *ent)
{
	return (int)(ent->queue->s->ops->zero_copy_slot0 + ent->id);
}

/* doc: fixed-table-begin */
/*
 * The kernel lends a READ's or WRITE's folios to us as the fixed buffer
 * whose index is the entry's id, in the buffer table of the ring that
 * entry's commands come on. So this ring needs a table of queue_depth
 * slots, empty (sparse: no memory of ours in it), and its own: another
 * queue's entry ids are the same numbers. Without it every zero-copy READ
 * and WRITE would fail with -EINVAL.
 */
static int zero_copy_ring_init(struct srv_queue *q, const char **what)
{
	*what = "io_uring_register_buffers_sparse";
	return io_uring_register_buffers_sparse(&q->ring,
						q->s->opts->queue_depth);
}
/* doc: fixed-table-end */

/* doc: zero-copy-fixed-io-begin */
/*
 * A READ or WRITE marked FUSE_URING_ENT_ZERO_COPY brings no data in a
 * payload buffer. The kernel has registered the request's folios (page
 * cache, or the pages of a process doing direct I/O) in this queue's ring,
 * as the fixed buffer at the entry's slot (v2: its id), and the server moves
 * the data itself, straight between those folios and the backing file,
 * with one io_uring operation:
 *
 * - WRITE: IORING_OP_WRITE_FIXED on the backing fd reads the buffer;
 *   READ: IORING_OP_READ_FIXED fills it. The kernel registered a write's
 *   folios IO_IMU_SOURCE, which only operations that read from the buffer
 *   may use, and a read's IO_IMU_DEST, for operations that write to it:
 *   the other way round fails with -EFAULT, as does an empty slot.
 * - buf_index is the entry's slot: its id in v2, the slot its REGISTER
 *   reserved in 7.3 (zero_copy_slot()). addr is an offset into the buffer, and
 *   byte 0 of the buffer is the first byte of the request's data, so
 *   addr = 0 and len = the request's size; the file offset is the
 *   request's offset, as with pread/pwrite.
 * - The commit must wait for that operation to finish. Committing ends
 *   the request: the kernel unregisters the buffer, and the caller goes
 *   on with its pages, a reader before its data arrived, a writer free to
 *   reuse memory we are still reading. The kernel unregisters the buffer
 *   only through the ring it registered it in, so the commit goes on this
 *   same ring.
 */
bool zero_copy_take_request(struct srv_ent *ent, const struct srv_req *r,
			    int *err)
{
	struct srv_queue *q = ent->queue;
	struct io_uring_sqe *sqe;

	if (!req_zero_copied(ent->header))
		return false;	/* copied as usual: the stock path serves it */
	ent->req.zero_copied = true;
	/* a WRITE clears set-user-ID first, if the kernel asks (ops.c) */
	if (r->in->opcode == FUSE_WRITE) {
		*err = srv_write_kill_suidgid(r);
		if (*err)
			return false;
	}
	/*
	 * exercise 04.1 begin: READ_FIXED and WRITE_FIXED
	 * hint: one SQE (queue_sqe(q)) on the backing file (the fh of the
	 *       request's fuse_read_in or fuse_write_in, in r->arg): a READ
	 *       reads into the fixed buffer, a WRITE writes from it. The
	 *       buffer's index is the entry's slot, zero_copy_slot(ent) (its
	 *       id, in the v2 series); the address is an offset
	 *       into that buffer, where the request's data starts at 0; the
	 *       length and the file offset are the request's. liburing has
	 *       io_uring_prep_read_fixed() and io_uring_prep_write_fixed().
	 *       Any other opcode: *err = -EPROTO, return false.
	 * read: docs/zero-copy.rst, "In the reference server"
	 * stub: (void)q;
	 * stub: (void)r;
	 * stub: (void)zero_copy_slot;
	 * stub: *err = -ENOSYS;
	 * stub: return false;
	 */
	if (r->in->opcode == FUSE_READ) {
		const struct fuse_read_in *in = r->arg;

		sqe = queue_sqe(q);
		io_uring_prep_read_fixed(sqe, (int)in->fh, NULL, in->size,
					 in->offset, zero_copy_slot(ent));
	} else if (r->in->opcode == FUSE_WRITE && ent->req.payload) {
		const struct fuse_write_in *in = r->arg;

		sqe = queue_sqe(q);
		io_uring_prep_write_fixed(sqe, (int)in->fh, NULL, in->size,
					  in->offset, zero_copy_slot(ent));
	} else {
		/* only READ and WRITE are marked; a WRITE has a reply buffer */
		*err = -EPROTO;
		return false;
	}
	/* exercise 04.1 end */
	/*
	 * exercise 04.2 begin: telling its completion apart
	 * hint: the fixed operation's CQE comes on the same ring as the
	 *       entry's FUSE commands, whose user_data is the entry's
	 *       address. Tag this one as the mode's own (UD_MODE_IO, in
	 *       fuse-uring.h), so that handle_cqes() hands it to
	 *       zero_copy_io_done() and not to handle_request().
	 * read: the user_data comment in fuse-uring.h
	 * stub: (void)sqe;
	 */
	io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)ent | UD_MODE_IO);
	/* exercise 04.2 end */
	if (!q->s->opts->unlinked)
		zero_copy_link_commit(ent, sqe);
	return true;
}
/* doc: zero-copy-fixed-io-end */

/* doc: zero-copy-link-begin */
/*
 * One submit for both, and no CQE in between. The commit is queued right
 * behind the fixed operation, linked to it (IOSQE_IO_LINK): io_uring
 * starts the commit only once the operation has moved every byte it was
 * asked to, so the reply can say so now. The operation's own CQE would
 * only wake us for nothing: IOSQE_CQE_SKIP_SUCCESS drops it when it
 * succeeds. The next CQE of this entry is then the next request.
 *
 * An operation that moves fewer bytes (a READ at the end of the file) or
 * fails breaks the link: io_uring cancels the commit, before the kernel's
 * FUSE code ever sees it. A request marked IOSQE_CQE_SKIP_SUCCESS that
 * fails posts its own CQE after all, and suppresses those of the linked
 * requests it cancels: we get the operation's CQE, and no -ECANCELED one
 * for the commit, which would carry the entry's user_data and look like a
 * FUSE command's. So the two flags go together. zero_copy_io_done() then
 * replies with what really happened.
 *
 * Unlinked (--unlinked), the commit waits for the operation's CQE: one
 * more trip through io_uring_enter() for every READ and WRITE.
 */
static void zero_copy_link_commit(struct srv_ent *ent,
				  struct io_uring_sqe *io_sqe)
{
	io_sqe->flags |= IOSQE_IO_LINK | IOSQE_CQE_SKIP_SUCCESS;
	zero_copy_commit(ent, (int)io_sqe->len);
}
/* doc: zero-copy-link-end */

/* doc: zero-copy-reply-begin */
/*
 * The reply to a zero-copied request, from res: the bytes the fixed
 * operation moved (linked: all it was asked to), or -errno. Then commit,
 * and fetch the next request.
 */
static void zero_copy_commit(struct srv_ent *ent, int res)
{
	struct srv_queue *q = ent->queue;
	struct fuse_write_out *wo;
	int err = res < 0 ? res : 0;
	size_t out_len = 0;

	/*
	 * exercise 04.3 begin: the reply after the fixed operation
	 * hint: res is what the operation moved. A READ's data is already in
	 *       the caller's pages: its reply data is just that many bytes,
	 *       nothing to copy. A WRITE replies, as always, with struct
	 *       fuse_write_out in the payload buffer the kernel lent it
	 *       (ent->req.payload): the bytes written. Set out_len to the
	 *       reply's data size; on an error (err) there is none.
	 * read: docs/zero-copy.rst, "In the reference server"
	 * stub: (void)wo;
	 */
	if (!err && ent->req.opcode == FUSE_WRITE) {
		wo = ent->req.payload;
		memset(wo, 0, sizeof(*wo));
		wo->size = (uint32_t)res;
		out_len = sizeof(*wo);
	} else if (!err) {
		out_len = (size_t)res;	/* READ: already in place */
	}
	/* exercise 04.3 end */
	if (q->s->opts->trace)
		trace_ring(ent, out_len, err);
	build_ring_reply(ent->header, ent->req.unique, err, out_len);
	prep_fuse_cmd(queue_sqe(q), ent, FUSE_IO_URING_CMD_COMMIT_AND_FETCH,
		      ent->req.commit_id);
}

/*
 * The fixed operation's CQE: unlinked, every one; linked, only one that
 * moved less than it was asked to, or failed. res is the bytes moved or
 * -errno. Reply as pread()/pwrite() would have.
 */
void zero_copy_io_done(struct srv_ent *ent, int res)
{
	struct srv_queue *q = ent->queue;

	if (!ent->req.zero_copied) {
		fprintf(stderr, SRV_NAME ": queue %u entry %u: a fixed-buffer "
			"CQE for a request that is not zero-copied (bug)\n",
			q->qid, ent->id);
		abort();
	}
	zero_copy_commit(ent, res);
}
/* doc: zero-copy-reply-end */

/* the buffer ring's hooks, and the fixed-buffer steps */
const struct srv_mode_ops zero_copy_ops = {
	.init_needs = FUSE_HAS_URING_BUFRING,
	.kernel = "FUSE_HAS_URING_BUFRING (Linux 7.2 with the v2 series, kernel-patches/)",
	.register_flags = bufring_register_flags,
	.ent_init = bufring_ent_init,
	.ring_init = zero_copy_ring_init,
	.prep_register = bufring_prep_register,
	.find_payload = bufring_find_payload,
	.take_request = zero_copy_take_request,
	.mode_io_done = zero_copy_io_done,
};
