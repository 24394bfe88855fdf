// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * tests/bufring-register-errors.c: every mistake a server can make when it
 * registers a buffer ring (patch 0004), with pinned headers or buffers
 * (0005, 0006) or zero-copy (0008), or when it commits a reply, and the
 * exact errno the kernel answers it with; and what a zero-copied request
 * does when things go wrong.
 *
 * It speaks the protocol itself, with liburing and nothing else (no libfuse,
 * no reference server): per case it opens /dev/fuse, mounts a FUSE file
 * system with that fd, answers FUSE_INIT by read(2)/write(2) with
 * FUSE_OVER_IO_URING, and sends FUSE_IO_URING_CMD_REGISTER and
 * COMMIT_AND_FETCH commands on an SQE128 ring.
 *
 * Every case gets a connection of its own, for two reasons read off
 * fs/fuse/dev_uring.c: a queue's first REGISTER fixes its buffer ring for
 * good (fuse_uring_create_queue()), and a failed REGISTER before the ring
 * is ready switches io_uring off for the whole connection
 * (fuse_uring_register_refused() clears fch->io_uring, so every later
 * REGISTER gets -EOPNOTSUPP: register-after-failed-register). So in each
 * case the REGISTER under test is the connection's last.
 *
 * The cases (64; --list names them, in this order):
 *   - control-*: the well-formed set-up the other cases break one field at
 *     a time registers on every queue and carries a real request (a
 *     GETATTR from stat(2)) to the right header slot; once plain, once
 *     pinned. Without them, a refusal could just as well mean that the
 *     set-up was wrong.
 *   - the connection: REGISTER before the FUSE_INIT reply (-EAGAIN, then
 *     accepted once INIT is answered), without FUSE_OVER_IO_URING in INIT
 *     and after a failed REGISTER (-EOPNOTSUPP), on a ring without SQE128,
 *     an unknown command op, an unknown flag, a qid past the last queue,
 *     padding that is not 0 (-EINVAL); a REGISTER refused once the ring is
 *     ready, which leaves the ring serving;
 *   - queues that disagree (cross-queue-*, same-queue-*: -EINVAL);
 *   - the buffer ring's geometry: queue_depth, buf_size, the headers and
 *     payload regions (-EINVAL, and what is accepted: 65535 buffers, a
 *     region not a multiple of buf_size, misaligned or unmapped headers);
 *   - entry ids (sqe->buf_index): past queue_depth, 65535 on the first
 *     REGISTER (-EINVAL), an id registered twice and a REGISTER more than
 *     queue_depth (-EBUSY);
 *   - COMMIT_AND_FETCH: an unknown commit_id, a double commit, the right
 *     commit_id on the other queue (-ENOENT), a qid past the last queue
 *     (-EINVAL), a queue never registered (-ENOTCONN);
 *   - replies the kernel refuses (reply-*): payload_sz past the payload
 *     buffer (buffer ring and 7.2's iovec layout) or 0xffffffff, a positive
 *     error, a unique with the interrupt bit (stat(2) gets EINVAL; 7.2
 *     warned on the last), a wrong unique (ENOENT), padding that is not 0
 *     (EINVAL); each followed by a request served right on the same
 *     connection; a commit with padding that is not 0 (-EINVAL);
 *   - pinned-*: flags without a buffer ring, misaligned regions,
 *     RLIMIT_MEMLOCK exactly enough and a page short (-ENOMEM), a refusal
 *     that pins nothing, regions larger than the queue uses (charged only
 *     what it uses);
 *   - zero-copy-*: without the pinned flags (-EINVAL), without
 *     CAP_SYS_ADMIN (-EPERM), a fixed-buffer table too small, the
 *     directions of READ_FIXED/WRITE_FIXED, an ITER_KVEC read (copied), an
 *     abort while the server holds a zero-copied READ, commits from io-wq
 *     racing a thread that empties the fixed-buffer slot (15 s);
 *   - fault-inject-register-*, only where /proc/thread-self/fail-nth exists
 *     (the debug kernel): every allocation of a queue's first REGISTER
 *     (iovec, bufring, pinned) failed in turn; clean errors, VmPin back to
 *     0, a clean kernel log.
 *
 * After each case, the kernel log: main() remembers the end of /dev/kmsg
 * before the case (kmsg_mark()) and reads what was logged during it after
 * (kmsg_check()). Every new record is printed as "# kernel: ..." (several
 * cases make the kernel pr_info/pr_warn on purpose); one that looks like a
 * broken kernel (kernel_splats[]: BUG:, WARNING:, KASAN:, a lockdep report,
 * a hung task, ...) FAILs the case. A record whose text has no final
 * newline becomes readable only when the next record is logged, so it may
 * show up under the next case; the guest script checks the whole log too.
 *
 * Output, one result line per case, read by
 * tests/guest/22-bufring-register-errors.sh:
 *   # kernel: Entry id 1 in use
 *   PASS name
 *   FAIL name: expected -EINVAL, got accepted (no CQE: the command is queued)
 *   FAIL name: the kernel logged "WARNING: CPU: 1 PID: 93 at ..."
 * plus "# ..." lines with details. PASS comes after the case's kernel lines
 * (only then is it known); a case that failed its own check and the kernel
 * one has two FAIL lines, the first counts. Exit status 1 if any case
 * failed. --list prints the case names; case names as arguments run only
 * those.
 *
 * Each case names the check in build/linux/fs/fuse/dev_uring.c that decides
 * its errno: the kernel source is the specification, not this file.
 *
 * The pinned and zero-copy cases change this thread's effective
 * capabilities (CAP_IPC_LOCK, CAP_SYS_ADMIN) and its RLIMIT_MEMLOCK soft
 * limit for one REGISTER, and put them back after it: the kernel checks
 * them in the task that submits, which is this one (io_uring issues the
 * command inline). Those that serve requests run a small file system of
 * their own (serve_mini()): a root with files "f", "g" and "x".
 *
 * Build: make tests (static, against the patched uapi in build/headers).
 * Needs root (mount, /dev/kmsg): it runs in the guest.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE		/* pthread_timedjoin_np() */
#endif

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <linux/capability.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kernel-log.h"

#define MNT_DEFAULT	"/tmp/bufring-register-errors-mnt"
#define ENABLE_URING	"/sys/module/fuse/parameters/enable_uring"
#define CPUS_POSSIBLE	"/sys/devices/system/cpu/possible"

/* The well-formed set-up: entries and payload buffers per queue. */
#define DEPTH		2
#define NBUFS		2
#define HDR_SZ		sizeof(struct fuse_uring_req_header)

/* FUSE_INIT asks for max_pages = 2: small buffers, quick cases. */
#define INIT_MAX_PAGES	2
#define INIT_READ_BUF	(64 * 1024)	/* >= FUSE_MIN_READ_BUFFER (8 KiB) */

/*
 * How long to wait. A refused command completes inline, before
 * io_uring_submit() returns, so ACCEPT_MS is only a margin; the others bound
 * what could otherwise hang (a request that never arrives, a stat(2) that
 * never returns).
 */
#define ACCEPT_MS	10
#define REQUEST_MS	5000
#define JOIN_MS		5000

/* Header slots start out as this byte; the kernel writes only its own. */
#define POISON		0xa5

/* st_size our GETATTR reply carries: stat(2) seeing it saw our reply. */
#define MARKER_SIZE	0x5eedULL

/* Results of a command besides a CQE's res (which is 0 or -errno). */
#define ACCEPTED	1	/* no CQE: the kernel queued the command */
#define NOT_SUBMITTED	2	/* io_uring_submit() failed (printed) */

/* user_data: what the command was, and for which queue and entry. */
enum { UD_REGISTER = 1, UD_COMMIT = 2, UD_FIXED = 3 };
#define UD(kind, qid, ent) \
	((uint64_t)(kind) << 32 | (uint64_t)(qid) << 16 | (uint64_t)(ent))
#define UD_KIND(ud)	((unsigned int)((ud) >> 32))
#define UD_QID(ud)	((uint16_t)((ud) >> 16))
#define UD_ENT(ud)	((uint16_t)(ud))

static const char *mnt = MNT_DEFAULT;
static unsigned int nr_queues;	/* one FUSE queue per possible CPU */
static size_t page_size;
static uint32_t max_payload;	/* the ring's max_payload_sz, see main() */
static int failures;

/* ---- reporting ---------------------------------------------------------- */

/*
 * A case reports through pass() and fail(); main() prints its PASS line only
 * after the kernel-log check (kmsg_check()), so a case that passed while the
 * kernel warned is a FAIL. fail() prints at once: a case may FAIL twice (its
 * own check and the kernel's), the guest script reads the first line.
 */
static bool case_passed, case_failed;

static void pass(const char *name)
{
	(void)name;
	case_passed = true;
}

/* Returns -1, so that a case can "return fail(...)". */
__attribute__((format(printf, 2, 3)))
static int fail(const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("FAIL %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	case_failed = true;
	return -1;
}

/* ---- the kernel log, per case -------------------------------------------- */

/*
 * After a case: read the records logged since kmsg_mark(), print each as
 * "# kernel: ...", and FAIL the case on the first that reports a broken
 * kernel (kernel_splat(), tests/kernel-log.h). Closes fd.
 */
static void kmsg_check(const char *name, int fd)
{
	char rec[8192];
	const char *text;
	bool bad = false, lost = false;

	if (fd < 0) {
		fail(name, "cannot read the kernel log: /dev/kmsg: %s", strerror(errno));
		return;
	}
	while ((text = kmsg_next(fd, rec, sizeof(rec), &lost))) {
		printf("# kernel: %s\n", text);
		if (!bad && kernel_splat(text)) {
			fail(name, "the kernel logged \"%s\"", text);
			bad = true;
		}
	}
	if (lost)
		printf("# kernel: (some records were lost)\n");
	close(fd);
}

static const char *errno_name(int e)
{
	switch (e) {
	case EINVAL: return "EINVAL";
	case ENOENT: return "ENOENT";
	case EFAULT: return "EFAULT";
	case ENOMEM: return "ENOMEM";
	case EAGAIN: return "EAGAIN";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ENOTCONN: return "ENOTCONN";
	case ECONNABORTED: return "ECONNABORTED";
	case ECANCELED: return "ECANCELED";
	case ENOBUFS: return "ENOBUFS";
	case EIO: return "EIO";
	case EBADF: return "EBADF";
	case EPERM: return "EPERM";
	case EBUSY: return "EBUSY";
	default: return NULL;
	}
}

/* A command's result as the FAIL lines print it. */
static const char *res_str(int res, char *buf, size_t len)
{
	const char *name = res < 0 ? errno_name(-res) : NULL;

	if (res == ACCEPTED)
		return "accepted (no CQE: the command is queued)";
	if (res == NOT_SUBMITTED)
		return "nothing (io_uring_submit failed)";
	if (name)
		snprintf(buf, len, "-%s", name);
	else if (res < 0)
		snprintf(buf, len, "%d", res);
	else
		snprintf(buf, len, "a CQE with res %d", res);
	return buf;
}

/* PASS when the command's result is the one expected, else FAIL. */
static int expect_res(const char *name, int want, int got)
{
	char wbuf[32], gbuf[48];

	if (got == want) {
		pass(name);
		return 0;
	}
	return fail(name, "expected %s, got %s", res_str(want, wbuf, sizeof(wbuf)),
		    res_str(got, gbuf, sizeof(gbuf)));
}

/* ---- the connection: /dev/fuse, the mount, FUSE_INIT, the ring ---------- */

struct conn {
	int fd;			/* /dev/fuse: the connection */
	bool mounted;
	bool ring_up;
	struct io_uring ring;
};

/*
 * FUSE_INIT travels over /dev/fuse even for io_uring servers: read it, and
 * reply with FUSE_OVER_IO_URING so that the kernel creates the ring
 * (fuse_uring_conn_init()). The kernel offers the flag only while
 * enable_uring is set. We ask for INIT_MAX_PAGES pages: fuse_uring_create()
 * sizes max_payload_sz as max(FUSE_MIN_READ_BUFFER, max_write, max_pages
 * pages), which is what main() computes into max_payload.
 */
static uint64_t init_offered;	/* the flags the last FUSE_INIT offered */

static int answer_init(int fd, bool uring, const char **what)
{
	static char buf[INIT_READ_BUF];
	const struct fuse_in_header *ih = (const void *)buf;
	const struct fuse_init_in *in = (const void *)(ih + 1);
	struct fuse_init_out out;
	struct fuse_out_header oh;
	uint64_t offered, wanted;
	struct iovec iov[2];
	ssize_t n;

	*what = "read FUSE_INIT";
	do {
		n = read(fd, buf, sizeof(buf));
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if ((size_t)n < sizeof(*ih) + sizeof(*in) || ih->opcode != FUSE_INIT)
		return -EPROTO;

	*what = "FUSE_INIT offers FUSE_OVER_IO_URING";
	offered = in->flags;
	if (in->flags & FUSE_INIT_EXT)	/* flags2 is only there with INIT_EXT */
		offered |= (uint64_t)in->flags2 << 32;
	init_offered = offered;
	if (!(offered & FUSE_OVER_IO_URING))
		return -EOPNOTSUPP;

	wanted = FUSE_INIT_EXT | FUSE_MAX_PAGES | (uring ? FUSE_OVER_IO_URING : 0);
	memset(&out, 0, sizeof(out));
	out.major = FUSE_KERNEL_VERSION;
	out.minor = in->minor < FUSE_KERNEL_MINOR_VERSION ?
		    in->minor : FUSE_KERNEL_MINOR_VERSION;
	out.flags = (uint32_t)(offered & wanted);
	out.flags2 = (uint32_t)((offered & wanted) >> 32);
	out.max_write = (uint32_t)(INIT_MAX_PAGES * page_size);
	out.max_pages = INIT_MAX_PAGES;

	oh.len = sizeof(oh) + sizeof(out);
	oh.error = 0;
	oh.unique = ih->unique;
	iov[0] = (struct iovec){ &oh, sizeof(oh) };
	iov[1] = (struct iovec){ &out, sizeof(out) };
	*what = "write the FUSE_INIT reply";
	if (writev(fd, iov, 2) < 0)
		return -errno;
	return 0;
}

/* Undo conn_open(), whatever state it got to. */
static void conn_close(struct conn *c)
{
	/*
	 * Detaching the mount destroys the super block, which aborts the
	 * connection and waits for its ring to stop: every queued command
	 * completes with -ENOTCONN (fuse_uring_entry_teardown()). Leaving the
	 * ring then cancels whatever is left, and the last file reference
	 * to /dev/fuse goes away with it.
	 */
	if (c->mounted && umount2(mnt, MNT_DETACH) < 0)
		printf("# umount2 %s: %s\n", mnt, strerror(errno));
	if (c->ring_up)
		io_uring_queue_exit(&c->ring);
	if (c->fd >= 0)
		close(c->fd);
	c->mounted = c->ring_up = false;
	c->fd = -1;
}

/* How conn_open_init() answers FUSE_INIT. */
enum init_mode {
	INIT_URING,	/* with FUSE_OVER_IO_URING: what every case but three wants */
	INIT_NO_URING,	/* without it: the connection has no ring */
	INIT_LATER,	/* not yet: the case calls answer_init() itself */
};

/* A fresh connection, FUSE_INIT answered as mode says, with an io_uring. */
static int conn_open_init(struct conn *c, const char *name, enum init_mode mode)
{
	const char *what = "open /dev/fuse";
	char opts[128];
	int err;

	memset(c, 0, sizeof(*c));
	c->fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (c->fd < 0) {
		err = -errno;
		goto out;
	}

	/* the options fusermount passes: fd= binds the mount to our fd */
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0",
		 c->fd);
	what = "mount";
	if (mount("bufring-test", mnt, "fuse.bufring-test", MS_NOSUID | MS_NODEV,
		  opts) < 0) {
		err = -errno;
		goto out;
	}
	c->mounted = true;

	if (mode != INIT_LATER) {
		err = answer_init(c->fd, mode == INIT_URING, &what);
		if (err)
			goto out;
	}

	/* FUSE's commands do not fit a 64-byte SQE: fuse_uring_cmd() wants SQE128 */
	what = "io_uring_queue_init(SQE128)";
	err = io_uring_queue_init(16, &c->ring, IORING_SETUP_SQE128);
	if (err)
		goto out;
	c->ring_up = true;
	return 0;
out:
	conn_close(c);
	return fail(name, "set-up: %s: %s", what, strerror(-err));
}

/* A fresh connection, initialized, with a ring; FAILs the case if not. */
static int conn_open(struct conn *c, const char *name)
{
	return conn_open_init(c, name, INIT_URING);
}

/* ---- commands ------------------------------------------------------------ */

/*
 * An SQE for a FUSE command, its fuse_uring_cmd_req in sqe->cmd (the 80
 * bytes an SQE128 has after its first 48). liburing clears none of it, and
 * the kernel reads every field, so the whole 128 bytes are zeroed first.
 */
static struct io_uring_sqe *fuse_cmd_sqe(struct conn *c, uint32_t cmd_op,
					 const struct fuse_uring_cmd_req *req,
					 uint64_t ud)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&c->ring);

	if (!sqe)
		return NULL;
	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = c->fd;
	sqe->cmd_op = cmd_op;
	sqe->user_data = ud;
	memcpy((char *)sqe + offsetof(struct io_uring_sqe, cmd), req, sizeof(*req));
	return sqe;
}

/* Wait up to ms for one CQE; 0 and its user_data and res, or -ETIME. */
static int wait_cqe_ms(struct conn *c, int ms, uint64_t *ud, int *res)
{
	struct __kernel_timespec ts = {
		.tv_sec = ms / 1000,
		.tv_nsec = (long long)(ms % 1000) * 1000000,
	};
	struct io_uring_cqe *cqe;
	int ret;

	do {
		ret = io_uring_wait_cqe_timeout(&c->ring, &cqe, &ts);
	} while (ret == -EINTR);
	if (ret < 0)
		return ret;
	*ud = cqe->user_data;
	*res = cqe->res;
	io_uring_cqe_seen(&c->ring, cqe);
	return 0;
}

/*
 * Submit the prepared SQE and return the command's result: the res of its
 * CQE, or ACCEPTED if there is none. fuse_uring_cmd() runs inline while
 * io_uring_enter() submits, and a refused command's CQE is posted before
 * the call returns; an accepted one stays queued (-EIOCBQUEUED) until the
 * kernel has a request for its entry, which in these cases never comes.
 */
static int submit_and_reap_ms(struct conn *c, uint64_t ud, int ms)
{
	uint64_t got;
	int ret, res;

	ret = io_uring_submit(&c->ring);
	if (ret != 1) {
		printf("# io_uring_submit: %s\n", ret < 0 ? strerror(-ret) : "0 SQEs");
		return NOT_SUBMITTED;
	}
	for (;;) {
		ret = wait_cqe_ms(c, ms, &got, &res);
		if (ret == -ETIME)
			return ACCEPTED;
		if (ret < 0) {
			printf("# io_uring_wait_cqe_timeout: %s\n", strerror(-ret));
			return NOT_SUBMITTED;
		}
		if (got == ud)
			return res;
		printf("# unexpected CQE: kind %u q=%u ent=%u res %d\n",
		       UD_KIND(got), UD_QID(got), UD_ENT(got), res);
	}
}

static int submit_and_reap(struct conn *c, uint64_t ud)
{
	return submit_and_reap_ms(c, ud, ACCEPT_MS);
}

/* What one REGISTER carries. */
struct reg {
	uint16_t qid;
	uint64_t flags;
	uint32_t buf_size;	/* init.buf_size */
	uint16_t depth;		/* init.queue_depth */
	uint16_t ent;		/* sqe->buf_index: the entry id, its header slot */
	const struct iovec *iov; /* [0] headers, [1] payload */
	uint16_t padding;	/* cmd_req.padding: must be 0 */
	uint16_t init_padding;	/* cmd_req.init.padding: must be 0 */
};

/* Submit one REGISTER; a CQE counts if it comes within ms. */
static int do_register_ms(struct conn *c, const struct reg *r, int ms)
{
	struct fuse_uring_cmd_req req = {
		.flags = r->flags,
		.qid = r->qid,
		.padding = r->padding,
		.init = {
			.buf_size = r->buf_size, .queue_depth = r->depth,
			.padding = r->init_padding,
		},
	};
	uint64_t ud = UD(UD_REGISTER, r->qid, r->ent);
	struct io_uring_sqe *sqe;

	sqe = fuse_cmd_sqe(c, FUSE_IO_URING_CMD_REGISTER, &req, ud);
	if (!sqe)
		return NOT_SUBMITTED;
	sqe->addr = (uintptr_t)r->iov;
	sqe->len = 2;
	sqe->buf_index = r->ent;
	return submit_and_reap_ms(c, ud, ms);
}

static int do_register(struct conn *c, const struct reg *r)
{
	return do_register_ms(c, r, ACCEPT_MS);
}

static int do_commit_padded(struct conn *c, uint16_t qid, uint16_t ent,
			    uint64_t commit_id, uint16_t padding)
{
	struct fuse_uring_cmd_req req = {
		.commit_id = commit_id, .qid = qid, .padding = padding,
	};
	uint64_t ud = UD(UD_COMMIT, qid, ent);

	if (!fuse_cmd_sqe(c, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, &req, ud))
		return NOT_SUBMITTED;
	return submit_and_reap(c, ud);
}

static int do_commit(struct conn *c, uint16_t qid, uint16_t ent,
		     uint64_t commit_id)
{
	return do_commit_padded(c, qid, ent, commit_id, 0);
}

/* ---- queue memory ----------------------------------------------------- */

/*
 * One queue's memory in the buffer-ring layout: iov[0] the headers region
 * (one struct fuse_uring_req_header per entry, indexed by entry id), iov[1]
 * the payload region (buffers of buf_size). Cases bend the iovecs after
 * qmem_alloc(); the mappings stay as allocated, for qmem_free().
 */
struct qmem {
	void *hmap, *pmap;
	size_t hmap_len, pmap_len;
	struct iovec iov[2];
	uint16_t depth;
	uint32_t buf_size;
	uint64_t flags;		/* what reg_bufring() registers: BUFRING, ... */
};

static void *map_anon(size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static size_t page_round(size_t len)
{
	return (len + page_size - 1) / page_size * page_size;
}

static void qmem_free(struct qmem *q)
{
	if (q->hmap)
		munmap(q->hmap, q->hmap_len);
	if (q->pmap)
		munmap(q->pmap, q->pmap_len);
	memset(q, 0, sizeof(*q));
}

/* 0, or -1 after FAILing the case. One spare byte, for the misaligned case. */
static int qmem_alloc(const char *name, struct qmem *q, uint16_t depth,
		      uint32_t buf_size, size_t payload_len)
{
	memset(q, 0, sizeof(*q));
	q->depth = depth;
	q->buf_size = buf_size;
	q->flags = FUSE_URING_BUFRING;
	q->hmap_len = page_round(depth * HDR_SZ + 1);
	q->pmap_len = page_round(payload_len);
	q->hmap = map_anon(q->hmap_len, PROT_READ | PROT_WRITE);
	q->pmap = map_anon(q->pmap_len, PROT_READ | PROT_WRITE);
	if (!q->hmap || !q->pmap) {
		qmem_free(q);
		return fail(name, "set-up: mmap: %s", strerror(errno));
	}
	memset(q->hmap, POISON, q->hmap_len);
	q->iov[0] = (struct iovec){ q->hmap, depth * HDR_SZ };
	q->iov[1] = (struct iovec){ q->pmap, payload_len };
	return 0;
}

/* The well-formed queue: DEPTH entries, NBUFS buffers of max_payload. */
static int qmem_good(const char *name, struct qmem *q)
{
	return qmem_alloc(name, q, DEPTH, max_payload, NBUFS * (size_t)max_payload);
}

/*
 * Memory for one entry without a buffer ring (7.2's layout): its own header
 * and a payload of at least max_payload_sz (fuse_uring_create_ring_ent()).
 */
static int qmem_iovec(const char *name, struct qmem *q)
{
	return qmem_alloc(name, q, 1, 0, max_payload);
}

/*
 * Header slots are copied in and out with memcpy: the misaligned case puts
 * them at an odd address, where a struct access would be undefined.
 */
static char *slot(const struct qmem *q, uint16_t ent)
{
	return (char *)q->iov[0].iov_base + (size_t)ent * HDR_SZ;
}

static bool slot_poisoned(const struct qmem *q, uint16_t ent)
{
	const unsigned char *p = (const unsigned char *)slot(q, ent);
	size_t i;

	for (i = 0; i < HDR_SZ; i++)
		if (p[i] != POISON)
			return false;
	return true;
}

/* ---- REGISTER helpers --------------------------------------------------- */

static struct reg reg_bufring(uint16_t qid, uint16_t ent, const struct qmem *q)
{
	return (struct reg){
		.qid = qid, .flags = q->flags, .buf_size = q->buf_size,
		.depth = q->depth, .ent = ent, .iov = q->iov,
	};
}

static struct reg reg_iovec(uint16_t qid, const struct qmem *q)
{
	return (struct reg){ .qid = qid, .iov = q->iov };
}

/*
 * A set-up step: this REGISTER must be accepted, or the case cannot test
 * what it is about. 0, or -1 after FAILing the case.
 */
static int setup_register(const char *name, struct conn *c, const struct reg *r)
{
	char buf[48];
	int res = do_register(c, r);

	if (res == ACCEPTED)
		return 0;
	return fail(name, "set-up: REGISTER q=%u ent=%u: expected accepted, got %s",
		    r->qid, r->ent, res_str(res, buf, sizeof(buf)));
}

/* Every entry of queue qid, as a buffer ring. */
static int setup_bufring_queue(const char *name, struct conn *c, uint16_t qid,
			       const struct qmem *q)
{
	uint16_t ent;

	for (ent = 0; ent < q->depth; ent++) {
		struct reg r = reg_bufring(qid, ent, q);

		if (setup_register(name, c, &r))
			return -1;
	}
	return 0;
}

/* The cross-queue cases need a second queue. */
static int need_two_queues(const char *name)
{
	if (nr_queues >= 2)
		return 0;
	return fail(name, "needs 2 FUSE queues (possible CPUs), this guest has %u",
		    nr_queues);
}

/* ---- a request: stat(2) of the mount root from another thread ----------- */

/*
 * The thread is created first and waits for stat_go(): creating it maps a
 * stack, and the unmapped-headers case must not have that mapping land in
 * the hole it made.
 */
struct stat_job {
	pthread_t th;
	sem_t go;
	int err;		/* errno of stat(2), 0 on success */
	struct stat st;
};

static void *stat_thread(void *arg)
{
	struct stat_job *j = arg;

	while (sem_wait(&j->go) < 0 && errno == EINTR)
		;
	j->err = stat(mnt, &j->st) < 0 ? errno : 0;
	return NULL;
}

/* 0, or -1 after FAILing the case; j is heap memory, see stat_end(). */
static int stat_start(const char *name, struct stat_job **jp)
{
	struct stat_job *j = calloc(1, sizeof(*j));
	int err;

	*jp = NULL;
	if (!j || sem_init(&j->go, 0, 0) < 0) {
		free(j);
		return fail(name, "set-up: stat thread: out of memory");
	}
	err = pthread_create(&j->th, NULL, stat_thread, j);
	if (err) {
		sem_destroy(&j->go);
		free(j);
		return fail(name, "set-up: pthread_create: %s", strerror(err));
	}
	*jp = j;
	return 0;
}

static void stat_go(struct stat_job *j)
{
	sem_post(&j->go);
}

/* Wait up to ms for stat(2) to return: 0 if it did, else ETIMEDOUT. */
static int stat_join(struct stat_job *j, int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return pthread_timedjoin_np(j->th, NULL, &ts);
}

/*
 * The end of a case with a stat thread, after conn_close(): the aborted
 * connection fails a stat(2) still waiting, so it returns now. If it does
 * not, the thread may still write to j: leave j allocated and say so.
 */
static void stat_end(struct stat_job *j, bool joined)
{
	if (!j)
		return;
	if (!joined) {
		stat_go(j);	/* in case the case ended before it */
		if (stat_join(j, JOIN_MS)) {
			printf("# stat(2) still blocked after the connection ended\n");
			return;
		}
	}
	sem_destroy(&j->go);
	free(j);
}

/* ---- serving the GETATTR --------------------------------------------- */

struct served {
	uint16_t qid, ent, buf_id;
	uint64_t unique;
	int wrong_qid_res;	/* with reply_bend.wrong_qid_first */
	int padded_commit_res;	/* with reply_bend.padded_commit_first */
};

/*
 * A reply with one thing wrong (the reply-* and commit-wrong-qid cases);
 * serve_getattr() with NULL sends the right one.
 */
struct reply_bend {
	bool payload_sz_set;
	uint32_t payload_sz;	/* ring_ent_in_out.payload_sz, if set */
	uint64_t unique_xor;	/* fuse_out_header.unique ^= this */
	int32_t error;		/* fuse_out_header.error */
	bool wrong_qid_first;	/* COMMIT_AND_FETCH on the other queue first */
	uint16_t ent_padding;	/* ring_ent_in_out.padding: must stay 0 */
	uint64_t ent_reserved;	/* ring_ent_in_out.reserved: must stay 0 */
	bool padded_commit_first; /* a COMMIT_AND_FETCH with cmd_req.padding 1 first */
};

/* Every header slot still poisoned, but the one the request went to. */
static bool only_slot_written(const struct qmem *qs, uint16_t qid, uint16_t ent)
{
	unsigned int q;
	uint16_t e;

	for (q = 0; q < nr_queues; q++)
		for (e = 0; e < qs[q].depth; e++)
			if (!(q == qid && e == ent) && !slot_poisoned(&qs[q], e))
				return false;
	return true;
}

/*
 * The kernel hands the GETATTR of stat(2) on the mount root to an entry:
 * the entry's REGISTER (or, once it served a request, its COMMIT_AND_FETCH)
 * completes with res 0, the request is in the entry's header slot (in_out:
 * fuse_in_header, op_in: fuse_getattr_in, ring_ent_in_out: commit_id and
 * the buf_id the kernel picked, since GETATTR has an out argument to carry).
 * Check that, answer with st_size = MARKER_SIZE in that buffer (bent by b,
 * if not NULL), and COMMIT_AND_FETCH. A queue without a buffer ring
 * (buf_size 0) has one entry, whose payload is all of iov[1], and buf_id 0.
 * 0, or -1 after FAILing the case.
 */
static int serve_getattr(const char *name, struct conn *c,
			 const struct qmem *qs, struct served *s,
			 const struct reply_bend *b)
{
	struct fuse_uring_ent_in_out eio;
	struct fuse_out_header oh;
	struct fuse_in_header ih;
	struct fuse_attr_out ao;
	const struct qmem *q;
	uint64_t ud;
	size_t nbufs;
	char *hdr;
	int ret, res;

	ret = wait_cqe_ms(c, REQUEST_MS, &ud, &res);
	if (ret == -ETIME)
		return fail(name, "no request on the ring within %d ms of stat(2)",
			    REQUEST_MS);
	if (ret < 0)
		return fail(name, "io_uring_wait_cqe_timeout: %s", strerror(-ret));
	if ((UD_KIND(ud) != UD_REGISTER && UD_KIND(ud) != UD_COMMIT) ||
	    res != 0 || UD_QID(ud) >= nr_queues)
		return fail(name, "expected a REGISTER or COMMIT CQE with res 0, got kind %u "
			    "q=%u ent=%u res %d", UD_KIND(ud), UD_QID(ud),
			    UD_ENT(ud), res);
	s->qid = UD_QID(ud);
	s->ent = UD_ENT(ud);
	q = &qs[s->qid];
	hdr = slot(q, s->ent);
	memcpy(&ih, hdr + offsetof(struct fuse_uring_req_header, in_out), sizeof(ih));
	memcpy(&eio, hdr + offsetof(struct fuse_uring_req_header, ring_ent_in_out),
	       sizeof(eio));

	if (ih.opcode != FUSE_GETATTR || ih.nodeid != FUSE_ROOT_ID)
		return fail(name, "q=%u ent=%u: expected GETATTR of the root in its "
			    "header slot, found opcode %u nodeid %llu", s->qid,
			    s->ent, ih.opcode, (unsigned long long)ih.nodeid);
	if (eio.commit_id != ih.unique)
		return fail(name, "commit_id %llu is not the request's unique %llu",
			    (unsigned long long)eio.commit_id,
			    (unsigned long long)ih.unique);
	if (eio.payload_sz != 0)
		return fail(name, "GETATTR has no in payload, but payload_sz is %u",
			    eio.payload_sz);
	nbufs = q->buf_size ? q->iov[1].iov_len / q->buf_size : 1;
	if (eio.buf_id >= nbufs)
		return fail(name, "buf_id %u, but the payload region holds %zu buffers",
			    eio.buf_id, nbufs);
	if (!only_slot_written(qs, s->qid, s->ent))
		return fail(name, "the kernel wrote outside entry %u's header slot",
			    s->ent);
	s->buf_id = eio.buf_id;
	s->unique = ih.unique;

	/* the reply: fuse_out_header in in_out, fuse_attr_out in the buffer */
	memset(&ao, 0, sizeof(ao));
	ao.attr.ino = FUSE_ROOT_ID;
	ao.attr.mode = S_IFDIR | 0755;
	ao.attr.nlink = 2;
	ao.attr.size = MARKER_SIZE;
	ao.attr.blksize = 4096;
	memcpy((char *)q->iov[1].iov_base + (size_t)s->buf_id * q->buf_size,
	       &ao, sizeof(ao));
	oh = (struct fuse_out_header){
		.len = sizeof(oh) + sizeof(ao), .error = 0, .unique = ih.unique,
	};
	eio.payload_sz = sizeof(ao);
	if (b) {
		oh.unique ^= b->unique_xor;
		oh.error = b->error;
		if (b->payload_sz_set)
			eio.payload_sz = b->payload_sz;
		eio.padding = b->ent_padding;
		eio.reserved = b->ent_reserved;
	}
	memcpy(hdr + offsetof(struct fuse_uring_req_header, in_out), &oh, sizeof(oh));
	memcpy(hdr + offsetof(struct fuse_uring_req_header, ring_ent_in_out),
	       &eio, sizeof(eio));

	/* the same commit_id on the other queue: not in its processing list */
	if (b && b->wrong_qid_first)
		s->wrong_qid_res = do_commit(c, (uint16_t)((s->qid + 1) % nr_queues),
					     s->ent, ih.unique);

	/* the right commit, but with padding that is not 0 */
	if (b && b->padded_commit_first)
		s->padded_commit_res = do_commit_padded(c, s->qid, s->ent,
							ih.unique, 1);

	/*
	 * The commit is accepted and stays queued: it fetches the next
	 * request. (Also with a bent reply: the command is fine, the request
	 * it answers ends with the kernel's error.)
	 */
	res = do_commit(c, s->qid, s->ent, ih.unique);
	if (res != ACCEPTED) {
		char buf[48];

		return fail(name, "COMMIT_AND_FETCH of the GETATTR: expected "
			    "accepted, got %s", res_str(res, buf, sizeof(buf)));
	}
	return 0;
}

/* stat(2) must return our reply: 0, or -1 after FAILing the case. */
static int check_stat_reply(const char *name, struct stat_job *j, bool *joined)
{
	*joined = stat_join(j, JOIN_MS) == 0;
	if (!*joined)
		return fail(name, "stat(2) still blocked %d ms after the reply", JOIN_MS);
	if (j->err)
		return fail(name, "stat(2) of the mount root failed: %s",
			    strerror(j->err));
	if ((unsigned long long)j->st.st_size != MARKER_SIZE)
		return fail(name, "stat(2) returned st_size %lld, not our reply's %llu",
			    (long long)j->st.st_size, MARKER_SIZE);
	return 0;
}

/*
 * The body of every case that carries a request: register every queue with
 * qs (prepared by the case), stat(2) the root, serve the GETATTR, check
 * stat(2) got our reply. c stays open for the case to go on.
 * 0, or -1 after FAILing the case.
 */
static int round_trip(const char *name, struct conn *c, struct qmem *qs,
		      struct served *s)
{
	struct stat_job *j;
	bool joined = false;
	unsigned int q;
	int err = -1;

	if (stat_start(name, &j))
		return -1;
	for (q = 0; q < nr_queues; q++)
		if (setup_bufring_queue(name, c, (uint16_t)q, &qs[q]))
			goto out;
	/* every queue has entries now: the ring is ready (is_ring_ready()) */
	stat_go(j);
	if (serve_getattr(name, c, qs, s, NULL))
		goto out;
	err = check_stat_reply(name, j, &joined);
out:
	if (err)
		conn_close(c);	/* a stat(2) still waiting ends with the connection */
	stat_end(j, joined);
	return err;
}

/* Memory for every queue: well-formed, or by a case's own function. */
static int qs_alloc(const char *name, struct qmem *qs,
		    int (*alloc)(const char *, struct qmem *))
{
	unsigned int q;

	for (q = 0; q < nr_queues; q++)
		if (alloc(name, &qs[q]))
			return -1;
	return 0;
}

static void qs_free(struct qmem *qs)
{
	unsigned int q;

	for (q = 0; q < nr_queues; q++)
		qmem_free(&qs[q]);
	free(qs);
}

/* ---- the cases ---------------------------------------------------------- */

/*
 * Positive control: a well-formed buffer ring on every queue registers
 * (every SQE stays queued, no CQE), and a GETATTR arrives on it in the
 * header slot of the entry whose REGISTER completed, with a buffer the
 * kernel picked, and our reply reaches stat(2).
 */
static void case_control(const char *name)
{
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct served s;
	struct conn c;

	if (!qs || qs_alloc(name, qs, qmem_good) || conn_open(&c, name))
		goto out;
	if (round_trip(name, &c, qs, &s) == 0) {
		printf("# control: GETATTR unique %llu on queue %u, entry %u (header "
		       "slot %u), kernel-chosen buf_id %u; stat(2) got st_size %#llx\n",
		       (unsigned long long)s.unique, s.qid, s.ent, s.ent, s.buf_id,
		       MARKER_SIZE);
		pass(name);
	}
	conn_close(&c);
out:
	if (qs)
		qs_free(qs);
}

/*
 * A flag bit other than FUSE_URING_BUFRING. Bit 63: v2's later patches
 * define bits 1-3, this one stays unknown whatever the series grows to.
 * Kernel: fuse_uring_register(), "if (!init_flags_valid(init_flags))
 * return -EINVAL;".
 */
static void case_unknown_flag(const char *name)
{
	struct qmem q;
	struct conn c;
	struct reg r;

	if (qmem_good(name, &q))
		return;
	if (conn_open(&c, name) == 0) {
		r = reg_bufring(0, 0, &q);
		r.flags |= 1ULL << 63;
		expect_res(name, -EINVAL, do_register(&c, &r));
		conn_close(&c);
	}
	qmem_free(&q);
}

/*
 * Queues of one connection that disagree (cross-queue cases): queue 0 is
 * registered first and must be accepted, which shows that its set-up is
 * valid on its own; queue 1 then differs from it in one respect only. The
 * set-ups used are each accepted somewhere as a first REGISTER: the
 * control's, the odd one in its own case (queue 0 here), the iovec one in
 * cross-queue-iovec-then-bufring. So the -EINVAL is for disagreeing. All
 * queues of a connection must agree on the flags, init.buf_size and
 * init.queue_depth: the first queue created fixes them. Kernel:
 * fuse_uring_create_queue(), "if (!fuse_uring_config_matches(ring, queue,
 * init_flags)) { ... return ERR_PTR(-EINVAL);". (A kernel before that
 * check fails these cases with "got accepted".)
 */
static void cross_queue(const char *name, struct qmem *q0, bool q0_bufring,
			struct qmem *q1, bool q1_bufring)
{
	struct conn c;
	struct reg r;

	if (need_two_queues(name) || conn_open(&c, name))
		return;
	r = q0_bufring ? reg_bufring(0, 0, q0) : reg_iovec(0, q0);
	if (setup_register(name, &c, &r) == 0) {
		r = q1_bufring ? reg_bufring(1, 0, q1) : reg_iovec(1, q1);
		expect_res(name, -EINVAL, do_register(&c, &r));
	}
	conn_close(&c);
}

/* Queue 0 with FUSE_URING_BUFRING, queue 1 without. */
static void case_cross_bufring_then_iovec(const char *name)
{
	struct qmem q0, q1;

	if (qmem_good(name, &q0))
		return;
	if (qmem_iovec(name, &q1) == 0) {
		cross_queue(name, &q0, true, &q1, false);
		qmem_free(&q1);
	}
	qmem_free(&q0);
}

/* Queue 0 without FUSE_URING_BUFRING, queue 1 with it. */
static void case_cross_iovec_then_bufring(const char *name)
{
	struct qmem q0, q1;

	if (qmem_iovec(name, &q0))
		return;
	if (qmem_good(name, &q1) == 0) {
		cross_queue(name, &q0, false, &q1, true);
		qmem_free(&q1);
	}
	qmem_free(&q0);
}

/* Queue 0 with buffers twice the size of queue 1's (the control's). */
static void case_cross_buf_size(const char *name)
{
	struct qmem q0, q1;

	if (qmem_alloc(name, &q0, DEPTH, 2 * max_payload,
		       NBUFS * 2 * (size_t)max_payload))
		return;
	if (qmem_good(name, &q1) == 0) {
		cross_queue(name, &q0, true, &q1, true);
		qmem_free(&q1);
	}
	qmem_free(&q0);
}

/* Queue 0 twice as deep as queue 1 (the control's depth). */
static void case_cross_queue_depth(const char *name)
{
	struct qmem q0, q1;

	if (qmem_alloc(name, &q0, 2 * DEPTH, max_payload,
		       NBUFS * (size_t)max_payload))
		return;
	if (qmem_good(name, &q1) == 0) {
		cross_queue(name, &q0, true, &q1, true);
		qmem_free(&q1);
	}
	qmem_free(&q0);
}

/*
 * One queue registered one way, then the other. The queue's first REGISTER
 * decides. Kernel: fuse_uring_register(), "else if
 * (!queue_init_flags_consistent(queue, init_flags)) return -EINVAL;".
 */
static void same_queue(const char *name, bool first_bufring)
{
	struct qmem good, iovec_q;
	struct conn c;
	struct reg first, second;

	if (qmem_good(name, &good))
		return;
	if (qmem_iovec(name, &iovec_q) == 0) {
		first = first_bufring ? reg_bufring(0, 0, &good) : reg_iovec(0, &iovec_q);
		second = first_bufring ? reg_iovec(0, &iovec_q) : reg_bufring(0, 1, &good);
		if (conn_open(&c, name) == 0) {
			if (setup_register(name, &c, &first) == 0)
				expect_res(name, -EINVAL, do_register(&c, &second));
			conn_close(&c);
		}
		qmem_free(&iovec_q);
	}
	qmem_free(&good);
}

static void case_same_bufring_then_iovec(const char *name)
{
	same_queue(name, true);
}

static void case_same_iovec_then_bufring(const char *name)
{
	same_queue(name, false);
}

/*
 * A queue's first REGISTER with one thing wrong, given as a change to the
 * well-formed REGISTER of queue 0 entry 0 and its memory.
 */
static void first_register(const char *name, int want,
			   void (*bend)(struct reg *r, struct qmem *q))
{
	struct qmem q;
	struct conn c;
	struct reg r;

	if (qmem_good(name, &q))
		return;
	r = reg_bufring(0, 0, &q);
	bend(&r, &q);
	if (conn_open(&c, name) == 0) {
		expect_res(name, want, do_register(&c, &r));
		conn_close(&c);
	}
	qmem_free(&q);
}

/*
 * init.queue_depth 0. Kernel: fuse_uring_bufring_setup(),
 * "if (!queue_depth || !buf_size) return -EINVAL;".
 */
static void bend_depth_zero(struct reg *r, struct qmem *q)
{
	(void)q;
	r->depth = 0;
}

static void case_depth_zero(const char *name)
{
	first_register(name, -EINVAL, bend_depth_zero);
}

/* init.buf_size 0. Kernel: the same line as queue_depth 0. */
static void bend_buf_size_zero(struct reg *r, struct qmem *q)
{
	(void)q;
	r->buf_size = 0;
}

static void case_buf_size_zero(const char *name)
{
	first_register(name, -EINVAL, bend_buf_size_zero);
}

/*
 * init.queue_depth one more than the headers region (iov[0]) has slots
 * for. Kernel: fuse_uring_bufring_setup(), "if (headers_size < queue_depth
 * * sizeof(struct fuse_uring_req_header)) return -EINVAL;".
 */
static void bend_depth_beyond_headers(struct reg *r, struct qmem *q)
{
	r->depth = (uint16_t)(q->iov[0].iov_len / HDR_SZ + 1);
}

static void case_depth_beyond_headers(const char *name)
{
	first_register(name, -EINVAL, bend_depth_beyond_headers);
}

/*
 * init.buf_size one byte short of the ring's max_payload_sz (the payload
 * region still holds NBUFS such buffers). Kernel: fuse_uring_bufring_setup(),
 * "if (buf_size < queue->ring->max_payload_sz) return -EINVAL;".
 */
static void bend_buf_size_short(struct reg *r, struct qmem *q)
{
	(void)q;
	r->buf_size = max_payload - 1;
}

static void case_buf_size_short(const char *name)
{
	first_register(name, -EINVAL, bend_buf_size_short);
}

/*
 * A NULL payload region: a NULL buffer address is how the kernel marks an
 * entry without a buffer. Kernel: fuse_uring_bufring_setup(),
 * "if (!payload) return -EINVAL;".
 */
static void bend_payload_null(struct reg *r, struct qmem *q)
{
	(void)r;
	q->iov[1].iov_base = NULL;
}

static void case_payload_null(const char *name)
{
	first_register(name, -EINVAL, bend_payload_null);
}

/*
 * A payload region one byte short of one buffer: floor(len / buf_size) is 0
 * buffers. Kernel: fuse_uring_bufring_setup(), "nr_bufs = payload_size /
 * buf_size; if (!nr_bufs || nr_bufs > U16_MAX) return -EINVAL;".
 */
static void bend_payload_short(struct reg *r, struct qmem *q)
{
	q->iov[1].iov_len = r->buf_size - 1;
}

static void case_payload_short(const char *name)
{
	first_register(name, -EINVAL, bend_payload_short);
}

/*
 * The payload region as buffer ids see it: 65536 buffers do not fit the u16
 * buf_id, 65535 do. The region is reserved PROT_NONE (512 MiB of address
 * space, no memory): REGISTER only records addresses, and nothing is sent.
 * Kernel: the nr_bufs line above, "nr_bufs > U16_MAX".
 */
static void payload_nbufs(const char *name, size_t nbufs, int want)
{
	size_t len = nbufs * max_payload;
	void *region = map_anon(len, PROT_NONE);
	struct qmem q;
	struct conn c;
	struct reg r;

	if (!region) {
		fail(name, "set-up: mmap %zu MiB PROT_NONE: %s", len >> 20,
		     strerror(errno));
		return;
	}
	if (qmem_good(name, &q) == 0) {
		q.iov[1] = (struct iovec){ region, len };
		r = reg_bufring(0, 0, &q);
		if (conn_open(&c, name) == 0) {
			expect_res(name, want, do_register(&c, &r));
			conn_close(&c);
		}
		qmem_free(&q);
	}
	munmap(region, len);
}

static void case_payload_too_many_bufs(const char *name)
{
	payload_nbufs(name, 65536, -EINVAL);
}

static void case_payload_u16_max_bufs(const char *name)
{
	payload_nbufs(name, 65535, ACCEPTED);
}

/*
 * An entry id (sqe->buf_index) equal to init.queue_depth, after entry 0
 * set the queue up. Kernel: fuse_uring_create_ring_ent(),
 * "if (ent->id >= queue->bufring->queue_depth) { ... err = -EINVAL;".
 */
static void case_entry_id_beyond_depth(const char *name)
{
	struct qmem q;
	struct conn c;
	struct reg r;

	if (qmem_good(name, &q))
		return;
	if (conn_open(&c, name) == 0) {
		r = reg_bufring(0, 0, &q);
		if (setup_register(name, &c, &r) == 0) {
			r.ent = q.depth;
			expect_res(name, -EINVAL, do_register(&c, &r));
		}
		conn_close(&c);
	}
	qmem_free(&q);
}

/*
 * A payload region of 1.5 buffers. The kernel does not require a multiple
 * of buf_size: fuse_uring_bufring_setup() takes "nr_bufs = payload_size /
 * buf_size", floor(1.5) = 1 buffer, and ignores the rest. Documented
 * behaviour, asserted as such: REGISTER is accepted on every queue, and a
 * request gets buffer 0, the only one.
 */
static int alloc_one_and_a_half(const char *name, struct qmem *q)
{
	return qmem_alloc(name, q, DEPTH, max_payload,
			  max_payload + (size_t)max_payload / 2);
}

static void case_payload_not_multiple(const char *name)
{
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct served s;
	struct conn c;

	if (!qs || qs_alloc(name, qs, alloc_one_and_a_half) || conn_open(&c, name))
		goto out;
	if (round_trip(name, &c, qs, &s) == 0) {
		if (s.buf_id == 0)
			pass(name);
		else
			fail(name, "1.5 buffers make 1 (id 0), the kernel picked buf_id %u",
			     s.buf_id);
	}
	conn_close(&c);
out:
	if (qs)
		qs_free(qs);
}

/*
 * A headers region at an odd address. The kernel has no alignment check
 * (fuse_uring_bufring_setup() checks only the length) and copies headers
 * with copy_to_user()/copy_from_user(), which take any address. Asserted as
 * such: REGISTER is accepted and a request is served through the odd slot.
 */
static int alloc_misaligned(const char *name, struct qmem *q)
{
	if (qmem_good(name, q))
		return -1;
	q->iov[0].iov_base = (char *)q->hmap + 1;	/* qmem_alloc left a spare byte */
	return 0;
}

static void case_headers_misaligned(const char *name)
{
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct served s;
	struct conn c;

	if (!qs || qs_alloc(name, qs, alloc_misaligned) || conn_open(&c, name))
		goto out;
	if (round_trip(name, &c, qs, &s) == 0) {
		printf("# misaligned headers at %p: GETATTR served on queue %u entry %u\n",
		       qs[s.qid].iov[0].iov_base, s.qid, s.ent);
		pass(name);
	}
	conn_close(&c);
out:
	if (qs)
		qs_free(qs);
}

/*
 * A headers region that is not mapped (munmap'ed after mmap). REGISTER
 * cannot tell: import_iovec() checks only that the range is user space.
 * The copy of the request's headers fails instead: copy_header_to_ring()
 * returns -EFAULT, fuse_uring_prepare_send() ends the request with it, and
 * fuse_uring_send_in_task() puts the entry back as available without a CQE.
 * Asserted as such: REGISTER accepted, stat(2) fails with EFAULT, the
 * server sees no CQE, and the kernel does not oops (the guest script checks
 * the log).
 */
static void case_headers_unmapped(const char *name)
{
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct stat_job *j = NULL;
	bool joined = false;
	unsigned int q;
	struct conn c;
	uint64_t ud;
	int res;

	if (!qs || qs_alloc(name, qs, qmem_good) || conn_open(&c, name))
		goto out;
	if (stat_start(name, &j))	/* its stack mapped before the holes */
		goto close;
	for (q = 0; q < nr_queues; q++) {
		munmap(qs[q].hmap, qs[q].hmap_len);
		qs[q].hmap = NULL;
		if (setup_bufring_queue(name, &c, (uint16_t)q, &qs[q]))
			goto close;
	}
	stat_go(j);
	joined = stat_join(j, REQUEST_MS) == 0;
	if (!joined)
		fail(name, "stat(2) still blocked after %d ms", REQUEST_MS);
	else if (j->err != EFAULT)
		fail(name, "expected stat(2) to fail with EFAULT, got %s",
		     j->err ? strerror(j->err) : "success");
	else if (wait_cqe_ms(&c, ACCEPT_MS, &ud, &res) == 0)
		fail(name, "stat(2) got EFAULT, but the ring has a CQE: kind %u "
		     "q=%u ent=%u res %d", UD_KIND(ud), UD_QID(ud), UD_ENT(ud), res);
	else
		pass(name);
close:
	conn_close(&c);
	stat_end(j, joined);
out:
	if (qs)
		qs_free(qs);
}

/*
 * A COMMIT_AND_FETCH whose commit_id names no request in flight (none was
 * ever sent). Kernel: fuse_uring_commit_fetch(), "req =
 * fuse_request_find(fpq, commit_id); err = -ENOENT; if (!req) { ...
 * return err;".
 */
static void case_commit_unknown(const char *name)
{
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	unsigned int q;
	struct conn c;

	if (!qs || qs_alloc(name, qs, qmem_good) || conn_open(&c, name))
		goto out;
	for (q = 0; q < nr_queues; q++)
		if (setup_bufring_queue(name, &c, (uint16_t)q, &qs[q]))
			goto close;
	expect_res(name, -ENOENT, do_commit(&c, 0, 0, 4242));
close:
	conn_close(&c);
out:
	if (qs)
		qs_free(qs);
}

/*
 * A double commit: a COMMIT_AND_FETCH repeating the commit_id of a request
 * already answered (the first commit was accepted). The request has ended
 * and left the processing list. Kernel: the same fuse_request_find() line,
 * -ENOENT.
 */
static void case_commit_stale(const char *name)
{
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct served s;
	struct conn c;

	if (!qs || qs_alloc(name, qs, qmem_good) || conn_open(&c, name))
		goto out;
	if (round_trip(name, &c, qs, &s) == 0)
		expect_res(name, -ENOENT, do_commit(&c, s.qid, s.ent, s.unique));
	conn_close(&c);
out:
	if (qs)
		qs_free(qs);
}

/* ---- pinned and zero-copy: capabilities and RLIMIT_MEMLOCK --------------- */

#define PINNED		(FUSE_URING_PINNED_HEADERS | FUSE_URING_PINNED_BUFFERS)
#define ZERO_COPY_ALL	(FUSE_URING_BUFRING | PINNED | FUSE_URING_ZERO_COPY)

/*
 * Turn one capability of this thread's effective set off or back on (it
 * stays in the permitted set, so it can come back). 0, or -errno.
 */
static int cap_effective(int cap, bool on)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0,
	};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &hdr, data) < 0)
		return -errno;
	if (on)
		data[cap / 32].effective |= 1U << (cap % 32);
	else
		data[cap / 32].effective &= ~(1U << (cap % 32));
	if (syscall(SYS_capset, &hdr, data) < 0)
		return -errno;
	return 0;
}

/* The VmPin line of /proc/self/status, in kB; -1 if there is none. */
static long vmpin_kb(void)
{
	char line[128];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/*
 * One REGISTER of a pinned queue without CAP_IPC_LOCK, under an
 * RLIMIT_MEMLOCK soft limit of limit bytes: the kernel charges the pinned
 * pages to the user's locked memory (account_pinned_pages(), "if
 * (new_pages > page_limit) return -ENOMEM;"). Returns the command's
 * result; the capability and the limit are back as they were after it.
 */
static int register_without_ipc_lock(const char *name, struct conn *c,
				     const struct reg *r, rlim_t limit)
{
	struct rlimit old, rl;
	int res, err;

	if (getrlimit(RLIMIT_MEMLOCK, &old) < 0)
		return fail(name, "set-up: getrlimit: %s", strerror(errno)), NOT_SUBMITTED;
	rl = (struct rlimit){ .rlim_cur = limit, .rlim_max = old.rlim_max };
	if (setrlimit(RLIMIT_MEMLOCK, &rl) < 0)
		return fail(name, "set-up: setrlimit: %s", strerror(errno)), NOT_SUBMITTED;
	err = cap_effective(CAP_IPC_LOCK, false);
	if (err) {
		setrlimit(RLIMIT_MEMLOCK, &old);
		return fail(name, "set-up: drop CAP_IPC_LOCK: %s", strerror(-err)),
		       NOT_SUBMITTED;
	}
	res = do_register(c, r);
	cap_effective(CAP_IPC_LOCK, true);
	setrlimit(RLIMIT_MEMLOCK, &old);
	return res;
}

/* The pages a pinned queue of the well-formed layout pins, in bytes. */
static size_t pinned_bytes(const struct qmem *q)
{
	return page_round(q->iov[0].iov_len) + page_round(q->iov[1].iov_len);
}

/*
 * A pinned flag without FUSE_URING_BUFRING, on 7.2's per-entry layout:
 * there is no headers or payload region to pin. Kernel: init_flags_valid(),
 * "if ((init_flags & pinned) && !(init_flags & FUSE_URING_BUFRING)) return
 * false;" -> fuse_uring_register() returns -EINVAL.
 */
static void pinned_without_bufring(const char *name, uint64_t flag)
{
	struct qmem q;
	struct conn c;
	struct reg r;

	if (qmem_iovec(name, &q))
		return;
	r = reg_iovec(0, &q);
	r.flags = flag;
	if (conn_open(&c, name) == 0) {
		expect_res(name, -EINVAL, do_register(&c, &r));
		conn_close(&c);
	}
	qmem_free(&q);
}

static void case_pinned_headers_without_bufring(const char *name)
{
	pinned_without_bufring(name, FUSE_URING_PINNED_HEADERS);
}

static void case_pinned_buffers_without_bufring(const char *name)
{
	pinned_without_bufring(name, FUSE_URING_PINNED_BUFFERS);
}

/*
 * A pinned region one byte past a page boundary. Unpinned, the same
 * headers region is accepted (headers-misaligned-accepted-and-served);
 * pinned, the kernel maps whole pages and wants the region to start one.
 * Kernel: fuse_bufring_pin_mem(), "if (!PAGE_ALIGNED(addr)) return
 * -EINVAL;".
 */
static void bend_pinned_headers_misaligned(struct reg *r, struct qmem *q)
{
	r->flags |= FUSE_URING_PINNED_HEADERS;
	q->iov[0].iov_base = (char *)q->hmap + 1;	/* the spare byte */
}

static void case_pinned_headers_misaligned(const char *name)
{
	first_register(name, -EINVAL, bend_pinned_headers_misaligned);
}

static void bend_pinned_buffers_misaligned(struct reg *r, struct qmem *q)
{
	r->flags |= FUSE_URING_PINNED_BUFFERS;
	/* still a whole buffer: only the alignment is wrong */
	q->iov[1].iov_base = (char *)q->pmap + 1;
	q->iov[1].iov_len -= 1;
}

static void case_pinned_buffers_misaligned(const char *name)
{
	first_register(name, -EINVAL, bend_pinned_buffers_misaligned);
}

/*
 * Both regions pinned, RLIMIT_MEMLOCK exactly their pages, no
 * CAP_IPC_LOCK: accepted, and /proc/self/status shows the pages as VmPin.
 * The limit counts every process of the user: this passes only if nothing
 * else holds pinned pages (a leak from an earlier connection would fail
 * it), so it runs before the other pinned cases.
 */
static void case_pinned_memlock_exact(const char *name)
{
	struct qmem q;
	struct conn c;
	struct reg r;
	long before, after;
	int res;

	if (qmem_good(name, &q))
		return;
	q.flags |= PINNED;
	r = reg_bufring(0, 0, &q);
	if (conn_open(&c, name) == 0) {
		before = vmpin_kb();
		res = register_without_ipc_lock(name, &c, &r, pinned_bytes(&q));
		after = vmpin_kb();
		if (res == NOT_SUBMITTED)
			;	/* FAILed already */
		else if (res != ACCEPTED)
			expect_res(name, ACCEPTED, res);
		else if (after - before != (long)(pinned_bytes(&q) / 1024))
			fail(name, "VmPin grew by %ld kB, the regions have %zu kB",
			     after - before, pinned_bytes(&q) / 1024);
		else {
			printf("# %s: RLIMIT_MEMLOCK %zu B, VmPin %ld -> %ld kB\n",
			       name, pinned_bytes(&q), before, after);
			pass(name);
		}
		conn_close(&c);
	}
	qmem_free(&q);
}

/* One page less than the regions pin: -ENOMEM, whatever else is pinned. */
static void case_pinned_over_memlock(const char *name)
{
	struct qmem q;
	struct conn c;
	struct reg r;
	int res;

	if (qmem_good(name, &q))
		return;
	q.flags |= PINNED;
	r = reg_bufring(0, 0, &q);
	if (conn_open(&c, name) == 0) {
		res = register_without_ipc_lock(name, &c, &r,
						pinned_bytes(&q) - page_size);
		if (res != NOT_SUBMITTED)
			expect_res(name, -ENOMEM, res);
		conn_close(&c);
	}
	qmem_free(&q);
}

/*
 * Regions larger than the queue uses: a headers region of 16 pages for
 * DEPTH slots of 288 bytes, or a payload region with max_payload - 1 bytes
 * after its last whole buffer. RLIMIT_MEMLOCK is exactly what the queue
 * uses, no CAP_IPC_LOCK: accepted, and VmPin grows by exactly that. The
 * kernel pins, maps and charges the slots and the whole buffers only
 * (kernel patches 0005, 0006: fuse_uring_bufring_setup(), "queue_depth *
 * sizeof(struct fuse_uring_req_header)" and "(size_t)nr_bufs * buf_size");
 * it used to take each region's whole iov_len, and this REGISTER got
 * -ENOMEM.
 */
static void pinned_region_larger(const char *name, size_t headers_extra,
				 size_t payload_extra)
{
	size_t used, hlen, plen;
	struct qmem q;
	struct conn c;
	struct reg r;
	long before, after;
	int res;

	if (qmem_good(name, &q))
		return;
	used = page_round(q.iov[0].iov_len) + page_round(q.iov[1].iov_len);
	hlen = q.iov[0].iov_len + headers_extra;
	plen = q.iov[1].iov_len + payload_extra;
	munmap(q.hmap, q.hmap_len);
	munmap(q.pmap, q.pmap_len);
	q.hmap_len = page_round(hlen);
	q.pmap_len = page_round(plen);
	q.hmap = map_anon(q.hmap_len, PROT_READ | PROT_WRITE);
	q.pmap = map_anon(q.pmap_len, PROT_READ | PROT_WRITE);
	if (!q.hmap || !q.pmap) {
		fail(name, "set-up: mmap: %s", strerror(errno));
		goto out;
	}
	q.iov[0] = (struct iovec){ q.hmap, hlen };
	q.iov[1] = (struct iovec){ q.pmap, plen };
	q.flags |= PINNED;
	r = reg_bufring(0, 0, &q);
	if (conn_open(&c, name) == 0) {
		before = vmpin_kb();
		res = register_without_ipc_lock(name, &c, &r, used);
		after = vmpin_kb();
		if (res == NOT_SUBMITTED)
			;	/* FAILed already */
		else if (res != ACCEPTED)
			fail(name, "regions of %zu and %zu B, RLIMIT_MEMLOCK %zu B (what "
			     "the queue uses): expected accepted, got %d (%s)",
			     hlen, plen, used, res, strerror(res < 0 ? -res : 0));
		else if (after - before != (long)(used / 1024))
			fail(name, "VmPin grew by %ld kB, the queue uses %zu kB",
			     after - before, used / 1024);
		else {
			printf("# %s: regions %zu + %zu B, VmPin +%ld kB\n",
			       name, hlen, plen, after - before);
			pass(name);
		}
		conn_close(&c);
	}
out:
	qmem_free(&q);
}

static void case_pinned_headers_region_larger(const char *name)
{
	pinned_region_larger(name, 16 * page_size, 0);
}

static void case_pinned_buffers_region_larger(const char *name)
{
	pinned_region_larger(name, 0, max_payload - 1);
}

/* Resident pages of [p, p + len), by mincore(); -1 on error. */
static long resident_pages(void *p, size_t len)
{
	size_t n = len / page_size, i;
	unsigned char *vec = malloc(n);
	long count = 0;

	if (!vec)
		return -1;
	if (mincore(p, len, vec) < 0) {
		free(vec);
		return -1;
	}
	for (i = 0; i < n; i++)
		count += vec[i] & 1;
	free(vec);
	return count;
}

/*
 * A payload region of 32 MiB the server never touched, RLIMIT_MEMLOCK one
 * page, no CAP_IPC_LOCK: -ENOMEM, and not one page of the region was
 * faulted in. The kernel checks the limit before it pins (kernel patch
 * 0005: fuse_bufring_pin_mem() calls account_pinned_pages() first); it used
 * to pin first, and pinning for writing faults every page in: a server
 * without privileges made the kernel allocate, pin and map any amount of
 * memory for the length of each REGISTER.
 */
static void case_pinned_over_memlock_pins_nothing(const char *name)
{
	const size_t len = 32 << 20;
	struct qmem q;
	struct conn c;
	struct reg r;
	long resident;
	int res;

	if (qmem_good(name, &q))
		return;
	munmap(q.pmap, q.pmap_len);
	q.pmap_len = len;
	q.pmap = map_anon(len, PROT_READ | PROT_WRITE);
	if (!q.pmap) {
		fail(name, "set-up: mmap: %s", strerror(errno));
		goto out;
	}
	q.iov[1] = (struct iovec){ q.pmap, len };
	q.flags |= PINNED;
	r = reg_bufring(0, 0, &q);
	if (conn_open(&c, name) == 0) {
		res = register_without_ipc_lock(name, &c, &r, page_size);
		resident = resident_pages(q.pmap, len);
		if (res == NOT_SUBMITTED)
			;	/* FAILed already */
		else if (res != -ENOMEM)
			expect_res(name, -ENOMEM, res);
		else if (resident != 0)
			fail(name, "-ENOMEM, but %ld of the region's %zu pages were "
			     "faulted in: the kernel pinned before it checked the limit",
			     resident, len / page_size);
		else
			pass(name);
		conn_close(&c);
	}
out:
	qmem_free(&q);
}

/*
 * The positive control with both regions pinned: the kernel reads the
 * GETATTR's headers from, and writes its reply to, the pinned mappings.
 */
static int alloc_pinned(const char *name, struct qmem *q)
{
	if (qmem_good(name, q))
		return -1;
	q->flags |= PINNED;
	return 0;
}

static void case_control_pinned(const char *name)
{
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct served s;
	struct conn c;

	if (!qs || qs_alloc(name, qs, alloc_pinned) || conn_open(&c, name))
		goto out;
	if (round_trip(name, &c, qs, &s) == 0)
		pass(name);
	conn_close(&c);
out:
	if (qs)
		qs_free(qs);
}

/*
 * FUSE_URING_ZERO_COPY without all three of the flags it builds on.
 * Kernel: init_flags_valid(), "if ((init_flags & FUSE_URING_ZERO_COPY) &&
 * (init_flags & zero_copy) != zero_copy) return false;".
 */
static void bend_zero_copy_without_pinned(struct reg *r, struct qmem *q)
{
	(void)q;
	r->flags = FUSE_URING_BUFRING | FUSE_URING_ZERO_COPY;
}

static void case_zero_copy_without_pinned(const char *name)
{
	first_register(name, -EINVAL, bend_zero_copy_without_pinned);
}

static void bend_zero_copy_without_pinned_buffers(struct reg *r, struct qmem *q)
{
	(void)q;
	r->flags = FUSE_URING_BUFRING | FUSE_URING_PINNED_HEADERS |
		   FUSE_URING_ZERO_COPY;
}

static void case_zero_copy_without_pinned_buffers(const char *name)
{
	first_register(name, -EINVAL, bend_zero_copy_without_pinned_buffers);
}

/*
 * All four flags, but CAP_SYS_ADMIN off in the effective set (after the
 * mount, which needs it). Kernel: fuse_uring_register(), "if ((init_flags
 * & FUSE_URING_ZERO_COPY) && !capable(CAP_SYS_ADMIN)) return -EPERM;".
 */
static void case_zero_copy_without_cap_sys_admin(const char *name)
{
	struct qmem q;
	struct conn c;
	struct reg r;
	int err, res;

	if (qmem_good(name, &q))
		return;
	q.flags = ZERO_COPY_ALL;
	r = reg_bufring(0, 0, &q);
	if (conn_open(&c, name) == 0) {
		err = cap_effective(CAP_SYS_ADMIN, false);
		if (err) {
			fail(name, "set-up: drop CAP_SYS_ADMIN: %s", strerror(-err));
		} else {
			res = do_register(&c, &r);
			cap_effective(CAP_SYS_ADMIN, true);
			expect_res(name, -EPERM, res);
		}
		conn_close(&c);
	}
	qmem_free(&q);
}

/* ---- zero-copy with requests: a small file system of our own ------------- */

/*
 * The cases below serve real requests: a client thread makes system calls
 * on the mount, and serve_mini() answers them on the ring as a server
 * would. Its file system: the root (nodeid 1), "f" and "g" (nodeids 2, 3:
 * regular, FILE_SIZE bytes) and "x" (4: a script, mode 0755). OPEN replies
 * FOPEN_DIRECT_IO, so every read(2) and write(2) is one READ or WRITE, on
 * the caller's own pages.
 */
#define FILE_SIZE	8192
#define IO_SIZE		4096
#define SCRIPT		"#!/nonexistent-interpreter\n"
#define MINI_MS		10000	/* the whole client script */

enum rw_policy {
	RW_UNEXPECTED,	/* a READ or WRITE must not reach the server */
	RW_FIXED,	/* zero-copied: wrong direction first, then the right one */
	RW_COPY,	/* not zero-copied: data in the payload buffer */
	RW_RACE,	/* zero-copied READs only: READ_FIXED, which may fail */
};

struct mini {
	const char *name;
	struct conn *c;
	struct qmem *qs;
	enum rw_policy rw;
	int memfd;		/* the data of "f", for the fixed operations */
	bool async_commit;	/* COMMIT_AND_FETCH with IOSQE_ASYNC: from io-wq */
	int fixed_errs;		/* RW_RACE: READ_FIXEDs that failed */
	/* what happened */
	int zc_reads, zc_writes, copy_reads, copy_writes, unexpected;
	int wrong_dir_read, wrong_dir_write;	/* res of the wrong direction */
	int empty_slot;		/* res of READ_FIXED at an empty slot */
	char failure[200];	/* the first protocol failure, if any */
	/* CQEs that arrived while we waited for a fixed operation's */
	struct { uint64_t ud; int res; } stash[16];
	unsigned int nstash;
};

__attribute__((format(printf, 2, 3)))
static void mini_fail(struct mini *m, const char *fmt, ...)
{
	va_list ap;

	if (m->failure[0])
		return;
	va_start(ap, fmt);
	vsnprintf(m->failure, sizeof(m->failure), fmt, ap);
	va_end(ap);
}

static int mini_next_cqe(struct mini *m, int ms, uint64_t *ud, int *res)
{
	if (m->nstash) {
		*ud = m->stash[0].ud;
		*res = m->stash[0].res;
		memmove(m->stash, m->stash + 1, --m->nstash * sizeof(m->stash[0]));
		return 0;
	}
	return wait_cqe_ms(m->c, ms, ud, res);
}

/*
 * One READ_FIXED or WRITE_FIXED at buffer index idx, offset 0 in it, on
 * fd at file offset off; waits for its CQE and returns its res.
 */
static int mini_fixed(struct mini *m, uint8_t opcode, uint16_t idx, int fd,
		      unsigned int len, uint64_t off)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&m->c->ring);
	uint64_t ud, want = UD(UD_FIXED, 0, idx);
	int ret, res;

	if (!sqe)
		return -EBUSY;
	if (opcode == IORING_OP_READ_FIXED)
		io_uring_prep_read_fixed(sqe, fd, NULL, len, off, idx);
	else
		io_uring_prep_write_fixed(sqe, fd, NULL, len, off, idx);
	sqe->user_data = want;
	if (io_uring_submit(&m->c->ring) != 1)
		return -EIO;
	for (;;) {
		ret = wait_cqe_ms(m->c, REQUEST_MS, &ud, &res);
		if (ret)
			return ret;
		if (ud == want)
			return res;
		if (m->nstash < sizeof(m->stash) / sizeof(m->stash[0])) {
			m->stash[m->nstash].ud = ud;
			m->stash[m->nstash++].res = res;
		}
	}
}

static void fill_attr(struct fuse_attr *a, uint64_t nodeid)
{
	memset(a, 0, sizeof(*a));
	a->ino = nodeid;
	a->nlink = 1;
	a->blksize = 4096;
	if (nodeid == FUSE_ROOT_ID) {
		a->mode = S_IFDIR | 0755;
		a->nlink = 2;
	} else if (nodeid == 4) {
		a->mode = S_IFREG | 0755;
		a->size = strlen(SCRIPT);
	} else {
		a->mode = S_IFREG | 0644;
		a->size = FILE_SIZE;
	}
}

/*
 * A zero-copied READ or WRITE: first the operation in the wrong direction
 * (a read's buffer is IO_IMU_DEST, only written to; a write's
 * IO_IMU_SOURCE, only read from), which must fail with -EFAULT, then a
 * READ_FIXED at an index that holds no request (-EFAULT), then the right
 * one, on "f"'s memfd. Returns the reply's payload size or -errno.
 */
static int mini_zero_copy(struct mini *m, uint16_t ent, uint32_t opcode,
			  const void *op_in, void *buf)
{
	const struct fuse_read_in *ri = op_in;
	const struct fuse_write_in *wi = op_in;
	struct fuse_write_out wo = { 0 };
	int res;

	/* the other entry of this case holds no request: its slot is empty */
	m->empty_slot = mini_fixed(m, IORING_OP_READ_FIXED, ent ^ 1, m->memfd,
				   IO_SIZE, 0);
	if (opcode == FUSE_READ) {
		m->wrong_dir_read = mini_fixed(m, IORING_OP_WRITE_FIXED, ent,
					       m->memfd, ri->size, ri->offset);
		return mini_fixed(m, IORING_OP_READ_FIXED, ent, m->memfd,
				  ri->size, ri->offset);
	}
	m->wrong_dir_write = mini_fixed(m, IORING_OP_READ_FIXED, ent, m->memfd,
					wi->size, wi->offset);
	res = mini_fixed(m, IORING_OP_WRITE_FIXED, ent, m->memfd, wi->size,
			 wi->offset);
	if (res < 0)
		return res;
	if (!buf) {
		mini_fail(m, "a zero-copied WRITE came without a buffer for its reply");
		return -EIO;
	}
	wo.size = (uint32_t)res;
	memcpy(buf, &wo, sizeof(wo));
	return sizeof(wo);
}

/*
 * One request in entry ent of queue qid: answer it and commit. The commit
 * is submitted without waiting: its CQE is the entry's next request (or an
 * error), and comes back through serve_mini().
 */
static void mini_serve_one(struct mini *m, uint16_t qid, uint16_t ent)
{
	struct qmem *q = &m->qs[qid];
	char *hdr = slot(q, ent);
	struct fuse_uring_ent_in_out eio;
	struct fuse_in_header ih;
	struct fuse_out_header oh;
	char op_in[FUSE_URING_OP_IN_OUT_SZ];
	char *buf = NULL;
	const char *name;
	bool zc, has_buf;
	int len = 0;

	memcpy(&ih, hdr + offsetof(struct fuse_uring_req_header, in_out), sizeof(ih));
	memcpy(op_in, hdr + offsetof(struct fuse_uring_req_header, op_in),
	       sizeof(op_in));
	memcpy(&eio, hdr + offsetof(struct fuse_uring_req_header, ring_ent_in_out),
	       sizeof(eio));
	zc = eio.flags & FUSE_URING_ENT_ZERO_COPY;
	/*
	 * Whether the kernel lent a payload buffer, as the reference server's
	 * bufring_req_has_buf() decides, for the opcodes this file system
	 * answers: all but FLUSH and RELEASE reply with data; zero-copied,
	 * only a WRITE has a buffer (for its fuse_write_out).
	 */
	if (zc)
		has_buf = ih.opcode == FUSE_WRITE;
	else
		has_buf = eio.payload_sz > 0 ||
			  (ih.opcode != FUSE_FLUSH && ih.opcode != FUSE_RELEASE);
	if (has_buf)
		buf = (char *)q->iov[1].iov_base + (size_t)eio.buf_id * q->buf_size;

	switch (ih.opcode) {
	case FUSE_LOOKUP: {
		struct fuse_entry_out e = { 0 };

		name = buf;
		if (!strcmp(name, "f") || !strcmp(name, "g") || !strcmp(name, "x"))
			e.nodeid = name[0] == 'f' ? 2 : name[0] == 'g' ? 3 : 4;
		if (!e.nodeid) {
			len = -ENOENT;
			break;
		}
		e.entry_valid = e.attr_valid = 60;
		fill_attr(&e.attr, e.nodeid);
		memcpy(buf, &e, sizeof(e));
		len = sizeof(e);
		break;
	}
	case FUSE_GETATTR: {
		struct fuse_attr_out ao = { .attr_valid = 60 };

		fill_attr(&ao.attr, ih.nodeid);
		memcpy(buf, &ao, sizeof(ao));
		len = sizeof(ao);
		break;
	}
	case FUSE_OPEN: {
		struct fuse_open_out oo = { .fh = 7, .open_flags = FOPEN_DIRECT_IO };

		memcpy(buf, &oo, sizeof(oo));
		len = sizeof(oo);
		break;
	}
	case FUSE_FLUSH:
	case FUSE_RELEASE:
		break;
	case FUSE_READ:
	case FUSE_WRITE:
		if (zc)
			ih.opcode == FUSE_READ ? m->zc_reads++ : m->zc_writes++;
		else
			ih.opcode == FUSE_READ ? m->copy_reads++ : m->copy_writes++;
		if (m->rw == RW_UNEXPECTED) {
			m->unexpected++;
			len = -EIO;
		} else if (m->rw == RW_FIXED && zc) {
			len = mini_zero_copy(m, ent, ih.opcode, op_in, buf);
		} else if (m->rw == RW_RACE && zc && ih.opcode == FUSE_READ) {
			const struct fuse_read_in *ri = (const void *)op_in;

			/* -EFAULT once the table lost the buffer: the READ fails */
			len = mini_fixed(m, IORING_OP_READ_FIXED, ent, m->memfd,
					 ri->size, ri->offset);
			if (len < 0) {
				m->fixed_errs++;
				len = -EIO;
			}
		} else if (m->rw == RW_COPY && !zc && ih.opcode == FUSE_READ) {
			const struct fuse_read_in *ri = (const void *)op_in;
			size_t n = strlen(SCRIPT);

			n = ri->offset >= n ? 0 : n - ri->offset;
			if (n > ri->size)
				n = ri->size;
			memcpy(buf, SCRIPT + ri->offset, n);
			len = (int)n;
		} else {
			mini_fail(m, "%s %s zero-copied, not expected here",
				  ih.opcode == FUSE_READ ? "a READ" : "a WRITE",
				  zc ? "was" : "was not");
			len = -EIO;
		}
		break;
	default:
		len = -ENOSYS;
	}

	oh = (struct fuse_out_header){
		.len = (uint32_t)(sizeof(oh) + (len > 0 ? len : 0)),
		.error = len < 0 ? len : 0, .unique = ih.unique,
	};
	memcpy(hdr + offsetof(struct fuse_uring_req_header, in_out), &oh, sizeof(oh));
	eio.payload_sz = len > 0 ? (uint32_t)len : 0;
	memcpy(hdr + offsetof(struct fuse_uring_req_header, ring_ent_in_out),
	       &eio, sizeof(eio));
	{
		struct fuse_uring_cmd_req req = { .commit_id = ih.unique, .qid = qid };
		struct io_uring_sqe *sqe;

		sqe = fuse_cmd_sqe(m->c, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, &req,
				   UD(UD_COMMIT, qid, ent));
		if (sqe && m->async_commit)
			sqe->flags |= IOSQE_ASYNC;
		if (!sqe || io_uring_submit(&m->c->ring) != 1)
			mini_fail(m, "cannot submit the COMMIT_AND_FETCH");
	}
}

/* The client: system calls on the mount, in a thread of their own. */
struct client {
	pthread_t th;
	void (*fn)(struct client *);
	volatile int done;	/* set by the thread when fn returned */
	/* results, errno or 0, per step */
	int open_err, read_err, write_err[3], stat_err, close_err, exec_err;
	ssize_t read_n;
	/* page-aligned, as direct I/O buffers usually are */
	char rdata[IO_SIZE] __attribute__((aligned(4096)));
	char data[IO_SIZE] __attribute__((aligned(4096)));
};

static void *client_thread(void *arg)
{
	struct client *cl = arg;

	cl->fn(cl);
	__atomic_store_n(&cl->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void mnt_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", mnt, name);
}

/*
 * Answer requests until the client is done (and give up after MINI_MS).
 * 0, or -1 after FAILing the case.
 */
static int serve_mini_ms(struct mini *m, struct client *cl, int limit_ms)
{
	struct timespec t0, t;
	uint64_t ud;
	int ret, res;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (pthread_create(&cl->th, NULL, client_thread, cl))
		return fail(m->name, "set-up: pthread_create");
	while (!__atomic_load_n(&cl->done, __ATOMIC_ACQUIRE)) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 > limit_ms) {
			/* closing the connection releases the client */
			fail(m->name, "the client is still blocked after %d ms",
			     limit_ms);
			conn_close(m->c);
			pthread_join(cl->th, NULL);
			return -1;
		}
		ret = mini_next_cqe(m, 50, &ud, &res);
		if (ret == -ETIME)
			continue;
		if (ret < 0) {
			mini_fail(m, "waiting for a CQE: %s", strerror(-ret));
			break;
		}
		if (res < 0 || UD_QID(ud) >= nr_queues) {
			mini_fail(m, "command kind %u q=%u ent=%u ended with %d",
				  UD_KIND(ud), UD_QID(ud), UD_ENT(ud), res);
			continue;
		}
		mini_serve_one(m, UD_QID(ud), UD_ENT(ud));
	}
	pthread_join(cl->th, NULL);
	if (m->failure[0])
		return fail(m->name, "%s", m->failure);
	return 0;
}

static int serve_mini(struct mini *m, struct client *cl)
{
	return serve_mini_ms(m, cl, MINI_MS);
}

/*
 * A zero-copy connection: all four flags on every queue, a sparse
 * fixed-buffer table of table_slots on the (one) ring, and on each queue
 * only the entry ids in ents[qid] (a queue may have fewer entries than its
 * queue_depth). The queues share this ring, so their entries get ids of
 * their own, as the kernel's slot is the entry id.
 */
static int zero_copy_setup(const char *name, struct conn *c, struct qmem *qs,
			   unsigned int table_slots, const uint16_t *ents)
{
	unsigned int q;
	int err;

	for (q = 0; q < nr_queues; q++)
		if (qmem_good(name, &qs[q]))
			return -1;
	for (q = 0; q < nr_queues; q++)
		qs[q].flags = ZERO_COPY_ALL;
	if (conn_open(c, name))
		return -1;
	err = io_uring_register_buffers_sparse(&c->ring, table_slots);
	if (err)
		return fail(name, "set-up: io_uring_register_buffers_sparse(%u): %s",
			    table_slots, strerror(-err));
	for (q = 0; q < nr_queues; q++) {
		struct reg r = reg_bufring((uint16_t)q, ents[q], &qs[q]);

		if (setup_register(name, c, &r))
			return -1;
	}
	return 0;
}

/* The table-too-small client: read, three writes, a LOOKUP, close. */
static void client_table_too_small(struct client *cl)
{
	char path[256];
	struct stat st;
	int fd, i;

	mnt_path(path, sizeof(path), "f");
	fd = open(path, O_RDWR);
	cl->open_err = fd < 0 ? errno : 0;
	if (fd < 0)
		return;
	cl->read_n = read(fd, cl->data, IO_SIZE);
	cl->read_err = cl->read_n < 0 ? errno : 0;
	memset(cl->data, 'w', IO_SIZE);
	for (i = 0; i < 3; i++)
		cl->write_err[i] = pwrite(fd, cl->data, IO_SIZE, 0) < 0 ? errno : 0;
	mnt_path(path, sizeof(path), "g");
	cl->stat_err = stat(path, &st) < 0 ? errno : 0;
	cl->close_err = close(fd) < 0 ? errno : 0;
}

/*
 * The fixed-buffer table has one slot, 0, and every queue's one entry has
 * id 1: the kernel cannot register a READ's or WRITE's folios at index 1
 * (io_buffer_register_bvec(): "if (index >= data->nr) return -EINVAL"),
 * so each such request fails with -EINVAL before the server sees it, and
 * the entry goes on with the next request. Asserted: read(2) and three
 * write(2)s fail with EINVAL, no READ or WRITE reaches the server, and a
 * LOOKUP afterwards is served, with one of the payload buffers the failed
 * WRITEs had (so none was lost). The kernel must log no warning (the guest
 * script checks).
 */
static void case_zero_copy_table_too_small(const char *name)
{
	static const uint16_t ents[] = { 1, 1, 1, 1, 1, 1, 1, 1 };
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct client *cl = aligned_alloc(4096, sizeof(*cl));
	struct mini m = { .name = name, .rw = RW_UNEXPECTED, .memfd = -1 };
	struct conn c = { .fd = -1 };

	if (!qs || !cl || nr_queues > sizeof(ents) / sizeof(ents[0])) {
		fail(name, "set-up: out of memory or too many queues");
		goto out;
	}
	memset(cl, 0, sizeof(*cl));
	cl->fn = client_table_too_small;
	m.c = &c;
	m.qs = qs;
	if (zero_copy_setup(name, &c, qs, 1, ents) == 0 &&
	    serve_mini(&m, cl) == 0) {
		if (cl->open_err)
			fail(name, "open: %s", strerror(cl->open_err));
		else if (cl->read_err != EINVAL)
			fail(name, "read(2): expected EINVAL, got %s",
			     cl->read_err ? strerror(cl->read_err) : "success");
		else if (cl->write_err[0] != EINVAL || cl->write_err[1] != EINVAL ||
			 cl->write_err[2] != EINVAL)
			fail(name, "write(2) x3: expected EINVAL each, got %d %d %d",
			     cl->write_err[0], cl->write_err[1], cl->write_err[2]);
		else if (m.unexpected)
			fail(name, "%d READ/WRITE reached the server", m.unexpected);
		else if (cl->stat_err)
			fail(name, "stat(2) of g after the failed WRITEs: %s",
			     strerror(cl->stat_err));
		else
			pass(name);
	}
out:
	conn_close(&c);
	free(cl);
	if (qs)
		qs_free(qs);
}

/* The directions client: read 4 KiB of "f", then write 4 KiB at 4096. */
static void client_read_write(struct client *cl)
{
	char path[256];
	int fd;

	mnt_path(path, sizeof(path), "f");
	fd = open(path, O_RDWR);
	cl->open_err = fd < 0 ? errno : 0;
	if (fd < 0)
		return;
	cl->read_n = pread(fd, cl->rdata, IO_SIZE, 0);
	cl->read_err = cl->read_n < 0 ? errno : 0;
	memset(cl->data, 'w', IO_SIZE);
	cl->write_err[0] = pwrite(fd, cl->data, IO_SIZE, IO_SIZE) != IO_SIZE ?
			   (errno ? errno : EIO) : 0;
	cl->close_err = close(fd) < 0 ? errno : 0;
}

/*
 * A zero-copied READ and WRITE, served at the lowest level: the READ's
 * folios are the fixed buffer at its entry id, IO_IMU_DEST, so WRITE_FIXED
 * on them (which would read them) fails with -EFAULT and READ_FIXED from
 * "f"'s memfd fills them: read(2) returns the memfd's bytes. The WRITE's
 * are IO_IMU_SOURCE: READ_FIXED (which would write into the caller's
 * memory) fails with -EFAULT, WRITE_FIXED stores them in the memfd. And
 * READ_FIXED at an index that holds no request fails with -EFAULT (kernel:
 * io_import_reg_buf(), "node = io_find_buf_node(...); if (!node) return
 * -EFAULT;" and io_import_fixed(), "if (!(imu->dir & (1 << ddir))) return
 * -EFAULT;").
 */
static void case_zero_copy_fixed_directions(const char *name)
{
	static const uint16_t ents[] = { 0, 1, 0, 1, 0, 1, 0, 1 };
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct client *cl = aligned_alloc(4096, sizeof(*cl));
	struct mini m = { .name = name, .rw = RW_FIXED, .memfd = -1 };
	struct conn c = { .fd = -1 };
	char pattern[FILE_SIZE], back[IO_SIZE], want[IO_SIZE];
	int i;

	if (!qs || !cl || nr_queues > sizeof(ents) / sizeof(ents[0])) {
		fail(name, "set-up: out of memory or too many queues");
		goto out;
	}
	for (i = 0; i < FILE_SIZE; i++)
		pattern[i] = (char)('a' + i % 26);
	m.memfd = memfd_create("f", MFD_CLOEXEC);
	if (m.memfd < 0 || pwrite(m.memfd, pattern, FILE_SIZE, 0) != FILE_SIZE) {
		fail(name, "set-up: memfd: %s", strerror(errno));
		goto out;
	}
	memset(cl, 0, sizeof(*cl));
	cl->fn = client_read_write;
	m.c = &c;
	m.qs = qs;
	m.wrong_dir_read = m.wrong_dir_write = m.empty_slot = 1;
	if (zero_copy_setup(name, &c, qs, DEPTH, ents) == 0 &&
	    serve_mini(&m, cl) == 0) {
		memset(want, 'w', IO_SIZE);
		if (pread(m.memfd, back, IO_SIZE, IO_SIZE) != IO_SIZE)
			memset(back, 0, IO_SIZE);
		if (cl->open_err)
			fail(name, "open: %s", strerror(cl->open_err));
		else if (m.zc_reads != 1 || m.zc_writes != 1 || m.copy_reads ||
			 m.copy_writes)
			fail(name, "expected one zero-copied READ and WRITE, got "
			     "%d and %d (and %d, %d copied)", m.zc_reads,
			     m.zc_writes, m.copy_reads, m.copy_writes);
		else if (m.wrong_dir_read != -EFAULT || m.wrong_dir_write != -EFAULT)
			fail(name, "WRITE_FIXED on a READ's folios gave %d, READ_FIXED "
			     "on a WRITE's %d, expected -EFAULT (%d) each",
			     m.wrong_dir_read, m.wrong_dir_write, -EFAULT);
		else if (m.empty_slot != -EFAULT)
			fail(name, "READ_FIXED at an empty slot gave %d, expected "
			     "-EFAULT", m.empty_slot);
		else if (cl->read_err || cl->read_n != IO_SIZE)
			fail(name, "read(2): %zd, %s", cl->read_n,
			     cl->read_err ? strerror(cl->read_err) : "short");
		else if (memcmp(cl->rdata, pattern, IO_SIZE))
			fail(name, "read(2) did not return the memfd's bytes");
		else if (cl->write_err[0])
			fail(name, "write(2): %s", strerror(cl->write_err[0]));
		else if (memcmp(back, want, IO_SIZE))
			fail(name, "the WRITE's data did not reach the memfd");
		else
			pass(name);
	}
out:
	conn_close(&c);
	if (m.memfd >= 0)
		close(m.memfd);
	free(cl);
	if (qs)
		qs_free(qs);
}

/* ---- zero-copy: the fixed-buffer table changed under a commit in io-wq --- */

#define RACE_MS		15000	/* how long the readers read */
#define RACE_READERS	4

static char race_pattern[FILE_SIZE];

/* The race's client: readers and a table updater, run by client_race(). */
struct race {
	struct conn *c;
	volatile int stop;
	uint16_t slot;		/* queue 1's entry id: its fixed-buffer slot */
	long updates, update_errs;
	long reads_ok, reads_err, reads_wrong;
	int setup_err;		/* errno of a failed pin or priority, or 0 */
	const char *setup_what;
};

static int pin_to_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/*
 * On CPU 0 with the io-wq worker, at a real-time priority: it wakes up
 * every 20-120 us and empties the slot (IORING_REGISTER_BUFFERS_UPDATE with
 * an empty iovec), which releases a buffer the kernel registered there.
 * When it wakes while the worker holds the ring's lock, it waits for the
 * lock, and the worker's unlock hands the CPU straight to it: its update
 * runs in the window between io_buffer_register_bvec() dropping the lock
 * and fuse storing what that returned.
 */
static void *race_updater(void *arg)
{
	struct race *r = arg;
	struct sched_param sp = { .sched_priority = 1 };
	struct iovec empty = { NULL, 0 };
	unsigned int seed = 1;
	int err;

	err = pin_to_cpu(0);
	if (!err)
		err = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	if (err) {
		r->setup_err = err;
		r->setup_what = "the updater's CPU or SCHED_FIFO priority";
		return NULL;
	}
	while (!r->stop) {
		struct timespec ts = { 0, 20000 + (long)(rand_r(&seed) % 100000) };

		if (io_uring_register_buffers_update_tag(&r->c->ring, r->slot,
							 &empty, NULL, 1) == 1)
			r->updates++;
		else
			r->update_errs++;
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* On CPU 1, so that its READs go to queue 1; checks every byte it gets. */
static void *race_reader(void *arg)
{
	struct race *r = arg;
	char path[256];
	char *buf = aligned_alloc(4096, IO_SIZE);
	long ok = 0, err = 0, wrong = 0;
	uint64_t off = 0;
	int fd;

	if (!buf || pin_to_cpu(1)) {
		r->setup_err = ENOMEM;
		r->setup_what = "a reader's buffer or CPU";
		free(buf);
		return NULL;
	}
	mnt_path(path, sizeof(path), "f");
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		r->setup_err = errno;
		r->setup_what = "open(2) of f";
		free(buf);
		return NULL;
	}
	while (!r->stop) {
		ssize_t n = pread(fd, buf, IO_SIZE, (off_t)off);

		if (n < 0)
			err++;
		else if (n != IO_SIZE || memcmp(buf, race_pattern + off, IO_SIZE))
			wrong++;
		else
			ok++;
		off = (off + IO_SIZE) % FILE_SIZE;
	}
	close(fd);
	free(buf);
	__atomic_add_fetch(&r->reads_ok, ok, __ATOMIC_RELAXED);
	__atomic_add_fetch(&r->reads_err, err, __ATOMIC_RELAXED);
	__atomic_add_fetch(&r->reads_wrong, wrong, __ATOMIC_RELAXED);
	return NULL;
}

static struct race *race_of_client;

static void client_race(struct client *cl)
{
	struct race *r = race_of_client;
	pthread_t readers[RACE_READERS], updater;
	unsigned int i, started = 0;
	bool updating;

	(void)cl;
	updating = pthread_create(&updater, NULL, race_updater, r) == 0;
	for (i = 0; i < RACE_READERS; i++)
		if (pthread_create(&readers[i], NULL, race_reader, r) == 0)
			started++;
	if (!updating || started < RACE_READERS) {
		r->setup_err = EAGAIN;
		r->setup_what = "pthread_create";
	}
	usleep(RACE_MS * 1000);
	r->stop = 1;
	for (i = 0; i < started; i++)
		pthread_join(readers[i], NULL);
	if (updating)
		pthread_join(updater, NULL);
}

/*
 * The race of kernel patch 0008 a review found: a zero-copied READ is
 * fetched by a COMMIT_AND_FETCH that io-wq issues (IOSQE_ASYNC, so
 * IO_URING_F_UNLOCKED), while another thread of the server changes the
 * fixed-buffer table. io_buffer_register_bvec() takes and drops the ring's
 * lock itself; if the other thread's update empties the slot before fuse
 * has stored the buffer it got back, fuse_zero_copy_release() has already
 * run and the buffer is freed, and fuse_uring_set_up_zero_copy() used to
 * store it anyway: fuse_zero_copy_end() then revoked freed memory
 * (KASAN: slab-use-after-free in io_buffer_revoke_bvec on the debug
 * kernel). Fixed: fuse keeps the buffer only if it was not released.
 *
 * The set-up makes the window reachable: io-wq is pinned to CPU 0
 * (IORING_REGISTER_IOWQ_AFF), with race_updater() at a real-time priority;
 * four readers on CPU 1 keep queue 1's one entry busy, so each commit
 * fetches the next READ. Asserted: every read(2) that succeeded returned
 * the file's bytes (one that failed got EIO, from a READ_FIXED the table
 * update made fail), at least RACE_READERS zero-copied READs and 100
 * updates happened, and the kernel log is clean (the per-case check:
 * KASAN, WARNING, ...). A clean run is not proof: the window is a few
 * instructions wide, and the case counts how often it was tried.
 */
static void case_zero_copy_async_commit_vs_table_update(const char *name)
{
	static const uint16_t ents[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct client *cl = aligned_alloc(4096, sizeof(*cl));
	struct mini m = { .name = name, .rw = RW_RACE, .memfd = -1,
			  .async_commit = true };
	struct conn c = { .fd = -1 };
	struct race r = { .c = &c, .slot = 1 };
	cpu_set_t cpu0;
	int i, err;

	if (!qs || !cl || nr_queues > sizeof(ents) / sizeof(ents[0])) {
		fail(name, "set-up: out of memory or too many queues");
		goto out;
	}
	if (need_two_queues(name))
		goto out;
	for (i = 0; i < FILE_SIZE; i++)
		race_pattern[i] = (char)('A' + (i * 7 + i / 4096) % 26);
	m.memfd = memfd_create("f", MFD_CLOEXEC);
	if (m.memfd < 0 ||
	    pwrite(m.memfd, race_pattern, FILE_SIZE, 0) != FILE_SIZE) {
		fail(name, "set-up: memfd: %s", strerror(errno));
		goto out;
	}
	memset(cl, 0, sizeof(*cl));
	cl->fn = client_race;
	race_of_client = &r;
	m.c = &c;
	m.qs = qs;
	if (zero_copy_setup(name, &c, qs, nr_queues, ents))
		goto out;
	CPU_ZERO(&cpu0);
	CPU_SET(0, &cpu0);
	err = io_uring_register_iowq_aff(&c.ring, sizeof(cpu0), &cpu0);
	if (err) {
		fail(name, "set-up: io_uring_register_iowq_aff(CPU 0): %s",
		     strerror(-err));
		goto out;
	}
	if (serve_mini_ms(&m, cl, RACE_MS + MINI_MS) != 0)
		goto out;
	printf("# %s: %d zero-copied READs committed from io-wq, %ld table "
	       "updates; read(2): %ld ok, %ld EIO (%d READ_FIXED failed), "
	       "%ld wrong\n", name, m.zc_reads, r.updates, r.reads_ok,
	       r.reads_err, m.fixed_errs, r.reads_wrong);
	if (r.setup_err)
		fail(name, "set-up: %s: %s", r.setup_what, strerror(r.setup_err));
	else if (r.reads_wrong)
		fail(name, "%ld read(2)s returned other bytes than the file's",
		     r.reads_wrong);
	else if (m.zc_reads < RACE_READERS || r.updates < 100)
		fail(name, "too little happened to call it a race: %d READs, "
		     "%ld updates", m.zc_reads, r.updates);
	else if (m.copy_reads || m.copy_writes || m.zc_writes)
		fail(name, "only zero-copied READs expected, got %d copied READs, "
		     "%d WRITEs", m.copy_reads, m.copy_writes + m.zc_writes);
	else
		pass(name);
out:
	conn_close(&c);
	if (m.memfd >= 0)
		close(m.memfd);
	free(cl);
	if (qs)
		qs_free(qs);
}

/* The exec client: execve() of "x" in a child; its exit status is errno. */
static void client_exec(struct client *cl)
{
	char path[256];
	int status;
	pid_t pid;

	mnt_path(path, sizeof(path), "x");
	pid = fork();
	if (pid == 0) {
		char *argv[] = { path, NULL };

		execv(path, argv);
		_exit(errno & 0xff);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0) {
		cl->exec_err = -1;
		return;
	}
	cl->exec_err = WIFEXITED(status) ? WEXITSTATUS(status) : 255;
}

/*
 * A READ whose data is not in folios is not zero-copied, even on a
 * zero-copy queue: execve() reads a file's first bytes with kernel_read(),
 * an ITER_KVEC iterator, and with FOPEN_DIRECT_IO that becomes a READ
 * straight into the kernel's buffer (fuse_get_user_pages(): "if
 * (iov_iter_is_kvec(ii))", args->out_pages stays false, so
 * can_zero_copy_req() says no). Asserted: the READ arrives without
 * FUSE_URING_ENT_ZERO_COPY, with a payload buffer, and the script line we
 * put there reaches exec: execve() fails with ENOENT, for the interpreter
 * "#!/nonexistent-interpreter" names (ENOEXEC would mean it read nothing).
 */
static void case_zero_copy_kvec_read_copied(const char *name)
{
	static const uint16_t ents[] = { 0, 1, 0, 1, 0, 1, 0, 1 };
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct client *cl = aligned_alloc(4096, sizeof(*cl));
	struct mini m = { .name = name, .rw = RW_COPY, .memfd = -1 };
	struct conn c = { .fd = -1 };

	if (!qs || !cl || nr_queues > sizeof(ents) / sizeof(ents[0])) {
		fail(name, "set-up: out of memory or too many queues");
		goto out;
	}
	memset(cl, 0, sizeof(*cl));
	cl->fn = client_exec;
	m.c = &c;
	m.qs = qs;
	if (zero_copy_setup(name, &c, qs, DEPTH, ents) == 0 &&
	    serve_mini(&m, cl) == 0) {
		if (m.zc_reads || m.copy_reads < 1)
			fail(name, "expected copied READs only, got %d copied, %d "
			     "zero-copied", m.copy_reads, m.zc_reads);
		else if (cl->exec_err != ENOENT)
			fail(name, "execve: expected ENOENT (no interpreter), got %s",
			     cl->exec_err < 0 ? "no child" : strerror(cl->exec_err));
		else
			pass(name);
	}
out:
	conn_close(&c);
	free(cl);
	if (qs)
		qs_free(qs);
}


/*
 * The client of zero-copy-abort-revokes-folios: a direct read of "f" into
 * rdata, which fails when the connection is aborted under it; then, like
 * any caller, it reuses the buffer (fills it with 'c'), and after the
 * server had its chance to write into it (ab_stage 3) counts the bytes
 * that are no longer 'c'.
 */
static volatile int ab_stage;	/* 1 read returned, 2 buffer reused, 3 server done */
static int ab_changed;

static void client_abort(struct client *cl)
{
	char path[256];
	int fd, i;

	mnt_path(path, sizeof(path), "f");
	fd = open(path, O_RDWR);
	cl->open_err = fd < 0 ? errno : 0;
	if (fd >= 0) {
		cl->read_n = pread(fd, cl->rdata, IO_SIZE, 0);
		cl->read_err = cl->read_n < 0 ? errno : 0;
	}
	memset(cl->rdata, 'c', IO_SIZE);
	__atomic_store_n(&ab_stage, 2, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&ab_stage, __ATOMIC_SEQ_CST) < 3)
		usleep(1000);
	for (i = 0; i < IO_SIZE; i++)
		ab_changed += cl->rdata[i] != 'c';
	if (fd >= 0)
		close(fd);
}

/*
 * A connection aborted while the server holds a zero-copied READ: the
 * teardown ends the request (the caller's read(2) fails with ECONNABORTED)
 * without a command of the server's ring to unregister the folios with, so
 * it revokes the buffer (fuse_zero_copy_end(), io_buffer_revoke_bvec()):
 * a READ_FIXED the server issues after that fails with -EFAULT, and the
 * caller's buffer, which it may reuse at once, stays as it left it.
 * (Before the fix, and on 7.3, the READ_FIXED wrote into it.)
 *
 * Steps: a zero-copy connection, the client reads "f" (FOPEN_DIRECT_IO);
 * the server holds the READ; umount2(MNT_FORCE) aborts the connection
 * (fuse_umount_begin(); the umount itself fails with EBUSY, the file is
 * open); the client's read returns and it fills its buffer with 'c'; the
 * server submits READ_FIXED at the entry id from a memfd; the client
 * counts the bytes that changed.
 */
static void case_zero_copy_abort_revokes_folios(const char *name)
{
	static const uint16_t ents[] = { 0, 1, 0, 1, 0, 1, 0, 1 };
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct client *cl = aligned_alloc(4096, sizeof(*cl));
	struct mini m = { .name = name, .rw = RW_UNEXPECTED, .memfd = -1 };
	struct conn c = { .fd = -1 };
	char pattern[FILE_SIZE], *hdr;
	struct fuse_in_header ih;
	int held = -1, late = 0, i, res;
	uint64_t ud;

	if (!qs || !cl || nr_queues > sizeof(ents) / sizeof(ents[0])) {
		fail(name, "set-up: out of memory or too many queues");
		goto out;
	}
	for (i = 0; i < FILE_SIZE; i++)
		pattern[i] = (char)('a' + i % 26);
	m.memfd = memfd_create("f", MFD_CLOEXEC);
	if (m.memfd < 0 || pwrite(m.memfd, pattern, FILE_SIZE, 0) != FILE_SIZE) {
		fail(name, "set-up: memfd: %s", strerror(errno));
		goto out;
	}
	memset(cl, 0, sizeof(*cl));
	cl->fn = client_abort;
	m.c = &c;
	m.qs = qs;
	ab_stage = 0;
	ab_changed = 0;
	if (zero_copy_setup(name, &c, qs, DEPTH, ents))
		goto out;
	if (pthread_create(&cl->th, NULL, client_thread, cl)) {
		fail(name, "set-up: pthread_create");
		goto out;
	}
	/* serve LOOKUP and OPEN; hold the READ */
	while (held < 0) {
		if (mini_next_cqe(&m, REQUEST_MS, &ud, &res) || res < 0)
			break;
		hdr = slot(&qs[UD_QID(ud)], UD_ENT(ud));
		memcpy(&ih, hdr + offsetof(struct fuse_uring_req_header, in_out),
		       sizeof(ih));
		if (ih.opcode == FUSE_READ)
			held = UD_ENT(ud);
		else
			mini_serve_one(&m, UD_QID(ud), UD_ENT(ud));
	}
	if (held >= 0) {
		umount2(mnt, MNT_FORCE);	/* aborts; EBUSY for the umount */
		while (__atomic_load_n(&ab_stage, __ATOMIC_SEQ_CST) < 2)
			usleep(1000);
		late = mini_fixed(&m, IORING_OP_READ_FIXED, (uint16_t)held,
				  m.memfd, IO_SIZE, 0);
	}
	__atomic_store_n(&ab_stage, 3, __ATOMIC_SEQ_CST);
	pthread_join(cl->th, NULL);
	if (held < 0)
		fail(name, "no READ reached the server");
	else if (cl->read_err != ECONNABORTED)
		fail(name, "read(2) across the abort: expected ECONNABORTED, got %s",
		     cl->read_err ? strerror(cl->read_err) : "success");
	else if (late != -EFAULT || ab_changed)
		fail(name, "after the abort and the caller's read(2) returned, "
		     "READ_FIXED at entry %d gave %d (expected -EFAULT: the "
		     "buffer is revoked) and changed %d of the caller's %d "
		     "bytes", held, late, ab_changed, IO_SIZE);
	else {
		printf("# the server held the READ of entry %d; umount2(MNT_FORCE) aborted "
		       "the connection; the caller's read(2) failed with ECONNABORTED and "
		       "it refilled its buffer; the server's late READ_FIXED at entry %d "
		       "then got -EFAULT (revoked), and 0 of the caller's %d bytes changed\n",
		       held, held, IO_SIZE);
		pass(name);
	}
out:
	conn_close(&c);
	if (m.memfd >= 0)
		close(m.memfd);
	free(cl);
	if (qs)
		qs_free(qs);
}

/* ---- more REGISTER mistakes: the connection, the queue id, the entry id -- */

/*
 * REGISTER before the FUSE_INIT reply was written: the mount sent FUSE_INIT,
 * the server has not answered, so the ring is not sized yet. Kernel:
 * fuse_uring_cmd(), "if (!smp_load_acquire(&fch->initialized)) return
 * -EAGAIN;". fuse_uring_cmd() returns before its REGISTER branch, so this
 * does not switch io_uring off: io_uring punts the -EAGAIN to io-wq
 * (uring_cmd has no poll to wait on), which issues it once more, gets
 * -EAGAIN again and posts that as the CQE; hence the longer wait. Asserted:
 * exactly -EAGAIN, and after we answer FUSE_INIT the same REGISTER is
 * accepted (so the -EAGAIN was about INIT, not about the REGISTER).
 */
static void case_register_before_init(const char *name)
{
	const char *what;
	struct qmem q;
	struct conn c;
	struct reg r;
	char buf[48];
	int res, err;

	if (qmem_good(name, &q))
		return;
	if (conn_open_init(&c, name, INIT_LATER) == 0) {
		r = reg_bufring(0, 0, &q);
		res = do_register_ms(&c, &r, REQUEST_MS);
		if (res != -EAGAIN) {
			expect_res(name, -EAGAIN, res);
		} else if ((err = answer_init(c.fd, true, &what))) {
			fail(name, "set-up: %s: %s", what, strerror(-err));
		} else {
			res = do_register(&c, &r);
			if (res == ACCEPTED)
				pass(name);
			else
				fail(name, "-EAGAIN before FUSE_INIT, but after it the "
				     "REGISTER got %s, not accepted",
				     res_str(res, buf, sizeof(buf)));
		}
		conn_close(&c);
	}
	qmem_free(&q);
}

/*
 * A FUSE_INIT reply without FUSE_OVER_IO_URING: the connection has no ring,
 * and fch->io_uring stays 0. Kernel: fuse_uring_cmd(), "if
 * (!fch->io_uring) { ... "fuse-io-uring not enabled on this connection" ...
 * return -EOPNOTSUPP;" (enable_uring is on, main() set it).
 */
static void case_register_without_over_io_uring(const char *name)
{
	struct qmem q;
	struct conn c;
	struct reg r;

	if (qmem_good(name, &q))
		return;
	if (conn_open_init(&c, name, INIT_NO_URING) == 0) {
		r = reg_bufring(0, 0, &q);
		expect_res(name, -EOPNOTSUPP, do_register(&c, &r));
		conn_close(&c);
	}
	qmem_free(&q);
}

/*
 * A well-formed REGISTER after a failed one: the failure switched io_uring
 * off for the connection. Kernel: fuse_uring_cmd(), REGISTER branch, "if
 * (err) { ... fch->io_uring = 0;", then for the next command "if
 * (!fch->io_uring) ... return -EOPNOTSUPP;". The failed one is
 * queue-depth-zero's (-EINVAL, asserted as a set-up step).
 */
static void case_register_after_failed_register(const char *name)
{
	struct qmem q;
	struct conn c;
	struct reg r;
	char buf[48];
	int res;

	if (qmem_good(name, &q))
		return;
	if (conn_open(&c, name) == 0) {
		r = reg_bufring(0, 0, &q);
		r.depth = 0;
		res = do_register(&c, &r);
		if (res != -EINVAL) {
			fail(name, "set-up: REGISTER with queue_depth 0: expected "
			     "-EINVAL, got %s", res_str(res, buf, sizeof(buf)));
		} else {
			r = reg_bufring(0, 0, &q);
			expect_res(name, -EOPNOTSUPP, do_register(&c, &r));
		}
		conn_close(&c);
	}
	qmem_free(&q);
}

/*
 * A qid one past the last queue (one queue per possible CPU). Kernel:
 * fuse_uring_register(), "if (qid >= ring->nr_queues) { ... return
 * -EINVAL;".
 */
static void bend_qid_beyond_queues(struct reg *r, struct qmem *q)
{
	(void)q;
	r->qid = (uint16_t)nr_queues;
}

static void case_register_qid_beyond_queues(const char *name)
{
	first_register(name, -EINVAL, bend_qid_beyond_queues);
}

/*
 * The well-formed REGISTER on a ring without IORING_SETUP_SQE128: its SQEs
 * have no room for struct fuse_uring_cmd_req. Kernel: fuse_uring_cmd(),
 * "if (!(issue_flags & IO_URING_F_SQE128)) return -EINVAL;" (io_uring_cmd()
 * sets that flag only for an SQE128 ring). The SQE is 64 bytes: only they
 * are cleared and filled, the command's fields cannot be sent.
 */
static void case_register_without_sqe128(const char *name)
{
	struct io_uring ring64;
	struct io_uring_sqe *sqe;
	struct qmem q;
	struct conn c;
	int err, res;

	if (qmem_good(name, &q))
		return;
	if (conn_open(&c, name) == 0) {
		err = io_uring_queue_init(4, &ring64, 0);
		if (err) {
			fail(name, "set-up: io_uring_queue_init(64-byte SQEs): %s",
			     strerror(-err));
		} else {
			sqe = io_uring_get_sqe(&ring64);
			if (!sqe)
				abort();	/* a fresh ring has SQEs */
			memset(sqe, 0, sizeof(*sqe));
			sqe->opcode = IORING_OP_URING_CMD;
			sqe->fd = c.fd;
			sqe->cmd_op = FUSE_IO_URING_CMD_REGISTER;
			sqe->addr = (uintptr_t)q.iov;
			sqe->len = 2;
			sqe->user_data = UD(UD_REGISTER, 0, 0);
			if (io_uring_submit(&ring64) != 1) {
				fail(name, "set-up: io_uring_submit failed");
			} else {
				struct __kernel_timespec ts = { .tv_sec = REQUEST_MS / 1000 };
				struct io_uring_cqe *cqe;

				/* a refusal comes inline; wait as for any CQE */
				do {
					err = io_uring_wait_cqe_timeout(&ring64, &cqe, &ts);
				} while (err == -EINTR);
				res = ACCEPTED;
				if (err == 0) {
					res = cqe->res;
					io_uring_cqe_seen(&ring64, cqe);
				}
				expect_res(name, -EINVAL, res);
			}
			io_uring_queue_exit(&ring64);
		}
		conn_close(&c);
	}
	qmem_free(&q);
}

/*
 * A command op FUSE does not know: FUSE_IO_URING_CMD_INVALID (0), which the
 * uapi reserves as never valid. Kernel: fuse_uring_cmd(), "default: return
 * -EINVAL;" (reached on an initialized io_uring connection).
 */
static void case_unknown_cmd_op(const char *name)
{
	struct fuse_uring_cmd_req req = { .qid = 0 };
	uint64_t ud = UD(UD_REGISTER, 0, 0);
	struct conn c;

	if (conn_open(&c, name))
		return;
	if (!fuse_cmd_sqe(&c, FUSE_IO_URING_CMD_INVALID, &req, ud))
		fail(name, "set-up: no SQE");
	else
		expect_res(name, -EINVAL, submit_and_reap(&c, ud));
	conn_close(&c);
}

/*
 * Entry id 1 registered twice on queue 0, while entry 0 is still free (so
 * it is the id that is refused, not the count). Kernel (patch 0011):
 * fuse_uring_create_ring_ent(), "if (test_and_set_bit(ent->id,
 * queue->bufring->ent_ids)) { ... "Entry id %u in use" ... err = -EBUSY;".
 */
static void case_entry_id_in_use(const char *name)
{
	struct qmem q;
	struct conn c;
	struct reg r;

	if (qmem_good(name, &q))
		return;
	if (conn_open(&c, name) == 0) {
		r = reg_bufring(0, 1, &q);
		if (setup_register(name, &c, &r) == 0)
			expect_res(name, -EBUSY, do_register(&c, &r));
		conn_close(&c);
	}
	qmem_free(&q);
}

/*
 * One REGISTER more than init.queue_depth: every entry id 0..depth-1 is
 * registered (accepted), then one more. The kernel counts no entries; a
 * REGISTER needs an id below queue_depth that is free, and none is: entry
 * id 0 again gets -EBUSY (the same test_and_set_bit() line as
 * entry-id-in-use; an id >= depth is entry-id-beyond-queue-depth's
 * -EINVAL).
 */
static void case_register_count_beyond_depth(const char *name)
{
	struct qmem q;
	struct conn c;
	struct reg r;

	if (qmem_good(name, &q))
		return;
	if (conn_open(&c, name) == 0) {
		if (setup_bufring_queue(name, &c, 0, &q) == 0) {
			r = reg_bufring(0, 0, &q);
			expect_res(name, -EBUSY, do_register(&c, &r));
		}
		conn_close(&c);
	}
	qmem_free(&q);
}

/*
 * sqe->buf_index 65535 (the largest a u16 holds) on the queue's first
 * REGISTER: the queue and its buffer ring are set up from it, then its
 * entry id is out of range. Kernel: fuse_uring_create_ring_ent(), "if
 * (ent->id >= queue->bufring->queue_depth) { ... err = -EINVAL;".
 */
static void bend_entry_id_u16_max(struct reg *r, struct qmem *q)
{
	(void)q;
	r->ent = UINT16_MAX;
}

static void case_entry_id_u16_max(const char *name)
{
	first_register(name, -EINVAL, bend_entry_id_u16_max);
}

/* ---- more COMMIT_AND_FETCH mistakes -------------------------------------- */

/* Every queue of qs: a buffer ring (buf_size set) or one 7.2 entry. */
static int register_all(const char *name, struct conn *c, const struct qmem *qs)
{
	unsigned int q;

	for (q = 0; q < nr_queues; q++) {
		struct reg r = reg_iovec((uint16_t)q, &qs[q]);

		if (qs[q].buf_size ? setup_bufring_queue(name, c, (uint16_t)q, &qs[q]) :
		    setup_register(name, c, &r))
			return -1;
	}
	return 0;
}

/*
 * A COMMIT_AND_FETCH with qid one past the last queue. Kernel:
 * fuse_uring_commit_fetch(), "if (qid >= ring->nr_queues) return -EINVAL;".
 */
static void case_commit_qid_beyond_queues(const char *name)
{
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct conn c;

	if (!qs || qs_alloc(name, qs, qmem_good) || conn_open(&c, name))
		goto out;
	if (register_all(name, &c, qs) == 0)
		expect_res(name, -EINVAL, do_commit(&c, (uint16_t)nr_queues, 0, 4242));
	conn_close(&c);
out:
	if (qs)
		qs_free(qs);
}

/*
 * A COMMIT_AND_FETCH on a queue no REGISTER created (the ring exists since
 * FUSE_INIT, its queues do not). Kernel: fuse_uring_commit_fetch(), "queue
 * = READ_ONCE(ring->queues[qid]); if (!queue) return err;" with err =
 * -ENOTCONN.
 */
static void case_commit_queue_not_registered(const char *name)
{
	struct conn c;

	if (conn_open(&c, name))
		return;
	expect_res(name, -ENOTCONN, do_commit(&c, 0, 0, 4242));
	conn_close(&c);
}

/*
 * A request sent on the connection and one more stat(2): stat(2) must fail
 * with want_err (0: get our reply). 0, or -1 after FAILing the case.
 */
static int stat_round(const char *name, struct conn *c, const struct qmem *qs,
		      struct served *s, const struct reply_bend *b, int want_err)
{
	struct stat_job *j;
	bool joined = false;
	char wbuf[32];
	int err = -1;

	if (stat_start(name, &j))
		return -1;
	stat_go(j);
	if (serve_getattr(name, c, qs, s, b))
		goto out;
	if (!want_err) {
		err = check_stat_reply(name, j, &joined);
		goto out;
	}
	joined = stat_join(j, JOIN_MS) == 0;
	if (!joined)
		fail(name, "stat(2) still blocked %d ms after the reply", JOIN_MS);
	else if (j->err != want_err)
		fail(name, "stat(2): expected %s, got %s",
		     res_str(-want_err, wbuf, sizeof(wbuf)),
		     j->err ? strerror(j->err) : "success");
	else
		err = 0;
out:
	if (err)
		conn_close(c);	/* a stat(2) still waiting ends with the connection */
	stat_end(j, joined);
	return err;
}

/*
 * The commit_id of a request in flight, on the other queue: each queue
 * looks requests up in its own processing list. Kernel:
 * fuse_uring_commit_fetch(), "req = fuse_request_find(fpq, commit_id); err
 * = -ENOENT; if (!req) ... return err;" with fpq = &queue->fpq of the
 * queue named by qid. Asserted: -ENOENT, and the request is still there:
 * the COMMIT_AND_FETCH on the right queue is accepted and stat(2) gets our
 * reply.
 */
static void case_commit_wrong_qid(const char *name)
{
	struct reply_bend b = { .wrong_qid_first = true };
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct served s;
	struct conn c;

	if (!qs || need_two_queues(name) || qs_alloc(name, qs, qmem_good) ||
	    conn_open(&c, name))
		goto out;
	if (register_all(name, &c, qs) == 0 && stat_round(name, &c, qs, &s, &b, 0) == 0)
		expect_res(name, -ENOENT, s.wrong_qid_res);
	conn_close(&c);
out:
	if (qs)
		qs_free(qs);
}

/*
 * A refused REGISTER once the ring is ready (every queue has entries, and
 * requests go to the ring): entry id 0 of queue 0 again, which is in use
 * (-EBUSY). It is refused alone (kernel patch 0013: fuse_uring_cmd()
 * clears fch->io_uring only "if (!READ_ONCE(fch->ring->ready))"): a
 * stat(2) afterwards is served on the ring. 7.2 switched io_uring off for
 * the connection on any refused REGISTER; after the ring was ready the
 * GETATTR still went to the ring, and its COMMIT_AND_FETCH got
 * -EOPNOTSUPP: the request waited for an abort.
 */
static void case_register_refused_after_ready(const char *name)
{
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct served s;
	struct conn c;
	struct reg r;
	char buf[48];
	int res;

	if (!qs || qs_alloc(name, qs, qmem_good) || conn_open(&c, name))
		goto out;
	if (register_all(name, &c, qs) == 0) {
		r = reg_bufring(0, 0, &qs[0]);
		res = do_register(&c, &r);
		if (res != -EBUSY)
			fail(name, "set-up: REGISTER of entry 0 again: expected -EBUSY, "
			     "got %s", res_str(res, buf, sizeof(buf)));
		else if (stat_round(name, &c, qs, &s, NULL, 0) == 0)
			pass(name);
	}
	conn_close(&c);
out:
	if (qs)
		qs_free(qs);
}

/* ---- replies the kernel refuses ------------------------------------------ */

static void poison_slots(struct qmem *qs)
{
	unsigned int q;

	for (q = 0; q < nr_queues; q++)
		memset(qs[q].iov[0].iov_base, POISON, qs[q].depth * HDR_SZ);
}

/*
 * A GETATTR answered with a reply bent by b: the COMMIT_AND_FETCH is
 * accepted (the command is fine), and the request ends with the kernel's
 * error, want_err, which stat(2) returns. Then, with the header slots
 * poisoned again, a second stat(2) is served right: the entry, its buffer
 * and the connection survived the bad reply.
 */
static void reply_case(const char *name, int (*alloc)(const char *, struct qmem *),
		       const struct reply_bend *b, int want_err)
{
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct served s;
	struct conn c;

	if (!qs || qs_alloc(name, qs, alloc) || conn_open(&c, name))
		goto out;
	if (register_all(name, &c, qs) == 0 &&
	    stat_round(name, &c, qs, &s, b, want_err) == 0) {
		poison_slots(qs);
		if (stat_round(name, &c, qs, &s, NULL, 0) == 0)
			pass(name);
	}
	conn_close(&c);
out:
	if (qs)
		qs_free(qs);
}

/*
 * ring_ent_in_out.payload_sz one byte more than the payload buffer (buffer
 * ring: init.buf_size; 7.2's layout: its payload iovec, max_payload_sz).
 * The kernel checks the size against what the request can take before it
 * copies a byte: fuse_uring_commit() -> fuse_uring_copy_from_ring() ->
 * fuse_copy_out_args(cs, args, payload_sz): "if (reqsize < nbytes || ...)
 * return -EINVAL;" (reqsize: GETATTR's fuse_attr_out), and
 * fuse_uring_req_end() ends the request with it: stat(2) fails with EINVAL.
 */
static void case_reply_payload_sz_beyond_bufring(const char *name)
{
	struct reply_bend b = { .payload_sz_set = true, .payload_sz = max_payload + 1 };

	reply_case(name, qmem_good, &b, EINVAL);
}

static void case_reply_payload_sz_beyond_iovec(const char *name)
{
	struct reply_bend b = { .payload_sz_set = true, .payload_sz = max_payload + 1 };

	reply_case(name, qmem_iovec, &b, EINVAL);
}

/* The same with payload_sz 0xffffffff: no overflow in the size check. */
static void case_reply_payload_sz_u32_max(const char *name)
{
	struct reply_bend b = { .payload_sz_set = true, .payload_sz = UINT32_MAX };

	reply_case(name, qmem_good, &b, EINVAL);
}

/*
 * fuse_out_header.unique not the request's (bit 1 flipped). Kernel:
 * fuse_uring_out_header_has_err(), "err = -ENOENT; if (oh->unique !=
 * req->in.h.unique) { pr_warn_ratelimited("unique mismatch ...") ...":
 * stat(2) fails with ENOENT, and the kernel logs the warning line (not a
 * splat).
 */
static void case_reply_unique_mismatch(const char *name)
{
	struct reply_bend b = { .unique_xor = 2 };

	reply_case(name, qmem_good, &b, ENOENT);
}

/*
 * fuse_out_header.unique the request's with bit 0, FUSE_INT_REQ_BIT, set:
 * an interrupt reply, though fuse-io-uring sends no FUSE_INTERRUPT. 7.2
 * masked the bit out, accepted the reply and hit WARN_ON_ONCE() (a server
 * could warn, or with panic_on_warn panic, the kernel at will); kernel
 * patch 0012 refuses it: fuse_uring_out_header_has_err(), "if (oh->unique &
 * FUSE_INT_REQ_BIT) { pr_warn_ratelimited(...); goto err; }" with err
 * -EINVAL: stat(2) fails with EINVAL, and the per-case kernel-log check
 * would catch the WARNING.
 */
static void case_reply_interrupt_bit(const char *name)
{
	struct reply_bend b = { .unique_xor = 1 };

	reply_case(name, qmem_good, &b, EINVAL);
}

/*
 * fuse_out_header.error positive (5): an error is 0 or -errno. Kernel:
 * fuse_uring_out_header_has_err(), "err = -EINVAL; ... if (oh->error <=
 * -ERESTARTSYS || oh->error > 0) goto err;": stat(2) fails with EINVAL.
 */
static void case_reply_error_positive(const char *name)
{
	struct reply_bend b = { .error = 5 };

	reply_case(name, qmem_good, &b, EINVAL);
}

/* ---- padding: bytes with no meaning yet must be 0 ------------------------ */

/*
 * The uapi's padding: cmd_req.padding (every command), cmd_req.init.padding
 * (REGISTER) and ring_ent_in_out.padding (a reply). 7.2 and the v2 series
 * never read them, so a server could leave anything there, and no later
 * kernel could give those bytes a meaning without breaking it. Refused with
 * -EINVAL (kernel patch 0004): fuse_uring_cmd(), "if
 * (READ_ONCE(cmd_req->padding)) return -EINVAL;", fuse_uring_register(),
 * "if (!init_flags_valid(init_flags) || READ_ONCE(cmd_req->init.padding))
 * return -EINVAL;", and
 * fuse_uring_copy_from_ring(), "if (ring_in_out.padding) return -EINVAL;"
 * (the request ends with it: stat(2) fails with EINVAL). Every case here
 * was accepted before that patch refused it.
 */
static void bend_cmd_padding(struct reg *r, struct qmem *q)
{
	(void)q;
	r->padding = 1;
}

static void case_register_cmd_padding(const char *name)
{
	first_register(name, -EINVAL, bend_cmd_padding);
}

static void bend_init_padding(struct reg *r, struct qmem *q)
{
	(void)q;
	r->init_padding = 0x8000;
}

static void case_register_init_padding(const char *name)
{
	first_register(name, -EINVAL, bend_init_padding);
}

/* 7.2's layout has the same bytes: a 7.2 server that zeroes its SQEs is fine */
static void case_register_cmd_padding_iovec(const char *name)
{
	struct qmem q;
	struct conn c;
	struct reg r;

	if (qmem_iovec(name, &q))
		return;
	r = reg_iovec(0, &q);
	r.padding = 1;
	if (conn_open(&c, name) == 0) {
		expect_res(name, -EINVAL, do_register(&c, &r));
		conn_close(&c);
	}
	qmem_free(&q);
}

/*
 * A COMMIT_AND_FETCH with cmd_req.padding 1: refused as a command, before
 * it looks the request up, so the request is still there: the same commit
 * with padding 0 is accepted and stat(2) gets our reply.
 */
static void case_commit_cmd_padding(const char *name)
{
	struct reply_bend b = { .padded_commit_first = true };
	struct qmem *qs = calloc(nr_queues, sizeof(*qs));
	struct served s;
	struct conn c;

	if (!qs || qs_alloc(name, qs, qmem_good) || conn_open(&c, name))
		goto out;
	if (register_all(name, &c, qs) == 0 && stat_round(name, &c, qs, &s, &b, 0) == 0)
		expect_res(name, -EINVAL, s.padded_commit_res);
	conn_close(&c);
out:
	if (qs)
		qs_free(qs);
}

static void case_reply_ent_padding(const char *name)
{
	struct reply_bend b = { .ent_padding = 1 };

	reply_case(name, qmem_good, &b, EINVAL);
}

/*
 * The same for ring_ent_in_out.reserved, which the kernel writes as 0 with
 * every request. Kernel: fuse_uring_copy_from_ring(), "if
 * (ring_in_out.padding || ring_in_out.reserved) return -EINVAL;".
 */
static void case_reply_ent_reserved(const char *name)
{
	struct reply_bend b = { .ent_reserved = 1ULL << 63 };

	reply_case(name, qmem_good, &b, EINVAL);
}

/* ---- fault injection (a kernel with CONFIG_FAULT_INJECTION) -------------- */

#define FAIL_NTH	"/proc/thread-self/fail-nth"
#define FI_MAX_N	400	/* more than a REGISTER's allocations */

/*
 * fd is /proc/thread-self/fail-nth, opened once beforehand: opening it is
 * an allocation too, and must not be the one that fails.
 */
static int fail_nth_write(int fd, int n)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%d", n);

	return pwrite(fd, buf, (size_t)len, 0) == len ? 0 : -errno;
}

/* Still armed (the n-th call did not happen): > 0; injected: 0. */
static int fail_nth_read(int fd)
{
	char buf[16] = "";
	ssize_t len = pread(fd, buf, sizeof(buf) - 1, 0);

	return len > 0 ? atoi(buf) : -EIO;
}

/*
 * failslab and fail_page_alloc skip allocations that may sleep unless
 * told otherwise (ignore-gfp-wait, Y by default), and a skipped call does
 * not count for fail-nth: nearly every allocation of a REGISTER is
 * GFP_KERNEL. Set both to val; the old values go to old[2].
 */
static const char *const ignore_gfp_wait[] = {
	"/sys/kernel/debug/failslab/ignore-gfp-wait",
	"/sys/kernel/debug/fail_page_alloc/ignore-gfp-wait",
};

static int set_ignore_gfp_wait(const char *val, char old[2])
{
	unsigned int i;

	for (i = 0; i < 2; i++) {
		int fd = open(ignore_gfp_wait[i], O_RDWR);
		char cur = 'Y';

		if (fd < 0)
			return -errno;
		if (old && read(fd, &cur, 1) != 1)
			cur = 'Y';
		if (old)
			old[i] = cur;
		if (pwrite(fd, val + i, 1, 0) != 1) {
			close(fd);
			return -EIO;
		}
		close(fd);
	}
	return 0;
}

/*
 * Every allocation of a queue's first REGISTER, failed in turn: the n-th
 * fault-injectable call of this thread fails (/proc/thread-self/fail-nth;
 * failslab and fail_page_alloc), for n = 1, 2, ... until the REGISTER
 * makes fewer than n calls. io_uring issues the command inline, in this
 * thread, so these are the allocations of fuse_uring_register() and what
 * it calls (the ring, the queue, the buffer ring, the pinning and vmap of
 * the regions) and of io_uring's submission around it. Each n gets a fresh
 * connection (a failed REGISTER switches io_uring off for it). Asserted:
 * the REGISTER is accepted or fails with an errno (never a hang or a lost
 * completion: the last, uninjected one must be accepted), the connection
 * closes, pinned pages are given back (VmPin 0), and the kernel log stays
 * clean (the per-case check: no WARNING, no KASAN or lockdep report).
 */
static void fault_inject_register(const char *name,
				  int (*alloc)(const char *, struct qmem *),
				  int iovec_layout)
{
	int n, res, armed = 0, errs = 0, accepted = 0;
	char buf[48], seen[256] = "";
	struct qmem q;
	struct conn c;
	struct reg r;
	int fd;

	char old_igw[2];

	fd = open(FAIL_NTH, O_RDWR);
	if (fd < 0) {
		fail(name, "open %s: %s", FAIL_NTH, strerror(errno));
		return;
	}
	res = set_ignore_gfp_wait("NN", old_igw);
	if (res) {
		fail(name, "set %s to N: %s", ignore_gfp_wait[0], strerror(-res));
		close(fd);
		return;
	}
	if (alloc(name, &q)) {
		set_ignore_gfp_wait(old_igw, NULL);
		close(fd);
		return;
	}
	r = iovec_layout ? reg_iovec(0, &q) : reg_bufring(0, 0, &q);
	for (n = 1; n <= FI_MAX_N; n++) {
		if (conn_open(&c, name))
			goto out;
		res = fail_nth_write(fd, n);
		if (res) {
			fail(name, "write %s: %s", FAIL_NTH, strerror(-res));
			conn_close(&c);
			goto out;
		}
		res = do_register(&c, &r);
		armed = fail_nth_read(fd);
		fail_nth_write(fd, 0);
		conn_close(&c);
		if (getenv("FI_DEBUG"))
			printf("# n=%d: REGISTER %s, fail-nth after %d\n", n,
			       res_str(res, buf, sizeof(buf)), armed);
		if (armed > 0 && res != ACCEPTED) {
			fail(name, "n=%d: no fault injected, yet REGISTER got %s",
			     n, res_str(res, buf, sizeof(buf)));
			goto out;
		}
		if (res == ACCEPTED) {
			accepted++;
		} else if (res < 0) {
			errs++;
			if (!strstr(seen, res_str(res, buf, sizeof(buf))) &&
			    strlen(seen) + strlen(buf) + 2 < sizeof(seen))
				strcat(strcat(seen, " "), buf);
		} else if (res == NOT_SUBMITTED) {
			errs++;	/* io_uring's own submission or wait failed */
		} else {
			fail(name, "n=%d: REGISTER got %s", n, res_str(res, buf, sizeof(buf)));
			goto out;
		}
		if (armed > 0)
			break;	/* the REGISTER made fewer than n calls */
	}
	if (armed > 0) {
		for (res = 0; res < 50 && vmpin_kb() != 0; res++)
			usleep(100 * 1000);	/* the abort's teardown unpins */
		printf("# %d allocations failed in turn: %d REGISTERs failed cleanly (%s ),"
		       " %d were accepted anyway (a fallback); VmPin %ld kB after\n",
		       n - 1, errs, seen[0] ? seen : " none", accepted - 1, vmpin_kb());
		if (vmpin_kb() != 0)
			fail(name, "VmPin %ld kB after every connection closed", vmpin_kb());
		else
			pass(name);
	} else {
		fail(name, "still injecting at n=%d (FI_MAX_N)", FI_MAX_N);
	}
out:
	qmem_free(&q);
	set_ignore_gfp_wait(old_igw, NULL);
	close(fd);
}

static void case_fault_inject_iovec(const char *name)
{
	fault_inject_register(name, qmem_iovec, 1);
}

static void case_fault_inject_bufring(const char *name)
{
	fault_inject_register(name, qmem_good, 0);
}

static void case_fault_inject_pinned(const char *name)
{
	fault_inject_register(name, alloc_pinned, 0);
}

struct test_case {
	const char *name;
	void (*run)(const char *name);
};

/*
 * A server must know that the kernel reads the REGISTER flags before it
 * uses a buffer ring: a kernel without the series takes a buffer-ring
 * REGISTER for an iovec one, and every entry shares header slot 0. Patch 14
 * offers FUSE_HAS_URING_BUFRING in FUSE_INIT whenever it offers
 * FUSE_OVER_IO_URING (fuse_new_init(): "flags |= FUSE_OVER_IO_URING |
 * FUSE_HAS_URING_BUFRING;"), and neither with enable_uring off.
 */
static char set_enable_uring(char value);

static void case_init_offers_has_uring_bufring(const char *name)
{
	const char *what;
	struct conn c;
	int err;

	if (conn_open(&c, name))
		return;
	conn_close(&c);
	if (!(init_offered & FUSE_HAS_URING_BUFRING)) {
		fail(name, "FUSE_INIT offered %#llx: FUSE_OVER_IO_URING without "
		     "FUSE_HAS_URING_BUFRING (%#llx)",
		     (unsigned long long)init_offered,
		     (unsigned long long)FUSE_HAS_URING_BUFRING);
		return;
	}
	if (!set_enable_uring('0')) {
		fail(name, "set-up: cannot write %s", ENABLE_URING);
		return;
	}
	init_offered = 0;
	if (conn_open_init(&c, name, INIT_LATER) == 0) {
		err = answer_init(c.fd, false, &what);
		conn_close(&c);
		if (err != -EOPNOTSUPP)
			fail(name, "enable_uring off: FUSE_INIT offered %#llx "
			     "(answer_init: %d), expected no FUSE_OVER_IO_URING",
			     (unsigned long long)init_offered, err);
		else if (init_offered & FUSE_HAS_URING_BUFRING)
			fail(name, "enable_uring off: FUSE_INIT offered "
			     "FUSE_HAS_URING_BUFRING (%#llx) without "
			     "FUSE_OVER_IO_URING",
			     (unsigned long long)init_offered);
		else
			pass(name);
	}
	if (!set_enable_uring('1'))
		fail(name, "clean-up: cannot write %s", ENABLE_URING);
}

static const struct test_case cases[] = {
	{ "control-bufring-every-queue-getattr", case_control },
	{ "init-offers-has-uring-bufring", case_init_offers_has_uring_bufring },
	{ "unknown-init-flag", case_unknown_flag },
	{ "register-before-init-eagain", case_register_before_init },
	{ "register-without-over-io-uring", case_register_without_over_io_uring },
	{ "register-after-failed-register", case_register_after_failed_register },
	{ "register-refused-after-ready-ring-stays", case_register_refused_after_ready },
	{ "register-cmd-padding", case_register_cmd_padding },
	{ "register-cmd-padding-iovec", case_register_cmd_padding_iovec },
	{ "register-init-padding", case_register_init_padding },
	{ "register-qid-beyond-queues", case_register_qid_beyond_queues },
	{ "register-without-sqe128", case_register_without_sqe128 },
	{ "unknown-cmd-op", case_unknown_cmd_op },
	{ "cross-queue-bufring-then-iovec", case_cross_bufring_then_iovec },
	{ "cross-queue-iovec-then-bufring", case_cross_iovec_then_bufring },
	{ "cross-queue-buf-size-differs", case_cross_buf_size },
	{ "cross-queue-queue-depth-differs", case_cross_queue_depth },
	{ "same-queue-bufring-then-iovec", case_same_bufring_then_iovec },
	{ "same-queue-iovec-then-bufring", case_same_iovec_then_bufring },
	{ "queue-depth-zero", case_depth_zero },
	{ "buf-size-zero", case_buf_size_zero },
	{ "queue-depth-beyond-headers-region", case_depth_beyond_headers },
	{ "buf-size-below-max-payload", case_buf_size_short },
	{ "payload-region-null", case_payload_null },
	{ "payload-region-below-one-buffer", case_payload_short },
	{ "payload-region-65536-buffers", case_payload_too_many_bufs },
	{ "payload-region-65535-buffers-accepted", case_payload_u16_max_bufs },
	{ "payload-region-not-multiple-accepted-floor", case_payload_not_multiple },
	{ "headers-misaligned-accepted-and-served", case_headers_misaligned },
	{ "headers-unmapped-accepted-request-efault", case_headers_unmapped },
	{ "entry-id-beyond-queue-depth", case_entry_id_beyond_depth },
	{ "entry-id-u16-max-first-register", case_entry_id_u16_max },
	{ "entry-id-in-use", case_entry_id_in_use },
	{ "register-count-beyond-queue-depth", case_register_count_beyond_depth },
	{ "commit-unknown-commit-id", case_commit_unknown },
	{ "commit-stale-commit-id", case_commit_stale },
	{ "commit-qid-beyond-queues", case_commit_qid_beyond_queues },
	{ "commit-queue-not-registered", case_commit_queue_not_registered },
	{ "commit-wrong-qid", case_commit_wrong_qid },
	{ "reply-payload-sz-beyond-buffer-bufring", case_reply_payload_sz_beyond_bufring },
	{ "reply-payload-sz-beyond-buffer-iovec", case_reply_payload_sz_beyond_iovec },
	{ "reply-payload-sz-u32-max", case_reply_payload_sz_u32_max },
	{ "reply-unique-mismatch", case_reply_unique_mismatch },
	{ "reply-interrupt-bit-einval", case_reply_interrupt_bit },
	{ "reply-error-positive", case_reply_error_positive },
	{ "commit-cmd-padding", case_commit_cmd_padding },
	{ "reply-ent-padding", case_reply_ent_padding },
	{ "reply-ent-reserved", case_reply_ent_reserved },
	{ "pinned-headers-without-bufring", case_pinned_headers_without_bufring },
	{ "pinned-buffers-without-bufring", case_pinned_buffers_without_bufring },
	{ "pinned-headers-misaligned", case_pinned_headers_misaligned },
	{ "pinned-buffers-misaligned", case_pinned_buffers_misaligned },
	{ "pinned-memlock-exact-accepted", case_pinned_memlock_exact },
	{ "pinned-over-memlock", case_pinned_over_memlock },
	{ "pinned-over-memlock-pins-nothing", case_pinned_over_memlock_pins_nothing },
	{ "pinned-headers-region-larger-charged-as-used", case_pinned_headers_region_larger },
	{ "pinned-buffers-region-larger-charged-as-used", case_pinned_buffers_region_larger },
	{ "control-pinned-every-queue-getattr", case_control_pinned },
	{ "zero-copy-without-pinned", case_zero_copy_without_pinned },
	{ "zero-copy-without-pinned-buffers", case_zero_copy_without_pinned_buffers },
	{ "zero-copy-without-cap-sys-admin", case_zero_copy_without_cap_sys_admin },
	{ "zero-copy-table-too-small", case_zero_copy_table_too_small },
	{ "zero-copy-fixed-directions", case_zero_copy_fixed_directions },
	{ "zero-copy-kvec-read-copied", case_zero_copy_kvec_read_copied },
	{ "zero-copy-abort-revokes-folios", case_zero_copy_abort_revokes_folios },
	{ "zero-copy-async-commit-vs-table-update", case_zero_copy_async_commit_vs_table_update },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

/*
 * Only on a kernel with fault injection (the debug kernel of make
 * check-debug): elsewhere they are not listed, so they neither run nor
 * count.
 */
static const struct test_case fault_cases[] = {
	{ "fault-inject-register-iovec", case_fault_inject_iovec },
	{ "fault-inject-register-bufring", case_fault_inject_bufring },
	{ "fault-inject-register-pinned", case_fault_inject_pinned },
};
#define NFAULT (sizeof(fault_cases) / sizeof(fault_cases[0]))


/* ---- set-up of the whole run -------------------------------------------- */

/* Write enable_uring; returns the old value ('Y'/'N'), or 0 on failure. */
static char set_enable_uring(char value)
{
	char old = 0;
	FILE *f = fopen(ENABLE_URING, "r+");

	if (!f)
		return 0;
	if (fscanf(f, " %c", &old) != 1)
		old = 0;
	rewind(f);
	if (fprintf(f, "%c\n", value) < 0 || fclose(f) != 0)
		return 0;
	return old;
}

static bool selected(int argc, char **argv, int first, const char *name)
{
	int i;

	if (first >= argc)
		return true;
	for (i = first; i < argc; i++)
		if (!strcmp(argv[i], name))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	/* the fault-injection cases follow the others where they can run */
	size_t ncases = NCASES + (access(FAIL_NTH, W_OK) == 0 ? NFAULT : 0);
	char old_enable;
	int first = 1;
	size_t i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && !strcmp(argv[1], "--list")) {
		for (i = 0; i < ncases; i++)
			printf("%s\n", i < NCASES ? cases[i].name : fault_cases[i - NCASES].name);
		return 0;
	}
	if (argc > 2 && !strcmp(argv[1], "--mnt")) {
		mnt = argv[2];
		first = 3;
	}

	page_size = (size_t)sysconf(_SC_PAGESIZE);
	/* fuse_uring_create(): max(FUSE_MIN_READ_BUFFER, max_write, max_pages pages) */
	max_payload = (uint32_t)(INIT_MAX_PAGES * page_size);
	if (max_payload < 8192)
		max_payload = 8192;
	nr_queues = count_possible_cpus();
	if (mkdir(mnt, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "bufring-register-errors: mkdir %s: %s (--mnt DIR names another mount point)\n",
			mnt, strerror(errno));
		return 1;
	}

	/* The kernel offers FUSE_OVER_IO_URING in FUSE_INIT only when enabled. */
	old_enable = set_enable_uring('1');
	printf("# %u FUSE queues (possible CPUs), max_payload_sz %u, mount point %s\n",
	       nr_queues, max_payload, mnt);
	for (i = 0; i < ncases; i++) {
		const struct test_case *t = i < NCASES ? &cases[i] : &fault_cases[i - NCASES];
		int kmsg;

		if (!selected(argc, argv, first, t->name))
			continue;
		case_passed = case_failed = false;
		kmsg = kmsg_mark();
		if (!old_enable)
			fail(t->name, "set-up: cannot write %s", ENABLE_URING);
		else if (!nr_queues)
			fail(t->name, "set-up: cannot read %s", CPUS_POSSIBLE);
		else
			t->run(t->name);
		kmsg_check(t->name, kmsg);
		if (!case_passed && !case_failed)
			fail(t->name, "the case reported nothing");
		if (case_failed)
			failures++;
		else
			printf("PASS %s\n", t->name);
	}
	if (old_enable)
		set_enable_uring(old_enable == 'Y' ? '1' : '0');
	printf("# %d failed\n", failures);
	return failures ? 1 : 0;
}
