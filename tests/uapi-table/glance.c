// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * tests/uapi-table/glance.c: the values and offsets of the FUSE-over-io_uring uapi
 * that docs/uapi.rst tabulates, read off one linux/fuse.h. Built three times
 * by scripts/check-uapi-table, against stock 7.2 (build/headers-stock), the
 * v2 series (build/headers) and 7.3 (build/headers-7.3), which then checks
 * every cell of the page's table against what the compiler says.
 *
 * Prints "NAME VALUE" per line; a name the header lacks is not printed.
 */
#include <linux/fuse.h>
#include <stddef.h>
#include <stdio.h>

#define V(name) printf("%s %llu\n", #name, (unsigned long long)(name))
#define SIZE(type) printf("sizeof(%s) %zu\n", #type, sizeof(type))
#define OFF(type, field) printf("offsetof(%s, %s) %zu\n", #type, #field, \
				offsetof(type, field))

/* each design announces itself with a flag of its own */
#if defined(FUSE_HAS_URING_BUFRING)
#define V2 1
#elif defined(FUSE_HAS_IO_URING_BUFPOOL)
#define V73 1
#endif

int main(void)
{
	V(FUSE_KERNEL_MINOR_VERSION);
	V(FUSE_IO_URING_CMD_REGISTER);
	V(FUSE_IO_URING_CMD_COMMIT_AND_FETCH);
	V(FUSE_OVER_IO_URING);
	SIZE(struct fuse_uring_req_header);
	SIZE(struct fuse_uring_ent_in_out);
	SIZE(struct fuse_uring_cmd_req);
	OFF(struct fuse_uring_cmd_req, qid);
	OFF(struct fuse_uring_ent_in_out, payload_sz);
#if defined(V2)
	V(FUSE_HAS_URING_BUFRING);
	V(FUSE_URING_BUFRING);
	V(FUSE_URING_PINNED_HEADERS);
	V(FUSE_URING_PINNED_BUFFERS);
	V(FUSE_URING_ZERO_COPY);
	V(FUSE_URING_ENT_ZERO_COPY);
	OFF(struct fuse_uring_cmd_req, init.buf_size);
	OFF(struct fuse_uring_cmd_req, init.queue_depth);
	OFF(struct fuse_uring_ent_in_out, buf_id);
	OFF(struct fuse_uring_ent_in_out, padding);
#elif defined(V73)
	V(FUSE_HAS_IO_URING_BUFPOOL);
	V(FUSE_IO_URING_CMD_ADD_QUEUE);
	V(FUSE_IO_URING_CMD_ADD_BUFPOOL);
	V(FUSE_URING_ZERO_COPY);
	V(FUSE_URING_ENT_ZERO_COPY);
	V(FOPEN_IO_URING_ZERO_COPY);
	OFF(struct fuse_uring_cmd_req, bufpool.uaddr);
	OFF(struct fuse_uring_cmd_req, bufpool.len);
	OFF(struct fuse_uring_cmd_req, bufpool.reserved);
	OFF(struct fuse_uring_cmd_req, ent_zero_copy_buf_index);
	OFF(struct fuse_uring_ent_in_out, offset);
#else
	OFF(struct fuse_uring_ent_in_out, padding);
#endif
	return 0;
}
