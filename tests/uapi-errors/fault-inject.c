// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * tests/uapi-errors/fault-inject.c: fault-inject-register-*, on a kernel
 * with fault injection (/proc/thread-self/fail-nth: the debug kernel of
 * make check-debug). What its cases prove: every allocation of a queue's
 * first REGISTER (iovec, bufring, pinned) failed in turn gives a clean
 * error, VmPin back to 0 and a clean kernel log. Without fail-nth they
 * print "skip NAME: needs /proc/thread-self/fail-nth (...)": listed and
 * skipped, never silently absent.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cases.h"
#include "server.h"

/* ---- fault injection (a kernel with CONFIG_FAULT_INJECTION) ------------- */

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

	if (access(FAIL_NTH, W_OK) != 0) {
		skip(name, "needs %s (the debug kernel, make check-debug)", FAIL_NTH);
		return;
	}
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

void case_fault_inject_iovec(const char *name)
{
	fault_inject_register(name, qmem_iovec, 1);
}

void case_fault_inject_bufring(const char *name)
{
	fault_inject_register(name, qmem_good, 0);
}

void case_fault_inject_pinned(const char *name)
{
	fault_inject_register(name, alloc_pinned, 0);
}
