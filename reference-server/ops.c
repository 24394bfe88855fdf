// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * ops.c: the file system, a pass-through to BACKING_DIR (as libfuse's
 * passthrough_hp). One srv_<op> per opcode returning 0 or -errno, and one
 * table at the end in session order. Backing-store errors pass through.
 */
#include "fuse-uring.h"
#include "inodes.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/fsuid.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

/* How long the kernel may cache names and attributes, and that a name is
 * missing (--timeout). */
static unsigned int cache_timeout = SRV_DEFAULT_TIMEOUT;
static unsigned int negative_timeout;

/* doc: reply-begin */
/*
 * Claim the reply: len zeroed bytes at r->out. Call it only after the last
 * read of r->data: over io_uring, out and data are the same buffer.
 */
static void *reply(struct srv_req *r, size_t len)
{
	r->out_len = len;
	memset(r->out, 0, len);
	return r->out;
}
/* doc: reply-end */

/*
 * An O_PATH fd cannot be read, written, chmod-ed or truncated; its
 * /proc/self/fd link can be opened like the file itself.
 */
static void proc_path(int fd, char buf[64])
{
	snprintf(buf, 64, "/proc/self/fd/%d", fd);
}

static int stat_inode(const struct srv_inode *ino, struct stat *st)
{
	if (fstatat(ino->fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	return 0;
}

/* An O_PATH fd -> the kernel's entry for it, one more nlookup. Takes fd. */
static int fd_entry(int fd, struct fuse_entry_out *e)
{
	struct srv_inode *ino;
	struct stat st;
	int err;

	if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	err = inode_remember(fd, &st, &ino);
	if (err)
		return err;
	memset(e, 0, sizeof(*e));
	e->nodeid = inode_nodeid(ino);
	e->entry_valid = cache_timeout;
	e->attr_valid = cache_timeout;
	stat_to_fuse_attr(&st, &e->attr);
	return 0;
}

/* Shared by LOOKUP, MKDIR and CREATE: name -> inode, one more nlookup. */
static int do_lookup(struct srv_inode *parent, const char *name,
		     struct fuse_entry_out *e)
{
	int fd = openat(parent->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return fd_entry(fd, e);
}

/* ---- names ------------------------------------------------------------ */

static int srv_lookup(struct srv_req *r)
{
	struct fuse_entry_out e;
	const char *name;
	size_t n;
	int err;

	err = req_name(r, 0, &name, &n);
	if (!err)
		err = do_lookup(inode_get(r->in->nodeid), name, &e);
	/*
	 * A name that is not there: with --timeout, say so in an entry of
	 * nodeid 0, which the kernel keeps as a negative dentry for
	 * entry_valid; an ENOENT error it would ask again for, at the next
	 * open(O_CREAT) or stat of the name.
	 */
	if (err == -ENOENT && negative_timeout) {
		memset(&e, 0, sizeof(e));
		e.entry_valid = negative_timeout;
		err = 0;
	}
	if (!err)
		memcpy(reply(r, sizeof(e)), &e, sizeof(e));
	return err;
}

/* No reply: the kernel only tells us it dropped references. */
static int srv_forget(struct srv_req *r)
{
	const struct fuse_forget_in *in = r->arg;

	inode_forget(r->in->nodeid, in->nlookup);
	return 0;
}

static int srv_batch_forget(struct srv_req *r)
{
	const struct fuse_batch_forget_in *in = r->arg;
	const struct fuse_forget_one *one = (const void *)r->data;

	if (r->data_len / sizeof(*one) < in->count)
		return -EINVAL;
	for (uint32_t i = 0; i < in->count; i++)
		inode_forget(one[i].nodeid, one[i].nlookup);
	return 0;
}

/* ---- attributes ------------------------------------------------------- */

static int reply_attr(struct srv_req *r, const struct srv_inode *ino)
{
	struct fuse_attr_out *a;
	struct stat st;
	int err;

	err = stat_inode(ino, &st);
	if (err)
		return err;
	a = reply(r, sizeof(*a));
	a->attr_valid = cache_timeout;
	stat_to_fuse_attr(&st, &a->attr);
	return 0;
}

static int srv_getattr(struct srv_req *r)
{
	return reply_attr(r, inode_get(r->in->nodeid));
}

/*
 * statx(2) asking for more than the basic stats (the birth time) comes as
 * STATX; the kernel asks for STATX_BASIC_STATS | STATX_BTIME and takes what
 * the mask says came back.
 */
static int srv_statx(struct srv_req *r)
{
	const struct fuse_statx_in *in = r->arg;
	struct fuse_statx_out *o;
	struct statx sx;
	int flags = AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW |
		    ((int)in->sx_flags & AT_STATX_SYNC_TYPE);

	if (statx(inode_get(r->in->nodeid)->fd, "", flags, in->sx_mask, &sx) < 0)
		return -errno;
	o = reply(r, sizeof(*o));
	o->attr_valid = cache_timeout;
	statx_to_fuse_statx(&sx, &o->stat);
	return 0;
}

/*
 * FUSE_HANDLE_KILLPRIV_V2 (proto.c, init_reply_build()): the kernel leaves
 * the clearing of set-user-ID and set-group-ID to us, and flags the
 * requests where the VFS would clear them: a WRITE or a truncate by a
 * caller without CAP_FSETID (an open(O_TRUNC) comes as a truncate, since
 * we do not take FUSE_ATOMIC_O_TRUNC; a CREATE of a file that exists may
 * carry FUSE_OPEN_KILL_SUIDGID), and a chown. fallocate and
 * copy_file_range carry no flag: clears_privs_as_caller(). The backing
 * file system removes security.capability by itself when we write or
 * truncate. fd may be an O_PATH fd: the mode is changed through /proc.
 */
static int kill_suidgid(int fd)
{
	char proc[64];
	struct stat st;
	mode_t mode;

	proc_path(fd, proc);
	if (stat(proc, &st) < 0)
		return -errno;
	mode = (mode_t)mode_after_kill_suidgid(st.st_mode & 07777);
	if (mode != (st.st_mode & 07777) && chmod(proc, mode) < 0)
		return -errno;
	return 0;
}

/* A WRITE's part of it, before the data moves: also the zero-copy path's. */
int srv_write_kill_suidgid(const struct srv_req *r)
{
	const struct fuse_write_in *in = r->arg;

	if (!(in->write_flags & FUSE_WRITE_KILL_SUIDGID))
		return 0;
	return kill_suidgid((int)in->fh);
}

/* Each FATTR_ bit is one syscall; an open fh (FATTR_FH) is used if given. */
static int srv_setattr(struct srv_req *r)
{
	const struct fuse_setattr_in *in = r->arg;
	struct srv_inode *ino = inode_get(r->in->nodeid);
	int fh = (in->valid & FATTR_FH) ? (int)in->fh : -1;
	char proc[64];
	int res = 0;

	proc_path(ino->fd, proc);
	if (in->valid & FATTR_MODE)
		res = fh >= 0 ? fchmod(fh, in->mode) :
				fchmodat(AT_FDCWD, proc, in->mode, 0);
	if (!res && (in->valid & (FATTR_UID | FATTR_GID))) {
		uid_t uid = (in->valid & FATTR_UID) ? in->uid : (uid_t)-1;
		gid_t gid = (in->valid & FATTR_GID) ? in->gid : (gid_t)-1;

		res = fchownat(ino->fd, "", uid, gid,
			       AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
	}
	if (!res && (in->valid & FATTR_SIZE))
		res = fh >= 0 ? ftruncate(fh, (off_t)in->size) :
				truncate(proc, (off_t)in->size);
	if (!res && (in->valid & FATTR_KILL_SUIDGID)) {
		int err = kill_suidgid(ino->fd);

		if (err)
			return err;
	}
	if (!res && (in->valid & (FATTR_ATIME | FATTR_MTIME))) {
		struct timespec ts[2] = {
			{ .tv_nsec = UTIME_OMIT }, { .tv_nsec = UTIME_OMIT },
		};

		if (in->valid & FATTR_ATIME_NOW)
			ts[0].tv_nsec = UTIME_NOW;
		else if (in->valid & FATTR_ATIME)
			ts[0] = (struct timespec){ (time_t)in->atime,
						   in->atimensec };
		if (in->valid & FATTR_MTIME_NOW)
			ts[1].tv_nsec = UTIME_NOW;
		else if (in->valid & FATTR_MTIME)
			ts[1] = (struct timespec){ (time_t)in->mtime,
						   in->mtimensec };
		res = fh >= 0 ? futimens(fh, ts) :
				utimensat(AT_FDCWD, proc, ts, 0);
	}
	if (res < 0)
		return -errno;
	return reply_attr(r, ino);
}

/* ---- files ------------------------------------------------------------ */

/* The fh we hand the kernel is simply the backing file's fd. */
static int srv_open(struct srv_req *r)
{
	const struct fuse_open_in *in = r->arg;
	struct fuse_open_out *o;
	char proc[64];
	int fd;

	proc_path(inode_get(r->in->nodeid)->fd, proc);
	/* O_NOFOLLOW would refuse the /proc link itself */
	fd = open(proc, (int)in->flags & ~O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	o = reply(r, sizeof(*o));
	o->fh = (uint64_t)fd;
	return 0;
}

static int srv_create(struct srv_req *r)
{
	const struct fuse_create_in *in = r->arg;
	struct srv_inode *parent = inode_get(r->in->nodeid);
	struct {
		struct fuse_entry_out e;
		struct fuse_open_out o;
	} out;
	const char *name;
	size_t n;
	int fd, err;

	err = req_name(r, 0, &name, &n);
	if (err)
		return err;
	/* the kernel already applied the umask to mode (no FUSE_DONT_MASK) */
	fd = openat(parent->fd, name,
		    ((int)in->flags | O_CREAT) & ~O_NOFOLLOW, in->mode);
	if (fd < 0)
		return -errno;
	/* O_TRUNC of a file that was there already */
	err = (in->open_flags & FUSE_OPEN_KILL_SUIDGID) ? kill_suidgid(fd) : 0;
	err = err ? err : do_lookup(parent, name, &out.e);
	if (err) {
		close(fd);
		return err;
	}
	memset(&out.o, 0, sizeof(out.o));
	out.o.fh = (uint64_t)fd;
	memcpy(reply(r, sizeof(out)), &out, sizeof(out));
	return 0;
}

/*
 * open(O_TMPFILE): a file with no name, in the directory; linkat(2) may
 * give it one later (LINK). The kernel's name for it, "/", is not used.
 * The reply is CREATE's: an entry for the inode, and the open fh.
 */
static int srv_tmpfile(struct srv_req *r)
{
	const struct fuse_create_in *in = r->arg;
	struct {
		struct fuse_entry_out e;
		struct fuse_open_out o;
	} out;
	char proc[64];
	int fd, ipath, err;

	fd = openat(inode_get(r->in->nodeid)->fd, ".",
		    ((int)in->flags | O_TMPFILE) & ~(O_CREAT | O_NOFOLLOW),
		    in->mode);
	if (fd < 0)
		return -errno;
	/* the inode table keeps O_PATH fds: one more, through /proc */
	proc_path(fd, proc);
	ipath = open(proc, O_PATH | O_CLOEXEC);
	err = ipath < 0 ? -errno : fd_entry(ipath, &out.e);
	if (err) {
		close(fd);
		return err;
	}
	memset(&out.o, 0, sizeof(out.o));
	out.o.fh = (uint64_t)fd;
	memcpy(reply(r, sizeof(out)), &out, sizeof(out));
	return 0;
}

/* READ lands straight in the reply buffer: over io_uring, the payload. */
static int srv_read(struct srv_req *r)
{
	const struct fuse_read_in *in = r->arg;
	ssize_t n;

	if (in->size > r->out_size)
		return -EINVAL;
	n = pread((int)in->fh, r->out, in->size, (off_t)in->offset);
	if (n < 0)
		return -errno;
	r->out_len = (size_t)n;
	return 0;
}

static int srv_write(struct srv_req *r)
{
	const struct fuse_write_in *in = r->arg;
	struct fuse_write_out *o;
	ssize_t n;

	if (in->size > r->data_len)
		return -EINVAL;
	n = srv_write_kill_suidgid(r);
	if (n)
		return (int)n;
	n = pwrite((int)in->fh, r->data, in->size, (off_t)in->offset);
	if (n < 0)
		return -errno;
	o = reply(r, sizeof(*o));
	o->size = (uint32_t)n;
	return 0;
}

/* fallocate(2)'s modes the kernel passes on: KEEP_SIZE, PUNCH_HOLE, ZERO_RANGE. */
static int srv_fallocate(struct srv_req *r)
{
	const struct fuse_fallocate_in *in = r->arg;

	if (fallocate((int)in->fh, (int)in->mode, (off_t)in->offset,
		      (off_t)in->length) < 0)
		return -errno;
	return 0;
}

/*
 * Only SEEK_DATA and SEEK_HOLE come here (the kernel moves the file position
 * itself for the others): where the backing file's next data or hole is.
 */
static int srv_lseek(struct srv_req *r)
{
	const struct fuse_lseek_in *in = r->arg;
	struct fuse_lseek_out *o;
	off_t off = lseek((int)in->fh, (off_t)in->offset, (int)in->whence);

	if (off < 0)
		return -errno;
	o = reply(r, sizeof(*o));
	o->offset = (uint64_t)off;
	return 0;
}

/*
 * Copy between two open files without the data passing through the kernel
 * and back: the backing file system may even share the blocks. The kernel
 * asks with COPY_FILE_RANGE_64 (a 64-bit count back) and falls back to
 * COPY_FILE_RANGE (fuse_write_out's 32-bit size, len capped below 4 GiB).
 */
static ssize_t do_copy_file_range(const struct fuse_copy_file_range_in *in)
{
	loff_t off_in = (loff_t)in->off_in, off_out = (loff_t)in->off_out;

	return copy_file_range((int)in->fh_in, &off_in, (int)in->fh_out,
			       &off_out, in->len, (unsigned int)in->flags);
}

static int srv_copy_file_range_64(struct srv_req *r)
{
	struct fuse_copy_file_range_out *o;
	ssize_t n = do_copy_file_range(r->arg);

	if (n < 0)
		return -errno;
	o = reply(r, sizeof(*o));
	o->bytes_copied = (uint64_t)n;
	return 0;
}

static int srv_copy_file_range(struct srv_req *r)
{
	const struct fuse_copy_file_range_in *in = r->arg;
	struct fuse_write_out *o;
	ssize_t n;

	if (in->len > UINT32_MAX)
		return -EINVAL;	/* the kernel caps it; the reply could not say more */
	n = do_copy_file_range(in);
	if (n < 0)
		return -errno;
	o = reply(r, sizeof(*o));
	o->size = (uint32_t)n;
	return 0;
}

/*
 * FLUSH comes on every close(2) of the client's file; closing a dup gives
 * the backing file system the same chance to report errors (e.g. NFS).
 */
static int srv_flush(struct srv_req *r)
{
	const struct fuse_flush_in *in = r->arg;
	int fd = dup((int)in->fh);

	if (fd < 0 || close(fd) < 0)
		return -errno;
	return 0;
}

static int srv_fsync(struct srv_req *r)
{
	const struct fuse_fsync_in *in = r->arg;
	int res;

	if (in->fsync_flags & FUSE_FSYNC_FDATASYNC)
		res = fdatasync((int)in->fh);
	else
		res = fsync((int)in->fh);
	return res < 0 ? -errno : 0;
}

static int srv_release(struct srv_req *r)
{
	const struct fuse_release_in *in = r->arg;

	close((int)in->fh);	/* its errors were reported by FLUSH */
	return 0;
}

/* ---- directories ------------------------------------------------------ */

/* A directory fh: the stream and where the kernel last asked to be. */
struct srv_dir {
	DIR *dp;
	uint64_t offset;
	struct dirent *entry;	/* read but did not fit the last reply */
};

static int srv_opendir(struct srv_req *r)
{
	struct fuse_open_out *o;
	struct srv_dir *d;
	int fd, err;

	fd = openat(inode_get(r->in->nodeid)->fd, ".",
		    O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = calloc(1, sizeof(*d));
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	d->dp = fdopendir(fd);
	if (!d->dp) {
		err = -errno;
		close(fd);
		free(d);
		return err;
	}
	o = reply(r, sizeof(*o));
	o->fh = (uint64_t)(uintptr_t)d;
	return 0;
}

/*
 * Pack entries until the next one does not fit; the kernel comes back with
 * that entry's offset. It serialises READDIRs of one open directory.
 */
static int srv_readdir(struct srv_req *r)
{
	const struct fuse_read_in *in = r->arg;
	struct srv_dir *d = (struct srv_dir *)(uintptr_t)in->fh;
	size_t cap = in->size < r->out_size ? in->size : r->out_size;
	char *buf = r->out;
	size_t used = 0, len;

	if (in->offset != d->offset) {
		seekdir(d->dp, (long)in->offset);
		d->entry = NULL;
		d->offset = in->offset;
	}
	for (;;) {
		if (!d->entry) {
			errno = 0;
			d->entry = readdir(d->dp);
			if (!d->entry) {
				if (errno && used == 0)
					return -errno;
				break;
			}
		}
		len = dirent_pack(buf + used, cap - used, d->entry->d_name,
				  d->entry->d_ino, (uint64_t)d->entry->d_off,
				  d->entry->d_type);
		if (!len)
			break;
		used += len;
		d->offset = (uint64_t)d->entry->d_off;
		d->entry = NULL;
	}
	r->out_len = used;
	return 0;
}

static int srv_releasedir(struct srv_req *r)
{
	const struct fuse_release_in *in = r->arg;
	struct srv_dir *d = (struct srv_dir *)(uintptr_t)in->fh;

	closedir(d->dp);
	free(d);
	return 0;
}

/* Shared by MKDIR, SYMLINK, LINK and MKNOD: reply with the new name's entry. */
static int reply_entry(struct srv_req *r, struct srv_inode *parent,
		       const char *name)
{
	struct fuse_entry_out e;
	int err = do_lookup(parent, name, &e);

	if (!err)
		memcpy(reply(r, sizeof(e)), &e, sizeof(e));
	return err;
}

static int srv_mkdir(struct srv_req *r)
{
	const struct fuse_mkdir_in *in = r->arg;
	struct srv_inode *parent = inode_get(r->in->nodeid);
	const char *name;
	size_t n;
	int err;

	err = req_name(r, 0, &name, &n);
	if (err)
		return err;
	if (mkdirat(parent->fd, name, in->mode) < 0)
		return -errno;
	return reply_entry(r, parent, name);
}

/* "name\0target\0": the new link's name, then what it points to. */
static int srv_symlink(struct srv_req *r)
{
	struct srv_inode *parent = inode_get(r->in->nodeid);
	const char *name, *target;
	size_t n1, n2;
	int err;

	err = req_name(r, 0, &name, &n1);
	if (!err)
		err = req_name(r, n1, &target, &n2);
	if (err)
		return err;
	if (symlinkat(target, parent->fd, name) < 0)
		return -errno;
	return reply_entry(r, parent, name);
}

/*
 * The target, without a NUL. Our O_PATH | O_NOFOLLOW fd of a symlink is the
 * link itself, which readlinkat() reads with an empty name.
 */
static int srv_readlink(struct srv_req *r)
{
	ssize_t n = readlinkat(inode_get(r->in->nodeid)->fd, "", r->out,
			       r->out_size);

	if (n < 0)
		return -errno;
	if ((size_t)n == r->out_size)
		return -ENAMETOOLONG;	/* the reply buffer cut it short */
	r->out_len = (size_t)n;
	return 0;
}

/*
 * A new name for an existing inode. linkat() from the /proc link follows it
 * to the inode (AT_SYMLINK_FOLLOW), which AT_EMPTY_PATH would also do but
 * only with CAP_DAC_READ_SEARCH.
 */
static int srv_link(struct srv_req *r)
{
	const struct fuse_link_in *in = r->arg;
	struct srv_inode *parent = inode_get(r->in->nodeid);
	const char *name;
	char proc[64];
	size_t n;
	int err;

	err = req_name(r, 0, &name, &n);
	if (err)
		return err;
	proc_path(inode_get(in->oldnodeid)->fd, proc);
	if (linkat(AT_FDCWD, proc, parent->fd, name, AT_SYMLINK_FOLLOW) < 0)
		return -errno;
	return reply_entry(r, parent, name);
}

/* Fifos, sockets and device nodes; the kernel applied the umask already. */
static int srv_mknod(struct srv_req *r)
{
	const struct fuse_mknod_in *in = r->arg;
	struct srv_inode *parent = inode_get(r->in->nodeid);
	const char *name;
	size_t n;
	int err;

	err = req_name(r, 0, &name, &n);
	if (err)
		return err;
	if (mknodat(parent->fd, name, in->mode, in->rdev) < 0)
		return -errno;
	return reply_entry(r, parent, name);
}

static int do_unlink(struct srv_req *r, int flags)
{
	const char *name;
	size_t n;
	int err;

	err = req_name(r, 0, &name, &n);
	if (err)
		return err;
	if (unlinkat(inode_get(r->in->nodeid)->fd, name, flags) < 0)
		return -errno;
	return 0;
}

static int srv_unlink(struct srv_req *r)
{
	return do_unlink(r, 0);
}

static int srv_rmdir(struct srv_req *r)
{
	return do_unlink(r, AT_REMOVEDIR);
}

/* Both carry "oldname\0newname\0"; RENAME2 adds RENAME_* flags. */
static int do_rename(struct srv_req *r, uint64_t newdir, unsigned int flags)
{
	const char *oldname, *newname;
	size_t n1, n2;
	int err;

	err = req_name(r, 0, &oldname, &n1);
	if (!err)
		err = req_name(r, n1, &newname, &n2);
	if (err)
		return err;
	if (renameat2(inode_get(r->in->nodeid)->fd, oldname,
		      inode_get(newdir)->fd, newname, flags) < 0)
		return -errno;
	return 0;
}

static int srv_rename(struct srv_req *r)
{
	const struct fuse_rename_in *in = r->arg;

	return do_rename(r, in->newdir, 0);
}

static int srv_rename2(struct srv_req *r)
{
	const struct fuse_rename2_in *in = r->arg;

	return do_rename(r, in->newdir, in->flags);
}

/* ---- extended attributes ----------------------------------------------- */

/*
 * The *xattr(2) calls need a path or a real fd, and our fds are O_PATH:
 * go through the /proc link, which leads to the inode. For a symlink it
 * would lead past the link to its target, so, as passthrough_hp does,
 * refuse: there is no race-free way to reach a symlink's own attributes.
 * The type is the one remembered at LOOKUP (it cannot change): no
 * fstatat() per call, which passthrough_hp does not make either.
 */
static int xattr_path(const struct srv_req *r, char proc[64])
{
	struct srv_inode *ino = inode_get(r->in->nodeid);

	if (ino->type == S_IFLNK)
		return -EOPNOTSUPP;
	proc_path(ino->fd, proc);
	return 0;
}

/*
 * GETXATTR and LISTXATTR share one reply rule: size 0 asks how big the
 * value is (fuse_getxattr_out), else the value itself, or -ERANGE if it is
 * larger than size. A value that fits size but not our reply buffer (cap,
 * a small --payload-size) is -E2BIG: -ERANGE would send the caller to ask
 * for the size again, and then again with the same size.
 */
static int reply_xattr(struct srv_req *r, uint32_t size, size_t cap, ssize_t n)
{
	struct fuse_getxattr_out *o;

	if (n < 0 && errno == ERANGE && cap < size)
		return -E2BIG;
	if (n < 0)
		return -errno;
	if (size == 0) {
		o = reply(r, sizeof(*o));
		o->size = (uint32_t)n;
	} else {
		r->out_len = (size_t)n;
	}
	return 0;
}

static int srv_getxattr(struct srv_req *r)
{
	const struct fuse_getxattr_in *in = r->arg;
	size_t cap = in->size < r->out_size ? in->size : r->out_size;
	const char *name;
	char proc[64];
	size_t n;
	int err;

	err = req_name(r, 0, &name, &n);
	if (!err)
		err = xattr_path(r, proc);
	if (err)
		return err;
	return reply_xattr(r, in->size, cap,
			   getxattr(proc, name, cap ? r->out : NULL, cap));
}

static int srv_listxattr(struct srv_req *r)
{
	const struct fuse_getxattr_in *in = r->arg;
	size_t cap = in->size < r->out_size ? in->size : r->out_size;
	char proc[64];
	int err = xattr_path(r, proc);

	if (err)
		return err;
	return reply_xattr(r, in->size, cap,
			   listxattr(proc, cap ? r->out : NULL, cap));
}

/*
 * "name\0" then the value (size bytes). The argument is the 8-byte compat
 * struct: this server does not negotiate FUSE_SETXATTR_EXT (proto.c).
 */
static int srv_setxattr(struct srv_req *r)
{
	const struct fuse_setxattr_in *in = r->arg;
	const char *name;
	char proc[64];
	size_t n;
	int err;

	err = req_name(r, 0, &name, &n);
	if (!err && in->size > r->data_len - n)
		err = -EINVAL;	/* the value does not fit what came */
	if (!err)
		err = xattr_path(r, proc);
	if (err)
		return err;
	if (setxattr(proc, name, r->data + n, in->size, (int)in->flags) < 0)
		return -errno;
	return 0;
}

static int srv_removexattr(struct srv_req *r)
{
	const char *name;
	char proc[64];
	size_t n;
	int err;

	err = req_name(r, 0, &name, &n);
	if (!err)
		err = xattr_path(r, proc);
	if (err)
		return err;
	if (removexattr(proc, name) < 0)
		return -errno;
	return 0;
}

/* ---- the file system as a whole --------------------------------------- */

static int srv_statfs(struct srv_req *r)
{
	struct fuse_statfs_out *o;
	struct statfs sf;

	if (fstatfs(inode_get(r->in->nodeid)->fd, &sf) < 0)
		return -errno;
	o = reply(r, sizeof(*o));
	o->st.blocks = sf.f_blocks;
	o->st.bfree = sf.f_bfree;
	o->st.bavail = sf.f_bavail;
	o->st.files = sf.f_files;
	o->st.ffree = sf.f_ffree;
	o->st.bsize = (uint32_t)sf.f_bsize;
	o->st.namelen = (uint32_t)sf.f_namelen;
	o->st.frsize = (uint32_t)sf.f_frsize;
	return 0;
}

/* Sent before unmount only for fuseblk mounts; nothing to flush here. */
static int srv_destroy(struct srv_req *r)
{
	(void)r;
	return 0;
}

/*
 * INTERRUPT names a request we are running; our backing syscalls are not
 * interruptible, so the request just finishes. Ignoring it is allowed.
 */
static int srv_interrupt(struct srv_req *r)
{
	(void)r;
	return 0;
}

/*
 * What this file system does with each opcode, in the order a session
 * meets them. The sizes and reply shapes are the protocol's, in proto.c.
 * INIT is answered in session.c; an opcode without a handler gets -ENOSYS.
 */
typedef int (*srv_handler)(struct srv_req *r);

/* doc: handlers-begin */
static const srv_handler srv_handlers[] = {
	[FUSE_LOOKUP]		= srv_lookup,
	[FUSE_FORGET]		= srv_forget,
	[FUSE_BATCH_FORGET]	= srv_batch_forget,
	[FUSE_GETATTR]		= srv_getattr,
	[FUSE_SETATTR]		= srv_setattr,
	[FUSE_STATX]		= srv_statx,
	[FUSE_OPEN]		= srv_open,
	[FUSE_CREATE]		= srv_create,
	[FUSE_TMPFILE]		= srv_tmpfile,
	[FUSE_READ]		= srv_read,
	[FUSE_WRITE]		= srv_write,
	[FUSE_FLUSH]		= srv_flush,
	[FUSE_FSYNC]		= srv_fsync,
	[FUSE_RELEASE]		= srv_release,
	[FUSE_FALLOCATE]	= srv_fallocate,
	[FUSE_LSEEK]		= srv_lseek,
	[FUSE_COPY_FILE_RANGE_64] = srv_copy_file_range_64,
	[FUSE_COPY_FILE_RANGE]	= srv_copy_file_range,
	[FUSE_OPENDIR]		= srv_opendir,
	[FUSE_READDIR]		= srv_readdir,
	[FUSE_RELEASEDIR]	= srv_releasedir,
	[FUSE_MKDIR]		= srv_mkdir,
	[FUSE_SYMLINK]		= srv_symlink,
	[FUSE_READLINK]		= srv_readlink,
	[FUSE_LINK]		= srv_link,
	[FUSE_MKNOD]		= srv_mknod,
	[FUSE_RMDIR]		= srv_rmdir,
	[FUSE_UNLINK]		= srv_unlink,
	[FUSE_RENAME]		= srv_rename,
	[FUSE_RENAME2]		= srv_rename2,
	[FUSE_STATFS]		= srv_statfs,
	[FUSE_GETXATTR]		= srv_getxattr,
	[FUSE_LISTXATTR]	= srv_listxattr,
	[FUSE_SETXATTR]		= srv_setxattr,
	[FUSE_REMOVEXATTR]	= srv_removexattr,
	[FUSE_INTERRUPT]	= srv_interrupt,
	[FUSE_DESTROY]		= srv_destroy,
};
/* doc: handlers-end */

/* doc: as-caller-begin */
/*
 * Whose name is on a new file. The kernel checks permissions itself (the
 * mount has default_permissions), so the server may act with its own
 * rights, except where the backing file system records who acted: a new
 * file, directory, node or symlink belongs to the fsuid and fsgid that made
 * it (or to the directory's group, under set-group-ID). A server that may
 * change its file-system identity (root, with CAP_SETUID and CAP_SETGID)
 * makes them as the caller. setfsuid(), setfsgid() and the raw setgroups
 * syscall change only the calling thread (glibc's setgroups() would change
 * every thread), and each queue has its own thread. As another fsuid the
 * thread also loses CAP_MKNOD, CAP_DAC_OVERRIDE and the other file
 * capabilities, so the backing file system checks the caller's rights a
 * second time. The caller's supplementary groups are not in the request;
 * FUSE_CREATE_SUPP_GROUP sends the one that matters, the directory's.
 */
static bool creates_a_name(uint32_t opcode)
{
	return opcode == FUSE_CREATE || opcode == FUSE_TMPFILE ||
	       opcode == FUSE_MKDIR || opcode == FUSE_MKNOD ||
	       opcode == FUSE_SYMLINK;
}

/*
 * Requests that change a file's data without a kill flag: with
 * FUSE_HANDLE_KILLPRIV_V2 the kernel leaves clearing set-user-ID and
 * set-group-ID to us (kill_suidgid()) but flags only WRITE, truncate and
 * chown. Made as the caller, these clear them in the backing file system
 * as the VFS would: the thread lacks CAP_FSETID unless the caller is root.
 */
static bool clears_privs_as_caller(uint32_t opcode)
{
	return opcode == FUSE_FALLOCATE || opcode == FUSE_COPY_FILE_RANGE ||
	       opcode == FUSE_COPY_FILE_RANGE_64;
}

/*
 * Set by ops_init(): whether this server can take on the caller's ids, and
 * its own (as_caller() always puts them back, so they stay these).
 */
static bool can_act_as_caller;
static uid_t own_fsuid;
static gid_t own_fsgid;

static bool probe_act_as_caller(void)
{
	uid_t uid = (uid_t)setfsuid((uid_t)-1);	/* -1 changes nothing */
	gid_t gid = (gid_t)setfsgid((gid_t)-1);

	own_fsuid = uid;
	own_fsgid = gid;
	if (geteuid() != 0)
		return false;
	setfsuid(65534);
	setfsgid(65534);
	/* each returns the id it replaces: 65534 if the switch took */
	return setfsuid(uid) == 65534 && setfsgid(gid) == 65534;
}

static int as_caller(srv_handler handler, struct srv_req *r)
{
	gid_t groups[64], dir_group;
	int ngroups = -1, err;

	err = req_supp_group(r, &dir_group);
	if (err < 0)
		return err;
	/*
	 * A caller who is who we are (root, most often): the switch would
	 * change nothing, and costs six syscalls. Not with a supplementary
	 * group to take on: that changes the groups.
	 */
	if (err == 0 && r->in->uid == own_fsuid && r->in->gid == own_fsgid)
		return handler(r);
	if (err == 1) {
		ngroups = getgroups(64, groups);
		if (ngroups < 0 || syscall(SYS_setgroups, 1, &dir_group) < 0)
			return -EPERM;
	}
	setfsgid(r->in->gid);
	setfsuid(r->in->uid);
	/* they report no errors: read back that the switch took */
	if ((uid_t)setfsuid((uid_t)-1) == r->in->uid &&
	    (gid_t)setfsgid((gid_t)-1) == r->in->gid)
		err = handler(r);
	else
		err = -EPERM;
	setfsuid(own_fsuid);
	setfsgid(own_fsgid);
	if (ngroups >= 0)
		syscall(SYS_setgroups, ngroups, groups);
	return err;
}
/* doc: as-caller-end */

/* doc: dispatch-begin */
/* Run the handler; anything without one is -ENOSYS, which the kernel
 * remembers per opcode (it will not ask again). */
int srv_dispatch(struct srv_req *r)
{
	uint32_t opcode = r->in->opcode;

	if (opcode >= sizeof(srv_handlers) / sizeof(srv_handlers[0]) ||
	    !srv_handlers[opcode])
		return -ENOSYS;
	if (can_act_as_caller && (creates_a_name(opcode) ||
				  /* root, like us, clears nothing */
				  (clears_privs_as_caller(opcode) && r->in->uid)))
		return as_caller(srv_handlers[opcode], r);
	return srv_handlers[opcode](r);
}
/* doc: dispatch-end */

/* --timeout: what the replies let the kernel cache, in seconds */
void ops_set_timeouts(unsigned int timeout, unsigned int negative)
{
	cache_timeout = timeout;
	negative_timeout = negative;
}

int ops_init(const char *backing_dir)
{
	can_act_as_caller = probe_act_as_caller();
	return inodes_init(backing_dir);
}

void ops_destroy(void)
{
	inodes_destroy();
}
