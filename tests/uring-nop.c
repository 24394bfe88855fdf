// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * tests/uring-nop.c: the smallest proof that io_uring works in the guest.
 *
 * Sets up a ring the way a FUSE server must (IORING_SETUP_SQE128: FUSE's
 * commands do not fit a 64-byte SQE), submits one NOP carrying a cookie in
 * user_data, and checks the completion hands back the same cookie and res 0.
 * Build: cc -std=c11 -Wall -Wextra -Werror -o uring-nop uring-nop.c -luring
 */
#include <errno.h>
#include <liburing.h>
#include <stdio.h>
#include <string.h>

#define COOKIE 0xfeedfaceULL

int main(void)
{
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	int ret;

	ret = io_uring_queue_init(4, &ring, IORING_SETUP_SQE128);
	if (ret < 0) {
		fprintf(stderr, "io_uring_queue_init(SQE128): %s\n", strerror(-ret));
		return 1;
	}

	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_nop(sqe);
	io_uring_sqe_set_data64(sqe, COOKIE);

	ret = io_uring_submit_and_wait(&ring, 1);
	if (ret != 1) {
		fprintf(stderr, "io_uring_submit_and_wait: %s\n",
			ret < 0 ? strerror(-ret) : "submitted nothing");
		return 1;
	}
	ret = io_uring_peek_cqe(&ring, &cqe);
	if (ret < 0) {
		fprintf(stderr, "io_uring_peek_cqe: %s\n", strerror(-ret));
		return 1;
	}
	if (cqe->res != 0 || cqe->user_data != COOKIE) {
		fprintf(stderr, "NOP completed with res %d user_data %#llx (expected 0, %#llx)\n",
			cqe->res, (unsigned long long)cqe->user_data, COOKIE);
		return 1;
	}
	printf("io_uring NOP round trip: res=%d user_data=%#llx\n",
	       cqe->res, (unsigned long long)cqe->user_data);
	io_uring_cqe_seen(&ring, cqe);
	io_uring_queue_exit(&ring);
	return 0;
}
