// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * proto.c: the FUSE wire format, with no I/O: what each opcode carries,
 * splitting a request into header/argument/data, building replies, packing
 * dirents, and the FUSE_INIT negotiation. Pure functions, unit-tested in
 * tests/. It knows nothing of the file system (ops.c).
 */
#include "fuse-uring.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

/* ---- what the protocol says about each opcode ------------------------- */

/* doc: opcode-table-begin */
/*
 * One row per opcode of Linux 7.2, read off its fs/fuse:
 *
 * - arg_size: the per-opcode header, in_args[0] when that is a struct (it
 *   goes to the ring's op_in, and on /dev/fuse comes right after
 *   fuse_in_header); 0 when the request starts with names or has no
 *   arguments. SETXATTR's header is 8 bytes unless FUSE_SETXATTR_EXT was
 *   negotiated, which this server does not ask for.
 * - out_args: the reply has data after fuse_out_header (out_numargs > 0).
 *   With a buffer ring this decides whether the kernel lent the request a
 *   buffer (see bufring_req_has_buf()), so a row that says true wrongly
 *   makes the server write into a buffer it does not hold.
 * - no_reply: the kernel expects no answer.
 *
 * What the server does with an opcode is in ops.c, not here.
 */
static const struct fuse_op_info fuse_op_infos[] = {
	[FUSE_LOOKUP] = { "LOOKUP", 0, .out_args = true },
	[FUSE_FORGET] = { "FORGET", sizeof(struct fuse_forget_in),
			  .no_reply = true },
	[FUSE_GETATTR] = { "GETATTR", sizeof(struct fuse_getattr_in),
			   .out_args = true },
	[FUSE_SETATTR] = { "SETATTR", sizeof(struct fuse_setattr_in),
			   .out_args = true },
	[FUSE_READLINK] = { "READLINK", 0, .out_args = true },
	[FUSE_SYMLINK] = { "SYMLINK", 0, .out_args = true },
	[FUSE_MKNOD] = { "MKNOD", sizeof(struct fuse_mknod_in),
			 .out_args = true },
	[FUSE_MKDIR] = { "MKDIR", sizeof(struct fuse_mkdir_in),
			 .out_args = true },
	[FUSE_UNLINK] = { "UNLINK", 0 },
	[FUSE_RMDIR] = { "RMDIR", 0 },
	[FUSE_RENAME] = { "RENAME", sizeof(struct fuse_rename_in) },
	[FUSE_LINK] = { "LINK", sizeof(struct fuse_link_in), .out_args = true },
	[FUSE_OPEN] = { "OPEN", sizeof(struct fuse_open_in), .out_args = true },
	[FUSE_READ] = { "READ", sizeof(struct fuse_read_in), .out_args = true },
	[FUSE_WRITE] = { "WRITE", sizeof(struct fuse_write_in),
			 .out_args = true },
	[FUSE_STATFS] = { "STATFS", 0, .out_args = true },
	[FUSE_RELEASE] = { "RELEASE", sizeof(struct fuse_release_in) },
	[FUSE_FSYNC] = { "FSYNC", sizeof(struct fuse_fsync_in) },
	[FUSE_SETXATTR] = { "SETXATTR", FUSE_COMPAT_SETXATTR_IN_SIZE },
	[FUSE_GETXATTR] = { "GETXATTR", sizeof(struct fuse_getxattr_in),
			    .out_args = true },
	[FUSE_LISTXATTR] = { "LISTXATTR", sizeof(struct fuse_getxattr_in),
			     .out_args = true },
	[FUSE_REMOVEXATTR] = { "REMOVEXATTR", 0 },
	[FUSE_FLUSH] = { "FLUSH", sizeof(struct fuse_flush_in) },
	[FUSE_INIT] = { "INIT", sizeof(struct fuse_init_in), .out_args = true },
	[FUSE_OPENDIR] = { "OPENDIR", sizeof(struct fuse_open_in),
			   .out_args = true },
	[FUSE_READDIR] = { "READDIR", sizeof(struct fuse_read_in),
			   .out_args = true },
	[FUSE_RELEASEDIR] = { "RELEASEDIR", sizeof(struct fuse_release_in) },
	[FUSE_FSYNCDIR] = { "FSYNCDIR", sizeof(struct fuse_fsync_in) },
	[FUSE_GETLK] = { "GETLK", sizeof(struct fuse_lk_in), .out_args = true },
	[FUSE_SETLK] = { "SETLK", sizeof(struct fuse_lk_in) },
	[FUSE_SETLKW] = { "SETLKW", sizeof(struct fuse_lk_in) },
	[FUSE_ACCESS] = { "ACCESS", sizeof(struct fuse_access_in) },
	[FUSE_CREATE] = { "CREATE", sizeof(struct fuse_create_in),
			  .out_args = true },
	[FUSE_INTERRUPT] = { "INTERRUPT", sizeof(struct fuse_interrupt_in),
			     .no_reply = true },
	[FUSE_BMAP] = { "BMAP", sizeof(struct fuse_bmap_in), .out_args = true },
	[FUSE_DESTROY] = { "DESTROY", 0 },
	[FUSE_IOCTL] = { "IOCTL", sizeof(struct fuse_ioctl_in),
			 .out_args = true },
	[FUSE_POLL] = { "POLL", sizeof(struct fuse_poll_in), .out_args = true },
	[FUSE_NOTIFY_REPLY] = { "NOTIFY_REPLY",
				sizeof(struct fuse_notify_retrieve_in),
				.no_reply = true },
	[FUSE_BATCH_FORGET] = { "BATCH_FORGET",
				sizeof(struct fuse_batch_forget_in),
				.no_reply = true },
	[FUSE_FALLOCATE] = { "FALLOCATE", sizeof(struct fuse_fallocate_in) },
	[FUSE_READDIRPLUS] = { "READDIRPLUS", sizeof(struct fuse_read_in),
			       .out_args = true },
	[FUSE_RENAME2] = { "RENAME2", sizeof(struct fuse_rename2_in) },
	[FUSE_LSEEK] = { "LSEEK", sizeof(struct fuse_lseek_in),
			 .out_args = true },
	[FUSE_COPY_FILE_RANGE] = { "COPY_FILE_RANGE",
				   sizeof(struct fuse_copy_file_range_in),
				   .out_args = true },
	[FUSE_SETUPMAPPING] = { "SETUPMAPPING",
				sizeof(struct fuse_setupmapping_in) },
	[FUSE_REMOVEMAPPING] = { "REMOVEMAPPING",
				 sizeof(struct fuse_removemapping_in) },
	[FUSE_SYNCFS] = { "SYNCFS", sizeof(struct fuse_syncfs_in) },
	[FUSE_TMPFILE] = { "TMPFILE", sizeof(struct fuse_create_in),
			   .out_args = true },
	[FUSE_STATX] = { "STATX", sizeof(struct fuse_statx_in),
			 .out_args = true },
	[FUSE_COPY_FILE_RANGE_64] = { "COPY_FILE_RANGE_64",
				      sizeof(struct fuse_copy_file_range_in),
				      .out_args = true },
};
/* doc: opcode-table-end */

/* NULL for an opcode Linux 7.2 does not have. */
const struct fuse_op_info *fuse_op_info(uint32_t opcode)
{
	if (opcode >= sizeof(fuse_op_infos) / sizeof(fuse_op_infos[0]) ||
	    !fuse_op_infos[opcode].name)
		return NULL;
	return &fuse_op_infos[opcode];
}

const char *fuse_opcode_name(uint32_t opcode)
{
	const struct fuse_op_info *op = fuse_op_info(opcode);

	return op ? op->name : "UNKNOWN";
}

/* ---- requests --------------------------------------------------------- */

/*
 * A read(2) of /dev/fuse returns exactly one request: fuse_in_header, the
 * per-opcode header, then names or data, all back to back.
 */
int parse_dev_request(void *buf, size_t n, struct srv_req *r)
{
	const struct fuse_op_info *op;
	char *p = buf;

	if (n < sizeof(struct fuse_in_header))
		return -EINVAL;
	r->in = buf;
	if (r->in->len != n)
		return -EINVAL;

	op = fuse_op_info(r->in->opcode);
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
	const struct fuse_op_info *op;
	size_t arg_len;

	if (payload_sz > payload_cap || in->len < sizeof(*in) + payload_sz)
		return -EINVAL;
	/* in->len counts all three parts, so the op header's size falls out */
	arg_len = in->len - sizeof(*in) - payload_sz;
	op = fuse_op_info(in->opcode);
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

/*
 * The group FUSE_CREATE_SUPP_GROUP adds to CREATE, MKDIR, MKNOD and SYMLINK:
 * the new name's directory's group, sent when the caller is in it only as
 * a supplementary group (get_create_supp_group() in fs/fuse/dir.c).
 * Extensions end the request, total_extlen 8-byte units of them, each a
 * fuse_ext_header and its body. 1 and *gid if there is such a group, 0 if
 * not, -EINVAL if the extensions do not add up.
 */
int req_supp_group(const struct srv_req *r, uint32_t *gid)
{
	size_t len = (size_t)r->in->total_extlen * 8;
	const char *end = r->data + r->data_len;
	const char *p = end - len;
	struct fuse_ext_header xh;
	struct fuse_supp_groups sg;

	if (len > r->data_len)
		return -EINVAL;
	while (p < end) {
		if ((size_t)(end - p) < sizeof(xh))
			return -EINVAL;
		memcpy(&xh, p, sizeof(xh));	/* the data need not be aligned */
		if (xh.size < sizeof(xh) || xh.size % 8 ||
		    xh.size > (size_t)(end - p))
			return -EINVAL;
		if (xh.type == FUSE_EXT_GROUPS) {
			if (xh.size < sizeof(xh) + sizeof(sg) + sizeof(*gid))
				return -EINVAL;
			memcpy(&sg, p + sizeof(xh), sizeof(sg));
			if (sg.nr_groups != 1)	/* the kernel sends one */
				return -EINVAL;
			memcpy(gid, p + sizeof(xh) + sizeof(sg), sizeof(*gid));
			return 1;
		}
		p += xh.size;
	}
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
	/*
	 * exercise 01.3 begin: the reply, in the entry's buffers
	 * hint: the reply's fuse_out_header goes where the request's
	 *       fuse_in_header was, in hdr->in_out (build_dev_reply(), below,
	 *       fills one); its len counts the header and the reply data.
	 *       The data is already in the payload buffer, and the kernel
	 *       learns its size from ring_ent_in_out.payload_sz. An error
	 *       reply carries no data.
	 * read: docs/stock-protocol.rst, "A request and its reply"
	 * stub: (void)hdr;
	 * stub: (void)unique;
	 * stub: (void)error;
	 * stub: (void)out_len;
	 */
	struct fuse_out_header *oh = (void *)hdr->in_out;

	if (error)
		out_len = 0;
	build_dev_reply(oh, unique, error, out_len);
	hdr->ring_ent_in_out.payload_sz = (uint32_t)out_len;
	/* exercise 01.3 end */
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

/* fuse_statx is struct statx, field for field, without its padding. */
void statx_to_fuse_statx(const struct statx *sx, struct fuse_statx *f)
{
	memset(f, 0, sizeof(*f));
	f->mask = sx->stx_mask;
	f->blksize = sx->stx_blksize;
	f->attributes = sx->stx_attributes;
	f->nlink = sx->stx_nlink;
	f->uid = sx->stx_uid;
	f->gid = sx->stx_gid;
	f->mode = sx->stx_mode;
	f->ino = sx->stx_ino;
	f->size = sx->stx_size;
	f->blocks = sx->stx_blocks;
	f->attributes_mask = sx->stx_attributes_mask;
	f->atime.tv_sec = sx->stx_atime.tv_sec;
	f->atime.tv_nsec = sx->stx_atime.tv_nsec;
	f->btime.tv_sec = sx->stx_btime.tv_sec;
	f->btime.tv_nsec = sx->stx_btime.tv_nsec;
	f->ctime.tv_sec = sx->stx_ctime.tv_sec;
	f->ctime.tv_nsec = sx->stx_ctime.tv_nsec;
	f->mtime.tv_sec = sx->stx_mtime.tv_sec;
	f->mtime.tv_nsec = sx->stx_mtime.tv_nsec;
	f->rdev_major = sx->stx_rdev_major;
	f->rdev_minor = sx->stx_rdev_minor;
	f->dev_major = sx->stx_dev_major;
	f->dev_minor = sx->stx_dev_minor;
}

/*
 * What clearing set-user-ID and set-group-ID leaves of a mode, as the VFS
 * does it on a write (setattr_should_drop_suidgid()): set-user-ID always;
 * set-group-ID with group execute. Without group execute the VFS also
 * drops it when the writer is not in the file's group; the request does
 * not carry the writer's groups, so this server keeps it then.
 */
unsigned int mode_after_kill_suidgid(unsigned int mode)
{
	mode &= ~(unsigned int)S_ISUID;
	if (mode & S_IXGRP)
		mode &= ~(unsigned int)S_ISGID;
	return mode;
}

/* ---- FUSE_INIT -------------------------------------------------------- */

/*
 * The flags FUSE_INIT offers, all 64: flags2 (the upper 32 bits) only
 * exists from 7.36, with FUSE_INIT_EXT.
 */
uint64_t init_offered(const struct fuse_init_in *in)
{
	if (in->minor < 36 || !(in->flags & FUSE_INIT_EXT))
		return in->flags;
	return in->flags | ((uint64_t)in->flags2 << 32);
}

/*
 * Answer the kernel's offer. We take only the flags this server implements,
 * and FUSE_OVER_IO_URING, which the kernel offers only when the module
 * parameter enable_uring is set: without it the server cannot run, so say
 * so here (-EOPNOTSUPP) rather than hang later in REGISTER.
 *
 * The modes above iovec need their design's own flag (their
 * srv_mode_ops.init_needs): FUSE_HAS_URING_BUFRING for the v2 series'
 * (its patch 14), FUSE_HAS_IO_URING_BUFPOOL for 7.3's pool. A kernel
 * without the series ignores the REGISTER flags and takes a buffer-ring
 * REGISTER for an iovec one: every entry would then share header slot 0,
 * silently. So refuse a mode the kernel does not offer here
 * (-ENOPROTOOPT). The bits are only offered; the reply need not carry
 * them. With --fallback in one of the series' modes, ours carries
 * FUSE_HAS_URING_BUFRING: it tells the kernel that we try again, a rung
 * lower, when it refuses a REGISTER for want of a resource, so that the
 * refusal leaves io_uring on (kernel-patches/0020). The reply's minor is the lower of the kernel's and the header's:
 * 45 from the v2 header (whose files are most of this server), while
 * 7.3 offers 46; 7.3 asks no minor of the pool.
 */
int init_reply_build(const struct fuse_init_in *in, const struct srv_opts *o,
		     unsigned int nr_queues, long page_size,
		     struct fuse_init_out *out)
{
	const struct srv_mode_ops *ops;
	uint64_t offered, wanted, bg;

	if (in->major != FUSE_KERNEL_VERSION)
		return -EPROTO;
	/* flags2 (the upper 32 bits) only exist from 7.36, with FUSE_INIT_EXT */
	if (in->minor < 36 || !(in->flags & FUSE_INIT_EXT))
		return -EPROTO;
	/* doc: init-flags-begin */
	offered = init_offered(in);
	if (!(offered & FUSE_OVER_IO_URING))
		return -EOPNOTSUPP;
	ops = mode_ops(o->mode);
	if (ops && (offered & ops->init_needs) != ops->init_needs)
		return -ENOPROTOOPT;

	wanted = FUSE_INIT_EXT | FUSE_OVER_IO_URING |
		/* several READs of one file may be in flight (readahead) */
		FUSE_ASYNC_READ |
		/* WRITEs up to max_write, not 4 KiB each */
		FUSE_BIG_WRITES |
		/* max_pages below is meant; the default is 32 pages */
		FUSE_MAX_PAGES |
		/* LOOKUP/READDIR in one directory need not be serialised */
		FUSE_PARALLEL_DIROPS |
		/* the directory's group, where the caller has it only as a
		 * supplementary group (ops.c, as_caller()) */
		FUSE_CREATE_SUPP_GROUP |
		/* we clear set-user-ID and set-group-ID where the kernel says
		 * (ops.c, kill_suidgid()); in exchange it may remember that a
		 * file has no security.capability (SB_NOSEC), instead of
		 * asking for it with a GETXATTR before every WRITE */
		FUSE_HANDLE_KILLPRIV_V2;
	/* the series' modes need FUSE_HAS_URING_BUFRING: echo it (above) */
	if (o->fallback && ops && mode_uses_bufring(o->mode))
		wanted |= ops->init_needs;

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
