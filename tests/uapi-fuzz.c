// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * tests/uapi-fuzz.c: a fuzzer for the uapi of FUSE over io_uring with the
 * series' buffer rings, pinned regions and zero-copy. A FUSE server is free
 * to put anything into every field the kernel reads, and many servers run
 * without privileges; this program is such a server, a hostile one, and
 * checks that the kernel survives it: no KASAN, KFENCE or lockdep report,
 * no WARNING, BUG or oops, no hung task, nothing kmemleak finds, and no
 * command or process that never ends.
 *
 * It runs episodes until its time is up. Each episode, in a process of its
 * own (so that kill -9 is one way of ending it):
 *   - mounts a small file system (files f0..f3) with a connection of its
 *     own and answers FUSE_INIT with FUSE_OVER_IO_URING;
 *   - sets up one thread and one SQE128 ring per queue (one queue per
 *     possible CPU), registers each queue's entries in one of the five
 *     modes (iovec, bufring, pinned-headers, pinned-buffers, zero-copy),
 *     with now and then one field of a REGISTER set to a boundary or
 *     random value (seldom before the ring is ready, often after it):
 *     flags, qid, sqe->buf_index, init.queue_depth, init.buf_size,
 *     padding, sqe->len, the iovec pointer, the regions' lengths and
 *     alignment, the command op;
 *   - serves the requests of a workload (another process: stat, open,
 *     read and write with and without O_DIRECT, at random offsets and
 *     sizes, readdir, statfs) and bends some replies and commits:
 *     payload_sz, unique, error, padding, commit_id, qid, a second commit
 *     of the same request, IOSQE_ASYNC (the command runs from io-wq);
 *   - in zero-copy mode moves the data with READ_FIXED/WRITE_FIXED, while
 *     a chaos thread updates and unregisters the fixed-buffer table; once
 *     per queue and episode at most, answers a zero-copied READ with a
 *     READ_FIXED from a pipe nobody writes, which blocks until the ring
 *     goes (the request ends only when io_uring lets go of its pages:
 *     kernel patch 0015), and commits it meanwhile;
 *   - now and then forks a process that holds the /dev/fuse fd and sends
 *     a REGISTER or a COMMIT_AND_FETCH from a ring of its own, in memory
 *     that is not the queue's (refused by patch 0016 on buffer rings);
 *   - answers FUSE_INIT with or without FUSE_HAS_URING_BUFRING, so that a
 *     refused REGISTER leaves io_uring on or switches it off (patch 0020);
 *   - now and then mprotect()s or munmap()s a region the kernel uses;
 *   - ends in one of four ways, at a random point: umount, umount -f, an
 *     abort through fusectl, or kill -9 of the server.
 * Then every process of the episode must be gone within 30 s, and the
 * kernel log since the episode began must hold no report.
 *
 * Every decision comes from a seeded generator: --seed S --mode M
 * --episodes 1 replays an episode's decisions (the interleaving of its
 * threads is the machine's). The program prints the seed of each episode
 * that failed, with the command that replays it.
 *
 * Output: "# ..." lines, then one result line per mode run:
 *   ok uapi-fuzz zero-copy: 12 episodes, 3456 operations, 0 kernel reports
 *   not ok uapi-fuzz zero-copy: episode 7 (seed 0x...): the kernel logged
 *     "BUG: KASAN: slab-use-after-free in ..." (replay: ...)
 * Exit status 1 if any mode failed.
 *
 * Build: make tests (static, against the patched uapi in build/headers).
 * Needs root (mount, /dev/kmsg, fusectl): it runs in the guest.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kernel-log.h"

#define MNT_DEFAULT	"/tmp/uapi-fuzz-mnt"
#define ENABLE_URING	"/sys/module/fuse/parameters/enable_uring"
#define FUSECTL		"/sys/fs/fuse/connections"
#define HDR_SZ		sizeof(struct fuse_uring_req_header)
#define MAX_QUEUES	16
#define MAX_DEPTH	8
#define NFILES		4
#define FILE_SIZE	(64 * 1024)
#define EXIT_MS		30000	/* after the end, every process must be gone */

/* ---- the generator: splitmix64, one state per thread ------------------ */

static uint64_t next_u64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static unsigned int below(uint64_t *s, unsigned int n)
{
	return n ? (unsigned int)(next_u64(s) % n) : 0;
}

/* true with probability pct/100 */
static bool chance(uint64_t *s, unsigned int pct)
{
	return below(s, 100) < pct;
}

/* A field's value: usually v, sometimes a boundary or anything at all. */
static uint64_t bend(uint64_t *s, uint64_t v, unsigned int pct)
{
	static const uint64_t edges[] = {
		0, 1, 2, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000, 0x7fffffff,
		0x80000000, 0xffffffff, 0x100000000ULL, UINT64_MAX,
	};

	if (!chance(s, pct))
		return v;
	switch (below(s, 4)) {
	case 0: return v + 1;
	case 1: return v - 1;
	case 2: return edges[below(s, sizeof(edges) / sizeof(edges[0]))];
	default: return next_u64(s);
	}
}

/* ---- the modes ------------------------------------------------------------ */

struct mode {
	const char *name;
	uint64_t flags;		/* fuse_uring_cmd_req.flags of every REGISTER */
};

static const struct mode modes[] = {
	{ "iovec", 0 },
	{ "bufring", FUSE_URING_BUFRING },
	{ "pinned-headers", FUSE_URING_BUFRING | FUSE_URING_PINNED_HEADERS },
	{ "pinned-buffers", FUSE_URING_BUFRING | FUSE_URING_PINNED_HEADERS |
		    FUSE_URING_PINNED_BUFFERS },
	{ "zero-copy", FUSE_URING_BUFRING | FUSE_URING_PINNED_HEADERS |
		       FUSE_URING_PINNED_BUFFERS | FUSE_URING_ZERO_COPY },
};
#define NMODES (sizeof(modes) / sizeof(modes[0]))

/* ---- what an episode counts, in memory its supervisor can read --------- */

struct stats {
	long registers, registers_bent, registers_ok;
	long requests, replies_bent, commits, commits_bent, async;
	long fixed_ops, table_ops, region_ops;
	long fixed_blocking;	/* READ_FIXEDs left waiting on a pipe */
	long other_process;	/* commands from a forked process */
	long workload_ops;
	int mounted;		/* the server answered FUSE_INIT */
	int stop;		/* the supervisor ends the episode */
};

static void count(long *c)
{
	__atomic_add_fetch(c, 1, __ATOMIC_RELAXED);
}

/* ---- the server ----------------------------------------------------------- */

static const char *mnt = MNT_DEFAULT;
static size_t page_size;
static unsigned int nr_queues;
static struct stats *st;

struct queue {
	unsigned int qid;
	uint64_t rng;
	const struct mode *mode;
	struct io_uring ring;
	bool ring_up;
	int fd;			/* /dev/fuse */
	unsigned int depth;	/* entries registered */
	uint32_t buf_size, max_payload;
	unsigned int nbufs;
	/* buffer ring: one headers region, one payload region */
	char *headers, *payload;
	size_t headers_len, payload_len;
	/* iovec mode: per entry */
	char *ent_hdr[MAX_DEPTH], *ent_payload[MAX_DEPTH];
	struct iovec iov[MAX_DEPTH][2];
	char *arena;		/* where the regions are (map_region()) */
	size_t arena_used;
	int memfd;		/* zero-copy: the data READ_FIXED reads */
	int pipe[2];		/* zero-copy: nobody writes it (blocking_read()) */
	bool blocked;		/* a READ_FIXED waits on the pipe */
	unsigned int async_pct;	/* commands issued with IOSQE_ASYNC, in % */
	bool sharp;		/* zero-copy: io-wq on CPU 0 (see table_chaos()) */
	bool protected;		/* a region is not writable (region_chaos()) */
	pthread_t th;
};

#define UD(kind, ent)	(((uint64_t)(kind) << 32) | (ent))
#define UD_KIND(ud)	((unsigned int)((ud) >> 32))
#define UD_ENT(ud)	((unsigned int)(ud) & 0xffff)
enum { UD_REGISTER = 1, UD_COMMIT, UD_FIXED, UD_BLOCKING };

static struct io_uring_sqe *cmd_sqe(struct queue *q, uint32_t op,
				    const struct fuse_uring_cmd_req *req,
				    uint64_t ud)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);

	if (!sqe)
		return NULL;
	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = q->fd;
	sqe->cmd_op = op;
	sqe->user_data = ud;
	memcpy(sqe->cmd, req, sizeof(*req));
	if (chance(&q->rng, q->async_pct)) {
		sqe->flags |= IOSQE_ASYNC;
		count(&st->async);
	}
	return sqe;
}

/*
 * Each queue's regions come from an arena of its own: ARENA bytes of
 * address space reserved PROT_NONE, of which each region makes its pages
 * readable and writable, one guard page apart. A bent REGISTER points the
 * kernel past a region (an iovec base moved, a length stretched up to the
 * 2 GiB import_iovec() allows); it must find nothing there but the arena's
 * PROT_NONE pages (-EFAULT), never the fuzzer's own memory, which it would
 * overwrite as the server asked it to.
 */
#define ARENA	(4ULL << 30)

static void *map_region(struct queue *q, size_t len)
{
	size_t pages = (len + page_size - 1) / page_size * page_size;
	char *p = q->arena + q->arena_used;

	if (q->arena_used + pages + page_size > ARENA ||
	    mprotect(p, pages, PROT_READ | PROT_WRITE) < 0)
		return NULL;
	q->arena_used += pages + page_size;
	return p;
}

/*
 * The memory of a queue, in its mode's layout: depth and buf_size are the
 * episode's (the kernel wants every queue alike), the number of buffers
 * the queue's own. 0 or -1.
 */
static int queue_alloc(struct queue *q)
{
	unsigned int i;

	q->nbufs = 1 + below(&q->rng, q->depth + 2);
	if (!q->mode->flags) {
		for (i = 0; i < q->depth; i++) {
			q->ent_hdr[i] = map_region(q, HDR_SZ);
			q->ent_payload[i] = map_region(q, q->max_payload);
			if (!q->ent_hdr[i] || !q->ent_payload[i])
				return -1;
			q->iov[i][0] = (struct iovec){ q->ent_hdr[i], HDR_SZ };
			q->iov[i][1] = (struct iovec){ q->ent_payload[i], q->max_payload };
		}
		return 0;
	}
	/* sometimes longer than needed, or not a multiple of buf_size */
	q->headers_len = q->depth * HDR_SZ + below(&q->rng, 2) * page_size;
	q->payload_len = (size_t)q->nbufs * q->buf_size +
			 (chance(&q->rng, 30) ? below(&q->rng, q->buf_size) : 0);
	q->headers = map_region(q, q->headers_len);
	q->payload = map_region(q, q->payload_len);
	return q->headers && q->payload ? 0 : -1;
}

/*
 * One REGISTER of entry ent, with one field bent with probability pct. A
 * refused REGISTER before the ring is ready switches io_uring off for the
 * connection, so the first ones are seldom bent; later ones, refused on a
 * ready ring, are bent more often.
 */
static void queue_register(struct queue *q, unsigned int ent, unsigned int pct)
{
	struct fuse_uring_cmd_req req = {
		.flags = q->mode->flags, .qid = (uint16_t)q->qid,
		.init = { .buf_size = q->buf_size,
			  .queue_depth = (uint16_t)q->depth },
	};
	static struct iovec bent_iov[MAX_QUEUES][2];
	struct iovec *iov = q->mode->flags ? bent_iov[q->qid] : q->iov[ent];
	struct io_uring_sqe *sqe;
	uint32_t op = FUSE_IO_URING_CMD_REGISTER;
	unsigned int len = 2;
	uint16_t index = (uint16_t)ent;

	if (q->mode->flags) {
		iov[0] = (struct iovec){ q->headers, q->headers_len };
		iov[1] = (struct iovec){ q->payload, q->payload_len };
	}
	count(&st->registers);
	if (chance(&q->rng, pct)) {
		count(&st->registers_bent);
		switch (below(&q->rng, 12)) {
		case 0: req.flags = bend(&q->rng, req.flags, 100); break;
		case 1: req.qid = (uint16_t)bend(&q->rng, req.qid, 100); break;
		case 2: index = (uint16_t)bend(&q->rng, index, 100); break;
		case 3: req.init.queue_depth = (uint16_t)bend(&q->rng, q->depth, 100); break;
		case 4: req.init.buf_size = (uint32_t)bend(&q->rng, q->buf_size, 100); break;
		case 5: req.padding = (uint16_t)next_u64(&q->rng); break;
		case 6: req.init.padding = (uint16_t)next_u64(&q->rng); break;
		case 7: len = (unsigned int)bend(&q->rng, 2, 100); break;
		case 8: iov = chance(&q->rng, 50) ? NULL : (struct iovec *)1; break;
		case 9: iov[below(&q->rng, 2)].iov_len =
			(size_t)bend(&q->rng, iov[0].iov_len, 100); break;
		case 10: iov[below(&q->rng, 2)].iov_base =
			 (char *)iov[0].iov_base + 1 + below(&q->rng, 64); break;
		default: op = (uint32_t)bend(&q->rng, op, 100); break;
		}
	}
	sqe = cmd_sqe(q, op, &req, UD(UD_REGISTER, ent));
	if (!sqe)
		return;
	sqe->addr = (uintptr_t)iov;
	sqe->len = len;
	sqe->buf_index = index;
	io_uring_submit(&q->ring);
}

static char *ent_header(struct queue *q, unsigned int ent)
{
	if (!q->mode->flags)
		return ent < q->depth ? q->ent_hdr[ent] : NULL;
	return ent < q->depth ? q->headers + (size_t)ent * HDR_SZ : NULL;
}

static char *ent_buffer(struct queue *q, unsigned int ent, uint16_t buf_id)
{
	if (!q->mode->flags)
		return q->ent_payload[ent];
	if (buf_id >= q->nbufs)
		return NULL;
	return q->payload + (size_t)buf_id * q->buf_size;
}

/* READ_FIXED/WRITE_FIXED of a zero-copied request; its res, or -errno. */
static int fixed_io(struct queue *q, unsigned int ent, bool read, uint32_t size,
		    uint64_t off)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);
	struct __kernel_timespec ts = { .tv_sec = 2 };
	struct io_uring_cqe *cqe;
	int res;

	if (!sqe)
		return -EBUSY;
	if (read)
		io_uring_prep_read_fixed(sqe, q->memfd, NULL, size, off % FILE_SIZE, ent);
	else
		io_uring_prep_write_fixed(sqe, q->memfd, NULL, size, off % FILE_SIZE, ent);
	if (chance(&q->rng, 20))
		sqe->flags |= IOSQE_ASYNC;
	sqe->user_data = UD(UD_FIXED, ent);
	count(&st->fixed_ops);
	if (io_uring_submit(&q->ring) != 1)
		return -EIO;
	/* other CQEs that come first are commands: they are answered later */
	for (;;) {
		if (io_uring_wait_cqe_timeout(&q->ring, &cqe, &ts))
			return -ETIME;
		if (UD_KIND(cqe->user_data) == UD_FIXED) {
			res = cqe->res;
			io_uring_cqe_seen(&q->ring, cqe);
			return res;
		}
		return -EAGAIN;	/* leave it for the serve loop */
	}
}

/*
 * A zero-copied READ answered with a READ_FIXED into its buffer from a pipe
 * nobody writes: it blocks until the ring goes, holding the buffer, while
 * the request is committed (with no data). The caller's read(2) returns
 * only when io_uring lets go of the pages, at the episode's end.
 */
static int blocking_read(struct queue *q, unsigned int ent, uint32_t size)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_read_fixed(sqe, q->pipe[0], NULL, size, (uint64_t)-1, ent);
	if (chance(&q->rng, 50))
		sqe->flags |= IOSQE_ASYNC;
	sqe->user_data = UD(UD_BLOCKING, ent);
	q->blocked = true;
	count(&st->fixed_blocking);
	return io_uring_submit(&q->ring) == 1 ? 0 : -EIO;
}

/* The reply's data: the request's opcode answered for files f0..f3. */
static int answer(struct queue *q, unsigned int ent, const struct fuse_in_header *ih,
		  const char *op_in, const struct fuse_uring_ent_in_out *eio,
		  char *buf)
{
	size_t room = q->mode->flags ? q->buf_size : q->max_payload;

	switch (ih->opcode) {
	case FUSE_LOOKUP: {
		struct fuse_entry_out e = { 0 };	/* not cached: more requests */

		if (!buf || eio->payload_sz < 3 || buf[0] != 'f' ||
		    buf[1] < '0' || buf[1] >= '0' + NFILES)
			return -ENOENT;
		e.nodeid = 2 + (uint64_t)(buf[1] - '0');
		e.attr.ino = e.nodeid;
		e.attr.mode = S_IFREG | 0644;
		e.attr.size = FILE_SIZE;
		e.attr.nlink = 1;
		memcpy(buf, &e, sizeof(e));
		return sizeof(e);
	}
	case FUSE_GETATTR: {
		struct fuse_attr_out a = { 0 };

		if (!buf)
			return -EIO;
		a.attr.ino = ih->nodeid;
		a.attr.mode = ih->nodeid == FUSE_ROOT_ID ? S_IFDIR | 0755 : S_IFREG | 0644;
		a.attr.size = ih->nodeid == FUSE_ROOT_ID ? 0 : FILE_SIZE;
		a.attr.nlink = 1;
		memcpy(buf, &a, sizeof(a));
		return sizeof(a);
	}
	case FUSE_OPEN:
	case FUSE_OPENDIR: {
		struct fuse_open_out o = { .fh = ih->nodeid };

		if (!buf)
			return -EIO;
		if (chance(&q->rng, 50))
			o.open_flags = FOPEN_DIRECT_IO;
		memcpy(buf, &o, sizeof(o));
		return sizeof(o);
	}
	case FUSE_READ: {
		const struct fuse_read_in *ri = (const void *)op_in;
		uint32_t n = ri->size;

		if ((eio->flags & FUSE_URING_ENT_ZERO_COPY) && !q->blocked &&
		    chance(&q->rng, 3))
			return blocking_read(q, ent, n);
		if (eio->flags & FUSE_URING_ENT_ZERO_COPY)
			return fixed_io(q, ent, true, n, ri->offset);
		if (!buf)
			return -EIO;
		if (n > room)
			n = (uint32_t)room;
		memset(buf, 'a' + (int)(ri->offset % 26), n);
		return (int)n;
	}
	case FUSE_WRITE: {
		const struct fuse_write_in *wi = (const void *)op_in;
		struct fuse_write_out wo = { .size = wi->size };

		if (eio->flags & FUSE_URING_ENT_ZERO_COPY) {
			int res = fixed_io(q, ent, false, wi->size, wi->offset);

			if (res < 0)
				return res;
			wo.size = (uint32_t)res;
		}
		if (!buf)
			return -EIO;
		memcpy(buf, &wo, sizeof(wo));
		return sizeof(wo);
	}
	case FUSE_STATFS: {
		struct fuse_statfs_out so = { .st = { .bsize = 4096, .namelen = 255 } };

		if (!buf)
			return -EIO;
		memcpy(buf, &so, sizeof(so));
		return sizeof(so);
	}
	case FUSE_READDIR:
		return 0;	/* an empty directory */
	case FUSE_FLUSH:
	case FUSE_RELEASE:
	case FUSE_RELEASEDIR:
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:
		return 0;
	default:
		return -ENOSYS;
	}
}

/*
 * Now and then, take memory the kernel uses away: a region becomes
 * unreadable or read-only until this server touches it again, and the
 * kernel copies to and from it meanwhile (requests fetched for other
 * entries, commits of replies written before).
 */
static void region_chaos(struct queue *q)
{
	bool headers;

	if (!q->mode->flags || !chance(&q->rng, 2))
		return;
	count(&st->region_ops);
	headers = chance(&q->rng, 50);
	mprotect(headers ? q->headers : q->payload,
		 headers ? q->headers_len : q->payload_len,
		 chance(&q->rng, 50) ? PROT_NONE : PROT_READ);
	q->protected = true;
}

/* Before this server reads or writes its regions itself. */
static void regions_writable(struct queue *q)
{
	if (!q->protected)
		return;
	mprotect(q->headers, q->headers_len, PROT_READ | PROT_WRITE);
	mprotect(q->payload, q->payload_len, PROT_READ | PROT_WRITE);
	q->protected = false;
}

/* One request in entry ent: answer it, bend the reply now and then, commit. */
static void serve(struct queue *q, unsigned int ent)
{
	char *hdr = ent_header(q, ent), *buf;
	struct fuse_uring_ent_in_out eio;
	struct fuse_in_header ih;
	struct fuse_out_header oh;
	char op_in[FUSE_URING_OP_IN_OUT_SZ];
	struct fuse_uring_cmd_req req;
	int len, i;

	if (!hdr)
		return;
	regions_writable(q);
	count(&st->requests);
	memcpy(&ih, hdr + offsetof(struct fuse_uring_req_header, in_out), sizeof(ih));
	memcpy(op_in, hdr + offsetof(struct fuse_uring_req_header, op_in), sizeof(op_in));
	memcpy(&eio, hdr + offsetof(struct fuse_uring_req_header, ring_ent_in_out),
	       sizeof(eio));
	buf = ent_buffer(q, ent, eio.buf_id);
	len = answer(q, ent, &ih, op_in, &eio, buf);

	oh = (struct fuse_out_header){
		.len = (uint32_t)(sizeof(oh) + (len > 0 ? len : 0)),
		.error = len < 0 ? len : 0, .unique = ih.unique,
	};
	eio.payload_sz = len > 0 ? (uint32_t)len : 0;
	if (chance(&q->rng, 10)) {
		count(&st->replies_bent);
		switch (below(&q->rng, 6)) {
		case 0: eio.payload_sz = (uint32_t)bend(&q->rng, eio.payload_sz, 100); break;
		case 1: oh.unique = bend(&q->rng, oh.unique, 100); break;
		case 2: oh.error = (int32_t)bend(&q->rng, (uint64_t)(int64_t)oh.error, 100); break;
		case 3: eio.padding = (uint16_t)next_u64(&q->rng); break;
		case 4: oh.len = (uint32_t)bend(&q->rng, oh.len, 100); break;
		default: eio.buf_id = (uint16_t)bend(&q->rng, eio.buf_id, 100); break;
		}
	}
	memcpy(hdr + offsetof(struct fuse_uring_req_header, in_out), &oh, sizeof(oh));
	memcpy(hdr + offsetof(struct fuse_uring_req_header, ring_ent_in_out),
	       &eio, sizeof(eio));

	/*
	 * A bent commit goes first, the right one after it: a refused commit
	 * leaves the request with the entry, and without the right one the
	 * entry would be lost for the rest of the episode. The fourth kind of
	 * bent commit is the right one: the request is committed twice.
	 */
	for (i = chance(&q->rng, 8) ? 0 : 1; i < 2; i++) {
		memset(&req, 0, sizeof(req));
		req.commit_id = eio.commit_id;
		req.qid = (uint16_t)q->qid;
		if (i == 0) {
			count(&st->commits_bent);
			switch (below(&q->rng, 4)) {
			case 0: req.commit_id = bend(&q->rng, req.commit_id, 100); break;
			case 1: req.qid = (uint16_t)bend(&q->rng, req.qid, 100); break;
			case 2: req.padding = (uint16_t)next_u64(&q->rng); break;
			default: break;
			}
		}
		count(&st->commits);
		if (cmd_sqe(q, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, &req,
			    UD(UD_COMMIT, ent)))
			io_uring_submit(&q->ring);
	}
}


/*
 * Another process with the /dev/fuse fd (a fork, as after SCM_RIGHTS):
 * from a ring of its own it sends one REGISTER of this queue, with its
 * regions' addresses (in its own copy of the memory), or one
 * COMMIT_AND_FETCH of a made-up request, waits a moment for the answer,
 * and exits, which closes its ring. The kernel may refuse either (on a
 * buffer ring it must: patch 0016) or, in iovec mode, take the entry,
 * which then goes with the child's ring.
 */
static void other_process(struct queue *q)
{
	struct fuse_uring_cmd_req req = { .qid = (uint16_t)q->qid };
	struct __kernel_timespec ts = { .tv_nsec = 100 * 1000 * 1000 };
	bool reg = chance(&q->rng, 50);
	unsigned int ent = below(&q->rng, q->depth);
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	pid_t pid;

	count(&st->other_process);
	pid = fork();
	if (pid != 0) {
		if (pid > 0)
			waitpid(pid, NULL, 0);
		return;
	}
	if (io_uring_queue_init(4, &ring, IORING_SETUP_SQE128))
		_exit(0);
	sqe = io_uring_get_sqe(&ring);
	if (!sqe)
		_exit(0);
	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = q->fd;
	if (reg) {
		req.flags = q->mode->flags;
		req.init.buf_size = q->buf_size;
		req.init.queue_depth = (uint16_t)q->depth;
		sqe->cmd_op = FUSE_IO_URING_CMD_REGISTER;
		sqe->addr = (uintptr_t)(q->mode->flags ? NULL : q->iov[ent]);
		sqe->len = 2;
		sqe->buf_index = (uint16_t)ent;
		if (q->mode->flags) {
			static struct iovec iov[2];

			iov[0] = (struct iovec){ q->headers, q->headers_len };
			iov[1] = (struct iovec){ q->payload, q->payload_len };
			sqe->addr = (uintptr_t)iov;
		}
	} else {
		req.commit_id = next_u64(&q->rng) % 4096;
		sqe->cmd_op = FUSE_IO_URING_CMD_COMMIT_AND_FETCH;
	}
	memcpy((char *)sqe + offsetof(struct io_uring_sqe, cmd), &req, sizeof(req));
	io_uring_submit(&ring);
	io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
	_exit(0);
}

static void *queue_thread(void *arg)
{
	struct queue *q = arg;
	struct __kernel_timespec ts = { .tv_nsec = 50 * 1000 * 1000 };
	struct io_uring_cqe *cqe;
	unsigned int ent;

	/* io-wq is per task: this thread's commands run in its own */
	if (q->sharp) {
		cpu_set_t cpu0;

		CPU_ZERO(&cpu0);
		CPU_SET(0, &cpu0);
		io_uring_register_iowq_aff(&q->ring, sizeof(cpu0), &cpu0);
	}
	for (ent = 0; ent < q->depth && !st->stop; ent++)
		queue_register(q, ent, 3);
	while (!__atomic_load_n(&st->stop, __ATOMIC_RELAXED)) {
		uint64_t ud;
		int res;

		if (io_uring_wait_cqe_timeout(&q->ring, &cqe, &ts))
			continue;
		ud = cqe->user_data;
		res = cqe->res;
		io_uring_cqe_seen(&q->ring, cqe);
		if (UD_KIND(ud) == UD_REGISTER && res == 0)
			count(&st->registers_ok);
		if ((UD_KIND(ud) == UD_REGISTER || UD_KIND(ud) == UD_COMMIT) &&
		    res == 0)
			serve(q, UD_ENT(ud));
		region_chaos(q);
		/* a late REGISTER: an id in use, or bent */
		if (chance(&q->rng, 2))
			queue_register(q, below(&q->rng, q->depth + 1), 70);
		if (chance(&q->rng, 1))
			other_process(q);
		/* sometimes a slow server: requests queue up meanwhile */
		if (chance(&q->rng, 3))
			usleep(below(&q->rng, 20000));
	}
	return NULL;
}

/*
 * Zero-copy: the fixed-buffer table of each queue's ring changes under its
 * commands: a slot emptied, or the whole table unregistered and registered
 * again (sparse), at random times. In a "sharp" episode the table changes
 * where a commit from io-wq is most exposed: every ring's io-wq runs on
 * CPU 0 (IORING_REGISTER_IOWQ_AFF) and this thread too, at a real-time
 * priority, waking every 20-120 us. When it wakes while a worker holds a
 * ring's lock, the worker's unlock hands the CPU straight to it, so its
 * update lands between a call that drops the lock and what the caller
 * does next (how tests/uapi-errors/zero-copy.c's
 * zero-copy-async-commit-vs-table-update reaches its window).
 */
struct chaos {
	struct queue *qs;
	uint64_t rng;
	bool sharp;
};

static int pin_to_cpu0(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *table_chaos(void *arg)
{
	struct chaos *c = arg;
	struct iovec empty = { NULL, 0 };
	struct sched_param sp = { .sched_priority = 1 };

	if (c->sharp && (pin_to_cpu0() ||
			 pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp)))
		c->sharp = false;
	while (!__atomic_load_n(&st->stop, __ATOMIC_RELAXED)) {
		struct queue *q = &c->qs[below(&c->rng, nr_queues)];

		count(&st->table_ops);
		if (chance(&c->rng, 90)) {
			io_uring_register_buffers_update_tag(&q->ring,
							     below(&c->rng, q->depth),
							     &empty, NULL, 1);
		} else {
			io_uring_unregister_buffers(&q->ring);
			io_uring_register_buffers_sparse(&q->ring, q->depth);
		}
		if (c->sharp) {
			struct timespec ts = { 0, 20000 + (long)below(&c->rng, 100000) };

			nanosleep(&ts, NULL);
		} else {
			usleep(below(&c->rng, 2000));
		}
	}
	return NULL;
}

/* FUSE_INIT over /dev/fuse, with FUSE_OVER_IO_URING. 0 or -errno. */
static int answer_init(int fd, uint64_t *rng, uint32_t *max_payload)
{
	static char buf[FUSE_MIN_READ_BUFFER];
	const struct fuse_in_header *ih = (const void *)buf;
	const struct fuse_init_in *in = (const void *)(ih + 1);
	struct fuse_out_header oh;
	struct fuse_init_out out;
	uint64_t offered, wanted;
	struct iovec iov[2];
	unsigned int pages = 1 + below(rng, 4);
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n < (ssize_t)(sizeof(*ih) + sizeof(*in)) || ih->opcode != FUSE_INIT)
		return n < 0 ? -errno : -EPROTO;
	offered = in->flags;
	if (in->flags & FUSE_INIT_EXT)
		offered |= (uint64_t)in->flags2 << 32;
	if (!(offered & FUSE_OVER_IO_URING))
		return -EOPNOTSUPP;
	wanted = FUSE_INIT_EXT | FUSE_MAX_PAGES | FUSE_OVER_IO_URING;
	/* half the servers say they retry a refused REGISTER (patch 0020) */
	if (chance(rng, 50))
		wanted |= FUSE_HAS_URING_BUFRING;
	memset(&out, 0, sizeof(out));
	out.major = FUSE_KERNEL_VERSION;
	out.minor = in->minor < FUSE_KERNEL_MINOR_VERSION ? in->minor :
		    FUSE_KERNEL_MINOR_VERSION;
	out.flags = (uint32_t)(offered & wanted);
	out.flags2 = (uint32_t)((offered & wanted) >> 32);
	out.max_write = (uint32_t)(pages * page_size);
	out.max_pages = (uint16_t)pages;
	oh = (struct fuse_out_header){ .len = sizeof(oh) + sizeof(out),
				       .unique = ih->unique };
	iov[0] = (struct iovec){ &oh, sizeof(oh) };
	iov[1] = (struct iovec){ &out, sizeof(out) };
	if (writev(fd, iov, 2) < 0)
		return -errno;
	/* fuse_uring_create(): max(FUSE_MIN_READ_BUFFER, max_write, max_pages pages) */
	*max_payload = (uint32_t)(pages * page_size);
	if (*max_payload < 8192)
		*max_payload = 8192;
	return 0;
}

/* The server process of an episode: returns only by exit. */
static void server(const struct mode *mode, uint64_t seed)
{
	struct queue *qs = calloc(nr_queues, sizeof(*qs));
	struct chaos chaos = { .qs = qs, .rng = seed ^ 0xc4a05,
			       .sharp = (seed >> 7) & 1 };
	pthread_t chaos_th;
	bool chaos_up = false;
	uint32_t max_payload = 0, buf_size;
	unsigned int i, depth;
	char opts[128];
	int fd;

	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0 || !qs)
		_exit(2);
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0", fd);
	if (mount("uapi-fuzz", mnt, "fuse.uapi-fuzz", MS_NOSUID | MS_NODEV, opts) < 0)
		_exit(3);
	if (answer_init(fd, &seed, &max_payload))
		_exit(4);
	__atomic_store_n(&st->mounted, 1, __ATOMIC_RELEASE);
	depth = 1 + below(&seed, MAX_DEPTH);
	buf_size = max_payload * (1 + below(&seed, 2));

	for (i = 0; i < nr_queues; i++) {
		struct queue *q = &qs[i];

		q->qid = i;
		q->rng = seed + 0x1000 * (i + 1);
		q->mode = mode;
		q->fd = fd;
		q->async_pct = 20;
		q->depth = depth;
		q->buf_size = buf_size;
		q->max_payload = max_payload;
		q->arena = mmap(NULL, ARENA, PROT_NONE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (q->arena == MAP_FAILED)
			_exit(5);
		q->memfd = memfd_create("uapi-fuzz", MFD_CLOEXEC);
		if (q->memfd < 0 || ftruncate(q->memfd, FILE_SIZE) < 0 ||
		    pipe2(q->pipe, O_CLOEXEC) ||
		    queue_alloc(q) ||
		    io_uring_queue_init(64, &q->ring, IORING_SETUP_SQE128))
			_exit(5);
		q->ring_up = true;
		if (mode->flags & FUSE_URING_ZERO_COPY) {
			io_uring_register_buffers_sparse(&q->ring, q->depth);
			q->sharp = chaos.sharp;
			q->async_pct = chaos.sharp ? 60 : 20;
		}
	}
	for (i = 0; i < nr_queues; i++)
		if (pthread_create(&qs[i].th, NULL, queue_thread, &qs[i]))
			_exit(6);
	if (mode->flags & FUSE_URING_ZERO_COPY)
		chaos_up = pthread_create(&chaos_th, NULL, table_chaos, &chaos) == 0;
	for (i = 0; i < nr_queues; i++)
		pthread_join(qs[i].th, NULL);
	if (chaos_up)
		pthread_join(chaos_th, NULL);
	for (i = 0; i < nr_queues; i++)
		io_uring_queue_exit(&qs[i].ring);
	close(fd);
	_exit(0);
}

/* ---- the workload --------------------------------------------------------- */

#define WORKERS		4	/* requests in flight at once: commits fetch the next */

static void *workload_thread(void *arg)
{
	uint64_t seed = *(uint64_t *)arg;
	char path[256], *buf = aligned_alloc(4096, 256 * 1024);
	struct statfs sfs;
	struct stat sb;
	ssize_t r;
	int fd;

	if (!buf)
		return NULL;
	for (;;) {
		unsigned int n = below(&seed, NFILES + 1);
		size_t size = 1 + below(&seed, 3 * 64 * 1024);
		off_t off = below(&seed, FILE_SIZE);

		snprintf(path, sizeof(path), "%s/f%u", mnt, n);	/* f4 does not exist */
		count(&st->workload_ops);
		switch (below(&seed, 6)) {
		case 0:
			stat(chance(&seed, 50) ? mnt : path, &sb);
			break;
		case 1:
			statfs(mnt, &sfs);
			break;
		case 2: {
			DIR *d = opendir(mnt);

			if (d) {
				readdir(d);
				closedir(d);
			}
			break;
		}
		default:
			fd = open(path, O_RDWR | (chance(&seed, 50) ? O_DIRECT : 0));
			if (fd < 0)
				break;
			if (chance(&seed, 50)) {
				r = pread(fd, buf, size, off);
			} else {
				memset(buf, 'w', size);
				r = pwrite(fd, buf, size, off);
			}
			(void)r;	/* any result will do: the kernel is tested */
			close(fd);
		}
	}
}

/* The workload process: WORKERS threads, until the supervisor kills it. */
static void workload(uint64_t seed)
{
	static uint64_t seeds[WORKERS];
	pthread_t th;
	unsigned int i;

	for (i = 0; i < WORKERS; i++) {
		seeds[i] = seed + 0x777 * (i + 1);
		if (i + 1 < WORKERS && pthread_create(&th, NULL, workload_thread, &seeds[i]))
			_exit(2);
	}
	workload_thread(&seeds[WORKERS - 1]);
	_exit(2);
}

/* ---- the supervisor ------------------------------------------------------- */

static long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* The first kernel report since kmsg_mark() into report (empty if none). */
static void kmsg_report(int fd, char *report, size_t len)
{
	char rec[8192];
	const char *text;
	bool lost = false;

	report[0] = '\0';
	while ((text = kmsg_next(fd, rec, sizeof(rec), &lost)))
		if (!report[0] && kernel_splat(text))
			snprintf(report, len, "%.400s", text);
	close(fd);
}

/* Wait for pid until deadline (ms, monotonic); true if it was reaped. */
static bool reap_by(pid_t pid, long deadline)
{
	while (now_ms() < deadline) {
		pid_t r = waitpid(pid, NULL, WNOHANG);

		if (r == pid || (r < 0 && errno == ECHILD))
			return true;
		usleep(10000);
	}
	return false;
}

enum ending { END_UMOUNT, END_FORCE, END_FUSECTL, END_KILL, NENDINGS };
static const char *const ending_names[] = {
	"umount", "umount -f", "fusectl abort", "kill -9",
};

/*
 * The device number of the mount at mnt, from /proc/self/mountinfo: a
 * stat(2) of the mount would wait for a server that may never answer.
 * Its minor names the connection in fusectl. -1 if not mounted.
 */
static long mount_minor(void)
{
	char line[1024], point[512];
	unsigned int major, minor;
	long found = -1;
	FILE *f = fopen("/proc/self/mountinfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*u %*u %u:%u %*s %511s", &major, &minor, point) == 3 &&
		    !strcmp(point, mnt))
			found = minor;
	fclose(f);
	return found;
}

static void end_episode(enum ending how, pid_t srv)
{
	char path[256];
	long dev;
	int fd;

	switch (how) {
	case END_FORCE:
		umount2(mnt, MNT_FORCE);
		break;
	case END_FUSECTL:
		dev = mount_minor();
		if (dev >= 0) {
			snprintf(path, sizeof(path), FUSECTL "/%ld/abort", dev);
			fd = open(path, O_WRONLY);
			if (fd >= 0) {
				ssize_t r = write(fd, "1", 1);

				(void)r;	/* umount -l follows anyway */
				close(fd);
			}
		}
		break;
	case END_KILL:
		kill(srv, SIGKILL);
		break;
	default:
		break;
	}
	umount2(mnt, MNT_DETACH);
}

/*
 * One episode. 0 if the kernel survived it; otherwise -1 with why filled
 * in (a kernel report, or a process that did not go away).
 */
static int episode(const struct mode *mode, uint64_t seed, char *why, size_t len,
		   const char **ending, bool *mounted)
{
	uint64_t rng = seed;
	enum ending how = (enum ending)below(&rng, NENDINGS);
	long ms = 300 + below(&rng, 1500), deadline;
	pid_t srv, wl = -1;
	int kmsg = kmsg_mark();
	bool gone;

	*ending = ending_names[how];
	memset(st, 0, sizeof(*st));
	why[0] = '\0';
	srv = fork();
	if (srv == 0)
		server(mode, seed);
	deadline = now_ms() + 5000;
	while (srv > 0 && !__atomic_load_n(&st->mounted, __ATOMIC_ACQUIRE) &&
	       now_ms() < deadline && waitpid(srv, NULL, WNOHANG) == 0)
		usleep(1000);
	if (srv > 0 && st->mounted) {
		wl = fork();
		if (wl == 0)
			workload(seed ^ 0x3030);
	}
	usleep((useconds_t)ms * 1000);

	end_episode(how, srv);
	if (wl > 0)
		kill(wl, SIGKILL);
	__atomic_store_n(&st->stop, 1, __ATOMIC_RELAXED);
	deadline = now_ms() + EXIT_MS;
	gone = (wl <= 0 || reap_by(wl, deadline)) && (srv <= 0 || reap_by(srv, deadline));
	if (!gone) {
		snprintf(why, len, "a process of the episode was still there %d s "
			 "after the end (%s)", EXIT_MS / 1000, ending_names[how]);
		if (wl > 0)
			kill(wl, SIGKILL);
		kill(srv, SIGKILL);
		reap_by(srv, now_ms() + EXIT_MS);
		if (wl > 0)
			reap_by(wl, now_ms() + EXIT_MS);
	}
	umount2(mnt, MNT_DETACH);
	*mounted = st->mounted;
	if (kmsg >= 0) {
		char report[512];

		kmsg_report(kmsg, report, sizeof(report));
		if (report[0])
			snprintf(why, len, "the kernel logged \"%s\"", report);
	}
	return why[0] ? -1 : 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: uapi-fuzz [--seed N] [--seconds S] [--episodes N] "
		"[--mode iovec|bufring|pinned-headers|pinned-buffers|zero-copy|all] [--mnt DIR]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	uint64_t seed = (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid();
	const char *mode_arg = "all";
	long seconds = 60, max_episodes = -1;
	int failures = 0, i;
	size_t m;
	FILE *f;

	for (i = 1; i < argc; i++) {
		if (i + 1 >= argc)
			usage();
		if (!strcmp(argv[i], "--seed"))
			seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--seconds"))
			seconds = atol(argv[++i]);
		else if (!strcmp(argv[i], "--episodes"))
			max_episodes = atol(argv[++i]);
		else if (!strcmp(argv[i], "--mode"))
			mode_arg = argv[++i];
		else if (!strcmp(argv[i], "--mnt"))
			mnt = argv[++i];
		else
			usage();
	}
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	nr_queues = count_possible_cpus();
	if (!nr_queues || nr_queues > MAX_QUEUES) {
		fprintf(stderr, "uapi-fuzz: %u possible CPUs: 1 to %d supported\n",
			nr_queues, MAX_QUEUES);
		return 2;
	}
	st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (st == MAP_FAILED || (mkdir(mnt, 0755) < 0 && errno != EEXIST)) {
		fprintf(stderr, "uapi-fuzz: set-up: %s\n", strerror(errno));
		return 2;
	}
	f = fopen(ENABLE_URING, "w");
	if (!f || fputs("1\n", f) < 0 || fclose(f)) {
		fprintf(stderr, "uapi-fuzz: cannot write %s\n", ENABLE_URING);
		return 2;
	}
	/* fusectl for one of the endings; already mounted is fine */
	mount("fusectl", FUSECTL, "fusectl", 0, NULL);
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("# uapi-fuzz: seed 0x%016llx, %ld s, mode %s, %u queues\n",
	       (unsigned long long)seed, seconds, mode_arg, nr_queues);

	for (m = 0; m < NMODES; m++) {
		const struct mode *mode = &modes[m];
		long t_end, episodes = 0, ops = 0, mounted_episodes = 0;
		unsigned int nmodes = strcmp(mode_arg, "all") ? 1 : NMODES;
		char why[640] = "";
		uint64_t es = 0;

		if (strcmp(mode_arg, "all") && strcmp(mode_arg, mode->name))
			continue;
		t_end = now_ms() + seconds * 1000 / nmodes;
		while (now_ms() < t_end && (max_episodes < 0 || episodes < max_episodes)) {
			const char *ending;
			bool mounted;
			uint64_t mix = seed + 0x9e3779b97f4a7c15ULL * (uint64_t)(episodes + 1) + m;
			long t0 = now_ms();

			es = next_u64(&mix);
			if (max_episodes == 1)
				es = seed;	/* a replay: the seed is the episode's */
			if (episode(mode, es, why, sizeof(why), &ending, &mounted)) {
				episodes++;
				break;
			}
			episodes++;
			mounted_episodes += mounted;
			ops += st->registers + st->commits + st->fixed_ops +
			       st->table_ops + st->region_ops + st->workload_ops;
			printf("# %s episode %ld seed 0x%016llx: %ld REGISTERs (%ld bent, "
			       "%ld accepted), %ld requests, %ld commits (%ld bent, "
			       "%ld async), %ld replies bent, %ld fixed, %ld table, "
			       "%ld region ops, %ld workload ops, %ld READ_FIXEDs "
			       "left blocking, %ld commands from another process; "
			       "%s after %ld ms\n",
			       mode->name, episodes, (unsigned long long)es,
			       st->registers, st->registers_bent, st->registers_ok,
			       st->requests, st->commits, st->commits_bent, st->async,
			       st->replies_bent, st->fixed_ops, st->table_ops,
			       st->region_ops, st->workload_ops, st->fixed_blocking,
			       st->other_process, ending, now_ms() - t0);
		}
		if (why[0]) {
			failures++;
			printf("not ok uapi-fuzz %s: episode %ld (seed 0x%016llx): %s "
			       "(replay: uapi-fuzz --mode %s --episodes 1 --seed 0x%016llx)\n",
			       mode->name, episodes, (unsigned long long)es, why,
			       mode->name, (unsigned long long)es);
		} else if (!mounted_episodes) {
			failures++;
			printf("not ok uapi-fuzz %s: %ld episodes, none got as far as "
			       "answering FUSE_INIT\n", mode->name, episodes);
		} else {
			printf("ok uapi-fuzz %s: %ld episodes, %ld operations, 0 kernel "
			       "reports\n", mode->name, episodes, ops);
		}
	}
	return failures ? 1 : 0;
}
