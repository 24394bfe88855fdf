// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * tests/uapi-errors/waits.c: requests that wait for a payload buffer
 * (kernel patch 0019). A queue may have fewer payload buffers than
 * entries; a request that needs one while none is free waits in the
 * queue's list. What its cases prove:
 *   - release-passes-write-waiting-for-buffer: a request that needs no
 *     buffer (here a background RELEASE) does not wait behind one that
 *     waits for a buffer, while an entry is free for it;
 *   - cancelled-send-gives-buffer-to-waiting-write: a buffer that comes
 *     back because io_uring cancelled the send of the request that held it
 *     goes to the request that waits for it, at once;
 *   - registered-entry-takes-waiting-write: an entry registered while a
 *     request waits for one takes it at once;
 *   - flushed-release-passes-read-waiting-for-buffer: a background request
 *     that a request's end lets in goes to a free entry, while the
 *     committing entry takes another.
 * Before 0019 all of them stall: the waiting request reaches the server only when
 * the server commits something, and a server that waits for it first never
 * does.
 *
 * Every queue here has two entries and one payload buffer (two in the
 * last case), in copy mode.
 * The callers are threads pinned to CPU 0, so that their requests share
 * queue 0; the server is this thread, which holds requests by not
 * committing them, and answers the rest with serve_mini()'s file system
 * (server.c): "x" is read, "f" is written, "g" is opened and closed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE		/* gettid() */
#endif

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "cases.h"
#include "server.h"

#define ONE_BUF		1	/* payload buffers per queue */

/* Where entry 1 of queue 0 is, when waits_open() returns */
enum q0e1 {
	Q0E1_RING1,	/* on the connection's ring, like every other entry */
	Q0E1_RING2,	/* on a second ring, whose task work waits */
	Q0E1_LATER,	/* not registered: the case does it */
};
#define STALL_MS	3000	/* how long a request that can go may take */

/* One system call, made by a thread of its own pinned to CPU 0. */
struct call {
	pthread_t th;
	bool started;
	int (*fn)(struct call *);
	int fd;
	pid_t tid;
	ssize_t ret;
	int err;		/* errno, or 0 */
	volatile int done;
	char buf[IO_SIZE] __attribute__((aligned(4096)));
};

static int call_pread(struct call *k)
{
	return (int)(k->ret = pread(k->fd, k->buf, IO_SIZE, 0));
}

static int call_pwrite(struct call *k)
{
	return (int)(k->ret = pwrite(k->fd, k->buf, IO_SIZE, 0));
}

static int call_fsync(struct call *k)
{
	return (int)(k->ret = fsync(k->fd));
}

static int call_close(struct call *k)
{
	return (int)(k->ret = close(k->fd));
}

static void *call_thread(void *arg)
{
	struct call *k = arg;

	k->tid = gettid();
	k->err = pin_to_cpu(0);
	if (!k->err && k->fn(k) < 0)
		k->err = errno;
	__atomic_store_n(&k->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* 0, or -1 after failing the case */
static int call_start(const char *name, struct call *k,
		      int (*fn)(struct call *), int fd)
{
	k->fn = fn;
	k->fd = fd;
	if (pthread_create(&k->th, NULL, call_thread, k))
		return fail(name, "set-up: pthread_create");
	k->started = true;
	return 0;
}

static bool call_done(const struct call *k)
{
	return __atomic_load_n(&k->done, __ATOMIC_ACQUIRE);
}

/* Does the caller sleep in its request (within 2 s)? */
static bool call_waits(struct call *k)
{
	for (int i = 0; i < 2000 && !__atomic_load_n(&k->tid, __ATOMIC_ACQUIRE); i++)
		usleep(1000);
	return !call_done(k) && thread_sleeps(k->tid, 2000);
}

/* The case's server, its connection, and the requests it holds. */
struct waits {
	const char *name;
	struct conn c;
	struct qmem *qs;
	struct mini m;
	struct conn c2;		/* cancelled-send: the ring of entry 1 of queue 0 */
	int fd_x, fd_f, fd_g;
	int fd_xd;		/* "x" with O_DIRECT, for reads from io_uring */
	bool hold_fsync;
	struct { bool held; uint16_t qid, ent; } read, read2, fsync;
	bool hold_read2;	/* hold a second READ too */
	int releases, writes;
	uint16_t write_ent;	/* the entry the last WRITE came in */
	bool write_bad;		/* a WRITE's payload was not the caller's */
};

/* The callers write this: 'w' + i % 7, nothing the file system holds. */
static void write_pattern(char *buf)
{
	for (int i = 0; i < IO_SIZE; i++)
		buf[i] = (char)('w' + i % 7);
}

/* Answer a WRITE of the caller's IO_SIZE bytes from the payload buffer. */
static void serve_write(struct waits *w, uint16_t qid, uint16_t ent)
{
	struct qmem *q = &w->qs[qid];
	char *hdr = slot(q, ent), want[IO_SIZE];
	struct fuse_uring_ent_in_out eio;
	struct fuse_write_out wo = { 0 };
	char *buf;

	memcpy(&eio, hdr + offsetof(struct fuse_uring_req_header, ring_ent_in_out),
	       sizeof(eio));
	buf = (char *)q->iov[1].iov_base + (size_t)eio.buf_id * q->buf_size;
	write_pattern(want);
	/* the payload is the caller's data after the fuse_write_in */
	if (eio.payload_sz != IO_SIZE || memcmp(buf, want, IO_SIZE))
		w->write_bad = true;
	wo.size = eio.payload_sz;
	memcpy(buf, &wo, sizeof(wo));
	w->writes++;
	w->write_ent = ent;
	mini_commit(&w->m, qid, ent, sizeof(wo));
}

/* One request from the ring: hold it, or answer it. */
static void serve_one(struct waits *w, uint16_t qid, uint16_t ent)
{
	const char *hdr = slot(&w->qs[qid], ent);
	struct fuse_in_header ih;

	memcpy(&ih, hdr + offsetof(struct fuse_uring_req_header, in_out), sizeof(ih));
	if (ih.opcode == FUSE_READ && !w->read.held) {
		w->read.held = true;
		w->read.qid = qid;
		w->read.ent = ent;
	} else if (ih.opcode == FUSE_READ && w->hold_read2 && !w->read2.held) {
		w->read2.held = true;
		w->read2.qid = qid;
		w->read2.ent = ent;
	} else if (ih.opcode == FUSE_FSYNC && w->hold_fsync && !w->fsync.held) {
		w->fsync.held = true;
		w->fsync.qid = qid;
		w->fsync.ent = ent;
	} else if (ih.opcode == FUSE_WRITE) {
		serve_write(w, qid, ent);
	} else {
		w->releases += ih.opcode == FUSE_RELEASE;
		mini_serve_one(&w->m, qid, ent);	/* FSYNC: -ENOSYS */
	}
}

/* Serve for up to ms, or until stop(w) holds. */
static void serve_for(struct waits *w, int ms, bool (*stop)(struct waits *))
{
	uint64_t ud;
	int res;

	for (int t = 0; t < ms && !(stop && stop(w)); t += 50) {
		if (mini_next_cqe(&w->m, 50, &ud, &res))
			continue;
		if (res < 0 || UD_QID(ud) >= nr_queues ||
		    (UD_KIND(ud) != UD_COMMIT && UD_KIND(ud) != UD_REGISTER)) {
			printf("# command kind %u q=%u ent=%u ended with %d\n",
			       UD_KIND(ud), UD_QID(ud), UD_ENT(ud), res);
			continue;
		}
		serve_one(w, UD_QID(ud), UD_ENT(ud));
	}
}

static struct call *calls_of_case;	/* what all_returned() looks at */
static int ncalls_of_case;

static bool all_returned(struct waits *w)
{
	(void)w;
	for (int i = 0; i < ncalls_of_case; i++)
		if (calls_of_case[i].started && !call_done(&calls_of_case[i]))
			return false;
	return true;
}

static bool read_held(struct waits *w) { return w->read.held; }
static bool read2_held(struct waits *w) { return w->read2.held; }
static bool fsync_held(struct waits *w) { return w->fsync.held; }
static bool released(struct waits *w) { return w->releases > 0; }
static bool written(struct waits *w) { return w->writes > 0; }

static struct client *opener;
static struct waits *opening;	/* the case whose files client_open() opens */

/* Open "x", "f" and "g" (LOOKUP, OPEN: served by serve_mini()) */
static void client_open(struct client *cl)
{
	struct waits *w = opening;
	char path[256];

	mnt_path(path, sizeof(path), "x");
	w->fd_x = open(path, O_RDONLY);
	mnt_path(path, sizeof(path), "f");
	w->fd_f = open(path, O_WRONLY);
	mnt_path(path, sizeof(path), "g");
	w->fd_g = open(path, O_RDONLY);
	mnt_path(path, sizeof(path), "x");
	w->fd_xd = open(path, O_RDONLY | O_DIRECT);
	cl->open_err = w->fd_x < 0 || w->fd_f < 0 || w->fd_g < 0 ||
		       w->fd_xd < 0 ? errno : 0;
}

/*
 * A connection whose queues have two entries and nbufs buffers each.
 * Entry 1 of queue 0 is where e1 says. On Q0E1_RING2 it is registered
 * from a second ring (with IORING_SETUP_DEFER_TASKRUN: a request sent to
 * it waits in the ring's task work until this thread waits on that ring,
 * which it never does) before entry 0, so that entry 0 is the one queue 0
 * hands requests to first. Then the three files are opened. 0, or -1
 * after failing the case.
 */
static int waits_open(const char *name, struct waits *w, enum q0e1 e1,
		      unsigned int nbufs, enum init_mode init)
{
	bool ring2 = e1 == Q0E1_RING2;

	unsigned int q;
	uint16_t ent;
	int err;

	memset(w, 0, sizeof(*w));
	w->name = name;
	w->c.fd = w->c2.fd = w->fd_x = w->fd_f = w->fd_g = w->fd_xd = -1;
	w->qs = calloc(nr_queues, sizeof(*w->qs));
	opener = aligned_alloc(4096, sizeof(*opener));
	if (!w->qs || !opener)
		return fail(name, "set-up: out of memory");
	w->m = (struct mini){ .name = name, .c = &w->c, .qs = w->qs,
			      .rw = RW_COPY, .memfd = -1 };
	for (q = 0; q < nr_queues; q++)
		if (qmem_alloc(name, &w->qs[q], DEPTH, max_payload,
			       nbufs * (size_t)max_payload))
			return -1;
	if (conn_open_init(&w->c, name, init))
		return -1;
	if (ring2) {
		struct reg r = reg_bufring(0, 1, &w->qs[0]);

		err = io_uring_queue_init(16, &w->c2.ring, IORING_SETUP_SQE128 |
					  IORING_SETUP_SINGLE_ISSUER |
					  IORING_SETUP_DEFER_TASKRUN);
		if (err)
			return fail(name, "set-up: io_uring_queue_init(DEFER_TASKRUN): %s",
				    strerror(-err));
		w->c2.ring_up = true;
		w->c2.fd = w->c.fd;	/* the connection's, closed with w->c */
		if (setup_register(name, &w->c2, &r))
			return -1;
	}
	for (q = 0; q < nr_queues; q++) {
		for (ent = 0; ent < DEPTH; ent++) {
			struct reg r = reg_bufring((uint16_t)q, ent, &w->qs[q]);

			if (e1 != Q0E1_RING1 && q == 0 && ent == 1)
				continue;
			if (setup_register(name, &w->c, &r))
				return -1;
		}
	}
	memset(opener, 0, sizeof(*opener));
	opener->fn = client_open;
	opening = w;
	if (serve_mini(&w->m, opener))
		return -1;
	if (opener->open_err)
		return fail(name, "set-up: open: %s", strerror(opener->open_err));
	return 0;
}

/*
 * The end of a case: abort the connection, which ends the requests of
 * callers that still wait and makes the closes below send nothing; join
 * the callers; close what is open.
 */
static void waits_close(struct waits *w, struct call *calls, int n)
{
	if (w->c.mounted)
		umount2(mnt, MNT_FORCE);
	for (int i = 0; i < n; i++)
		if (calls[i].started)
			pthread_join(calls[i].th, NULL);
	if (w->fd_x >= 0)
		close(w->fd_x);
	if (w->fd_f >= 0)
		close(w->fd_f);
	if (w->fd_g >= 0)
		close(w->fd_g);
	if (w->fd_xd >= 0)
		close(w->fd_xd);
	if (w->c2.ring_up)
		io_uring_queue_exit(&w->c2.ring);
	conn_close(&w->c);
	if (w->qs)
		qs_free(w->qs);
	free(opener);
	opener = NULL;
}

/*
 * The server holds a READ, which has queue 0's one buffer; a WRITE waits
 * for that buffer while entry 1 is free; then a caller closes "g". Its
 * FLUSH goes at once (a foreground request that finds a free entry), its
 * RELEASE is a background request, queued after the WRITE. It needs no
 * buffer, and must reach the server while the READ is still held. Before
 * 0019 it waited behind the WRITE (fuse_uring_queue_bq_req() looked at the
 * oldest request only) until the READ was committed.
 */
void case_release_passes_write_waiting_for_buffer(const char *name)
{
	static struct call calls[3];
	struct call *rd = &calls[0], *wr = &calls[1], *cl = &calls[2];
	struct waits w;
	bool release_first = false;

	memset(calls, 0, sizeof(calls));
	if (waits_open(name, &w, Q0E1_RING1, ONE_BUF, INIT_URING))
		goto out;
	if (call_start(name, rd, call_pread, w.fd_x))
		goto out;
	serve_for(&w, REQUEST_MS, read_held);
	if (!w.read.held || w.read.qid != 0) {
		fail(name, "set-up: no READ on queue 0 reached the server (pinned "
		     "to CPU 0: %s)", rd->err ? strerror(rd->err) : "yes");
		goto out;
	}
	write_pattern(wr->buf);
	if (call_start(name, wr, call_pwrite, w.fd_f))
		goto out;
	if (!call_waits(wr)) {
		fail(name, "set-up: the writer does not wait (%s)",
		     wr->err ? strerror(wr->err) : "it returned");
		goto out;
	}
	serve_for(&w, 300, written);
	if (w.writes) {
		fail(name, "the WRITE reached the server while the READ held "
		     "queue 0's only buffer");
		goto out;
	}
	cl->fd = w.fd_g;
	w.fd_g = -1;
	if (call_start(name, cl, call_close, cl->fd))
		goto out;
	serve_for(&w, STALL_MS, released);
	release_first = w.releases > 0;

	/* now the READ: the WRITE gets its buffer, all three callers return */
	mini_serve_one(&w.m, w.read.qid, w.read.ent);
	calls_of_case = calls;
	ncalls_of_case = 3;
	serve_for(&w, REQUEST_MS, all_returned);
	if (!release_first)
		fail(name, "the RELEASE of \"g\" reached the server %s %d ms, "
		     "while the held READ had the only buffer and a WRITE waited "
		     "for it: it waited behind the WRITE with entry 1 free",
		     w.releases ? "only after the READ was committed, not within" :
		     "neither within", STALL_MS);
	else if (!w.writes || w.write_bad || wr->ret != IO_SIZE || rd->err ||
		 rd->ret != (ssize_t)strlen(SCRIPT) ||
		 memcmp(rd->buf, SCRIPT, strlen(SCRIPT)) || cl->ret || cl->err)
		fail(name, "after the READ was committed: WRITE %s (%s), write(2) "
		     "gave %zd (%s), read(2) gave %zd (%s), close(2) gave %zd",
		     w.writes ? "served" : "never came",
		     w.write_bad ? "not the caller's bytes" : "data as written",
		     wr->ret, strerror(wr->err), rd->ret, strerror(rd->err),
		     cl->ret);
	else {
		printf("# queue 0, 2 entries, 1 buffer: the server held a READ, a "
		       "WRITE waited for the buffer; close(2)'s RELEASE reached the "
		       "server with the READ held; then the READ gave \"x\" and the "
		       "WRITE's %d bytes arrived as written\n", IO_SIZE);
		pass(name);
	}
out:
	waits_close(&w, calls, 3);
}

/*
 * Entry 1 of queue 0 is on a second ring whose task work waits (DEFER_TASKRUN).
 * The server holds an FSYNC of "g" on entry 0 (it needs no buffer; of "g",
 * as fsync(2) holds its file's inode lock, which write(2) of "f" would
 * otherwise wait for); a READ goes to
 * entry 1, takes queue 0's only buffer, and waits in ring2's task work; a
 * WRITE waits, for an entry and then for the buffer, as the FSYNC is
 * answered. Closing ring2 cancels the READ's send (fuse_uring_send_in_task()
 * with tw.cancel): the READ fails with ECANCELED and its buffer comes back,
 * and the WRITE must take it on entry 0 at once. Before 0019 it waited
 * until some entry committed, and the server had nothing left to commit.
 */
void case_cancelled_send_gives_buffer_to_waiting_write(const char *name)
{
	static struct call calls[3];
	struct call *fs = &calls[0], *rd = &calls[1], *wr = &calls[2];
	struct waits w;

	memset(calls, 0, sizeof(calls));
	if (waits_open(name, &w, Q0E1_RING2, ONE_BUF, INIT_URING))
		goto out;
	w.hold_fsync = true;
	if (call_start(name, fs, call_fsync, w.fd_g))
		goto out;
	serve_for(&w, REQUEST_MS, fsync_held);
	if (!w.fsync.held || w.fsync.qid != 0 || w.fsync.ent != 0) {
		fail(name, "set-up: no FSYNC reached entry 0 of queue 0 (%s)",
		     w.fsync.held ? "another entry" : "none");
		goto out;
	}
	if (call_start(name, rd, call_pread, w.fd_x))
		goto out;
	if (!call_waits(rd)) {
		fail(name, "set-up: the reader does not wait (%s)",
		     rd->err ? strerror(rd->err) : "it returned");
		goto out;
	}
	write_pattern(wr->buf);
	if (call_start(name, wr, call_pwrite, w.fd_f) || !call_waits(wr)) {
		fail(name, "set-up: the writer does not wait");
		goto out;
	}
	mini_serve_one(&w.m, w.fsync.qid, w.fsync.ent);
	serve_for(&w, 300, written);
	if (w.read.held || w.writes) {
		fail(name, "set-up: the %s reached ring 1 while the READ should "
		     "hold the buffer on ring 2", w.read.held ? "READ" : "WRITE");
		goto out;
	}
	/* the READ's send is cancelled; its buffer comes back */
	io_uring_queue_exit(&w.c2.ring);
	w.c2.ring_up = false;
	serve_for(&w, STALL_MS, written);
	calls_of_case = calls;
	ncalls_of_case = 3;
	serve_for(&w, REQUEST_MS, all_returned);
	if (!w.writes)
		fail(name, "the WRITE did not reach the server within %d ms after "
		     "closing ring 2 cancelled the READ's send and gave back the "
		     "only buffer, with entry 0 free", STALL_MS);
	else if (w.write_bad || wr->ret != IO_SIZE || !call_done(rd) ||
		 rd->err != ECANCELED || fs->ret || fs->err)
		fail(name, "WRITE %s, write(2) gave %zd (%s); read(2): expected "
		     "ECANCELED, got %s; fsync(2) gave %zd (%s)",
		     w.write_bad ? "not the caller's bytes" : "as written",
		     wr->ret, strerror(wr->err),
		     call_done(rd) ? (rd->err ? strerror(rd->err) : "success") :
		     "still waiting", fs->ret, strerror(fs->err));
	else {
		printf("# queue 0, 2 entries, 1 buffer: closing ring 2 cancelled the "
		       "send of the READ that held the buffer (read(2): ECANCELED); "
		       "the waiting WRITE then took it on entry 0, its %d bytes as "
		       "written\n", IO_SIZE);
		pass(name);
	}
out:
	waits_close(&w, calls, 3);
}

/*
 * An entry registered while a request waits for one: queue 0 has only
 * entry 0 when the server holds a READ on it; a WRITE finds no entry and
 * waits. Then entry 1 is registered, and the WRITE must come in it at
 * once (two buffers: one is free for it). Before 0019 a REGISTER only
 * made the entry available: the WRITE waited for the READ's commit.
 */
void case_registered_entry_takes_waiting_write(const char *name)
{
	static struct call calls[2];
	struct call *rd = &calls[0], *wr = &calls[1];
	struct reg r;
	struct waits w;

	memset(calls, 0, sizeof(calls));
	if (waits_open(name, &w, Q0E1_LATER, 2, INIT_URING))
		goto out;
	if (call_start(name, rd, call_pread, w.fd_x))
		goto out;
	serve_for(&w, REQUEST_MS, read_held);
	if (!w.read.held || w.read.qid != 0) {
		fail(name, "set-up: no READ on queue 0 reached the server");
		goto out;
	}
	write_pattern(wr->buf);
	if (call_start(name, wr, call_pwrite, w.fd_f) || !call_waits(wr)) {
		fail(name, "set-up: the writer does not wait");
		goto out;
	}
	serve_for(&w, 300, written);
	if (w.writes) {
		fail(name, "set-up: the WRITE reached the server with no entry free");
		goto out;
	}
	/* its CQE is the entry's first request: serve_for() takes it */
	r = reg_bufring(0, 1, &w.qs[0]);
	if (!register_sqe(&w.c, &r) || io_uring_submit(&w.c.ring) != 1) {
		fail(name, "set-up: cannot submit the REGISTER of entry 1");
		goto out;
	}
	serve_for(&w, STALL_MS, written);
	if (!w.writes)
		fail(name, "the WRITE did not reach the server within %d ms after "
		     "entry 1 of queue 0 was registered, with the READ held on "
		     "entry 0 and a buffer free", STALL_MS);
	else if (w.write_ent != 1 || w.write_bad)
		fail(name, "the WRITE came in entry %u (%s), expected entry 1",
		     w.write_ent, w.write_bad ? "not as written" : "as written");
	else {
		mini_serve_one(&w.m, w.read.qid, w.read.ent);
		calls_of_case = calls;
		ncalls_of_case = 2;
		serve_for(&w, REQUEST_MS, all_returned);
		if (wr->ret != IO_SIZE || rd->ret != (ssize_t)strlen(SCRIPT) ||
		    memcmp(rd->buf, SCRIPT, strlen(SCRIPT)))
			fail(name, "write(2) gave %zd (%s), read(2) gave %zd (%s)",
			     wr->ret, strerror(wr->err), rd->ret,
			     strerror(rd->err));
		else {
			printf("# queue 0 with entry 0 only: the server held a READ, "
			       "a WRITE waited for an entry; registering entry 1 "
			       "sent it the WRITE at once, its %d bytes as "
			       "written\n", IO_SIZE);
			pass(name);
		}
	}
out:
	waits_close(&w, calls, 2);
}

/*
 * Background requests let in by a request's end, while the committing
 * entry takes another one. Direct reads submitted with io_uring are
 * background requests (FUSE_ASYNC_DIO), and max_background is 2. Queue 0
 * has two entries and one buffer: READ A takes an entry and the buffer,
 * READ B waits for the buffer with entry Y free, and the RELEASE of a
 * closed file stays in the background list (two are active). The server
 * commits A: its end lets the RELEASE into the queue behind B, and A's
 * entry keeps the buffer for B. The RELEASE must then go to Y while the
 * server holds B. Before 0019 sent waiting requests after a commit, only
 * the committing entry fetched, and the RELEASE waited for B's commit.
 */
struct aio_reads {
	struct waits *w;
	int res[2];
	char buf[2][IO_SIZE] __attribute__((aligned(4096)));
	int err;
	volatile int done;
};

static void *aio_reads_thread(void *arg)
{
	struct aio_reads *a = arg;
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	cpu_set_t cpu0;
	int i;

	a->res[0] = a->res[1] = -EINPROGRESS;
	CPU_ZERO(&cpu0);
	CPU_SET(0, &cpu0);
	a->err = pin_to_cpu(0);
	if (!a->err)
		a->err = -io_uring_queue_init(4, &ring, 0);
	if (a->err)
		goto out;
	/* io-wq issues the reads: on CPU 0 too, so that they go to queue 0 */
	io_uring_register_iowq_aff(&ring, sizeof(cpu0), &cpu0);
	for (i = 0; i < 2; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

		io_uring_prep_read(sqe, a->w->fd_xd, a->buf[i], IO_SIZE, 0);
		sqe->user_data = (uint64_t)i;
	}
	io_uring_submit(&ring);
	for (i = 0; i < 2 && !io_uring_wait_cqe(&ring, &cqe); i++) {
		a->res[cqe->user_data & 1] = cqe->res;
		io_uring_cqe_seen(&ring, cqe);
	}
	io_uring_queue_exit(&ring);
out:
	__atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static struct aio_reads aio;

static bool aio_done(struct waits *w)
{
	(void)w;
	return __atomic_load_n(&aio.done, __ATOMIC_ACQUIRE);
}

void case_flushed_release_passes_read_waiting_for_buffer(const char *name)
{
	static struct call calls[1];
	struct aio_reads *ap = &aio;
	struct call *cl = &calls[0];
	pthread_t th;
	bool th_up = false, release_first = false;
	struct waits w;

	memset(calls, 0, sizeof(calls));
	memset(ap, 0, sizeof(*ap));
	if (waits_open(name, &w, Q0E1_RING1, ONE_BUF, INIT_URING_ASYNC_DIO))
		goto out;
	w.hold_read2 = true;
	ap->w = &w;
	if (pthread_create(&th, NULL, aio_reads_thread, ap)) {
		fail(name, "set-up: pthread_create");
		goto out;
	}
	th_up = true;
	serve_for(&w, REQUEST_MS, read_held);
	if (!w.read.held || w.read.qid != 0) {
		fail(name, "set-up: no READ on queue 0 reached the server (%s)",
		     ap->err ? strerror(ap->err) : "the reads were submitted");
		goto out;
	}
	/* the second READ waits for the buffer; it cannot be seen */
	serve_for(&w, 500, NULL);
	if (w.read2.held) {
		fail(name, "set-up: the second READ reached the server while the "
		     "first held the only buffer");
		goto out;
	}
	cl->fd = w.fd_g;
	w.fd_g = -1;
	if (call_start(name, cl, call_close, cl->fd))
		goto out;
	/* the FLUSH is answered; the RELEASE stays in the background list */
	serve_for(&w, 500, NULL);
	if (w.releases) {
		fail(name, "set-up: the RELEASE reached the server while two "
		     "background READs were active (max_background 2)");
		goto out;
	}
	/* A's end lets the RELEASE in; A's entry takes B with the buffer */
	mini_serve_one(&w.m, w.read.qid, w.read.ent);
	serve_for(&w, REQUEST_MS, read2_held);
	if (!w.read2.held) {
		fail(name, "set-up: the second READ did not reach the server after "
		     "the first was committed");
		goto out;
	}
	serve_for(&w, STALL_MS, released);
	release_first = w.releases > 0;
	mini_serve_one(&w.m, w.read2.qid, w.read2.ent);
	calls_of_case = calls;
	ncalls_of_case = 1;
	serve_for(&w, REQUEST_MS, released);
	serve_for(&w, REQUEST_MS, all_returned);
	serve_for(&w, REQUEST_MS, aio_done);
	if (!release_first)
		fail(name, "the RELEASE of \"g\" did not reach the server within %d "
		     "ms after the first READ's commit let it in, while the server "
		     "held the second READ and entry %u was free%s", STALL_MS,
		     w.read2.ent ^ 1, w.releases ? " (it came after the second "
		     "READ's commit)" : "");
	else if (ap->res[0] != (int)strlen(SCRIPT) || ap->res[1] != (int)strlen(SCRIPT) ||
		 memcmp(ap->buf[0], SCRIPT, strlen(SCRIPT)) ||
		 memcmp(ap->buf[1], SCRIPT, strlen(SCRIPT)) || cl->ret || cl->err)
		fail(name, "the reads gave %d and %d (expected %zu, \"x\"), "
		     "close(2) gave %zd", ap->res[0], ap->res[1], strlen(SCRIPT),
		     cl->ret);
	else {
		printf("# queue 0, 2 entries, 1 buffer, max_background 2: the first "
		       "READ's commit let the RELEASE in while its entry took the "
		       "second READ; the RELEASE reached the server on the other "
		       "entry with the second READ held; both reads gave \"x\"\n");
		pass(name);
	}
out:
	if (th_up) {
		if (!__atomic_load_n(&ap->done, __ATOMIC_ACQUIRE))
			umount2(mnt, MNT_FORCE);
		pthread_join(th, NULL);
	}
	waits_close(&w, calls, 1);
}
