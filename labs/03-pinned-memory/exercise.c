// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * labs/03-pinned-memory/exercise.c: the checks of lab 03's TODOs, built with
 * the reader's copy of the server (scripts/exercise; make exercise-check
 * LAB=03). region_map() and memlock_allows() are static, so their files are
 * included here and not linked (scripts/exercise reads these includes).
 */
#include "fuse-uring.h"
#include "exercise.h"

#include "preflight.c"
#include "ring.c"

#include <sys/resource.h>

#define MIB (1024 * 1024)

/* TODO 1: page-aligned, writable regions of any length. */
static void check_region(void)
{
	static const size_t lens[] = { 2304, 4096, 8 * 288 * 3 + 1, 3 * MIB };

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		char *p = region_map(lens[i]);

		if (!p) {
			wrong("region_map(%zu) returned NULL", lens[i]);
			return;
		}
		if ((uintptr_t)p % 4096) {
			wrong("region_map(%zu) returned an address %zu bytes past a "
			      "page boundary: the kernel refuses to pin it (EINVAL)",
			      lens[i], (size_t)((uintptr_t)p % 4096));
			return;
		}
		/* all of it ours to write; ASan catches a short one */
		memset(p, 0x5a, lens[i]);
	}
}

static void queue_pins(enum srv_mode mode, unsigned int depth,
		       unsigned int nbufs, size_t psize, size_t headers,
		       size_t payload)
{
	struct srv_opts o = { .mode = mode, .queue_depth = depth,
			      .nbufs = nbufs, .payload_size = psize };
	char what[160];

	snprintf(what, sizeof(what), "in %s mode with %u entries, the headers "
		 "one queue pins (pinned_queue_headers_bytes())",
		 mode_name(mode), depth);
	EXPECT_EQ(what, headers, pinned_queue_headers_bytes(&o, 4096));
	snprintf(what, sizeof(what), "in %s mode with %u buffers of %zu B, the "
		 "payload one queue pins (pinned_queue_payload_bytes())",
		 mode_name(mode), nbufs, psize);
	EXPECT_EQ(what, payload, pinned_queue_payload_bytes(&o, 4096));
}

/* TODO 2: what one queue pins, in each mode. */
static void check_pinned_bytes(void)
{
	queue_pins(SRV_MODE_BUFRING, 8, 8, MIB, 0, 0);
	queue_pins(SRV_MODE_PINNED_HEADERS, 8, 8, MIB, 4096, 0);
	queue_pins(SRV_MODE_PINNED_BUFFERS, 8, 8, MIB, 4096, 8 * MIB);
	queue_pins(SRV_MODE_PINNED_BUFFERS, 20, 2, 64 * 1024, 8192,
		   128 * 1024);
	queue_pins(SRV_MODE_ZERO_COPY, 15, 15, MIB, 8192, 15 * MIB);
}

/* TODO 3: the kernel's page arithmetic against RLIMIT_MEMLOCK. */
static void allows(uint64_t need, uint64_t limit, bool want, const char *why)
{
	bool got = memlock_allows(need, limit, 4096);

	if (got != want)
		wrong("memlock_allows(need %llu B, limit %llu B) says %s, "
		      "expected %s: %s", (unsigned long long)need,
		      (unsigned long long)limit, got ? "yes" : "no",
		      want ? "yes" : "no", why);
}

static void check_memlock(void)
{
	allows(8192, 8192, true, "exactly the limit is allowed");
	allows(8192, 8191, false,
	       "the limit is 1 page and 4095 bytes: the kernel counts 1 page");
	allows(8193, 12288, true, "8193 bytes pin 3 pages, the limit is 3");
	allows(8193, 12287, false,
	       "8193 bytes pin 3 pages, the limit holds 2 whole pages");
	allows(1ULL << 40, (uint64_t)RLIM_INFINITY, true,
	       "RLIM_INFINITY is no limit");
	allows(0, 0, true, "pinning nothing needs no limit");
}

EXERCISE_MAIN({ 1, check_region }, { 2, check_pinned_bytes }, { 3, check_memlock })
