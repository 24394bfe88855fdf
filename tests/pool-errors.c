// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * tests/pool-errors.c: what Linux 7.3 refuses in its buffer-pool uapi, each
 * case with the errno 7.3's fs/fuse/dev_uring.c returns, on a mount of its
 * own (a refused REGISTER switches io_uring off for the whole connection:
 * fuse_uring_cmd() sets fch->io_uring = 0). Built against 7.3's uapi
 * (build/headers-7.3); tests/guest/7.3/22-pool-errors.sh runs it.
 *
 *   pool-errors MOUNTPOINT   (as root, with enable_uring set)
 *   pool-errors MOUNTPOINT zero-copy-abort   the two zero-copy cases alone (lab 06)
 *   pool-errors MOUNTPOINT waits   the requests that wait for a pool buffer alone
 *   pool-errors --list       the names of the cases
 *
 * Prints "ok NAME" or "not ok NAME: why" per case (tests/unit.h).
 */
#include <linux/fuse.h>
#include <liburing.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kernel-log.h"
#include "unit.h"

#ifndef FUSE_HAS_IO_URING_BUFPOOL
#error "pool-errors.c needs Linux 7.3's linux/fuse.h (build/headers-7.3)"
#endif

#define MAX_QUEUES 64
#define PAYLOAD (64 * 1024)	/* max_write: one pool buffer */
#define NBUFS 2
#define DEPTH 2			/* entries per queue */

static const char *mnt;
static int nq;

/* One connection: /dev/fuse, its mount, a ring, the queues' memory. */
struct conn {
	int fd;
	struct io_uring ring;
	struct fuse_uring_req_header hdr[MAX_QUEUES][DEPTH];
	struct iovec iov[MAX_QUEUES][DEPTH][2];
	char *pool[MAX_QUEUES];
};

static struct conn c;
static char rdbuf[PAYLOAD + 4096];

/* every case, in the order they run (--list) */
static const char *const cases[] = {
	"add_queue_past_the_last_qid_einval",
	"add_queue_unknown_flag_einval",
	"add_bufpool_before_add_queue_einval",
	"add_queue_completes_at_once",
	"add_queue_twice_eexist",
	"add_bufpool_shorter_than_a_buffer_einval",
	"add_bufpool_reserved_set_einval",
	"add_bufpool_with_flags_einval",
	"add_bufpool_completes_at_once",
	"add_bufpool_twice_einval",
	"per_entry_register_on_a_new_qid_parks",
	"add_queue_after_register_eexist",
	"add_bufpool_after_per_entry_register_einval",
	"register_with_a_payload_on_a_pool_einval",
	"register_without_fixed_on_a_fixed_pool_einval",
	"register_zero_copy_slot_without_zero_copy_einval",
	"per_entry_register_on_a_zero_copy_queue_einval",
	"fixed_pools_on_every_queue",
	"getattr_arrives_in_a_pool_buffer",
	"commit_without_fixed_on_a_fixed_pool_einval",
	"commit_with_another_buffer_index_einval",
	"commit_with_the_pools_flag_and_index_parks",
	"stat_answered_after_the_refused_commits",
	"zero_copy_queues_on_every_queue",
	"zero_copied_read_reaches_the_server",
	"zero_copy_abort_read_waits_while_its_pages_are_registered",
	"zero_copy_abort_late_read_fixed_fills_the_held_pages",
	"zero_copy_abort_read_returns_once_the_slot_is_unregistered",
	"zero_copy_abort_read_fails_econnaborted",
	"zero_copy_abort_read_fixed_after_the_end_efault",
	"zero_copy_abort_no_byte_changes_after_the_read_returned",
	"zero_copy_queues_for_the_pipe_case",
	"pipe_case_zero_copied_read_reaches_the_server",
	"commit_read_waits_for_the_running_read_fixed",
	"commit_read_fixed_completes_from_the_pipe",
	"commit_read_returns_after_the_read_fixed",
	"commit_read_has_the_pipes_bytes",
	"commit_no_byte_changes_after_the_read_returned",
	"zero_copy_queues_for_the_ring_case",
	"ring_case_zero_copied_read_reaches_the_server",
	"zero_copy_commit_from_another_ring_einval",
	"zero_copy_commit_then_answered_on_its_ring",
	"register_two_entries_on_one_zero_copy_slot_parks",
	"shared_slot_first_read_reaches_the_server",
	"shared_slot_second_zero_copied_read_ebusy",
	"shared_slot_second_read_never_reaches_the_server",
	"shared_slot_read_fixed_fills_the_held_read",
	"shared_slot_held_read_intact",
	"one_buffer_queues_on_every_queue",
	"one_buffer_read_holds_the_only_buffer",
	"one_buffer_write_waits_for_the_buffer",
	"one_buffer_release_passes_the_waiting_write",
	"one_buffer_read_has_the_servers_bytes",
	"one_buffer_write_arrives_as_written",
	"one_buffer_close_returns_0",
	"cancelled_send_queues_with_an_entry_on_a_second_ring",
	"cancelled_send_read_waits_in_the_second_rings_task_work",
	"cancelled_send_fsync_held_on_the_first_ring",
	"cancelled_send_write_waits_for_the_buffer",
	"cancelled_send_gives_the_buffer_to_the_waiting_write",
	"cancelled_send_read_fails_ecanceled",
	"cancelled_send_write_arrives_as_written",
	"registered_entry_queues_without_entry_1_of_queue_0",
	"registered_entry_read_held_on_entry_0",
	"registered_entry_write_waits_for_an_entry",
	"registered_entry_takes_the_waiting_write",
	"registered_entry_write_arrives_as_written",
	"registered_entry_read_has_the_servers_bytes",
	"flushed_release_queues_with_async_dio",
	"flushed_release_first_read_holds_the_only_buffer",
	"flushed_release_second_read_waits_for_the_buffer",
	"flushed_release_waits_in_the_background_list",
	"flushed_release_commit_gives_the_buffer_to_the_second_read",
	"flushed_release_passes_the_read_waiting_for_the_buffer",
	"flushed_release_reads_have_the_servers_bytes",
	"flushed_release_close_returns_0",
	"waits_kernel_log_clean",
};

static _Noreturn void die(const char *what)
{
	perror(what);
	exit(2);
}

static int possible_cpus(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
	int lo, hi, n = 0, ch = ',';

	while (f && ch == ',' && fscanf(f, "%d", &lo) == 1) {
		hi = lo;
		if ((ch = fgetc(f)) == '-' && fscanf(f, "%d", &hi) == 1)
			ch = fgetc(f);
		n += hi - lo + 1;
	}
	if (f)
		fclose(f);
	return n;
}

/*
 * Mount, answer FUSE_INIT with FUSE_OVER_IO_URING, and make a ring whose
 * fixed-buffer table has the pool of each queue at slot qid and a free
 * slot per entry after them. Every case starts here. With async_dio the
 * reply also has FUSE_ASYNC_DIO and max_background 2 (one case of
 * waits_cases()).
 */
static void conn_open_init(bool async_dio)
{
	struct fuse_in_header *rd = (void *)rdbuf;
	struct {
		struct fuse_out_header h;
		struct fuse_init_out i;
	} init = { 0 };
	char opts[128];

	memset(&c, 0, sizeof(c));
	c.fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (c.fd < 0)
		die("/dev/fuse");
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0",
		 c.fd);
	if (mount("pool-errors", mnt, "fuse.pool-errors", 0, opts) < 0)
		die("mount");
	if (read(c.fd, rdbuf, sizeof(rdbuf)) < 0 || rd->opcode != FUSE_INIT)
		die("read FUSE_INIT");
	init.h = (struct fuse_out_header){ sizeof(init), 0, rd->unique };
	init.i.major = FUSE_KERNEL_VERSION;
	init.i.minor = FUSE_KERNEL_MINOR_VERSION;
	init.i.flags = FUSE_INIT_EXT | FUSE_MAX_PAGES;
	init.i.flags2 = FUSE_OVER_IO_URING >> 32;
	init.i.max_write = PAYLOAD;
	init.i.max_pages = PAYLOAD / 4096;
	if (async_dio) {
		init.i.flags |= FUSE_ASYNC_DIO;
		init.i.max_background = 2;
	}
	if (write(c.fd, &init, sizeof(init)) != sizeof(init))
		die("write FUSE_INIT reply");
	if (io_uring_queue_init(64, &c.ring, IORING_SETUP_SQE128) < 0)
		die("io_uring_queue_init");
	if (io_uring_register_buffers_sparse(&c.ring, nq + nq * DEPTH) < 0)
		die("io_uring_register_buffers_sparse");
	for (int q = 0; q < nq; q++) {
		struct iovec pool;

		c.pool[q] = mmap(NULL, NBUFS * PAYLOAD, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (c.pool[q] == MAP_FAILED)
			die("mmap");
		pool = (struct iovec){ c.pool[q], NBUFS * PAYLOAD };
		if (io_uring_register_buffers_update_tag(&c.ring, q, &pool,
							 NULL, 1) < 0)
			die("io_uring_register_buffers_update_tag");
		for (int e = 0; e < DEPTH; e++) {
			c.iov[q][e][0] = (struct iovec){ &c.hdr[q][e],
							 sizeof(c.hdr[q][e]) };
			c.iov[q][e][1] = (struct iovec){ NULL, 0 };
		}
	}
}

static void conn_open(void)
{
	conn_open_init(false);
}

static void conn_close(void)
{
	umount2(mnt, MNT_DETACH);
	io_uring_queue_exit(&c.ring);
	close(c.fd);
	for (int q = 0; q < nq; q++)
		munmap(c.pool[q], NBUFS * PAYLOAD);
}

/* An SQE128 FUSE command; user_data = q * DEPTH + e. */
static struct fuse_uring_cmd_req *cmd(struct io_uring_sqe **sqep,
				      uint32_t op, int q, int e)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&c.ring);
	struct fuse_uring_cmd_req *req;

	if (!sqe)
		die("io_uring_get_sqe");
	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = c.fd;
	sqe->cmd_op = op;
	req = (void *)sqe->cmd;
	req->qid = (uint16_t)q;
	if (op == FUSE_IO_URING_CMD_REGISTER) {
		sqe->addr = (uintptr_t)c.iov[q][e];
		sqe->len = 2;
	}
	sqe->user_data = (uint64_t)(q * DEPTH + e);
	*sqep = sqe;
	return req;
}

static void fixed(struct io_uring_sqe *sqe, int q)
{
	sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
	sqe->buf_index = (uint16_t)q;
}

/*
 * Submit what is queued and return the result of a command that completes
 * at once, or 1 if it stayed queued (an accepted REGISTER or COMMIT waits
 * for a request).
 */
static int run(void)
{
	struct io_uring_cqe *cqe;
	int res;

	if (io_uring_submit(&c.ring) < 0)
		die("io_uring_submit");
	if (io_uring_peek_cqe(&c.ring, &cqe))
		return 1;
	res = cqe->res;
	io_uring_cqe_seen(&c.ring, cqe);
	return res;
}

static int add_queue(int q, uint64_t flags)
{
	struct io_uring_sqe *sqe;

	cmd(&sqe, FUSE_IO_URING_CMD_ADD_QUEUE, q, 0)->flags = flags;
	return run();
}

static int add_bufpool(int q, uint32_t len, uint32_t reserved, bool fix)
{
	struct io_uring_sqe *sqe;
	struct fuse_uring_cmd_req *req = cmd(&sqe, FUSE_IO_URING_CMD_ADD_BUFPOOL,
					     q, 0);

	req->bufpool.uaddr = (uintptr_t)c.pool[q];
	req->bufpool.len = len;
	req->bufpool.reserved = reserved;
	if (fix)
		fixed(sqe, q);
	return run();
}

/* ADD_BUFPOOL with flags set, which it must not have */
static int add_bufpool_flags(int q, uint64_t flags)
{
	struct io_uring_sqe *sqe;
	struct fuse_uring_cmd_req *req = cmd(&sqe, FUSE_IO_URING_CMD_ADD_BUFPOOL,
					     q, 0);

	req->flags = flags;
	req->bufpool.uaddr = (uintptr_t)c.pool[q];
	req->bufpool.len = NBUFS * PAYLOAD;
	return run();
}

static int reg(int q, int e, bool fix, uint16_t zc_index)
{
	struct io_uring_sqe *sqe;

	cmd(&sqe, FUSE_IO_URING_CMD_REGISTER, q, e)->ent_zero_copy_buf_index =
		zc_index;
	if (fix)
		fixed(sqe, q);
	return run();
}

static void expect(const char *name, int want, int got)
{
	result(name, want == got, "expected %d (%s), got %d (%s)", want,
	       want > 0 ? "parked" : strerror(-want), got,
	       got > 0 ? "parked" : strerror(-got));
}

/* Each queue: ADD_QUEUE, a fixed ADD_BUFPOOL, DEPTH fixed REGISTERs. */
static int ready_fixed_pools(void)
{
	int err = 0;

	for (int q = 0; q < nq && !err; q++) {
		err = add_queue(q, 0);
		err = err ? err : add_bufpool(q, NBUFS * PAYLOAD, 0, true);
		for (int e = 0; e < DEPTH && !err; e++)
			err = reg(q, e, true, 0) == 1 ? 0 : -EPROTO;
	}
	return err;
}

static void case_queue_commands(void)
{
	conn_open();
	expect("add_queue_past_the_last_qid_einval", -EINVAL,
	       add_queue(nq, 0));
	expect("add_queue_unknown_flag_einval", -EINVAL,
	       add_queue(0, 1 << 5));
	expect("add_bufpool_before_add_queue_einval", -EINVAL,
	       add_bufpool(0, NBUFS * PAYLOAD, 0, false));
	expect("add_queue_completes_at_once", 0, add_queue(0, 0));
	expect("add_queue_twice_eexist", -EEXIST,
	       add_queue(0, 0));
	expect("add_bufpool_shorter_than_a_buffer_einval",
	       -EINVAL, add_bufpool(0, PAYLOAD - 1, 0, false));
	expect("add_bufpool_reserved_set_einval", -EINVAL,
	       add_bufpool(0, NBUFS * PAYLOAD, 1, false));
	expect("add_bufpool_with_flags_einval", -EINVAL,
	       add_bufpool_flags(0, FUSE_URING_ZERO_COPY));
	expect("add_bufpool_completes_at_once", 0,
	       add_bufpool(0, NBUFS * PAYLOAD, 0, false));
	expect("add_bufpool_twice_einval", -EINVAL,
	       add_bufpool(0, NBUFS * PAYLOAD, 0, false));
	conn_close();
}

static void case_add_queue_after_register(void)
{
	conn_open();
	c.iov[0][0][1] = (struct iovec){ c.pool[0], PAYLOAD };	/* iovec mode */
	expect("per_entry_register_on_a_new_qid_parks", 1, reg(0, 0, false, 0));
	expect("add_queue_after_register_eexist", -EEXIST,
	       add_queue(0, 0));
	expect("add_bufpool_after_per_entry_register_einval", -EINVAL,
	       add_bufpool(0, NBUFS * PAYLOAD, 0, false));
	conn_close();
}

static void case_register_with_payload(void)
{
	conn_open();
	add_queue(0, 0);
	add_bufpool(0, NBUFS * PAYLOAD, 0, false);
	c.iov[0][0][1] = (struct iovec){ c.pool[0], PAYLOAD };
	expect("register_with_a_payload_on_a_pool_einval", -EINVAL,
	       reg(0, 0, false, 0));
	conn_close();
}

static void case_register_without_fixed(void)
{
	conn_open();
	add_queue(0, 0);
	add_bufpool(0, NBUFS * PAYLOAD, 0, true);
	expect("register_without_fixed_on_a_fixed_pool_einval",
	       -EINVAL, reg(0, 0, false, 0));
	conn_close();
}

static void case_per_entry_register_on_zero_copy_queue(void)
{
	conn_open();
	add_queue(0, FUSE_URING_ZERO_COPY);
	c.iov[0][0][1] = (struct iovec){ c.pool[0], PAYLOAD };	/* iovec mode */
	expect("per_entry_register_on_a_zero_copy_queue_einval", -EINVAL,
	       reg(0, 0, false, 0));
	conn_close();
}

static void case_register_zero_copy_index(void)
{
	conn_open();
	add_queue(0, 0);
	add_bufpool(0, NBUFS * PAYLOAD, 0, false);
	expect("register_zero_copy_slot_without_zero_copy_einval",
	       -EINVAL, reg(0, 0, false, (uint16_t)nq));
	conn_close();
}

/*
 * A COMMIT on a fixed pool must carry the flag and the pool's index. A
 * stat(2) of the mount sends one GETATTR; the commits that lack either are
 * refused and leave the request where it was, so the right one still
 * answers it.
 */
static void case_commit_fixed(void)
{
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct fuse_uring_cmd_req *req;
	struct fuse_uring_req_header *h;
	struct fuse_in_header *in;
	uint64_t commit_id, unique;
	int q, e, status, err;
	pid_t child;

	conn_open();
	err = ready_fixed_pools();
	expect("fixed_pools_on_every_queue", 0, err);
	if (err) {
		conn_close();
		return;
	}
	child = fork();
	if (child == 0) {
		struct stat st;

		_exit(stat(mnt, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : 1);
	}
	if (io_uring_wait_cqe(&c.ring, &cqe) < 0 || cqe->res < 0)
		die("the GETATTR's CQE");
	q = (int)cqe->user_data / DEPTH;
	e = (int)cqe->user_data % DEPTH;
	io_uring_cqe_seen(&c.ring, cqe);
	h = &c.hdr[q][e];
	in = (void *)h->in_out;
	unique = in->unique;
	commit_id = h->ring_ent_in_out.commit_id;
	result("getattr_arrives_in_a_pool_buffer",
	       in->opcode == FUSE_GETATTR &&
	       h->ring_ent_in_out.offset % PAYLOAD == 0 &&
	       h->ring_ent_in_out.offset < NBUFS * PAYLOAD,
	       "opcode %u offset %u", in->opcode, h->ring_ent_in_out.offset);

	/* the reply: fuse_attr_out in the pool buffer, the header in the slot */
	{
		struct fuse_attr_out *attr = (void *)(c.pool[q] +
						      h->ring_ent_in_out.offset);
		struct fuse_out_header *out = (void *)h->in_out;

		memset(attr, 0, sizeof(*attr));
		attr->attr = (struct fuse_attr){ .ino = 1, .mode = S_IFDIR | 0755,
						 .nlink = 2 };
		*out = (struct fuse_out_header){ sizeof(*out) + sizeof(*attr), 0,
						 unique };
		h->ring_ent_in_out.payload_sz = sizeof(*attr);
	}
	req = cmd(&sqe, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, q, e);
	req->commit_id = commit_id;
	expect("commit_without_fixed_on_a_fixed_pool_einval",
	       -EINVAL, run());
	req = cmd(&sqe, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, q, e);
	req->commit_id = commit_id;
	fixed(sqe, q);
	sqe->buf_index = (uint16_t)(q + 1);	/* not the pool's index */
	expect("commit_with_another_buffer_index_einval",
	       -EINVAL, run());
	req = cmd(&sqe, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, q, e);
	req->commit_id = commit_id;
	fixed(sqe, q);
	expect("commit_with_the_pools_flag_and_index_parks", 1,
	       run());
	waitpid(child, &status, 0);
	result("stat_answered_after_the_refused_commits",
	       WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x",
	       status);
	conn_close();
}

/*
 * ---- zero-copy: the pages stay the request's while io_uring has them ----
 *
 * A zero-copied READ lends the caller's pages to the server's ring at the
 * entry's slot. 7.3 as released ends the request, and gives the caller
 * its buffer back, while io_uring may still reach those pages:
 * - after an abort: the teardown ends a request the server holds but
 *   cannot unregister its pages (the entry has no command to reach the
 *   ring with), so a READ_FIXED the server issues afterwards writes into a
 *   buffer the caller has had back;
 * - at a commit: a READ_FIXED that imported the buffer before the commit
 *   and waits (here on an empty pipe) finishes into it after the end.
 * The lab's kernel-patches-7.3/0002 ends such a request only when io_uring
 * lets go of the pages (ublk's rule), so both cases below hold the read(2)
 * until then, and no byte of the caller's buffer changes after it returns.
 * Before 0002 they fail: the read returns at once, and the late bytes land.
 */
#define ZC_SIZE 65536		/* the caller's read: 16 pages */

static char zc_buf[ZC_SIZE] __attribute__((aligned(4096)));
static char zc_got[ZC_SIZE];	/* zc_buf as its read(2) left it */
static volatile int zc_returned;	/* the read(2) returned, the buffer is reused */
static volatile int zc_server_done;	/* the server will touch nothing more */
static volatile int zc_closed;		/* the client closed the file */
static int zc_read_err, zc_changed;
static ssize_t zc_read_n;

static void *zc_client(void *arg)
{
	char path[512];
	int fd;

	(void)arg;
	snprintf(path, sizeof(path), "%s/f", mnt);
	fd = open(path, O_RDONLY);
	zc_read_err = fd < 0 ? errno : 0;
	zc_read_n = fd < 0 ? -1 : pread(fd, zc_buf, ZC_SIZE, 0);
	if (fd >= 0 && zc_read_n < 0)
		zc_read_err = errno;
	memcpy(zc_got, zc_buf, ZC_SIZE);
	/* like any caller: the buffer is its own again, and it reuses it */
	memset(zc_buf, 'c', ZC_SIZE);
	__atomic_store_n(&zc_returned, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&zc_server_done, __ATOMIC_SEQ_CST))
		usleep(1000);
	for (int i = 0; i < ZC_SIZE; i++)
		zc_changed += zc_buf[i] != 'c';
	if (fd >= 0)
		close(fd);
	__atomic_store_n(&zc_closed, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* Answer LOOKUP of "f", OPEN (direct I/O, zero-copy) and GETATTR; commit. */
static void zc_serve(int q, int e)
{
	struct fuse_uring_req_header *h = &c.hdr[q][e];
	struct fuse_in_header *in = (void *)h->in_out;
	struct fuse_out_header *out = (void *)h->in_out;
	char *buf = c.pool[q] + h->ring_ent_in_out.offset;
	uint64_t unique = in->unique, commit_id = h->ring_ent_in_out.commit_id;
	struct fuse_attr attr = { .ino = 2, .mode = S_IFREG | 0644, .nlink = 1,
				  .size = ZC_SIZE, .blocks = ZC_SIZE / 512 };
	struct io_uring_sqe *sqe;
	size_t len = 0;
	int err = 0;

	if (in->opcode == FUSE_LOOKUP) {
		struct fuse_entry_out *eo = (void *)buf;

		memset(eo, 0, sizeof(*eo));
		eo->nodeid = 2;
		eo->attr = attr;
		len = sizeof(*eo);
	} else if (in->opcode == FUSE_OPEN) {
		struct fuse_open_out *oo = (void *)buf;

		memset(oo, 0, sizeof(*oo));
		oo->fh = 1;
		oo->open_flags = FOPEN_DIRECT_IO | FOPEN_IO_URING_ZERO_COPY;
		len = sizeof(*oo);
	} else if (in->opcode == FUSE_GETATTR) {
		struct fuse_attr_out *ao = (void *)buf;

		memset(ao, 0, sizeof(*ao));
		ao->attr = in->nodeid == 1 ?
			   (struct fuse_attr){ .ino = 1, .mode = S_IFDIR | 0755,
					       .nlink = 2 } : attr;
		len = sizeof(*ao);
	} else {
		err = -ENOSYS;
	}
	*out = (struct fuse_out_header){ (uint32_t)(sizeof(*out) + len), err,
					 unique };
	h->ring_ent_in_out.payload_sz = (uint32_t)len;
	cmd(&sqe, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, q, e)->commit_id = commit_id;
	fixed(sqe, q);
	io_uring_submit(&c.ring);
}

/* The zero-copy slot of entry e of queue q: after the nq pools. */
static int zc_slot(int q, int e)
{
	return nq + q * DEPTH + e;
}

/*
 * The memfd both zero-copy cases read from ('a' + i % 26, in pattern), and
 * a connection whose every queue has zero-copy, a fixed pool, and DEPTH
 * entries, each on zc_slot(q, e), or all of a queue on its first slot
 * (shared). Reports the set-up as NAME. Returns the memfd, or -1 with the
 * connection closed.
 */
static int zc_open(char pattern[ZC_SIZE], bool shared, const char *name)
{
	int memfd, err = 0;

	for (int i = 0; i < ZC_SIZE; i++)
		pattern[i] = (char)('a' + i % 26);
	memfd = memfd_create("f", MFD_CLOEXEC);
	if (memfd < 0 || pwrite(memfd, pattern, ZC_SIZE, 0) != ZC_SIZE)
		die("memfd");
	conn_open();
	for (int q = 0; q < nq && !err; q++) {
		err = add_queue(q, FUSE_URING_ZERO_COPY);
		err = err ? err : add_bufpool(q, NBUFS * PAYLOAD, 0, true);
		for (int e = 0; e < DEPTH && !err; e++)
			err = reg(q, e, true,
				  (uint16_t)zc_slot(q, shared ? 0 : e)) == 1 ?
			      0 : -EPROTO;
	}
	expect(name, 0, err);
	if (err) {
		conn_close();
		close(memfd);
		return -1;
	}
	return memfd;
}

/*
 * Serve what arrives for up to 100 ms: a zero-copied READ is not answered
 * but returned in *q and *e (1); the READ_FIXED's CQE (user_data 0xfeed)
 * leaves its result in *fixed_res (2); a timeout or a failed command, 0.
 */
static int zc_serve_one(int *q, int *e, int *fixed_res)
{
	struct __kernel_timespec ts = { .tv_nsec = 100 * 1000 * 1000 };
	struct io_uring_cqe *cqe;
	uint64_t ud;
	int res;

	if (io_uring_wait_cqe_timeout(&c.ring, &cqe, &ts))
		return 0;
	ud = cqe->user_data;
	res = cqe->res;
	io_uring_cqe_seen(&c.ring, cqe);
	if (ud == 0xfeed) {
		*fixed_res = res;
		return 2;
	}
	if (res < 0)
		return 0;
	*q = (int)ud / DEPTH;
	*e = (int)ud % DEPTH;
	if (((struct fuse_in_header *)c.hdr[*q][*e].in_out)->opcode == FUSE_READ &&
	    (c.hdr[*q][*e].ring_ent_in_out.flags & FUSE_URING_ENT_ZERO_COPY))
		return 1;
	zc_serve(*q, *e);
	return 0;
}

/* Has the caller's read(2) returned within ms milliseconds? */
static bool zc_read_returned(int ms)
{
	for (int i = 0; i < ms; i++) {
		if (__atomic_load_n(&zc_returned, __ATOMIC_SEQ_CST))
			return true;
		usleep(1000);
	}
	return __atomic_load_n(&zc_returned, __ATOMIC_SEQ_CST);
}

/* Start the client and serve until its zero-copied READ arrives: held. */
static bool zc_hold_read(pthread_t *client, int *held_q, int *held_e)
{
	int q, e, unused, tries;

	zc_returned = zc_server_done = zc_closed = 0;
	zc_changed = 0;
	pthread_create(client, NULL, zc_client, NULL);
	for (tries = 0; tries < 300; tries++)
		if (zc_serve_one(&q, &e, &unused) == 1) {
			*held_q = q;
			*held_e = e;
			return true;
		}
	return false;
}

/* Submit a READ_FIXED of fd into slot; serve until it completes. */
static void zc_submit_read_fixed(int fd, int slot, uint64_t off)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&c.ring);

	io_uring_prep_read_fixed(sqe, fd, NULL, ZC_SIZE, off, slot);
	sqe->user_data = 0xfeed;
	io_uring_submit(&c.ring);
}

static int zc_wait_read_fixed(void)
{
	int q, e, res = -ETIMEDOUT;

	for (int tries = 0; tries < 300; tries++)
		if (zc_serve_one(&q, &e, &res) == 2)
			break;
	return res;
}

/* Write the reply of the held READ: ZC_SIZE bytes, in its pages. */
static uint64_t zc_reply_read(int q, int e)
{
	struct fuse_uring_req_header *h = &c.hdr[q][e];
	struct fuse_in_header *in = (void *)h->in_out;

	*(struct fuse_out_header *)h->in_out = (struct fuse_out_header){
		(uint32_t)(sizeof(struct fuse_out_header) + ZC_SIZE), 0,
		in->unique };
	h->ring_ent_in_out.payload_sz = ZC_SIZE;
	return h->ring_ent_in_out.commit_id;
}

/* Commit the held READ as answered with ZC_SIZE bytes (in its pages). */
static void zc_commit_read(int q, int e)
{
	struct io_uring_sqe *sqe;
	uint64_t commit_id = zc_reply_read(q, e);

	cmd(&sqe, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, q, e)->commit_id =
		commit_id;
	fixed(sqe, q);
	io_uring_submit(&c.ring);
}

/*
 * Let the client count its changed bytes and close the file, serving its
 * FLUSH and RELEASE on a live connection; then close the connection. If
 * its read(2) has not returned, closing the ring first lets it return.
 */
static void zc_end_client(pthread_t client, bool returned)
{
	int q, e, res;

	__atomic_store_n(&zc_server_done, 1, __ATOMIC_SEQ_CST);
	if (!returned)
		conn_close();
	for (int tries = 0; returned && tries < 300 &&
	     !__atomic_load_n(&zc_closed, __ATOMIC_SEQ_CST); tries++)
		zc_serve_one(&q, &e, &res);
	pthread_join(client, NULL);
	if (returned)
		conn_close();
}

/*
 * umount -f while the server holds the zero-copied READ; then a
 * READ_FIXED at the entry's slot; then the server unregisters the slot.
 */
static void case_zero_copy_abort(void)
{
	struct iovec empty = { 0 };
	int held_q = -1, held_e = -1, late = 0, after = 0, memfd, slot;
	bool held = false, returned = false;
	char pattern[ZC_SIZE];
	pthread_t client;

	memfd = zc_open(pattern, false, "zero_copy_queues_on_every_queue");
	if (memfd < 0)
		return;
	result("zero_copied_read_reaches_the_server",
	       zc_hold_read(&client, &held_q, &held_e),
	       "no zero-copied READ arrived");
	if (held_q >= 0) {
		slot = zc_slot(held_q, held_e);
		umount2(mnt, MNT_FORCE);	/* aborts; EBUSY: the file is open */
		held = !zc_read_returned(1000);
		zc_submit_read_fixed(memfd, slot, 0);
		late = zc_wait_read_fixed();
		/* the server lets go of the pages: now the request may end */
		io_uring_register_buffers_update_tag(&c.ring, (unsigned)slot,
						     &empty, NULL, 1);
		returned = zc_read_returned(10000);
		zc_submit_read_fixed(memfd, slot, 0);
		after = zc_wait_read_fixed();
	}
	zc_end_client(client, held_q >= 0 && returned);
	printf("# 7.3: after umount -f, the caller's read(2) %s while the "
	       "server held its pages; the server's READ_FIXED at the entry's "
	       "slot then gave %d; after the server unregistered the slot the "
	       "read returned (%s), a READ_FIXED at the slot gave %d, and %d of "
	       "the caller's %d bytes changed after its read(2) had returned\n",
	       held ? "waited" : "returned at once", late,
	       zc_read_err ? strerror(zc_read_err) : "success", after,
	       zc_changed, ZC_SIZE);
	result("zero_copy_abort_read_waits_while_its_pages_are_registered",
	       held, "the read(2) returned (%s) with its pages still "
	       "registered in the server's ring",
	       zc_read_err ? strerror(zc_read_err) : "success");
	expect("zero_copy_abort_late_read_fixed_fills_the_held_pages", ZC_SIZE,
	       late);
	result("zero_copy_abort_read_returns_once_the_slot_is_unregistered",
	       returned, "still waiting 10 s after the slot was unregistered");
	expect("zero_copy_abort_read_fails_econnaborted", -ECONNABORTED,
	       -zc_read_err);
	expect("zero_copy_abort_read_fixed_after_the_end_efault", -EFAULT,
	       after);
	result("zero_copy_abort_no_byte_changes_after_the_read_returned",
	       zc_changed == 0, "%d of the caller's %d bytes changed",
	       zc_changed, ZC_SIZE);
	close(memfd);
}

/*
 * The server commits the zero-copied READ while a READ_FIXED into its
 * slot waits on an empty pipe (it took the buffer when it was issued);
 * then the pipe gets the data.
 */
static void case_zero_copy_commit_while_read_fixed_waits(void)
{
	static char piped[ZC_SIZE];
	int held_q = -1, held_e = -1, fixed_res = 0, memfd, p[2];
	bool held = false, returned = false;
	char pattern[ZC_SIZE];
	pthread_t client;

	memfd = zc_open(pattern, false, "zero_copy_queues_for_the_pipe_case");
	if (memfd < 0)
		return;
	if (pipe2(p, O_CLOEXEC))
		die("pipe2");
	memset(piped, 'P', ZC_SIZE);
	result("pipe_case_zero_copied_read_reaches_the_server",
	       zc_hold_read(&client, &held_q, &held_e),
	       "no zero-copied READ arrived");
	if (held_q >= 0) {
		zc_submit_read_fixed(p[0], zc_slot(held_q, held_e), (uint64_t)-1);
		zc_commit_read(held_q, held_e);
		held = !zc_read_returned(1000);
		if (write(p[1], piped, ZC_SIZE) != ZC_SIZE)
			die("write to the pipe");
		fixed_res = zc_wait_read_fixed();
		returned = zc_read_returned(10000);
	}
	zc_end_client(client, held_q >= 0 && returned);
	printf("# 7.3: committed with a READ_FIXED waiting on a pipe, the "
	       "caller's read(2) %s; the READ_FIXED then gave %d, the read "
	       "gave %zd, and %d of its %d bytes changed after it returned\n",
	       held ? "waited for it" : "returned at once", fixed_res,
	       zc_read_n, zc_changed, ZC_SIZE);
	result("commit_read_waits_for_the_running_read_fixed", held,
	       "the read(2) returned (%zd) while a READ_FIXED still held its "
	       "pages", zc_read_n);
	result("commit_read_fixed_completes_from_the_pipe", fixed_res > 0,
	       "READ_FIXED gave %d", fixed_res);
	result("commit_read_returns_after_the_read_fixed",
	       returned && zc_read_n == ZC_SIZE,
	       "read gave %zd (%s)", zc_read_n,
	       zc_read_err ? strerror(zc_read_err) : "no error");
	result("commit_read_has_the_pipes_bytes", fixed_res > 0 &&
	       !memcmp(zc_got, piped, (size_t)fixed_res),
	       "the caller's buffer at its return lacks the READ_FIXED's bytes");
	result("commit_no_byte_changes_after_the_read_returned",
	       zc_changed == 0, "%d of the caller's %d bytes changed",
	       zc_changed, ZC_SIZE);
	close(p[0]);
	close(p[1]);
	close(memfd);
}

/*
 * The server commits the held zero-copied READ from a second ring of its
 * own (same process, same /dev/fuse fd, the same flag and index as the
 * pool's). The pages are registered in the first ring, and 7.3 would look
 * the slot up in the committing one: nothing to unregister there, and with
 * kernel-patches-7.3/0002 the request would then wait for the first ring
 * to go away. 0002 refuses such a commit with EINVAL before it takes the
 * request; the server then answers it on its ring, and the read returns.
 */
static void case_zero_copy_commit_from_another_ring(void)
{
	struct __kernel_timespec ts = { .tv_sec = 1 };
	int held_q = -1, held_e = -1, other = 1, fixed_res = 0, memfd;
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct io_uring r2;
	char pattern[ZC_SIZE];
	bool returned = false;
	pthread_t client;

	memfd = zc_open(pattern, false, "zero_copy_queues_for_the_ring_case");
	if (memfd < 0)
		return;
	result("ring_case_zero_copied_read_reaches_the_server",
	       zc_hold_read(&client, &held_q, &held_e),
	       "no zero-copied READ arrived");
	if (held_q >= 0 && io_uring_queue_init(8, &r2, IORING_SETUP_SQE128) == 0) {
		struct fuse_uring_cmd_req *req;

		sqe = io_uring_get_sqe(&r2);
		memset(sqe, 0, 2 * sizeof(*sqe));
		sqe->opcode = IORING_OP_URING_CMD;
		sqe->fd = c.fd;
		sqe->cmd_op = FUSE_IO_URING_CMD_COMMIT_AND_FETCH;
		req = (void *)sqe->cmd;
		req->qid = (uint16_t)held_q;
		req->commit_id = zc_reply_read(held_q, held_e);
		sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
		sqe->buf_index = (uint16_t)held_q;
		io_uring_submit(&r2);
		if (!io_uring_wait_cqe_timeout(&r2, &cqe, &ts)) {
			other = cqe->res;
			io_uring_cqe_seen(&r2, cqe);
		}
		io_uring_queue_exit(&r2);
	}
	if (held_q >= 0) {
		zc_submit_read_fixed(memfd, zc_slot(held_q, held_e), 0);
		fixed_res = zc_wait_read_fixed();
		zc_commit_read(held_q, held_e);
		returned = zc_read_returned(10000);
	}
	zc_end_client(client, held_q >= 0 && returned);
	printf("# 7.3: a COMMIT_AND_FETCH of the held zero-copied READ from a "
	       "second ring gave %d%s; then READ_FIXED on the first gave %d and "
	       "its commit let the read(2) %s %zd\n", other,
	       other > 0 ? " (taken: no CQE)" : "", fixed_res,
	       returned ? "return" : "wait 10 s, not return", zc_read_n);
	expect("zero_copy_commit_from_another_ring_einval", -EINVAL, other);
	result("zero_copy_commit_then_answered_on_its_ring",
	       fixed_res == ZC_SIZE && returned && zc_read_n == ZC_SIZE &&
	       !memcmp(zc_got, pattern, ZC_SIZE),
	       "READ_FIXED %d, read(2) %zd", fixed_res, zc_read_n);
	close(memfd);
}

/*
 * ---- two entries on one zero-copy slot --------------------------------
 *
 * 7.3 takes an entry's ent_zero_copy_buf_index at REGISTER without asking
 * whether another entry has it already (fuse_uring_create_ring_ent()). The
 * slot is filled per request, by io_buffer_register_bvec(), which refuses
 * a slot that is taken (-EBUSY). So with both entries of a queue on one
 * slot, a second zero-copied READ while the first is held fails: the
 * kernel ends it with -EBUSY when it sends it, before the server sees it
 * (fuse_uring_prepare_send()), and puts the entry back. The held READ is
 * not disturbed. This case records that; the v2 series has no slot index
 * to share (the entry id is the slot).
 */
struct zc_reader {
	char *buf;
	ssize_t n;
	int err;		/* errno of open() or pread(), or 0 */
	int done;
};

/* Read the file on CPU 0: the queue is the caller's CPU, so every reader
 * of this case lands on queue 0. */
static void *zc_read_on_cpu0(void *arg)
{
	struct zc_reader *r = arg;
	char path[512];
	cpu_set_t one;
	int fd;

	CPU_ZERO(&one);
	CPU_SET(0, &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		r->err = errno;
	snprintf(path, sizeof(path), "%s/f", mnt);
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		r->err = errno;
	} else {
		r->n = pread(fd, r->buf, ZC_SIZE, 0);
		if (r->n < 0)
			r->err = errno;
		close(fd);
	}
	__atomic_store_n(&r->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void case_zero_copy_shared_slot(void)
{
	static char buf1[ZC_SIZE] __attribute__((aligned(4096)));
	static char buf2[ZC_SIZE] __attribute__((aligned(4096)));
	struct zc_reader r1 = { .buf = buf1 }, r2 = { .buf = buf2 };
	int held_q = -1, held_e = -1, q, e, second = 0, fixed_res = 0;
	struct io_uring_sqe *sqe;
	char pattern[ZC_SIZE];
	pthread_t t1, t2;
	int memfd, tries;

	memfd = zc_open(pattern, true,
			"register_two_entries_on_one_zero_copy_slot_parks");
	if (memfd < 0)
		return;
	/* the first reader's zero-copied READ: held */
	pthread_create(&t1, NULL, zc_read_on_cpu0, &r1);
	for (tries = 0; held_q < 0 && tries < 300; tries++)
		if (zc_serve_one(&q, &e, &fixed_res) == 1) {
			held_q = q;
			held_e = e;
		}
	result("shared_slot_first_read_reaches_the_server", held_q == 0,
	       "held READ on queue %d", held_q);
	if (held_q >= 0) {
		/* the second reader, on the other entry, while it is held */
		pthread_create(&t2, NULL, zc_read_on_cpu0, &r2);
		for (tries = 0; tries < 300 &&
		     !__atomic_load_n(&r2.done, __ATOMIC_SEQ_CST); tries++)
			if (zc_serve_one(&q, &e, &fixed_res) == 1) {
				second = 1;
				break;
			}
		expect("shared_slot_second_zero_copied_read_ebusy", -EBUSY,
		       __atomic_load_n(&r2.done, __ATOMIC_SEQ_CST) ?
		       -r2.err : -ETIMEDOUT);
		result("shared_slot_second_read_never_reaches_the_server",
		       !second, "it arrived at entry %d", e);
		/* then the held READ is answered as the server would */
		sqe = io_uring_get_sqe(&c.ring);
		io_uring_prep_read_fixed(sqe, memfd, NULL, ZC_SIZE, 0,
					 zc_slot(held_q, 0));
		sqe->user_data = 0xfeed;
		io_uring_submit(&c.ring);
		for (tries = 0; tries < 300; tries++)
			if (zc_serve_one(&q, &e, &fixed_res) == 2)
				break;
		expect("shared_slot_read_fixed_fills_the_held_read", ZC_SIZE,
		       fixed_res);
		struct fuse_uring_req_header *h = &c.hdr[held_q][held_e];
		struct fuse_in_header *in = (void *)h->in_out;

		*(struct fuse_out_header *)h->in_out = (struct fuse_out_header){
			(uint32_t)(sizeof(struct fuse_out_header) + ZC_SIZE), 0,
			in->unique };
		h->ring_ent_in_out.payload_sz = ZC_SIZE;
		cmd(&sqe, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, held_q,
		    held_e)->commit_id = h->ring_ent_in_out.commit_id;
		fixed(sqe, held_q);
		io_uring_submit(&c.ring);
		for (tries = 0; tries < 300 &&
		     !__atomic_load_n(&r1.done, __ATOMIC_SEQ_CST); tries++)
			zc_serve_one(&q, &e, &fixed_res);
		result("shared_slot_held_read_intact",
		       r1.n == ZC_SIZE && !memcmp(buf1, pattern, ZC_SIZE),
		       "read gave %zd (%s)", r1.n, strerror(r1.err));
		if (!__atomic_load_n(&r2.done, __ATOMIC_SEQ_CST))
			umount2(mnt, MNT_FORCE);	/* let it return */
		pthread_join(t2, NULL);
	}
	printf("# 7.3: two entries on one zero-copy slot: the second reader's "
	       "read(2), while the first is held: %s\n",
	       r2.done ? (r2.err ? strerror(r2.err) : "success") : "not run");
	if (!__atomic_load_n(&r1.done, __ATOMIC_SEQ_CST))
		umount2(mnt, MNT_FORCE);
	pthread_join(t1, NULL);
	conn_close();
	close(memfd);
}

/*
 * ---- waiting for a pool buffer -----------------------------------------
 *
 * A pool with fewer buffers than its queue has entries: a request that
 * needs a buffer while none is free waits in the queue's fuse_req_queue.
 * 7.3 as released looks at the oldest waiting request only, and a buffer
 * that comes back without an entry fetching with it starts nothing. So:
 * - a RELEASE, which needs no buffer, waits behind a WRITE that waits for
 *   the buffer a held READ has, with the other entry idle;
 * - the buffer of a request whose send io_uring cancelled (its entry's
 *   ring was closed) is not given to the WRITE that waits for it;
 * - an entry registered while a WRITE waits for one (the only other entry
 *   holds a READ) is only made available: the WRITE waits for the READ's
 *   commit;
 * - a background RELEASE that a READ's end lets in waits behind the READ
 *   the committing entry takes with the buffer, with the other entry idle.
 * A server that answers what it holds only once it has seen the later
 * request stalls for good. kernel-patches-7.3/0003 (the series' 0019)
 * sends all four; before it the four cases below fail.
 *
 * Every queue has DEPTH (2) entries and a pool of one buffer (two in the
 * third case), not fixed (copy mode). The callers are threads pinned to
 * CPU 0, so that their requests share queue 0 (the queue is the caller's
 * CPU); this thread is the server, and holds a request by not committing
 * it. Files: "x" is read, "f" written, "g" closed or fsync'ed; every READ
 * and WRITE is WT_SIZE bytes (direct I/O), one pool buffer.
 */
#define WT_SIZE PAYLOAD
#define WT_STALL_MS 3000	/* how long a request that can go may take */
#define WT_WAIT_MS 5000		/* for what goes at once */
#define WT_QUIET_MS 300		/* "nothing arrives": a request that waits */

enum { WT_X = 2, WT_F, WT_G };	/* node ids */

/* Where entry 1 of queue 0 is, when wt_open() returns */
enum wt_e1 {
	WT_E1_RING1,	/* on the connection's ring, like every other entry */
	WT_E1_RING2,	/* on a second ring, whose task work waits */
	WT_E1_LATER,	/* not registered: the case does it */
};

/* One system call, made by a thread of its own pinned to CPU 0. */
struct wt_call {
	pthread_t th;
	bool started;
	ssize_t (*fn)(struct wt_call *);
	int fd;
	ssize_t ret;
	int err;		/* errno, or 0 */
	int tid;		/* set just before the call */
	int done;
	char buf[WT_SIZE] __attribute__((aligned(4096)));
};

static struct wt_call wt_calls[3];

/* The server's view of a case. */
static struct {
	bool hold_read, hold_fsync;	/* hold the first READ, FSYNC */
	bool hold_read2;		/* and the second READ */
	int read_q, read_e;		/* the held READ, or -1 */
	int read2_q, read2_e;		/* the second held READ, or -1 */
	int fsync_q, fsync_e;		/* the held FSYNC, or -1 */
	int reads, writes, releases;	/* seen on the ring */
	int write_e;			/* the entry of the last WRITE, or -1 */
	int release_e;			/* the entry of the last RELEASE, or -1 */
	bool write_bad;			/* a WRITE's bytes not as written */
	bool async_dio;			/* FUSE_ASYNC_DIO, max_background 2 */
	int fd_x, fd_f, fd_g;
	int fd_xd;			/* "x" with O_DIRECT (async_dio only) */
	int open_err;
	int opened;
	struct io_uring r2;		/* cancelled-send: entry 1 of queue 0 */
	bool r2_up;
} wt;

/*
 * Two direct reads of "x" (wt.fd_xd), submitted with io_uring by a thread
 * pinned to CPU 0 whose io-wq is pinned there too: with FUSE_ASYNC_DIO
 * each is a background READ, on queue 0.
 */
static struct {
	pthread_t th;
	bool up;
	int err;		/* of the set-up or a wait, negative, or 0 */
	int res[2];		/* the reads' CQEs, -EINPROGRESS before */
	int done;
	char buf[2][WT_SIZE] __attribute__((aligned(4096)));
} wt_aio;

/* why a case failed: set when an earlier step did */
static const char *wt_why(const char *why)
{
	return why ? why : "an earlier step failed";
}

static char wt_read_byte(uint64_t i)
{
	return (char)('r' + i % 11);
}

static char wt_write_byte(uint64_t i)
{
	return (char)('w' + i % 7);
}

static long wt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Answer the request of entry e of queue q: error err, len payload bytes. */
static void wt_commit(int q, int e, int err, size_t len)
{
	struct fuse_uring_req_header *h = &c.hdr[q][e];
	uint64_t unique = ((struct fuse_in_header *)h->in_out)->unique;
	uint64_t commit_id = h->ring_ent_in_out.commit_id;
	struct io_uring_sqe *sqe;

	*(struct fuse_out_header *)h->in_out = (struct fuse_out_header){
		(uint32_t)(sizeof(struct fuse_out_header) + len), err, unique };
	h->ring_ent_in_out.payload_sz = (uint32_t)len;
	cmd(&sqe, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, q, e)->commit_id =
		commit_id;
	io_uring_submit(&c.ring);
}

/* The READ's reply: its bytes, from the file's pattern, in its buffer. */
static void wt_answer_read(int q, int e)
{
	struct fuse_uring_req_header *h = &c.hdr[q][e];
	struct fuse_read_in *ri = (void *)h->op_in;
	char *buf = c.pool[q] + h->ring_ent_in_out.offset;
	size_t len = ri->size < WT_SIZE ? ri->size : WT_SIZE;

	for (size_t i = 0; i < len; i++)
		buf[i] = wt_read_byte(ri->offset + i);
	wt_commit(q, e, 0, len);
}

/*
 * Answer LOOKUP of "x", "f" and "g", GETATTR, OPEN (direct I/O), READ,
 * WRITE (checking its bytes), FLUSH, FSYNC and RELEASE; or hold the first
 * READ, the second READ, FSYNC, if told to.
 */
static void wt_serve(int q, int e)
{
	struct fuse_uring_req_header *h = &c.hdr[q][e];
	struct fuse_in_header *in = (void *)h->in_out;
	/* the payload buffer: only for a request that has one */
	char *buf = c.pool[q] + h->ring_ent_in_out.offset;
	struct fuse_attr attr = { .ino = in->nodeid, .mode = S_IFREG | 0644,
				  .nlink = 1, .size = WT_SIZE,
				  .blocks = WT_SIZE / 512 };
	size_t len = 0;
	int err = 0;

	switch (in->opcode) {
	case FUSE_LOOKUP: {
		struct fuse_entry_out *eo = (void *)buf;

		attr.ino = !strcmp(buf, "x") ? WT_X : !strcmp(buf, "f") ? WT_F :
			   !strcmp(buf, "g") ? WT_G : 0;
		if (!attr.ino) {
			err = -ENOENT;
			break;
		}
		memset(eo, 0, sizeof(*eo));
		eo->nodeid = attr.ino;
		eo->attr = attr;
		len = sizeof(*eo);
		break;
	}
	case FUSE_GETATTR: {
		struct fuse_attr_out *ao = (void *)buf;

		memset(ao, 0, sizeof(*ao));
		ao->attr = in->nodeid == 1 ?
			   (struct fuse_attr){ .ino = 1, .mode = S_IFDIR | 0755,
					       .nlink = 2 } : attr;
		len = sizeof(*ao);
		break;
	}
	case FUSE_OPEN: {
		struct fuse_open_out *oo = (void *)buf;

		memset(oo, 0, sizeof(*oo));
		oo->fh = in->nodeid;
		oo->open_flags = FOPEN_DIRECT_IO;
		len = sizeof(*oo);
		break;
	}
	case FUSE_READ:
		wt.reads++;
		if (wt.hold_read && wt.read_q < 0) {
			wt.read_q = q;
			wt.read_e = e;
			return;
		}
		if (wt.hold_read2 && wt.read2_q < 0) {
			wt.read2_q = q;
			wt.read2_e = e;
			return;
		}
		wt_answer_read(q, e);
		return;
	case FUSE_WRITE: {
		struct fuse_write_in *wi = (void *)h->op_in;
		struct fuse_write_out *wo = (void *)buf;
		bool bad = wi->offset != 0 || wi->size != WT_SIZE ||
			   h->ring_ent_in_out.payload_sz != WT_SIZE;

		for (int i = 0; i < WT_SIZE && !bad; i++)
			bad = buf[i] != wt_write_byte((uint64_t)i);
		wt.write_bad |= bad;
		wt.writes++;
		wt.write_e = e;
		memset(wo, 0, sizeof(*wo));
		wo->size = wi->size;
		len = sizeof(*wo);
		break;
	}
	case FUSE_FSYNC:
		if (wt.hold_fsync && wt.fsync_q < 0) {
			wt.fsync_q = q;
			wt.fsync_e = e;
			return;
		}
		break;
	case FUSE_RELEASE:
		wt.releases++;
		wt.release_e = e;
		break;
	case FUSE_FLUSH:
		break;
	default:
		err = -ENOSYS;
	}
	wt_commit(q, e, err, len);
}

/* Serve for up to ms, or until stop() holds. */
static void wt_serve_for(int ms, bool (*stop)(void))
{
	long end = wt_now_ms() + ms;

	while (!(stop && stop()) && wt_now_ms() < end) {
		struct __kernel_timespec ts = { .tv_nsec = 50 * 1000 * 1000 };
		struct io_uring_cqe *cqe;
		uint64_t ud;
		int res;

		if (io_uring_wait_cqe_timeout(&c.ring, &cqe, &ts))
			continue;
		ud = cqe->user_data;
		res = cqe->res;
		io_uring_cqe_seen(&c.ring, cqe);
		if (res < 0 || ud >= (uint64_t)(nq * DEPTH)) {
			printf("# command %llu ended with %d\n",
			       (unsigned long long)ud, res);
			continue;
		}
		wt_serve((int)ud / DEPTH, (int)ud % DEPTH);
	}
}

static bool wt_call_done(struct wt_call *k)
{
	return __atomic_load_n(&k->done, __ATOMIC_SEQ_CST);
}

static bool wt_read_held(void) { return wt.read_q >= 0; }
static bool wt_read2_held(void) { return wt.read2_q >= 0; }
static bool wt_fsync_held(void) { return wt.fsync_q >= 0; }
static bool wt_written(void) { return wt.writes > 0; }
static bool wt_released(void) { return wt.releases > 0; }
static bool wt_opened(void)
{
	return __atomic_load_n(&wt.opened, __ATOMIC_SEQ_CST);
}

static bool wt_all_returned(void)
{
	for (size_t i = 0; i < sizeof(wt_calls) / sizeof(wt_calls[0]); i++)
		if (wt_calls[i].started && !wt_call_done(&wt_calls[i]))
			return false;
	return true;
}

static ssize_t wt_pread(struct wt_call *k)
{
	return pread(k->fd, k->buf, WT_SIZE, 0);
}

static ssize_t wt_pwrite(struct wt_call *k)
{
	for (int i = 0; i < WT_SIZE; i++)
		k->buf[i] = wt_write_byte((uint64_t)i);
	return pwrite(k->fd, k->buf, WT_SIZE, 0);
}

static ssize_t wt_close_fd(struct wt_call *k)
{
	return close(k->fd);
}

static ssize_t wt_fsync(struct wt_call *k)
{
	return fsync(k->fd);
}

static void *wt_thread(void *arg)
{
	struct wt_call *k = arg;
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(0, &one);
	if (sched_setaffinity(0, sizeof(one), &one)) {
		k->err = errno;
		k->ret = -1;
	} else {
		__atomic_store_n(&k->tid, (int)gettid(), __ATOMIC_SEQ_CST);
		k->ret = k->fn(k);
		k->err = k->ret < 0 ? errno : 0;
	}
	__atomic_store_n(&k->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void wt_start(struct wt_call *k, ssize_t (*fn)(struct wt_call *),
		     int fd)
{
	k->fn = fn;
	k->fd = fd;
	if (pthread_create(&k->th, NULL, wt_thread, k))
		die("pthread_create");
	k->started = true;
}

/* Does the caller sleep in its system call (within 2 s)? */
static bool wt_sleeps(struct wt_call *k)
{
	char path[64], line[512], *p;
	int tid = 0;

	for (int i = 0; i < 2000 && !tid; i++) {
		tid = __atomic_load_n(&k->tid, __ATOMIC_SEQ_CST);
		if (!tid)
			usleep(1000);
	}
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	for (int i = 0; tid && i < 400 && !wt_call_done(k); i++) {
		FILE *f = fopen(path, "re");

		p = f ? fgets(line, sizeof(line), f) : NULL;
		if (f)
			fclose(f);
		p = p ? strrchr(line, ')') : NULL;
		if (p && (p[2] == 'S' || p[2] == 'D'))
			return !wt_call_done(k);
		usleep(5000);
	}
	return false;
}

static void *wt_open_files(void *arg)
{
	char path[512];

	(void)arg;
	snprintf(path, sizeof(path), "%s/x", mnt);
	wt.fd_x = open(path, O_RDONLY | O_CLOEXEC);
	if (wt.async_dio && wt.fd_x >= 0)
		wt.fd_xd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	snprintf(path, sizeof(path), "%s/f", mnt);
	wt.fd_f = open(path, O_WRONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "%s/g", mnt);
	wt.fd_g = open(path, O_RDONLY | O_CLOEXEC);
	wt.open_err = wt.fd_x < 0 || wt.fd_f < 0 || wt.fd_g < 0 ||
		      (wt.async_dio && wt.fd_xd < 0) ? errno : 0;
	__atomic_store_n(&wt.opened, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/*
 * Every queue: ADD_QUEUE, ADD_BUFPOOL of nbufs buffers, DEPTH REGISTERs;
 * then "x", "f" and "g" are opened, and with async_dio (FUSE_ASYNC_DIO
 * and max_background 2 in the INIT reply) "x" once more with O_DIRECT, as
 * wt.fd_xd. Entry 1 of queue 0 is where e1 says.
 * On WT_E1_RING2 it is registered after the opens from a second ring, with
 * IORING_SETUP_DEFER_TASKRUN: a request sent to it waits in that ring's
 * task work until this thread waits on that ring, which it never does.
 * Registered last, it is the entry queue 0 hands its next request to. On
 * WT_E1_LATER it is not registered at all. NULL, or what failed.
 */
static const char *wt_open(enum wt_e1 e1, int nbufs, bool async_dio)
{
	static char why[128];
	bool ring2 = e1 == WT_E1_RING2;
	pthread_t opener;
	int err = 0;

	memset(&wt, 0, sizeof(wt));
	memset(wt_calls, 0, sizeof(wt_calls));
	memset(&wt_aio, 0, sizeof(wt_aio));
	wt.read_q = wt.read_e = wt.read2_q = wt.read2_e = -1;
	wt.fsync_q = wt.fsync_e = wt.write_e = wt.release_e = -1;
	wt.fd_x = wt.fd_f = wt.fd_g = wt.fd_xd = -1;
	wt.async_dio = async_dio;
	conn_open_init(async_dio);
	for (int q = 0; q < nq && !err; q++) {
		err = add_queue(q, 0);
		err = err ? err : add_bufpool(q, (uint32_t)nbufs * WT_SIZE, 0,
					      false);
		for (int e = 0; e < DEPTH && !err; e++)
			if (e1 == WT_E1_RING1 || q || e != 1)
				err = reg(q, e, false, 0) == 1 ? 0 : -EPROTO;
	}
	if (err) {
		snprintf(why, sizeof(why), "ADD_QUEUE, ADD_BUFPOOL, REGISTER: %s",
			 strerror(-err));
		return why;
	}
	pthread_create(&opener, NULL, wt_open_files, NULL);
	wt_serve_for(WT_WAIT_MS, wt_opened);
	if (!wt_opened())
		umount2(mnt, MNT_FORCE);	/* let it return */
	pthread_join(opener, NULL);
	if (wt.open_err || !wt_opened()) {
		snprintf(why, sizeof(why), "open of \"x\"%s, \"f\", \"g\": %s",
			 async_dio ? " (also O_DIRECT)" : "",
			 wt.open_err ? strerror(wt.open_err) : "no answer");
		return why;
	}
	if (ring2) {
		struct io_uring_sqe *sqe;
		struct io_uring_cqe *cqe;
		struct fuse_uring_cmd_req *req;

		err = io_uring_queue_init(8, &wt.r2, IORING_SETUP_SQE128 |
					  IORING_SETUP_SINGLE_ISSUER |
					  IORING_SETUP_DEFER_TASKRUN);
		if (err) {
			snprintf(why, sizeof(why), "io_uring_queue_init("
				 "DEFER_TASKRUN): %s", strerror(-err));
			return why;
		}
		wt.r2_up = true;
		sqe = io_uring_get_sqe(&wt.r2);
		memset(sqe, 0, 2 * sizeof(*sqe));
		sqe->opcode = IORING_OP_URING_CMD;
		sqe->fd = c.fd;
		sqe->cmd_op = FUSE_IO_URING_CMD_REGISTER;
		sqe->addr = (uintptr_t)c.iov[0][1];
		sqe->len = 2;
		sqe->user_data = 1;
		req = (void *)sqe->cmd;
		req->qid = 0;
		if (io_uring_submit(&wt.r2) != 1)
			die("io_uring_submit");
		if (!io_uring_peek_cqe(&wt.r2, &cqe)) {
			snprintf(why, sizeof(why), "REGISTER on the second ring "
				 "gave %d", cqe->res);
			return why;
		}
	}
	return NULL;
}

/*
 * The end of a case: abort the connection, which ends the requests of
 * callers that still wait and makes the closes below send nothing; join
 * the callers; close what is open.
 */
static void wt_close(void)
{
	umount2(mnt, MNT_FORCE);	/* aborts; EBUSY: files are open */
	for (size_t i = 0; i < sizeof(wt_calls) / sizeof(wt_calls[0]); i++)
		if (wt_calls[i].started)
			pthread_join(wt_calls[i].th, NULL);
	if (wt_aio.up)
		pthread_join(wt_aio.th, NULL);
	if (wt.fd_xd >= 0)
		close(wt.fd_xd);
	if (wt.fd_x >= 0)
		close(wt.fd_x);
	if (wt.fd_f >= 0)
		close(wt.fd_f);
	if (wt.fd_g >= 0)
		close(wt.fd_g);
	if (wt.r2_up)
		io_uring_queue_exit(&wt.r2);
	conn_close();
}

/* n bytes read from offset 0, the server's */
static bool wt_bytes_as_served(const char *buf, ssize_t n)
{
	if (n != WT_SIZE)
		return false;
	for (int i = 0; i < WT_SIZE; i++)
		if (buf[i] != wt_read_byte((uint64_t)i))
			return false;
	return true;
}

static bool wt_read_as_served(struct wt_call *k)
{
	return wt_bytes_as_served(k->buf, k->ret);
}

/*
 * The server holds a READ of "x", which has queue 0's one buffer; a WRITE
 * of "f" waits for that buffer, with entry 1 free; then a caller closes
 * "g". Its FLUSH goes at once (a foreground request that finds a free
 * entry); its RELEASE is a background request, queued behind the WRITE. It
 * needs no buffer, and must reach the server while the READ is held.
 * 7.3 as released sends it only after the READ is committed
 * (fuse_uring_queue_bq_req() looks at the oldest waiting request only).
 */
static void case_release_passes_the_waiting_write(void)
{
	struct wt_call *rd = &wt_calls[0], *wr = &wt_calls[1], *cl = &wt_calls[2];
	const char *why = wt_open(WT_E1_RING1, 1, false);
	long released_ms = -1, t0;
	bool held = false, waited = false;

	result("one_buffer_queues_on_every_queue", !why, "%s", wt_why(why));
	if (!why) {
		wt.hold_read = true;
		wt_start(rd, wt_pread, wt.fd_x);
		wt_serve_for(WT_WAIT_MS, wt_read_held);
		held = wt.read_q == 0;
		if (!held)
			why = wt.read_q < 0 ? "no READ reached the server" :
			      "the READ came on another queue than CPU 0's";
	}
	result("one_buffer_read_holds_the_only_buffer", held, "%s", wt_why(why));
	if (held) {
		wt_start(wr, wt_pwrite, wt.fd_f);
		waited = wt_sleeps(wr);
		wt_serve_for(WT_QUIET_MS, wt_written);
		waited = waited && !wt.writes && !wt_call_done(wr);
		if (!waited)
			why = wt.writes ? "the WRITE reached the server while the "
			      "held READ had the only buffer" :
			      "the writer did not wait";
	}
	result("one_buffer_write_waits_for_the_buffer", waited, "%s", wt_why(why));
	if (waited) {
		wt_start(cl, wt_close_fd, wt.fd_g);
		wt.fd_g = -1;
		t0 = wt_now_ms();
		wt_serve_for(WT_STALL_MS, wt_released);
		if (wt.releases)
			released_ms = wt_now_ms() - t0;
		/* now the READ: the WRITE gets the buffer, the callers return */
		wt_answer_read(wt.read_q, wt.read_e);
		wt_serve_for(WT_WAIT_MS, wt_all_returned);
		printf("# 7.3: queue 0, 2 entries, a pool of 1 buffer: the server "
		       "held a READ, a WRITE waited for the buffer; the RELEASE of "
		       "close(2) %s %ld ms%s; after the READ's commit the read(2) "
		       "gave %zd, the WRITE %s, write(2) %zd, close(2) %zd\n",
		       released_ms >= 0 ? "reached the server after" :
		       "did not reach the server within",
		       released_ms >= 0 ? released_ms : (long)WT_STALL_MS,
		       released_ms >= 0 ? ", with the READ held" :
		       wt.releases ? " with the READ held, but after its commit" :
		       " with the READ held, nor after its commit",
		       rd->ret, !wt.writes ? "never came" : wt.write_bad ?
		       "came, not as written" : "came as written",
		       wr->ret, cl->ret);
		why = "the RELEASE of \"g\" did not reach the server within "
		      "3000 ms while the held READ had the only buffer and a "
		      "WRITE waited for it: it waited behind the WRITE with "
		      "entry 1 free";
	}
	result("one_buffer_release_passes_the_waiting_write", released_ms >= 0,
	       "%s", why);
	result("one_buffer_read_has_the_servers_bytes",
	       waited && wt_read_as_served(rd), "%s", waited ?
	       "the read(2) did not return the server's bytes" : why);
	result("one_buffer_write_arrives_as_written",
	       waited && wt.writes == 1 && !wt.write_bad && wr->ret == WT_SIZE,
	       "%s", waited ? "WRITE not served as written, or write(2) did "
	       "not return its size" : why);
	result("one_buffer_close_returns_0",
	       waited && wt_call_done(cl) && cl->ret == 0 && wt.releases == 1,
	       "%s", waited ? "close(2) failed, or its RELEASE never came" : why);
	wt_close();
}

/*
 * Entry 1 of queue 0 is on a second ring whose task work waits
 * (DEFER_TASKRUN). A READ of "x" goes to it, takes queue 0's one buffer,
 * and waits in that ring's task work; the server holds an FSYNC of "g" on
 * entry 0 (it needs no buffer; of "g", as fsync(2) holds its file's inode
 * lock); a WRITE of "f" waits, for an entry and then, as the FSYNC is
 * answered, for the buffer. Closing the second ring cancels the READ's
 * send (fuse_uring_send_in_task() with tw.cancel): the read(2) fails with
 * ECANCELED and the buffer comes back, and the WRITE must take it on entry
 * 0 at once. 7.3 as released lets it wait until some entry commits, and
 * the server has nothing left to commit.
 */
static void case_cancelled_send_gives_the_buffer(void)
{
	struct wt_call *rd = &wt_calls[0], *fs = &wt_calls[1], *wr = &wt_calls[2];
	const char *why = wt_open(WT_E1_RING2, 1, false);
	bool rd_waits = false, held = false, waited = false, gave = false;
	long gave_ms = -1, t0;

	result("cancelled_send_queues_with_an_entry_on_a_second_ring", !why,
	       "%s", wt_why(why));
	if (!why) {
		wt.hold_read = wt.hold_fsync = true;
		wt_start(rd, wt_pread, wt.fd_x);
		rd_waits = wt_sleeps(rd);
		wt_serve_for(WT_QUIET_MS, wt_read_held);
		rd_waits = rd_waits && !wt.reads && !wt_call_done(rd);
		if (!rd_waits)
			why = wt.reads ? "the READ came on the first ring" :
			      "the reader did not wait";
	}
	result("cancelled_send_read_waits_in_the_second_rings_task_work",
	       rd_waits, "%s", wt_why(why));
	if (rd_waits) {
		wt_start(fs, wt_fsync, wt.fd_g);
		wt_serve_for(WT_WAIT_MS, wt_fsync_held);
		held = wt.fsync_q == 0 && wt.fsync_e == 0;
		if (!held)
			why = wt.fsync_q < 0 ? "no FSYNC reached the server" :
			      "the FSYNC came on another entry than queue 0's 0";
	}
	if (held) {
		wt_start(wr, wt_pwrite, wt.fd_f);
		waited = wt_sleeps(wr);
		wt_serve_for(WT_QUIET_MS, wt_written);
		/* entry 0 commits the FSYNC, and finds no buffer for the WRITE */
		wt_commit(wt.fsync_q, wt.fsync_e, 0, 0);
		wt_serve_for(WT_QUIET_MS, wt_written);
		waited = waited && !wt.writes && !wt.reads && !wt_call_done(wr);
		if (!waited)
			why = wt.writes ? "the WRITE reached the server while the "
			      "READ on the second ring had the only buffer" :
			      "the writer did not wait";
	}
	result("cancelled_send_fsync_held_on_the_first_ring",
	       held && wt_call_done(fs) && fs->ret == 0, "%s", held ?
	       "fsync(2) did not return 0 once the FSYNC was answered" : why);
	result("cancelled_send_write_waits_for_the_buffer", waited, "%s", wt_why(why));
	if (waited) {
		/* the READ's send is cancelled; its buffer comes back */
		io_uring_queue_exit(&wt.r2);
		wt.r2_up = false;
		t0 = wt_now_ms();
		wt_serve_for(WT_STALL_MS, wt_written);
		gave = wt.writes > 0;
		if (gave)
			gave_ms = wt_now_ms() - t0;
		wt_serve_for(WT_WAIT_MS, wt_all_returned);
		printf("# 7.3: queue 0, 2 entries, a pool of 1 buffer: closing the "
		       "second ring cancelled the send of the READ that had the "
		       "buffer (read(2): %s); the waiting WRITE %s %ld ms%s; "
		       "write(2) %s\n",
		       wt_call_done(rd) ? (rd->err ? strerror(rd->err) : "success") :
		       "still waiting",
		       gave ? "reached the server after" :
		       "did not reach the server within",
		       gave ? gave_ms : (long)WT_STALL_MS,
		       !gave ? ", with entry 0 free" : wt.write_bad ?
		       ", not as written" : ", as written",
		       !wt_call_done(wr) ? "still waiting" :
		       wr->ret == WT_SIZE ? "returned its size" : "failed");
		why = "the WRITE did not reach the server within 3000 ms after "
		      "closing the second ring cancelled the READ's send and gave "
		      "back the only buffer, with entry 0 free";
	}
	result("cancelled_send_gives_the_buffer_to_the_waiting_write", gave,
	       "%s", why);
	result("cancelled_send_read_fails_ecanceled",
	       waited && wt_call_done(rd) && rd->ret < 0 && rd->err == ECANCELED,
	       "%s", waited ? "read(2) did not fail with ECANCELED" : why);
	result("cancelled_send_write_arrives_as_written",
	       waited && wt.writes == 1 && !wt.write_bad && wr->ret == WT_SIZE,
	       "%s", waited ? (wt.writes ? "WRITE not as written, or write(2) "
			       "did not return its size" :
			       "the WRITE never reached the server") : why);
	wt_close();
}

/*
 * Queue 0 has entry 0 only, and a pool of two buffers. The server holds a
 * READ of "x" on entry 0; a WRITE of "f" finds no entry and waits. Then
 * entry 1 of queue 0 is registered, and the WRITE must come in it at once:
 * a buffer is free for it. 7.3 as released only makes the entry available
 * (fuse_uring_do_register()), and the WRITE waits until the READ is
 * committed and entry 0 fetches it. The REGISTER's CQE is the entry's
 * first request: wt_serve_for() takes it, not run().
 */
static void case_registered_entry_takes_the_waiting_write(void)
{
	struct wt_call *rd = &wt_calls[0], *wr = &wt_calls[1];
	const char *why = wt_open(WT_E1_LATER, 2, false);
	bool held = false, waited = false, took = false;
	long took_ms = -1, t0;
	static char came[160];

	result("registered_entry_queues_without_entry_1_of_queue_0", !why,
	       "%s", wt_why(why));
	if (!why) {
		wt.hold_read = true;
		wt_start(rd, wt_pread, wt.fd_x);
		wt_serve_for(WT_WAIT_MS, wt_read_held);
		held = wt.read_q == 0 && wt.read_e == 0;
		if (!held)
			why = wt.read_q < 0 ? "no READ reached the server" :
			      wt.read_q ? "the READ came on another queue than "
			      "CPU 0's" : "the READ came on another entry than 0";
	}
	result("registered_entry_read_held_on_entry_0", held, "%s", wt_why(why));
	if (held) {
		wt_start(wr, wt_pwrite, wt.fd_f);
		waited = wt_sleeps(wr);
		wt_serve_for(WT_QUIET_MS, wt_written);
		waited = waited && !wt.writes && !wt_call_done(wr);
		if (!waited)
			why = wt.writes ? "the WRITE reached the server while "
			      "queue 0's only entry held the READ" :
			      "the writer did not wait";
	}
	result("registered_entry_write_waits_for_an_entry", waited, "%s",
	       wt_why(why));
	if (waited) {
		struct io_uring_sqe *sqe;

		cmd(&sqe, FUSE_IO_URING_CMD_REGISTER, 0, 1);
		if (io_uring_submit(&c.ring) != 1)
			die("io_uring_submit");
		t0 = wt_now_ms();
		wt_serve_for(WT_STALL_MS, wt_written);
		if (wt.writes)
			took_ms = wt_now_ms() - t0;
		took = took_ms >= 0 && wt.write_e == 1;
		/* now the READ: the callers return */
		wt_answer_read(wt.read_q, wt.read_e);
		wt_serve_for(WT_WAIT_MS, wt_all_returned);
		if (took_ms >= 0)
			snprintf(came, sizeof(came), "reached the server after "
				 "%ld ms in entry %d, %s", took_ms, wt.write_e,
				 wt.write_bad ? "not as written" : "as written");
		else if (wt.writes)
			snprintf(came, sizeof(came), "did not reach the server "
				 "within %d ms, with the READ held on entry 0 "
				 "and a buffer free, but after the READ's "
				 "commit, in entry %d", WT_STALL_MS, wt.write_e);
		else
			snprintf(came, sizeof(came), "did not reach the server "
				 "within %d ms, with the READ held on entry 0 "
				 "and a buffer free, nor after the READ's "
				 "commit", WT_STALL_MS);
		printf("# 7.3: queue 0 with entry 0 only, a pool of 2 buffers: "
		       "the server held a READ, a WRITE waited for an entry; "
		       "after entry 1 was registered the WRITE %s; the read(2) "
		       "gave %zd once the READ was committed, write(2) %zd\n",
		       came, rd->ret, wr->ret);
		if (took_ms >= 0 && !took)
			snprintf(came, sizeof(came), "the WRITE came in entry "
				 "%d of queue 0, not in the registered entry 1",
				 wt.write_e);
		why = took_ms >= 0 ? came : "the WRITE did not reach the server "
		      "within 3000 ms after entry 1 of queue 0 was registered, "
		      "with the READ held on entry 0 and a buffer free";
	}
	result("registered_entry_takes_the_waiting_write", took, "%s", why);
	result("registered_entry_write_arrives_as_written",
	       waited && wt.writes == 1 && !wt.write_bad && wr->ret == WT_SIZE,
	       "%s", waited ? (wt.writes ? "WRITE not as written, or write(2) "
			       "did not return its size" :
			       "the WRITE never reached the server") : why);
	result("registered_entry_read_has_the_servers_bytes",
	       waited && wt_read_as_served(rd), "%s", waited ?
	       "the read(2) did not return the server's bytes" : why);
	wt_close();
}

static void *wt_aio_thread(void *arg)
{
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	bool ring_up = false;
	cpu_set_t one;
	int err = 0, n;

	(void)arg;
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		err = -errno;
	if (!err) {
		err = io_uring_queue_init(4, &ring, 0);
		ring_up = !err;
	}
	/* io-wq issues the reads: on CPU 0 too, so that they go to queue 0 */
	if (!err)
		err = io_uring_register_iowq_aff(&ring, sizeof(one), &one);
	for (int i = 0; i < 2 && !err; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

		io_uring_prep_read(sqe, wt.fd_xd, wt_aio.buf[i], WT_SIZE, 0);
		sqe->user_data = (uint64_t)i;
	}
	if (!err && (n = io_uring_submit(&ring)) != 2)
		err = n < 0 ? n : -EPROTO;
	for (int i = 0; i < 2 && !err; i++) {
		err = io_uring_wait_cqe(&ring, &cqe);
		if (!err) {
			wt_aio.res[cqe->user_data & 1] = cqe->res;
			io_uring_cqe_seen(&ring, cqe);
		}
	}
	if (ring_up)
		io_uring_queue_exit(&ring);
	wt_aio.err = err;
	__atomic_store_n(&wt_aio.done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static bool wt_aio_done(void)
{
	return __atomic_load_n(&wt_aio.done, __ATOMIC_SEQ_CST);
}

static bool wt_flushed_all_done(void)
{
	return wt.releases && wt_aio_done() && wt_all_returned();
}

/* a read's result: its size, or its error by name */
static const char *wt_res(int res)
{
	static char s[2][64];
	static int k;

	k ^= 1;
	if (res == -EINPROGRESS)
		snprintf(s[k], sizeof(s[k]), "none");
	else if (res < 0)
		snprintf(s[k], sizeof(s[k]), "%d (%s)", res, strerror(-res));
	else
		snprintf(s[k], sizeof(s[k]), "%d", res);
	return s[k];
}

/*
 * Background requests that a request's end lets in, while the committing
 * entry takes another one. With FUSE_ASYNC_DIO direct reads submitted
 * with io_uring are background requests, and max_background is 2. READ A
 * of "x" takes queue 0's one buffer and is held; READ B waits for the
 * buffer, with entry 1 free; a caller closes "g": its FLUSH goes at once,
 * its RELEASE stays in the background list (two are active). The server
 * commits A: A's end lets the RELEASE into the queue behind B
 * (fuse_uring_flush_bg()), and A's entry keeps the buffer for B. The
 * server holds B, and the RELEASE must reach it on the other entry. 7.3
 * as released, and 0003 before it sent waiting requests after a commit,
 * let only the committing entry fetch: the RELEASE waited for B's commit.
 */
static void case_flushed_release_passes_the_waiting_read(void)
{
	struct wt_call *cl = &wt_calls[0];
	const char *why = wt_open(WT_E1_RING1, 1, true);
	bool held = false, waited = false, bg = false, took = false;
	long released_ms = -1, t0 = 0;
	static char came[200];

	result("flushed_release_queues_with_async_dio", !why, "%s", wt_why(why));
	if (!why) {
		wt.hold_read = wt.hold_read2 = true;
		wt_aio.res[0] = wt_aio.res[1] = -EINPROGRESS;
		if (pthread_create(&wt_aio.th, NULL, wt_aio_thread, NULL))
			die("pthread_create");
		wt_aio.up = true;
		wt_serve_for(WT_WAIT_MS, wt_read_held);
		held = wt.read_q == 0;
		if (!held)
			why = wt.read_q >= 0 ? "the READ came on another queue "
			      "than CPU 0's" : wt_aio.err ? strerror(-wt_aio.err) :
			      "no READ reached the server";
	}
	result("flushed_release_first_read_holds_the_only_buffer", held, "%s",
	       wt_why(why));
	if (held) {
		/* the second READ waits for the buffer: nothing to see but that */
		wt_serve_for(500, wt_read2_held);
		waited = wt.reads == 1 && !wt_aio_done();
		if (!waited)
			why = wt.reads > 1 ? "the second READ reached the server "
			      "while the first held the only buffer" :
			      "the io_uring reads ended";
	}
	result("flushed_release_second_read_waits_for_the_buffer", waited,
	       "%s", wt_why(why));
	if (waited) {
		wt_start(cl, wt_close_fd, wt.fd_g);
		wt.fd_g = -1;
		/* the FLUSH is answered; the RELEASE waits for a background slot */
		wt_serve_for(WT_WAIT_MS, wt_all_returned);
		wt_serve_for(WT_QUIET_MS, wt_released);
		bg = wt_call_done(cl) && !wt.releases;
		if (!bg)
			why = wt.releases ? "the RELEASE reached the server while "
			      "two background READs were active (max_background "
			      "2)" : "close(2) did not return";
	}
	result("flushed_release_waits_in_the_background_list", bg, "%s",
	       wt_why(why));
	if (bg) {
		/* A's end lets the RELEASE in; A's entry takes B, with the buffer */
		t0 = wt_now_ms();
		wt_answer_read(wt.read_q, wt.read_e);
		wt_serve_for(WT_WAIT_MS, wt_read2_held);
		took = wt.read2_q == 0;
		if (!took)
			why = wt.read2_q >= 0 ? "the second READ came on another "
			      "queue than CPU 0's" : "the second READ did not "
			      "reach the server after the first READ's commit";
	}
	result("flushed_release_commit_gives_the_buffer_to_the_second_read",
	       took, "%s", wt_why(why));
	if (took) {
		wt_serve_for(WT_STALL_MS, wt_released);
		if (wt.releases)
			released_ms = wt_now_ms() - t0;
		/* now B: the RELEASE comes if it has not, the reads return */
		wt_answer_read(wt.read2_q, wt.read2_e);
		wt_serve_for(WT_WAIT_MS, wt_flushed_all_done);
		if (released_ms >= 0)
			snprintf(came, sizeof(came), "reached the server %ld ms "
				 "after the first READ's commit, in entry %d, "
				 "with the second READ held on entry %d",
				 released_ms, wt.release_e, wt.read2_e);
		else
			snprintf(came, sizeof(came), "did not reach the server "
				 "within %d ms after the first READ's commit, with "
				 "the second READ held on entry %d and entry %d "
				 "free, %s", WT_STALL_MS, wt.read2_e,
				 wt.read2_e ^ 1, wt.releases ?
				 "but after its commit" : "nor after its commit");
		printf("# 7.3: queue 0, 2 entries, a pool of 1 buffer, "
		       "max_background 2: the server held a direct READ from "
		       "io_uring, a second waited for the buffer, the RELEASE of "
		       "close(2) waited in the background list; after the first "
		       "READ's commit its entry %d took the second READ, and the "
		       "RELEASE %s; the reads gave %s and %s, %s, close(2) %zd\n",
		       wt.read_e, came, wt_res(wt_aio.res[0]),
		       wt_res(wt_aio.res[1]),
		       wt_bytes_as_served(wt_aio.buf[0], wt_aio.res[0]) &&
		       wt_bytes_as_served(wt_aio.buf[1], wt_aio.res[1]) ?
		       "the server's bytes" : "not the server's bytes",
		       cl->ret);
		why = "the RELEASE of \"g\" did not reach the server within "
		      "3000 ms after the first READ's commit let it in, while "
		      "the server held the second READ: it waited behind it "
		      "with the other entry free";
	}
	result("flushed_release_passes_the_read_waiting_for_the_buffer",
	       released_ms >= 0, "%s", why);
	if (took)
		snprintf(came, sizeof(came), "the reads gave %s and %s, expected "
			 "%d each with the server's bytes%s%s",
			 wt_res(wt_aio.res[0]), wt_res(wt_aio.res[1]), WT_SIZE,
			 wt_aio.err ? "; io_uring: " : "",
			 wt_aio.err ? strerror(-wt_aio.err) : "");
	result("flushed_release_reads_have_the_servers_bytes",
	       took && wt_aio_done() && !wt_aio.err &&
	       wt_bytes_as_served(wt_aio.buf[0], wt_aio.res[0]) &&
	       wt_bytes_as_served(wt_aio.buf[1], wt_aio.res[1]),
	       "%s", took ? came : why);
	if (bg)
		snprintf(came, sizeof(came), "close(2) gave %zd (%s), %d "
			 "RELEASE(s) came", cl->ret,
			 cl->err ? strerror(cl->err) : "no error", wt.releases);
	result("flushed_release_close_returns_0",
	       bg && cl->ret == 0 && wt.releases == 1, "%s", bg ? came : why);
	wt_close();
}

/*
 * The four cases, then the kernel log written meanwhile: every record is
 * printed as "# kernel: ..."; one that reports a broken kernel
 * (kernel_splat(): BUG:, WARNING:, a lockdep report, ...) fails the last
 * case. tests/guest/run reads the whole log after the file too.
 */
static void waits_cases(void)
{
	char rec[2048], splat[256] = "";
	const char *text;
	bool lost = false;
	int kmsg = kmsg_mark();

	case_release_passes_the_waiting_write();
	case_cancelled_send_gives_the_buffer();
	case_registered_entry_takes_the_waiting_write();
	case_flushed_release_passes_the_waiting_read();
	while (kmsg >= 0 && (text = kmsg_next(kmsg, rec, sizeof(rec), &lost))) {
		printf("# kernel: %s\n", text);
		if (!splat[0] && kernel_splat(text))
			snprintf(splat, sizeof(splat), "%.200s", text);
	}
	if (kmsg >= 0)
		close(kmsg);
	result("waits_kernel_log_clean", kmsg >= 0 && !splat[0],
	       kmsg < 0 ? "cannot read /dev/kmsg: %s" : "the kernel logged \"%s\"",
	       kmsg < 0 ? strerror(errno) : splat);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			printf("%s\n", cases[i]);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[2], "zero-copy-abort")) {
		/* lab 06 runs this one alone */
		mnt = argv[1];
		nq = possible_cpus();
		if (nq < 1 || nq > MAX_QUEUES)
			die("possible CPUs");
		case_zero_copy_abort();
		case_zero_copy_commit_while_read_fixed_waits();
		return unit_exit_status();
	}
	if (argc == 3 && !strcmp(argv[2], "waits")) {
		mnt = argv[1];
		nq = possible_cpus();
		if (nq < 1 || nq > MAX_QUEUES)
			die("possible CPUs");
		signal(SIGPIPE, SIG_IGN);
		waits_cases();
		return unit_exit_status();
	}
	if (argc != 2) {
		fprintf(stderr, "usage: pool-errors MOUNTPOINT [zero-copy-abort | waits] | --list\n");
		return 2;
	}
	mnt = argv[1];
	nq = possible_cpus();
	if (nq < 1 || nq > MAX_QUEUES)
		die("possible CPUs");
	signal(SIGPIPE, SIG_IGN);
	case_queue_commands();
	case_add_queue_after_register();
	case_register_with_payload();
	case_register_without_fixed();
	case_register_zero_copy_index();
	case_per_entry_register_on_zero_copy_queue();
	case_commit_fixed();
	case_zero_copy_abort();
	case_zero_copy_commit_while_read_fixed_waits();
	case_zero_copy_commit_from_another_ring();
	case_zero_copy_shared_slot();
	waits_cases();
	return unit_exit_status();
}
