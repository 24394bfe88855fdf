// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * proto.c: the FUSE wire format, with no I/O: opcode names, splitting a
 * request into header/argument/data, building replies, packing dirents,
 * and the FUSE_INIT negotiation. Pure functions, unit-tested in tests/.
 */
#include "fuse-uring.h"

#include <errno.h>
#include <string.h>

/* ---- opcode names, for --trace and error messages ---------------------- */

static const char *const opcode_names[] = {
	[FUSE_LOOKUP] = "LOOKUP",	[FUSE_FORGET] = "FORGET",
	[FUSE_GETATTR] = "GETATTR",	[FUSE_SETATTR] = "SETATTR",
	[FUSE_READLINK] = "READLINK",	[FUSE_SYMLINK] = "SYMLINK",
	[FUSE_MKNOD] = "MKNOD",		[FUSE_MKDIR] = "MKDIR",
	[FUSE_UNLINK] = "UNLINK",	[FUSE_RMDIR] = "RMDIR",
	[FUSE_RENAME] = "RENAME",	[FUSE_LINK] = "LINK",
	[FUSE_OPEN] = "OPEN",		[FUSE_READ] = "READ",
	[FUSE_WRITE] = "WRITE",		[FUSE_STATFS] = "STATFS",
	[FUSE_RELEASE] = "RELEASE",	[FUSE_FSYNC] = "FSYNC",
	[FUSE_SETXATTR] = "SETXATTR",	[FUSE_GETXATTR] = "GETXATTR",
	[FUSE_LISTXATTR] = "LISTXATTR",	[FUSE_REMOVEXATTR] = "REMOVEXATTR",
	[FUSE_FLUSH] = "FLUSH",		[FUSE_INIT] = "INIT",
	[FUSE_OPENDIR] = "OPENDIR",	[FUSE_READDIR] = "READDIR",
	[FUSE_RELEASEDIR] = "RELEASEDIR", [FUSE_FSYNCDIR] = "FSYNCDIR",
	[FUSE_GETLK] = "GETLK",		[FUSE_SETLK] = "SETLK",
	[FUSE_SETLKW] = "SETLKW",	[FUSE_ACCESS] = "ACCESS",
	[FUSE_CREATE] = "CREATE",	[FUSE_INTERRUPT] = "INTERRUPT",
	[FUSE_BMAP] = "BMAP",		[FUSE_DESTROY] = "DESTROY",
	[FUSE_IOCTL] = "IOCTL",		[FUSE_POLL] = "POLL",
	[FUSE_NOTIFY_REPLY] = "NOTIFY_REPLY",
	[FUSE_BATCH_FORGET] = "BATCH_FORGET",
	[FUSE_FALLOCATE] = "FALLOCATE",	[FUSE_READDIRPLUS] = "READDIRPLUS",
	[FUSE_RENAME2] = "RENAME2",	[FUSE_LSEEK] = "LSEEK",
	[FUSE_COPY_FILE_RANGE] = "COPY_FILE_RANGE",
	[FUSE_SETUPMAPPING] = "SETUPMAPPING",
	[FUSE_REMOVEMAPPING] = "REMOVEMAPPING",
	[FUSE_SYNCFS] = "SYNCFS",	[FUSE_TMPFILE] = "TMPFILE",
	[FUSE_STATX] = "STATX",
	[FUSE_COPY_FILE_RANGE_64] = "COPY_FILE_RANGE_64",
};

const char *fuse_opcode_name(uint32_t opcode)
{
	size_t n = sizeof(opcode_names) / sizeof(opcode_names[0]);

	if (opcode < n && opcode_names[opcode])
		return opcode_names[opcode];
	return "UNKNOWN";
}

/* ---- requests --------------------------------------------------------- */

/*
 * A read(2) of /dev/fuse returns exactly one request: fuse_in_header, the
 * per-opcode header, then names or data, all back to back.
 */
int parse_dev_request(void *buf, size_t n, struct srv_req *r)
{
	const struct srv_op *op;
	char *p = buf;

	if (n < sizeof(struct fuse_in_header))
		return -EINVAL;
	r->in = buf;
	if (r->in->len != n)
		return -EINVAL;

	op = srv_op_lookup(r->in->opcode);
	r->arg_len = op ? op->arg_size : 0;
	if (n - sizeof(*r->in) < r->arg_len)
		return -EINVAL;
	r->arg = p + sizeof(*r->in);
	r->data = p + sizeof(*r->in) + r->arg_len;
	r->data_len = n - sizeof(*r->in) - r->arg_len;
	r->out_len = 0;
	return 0;
}

/* doc: parse-ring-begin */
/*
 * Over io_uring the kernel has already split the request: fuse_in_header in
 * in_out, the per-opcode header in op_in, the rest in the payload buffer,
 * whose length it wrote to ent_in_out.payload_sz.
 */
int parse_ring_request(struct fuse_uring_req_header *hdr, void *payload,
		       size_t payload_cap, struct srv_req *r)
{
	const struct fuse_in_header *in = (const void *)hdr->in_out;
	size_t payload_sz = hdr->ring_ent_in_out.payload_sz;
	const struct srv_op *op;
	size_t arg_len;

	if (payload_sz > payload_cap || in->len < sizeof(*in) + payload_sz)
		return -EINVAL;
	/* in->len counts all three parts, so the op header's size falls out */
	arg_len = in->len - sizeof(*in) - payload_sz;
	op = srv_op_lookup(in->opcode);
	if (arg_len > FUSE_URING_OP_IN_OUT_SZ || (op && arg_len < op->arg_size))
		return -EINVAL;

	r->in = in;
	r->arg = hdr->op_in;
	r->arg_len = arg_len;
	r->data = payload;
	r->data_len = payload_sz;
	r->out = payload;	/* the reply overwrites the request in place */
	r->out_size = payload_cap;
	r->out_len = 0;
	return 0;
}
/* doc: parse-ring-end */

/*
 * Whether the kernel's request for this opcode always has out arguments,
 * i.e. a reply with data after fuse_out_header. Read off Linux 7.2's
 * fs/fuse (args.out_numargs); the opcodes left out reply with the header
 * alone (FLUSH, FSYNC, FSYNCDIR, RELEASE, RELEASEDIR, ACCESS, FALLOCATE,
 * SYNCFS, DESTROY, SETLK, SETLKW, and the name-only ones: UNLINK, RMDIR,
 * RENAME, RENAME2, SETXATTR, REMOVEXATTR) or never reach the ring (FORGET,
 * BATCH_FORGET, INTERRUPT). Err on the side of leaving one out: a
 * request wrongly taken for bufferless only loses its reply data (the unit
 * tests check every opcode whose handler replies with data is here), one
 * wrongly taken for buffered makes the server write to a buffer it does
 * not hold.
 */
bool fuse_op_has_out_args(uint32_t opcode)
{
	switch (opcode) {
	case FUSE_LOOKUP: case FUSE_GETATTR: case FUSE_SETATTR:
	case FUSE_READLINK: case FUSE_SYMLINK: case FUSE_MKNOD:
	case FUSE_MKDIR: case FUSE_LINK: case FUSE_OPEN: case FUSE_READ:
	case FUSE_WRITE: case FUSE_STATFS: case FUSE_GETXATTR:
	case FUSE_LISTXATTR: case FUSE_INIT: case FUSE_OPENDIR:
	case FUSE_READDIR: case FUSE_GETLK: case FUSE_CREATE: case FUSE_BMAP:
	case FUSE_IOCTL: case FUSE_POLL: case FUSE_READDIRPLUS:
	case FUSE_LSEEK: case FUSE_COPY_FILE_RANGE: case FUSE_TMPFILE:
	case FUSE_STATX: case FUSE_COPY_FILE_RANGE_64:
		return true;
	default:
		return false;
	}
}

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
	const struct fuse_in_header *in = (const void *)hdr->in_out;

	/*
	 * Zero-copy: the data of a READ or WRITE is not in a buffer, and
	 * needs none (fuse_uring_req_has_payload()). A READ then has nothing
	 * else to carry; a WRITE still has its reply, fuse_write_out, for
	 * which it gets a buffer, although payload_sz counts its data.
	 */
	if (req_zero_copied(hdr))
		return in->opcode == FUSE_WRITE;
	return hdr->ring_ent_in_out.payload_sz > 0 ||
	       fuse_op_has_out_args(in->opcode);
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

/*
 * A request's names are NUL-terminated strings in data. Return the one that
 * starts skip bytes in; -EINVAL if it runs off the end.
 */
int req_name(const struct srv_req *r, size_t skip, const char **name,
	     size_t *consumed)
{
	const char *end;

	if (skip >= r->data_len)
		return -EINVAL;
	end = memchr(r->data + skip, '\0', r->data_len - skip);
	if (!end || end == r->data + skip)
		return -EINVAL;
	*name = r->data + skip;
	*consumed = (size_t)(end - *name) + 1;
	return 0;
}

/* ---- replies ---------------------------------------------------------- */

/* doc: ring-reply-begin */
/*
 * The ring reply: fuse_out_header goes in in_out (where the request's header
 * was), the reply's size in ent_in_out.payload_sz. An error reply carries
 * no payload; the kernel rejects a positive error or one below -ERESTARTSYS.
 */
void build_ring_reply(struct fuse_uring_req_header *hdr, uint64_t unique,
		      int error, size_t out_len)
{
	struct fuse_out_header *oh = (void *)hdr->in_out;

	if (error)
		out_len = 0;
	build_dev_reply(oh, unique, error, out_len);
	hdr->ring_ent_in_out.payload_sz = (uint32_t)out_len;
}
/* doc: ring-reply-end */

/* The /dev/fuse reply: the same header, then the payload, in one writev. */
void build_dev_reply(struct fuse_out_header *oh, uint64_t unique, int error,
		     size_t out_len)
{
	if (error)
		out_len = 0;
	memset(oh, 0, sizeof(*oh));
	oh->len = (uint32_t)(sizeof(*oh) + out_len);
	oh->error = error;
	oh->unique = unique;
}

/*
 * Append one struct fuse_dirent (8-byte aligned, name not NUL-terminated).
 * Returns the bytes used, or 0 when it does not fit: READDIR stops there
 * and the kernel asks again from the last offset.
 */
size_t dirent_pack(void *buf, size_t cap, const char *name, uint64_t ino,
		   uint64_t off, uint32_t type)
{
	size_t namelen = strlen(name);
	size_t entlen = FUSE_NAME_OFFSET + namelen;
	size_t padded = FUSE_DIRENT_ALIGN(entlen);
	struct fuse_dirent *d = buf;

	if (padded > cap)
		return 0;
	d->ino = ino;
	d->off = off;
	d->namelen = (uint32_t)namelen;
	d->type = type;
	memcpy(d->name, name, namelen);
	memset(d->name + namelen, 0, padded - entlen);
	return padded;
}

void stat_to_fuse_attr(const struct stat *st, struct fuse_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = st->st_ino;
	a->size = (uint64_t)st->st_size;
	a->blocks = (uint64_t)st->st_blocks;
	a->atime = (uint64_t)st->st_atim.tv_sec;
	a->mtime = (uint64_t)st->st_mtim.tv_sec;
	a->ctime = (uint64_t)st->st_ctim.tv_sec;
	a->atimensec = (uint32_t)st->st_atim.tv_nsec;
	a->mtimensec = (uint32_t)st->st_mtim.tv_nsec;
	a->ctimensec = (uint32_t)st->st_ctim.tv_nsec;
	a->mode = st->st_mode;
	a->nlink = (uint32_t)st->st_nlink;
	a->uid = st->st_uid;
	a->gid = st->st_gid;
	a->rdev = (uint32_t)st->st_rdev;
	a->blksize = (uint32_t)st->st_blksize;
}

/* ---- FUSE_INIT -------------------------------------------------------- */

/*
 * Answer the kernel's offer. We take only the flags this server implements,
 * and FUSE_OVER_IO_URING, which the kernel offers only when the module
 * parameter enable_uring is set: without it the server cannot run, so say
 * so here (-EOPNOTSUPP) rather than hang later in REGISTER.
 *
 * The buffer-ring modes also need FUSE_HAS_URING_BUFRING (series patch 14).
 * A kernel without the series ignores the REGISTER flags and takes a
 * buffer-ring REGISTER for an iovec one: every entry would then share header
 * slot 0, silently. So refuse those modes here (-ENOPROTOOPT). The bit is
 * only offered; the reply need not carry it.
 */
int init_reply_build(const struct fuse_init_in *in, const struct srv_opts *o,
		     unsigned int nr_queues, long page_size,
		     struct fuse_init_out *out)
{
	uint64_t offered, wanted, bg;

	if (in->major != FUSE_KERNEL_VERSION)
		return -EPROTO;
	/* flags2 (the upper 32 bits) only exist from 7.36, with FUSE_INIT_EXT */
	if (in->minor < 36 || !(in->flags & FUSE_INIT_EXT))
		return -EPROTO;
	/* doc: init-flags-begin */
	offered = in->flags | ((uint64_t)in->flags2 << 32);
	if (!(offered & FUSE_OVER_IO_URING))
		return -EOPNOTSUPP;
	if (mode_uses_bufring(o->mode) && !(offered & FUSE_HAS_URING_BUFRING))
		return -ENOPROTOOPT;

	wanted = FUSE_INIT_EXT | FUSE_OVER_IO_URING |
		/* several READs of one file may be in flight (readahead) */
		FUSE_ASYNC_READ |
		/* WRITEs up to max_write, not 4 KiB each */
		FUSE_BIG_WRITES |
		/* max_pages below is meant; the default is 32 pages */
		FUSE_MAX_PAGES |
		/* LOOKUP/READDIR in one directory need not be serialised */
		FUSE_PARALLEL_DIROPS;

	memset(out, 0, sizeof(*out));
	out->major = FUSE_KERNEL_VERSION;
	out->minor = in->minor < FUSE_KERNEL_MINOR_VERSION ?
		     in->minor : FUSE_KERNEL_MINOR_VERSION;
	out->max_readahead = in->max_readahead;
	out->flags = (uint32_t)(offered & wanted);
	out->flags2 = (uint32_t)((offered & wanted) >> 32);
	/*
	 * The kernel sizes ring payloads as max(8 KiB, max_write, max_pages
	 * pages) and REGISTER refuses a smaller iov[1]: derive both from the
	 * one --payload-size so they can never disagree.
	 */
	out->max_write = (uint32_t)o->payload_size;
	out->max_pages = (uint16_t)(o->payload_size / (size_t)page_size);
	/* doc: init-flags-end */
	/* let every ring entry hold a background request (readahead, async) */
	bg = (uint64_t)nr_queues * o->queue_depth;
	out->max_background = (uint16_t)(bg > 65535 ? 65535 : bg);
	out->congestion_threshold = (uint16_t)(out->max_background * 3 / 4);
	out->time_gran = 1;	/* nanosecond timestamps, as the backing fs */
	return 0;
}
