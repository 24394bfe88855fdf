// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * tests/uapi-errors/server.c: the FUSE server the cases of
 * build/tests/uapi-errors share, with liburing and nothing else (no
 * libfuse, no reference server): per case it opens /dev/fuse, mounts a
 * FUSE file system with that fd, answers FUSE_INIT by read(2)/write(2)
 * with FUSE_OVER_IO_URING, and sends FUSE_IO_URING_CMD_REGISTER and
 * COMMIT_AND_FETCH commands on an SQE128 ring. Here too: the well-formed
 * set-up the cases bend one field at a time (qmem_good(), reg_bufring(),
 * first_register()), a request from a thread's stat(2) of the mount root
 * served on the ring (round_trip(), stat_round()), how a case reports
 * (pass(), fail(), the kernel log after it), and the small file system the
 * zero-copy cases serve (serve_mini()). It proves nothing by itself: the
 * control cases (register.c, pinned.c) show that it is right.
 */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../kernel-log.h"

const char *mnt = MNT_DEFAULT;
unsigned int nr_queues;	/* one FUSE queue per possible CPU */
size_t page_size;
uint32_t max_payload;	/* the ring's max_payload_sz, see main() */

/* ---- reporting ---------------------------------------------------------- */

/*
 * A case reports through pass(), fail() or skip(), in the words of the
 * shell harness (tests/lib.sh): "ok NAME", "not ok NAME: why", "skip NAME:
 * why". main() prints the ok or skip line only after the kernel-log check
 * (kmsg_check()), so a case that passed while the kernel warned has
 * failed. fail() prints at once: a case may fail twice (its own check and
 * the kernel's), the guest script reads the first line.
 */
bool case_passed, case_failed, case_skipped;
char case_skip_why[200];

void pass(const char *name)
{
	(void)name;
	case_passed = true;
}

/*
 * The case cannot run here (the kernel lacks what it needs); main() prints
 * "skip NAME: why". Neither a pass nor a failure.
 */
__attribute__((format(printf, 2, 3)))
void skip(const char *name, const char *fmt, ...)
{
	va_list ap;

	(void)name;
	va_start(ap, fmt);
	vsnprintf(case_skip_why, sizeof(case_skip_why), fmt, ap);
	va_end(ap);
	case_skipped = true;
}

/* Returns -1, so that a case can "return fail(...)". */
__attribute__((format(printf, 2, 3)))
int fail(const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("not ok %s: ", name);
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
 * "# kernel: ...", and fail the case on the first that reports a broken
 * kernel (kernel_splat(), tests/kernel-log.h). Closes fd.
 */
void kmsg_check(const char *name, int fd)
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

/* A command's result as the "not ok" lines print it. */
const char *res_str(int res, char *buf, size_t len)
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

/* pass() when the command's result is the one expected, else fail(). */
int expect_res(const char *name, int want, int got)
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

/*
 * FUSE_INIT travels over /dev/fuse even for io_uring servers: read it, and
 * reply with FUSE_OVER_IO_URING so that the kernel creates the ring
 * (fuse_uring_conn_init()). The kernel offers the flag only while
 * enable_uring is set. We ask for INIT_MAX_PAGES pages: fuse_uring_create()
 * sizes max_payload_sz as max(FUSE_MIN_READ_BUFFER, max_write, max_pages
 * pages), which is what main() computes into max_payload.
 */
uint64_t init_offered;	/* the flags the last FUSE_INIT offered */

int answer_init(int fd, enum init_mode mode, const char **what)
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

	wanted = FUSE_INIT_EXT | FUSE_MAX_PAGES;
	if (mode == INIT_URING || mode == INIT_URING_RETRY ||
	    mode == INIT_URING_ASYNC_DIO)
		wanted |= FUSE_OVER_IO_URING;
	if (mode == INIT_URING_ASYNC_DIO)
		wanted |= FUSE_ASYNC_DIO;
	if (mode == INIT_URING_RETRY)
		wanted |= FUSE_HAS_URING_BUFRING;
	memset(&out, 0, sizeof(out));
	out.major = FUSE_KERNEL_VERSION;
	out.minor = in->minor < FUSE_KERNEL_MINOR_VERSION ?
		    in->minor : FUSE_KERNEL_MINOR_VERSION;
	out.flags = (uint32_t)(offered & wanted);
	out.flags2 = (uint32_t)((offered & wanted) >> 32);
	out.max_write = (uint32_t)(INIT_MAX_PAGES * page_size);
	out.max_pages = INIT_MAX_PAGES;
	if (mode == INIT_URING_ASYNC_DIO)
		out.max_background = 2;

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
void conn_close(struct conn *c)
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

/* A fresh connection, FUSE_INIT answered as mode says, with an io_uring. */
int conn_open_init(struct conn *c, const char *name, enum init_mode mode)
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
		err = answer_init(c->fd, mode, &what);
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

/* A fresh connection, initialized, with a ring; fails the case if not. */
int conn_open(struct conn *c, const char *name)
{
	return conn_open_init(c, name, INIT_URING);
}

/* Write enable_uring; returns the old value ('Y'/'N'), or 0 on failure. */
char set_enable_uring(char value)
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

/* ---- commands ------------------------------------------------------------ */

/*
 * An SQE for a FUSE command, its fuse_uring_cmd_req in sqe->cmd (the 80
 * bytes an SQE128 has after its first 48). liburing clears none of it, and
 * the kernel reads every field, so the whole 128 bytes are zeroed first.
 */
struct io_uring_sqe *fuse_cmd_sqe(struct conn *c, uint32_t cmd_op,
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
int wait_cqe_ms(struct conn *c, int ms, uint64_t *ud, int *res)
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

int submit_and_reap(struct conn *c, uint64_t ud)
{
	return submit_and_reap_ms(c, ud, ACCEPT_MS);
}

/* The SQE of one REGISTER, not submitted; NULL if the SQ is full. */
struct io_uring_sqe *register_sqe(struct conn *c, const struct reg *r)
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
	struct io_uring_sqe *sqe;

	sqe = fuse_cmd_sqe(c, FUSE_IO_URING_CMD_REGISTER, &req,
			   UD(UD_REGISTER, r->qid, r->ent));
	if (sqe) {
		sqe->addr = (uintptr_t)r->iov;
		sqe->len = 2;
		sqe->buf_index = r->ent;
	}
	return sqe;
}

/* Submit one REGISTER; a CQE counts if it comes within ms. */
int do_register_ms(struct conn *c, const struct reg *r, int ms)
{
	if (!register_sqe(c, r))
		return NOT_SUBMITTED;
	return submit_and_reap_ms(c, UD(UD_REGISTER, r->qid, r->ent), ms);
}

/*
 * Run fn in a child process that holds the connection's /dev/fuse fd (as
 * after fork(), or a descriptor passed over SCM_RIGHTS) but has memory and
 * an io_uring ring of its own, c2. Returns what fn returned, or
 * NOT_SUBMITTED after failing the case.
 */
int in_other_process(const char *name, const struct conn *c,
		     int (*fn)(struct conn *c2, const void *arg), const void *arg)
{
	int p[2], res = NOT_SUBMITTED, status;
	pid_t pid;

	fflush(stdout);
	if (pipe(p) < 0)
		return fail(name, "set-up: pipe: %s", strerror(errno)), NOT_SUBMITTED;
	pid = fork();
	if (pid == 0) {
		struct conn c2 = { .fd = c->fd };

		close(p[0]);
		if (io_uring_queue_init(16, &c2.ring, IORING_SETUP_SQE128) == 0)
			res = fn(&c2, arg);
		if (write(p[1], &res, sizeof(res)) != sizeof(res))
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	if (pid < 0 || read(p[0], &res, sizeof(res)) != sizeof(res))
		res = NOT_SUBMITTED;
	close(p[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	if (res == NOT_SUBMITTED)
		fail(name, "set-up: the other process did not report");
	return res;
}

int do_register(struct conn *c, const struct reg *r)
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

int do_commit(struct conn *c, uint16_t qid, uint16_t ent,
		     uint64_t commit_id)
{
	return do_commit_padded(c, qid, ent, commit_id, 0);
}

/* ---- queue memory ----------------------------------------------------- */

void *map_anon(size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

size_t page_round(size_t len)
{
	return (len + page_size - 1) / page_size * page_size;
}

void qmem_free(struct qmem *q)
{
	if (q->hmap)
		munmap(q->hmap, q->hmap_len);
	if (q->pmap)
		munmap(q->pmap, q->pmap_len);
	memset(q, 0, sizeof(*q));
}

/* 0, or -1 after failing the case. One spare byte, for the misaligned case. */
int qmem_alloc(const char *name, struct qmem *q, uint16_t depth,
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
int qmem_good(const char *name, struct qmem *q)
{
	return qmem_alloc(name, q, DEPTH, max_payload, NBUFS * (size_t)max_payload);
}

/*
 * Memory for one entry without a buffer ring (7.2's layout): its own header
 * and a payload of at least max_payload_sz (fuse_uring_create_ring_ent()).
 */
int qmem_iovec(const char *name, struct qmem *q)
{
	return qmem_alloc(name, q, 1, 0, max_payload);
}

/* The well-formed queue with both regions pinned. */
int alloc_pinned(const char *name, struct qmem *q)
{
	if (qmem_good(name, q))
		return -1;
	q->flags |= PINNED;
	return 0;
}

/*
 * Header slots are copied in and out with memcpy: the misaligned case puts
 * them at an odd address, where a struct access would be undefined.
 */
char *slot(const struct qmem *q, uint16_t ent)
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

struct reg reg_bufring(uint16_t qid, uint16_t ent, const struct qmem *q)
{
	return (struct reg){
		.qid = qid, .flags = q->flags, .buf_size = q->buf_size,
		.depth = q->depth, .ent = ent, .iov = q->iov,
	};
}

struct reg reg_iovec(uint16_t qid, const struct qmem *q)
{
	return (struct reg){ .qid = qid, .iov = q->iov };
}

/*
 * A set-up step: this REGISTER must be accepted, or the case cannot test
 * what it is about. 0, or -1 after failing the case.
 */
int setup_register(const char *name, struct conn *c, const struct reg *r)
{
	char buf[48];
	int res = do_register(c, r);

	if (res == ACCEPTED)
		return 0;
	return fail(name, "set-up: REGISTER q=%u ent=%u: expected accepted, got %s",
		    r->qid, r->ent, res_str(res, buf, sizeof(buf)));
}

/* Every entry of queue qid, as a buffer ring. */
int setup_bufring_queue(const char *name, struct conn *c, uint16_t qid,
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
int need_two_queues(const char *name)
{
	if (nr_queues >= 2)
		return 0;
	return fail(name, "needs 2 FUSE queues (possible CPUs), this guest has %u",
		    nr_queues);
}

/* Every queue of qs: a buffer ring (buf_size set) or one 7.2 entry. */
int register_all(const char *name, struct conn *c, const struct qmem *qs)
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
 * A queue's first REGISTER with one thing wrong, given as a change to the
 * well-formed REGISTER of queue 0 entry 0 and its memory.
 */
void first_register(const char *name, int want,
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

/* ---- a request: stat(2) of the mount root from another thread ----------- */

static void *stat_thread(void *arg)
{
	struct stat_job *j = arg;

	while (sem_wait(&j->go) < 0 && errno == EINTR)
		;
	j->err = stat(mnt, &j->st) < 0 ? errno : 0;
	return NULL;
}

/* 0, or -1 after failing the case; j is heap memory, see stat_end(). */
int stat_start(const char *name, struct stat_job **jp)
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

void stat_go(struct stat_job *j)
{
	sem_post(&j->go);
}

/* Wait up to ms for stat(2) to return: 0 if it did, else ETIMEDOUT. */
int stat_join(struct stat_job *j, int ms)
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
void stat_end(struct stat_job *j, bool joined)
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
 * 0, or -1 after failing the case.
 */
struct commit_arg {
	uint16_t qid, ent;
	uint64_t commit_id;
};

static int commit_in(struct conn *c2, const void *arg)
{
	const struct commit_arg *a = arg;

	return do_commit(c2, a->qid, a->ent, a->commit_id);
}

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

	/* the right commit, from a process with other memory */
	if (b && b->other_process_commit_first) {
		struct commit_arg a = { s->qid, s->ent, ih.unique };

		s->other_process_res = in_other_process(name, c, commit_in, &a);
	}

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

/* stat(2) must return our reply: 0, or -1 after failing the case. */
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
 * 0, or -1 after failing the case.
 */
int round_trip(const char *name, struct conn *c, struct qmem *qs,
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

/*
 * A request sent on the connection and one more stat(2): stat(2) must fail
 * with want_err (0: get our reply). 0, or -1 after failing the case.
 */
int stat_round(const char *name, struct conn *c, const struct qmem *qs,
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

/* Memory for every queue: well-formed, or by a case's own function. */
/*
 * After a refused REGISTER (what says which, for the messages), register
 * every queue of qs in the well-formed buffer-ring layout, queue 0 from
 * entry q0_first on (the ones before it are registered already), and have
 * a GETATTR served on the ring: the refusal left io_uring on (patch 0020).
 * Passes or fails the case.
 */
void retry_and_serve(const char *name, struct conn *c, const struct qmem *qs,
		     const char *what, uint16_t q0_first)
{
	struct served s;
	char buf[48];
	unsigned int q;

	for (q = 0; q < nr_queues; q++) {
		for (uint16_t ent = q ? 0 : q0_first; ent < qs[q].depth; ent++) {
			struct reg r = reg_bufring((uint16_t)q, ent, &qs[q]);
			int res = do_register(c, &r);

			if (res != ACCEPTED) {
				fail(name, "after %s, REGISTER q=%u ent=%u got %s, "
				     "not accepted: the refusal switched io_uring off",
				     what, q, ent, res_str(res, buf, sizeof(buf)));
				return;
			}
		}
	}
	if (stat_round(name, c, qs, &s, NULL, 0) == 0) {
		printf("# %s; then every queue registered in buffer-ring mode on "
		       "the same connection, and a GETATTR was served on the ring\n",
		       what);
		pass(name);
	}
}

int qs_alloc(const char *name, struct qmem *qs,
		    int (*alloc)(const char *, struct qmem *))
{
	unsigned int q;

	for (q = 0; q < nr_queues; q++)
		if (alloc(name, &qs[q]))
			return -1;
	return 0;
}

void qs_free(struct qmem *qs)
{
	unsigned int q;

	for (q = 0; q < nr_queues; q++)
		qmem_free(&qs[q]);
	free(qs);
}

/* ---- capabilities and pinned memory ------------------------------------ */

/*
 * Turn one capability of this thread's effective set off or back on (it
 * stays in the permitted set, so it can come back). 0, or -errno.
 */
int cap_effective(int cap, bool on)
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

/*
 * Run the calling thread on cpu only. A request goes to the FUSE queue of
 * the CPU its caller runs on (fuse_uring_task_to_queue()): callers pinned
 * to one CPU share a queue. 0, or an errno.
 */
int pin_to_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/*
 * Wait up to ms for thread tid of this process to sleep (state S or D in
 * /proc/self/task/TID/stat): a caller blocked in a FUSE request. True if
 * it does.
 */
bool thread_sleeps(pid_t tid, int ms)
{
	char path[64], buf[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	for (int i = 0; i <= ms; i += 5) {
		f = fopen(path, "r");
		if (!f)
			return false;
		p = fgets(buf, sizeof(buf), f);
		fclose(f);
		p = p ? strrchr(buf, ')') : NULL;
		if (p && (p[2] == 'S' || p[2] == 'D'))
			return true;
		usleep(5000);
	}
	return false;
}

/* The VmPin line of /proc/self/status, in kB; -1 if there is none. */
long vmpin_kb(void)
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

/* ---- zero-copy with requests: a small file system of our own ------------- */

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

int mini_next_cqe(struct mini *m, int ms, uint64_t *ud, int *res)
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
 * fd at file offset off (-1: a pipe's); submitted, not waited for.
 */
int mini_fixed_start(struct mini *m, uint8_t opcode, uint16_t idx, int fd,
		     unsigned int len, uint64_t off)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&m->c->ring);

	if (!sqe)
		return -EBUSY;
	if (opcode == IORING_OP_READ_FIXED)
		io_uring_prep_read_fixed(sqe, fd, NULL, len, off, idx);
	else
		io_uring_prep_write_fixed(sqe, fd, NULL, len, off, idx);
	sqe->user_data = UD(UD_FIXED, 0, idx);
	if (m->async_fixed)
		sqe->flags |= IOSQE_ASYNC;
	return io_uring_submit(&m->c->ring) == 1 ? 0 : -EIO;
}

/* Wait for the CQE of the fixed operation at idx; keep the others. */
int mini_fixed_wait(struct mini *m, uint16_t idx)
{
	uint64_t ud, want = UD(UD_FIXED, 0, idx);
	int ret, res;

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

/* mini_fixed_start(), then its result. */
int mini_fixed(struct mini *m, uint8_t opcode, uint16_t idx, int fd,
	       unsigned int len, uint64_t off)
{
	int ret = mini_fixed_start(m, opcode, idx, fd, len, off);

	return ret ? ret : mini_fixed_wait(m, idx);
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
void mini_serve_one(struct mini *m, uint16_t qid, uint16_t ent)
{
	struct qmem *q = &m->qs[qid];
	char *hdr = slot(q, ent);
	struct fuse_uring_ent_in_out eio;
	struct fuse_in_header ih;
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

	mini_commit(m, qid, ent, len);
}

void mini_commit(struct mini *m, uint16_t qid, uint16_t ent, int len)
{
	char *hdr = slot(&m->qs[qid], ent);
	struct fuse_uring_ent_in_out eio;
	struct fuse_in_header ih;
	struct fuse_out_header oh;
	struct fuse_uring_cmd_req req = { .qid = qid };
	struct io_uring_sqe *sqe;

	memcpy(&ih, hdr + offsetof(struct fuse_uring_req_header, in_out), sizeof(ih));
	memcpy(&eio, hdr + offsetof(struct fuse_uring_req_header, ring_ent_in_out),
	       sizeof(eio));
	oh = (struct fuse_out_header){
		.len = (uint32_t)(sizeof(oh) + (len > 0 ? len : 0)),
		.error = len < 0 ? len : 0, .unique = ih.unique,
	};
	memcpy(hdr + offsetof(struct fuse_uring_req_header, in_out), &oh, sizeof(oh));
	eio.payload_sz = len > 0 ? (uint32_t)len : 0;
	memcpy(hdr + offsetof(struct fuse_uring_req_header, ring_ent_in_out),
	       &eio, sizeof(eio));
	req.commit_id = ih.unique;
	sqe = fuse_cmd_sqe(m->c, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, &req,
			   UD(UD_COMMIT, qid, ent));
	if (sqe && m->async_commit)
		sqe->flags |= IOSQE_ASYNC;
	if (!sqe || io_uring_submit(&m->c->ring) != 1)
		mini_fail(m, "cannot submit the COMMIT_AND_FETCH");
}

void *client_thread(void *arg)
{
	struct client *cl = arg;

	cl->fn(cl);
	__atomic_store_n(&cl->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

void mnt_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", mnt, name);
}

/*
 * Answer requests until the client is done (and give up after MINI_MS).
 * 0, or -1 after failing the case.
 */
int serve_mini_ms(struct mini *m, struct client *cl, int limit_ms)
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

int serve_mini(struct mini *m, struct client *cl)
{
	return serve_mini_ms(m, cl, MINI_MS);
}
