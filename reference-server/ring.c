// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * ring.c: the io_uring side. One queue per possible CPU, each a thread
 * pinned to its CPU with its own SQE128 ring and entries; every entry is
 * handed over once with FUSE_IO_URING_CMD_REGISTER and then loops on
 * FUSE_IO_URING_CMD_COMMIT_AND_FETCH (reply to one request, get the next).
 * In zero-copy mode a READ or WRITE takes one more step in between: the
 * server's own READ_FIXED/WRITE_FIXED on the request's folios.
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

/* The command must fit the 80 bytes an SQE128 entry has after sqe->cmd. */
_Static_assert(sizeof(struct fuse_uring_cmd_req) <= 80,
	       "fuse_uring_cmd_req must fit sqe->cmd");

/* doc: user-data-begin */
/*
 * What a CQE completes, from its user_data. Entries are 8-byte aligned,
 * so the low bit of an entry's address is free to say which of its
 * operations it was:
 *
 *   STOP_TAG (0)        the poll on the stop eventfd
 *   ent                 a FUSE command of ent: REGISTER, COMMIT_AND_FETCH
 *   ent | UD_FIXED_IO   ent's READ_FIXED/WRITE_FIXED (zero-copy)
 *
 * An entry has one operation in flight at a time, so its state would
 * tell too; the tag makes every CQE say what it is by itself.
 */
#define STOP_TAG 0
#define UD_FIXED_IO 1ULL
_Static_assert(_Alignof(struct srv_ent) > UD_FIXED_IO,
	       "the low bit of an entry's address must be free");
/* doc: user-data-end */

/* ---- how many queues: the kernel's num_possible_cpus() ---------------- */

/*
 * Count a CPU list such as "0-3,8,10-11" (sysfs format). The kernel makes
 * one queue per possible CPU, not per online one, and only switches a
 * connection to io_uring once every queue has an entry: a queue we skip
 * (say for a CPU that is offline now) leaves the mount waiting forever.
 */
int cpu_list_count(const char *s)
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

/* ---- one SQE for a FUSE ring command ---------------------------------- */

/* doc: sqe-begin */
/*
 * liburing 2.3 (Debian bookworm) has no io_uring_prep_uring_cmd(), so fill
 * the SQE by hand: IORING_OP_URING_CMD on /dev/fuse, the command in
 * cmd_op, struct fuse_uring_cmd_req in the 80-byte sqe->cmd area that only
 * an SQE128 ring has (fuse_uring_cmd() refuses others with -EINVAL).
 */
static void prep_fuse_cmd(struct io_uring_sqe *sqe, struct srv_ent *ent,
			  uint32_t cmd_op, uint64_t commit_id)
{
	struct srv_queue *q = ent->queue;
	struct fuse_uring_cmd_req *req = (void *)sqe->cmd;

	memset(sqe, 0, 2 * sizeof(*sqe));	/* an SQE128 slot */
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = q->s->devfd;
	sqe->cmd_op = cmd_op;
	if (cmd_op == FUSE_IO_URING_CMD_REGISTER) {
		/* iov[0] the header slot, iov[1] the payload; len must be 2 */
		sqe->addr = (uint64_t)(uintptr_t)ent->iov;
		sqe->len = 2;
	}
	/*
	 * COMMIT_AND_FETCH is the same in every mode: the kernel reads qid and
	 * commit_id only, finds the entry by the request it answers, and knows
	 * its header slot and buffer itself; flags and buf_index stay 0.
	 */
	req->qid = (uint16_t)q->qid;
	req->commit_id = commit_id;	/* ignored by REGISTER */
	io_uring_sqe_set_data(sqe, ent);
	ent->last_cmd = cmd_op;
	ent->state = ENT_IN_KERNEL;
}
/* doc: sqe-end */

/* doc: bufring-register-begin */
/*
 * Bufring mode adds three things to every REGISTER (kernel-patches/0004):
 *
 * - cmd_req.flags = FUSE_URING_BUFRING. The first REGISTER of a queue
 *   decides whether it uses a buffer ring, and the kernel refuses later
 *   ones that differ (-EINVAL), so every entry sends the flag.
 * - cmd_req.init: how to cut the regions that iov[] names (queue_setup()):
 *   iov[0] into queue_depth header slots, iov[1] into buffers of buf_size
 *   bytes, so nbufs = iov[1]'s length / buf_size. buf_size must hold the
 *   largest payload (max_write, which FUSE_INIT set to it). The queue's
 *   first REGISTER builds the buffer ring from these; the others repeat
 *   them, and every queue of the connection must give the same.
 * - sqe->buf_index = the entry's id, which is its header slot: the kernel
 *   writes this entry's requests to headers + id. Ids must be below
 *   queue_depth (else -EINVAL) and distinct: the kernel refuses an id in
 *   use with -EBUSY (kernel-patches/0011; v2 lets two entries share a slot).
 *
 * Stock 7.2 ignores flags, init and buf_index and would take this for an
 * iovec REGISTER of the whole regions: handle_request() notices.
 */
static void prep_register_bufring(struct io_uring_sqe *sqe, struct srv_ent *ent)
{
	const struct srv_opts *o = ent->queue->s->opts;
	struct fuse_uring_cmd_req *req = (void *)sqe->cmd;

	/* FUSE_URING_BUFRING, and in the modes above it their flags too */
	req->flags = mode_register_flags(o->mode);
	req->init.buf_size = (uint32_t)o->payload_size;
	req->init.queue_depth = (uint16_t)o->queue_depth;
	sqe->buf_index = (uint16_t)ent->id;
}
/* doc: bufring-register-end */

static const char *cmd_name(uint32_t cmd_op)
{
	return cmd_op == FUSE_IO_URING_CMD_REGISTER ?
	       "FUSE_IO_URING_CMD_REGISTER" :
	       "FUSE_IO_URING_CMD_COMMIT_AND_FETCH";
}

/*
 * The SQ has queue_depth + 1 slots: one per entry (each has at most one
 * command queued) and one for the stop poll, so it cannot be full.
 */
static struct io_uring_sqe *queue_sqe(struct srv_queue *q)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);

	if (!sqe) {
		fprintf(stderr, SRV_NAME ": queue %u: SQ full (bug)\n", q->qid);
		abort();
	}
	return sqe;
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
 * our RLIMIT_MEMLOCK (see pinned.c) and keeps them until the connection ends:
 * keep the mapping where it is until then, since what is later mapped at
 * the same address is not what the kernel writes to.
 */
static void *region_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
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
	size_t depth = o->queue_depth, psize = o->payload_size;
	size_t page = (size_t)s->page_size;
	bool bufring = mode_uses_bufring(o->mode);
	int err;

	/*
	 * One header slot per entry and payload buffers, each kind in one
	 * region per queue: depth buffers in iovec mode (one per entry),
	 * --nbufs in bufring mode and above (lent per request).
	 */
	*what = "allocate queue memory";
	q->headers_size = depth * sizeof(struct fuse_uring_req_header);
	q->headers_map_size = page_round_up(q->headers_size, page);
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
		ent->state = ENT_IDLE;
		ent->header = (struct fuse_uring_req_header *)q->headers_mem + i;
		if (bufring) {
			/* iov[] names the queue's regions; see bufring-register */
			ent->payload = NULL;
			ent->iov[0] = (struct iovec){ q->headers_mem,
						      q->headers_size };
			ent->iov[1] = (struct iovec){ q->payload_mem,
						      q->payload_mem_size };
		} else {
			ent->payload = (char *)q->payload_mem + i * psize;
			ent->iov[0] = (struct iovec){ ent->header,
						      sizeof(*ent->header) };
			ent->iov[1] = (struct iovec){ ent->payload, psize };
		}
	}

	/* one SQE per entry plus the stop poll: the SQ can never overflow */
	*what = "io_uring_queue_init";
	err = io_uring_queue_init((unsigned int)depth + 1, &q->ring,
				  IORING_SETUP_SQE128);
	if (err)
		return err;
	q->ring_ready = true;

	/* doc: fixed-table-begin */
	/*
	 * Zero-copy: the kernel lends a READ's or WRITE's folios to us as the
	 * fixed buffer whose index is the entry's id, in the buffer table of
	 * the ring that entry's commands come on. So this ring needs a table
	 * of queue_depth slots, empty (sparse: no memory of ours in it), and
	 * its own: another queue's entry ids are the same numbers. Without
	 * it every zero-copy READ and WRITE would fail with -EINVAL.
	 */
	if (mode_zero_copy(o->mode)) {
		*what = "io_uring_register_buffers_sparse";
		err = io_uring_register_buffers_sparse(&q->ring,
						       (unsigned int)depth);
		if (err)
			return err;
	}
	/* doc: fixed-table-end */
	return 0;
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

	ent->state = ENT_DEAD;
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
	ent->state = ENT_DEAD;	/* never committed: its request dies with us */
	q->live_ents--;
	pthread_mutex_lock(&q->s->lock);
	q->s->failed = true;
	pthread_mutex_unlock(&q->s->lock);
	kill(getpid(), SIGTERM);
}

/* doc: bufring-request-begin */
/*
 * Where this request's payload is. iovec mode: the entry's own buffer.
 * Bufring mode: the buffer the kernel lent for this request, whose index
 * in the queue's payload region is ent_in_out.buf_id; or none (NULL) for
 * a request without payload, whose buf_id means nothing (see
 * bufring_req_has_buf() in proto.c). The header slot needs no lookup:
 * it is the entry's own, headers + id, in both modes.
 *
 * A lent buffer is ours until we commit the reply, which the kernel reads
 * from it; then the kernel keeps it for this entry's next request if that
 * has payload too, or takes it back for any entry. *buf is the id for
 * --trace, -1 for none; -EPROTO if buf_id lies outside the region.
 */
static int ent_payload(struct srv_ent *ent, void **payload, int *buf)
{
	const struct srv_queue *q = ent->queue;
	const struct srv_opts *o = q->s->opts;
	unsigned int id = ent->header->ring_ent_in_out.buf_id;

	*buf = -1;
	*payload = NULL;
	if (!mode_uses_bufring(o->mode)) {
		*payload = ent->payload;
		return 0;
	}
	if (!bufring_req_has_buf(ent->header))
		return 0;
	if (id >= o->nbufs)
		return -EPROTO;
	*buf = (int)id;
	*payload = (char *)q->payload_mem + (size_t)id * o->payload_size;
	return 0;
}
/* doc: bufring-request-end */

/*
 * One --trace line per ring request: in= is the request's payload_sz, out=
 * the reply's. Bufring and above add the buffer the request had (buf=N,
 * buf=- for none), zero-copy mode whether its data was zero-copied
 * (zc=1: it was in the request's folios, moved by READ_FIXED/WRITE_FIXED).
 */
static void trace_ring(const struct srv_ent *ent, uint32_t opcode,
		       uint64_t unique, uint64_t commit_id, size_t arg_len,
		       uint32_t in, size_t out, int buf, bool zc, int err)
{
	const struct srv_queue *q = ent->queue;
	enum srv_mode mode = q->s->opts->mode;
	char bufstr[16] = "", zcstr[8] = "";

	/* bufring: which buffer the request had, "-" for none */
	if (mode_uses_bufring(mode) && buf >= 0)
		snprintf(bufstr, sizeof(bufstr), " buf=%d", buf);
	else if (mode_uses_bufring(mode))
		snprintf(bufstr, sizeof(bufstr), " buf=-");
	if (mode_zero_copy(mode))
		snprintf(zcstr, sizeof(zcstr), " zc=%d", zc);
	fprintf(stderr, "trace ring q=%u ent=%u op=%s unique=%llu "
		"commit_id=%llu arg=%zu in=%u out=%zu error=%d%s%s\n",
		q->qid, ent->id, fuse_opcode_name(opcode),
		(unsigned long long)unique, (unsigned long long)commit_id,
		arg_len, in, err ? 0 : out, err, bufstr, zcstr);
}

/* doc: zero-copy-fixed-io-begin */
/*
 * Zero-copy: a READ or WRITE marked FUSE_URING_ENT_ZERO_COPY brings no
 * data in a payload buffer. The kernel has registered the request's
 * folios (page cache, or the pages of a process doing direct I/O) in this
 * queue's ring, as the fixed buffer whose index is the entry's id, and the
 * server moves the data itself, straight between those folios and the
 * backing file, with one io_uring operation:
 *
 * - WRITE: IORING_OP_WRITE_FIXED on the backing fd reads the buffer;
 *   READ: IORING_OP_READ_FIXED fills it. The kernel registered a write's
 *   folios IO_IMU_SOURCE, which only operations that read from the buffer
 *   may use, and a read's IO_IMU_DEST, for operations that write to it:
 *   the other way round fails with -EFAULT, as does an empty slot.
 * - buf_index is the entry id. addr is an offset into the buffer, and
 *   byte 0 of the buffer is the first byte of the request's data, so
 *   addr = 0 and len = the request's size; the file offset is the
 *   request's offset, as with pread/pwrite.
 * - The commit waits for that operation's CQE. Committing ends the
 *   request: the kernel unregisters the buffer, and the caller goes on
 *   with its pages, a reader before its data arrived, a writer free to
 *   reuse memory we are still reading. So the entry waits in ENT_FIXED_IO
 *   and fixed_io_done() commits, on this same ring: the kernel
 *   unregisters the buffer only through the ring it registered it in.
 *
 * Returns 0 with the operation queued, or -errno to reply with.
 */
static int start_fixed_io(struct srv_ent *ent, const struct srv_req *r,
			  uint64_t commit_id, void *payload, int buf)
{
	struct srv_queue *q = ent->queue;
	struct io_uring_sqe *sqe;
	uint32_t opcode = r->in->opcode;

	if (opcode == FUSE_READ) {
		const struct fuse_read_in *in = r->arg;

		sqe = queue_sqe(q);
		io_uring_prep_read_fixed(sqe, (int)in->fh, NULL, in->size,
					 in->offset, (int)ent->id);
	} else if (opcode == FUSE_WRITE && payload) {
		const struct fuse_write_in *in = r->arg;

		sqe = queue_sqe(q);
		io_uring_prep_write_fixed(sqe, (int)in->fh, NULL, in->size,
					  in->offset, (int)ent->id);
	} else {
		/* only READ and WRITE are marked; a WRITE has a reply buffer */
		return -EPROTO;
	}
	io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)ent | UD_FIXED_IO);
	ent->fixed.opcode = opcode;
	ent->fixed.unique = r->in->unique;
	ent->fixed.commit_id = commit_id;
	ent->fixed.arg_len = r->arg_len;
	ent->fixed.payload = payload;
	ent->fixed.buf = buf;
	ent->state = ENT_FIXED_IO;
	return 0;
}

/*
 * The fixed operation's CQE: res is the bytes moved or -errno. Now reply,
 * as pread()/pwrite() would have: a READ's reply data is already in the
 * caller's folios, so its payload_sz is just their count (nothing to copy
 * into a buffer); a WRITE's is struct fuse_write_out in the payload
 * buffer the kernel lent it, as usual. Then commit, and fetch the next.
 */
static void fixed_io_done(struct srv_ent *ent, int res)
{
	struct srv_queue *q = ent->queue;
	struct fuse_write_out *wo;
	int err = res < 0 ? res : 0;
	size_t out_len = 0;

	if (ent->state != ENT_FIXED_IO) {
		fprintf(stderr, SRV_NAME ": queue %u entry %u: a fixed-buffer "
			"CQE in state %d (bug)\n", q->qid, ent->id, ent->state);
		abort();
	}
	if (!err && ent->fixed.opcode == FUSE_WRITE) {
		wo = ent->fixed.payload;
		memset(wo, 0, sizeof(*wo));
		wo->size = (uint32_t)res;
		out_len = sizeof(*wo);
	} else if (!err) {
		out_len = (size_t)res;	/* READ: already in place */
	}
	if (q->s->opts->trace)
		trace_ring(ent, ent->fixed.opcode, ent->fixed.unique,
			   ent->fixed.commit_id, ent->fixed.arg_len,
			   ent->header->ring_ent_in_out.payload_sz, out_len,
			   ent->fixed.buf, true, err);
	build_ring_reply(ent->header, ent->fixed.unique, err, out_len);
	prep_fuse_cmd(queue_sqe(q), ent, FUSE_IO_URING_CMD_COMMIT_AND_FETCH,
		      ent->fixed.commit_id);
}
/* doc: zero-copy-fixed-io-end */

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
	struct fuse_uring_req_header *h = ent->header;
	const struct fuse_in_header *in = (const void *)h->in_out;
	/* the reply overwrites in_out and payload_sz: keep what we need */
	uint64_t unique = in->unique;
	uint64_t commit_id = h->ring_ent_in_out.commit_id;
	uint32_t payload_sz = h->ring_ent_in_out.payload_sz;
	uint32_t opcode = in->opcode;
	bool zc = req_zero_copied(h);
	struct io_uring_sqe *sqe;
	struct srv_req r = { 0 };
	void *payload;
	int buf, err;

	ent->state = ENT_IN_SERVER;
	/*
	 * The kernel never sends unique 0 over the ring: an empty slot means
	 * it wrote the request elsewhere. In bufring mode that is a kernel
	 * without the buffer-ring patch: stock 7.2 ignores the flag, takes
	 * each REGISTER for an iovec one of the whole regions, and writes
	 * every entry's requests to slot 0 and buffer 0.
	 */
	if (unique == 0) {
		queue_fail(ent, mode_uses_bufring(q->s->opts->mode) ?
			   "its header slot is empty: the kernel ignored "
			   "FUSE_URING_BUFRING (no buffer-ring patch?)" :
			   "its header slot is empty");
		return;
	}
	err = ent_payload(ent, &payload, &buf);
	if (err) {
		fprintf(stderr, SRV_NAME ": queue %u entry %u: the kernel "
			"lent buffer %u of %u\n", q->qid, ent->id,
			h->ring_ent_in_out.buf_id, q->s->opts->nbufs);
		err = -EIO;
	}
	if (!err)
		err = parse_ring_request(h, payload,
					 payload ? q->s->opts->payload_size : 0,
					 &r);
	/* zero-copy: the data is not in the buffer; move it, reply later */
	if (!err && zc) {
		err = start_fixed_io(ent, &r, commit_id, payload, buf);
		if (!err)
			return;
	} else if (!err) {
		err = srv_dispatch(&r);
	}
	if (q->s->opts->trace)
		trace_ring(ent, opcode, unique, commit_id, r.arg_len,
			   payload_sz, r.out_len, buf, zc, err);
	build_ring_reply(h, unique, err, err ? 0 : r.out_len);

	sqe = queue_sqe(q);
	prep_fuse_cmd(sqe, ent, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, commit_id);
}

/* Handle every CQE that is there; false once the stop eventfd fired. */
static bool handle_cqes(struct srv_queue *q)
{
	struct io_uring_cqe *cqe;
	unsigned int head, n = 0;
	bool run = true;

	io_uring_for_each_cqe(&q->ring, head, cqe) {
		uint64_t ud = cqe->user_data;
		struct srv_ent *ent = (void *)(uintptr_t)(ud & ~UD_FIXED_IO);

		n++;
		if (ud == STOP_TAG)
			run = false;
		else if (ud & UD_FIXED_IO)
			fixed_io_done(ent, cqe->res);	/* res: bytes or -errno */
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
static int queue_register(struct srv_queue *q)
{
	struct io_uring_sqe *sqe;
	int ret;

	for (unsigned int i = 0; i < q->s->opts->queue_depth; i++) {
		sqe = queue_sqe(q);
		prep_fuse_cmd(sqe, &q->ents[i], FUSE_IO_URING_CMD_REGISTER, 0);
		if (mode_uses_bufring(q->s->opts->mode))
			prep_register_bufring(sqe, &q->ents[i]);
	}
	q->live_ents = q->s->opts->queue_depth;
	sqe = queue_sqe(q);
	io_uring_prep_poll_add(sqe, q->stop_efd, POLLIN);
	io_uring_sqe_set_data64(sqe, STOP_TAG);

	ret = io_uring_submit(&q->ring);
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

	err = queue_register(q);
	if (!err && s->opts->trace && mode_uses_bufring(s->opts->mode))
		fprintf(stderr, "trace ring q=%u registered %u entries "
			"(mode %s: headers=%zu B, payload=%u x %zu B%s)\n",
			q->qid, s->opts->queue_depth, mode_name(s->opts->mode),
			q->headers_size, s->opts->nbufs, s->opts->payload_size,
			mode_zero_copy(s->opts->mode) ? ", fixed-buffer table" :
			"");
	else if (!err && s->opts->trace)
		fprintf(stderr, "trace ring q=%u registered %u entries "
			"(header %zu B, payload %zu B)\n", q->qid,
			s->opts->queue_depth, sizeof(struct fuse_uring_req_header),
			s->opts->payload_size);
	report(q, &s->nr_registered, err, "FUSE_IO_URING_CMD_REGISTER");
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
	if (err == -EOPNOTSUPP)
		fprintf(stderr, SRV_NAME ": the kernel refused "
			"FUSE_IO_URING_CMD_REGISTER (EOPNOTSUPP): FUSE over "
			"io_uring is disabled or missing\n");
	else if (err == -ENOMEM && mode_pins_headers(s->opts->mode))
		pinned_enomem_message(s->opts, s->nr_queues,
				      (size_t)s->page_size);
	else if (err == -EPERM && mode_zero_copy(s->opts->mode))
		fprintf(stderr, SRV_NAME ": the kernel refused zero-copy "
			"(EPERM): it needs CAP_SYS_ADMIN in the initial user "
			"namespace; run with it, or use --mode=pinned-buffers\n");
	else if (err == -EINVAL && mode_pins_headers(s->opts->mode))
		fprintf(stderr, SRV_NAME ": the kernel refused "
			"FUSE_IO_URING_CMD_REGISTER with flags %#llx (EINVAL): "
			"it lacks --mode=%s (pinned headers: kernel-patches/0005, "
			"pinned buffers: 0006, zero-copy: 0008), or it refused "
			"the regions\n",
			(unsigned long long)mode_register_flags(s->opts->mode),
			mode_name(s->opts->mode));
	else if (err == -EINVAL && mode_uses_bufring(s->opts->mode))
		fprintf(stderr, SRV_NAME ": the kernel refused "
			"FUSE_IO_URING_CMD_REGISTER with FUSE_URING_BUFRING "
			"(EINVAL): it has no buffer rings as kernel-patches/0004 "
			"defines them, or it refused the regions\n");
	else if (err)
		fprintf(stderr, SRV_NAME ": %s: %s\n", s->setup_err_what,
			strerror(-err));
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
