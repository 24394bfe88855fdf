// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * tests/fixed-buf-empty-slot.c: what a READ_FIXED or WRITE_FIXED gets at a
 * fixed-buffer index that holds no buffer, in a sparse table like the one a
 * zero-copy FUSE server registers (the kernel fills slot N only while entry
 * N holds a zero-copied request).
 *
 * No FUSE here: io_uring alone, on a memfd. A sparse table of TABLE slots;
 * a buffer of ours in slot 1 as the positive control (the same READ_FIXED
 * there works); then the empty slot 2 and index TABLE + 5, past the table.
 * Kernel: io_uring/rsrc.c, io_import_reg_buf(): "node =
 * io_find_buf_node(req, issue_flags); if (!node) return -EFAULT;", and
 * io_rsrc_node_lookup() returns NULL for an empty slot and for an index
 * beyond the table alike.
 *
 * Output: "ok name" / "not ok name: why" per case, in the words of
 * tests/lib.sh (read by tests/guest/24-zero-copy.sh, through
 * program_result), "# ..." details; exit 1 if any failed.
 * --list prints the case names.
 */
#include <errno.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#define TABLE	4
#define LEN	4096

static const char *const names[] = {
	"sparse-table-registered",
	"control-read-fixed-own-buffer",
	"read-fixed-empty-slot-efault",
	"write-fixed-empty-slot-efault",
	"read-fixed-beyond-table-efault",
};

static int failures;

static void result(const char *name, int want, int got)
{
	if (want == got) {
		printf("ok %s\n", name);
		return;
	}
	printf("not ok %s: expected %d, got %d (%s)\n", name, want, got,
	       got < 0 ? strerror(-got) : "bytes");
	failures++;
}

/*
 * One fixed operation at buffer index idx; its res. addr is where in the
 * buffer: a user buffer's own address (the kernel's buffers of zero-copy
 * start at 0, the offset into the request's data).
 */
static int fixed_op(struct io_uring *ring, int write, int fd, void *addr,
		    int idx)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct io_uring_cqe *cqe;
	int ret;

	if (write)
		io_uring_prep_write_fixed(sqe, fd, addr, LEN, 0, idx);
	else
		io_uring_prep_read_fixed(sqe, fd, addr, LEN, 0, idx);
	ret = io_uring_submit_and_wait(ring, 1);
	if (ret < 0)
		return ret;
	ret = io_uring_wait_cqe(ring, &cqe);
	if (ret < 0)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return ret;
}

int main(int argc, char **argv)
{
	struct io_uring ring;
	struct iovec iov;
	char *buf, data[LEN];
	__u64 tag = 0;
	int fd, ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && !strcmp(argv[1], "--list")) {
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			printf("%s\n", names[i]);
		return 0;
	}
	memset(data, 'z', LEN);
	fd = memfd_create("fixed-buf-empty-slot", MFD_CLOEXEC);
	buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fd < 0 || buf == MAP_FAILED || pwrite(fd, data, LEN, 0) != LEN ||
	    io_uring_queue_init(4, &ring, 0)) {
		printf("# set-up failed: %s\n", strerror(errno));
		return 1;
	}

	ret = io_uring_register_buffers_sparse(&ring, TABLE);
	result(names[0], 0, ret);
	if (ret)
		return 1;
	iov = (struct iovec){ buf, LEN };
	ret = io_uring_register_buffers_update_tag(&ring, 1, &iov, &tag, 1);
	if (ret != 1) {
		printf("# registering our buffer in slot 1: %d\n", ret);
		return 1;
	}
	ret = fixed_op(&ring, 0, fd, buf, 1);
	result(names[1], LEN, ret == LEN && memcmp(buf, data, LEN) ? -EIO : ret);
	/* the same operation, where no buffer is: at 0 as zero-copy's are */
	result(names[2], -EFAULT, fixed_op(&ring, 0, fd, NULL, 2));
	result(names[3], -EFAULT, fixed_op(&ring, 1, fd, NULL, 2));
	result(names[4], -EFAULT, fixed_op(&ring, 0, fd, NULL, TABLE + 5));
	io_uring_queue_exit(&ring);
	printf("# %d failed\n", failures);
	return failures ? 1 : 0;
}
