/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * tests/kernel-log.h: what the guest test programs that speak the uapi
 * themselves (uapi-errors/, uapi-fuzz.c) share: reading the kernel log for
 * reports of a broken kernel, and counting the FUSE queues. Header-only,
 * static inline: uapi-fuzz is one file, and of uapi-errors' files only
 * server.c and main.c need it.
 */
#ifndef KERNEL_LOG_H
#define KERNEL_LOG_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/*
 * What a broken kernel prints: a case during which the kernel logs one of
 * these has failed, whatever its errno said. The same list as SPLATS in
 * tests/lib.sh, which the guest runner and the shell tests use: the debug
 * kernel's checkers included (KFENCE, lockdep, might_sleep).
 */
static const char *const kernel_splats[] = {
	"BUG:", "WARNING:", "Oops", "Kernel panic", "general protection fault",
	"KASAN:", "UBSAN:", "KFENCE:", "kmemleak:", "list_add corruption",
	"list_del corruption", "refcount_t:", "INFO: task",
	"blocked for more than", "possible circular locking",
	"inconsistent lock state",
	"sleeping function called from invalid context",
};

/*
 * Not a broken kernel: kmemleak's own allocation failed under fault
 * injection, and it falls back to scanning the whole object. Also skipped
 * by tests/guest/run and tests/guest/22-uapi-errors.sh.
 */
#define FAULT_INJECTION_ARTIFACT "kmemleak: Cannot allocate a scan area"

/* Whether a line of the kernel log reports a broken kernel. */
static inline bool kernel_splat(const char *text)
{
	if (strstr(text, FAULT_INJECTION_ARTIFACT))
		return false;
	for (size_t i = 0; i < sizeof(kernel_splats) / sizeof(kernel_splats[0]); i++)
		if (strstr(text, kernel_splats[i]))
			return true;
	return false;
}

/*
 * Before a case: a /dev/kmsg reader positioned after the last record, or -1
 * (errno set). Each read(2) of it returns one record.
 */
static inline int kmsg_mark(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0 && lseek(fd, 0, SEEK_END) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The text of the next record logged since kmsg_mark(), in rec; NULL when
 * there is none left. A record is "prio,seq,usec,flags;text\n" followed by
 * " KEY=value" lines; only the text is returned. *lost is set when records
 * were overwritten before we read them.
 */
static inline const char *kmsg_next(int fd, char *rec, size_t len, bool *lost)
{
	char *text, *end;
	ssize_t n;

	for (;;) {
		n = read(fd, rec, len - 1);
		if (n < 0 && errno == EPIPE) {	/* records overwritten: go on */
			*lost = true;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return NULL;	/* EAGAIN: no more records */
		rec[n] = '\0';
		text = strchr(rec, ';');
		text = text ? text + 1 : rec;
		end = strchr(text, '\n');
		if (end)
			*end = '\0';
		return text;
	}
}

/*
 * The number of FUSE queues: one per possible CPU (num_possible_cpus()),
 * from a list like "0-1" or "0,2-3"; 0 if it cannot be read.
 */
static inline unsigned int count_possible_cpus(void)
{
	unsigned int n = 0, lo, hi;
	FILE *f = fopen("/sys/devices/system/cpu/possible", "r");
	int c;

	if (!f)
		return 0;
	while (fscanf(f, "%u", &lo) == 1) {
		hi = lo;
		c = fgetc(f);
		if (c == '-') {
			if (fscanf(f, "%u", &hi) != 1)
				break;
			c = fgetc(f);
		}
		n += hi - lo + 1;
		if (c != ',')
			break;
	}
	fclose(f);
	return n;
}

#endif /* KERNEL_LOG_H */
