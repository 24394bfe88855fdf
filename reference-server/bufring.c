// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * bufring.c: the second rung, buffer rings (kernel-patches/0004), and the
 * pinned modes built on them (0005, 0006), which change only the flags.
 *
 * A queue hands the kernel two regions once: the headers region, one
 * header slot per entry, and the payload region, cut into --nbufs buffers.
 * The kernel lends a buffer to a request only while it has payload, and
 * says which in ent_in_out.buf_id. What this adds to the stock path: the
 * regions in every entry's iov[], three fields of REGISTER, and finding
 * a request's payload by its buf_id.
 */
#include "fuse-uring.h"

#include <errno.h>

/* the whole series' uapi: buffer rings (0004) to FUSE_HAS_URING_BUFRING (0014) */
#ifndef FUSE_HAS_URING_BUFRING
#error "linux/fuse.h is not the v2 series' uapi: rebuild build/headers from the whole series (make headers)"
#endif

/* iov[] names the queue's regions, the same for every entry */
void bufring_ent_init(struct srv_ent *ent)
{
	const struct srv_queue *q = ent->queue;

	ent->payload = NULL;
	ent->iov[0] = (struct iovec){ q->headers_mem, q->headers_size };
	ent->iov[1] = (struct iovec){ q->payload_mem, q->payload_mem_size };
}

/* doc: mode-flags-begin */
/*
 * The flags every REGISTER of a mode carries (fuse_uring_cmd_req.flags).
 * The kernel treats them as independent bits with two rules: the pinned
 * ones need FUSE_URING_BUFRING, and FUSE_URING_ZERO_COPY needs all three
 * others. The modes are a ladder of them, one flag added per rung.
 */
uint64_t bufring_register_flags(enum srv_mode m)
{
	uint64_t flags = FUSE_URING_BUFRING;

	if (mode_pins_headers(m))
		flags |= FUSE_URING_PINNED_HEADERS;
	if (mode_pins_buffers(m))
		flags |= FUSE_URING_PINNED_BUFFERS;
	if (mode_zero_copy(m))
		flags |= FUSE_URING_ZERO_COPY;
	return flags;
}
/* doc: mode-flags-end */

/* doc: bufring-register-begin */
/*
 * Bufring mode adds three things to every REGISTER (kernel-patches/0004):
 *
 * - cmd_req.flags = FUSE_URING_BUFRING. The first REGISTER of a queue
 *   decides whether it uses a buffer ring, and the kernel refuses later
 *   ones that differ (-EINVAL), so every entry sends the flag.
 * - cmd_req.init: how to cut the regions that iov[] names (queue_setup()):
 *   iov[0] into queue_depth header slots, iov[1] into buffers of buf_size
 *   bytes, so nbufs = iov[1]'s length / buf_size. buf_size must hold the
 *   largest payload (max_write, which FUSE_INIT set to it). The queue's
 *   first REGISTER builds the buffer ring from these; the others repeat
 *   them, and every queue of the connection must give the same.
 * - sqe->buf_index = the entry's id, which is its header slot: the kernel
 *   writes this entry's requests to headers + id. Ids must be below
 *   queue_depth (else -EINVAL) and distinct: the kernel refuses an id in
 *   use with -EBUSY (kernel-patches/0011; v2 lets two entries share a slot).
 *
 * Stock 7.2 ignores flags, init and buf_index and would take this for an
 * iovec REGISTER of the whole regions; FUSE_INIT told us it will not
 * (FUSE_HAS_URING_BUFRING, kernel-patches/0014).
 */
void bufring_prep_register(struct io_uring_sqe *sqe, struct srv_ent *ent)
{
	const struct srv_opts *o = ent->queue->s->opts;
	struct fuse_uring_cmd_req *req = (void *)sqe->cmd;

	/*
	 * exercise 02.1 begin: the buffer-ring fields of REGISTER
	 * hint: prep_fuse_cmd() has filled the stock fields; add, in req, the
	 *       flags of the mode (bufring_register_flags(), above) and
	 *       init, which tells the kernel how to cut the regions: each
	 *       buffer is --payload-size bytes, and there are queue_depth
	 *       header slots; then sqe->buf_index, the entry's header slot.
	 * read: docs/buffer-rings.rst, "Switching a queue to a buffer ring"
	 * stub: (void)o;
	 * stub: (void)req;
	 */
	/* FUSE_URING_BUFRING, and in the modes above it their flags too */
	req->flags = bufring_register_flags(o->mode);
	req->init.buf_size = (uint32_t)o->payload_size;
	req->init.queue_depth = (uint16_t)o->queue_depth;
	sqe->buf_index = (uint16_t)ent->id;
	/* exercise 02.1 end */
}
/* doc: bufring-register-end */

/* doc: bufring-request-begin */
/*
 * Where this request's payload is: the buffer the kernel lent for it,
 * whose index in the queue's payload region is ent_in_out.buf_id; or none
 * (NULL) for a request without payload, whose buf_id means nothing (see
 * bufring_req_has_buf()). The header slot needs no lookup: it is the
 * entry's own, headers + id, as in iovec mode.
 *
 * A lent buffer is ours until we commit the reply, which the kernel reads
 * from it; then the kernel keeps it for this entry's next request if that
 * has payload too, or takes it back for any entry. -EPROTO if buf_id lies
 * outside the region.
 */
int bufring_find_payload(struct srv_ent *ent)
{
	const struct srv_queue *q = ent->queue;
	const struct srv_opts *o = q->s->opts;
	unsigned int id;

	ent->req.buf = -1;
	ent->req.payload = NULL;
	if (!bufring_req_has_buf(ent->header))
		return 0;
	/*
	 * exercise 02.3 begin: the request's payload, by buf_id
	 * hint: the kernel wrote the index of the buffer it lent into the
	 *       entry's header slot, ring_ent_in_out.buf_id. Buffer i starts
	 *       i x --payload-size (o->payload_size) bytes into the queue's
	 *       payload region, q->payload_mem. An index past the queue's
	 *       o->nbufs buffers is the kernel's bug or a stranger's: print it
	 *       on stderr (queue, entry, buf_id, as ring.c's messages do) and
	 *       return -EPROTO. Set ent->req.payload and ent->req.buf (the
	 *       index, for --trace). Requests without a buffer never get
	 *       here: bufring_req_has_buf() (TODO 2) said so above.
	 * read: docs/buffer-rings.rst, "The payload buffers: struct fuse_bufring"
	 * stub: (void)q;
	 * stub: (void)o;
	 * stub: (void)id;
	 */
	id = ent->header->ring_ent_in_out.buf_id;
	if (id >= o->nbufs) {
		fprintf(stderr, SRV_NAME ": queue %u entry %u: the kernel "
			"lent buffer %u of %u\n", q->qid, ent->id, id, o->nbufs);
		return -EPROTO;
	}
	ent->req.buf = (int)id;
	ent->req.payload = (char *)q->payload_mem + (size_t)id * o->payload_size;
	/* exercise 02.3 end */
	return 0;
}
/* doc: bufring-request-end */

/* doc: bufring-has-buf-begin */
/*
 * Bufring mode: did the kernel lend this request a payload buffer? It
 * lends one only to a request with payload (fuse_uring_req_has_payload()):
 * arguments after the op header, which arrive in the buffer and so make
 * payload_sz > 0, or out arguments, the reply's data, which the server
 * writes there. Any other request gets no buffer, and ent_in_out.buf_id
 * cannot say so: the kernel then reports the zeroed id of "no buffer",
 * 0, which is also the first buffer's id. So decide by what the request
 * is; buffer 0 may meanwhile belong to another entry, and a server that
 * wrote there would corrupt that entry's request.
 */
bool bufring_req_has_buf(const struct fuse_uring_req_header *hdr)
{
	/*
	 * exercise 02.2 begin: which requests the kernel lent a buffer
	 * hint: decide by what the request is, never by buf_id (0 means
	 *       "none" and "buffer 0" alike). A request has payload when
	 *       its arguments continue in the buffer (payload_sz > 0) or its
	 *       reply has data (the out_args of its fuse_op_info(), which is
	 *       NULL for an opcode the table does not know). Test
	 *       req_zero_copied() first. It is for zero-copy (lab 04), where
	 *       a READ's or WRITE's data stays in the caller's pages, and is
	 *       false in bufring mode: a zero-copied READ gets no buffer, and
	 *       a zero-copied WRITE gets one for its reply, although its
	 *       payload_sz counts data that is not in the buffer.
	 * read: docs/buffer-rings.rst, "What a request without payload gets";
	 *       docs/zero-copy.rst, "Which requests take a payload buffer"
	 * stub: (void)hdr;
	 * stub: return true;
	 */
	const struct fuse_in_header *in = (const void *)hdr->in_out;
	const struct fuse_op_info *op = fuse_op_info(in->opcode);

	/*
	 * Zero-copy: the data of a READ or WRITE is not in a buffer, and
	 * needs none (fuse_uring_req_has_payload()). A READ then has nothing
	 * else to carry; a WRITE still has its reply, fuse_write_out, for
	 * which it gets a buffer, although payload_sz counts its data.
	 */
	if (req_zero_copied(hdr))
		return in->opcode == FUSE_WRITE;
	return hdr->ring_ent_in_out.payload_sz > 0 || (op && op->out_args);
	/* exercise 02.2 end */
}
/* doc: bufring-has-buf-end */

/*
 * Zero-copy mode: the kernel marks a request whose data it lent as a
 * fixed buffer (FUSE_URING_ENT_ZERO_COPY, kernel-patches/0008). Only a
 * READ or WRITE whose data is in folios gets the mark; one on an
 * ITER_KVEC buffer (kernel_read(), kernel_write()) is copied through the
 * payload buffer as in pinned-buffers mode.
 */
bool req_zero_copied(const struct fuse_uring_req_header *hdr)
{
	return hdr->ring_ent_in_out.flags & FUSE_URING_ENT_ZERO_COPY;
}

/* bufring, pinned-headers and pinned-buffers: the flags tell them apart */
const struct srv_mode_ops bufring_ops = {
	.init_needs = FUSE_HAS_URING_BUFRING,
	.kernel = "FUSE_HAS_URING_BUFRING (Linux 7.2 with the v2 series, kernel-patches/)",
	.register_flags = bufring_register_flags,
	.ent_init = bufring_ent_init,
	.prep_register = bufring_prep_register,
	.find_payload = bufring_find_payload,
};
