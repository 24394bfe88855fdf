// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * iovec.c: the first rung, stock Linux 7.2. Each entry registers its own
 * header slot and its own payload buffer, big enough for the largest
 * request, and every request of that entry uses both. Nothing to add to
 * REGISTER, no lookup per request.
 */
#include "fuse-uring.h"

/* doc: iovec-ent-begin */
/* The entry's own slot of the headers region and its own payload buffer. */
static void iovec_ent_init(struct srv_ent *ent)
{
	const struct srv_queue *q = ent->queue;
	size_t psize = q->s->opts->payload_size;

	/*
	 * exercise 01.1 begin: an entry's two buffers
	 * hint: the entry's header slot is ent->header (queue_setup() set
	 *       it); its payload buffer is slice ent->id of the queue's
	 *       payload region, psize bytes each. Set ent->payload, and
	 *       ent->iov[0] and [1], the pair REGISTER hands the kernel:
	 *       the header slot (its whole struct), then the payload buffer.
	 * read: docs/stock-protocol.rst, "Registering an entry"
	 * stub: (void)q;
	 * stub: (void)psize;
	 */
	ent->payload = (char *)q->payload_mem + ent->id * psize;
	ent->iov[0] = (struct iovec){ ent->header, sizeof(*ent->header) };
	ent->iov[1] = (struct iovec){ ent->payload, psize };
	/* exercise 01.1 end */
}
/* doc: iovec-ent-end */

static int iovec_find_payload(struct srv_ent *ent)
{
	ent->req.payload = ent->payload;
	ent->req.buf = -1;
	return 0;
}

const struct srv_mode_ops iovec_ops = {
	.kernel = "FUSE over io_uring (stock Linux 7.2 or later)",
	.ent_init = iovec_ent_init,
	.find_payload = iovec_find_payload,
};
