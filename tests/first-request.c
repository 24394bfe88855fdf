// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * tests/first-request.c: the smallest FUSE-over-io_uring server there is,
 * for the book's io_uring primer (docs/io-uring-primer.rst). It mounts,
 * answers FUSE_INIT on /dev/fuse, registers one ring entry per queue, and
 * answers the first request that arrives on the ring: the GETATTR of the
 * root that a stat(2) of the mount sends. Stock Linux 7.2 protocol only.
 *
 *   first-request MOUNTPOINT   (as root, with enable_uring set)
 *
 * tests/guest/11-first-request.sh runs it; the reference server is the same
 * protocol with everything around it.
 */
#include <linux/fuse.h>
#include <liburing.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_QUEUES 64
#define PAYLOAD (64 * 1024)	/* one entry's payload buffer = max_write */

static struct fuse_uring_req_header headers[MAX_QUEUES];
static char payloads[MAX_QUEUES][PAYLOAD];
static struct iovec iovs[MAX_QUEUES][2];

static char rdbuf[PAYLOAD + 4096];	/* read(2) needs room for max_write */

/* err is an errno value: libc sets errno, liburing returns -errno. */
static _Noreturn void die(const char *what, int err)
{
	fprintf(stderr, "first-request: %s: %s\n", what, strerror(err));
	exit(1);
}

/* One queue per possible CPU ("0-1,3": 3), as the kernel makes them. */
static int possible_cpus(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
	int lo, hi, n = 0, c = ',';

	while (f && c == ',' && fscanf(f, "%d", &lo) == 1) {
		hi = lo;
		if ((c = fgetc(f)) == '-' && fscanf(f, "%d", &hi) == 1)
			c = fgetc(f);
		n += hi - lo + 1;
	}
	if (f)
		fclose(f);
	return n;
}

/* One FUSE command in a 128-byte SQE: its request struct lives in sqe->cmd. */
static void fuse_cmd(struct io_uring *ring, int fd, uint32_t op, int qid,
		     uint64_t commit_id)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct fuse_uring_cmd_req *req;

	if (!sqe)	/* the SQ is full */
		die("io_uring_get_sqe", EAGAIN);
	req = (void *)sqe->cmd;
	memset(sqe, 0, 2 * sizeof(*sqe));	/* both 64-byte slots */
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = op;
	if (op == FUSE_IO_URING_CMD_REGISTER) {
		sqe->addr = (uintptr_t)iovs[qid];	/* header slot, payload */
		sqe->len = 2;
	}
	req->qid = (uint16_t)qid;
	req->commit_id = commit_id;
	sqe->user_data = (uint64_t)qid;
}

int main(int argc, char **argv)
{
	struct fuse_in_header *rd = (void *)rdbuf;
	struct { struct fuse_out_header h; struct fuse_init_out i; } init = { 0 };
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	char opts[128];
	int fd, ret, nq = possible_cpus(), status;
	pid_t child;

	if (argc != 2 || nq < 1 || nq > MAX_QUEUES) {
		fprintf(stderr, "usage: first-request MOUNTPOINT\n");
		return 2;
	}
	/* 1. the connection, the mount, and FUSE_INIT by read/write */
	fd = open("/dev/fuse", O_RDWR);
	if (fd < 0)
		die("/dev/fuse", errno);
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0", fd);
	if (mount("first-request", argv[1], "fuse.first-request", 0, opts) < 0)
		die("mount", errno);
	if (read(fd, rdbuf, sizeof(rdbuf)) < 0)
		die("read FUSE_INIT", errno);
	if (rd->opcode != FUSE_INIT)
		die("read FUSE_INIT", EPROTO);
	init.h = (struct fuse_out_header){ sizeof(init), 0, rd->unique };
	init.i.major = FUSE_KERNEL_VERSION;
	init.i.minor = FUSE_KERNEL_MINOR_VERSION;
	init.i.flags = FUSE_INIT_EXT | FUSE_MAX_PAGES;
	init.i.flags2 = FUSE_OVER_IO_URING >> 32;	/* bit 41: in flags2 */
	init.i.max_write = PAYLOAD;
	init.i.max_pages = PAYLOAD / sysconf(_SC_PAGESIZE);	/* PAYLOAD, in pages */
	if (write(fd, &init, sizeof(init)) != sizeof(init))
		die("write FUSE_INIT reply", errno);

	/* 2. one entry per queue; the ring is ready once every queue has one */
	ret = io_uring_queue_init(2 * MAX_QUEUES, &ring, IORING_SETUP_SQE128);
	if (ret < 0)
		die("io_uring_queue_init", -ret);
	for (int q = 0; q < nq; q++) {
		iovs[q][0] = (struct iovec){ &headers[q], sizeof(headers[q]) };
		iovs[q][1] = (struct iovec){ payloads[q], PAYLOAD };
		fuse_cmd(&ring, fd, FUSE_IO_URING_CMD_REGISTER, q, 0);
	}
	ret = io_uring_submit(&ring);	/* accepted REGISTERs park: no CQE */
	if (ret < 0)
		die("io_uring_submit", -ret);

	/* 3. a caller: stat(2) of the mount sends GETATTR of the root */
	child = fork();
	if (child < 0)
		die("fork", errno);
	if (child == 0) {
		struct stat st;

		_exit(stat(argv[1], &st) == 0 && S_ISDIR(st.st_mode) ? 0 : 1);
	}

	/* 4. the CQE of the entry the request went to: answer, commit */
	ret = io_uring_wait_cqe(&ring, &cqe);
	if (ret < 0)
		die("io_uring_wait_cqe", -ret);
	if (cqe->res < 0)	/* a command the kernel refused */
		die("the first CQE", -cqe->res);
	int q = (int)cqe->user_data;
	struct fuse_in_header *in = (void *)headers[q].in_out;
	struct fuse_out_header *out = (void *)headers[q].in_out;
	struct fuse_attr_out *attr = (void *)payloads[q];
	uint64_t unique = in->unique, commit_id = headers[q].ring_ent_in_out.commit_id;

	printf("queue %d: request %s, unique %llu\n", q,
	       in->opcode == FUSE_GETATTR ? "GETATTR" : "other",
	       (unsigned long long)unique);
	io_uring_cqe_seen(&ring, cqe);
	memset(attr, 0, sizeof(*attr));
	attr->attr = (struct fuse_attr){ .ino = 1, .mode = S_IFDIR | 0755, .nlink = 2 };
	*out = (struct fuse_out_header){ sizeof(*out) + sizeof(*attr), 0, unique };
	headers[q].ring_ent_in_out.payload_sz = sizeof(*attr);
	fuse_cmd(&ring, fd, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, q, commit_id);
	ret = io_uring_submit(&ring);
	if (ret < 0)
		die("io_uring_submit", -ret);

	/* 5. the caller got the answer; unmount, which ends every command */
	waitpid(child, &status, 0);
	printf("stat(2) of the mount %s\n",
	       WIFEXITED(status) && !WEXITSTATUS(status) ? "saw a directory" : "failed");
	umount2(argv[1], MNT_DETACH);
	io_uring_queue_exit(&ring);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
