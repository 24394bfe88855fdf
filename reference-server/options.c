// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * options.c: the command line, parsed into struct srv_opts.
 *
 * Pure: no I/O except print_usage(), so tests/unit.c checks every rule.
 */
#include "fuse-uring.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Every mode the option knows, in ladder order (see enum srv_mode), with
 * the hooks that run it. A build with fewer rungs (make MODES=iovec, or
 * MODES=iovec,bufring) leaves their files out, and their modes have no
 * hooks here: --mode refuses them.
 */
#ifdef SRV_WITH_BUFRING
#define BUFRING_OPS (&bufring_ops)
#else
#define BUFRING_OPS NULL
#endif
#ifdef SRV_WITH_ZERO_COPY
#define ZERO_COPY_OPS (&zero_copy_ops)
#else
#define ZERO_COPY_OPS NULL
#endif
#ifdef SRV_WITH_POOL
#define POOL_OPS (&pool_ops)
#else
#define POOL_OPS NULL
#endif
#if defined(SRV_WITH_POOL) && defined(SRV_WITH_ZERO_COPY)
#define POOL_ZERO_COPY_OPS (&pool_zero_copy_ops)
#else
#define POOL_ZERO_COPY_OPS NULL
#endif

static const struct {
	const char *name;
	enum srv_mode mode;
	const struct srv_mode_ops *ops;
} modes[] = {
	{ "iovec", SRV_MODE_IOVEC, &iovec_ops },
	{ "bufring", SRV_MODE_BUFRING, BUFRING_OPS },
	{ "pinned-headers", SRV_MODE_PINNED_HEADERS, BUFRING_OPS },
	{ "pinned-buffers", SRV_MODE_PINNED_BUFFERS, BUFRING_OPS },
	{ "zero-copy", SRV_MODE_ZERO_COPY, ZERO_COPY_OPS },
	{ "pool", SRV_MODE_POOL, POOL_OPS },
	{ "pool-fixed", SRV_MODE_POOL_FIXED, POOL_OPS },
	{ "pool-zero-copy", SRV_MODE_POOL_ZERO_COPY, POOL_ZERO_COPY_OPS },
};
#define NR_MODES (sizeof(modes) / sizeof(modes[0]))

/* The hooks of a mode this build has (parse_mode() refuses the others). */
const struct srv_mode_ops *mode_ops(enum srv_mode m)
{
	for (size_t i = 0; i < NR_MODES; i++)
		if (modes[i].mode == m)
			return modes[i].ops;
	return NULL;
}

const char *mode_name(enum srv_mode m)
{
	if (m == SRV_MODE_AUTO)
		return "auto";
	for (size_t i = 0; i < NR_MODES; i++)
		if (modes[i].mode == m)
			return modes[i].name;
	return "?";
}

/*
 * The v2 ladder: every mode after iovec up to zero-copy builds on buffer
 * rings; the series adds pinned headers, pinned buffers and zero-copy as
 * flags next to its own.
 */
bool mode_uses_bufring(enum srv_mode m)
{
	return m >= SRV_MODE_BUFRING && m <= SRV_MODE_ZERO_COPY;
}

/* The 7.3 ladder: a payload pool per queue. */
bool mode_uses_pool(enum srv_mode m)
{
	return m >= SRV_MODE_POOL && m <= SRV_MODE_POOL_ZERO_COPY;
}

/* The ladder: each mode keeps what the one before it does. */
bool mode_pins_headers(enum srv_mode m)
{
	return m == SRV_MODE_PINNED_HEADERS || m == SRV_MODE_PINNED_BUFFERS ||
	       m == SRV_MODE_ZERO_COPY;
}

/*
 * The payload memory is pinned: by the FUSE kernel in v2's pinned modes;
 * by io_uring in 7.3's fixed pool, which registering a fixed buffer pins
 * and charges to RLIMIT_MEMLOCK the same way.
 */
bool mode_pins_buffers(enum srv_mode m)
{
	return m == SRV_MODE_PINNED_BUFFERS || m == SRV_MODE_ZERO_COPY ||
	       m == SRV_MODE_POOL_FIXED || m == SRV_MODE_POOL_ZERO_COPY;
}

bool mode_zero_copy(enum srv_mode m)
{
	return m == SRV_MODE_ZERO_COPY || m == SRV_MODE_POOL_ZERO_COPY;
}

/* doc: mode-pick-begin */
/*
 * --mode=auto: the best mode whose FUSE_INIT flag the kernel offers.
 * Each design announces itself with a bit of its own, and each rung names
 * the bit it needs (srv_mode_ops.init_needs), so this code names neither:
 *
 *   FUSE_HAS_IO_URING_BUFPOOL (bit 43)  Linux 7.3 and later: pool
 *   FUSE_HAS_URING_BUFRING    (bit 63)  7.2 with the v2 series: bufring
 *   neither                             stock 7.2: iovec
 *
 * The best means the most a server gets without asking for more than an
 * ordinary start has: the plain pool or buffer ring. The fixed pool and
 * the pinned modes count against RLIMIT_MEMLOCK, zero-copy needs
 * CAP_SYS_ADMIN and lends the callers' own pages: a server asks for those
 * by name. Returns 0 with o->mode set, or -ENOPROTOOPT if the kernel
 * offers none this build has.
 */
int mode_pick(struct srv_opts *o, uint64_t offered)
{
	static const enum srv_mode best_first[] = {
		SRV_MODE_POOL, SRV_MODE_BUFRING, SRV_MODE_IOVEC,
	};

	for (size_t i = 0; i < sizeof(best_first) / sizeof(best_first[0]); i++) {
		enum srv_mode m = best_first[i];
		const struct srv_mode_ops *ops = mode_ops(m);

		if (!ops || (offered & ops->init_needs) != ops->init_needs)
			continue;
		o->mode = m;
		if (!o->nbufs && m != SRV_MODE_IOVEC)
			o->nbufs = o->queue_depth;
		return 0;
	}
	return -ENOPROTOOPT;
}
/* doc: mode-pick-end */

/* What the kernel is, by the best design it offers (for messages). */
const char *mode_offered_kernel(uint64_t offered)
{
	struct srv_opts o = { .mode = SRV_MODE_AUTO };

	if (mode_pick(&o, offered))
		return "no FUSE over io_uring this server knows";
	return mode_ops(o.mode)->kernel;
}

/*
 * The flags every REGISTER of mode m carries (fuse_uring_cmd_req.flags):
 * the mode's own (bufring.c), none in iovec mode.
 */
uint64_t mode_register_flags(enum srv_mode m)
{
	const struct srv_mode_ops *ops = mode_ops(m);

	return ops && ops->register_flags ? ops->register_flags(m) : 0;
}

/* Payload buffers per queue: --nbufs with a buffer ring or pool, else one per entry. */
unsigned int opts_payload_bufs(const struct srv_opts *o)
{
	return mode_uses_bufring(o->mode) || mode_uses_pool(o->mode) ?
	       o->nbufs : o->queue_depth;
}

/* The payload memory one queue allocates: what lab 02 compares per mode. */
size_t opts_queue_payload_bytes(const struct srv_opts *o)
{
	return (size_t)opts_payload_bufs(o) * o->payload_size;
}

void print_usage(FILE *f)
{
	fprintf(f,
"usage: " SRV_NAME " [options] BACKING_DIR MOUNTPOINT\n"
"\n"
"Mount BACKING_DIR at MOUNTPOINT through FUSE over io_uring (pass-through).\n"
"\n"
"  --queue-depth=N     ring entries per queue (one queue per possible CPU),\n"
"                      1..%d, default %d\n"
"  --payload-size=SIZE one payload buffer, also max_write; a multiple of\n"
"                      the page size, %d..%d, K/M suffixes, default 1M\n"
"  --mode=MODE         how entries hand buffers to the kernel:\n"
"                      auto     the default: the best of pool, bufring and\n"
"                               iovec that the kernel offers in FUSE_INIT\n"
"                               (it says which it picked)\n"
"                      iovec    each entry registers its own header and\n"
"                               payload buffer (stock Linux 7.2)\n"
"                      -- the v2 series (Linux 7.2 with kernel-patches/):\n"
"                      bufring  each queue registers one headers region and\n"
"                               one payload region of --nbufs buffers; the\n"
"                               kernel lends a buffer per request that has\n"
"                               payload (needs the buffer-ring patch)\n"
"                      pinned-headers  bufring, and the kernel pins the\n"
"                               headers region (memcpy instead of user\n"
"                               copies for headers)\n"
"                      pinned-buffers  pinned-headers, and the kernel pins\n"
"                               the payload region too\n"
"                      zero-copy  pinned-buffers, and READ/WRITE data stays\n"
"                               in the callers' pages: the kernel lends them\n"
"                               as io_uring fixed buffers, the server moves\n"
"                               it with READ_FIXED/WRITE_FIXED (needs\n"
"                               CAP_SYS_ADMIN)\n"
"                      -- what Linux 7.3 merged (the buffer pool):\n"
"                      pool     each queue adds one payload pool of --nbufs\n"
"                               buffers (ADD_QUEUE, ADD_BUFPOOL); the kernel\n"
"                               takes a buffer per request that has payload,\n"
"                               and says where (ent_in_out.offset)\n"
"                      pool-fixed  pool, registered as an io_uring fixed\n"
"                               buffer first: imported, not pinned, per request\n"
"                      pool-zero-copy  pool-fixed, and READ/WRITE data of\n"
"                               files opened FOPEN_IO_URING_ZERO_COPY stays\n"
"                               in the callers' pages (needs CAP_SYS_ADMIN)\n"
"                      Each ladder adds one step per mode. Pinned memory\n"
"                      counts against RLIMIT_MEMLOCK (ulimit -l) unless\n"
"                      the server has CAP_IPC_LOCK.\n"
"  --ring-setup=NAME   how each queue's ring is created, in every mode: who\n"
"                      runs the kernel's task work (a request's copy into\n"
"                      the entry, its CQE) and when (ring-setup.c):\n"
"                      plain    the default: IORING_SETUP_SQE128 only; the\n"
"                               work interrupts the queue thread\n"
"                      coop     COOP_TASKRUN | TASKRUN_FLAG: no interrupt, it\n"
"                               runs at the thread's next io_uring_enter()\n"
"                      defer    SINGLE_ISSUER | DEFER_TASKRUN: it runs in one\n"
"                               batch when the thread waits for CQEs\n"
"                      sqpoll   SQPOLL: a kernel thread per queue submits for\n"
"                               us; it spins a whole CPU while requests come,\n"
"                               and sleeps after %d ms without any\n"
"  --nbufs=N           bufring, pool and above: payload buffers per queue,\n"
"                      1..%d, default the queue depth; fewer than entries\n"
"                      is the point: requests with payload then wait for a\n"
"                      free buffer\n"
"  --fallback          a pinned or zero-copy mode the machine cannot give\n"
"                      us: run a rung lower, with a notice, instead of\n"
"                      exiting. Zero-copy without CAP_SYS_ADMIN: in\n"
"                      pinned-buffers mode (pool-zero-copy: pool-fixed);\n"
"                      the series' pinned modes over RLIMIT_MEMLOCK: in\n"
"                      bufring mode, also when the kernel refuses the\n"
"                      REGISTER on the live connection (kernel-patches/0020)\n"
"  --unlinked          zero-copy modes: submit each commit only once its\n"
"                      fixed operation's CQE is in, instead of linked behind it\n"
"                      in the same submit: one more io_uring_enter() per\n"
"                      READ and WRITE, to measure what the link saves\n"
"  --zero-copy-min=SIZE pool-zero-copy: ask for zero-copy only for files\n"
"                      of at least SIZE bytes when opened (K/M suffixes;\n"
"                      default: every file). Linux 7.3 chooses per file\n"
"  --timeout=SECONDS   how long the kernel may cache names, attributes and\n"
"                      that a name is missing, 0..%d; default libfuse's:\n"
"                      %d s for names and attributes, none for missing\n"
"                      names. Longer is right only when nothing else\n"
"                      changes the backing directory (passthrough_hp\n"
"                      assumes that, with a day)\n"
"  --allow-other       let every user reach the mount, not only the one\n"
"                      who mounted it; the kernel still checks each access\n"
"                      against the files' modes (default_permissions), and\n"
"                      a root server creates new files as their caller\n"
"  --foreground        stay in the foreground (default: daemon once mounted)\n"
"  --trace             one line per request on stderr\n"
"  --verbose           at start-up, the memory each queue holds for the\n"
"                      kernel, and what the pinned modes pin\n"
"  --help              this text\n"
"\n"
"Needs: root, /dev/fuse, /proc, and FUSE io_uring enabled:\n"
"  echo 1 > /sys/module/fuse/parameters/enable_uring\n",
		SRV_MAX_QUEUE_DEPTH, SRV_DEFAULT_QUEUE_DEPTH,
		SRV_MIN_PAYLOAD_SIZE, SRV_MAX_PAYLOAD_SIZE,
		SRV_SQ_THREAD_IDLE_MS, SRV_MAX_NBUFS,
		SRV_MAX_TIMEOUT, SRV_DEFAULT_TIMEOUT);
}

/* A decimal number with an optional K or M suffix; -EINVAL otherwise. */
static int parse_size(const char *s, unsigned long long *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	if (*end == 'K' || *end == 'k') {
		*v *= 1024;
		end++;
	} else if (*end == 'M' || *end == 'm') {
		*v *= 1024 * 1024;
		end++;
	}
	return *end ? -EINVAL : 0;
}

/* A count in 1..max (K/M suffixes allowed); -EINVAL with err otherwise. */
static int parse_count(const char *opt, const char *s, unsigned int max,
		       unsigned int *v, char *err, size_t errlen)
{
	unsigned long long n;

	if (parse_size(s, &n) || n < 1 || n > max) {
		snprintf(err, errlen, "%s must be 1..%u, got '%s'", opt, max, s);
		return -EINVAL;
	}
	*v = (unsigned int)n;
	return 0;
}

static int parse_mode(const char *s, enum srv_mode *m, char *err, size_t errlen)
{
	char built[160] = "auto";

	for (size_t i = 0; i < NR_MODES; i++) {
		if (modes[i].ops)
			snprintf(built + strlen(built), sizeof(built) - strlen(built),
				 ", %s", modes[i].name);
	}
	if (!strcmp(s, "auto")) {
		*m = SRV_MODE_AUTO;
		return 0;
	}
	for (size_t i = 0; i < NR_MODES; i++) {
		if (strcmp(s, modes[i].name))
			continue;
		if (!modes[i].ops) {
			snprintf(err, errlen, "--mode=%s is not built into this "
				 "server (make MODES=...; supported: %s)", s, built);
			return -EINVAL;
		}
		*m = modes[i].mode;
		return 0;
	}
	snprintf(err, errlen, "unknown --mode '%s' (supported: %s)", s, built);
	return -EINVAL;
}

/* --ring-setup=NAME: one of ring-setup.c's names. */
static int parse_ring_setup(const char *s, enum srv_ring_setup *rs, char *err,
			    size_t errlen)
{
	char names[64] = "";

	for (unsigned int i = 0; i < SRV_NR_RING_SETUPS; i++) {
		if (!strcmp(s, ring_setup_name(i))) {
			*rs = i;
			return 0;
		}
		snprintf(names + strlen(names), sizeof(names) - strlen(names),
			 "%s%s", i ? ", " : "", ring_setup_name(i));
	}
	snprintf(err, errlen, "unknown --ring-setup '%s' (supported: %s)", s,
		 names);
	return -EINVAL;
}

/*
 * Fill o from argv. Returns 0, or -EINVAL with one sentence in err.
 * --help sets o->help and skips the positional checks.
 */
int parse_options(int argc, char **argv, struct srv_opts *o,
		  char *err, size_t errlen)
{
	enum { OPT_DEPTH = 256, OPT_PAYLOAD, OPT_MODE, OPT_RING_SETUP, OPT_NBUFS,
	       OPT_FALLBACK, OPT_UNLINKED, OPT_ZC_MIN, OPT_TIMEOUT, OPT_ALLOW_OTHER,
	       OPT_FG, OPT_TRACE, OPT_VERBOSE, OPT_HELP };
	static const struct option longopts[] = {
		{ "queue-depth", required_argument, NULL, OPT_DEPTH },
		{ "payload-size", required_argument, NULL, OPT_PAYLOAD },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "ring-setup", required_argument, NULL, OPT_RING_SETUP },
		{ "nbufs", required_argument, NULL, OPT_NBUFS },
		{ "fallback", no_argument, NULL, OPT_FALLBACK },
		{ "unlinked", no_argument, NULL, OPT_UNLINKED },
		{ "zero-copy-min", required_argument, NULL, OPT_ZC_MIN },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "allow-other", no_argument, NULL, OPT_ALLOW_OTHER },
		{ "foreground", no_argument, NULL, OPT_FG },
		{ "trace", no_argument, NULL, OPT_TRACE },
		{ "verbose", no_argument, NULL, OPT_VERBOSE },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	long page = sysconf(_SC_PAGESIZE);
	unsigned long long v;
	int c;

	*o = (struct srv_opts){
		.queue_depth = SRV_DEFAULT_QUEUE_DEPTH,
		.payload_size = SRV_DEFAULT_PAYLOAD_SIZE,
		.mode = SRV_MODE_AUTO,
		.timeout = SRV_DEFAULT_TIMEOUT,
	};
	err[0] = '\0';
	optind = 0;	/* glibc: a full reset, so the parser can run again */
	opterr = 0;	/* we print one message of our own */
	while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_DEPTH:
			if (parse_count("--queue-depth", optarg,
					SRV_MAX_QUEUE_DEPTH, &o->queue_depth,
					err, errlen))
				return -EINVAL;
			break;
		case OPT_PAYLOAD:
			if (parse_size(optarg, &v) || v < SRV_MIN_PAYLOAD_SIZE ||
			    v > SRV_MAX_PAYLOAD_SIZE || v % (unsigned long)page) {
				snprintf(err, errlen,
					 "--payload-size must be a multiple of %ld "
					 "in %d..%d, got '%s'", page,
					 SRV_MIN_PAYLOAD_SIZE,
					 SRV_MAX_PAYLOAD_SIZE, optarg);
				return -EINVAL;
			}
			o->payload_size = (size_t)v;
			break;
		case OPT_MODE:
			if (parse_mode(optarg, &o->mode, err, errlen))
				return -EINVAL;
			break;
		case OPT_RING_SETUP:
			if (parse_ring_setup(optarg, &o->ring_setup, err, errlen))
				return -EINVAL;
			break;
		case OPT_NBUFS:
			if (parse_count("--nbufs", optarg, SRV_MAX_NBUFS,
					&o->nbufs, err, errlen))
				return -EINVAL;
			break;
		case OPT_FALLBACK:
			o->fallback = true;
			break;
		case OPT_UNLINKED:
			o->unlinked = true;
			break;
		case OPT_ZC_MIN:
			if (parse_size(optarg, &v) || !v) {
				snprintf(err, errlen, "--zero-copy-min must be a "
					 "size above 0 (K/M suffixes), got '%s'",
					 optarg);
				return -EINVAL;
			}
			o->zero_copy_min = (size_t)v;
			break;
		case OPT_TIMEOUT: {
			char *end;
			unsigned long t;

			errno = 0;
			t = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-' ||
			    t > SRV_MAX_TIMEOUT) {
				snprintf(err, errlen, "--timeout must be 0..%d "
					 "seconds, got '%s'", SRV_MAX_TIMEOUT,
					 optarg);
				return -EINVAL;
			}
			o->timeout = (unsigned int)t;
			o->negative_timeout = (unsigned int)t;
			break;
		}
		case OPT_ALLOW_OTHER:
			o->allow_other = true;
			break;
		case OPT_FG:
			o->foreground = true;
			break;
		case OPT_TRACE:
			o->trace = true;
			break;
		case OPT_VERBOSE:
			o->verbose = true;
			break;
		case 'h':
		case OPT_HELP:
			o->help = true;
			return 0;
		case ':':
			snprintf(err, errlen, "option '%s' needs a value",
				 argv[optind - 1]);
			return -EINVAL;
		default:
			snprintf(err, errlen, "unknown option '%s'",
				 argv[optind - 1]);
			return -EINVAL;
		}
	}
	/*
	 * after the loop: --nbufs and --mode may come in either order; with
	 * --mode=auto, --nbufs counts if the mode picked has shared buffers
	 */
	if (o->nbufs && o->mode == SRV_MODE_IOVEC) {
		snprintf(err, errlen, "--nbufs needs --mode=bufring, --mode=pool "
			 "or a mode above them (in iovec mode every entry has its "
			 "own payload buffer)");
		return -EINVAL;
	}
	if (o->fallback && !mode_zero_copy(o->mode) &&
	    !mode_pins_headers(o->mode)) {
		snprintf(err, errlen, "--fallback needs --mode=pinned-headers, "
			 "pinned-buffers, zero-copy or pool-zero-copy (it says "
			 "what to do when the machine cannot give us the mode)");
		return -EINVAL;
	}
	if (o->unlinked && !mode_zero_copy(o->mode)) {
		snprintf(err, errlen, "--unlinked needs --mode=zero-copy or "
			 "--mode=pool-zero-copy (only their fixed operations are "
			 "linked to their commits)");
		return -EINVAL;
	}
	if (o->zero_copy_min && o->mode != SRV_MODE_POOL_ZERO_COPY) {
		snprintf(err, errlen, "--zero-copy-min needs --mode=pool-zero-copy "
			 "(only Linux 7.3's zero-copy is chosen per file)");
		return -EINVAL;
	}
	if (!o->nbufs && (mode_uses_bufring(o->mode) || mode_uses_pool(o->mode)))
		o->nbufs = o->queue_depth;	/* as many buffers as entries */
	if (argc - optind != 2) {
		snprintf(err, errlen,
			 "expected BACKING_DIR MOUNTPOINT, got %d argument%s",
			 argc - optind, argc - optind == 1 ? "" : "s");
		return -EINVAL;
	}
	o->backing_dir = argv[optind];
	o->mountpoint = argv[optind + 1];
	return 0;
}
