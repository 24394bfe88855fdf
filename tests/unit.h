/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * tests/unit.h: the harness of the host unit tests (reference-server/tests/
 * and debate/tests/), in the words the shell tests use (tests/lib.sh):
 * one line per case, "ok NAME", "not ok NAME: why" or "skip NAME: why",
 * which scripts/check counts. A program defines UNIT_PREFIX before including this to put its
 * name in front of every case ("debate: "), and ends main() with
 * "return unit_exit_status();".
 *
 * Header-only on purpose: each test program is one translation unit, and
 * there is nothing to link.
 */
#ifndef UNIT_H
#define UNIT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#ifndef UNIT_PREFIX
#define UNIT_PREFIX ""
#endif

static int unit_failures;

/* One case's result; fmt (printf-style) says why when !ok. */
__attribute__((format(printf, 3, 4), unused))
static void result(const char *name, bool ok, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		printf("ok " UNIT_PREFIX "%s\n", name);
		return;
	}
	printf("not ok " UNIT_PREFIX "%s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	unit_failures++;
}

/* A case that cannot run here (a file system without the feature). */
__attribute__((unused))
static void skip(const char *name, const char *why)
{
	printf("skip " UNIT_PREFIX "%s: %s\n", name, why);
}

/* 1 if any case failed: make stops on it. */
__attribute__((unused))
static int unit_exit_status(void)
{
	return unit_failures ? 1 : 0;
}

#define EXPECT_INT(name, want, got) do {				\
	long long w_ = (long long)(want), g_ = (long long)(got);	\
	result(name, w_ == g_, "expected %lld, got %lld", w_, g_);	\
} while (0)

#define EXPECT_STR(name, want, got) do {				\
	const char *w_ = (want), *g_ = (got);				\
	result(name, strcmp(w_, g_) == 0, "expected '%s', got '%s'",	\
	       w_, g_);							\
} while (0)

#endif /* UNIT_H */
