// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * ring.c: the io_uring side, as stock Linux 7.2 has it. One queue per
 * possible CPU, each a thread pinned to its CPU with its own SQE128 ring
 * (created as --ring-setup says: ring-setup.c) and entries; every entry is
 * handed over once with FUSE_IO_URING_CMD_REGISTER and then loops on
 * FUSE_IO_URING_CMD_COMMIT_AND_FETCH (reply to one request, get the next).
 *
 * What a mode changes is behind s->ops (struct srv_mode_ops): iovec.c,
 * bufring.c, zero-copy.c and pool.c. This file names none of them.
 */
#include "fuse-uring.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- how many queues: the kernel's num_possible_cpus() ---------------- */

/*
 * Count a CPU list such as "0-3,8,10-11" (sysfs format). The kernel makes
 * one queue per possible CPU, not per online one, and only switches a
 * connection to io_uring once every queue has an entry: a queue we skip
 * (say for a CPU that is offline now) leaves the mount waiting forever.
 */
static int cpu_list_count(const char *s)
{
	int count = 0;

	while (*s && *s != '\n') {
		char *end;
		long lo = strtol(s, &end, 10), hi = lo;

		if (end == s || lo < 0)
			return -EINVAL;
		s = end;
		if (*s == '-') {
			hi = strtol(s + 1, &end, 10);
			if (end == s + 1 || hi < lo)
				return -EINVAL;
			s = end;
		}
		count += (int)(hi - lo + 1);
		if (*s == ',')
			s++;
		else if (*s && *s != '\n')
			return -EINVAL;
	}
	return count ? count : -EINVAL;
}

int ring_count_possible_cpus(void)
{
	char buf[256] = "";
	ssize_t n;
	int fd;

	fd = open("/sys/devices/system/cpu/possible", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	return cpu_list_count(buf);
}

/* ---- building a queue (in its own thread, before FUSE_INIT) ----------- */

/* doc: queue-setup-begin */
/*
 * Run on the queue's CPU: the kernel picks the queue of the CPU the
 * *calling* task runs on, so its thread there keeps the request's data in
 * that CPU's cache. A possible CPU may be offline: then run unpinned, the
 * queue must exist anyway.
 */
static void queue_pin(struct srv_queue *q)
{
	char name[16];
	cpu_set_t set;

	/* "fuse-uring-q1" in ps -L and top -H */
	snprintf(name, sizeof(name), "fuse-uring-q%u", q->qid);
	pthread_setname_np(pthread_self(), name);
	CPU_ZERO(&set);
	CPU_SET(q->qid, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) &&
	    q->s->opts->trace)
		fprintf(stderr, "trace ring q=%u not pinned (CPU offline?)\n",
			q->qid);
}

/* doc: pinned-regions-begin */
/*
 * A region of queue memory: an anonymous mapping of its own, so it starts
 * on a page boundary, which the kernel requires of a region it pins
 * (-EINVAL otherwise), and shares no page with any other memory of ours.
 * The kernel pins the pages of what the queue uses of it, charges them to
 * our RLIMIT_MEMLOCK (see preflight.c) and keeps them until the connection
 * ends: keep the mapping where it is until then, since what is later mapped
 * at the same address is not what the kernel writes to.
 */
static void *region_map(size_t len)
{
	/*
	 * exercise 03.1 begin: a region the kernel can pin
	 * hint: the kernel pins whole pages, and refuses a region that
	 *       does not start on a page boundary (EINVAL). malloc() gives
	 *       no such promise; an anonymous mapping of its own, readable
	 *       and writable, does, and shares no page with other memory.
	 *       Return NULL if there is no memory.
	 * read: docs/pinned.rst, "Errors: what REGISTER refuses"
	 * stub: (void)len;
	 * stub: return NULL;
	 */
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
	/* exercise 03.1 end */
}
/* doc: pinned-regions-end */

/*
 * Memory and ring, all of which can fail, so it happens before the INIT
 * reply promises io_uring: failing after it leaves a mount that waits for
 * entries that never come. The thread touches its buffers first, so they
 * come from its CPU's NUMA node.
 */
static int queue_setup(struct srv_queue *q, const char **what)
{
	struct srv_session *s = q->s;
	const struct srv_opts *o = s->opts;
	size_t depth = o->queue_depth;
	int err;

	/*
	 * One header slot per entry and payload buffers, each kind in one
	 * region per queue: depth buffers in iovec mode (one per entry),
	 * --nbufs with a buffer ring (lent per request). The mode says what
	 * each entry's REGISTER names (ent_init).
	 */
	*what = "allocate queue memory";
	q->headers_size = depth * sizeof(struct fuse_uring_req_header);
	q->headers_map_size = page_round_up(q->headers_size,
					    (size_t)s->page_size);
	q->payload_mem_size = opts_queue_payload_bytes(o);
	q->headers_mem = region_map(q->headers_map_size);
	q->payload_mem = region_map(q->payload_mem_size);
	q->ents = calloc(depth, sizeof(*q->ents));
	if (!q->headers_mem || !q->payload_mem || !q->ents)
		return -ENOMEM;
	/* zero already; touch every page here, on the queue's CPU */
	memset(q->headers_mem, 0, q->headers_map_size);
	memset(q->payload_mem, 0, q->payload_mem_size);

	for (unsigned int i = 0; i < depth; i++) {
		struct srv_ent *ent = &q->ents[i];

		ent->queue = q;
		ent->id = i;
		ent->header = (struct fuse_uring_req_header *)q->headers_mem + i;
		s->ops->ent_init(ent);
	}

	/*
	 * two SQEs per entry plus the stop poll: the SQ never overflows.
	 * SQE128 and what --ring-setup adds (ring-setup.c)
	 */
	err = ring_setup_init(q, 2 * (unsigned int)depth + 1, what);
	if (err)
		return err;
	q->ring_ready = true;
	return s->ops->ring_init ? s->ops->ring_init(q, what) : 0;
}
/* doc: queue-setup-end */

/* ---- the start-up hand-shake with main() ------------------------------ */

/* Count one queue as done with a step; keep the first real error. */
static void report(struct srv_queue *q, unsigned int *counter, int err,
		   const char *what)
{
	struct srv_session *s = q->s;

	pthread_mutex_lock(&s->lock);
	/* -EOPNOTSUPP follows any REGISTER failure; prefer the cause */
	if (err && (!s->setup_err || s->setup_err == -EOPNOTSUPP)) {
		s->setup_err = err;
		s->setup_err_what = what;
	}
	(*counter)++;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

static bool wait_for_go(struct srv_session *s)
{
	bool go;

	pthread_mutex_lock(&s->lock);
	while (!s->go && !s->abort_start)
		pthread_cond_wait(&s->cond, &s->lock);
	go = s->go && !s->abort_start;
	pthread_mutex_unlock(&s->lock);
	return go;
}

static int wait_all(struct srv_session *s, unsigned int *counter)
{
	int err;

	pthread_mutex_lock(&s->lock);
	while (*counter < s->nr_queues)
		pthread_cond_wait(&s->cond, &s->lock);
	err = s->setup_err;
	pthread_mutex_unlock(&s->lock);
	return err;
}

/* ---- serving requests ------------------------------------------------- */

static void ent_dead(struct srv_ent *ent, int res)
{
	struct srv_queue *q = ent->queue;

	q->live_ents--;
	if (q->registering) {
		if (!q->reg_err)
			q->reg_err = res;	/* main reports it, once */
		return;
	}
	/* -ENOTCONN is the normal end: unmount or abort tears entries down */
	if (res != -ENOTCONN || q->s->opts->trace)
		fprintf(stderr, SRV_NAME ": queue %u entry %u: %s: %s\n",
			q->qid, ent->id, cmd_name(ent->last_cmd),
			strerror(-res));
}

/*
 * Stop the whole server from a queue thread: main's signalfd takes the
 * SIGTERM, unmounts and tears down; s->failed makes it exit 1.
 */
static void queue_fail(struct srv_ent *ent, const char *why)
{
	struct srv_queue *q = ent->queue;

	fprintf(stderr, SRV_NAME ": queue %u entry %u: %s; stopping\n",
		q->qid, ent->id, why);
	q->live_ents--;	/* never committed: its request dies with us */
	pthread_mutex_lock(&q->s->lock);
	q->s->failed = true;
	pthread_mutex_unlock(&q->s->lock);
	kill(getpid(), SIGTERM);
}

/* doc: loop-begin */
/*
 * A CQE with res 0 means the kernel put a request in this entry: the
 * header slot holds fuse_in_header, op header and ent_in_out, the payload
 * buffer the rest. Handle it, write the reply into the same buffers, and
 * queue COMMIT_AND_FETCH naming it by commit_id.
 */
static void handle_request(struct srv_ent *ent)
{
	struct srv_queue *q = ent->queue;
	const struct srv_mode_ops *ops = q->s->ops;
	struct fuse_uring_req_header *h = ent->header;
	const struct fuse_in_header *in = (const void *)h->in_out;
	struct srv_req r = { 0 };
	int err;

	/* the reply overwrites in_out and payload_sz: keep what we need */
	ent->req = (struct srv_ent_req){
		.unique = in->unique,
		.commit_id = h->ring_ent_in_out.commit_id,
		.opcode = in->opcode,
		.payload_sz = h->ring_ent_in_out.payload_sz,
		.buf = -1,
	};
	/*
	 * The kernel never sends unique 0 over the ring: an empty slot means
	 * it wrote the request elsewhere, to a slot the server did not give
	 * this entry.
	 */
	if (ent->req.unique == 0) {
		queue_fail(ent, "its header slot is empty");
		return;
	}
	err = ops->find_payload(ent) ? -EIO : 0;
	if (!err)
		err = parse_ring_request(h, ent->req.payload,
					 ent->req.payload ?
					 q->s->opts->payload_size : 0, &r);
	ent->req.arg_len = r.arg_len;
	/* a mode may serve the request itself and commit later */
	if (!err && ops->take_request && ops->take_request(ent, &r, &err))
		return;
	if (!err)
		err = srv_dispatch(&r);
	if (!err && ops->reply_ready)
		ops->reply_ready(ent, &r);
	if (q->s->opts->trace)
		trace_ring(ent, r.out_len, err);
	build_ring_reply(h, ent->req.unique, err, err ? 0 : r.out_len);
	prep_fuse_cmd(queue_sqe(q), ent, FUSE_IO_URING_CMD_COMMIT_AND_FETCH,
		      ent->req.commit_id);
}

/* Handle every CQE that is there; false once the stop eventfd fired. */
static bool handle_cqes(struct srv_queue *q)
{
	struct io_uring_cqe *cqe;
	unsigned int head, n = 0;
	bool run = true;

	io_uring_for_each_cqe(&q->ring, head, cqe) {
		uint64_t ud = cqe->user_data;
		struct srv_ent *ent = (void *)(uintptr_t)(ud & ~UD_MODE_IO);

		n++;
		if (ud == UD_STOP)
			run = false;
		else if (ud & UD_MODE_IO)	/* res: the mode's to read */
			q->s->ops->mode_io_done(ent, cqe->res);
		else if (cqe->res < 0)
			ent_dead(ent, cqe->res);
		else
			handle_request(ent);
	}
	io_uring_cq_advance(&q->ring, n);
	return run;
}
/* doc: loop-end */

/* doc: register-begin */
/*
 * REGISTER every entry, plus a poll on the stop eventfd, in one submit.
 * REGISTER is only sent after the INIT reply (before it: -EAGAIN). A
 * refused REGISTER completes during the submit itself; an accepted one
 * stays queued until the kernel has a request, so peeking right after the
 * submit tells which it was.
 */
static int queue_register(struct srv_queue *q, const char **what)
{
	struct io_uring_sqe *sqe;
	int ret;

	/* a mode's commands for the whole queue first (7.3's pool) */
	if (q->s->ops->queue_add) {
		ret = q->s->ops->queue_add(q, what);
		if (ret)
			return ret;
	}
	*what = "FUSE_IO_URING_CMD_REGISTER";
	for (unsigned int i = 0; i < q->s->opts->queue_depth; i++) {
		sqe = queue_sqe(q);
		prep_fuse_cmd(sqe, &q->ents[i], FUSE_IO_URING_CMD_REGISTER, 0);
		if (q->s->ops->prep_register)
			q->s->ops->prep_register(sqe, &q->ents[i]);
	}
	q->live_ents = q->s->opts->queue_depth;
	sqe = queue_sqe(q);
	io_uring_prep_poll_add(sqe, q->stop_efd, POLLIN);
	io_uring_sqe_set_data64(sqe, UD_STOP);

	/* --ring-setup=sqpoll: returns once its thread took every SQE */
	ret = ring_setup_submit(q);
	if (ret < 0)
		return ret;
	q->registering = true;
	handle_cqes(q);
	q->registering = false;
	return q->reg_err;
}
/* doc: register-end */

/* doc: wait-begin */
/* Wait, handle, commit: the whole server, once it runs. */
static void queue_loop(struct srv_queue *q)
{
	bool run = true;
	int ret;

	while (run && q->live_ents > 0) {
		/* submits the COMMIT_AND_FETCHes queued by the last batch */
		ret = io_uring_submit_and_wait(&q->ring, 1);
		if (ret < 0 && ret != -EINTR) {
			fprintf(stderr, SRV_NAME ": queue %u: "
				"io_uring_submit_and_wait: %s\n", q->qid,
				strerror(-ret));
			break;
		}
		run = handle_cqes(q);
	}
}
/* doc: wait-end */

static void *queue_thread(void *arg)
{
	struct srv_queue *q = arg;
	struct srv_session *s = q->s;
	const char *what;
	int err;

	queue_pin(q);
	err = queue_setup(q, &what);
	report(q, &s->nr_built, err, what);
	if (err || !wait_for_go(s))
		goto out;

	err = queue_register(q, &what);
	/* the entries the kernel kept (its queue exists, in this mode) */
	pthread_mutex_lock(&s->lock);
	s->nr_accepted += q->live_ents;
	pthread_mutex_unlock(&s->lock);
	/* what entry 0's REGISTER named: its own buffers, or the regions */
	if (!err && s->opts->trace)
		fprintf(stderr, "trace ring q=%u registered %u entries (mode %s, "
			"flags %#llx: iov[0] %zu B, iov[1] %zu B)\n", q->qid,
			s->opts->queue_depth, mode_name(s->opts->mode),
			(unsigned long long)mode_register_flags(s->opts->mode),
			q->ents[0].iov[0].iov_len, q->ents[0].iov[1].iov_len);
	report(q, &s->nr_registered, err, what);
	if (err)
		goto out;
	queue_loop(q);
out:
	/* cancels what is still queued: the kernel drops those entries */
	if (q->ring_ready)
		io_uring_queue_exit(&q->ring);
	q->ring_ready = false;
	return NULL;
}

/* ---- what main() calls ------------------------------------------------ */

/* Start one thread per possible CPU and wait until each built its ring. */
int ring_start_queues(struct srv_session *s)
{
	int n = ring_count_possible_cpus(), err;

	s->ops = mode_ops(s->opts->mode);

	if (n < 0) {
		fprintf(stderr, SRV_NAME ": /sys/devices/system/cpu/possible: "
			"%s\n", strerror(-n));
		return n;
	}
	s->nr_queues = (unsigned int)n;
	s->queues = calloc(s->nr_queues, sizeof(*s->queues));
	if (!s->queues)
		return -ENOMEM;
	for (unsigned int i = 0; i < s->nr_queues; i++)
		s->queues[i].stop_efd = -1;
	for (unsigned int i = 0; i < s->nr_queues; i++) {
		struct srv_queue *q = &s->queues[i];

		q->s = s;
		q->qid = i;
		q->stop_efd = eventfd(0, EFD_CLOEXEC);
		if (q->stop_efd < 0) {
			err = -errno;
			fprintf(stderr, SRV_NAME ": eventfd: %s\n",
				strerror(-err));
			return err;
		}
		err = pthread_create(&q->thread, NULL, queue_thread, q);
		if (err) {
			fprintf(stderr, SRV_NAME ": pthread_create: %s\n",
				strerror(err));
			return -err;
		}
		q->thread_started = true;
	}
	err = wait_all(s, &s->nr_built);
	if (err)
		fprintf(stderr, SRV_NAME ": %s: %s\n", s->setup_err_what,
			strerror(-err));
	return err;
}

/* After the INIT reply: let every queue REGISTER, wait for the verdict. */
int ring_register_all(struct srv_session *s)
{
	int err;

	pthread_mutex_lock(&s->lock);
	s->go = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);

	err = wait_all(s, &s->nr_registered);
	if (err)
		explain_register_error(s, err);
	return err;
}

/* Wake every queue thread (or release it from the hand-shake) and join. */
void ring_stop_queues(struct srv_session *s)
{
	if (!s->queues)
		return;
	pthread_mutex_lock(&s->lock);
	s->abort_start = !s->go;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);

	/* doc: stop-begin */
	for (unsigned int i = 0; i < s->nr_queues; i++) {
		struct srv_queue *q = &s->queues[i];

		if (q->stop_efd >= 0 && q->thread_started)
			eventfd_write(q->stop_efd, 1);
	}
	/* doc: stop-end */
	for (unsigned int i = 0; i < s->nr_queues; i++) {
		struct srv_queue *q = &s->queues[i];

		if (q->thread_started)
			pthread_join(q->thread, NULL);
		if (q->stop_efd >= 0)
			close(q->stop_efd);
		free(q->ents);
		if (q->headers_mem)
			munmap(q->headers_mem, q->headers_map_size);
		if (q->payload_mem)
			munmap(q->payload_mem, q->payload_mem_size);
	}
	free(s->queues);
	s->queues = NULL;
}

/*
 * --fallback on the live connection: the kernel refused every REGISTER
 * with an errno that says what we lack (register_fallback()), and, as our
 * FUSE_INIT reply asked (proto.c), left io_uring on, so the requests wait
 * for the ring. Tear the queues down and let main() build them a rung
 * lower. The kernel wants every queue of a connection alike: once it kept
 * one REGISTER, that queue exists in this mode, and there is no way down.
 * true if main() should build and REGISTER again.
 */
bool ring_step_down(struct srv_session *s, int err)
{
	struct srv_opts *o = s->opts;
	enum srv_mode lower = register_fallback(o->mode, err);

	if (!o->fallback || lower == SRV_MODE_AUTO || s->nr_accepted)
		return false;
	fprintf(stderr, SRV_NAME ": --fallback: registering again in --mode=%s, "
		"on the same connection\n", mode_name(lower));
	ring_stop_queues(s);
	o->mode = lower;
	s->nr_built = s->nr_registered = s->nr_accepted = 0;
	s->setup_err = 0;
	s->setup_err_what = NULL;
	s->go = s->abort_start = false;
	return true;
}
