// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * preflight.c: what a mode asks of the system, checked before anything is
 * mounted, and what each errno of a refused REGISTER means.
 *
 * pinned-headers, pinned-buffers and zero-copy make the kernel pin each
 * queue's regions when the queue's first REGISTER arrives
 * (kernel-patches/0005, 0006): pin_user_pages() with FOLL_LONGTERM, then
 * vmap(). The pinned pages are charged like io_uring's registered buffers:
 * to the user's locked memory against RLIMIT_MEMLOCK, unless the server
 * has CAP_IPC_LOCK, and always to the process's VmPin. Over the limit the
 * REGISTER fails with -ENOMEM, but REGISTER comes after the FUSE_INIT
 * reply, with the mount already there: so compute the bill first and
 * refuse to start with a message that says how to pay it.
 *
 * Zero-copy (kernel-patches/0008) hands the server the callers' own pages,
 * which is why its REGISTER needs CAP_SYS_ADMIN (-EPERM otherwise): that
 * too is checked up front. Without it the server refuses to start, or,
 * with --fallback, says so and runs in pinned-buffers mode.
 *
 * The arithmetic is pure and unit-tested: tests/unit.c includes this file,
 * so its static helpers are tested where they live. srv_capable() and
 * preflight() ask the system.
 */
#include "fuse-uring.h"

#include <errno.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

size_t page_round_up(size_t len, size_t page)
{
	return (len + page - 1) / page * page;
}

/* doc: pinned-bytes-begin */
/*
 * What one queue pins, in bytes. The kernel pins every page of what the
 * queue uses of a region: queue_depth header slots of 288 bytes, and the
 * whole payload buffers (--nbufs here). Our regions are exactly that long
 * and start on a page boundary (the kernel requires it), so that is each
 * region's length rounded up to pages.
 */
size_t pinned_queue_headers_bytes(const struct srv_opts *o, size_t page)
{
	/*
	 * exercise 03.2 begin: what one queue pins
	 * hint: nothing unless the mode pins that region (mode_pins_headers(),
	 *       mode_pins_buffers()). The headers: one struct
	 *       fuse_uring_req_header per entry; the payload: every buffer
	 *       (opts_queue_payload_bytes()). The kernel pins whole pages:
	 *       round each up (page_round_up()).
	 * read: docs/pinned.rst, "The memory a server pins"
	 * stub: (void)o;
	 * stub: (void)page;
	 * stub: return 0;
	 */
	if (!mode_pins_headers(o->mode))
		return 0;
	return page_round_up((size_t)o->queue_depth *
			     sizeof(struct fuse_uring_req_header), page);
	/* exercise 03.2 end */
}

size_t pinned_queue_payload_bytes(const struct srv_opts *o, size_t page)
{
	/*
	 * exercise 03.2 begin: what one queue pins (the payload)
	 * stub: (void)o;
	 * stub: (void)page;
	 * stub: return 0;
	 */
	if (!mode_pins_buffers(o->mode))
		return 0;
	return page_round_up(opts_queue_payload_bytes(o), page);
	/* exercise 03.2 end */
}

/* Every queue pins its own regions: one queue per possible CPU. */
uint64_t pinned_total_bytes(const struct srv_opts *o, unsigned int nr_queues,
			    size_t page)
{
	return (uint64_t)nr_queues * (pinned_queue_headers_bytes(o, page) +
				      pinned_queue_payload_bytes(o, page));
}
/* doc: pinned-bytes-end */

/*
 * The kernel's test, account_pinned_pages(): refused when the user's
 * locked pages plus the new ones exceed RLIMIT_MEMLOCK >> PAGE_SHIFT. We
 * cannot see what other processes of the user have pinned, so this checks
 * our own bill alone; the kernel's -ENOMEM covers the rest.
 */
static bool memlock_allows(uint64_t need, uint64_t limit, size_t page)
{
	/*
	 * exercise 03.3 begin: the kernel's RLIMIT_MEMLOCK test
	 * hint: the kernel counts pages, not bytes: the pages we pin
	 *       (need, rounded up to pages) may not exceed the limit's
	 *       whole pages (limit >> PAGE_SHIFT, rounded down). An
	 *       unlimited limit (RLIM_INFINITY) allows anything.
	 * read: docs/pinned.rst, "Who may pin"
	 * stub: (void)need;
	 * stub: (void)limit;
	 * stub: (void)page;
	 * stub: return true;
	 */
	if (limit == (uint64_t)RLIM_INFINITY)
		return true;
	return (need + page - 1) / page <= limit / page;
	/* exercise 03.3 end */
}

/* The one message: how much, where it comes from, how to allow it. */
static void memlock_message(char *buf, size_t len, const struct srv_opts *o,
			    unsigned int nr_queues, size_t page, uint64_t limit)
{
	uint64_t need = pinned_total_bytes(o, nr_queues, page);

	snprintf(buf, len,
		 "--mode=%s pins %llu B of memory (%u queues x (headers "
		 "%zu B + payload %zu B)), but RLIMIT_MEMLOCK is %llu B and the "
		 "server lacks CAP_IPC_LOCK: raise the limit with 'ulimit -l "
		 "%llu' (KiB) before starting it, or run it with CAP_IPC_LOCK",
		 mode_name(o->mode), (unsigned long long)need, nr_queues,
		 pinned_queue_headers_bytes(o, page),
		 pinned_queue_payload_bytes(o, page),
		 (unsigned long long)limit,
		 (unsigned long long)((need + 1023) / 1024));
}

/* The rung below a zero-copy mode, which needs no capability. */
static enum srv_mode zero_copy_fallback(enum srv_mode m)
{
	return m == SRV_MODE_POOL_ZERO_COPY ? SRV_MODE_POOL_FIXED :
					      SRV_MODE_PINNED_BUFFERS;
}

/*
 * Zero-copy without CAP_SYS_ADMIN: refuse (-EPERM), or with --fallback
 * step down the ladder (zero_copy_fallback(): pinned-buffers, or
 * pool-fixed on 7.3). Returns 0 if o->mode can run (possibly changed),
 * -EPERM if not.
 */
static int zero_copy_decide(struct srv_opts *o, bool cap_sys_admin)
{
	if (!mode_zero_copy(o->mode) || cap_sys_admin)
		return 0;
	if (!o->fallback)
		return -EPERM;
	o->mode = zero_copy_fallback(o->mode);
	return 0;
}

/*
 * Does the kernel's capable(cap) hold for us? It checks the effective set
 * (CapEff in /proc/self/status), and only in the initial user namespace:
 * in another one, capabilities are the namespace's and do not count. An
 * initial namespace maps every uid to itself; with CONFIG_USER_NS off
 * there is no uid_map at all.
 */
static bool srv_capable(int cap)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0,
	};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	unsigned long inside, outside, count;
	char map[64] = "";
	FILE *f;

	if (syscall(SYS_capget, &hdr, data) < 0)
		return false;
	if (!(data[cap / 32].effective & (1U << (cap % 32))))
		return false;
	f = fopen("/proc/self/uid_map", "re");
	if (!f)
		return true;
	if (!fgets(map, sizeof(map), f))
		map[0] = '\0';
	fclose(f);
	/* the initial namespace's: "         0          0 4294967295" */
	return sscanf(map, "%lu %lu %lu", &inside, &outside, &count) == 3 &&
	       inside == 0 && outside == 0 && count == 4294967295UL;
}

/* doc: memlock-check-begin */
/*
 * Before the queues are built (before the mount, or with --mode=auto
 * before the FUSE_INIT reply): can this mode run here? A 7.3 pool must be
 * below 4 GiB; zero-copy needs CAP_SYS_ADMIN (or --fallback); a pinned
 * mode needs RLIMIT_MEMLOCK to cover what every queue pins, unless we have
 * CAP_IPC_LOCK. 0, or -E2BIG/-EPERM/-ENOMEM after one message on stderr.
 */
int preflight(struct srv_opts *o, unsigned int nr_queues, size_t page)
{
	struct rlimit rl;
	char msg[512];
	uint64_t need;

	enum srv_mode asked = o->mode;

	/* 7.3's ADD_BUFPOOL names the pool's length in 32 bits */
	if (mode_uses_pool(o->mode) && opts_queue_payload_bytes(o) > UINT32_MAX) {
		fprintf(stderr, SRV_NAME ": --mode=%s: a pool of --nbufs=%u x "
			"--payload-size=%zu B is 4 GiB or more, and ADD_BUFPOOL's "
			"length is 32 bits: use fewer or smaller buffers\n",
			mode_name(o->mode), o->nbufs, o->payload_size);
		return -E2BIG;
	}

	if (zero_copy_decide(o, srv_capable(CAP_SYS_ADMIN))) {
		fprintf(stderr, SRV_NAME ": --mode=%s needs CAP_SYS_ADMIN: "
			"the kernel lends the server the callers' own pages (page "
			"cache, a direct-I/O caller's memory) and refuses it "
			"without (EPERM); run with CAP_SYS_ADMIN, or add "
			"--fallback to run in %s mode instead\n",
			mode_name(asked), mode_name(zero_copy_fallback(asked)));
		return -EPERM;
	}
	if (o->mode != asked)
		fprintf(stderr, SRV_NAME ": no CAP_SYS_ADMIN for --mode=%s: "
			"falling back to --mode=%s (--fallback)\n",
			mode_name(asked), mode_name(o->mode));

	need = pinned_total_bytes(o, nr_queues, page);
	if (!need || srv_capable(CAP_IPC_LOCK))
		return 0;	/* nothing pinned, or no limit applies */
	if (getrlimit(RLIMIT_MEMLOCK, &rl) < 0)
		return 0;	/* the kernel will tell */
	if (memlock_allows(need, rl.rlim_cur, page))
		return 0;
	memlock_message(msg, sizeof(msg), o, nr_queues, page, rl.rlim_cur);
	fprintf(stderr, SRV_NAME ": %s\n", msg);
	return -ENOMEM;
}
/* doc: memlock-check-end */

/*
 * --verbose: what each queue holds for the kernel, once every REGISTER is
 * in. Lab 02 compares the payload line across modes, lab 03 the pinned
 * line with the process's VmPin.
 */
void preflight_report(const struct srv_session *s)
{
	const struct srv_opts *o = s->opts;
	size_t page = (size_t)s->page_size;

	fprintf(stderr, SRV_NAME ": memory per queue: payload %zu B (%u x %zu B), "
		"headers %zu B, mode %s\n", opts_queue_payload_bytes(o),
		opts_payload_bufs(o), o->payload_size,
		o->queue_depth * sizeof(struct fuse_uring_req_header),
		mode_name(o->mode));
	/* pool-fixed: io_uring pins the pool, and never the headers */
	if (mode_pins_headers(o->mode) || mode_pins_buffers(o->mode))
		fprintf(stderr, SRV_NAME ": pinned memory: %llu B (%u queues x "
			"(headers %zu B + payload %zu B), page-rounded)\n",
			(unsigned long long)pinned_total_bytes(o, s->nr_queues, page),
			s->nr_queues, pinned_queue_headers_bytes(o, page),
			pinned_queue_payload_bytes(o, page));
}

/*
 * REGISTER failed with -ENOMEM in a pinned mode: almost always the
 * kernel's RLIMIT_MEMLOCK check, which counts what other processes of the
 * same user have pinned too (and pages of a server killed a moment ago
 * until its connection is torn down). With CAP_IPC_LOCK there is no such
 * check, and it is memory that ran out.
 */
static void pinned_enomem_message(const struct srv_opts *o,
				  unsigned int nr_queues, size_t page)
{
	uint64_t need = pinned_total_bytes(o, nr_queues, page);
	struct rlimit rl;
	char msg[512];

	if (srv_capable(CAP_IPC_LOCK) || getrlimit(RLIMIT_MEMLOCK, &rl) < 0) {
		fprintf(stderr, SRV_NAME ": the kernel could not pin %llu B for "
			"--mode=%s (ENOMEM): out of memory\n",
			(unsigned long long)need, mode_name(o->mode));
		return;
	}
	memlock_message(msg, sizeof(msg), o, nr_queues, page, rl.rlim_cur);
	fprintf(stderr, SRV_NAME ": the kernel refused to pin the queue memory "
		"(ENOMEM; it counts every process of the user against the "
		"limit): %s\n", msg);
}

/*
 * --fallback, once the kernel refused mode m's REGISTERs with err on the
 * live connection: the rung to try next, or SRV_MODE_AUTO for none. Only
 * the series' modes: its patch 0020 leaves io_uring on after EPERM and
 * ENOMEM for a server that says it tries again (proto.c); 7.3 switches
 * io_uring off after any refusal.
 */
enum srv_mode register_fallback(enum srv_mode m, int err)
{
	if (err == -EPERM && m == SRV_MODE_ZERO_COPY)
		return SRV_MODE_PINNED_BUFFERS;
	if (err == -ENOMEM && mode_pins_headers(m))
		return SRV_MODE_BUFRING;	/* nothing pinned at all */
	return SRV_MODE_AUTO;
}

/*
 * Every queue's REGISTERs are in, and one was refused with err: say what
 * that errno means for this mode, once, on stderr.
 */
void explain_register_error(const struct srv_session *s, int err)
{
	const struct srv_opts *o = s->opts;

	if (err == -EOPNOTSUPP)
		fprintf(stderr, SRV_NAME ": the kernel refused "
			"FUSE_IO_URING_CMD_REGISTER (EOPNOTSUPP): FUSE over "
			"io_uring is disabled or missing\n");
	else if (err == -ENOMEM && mode_pins_headers(o->mode))
		pinned_enomem_message(o, s->nr_queues, (size_t)s->page_size);
	else if (err == -EPERM && mode_zero_copy(o->mode))
		fprintf(stderr, SRV_NAME ": the kernel refused zero-copy "
			"(EPERM): it needs CAP_SYS_ADMIN in the initial user "
			"namespace; run with it, or use --mode=%s\n",
			mode_name(zero_copy_fallback(o->mode)));
	else if (err == -EINVAL && mode_pins_headers(o->mode))
		fprintf(stderr, SRV_NAME ": the kernel refused "
			"FUSE_IO_URING_CMD_REGISTER with flags %#llx (EINVAL): "
			"it lacks --mode=%s (pinned headers: kernel-patches/0005, "
			"pinned buffers: 0006, zero-copy: 0008), or it refused "
			"the regions\n",
			(unsigned long long)mode_register_flags(o->mode),
			mode_name(o->mode));
	else if (err == -EINVAL && mode_uses_bufring(o->mode))
		fprintf(stderr, SRV_NAME ": the kernel refused "
			"FUSE_IO_URING_CMD_REGISTER with FUSE_URING_BUFRING "
			"(EINVAL): it has no buffer rings as kernel-patches/0004 "
			"defines them, or it refused the regions\n");
	else
		fprintf(stderr, SRV_NAME ": %s: %s\n", s->setup_err_what,
			strerror(-err));
}
