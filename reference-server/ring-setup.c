// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * ring-setup.c: how each queue's ring is created (--ring-setup=NAME).
 * ring.c's loop is the same for all four; what changes is who runs the
 * kernel's task work, and when.
 *
 * Task work: the kernel hands a request to an entry from the thread of the
 * process that made it (a cat, a fio job). The copy into the entry's
 * buffers and the CQE must happen in the server's own context, so that
 * thread queues them as task work for the ring's task, our queue thread
 * (io_uring_cmd_complete_in_task(), fs/fuse/dev_uring.c). COMMIT_AND_FETCH
 * and our other SQEs are issued by whoever submits them.
 *
 *   plain   IORING_SETUP_SQE128 only (every FUSE command needs it). Task
 *           work interrupts the queue thread (TWA_SIGNAL): a thread running
 *           in user space on another CPU gets an IPI and runs it on its way
 *           back, like a signal; a thread waiting in io_uring_enter() is
 *           woken and runs it there.
 *   coop    ... | COOP_TASKRUN | TASKRUN_FLAG (Linux 5.19): no interrupt
 *           (TWA_SIGNAL_NO_IPI). The work waits for the thread's next entry
 *           into the kernel, which in ring.c's loop is the next
 *           io_uring_submit_and_wait(): it comes at once for a waiting
 *           thread, and only after the batch for a busy one. TASKRUN_FLAG
 *           sets IORING_SQ_TASKRUN in the SQ ring while work waits, so a
 *           server that peeks at the CQ without entering knows it must
 *           (liburing's peek and wait helpers look at it).
 *   defer   ... | SINGLE_ISSUER | DEFER_TASKRUN (Linux 6.1): the work is
 *           queued on the ring, not on the thread, and runs only when the
 *           thread asks for completions (io_uring_enter() with
 *           IORING_ENTER_GETEVENTS, as io_uring_submit_and_wait() does), all
 *           of it in one batch; a waiting thread is woken only once there
 *           is as much as it waits for. The price: the task that created
 *           the ring must be the only one to submit to it, and to register
 *           with it (io_uring_enter() and io_uring_register() from another
 *           task get -EEXIST). Here it is: every call on q->ring is made
 *           in queue_thread(), the thread that created it in queue_setup():
 *           the mode's ring_init (zero-copy.c's sparse buffer table, pool.c's
 *           table and fixed pool, io_uring_register_*()), queue_register()
 *           (the REGISTERs, and pool.c's ADD_QUEUE and ADD_BUFPOOL, each
 *           submitted and waited for in pool_queue_cmd(), through the
 *           queue_add hook), queue_loop() (the commits, and zero-copy.c's
 *           READ_FIXED/WRITE_FIXED, queued while handling CQEs) and
 *           io_uring_queue_exit(). main() only writes the queue's stop
 *           eventfd, which is not a call on the ring; --fallback's second
 *           try builds new rings in new threads.
 *   sqpoll  ... | SQPOLL (Linux 5.1): a kernel thread per ring (in
 *           ps -L, iou-sqp-TID, TID the queue thread's) takes SQEs from
 *           the SQ and submits them for us, with our credentials and
 *           memory: io_uring_submit() becomes a store to the SQ tail while
 *           it is awake. The commits are then issued, and the replies
 *           copied, on the SQ thread's CPU, in parallel with ours. Its
 *           cost is a CPU: while requests come, each queue's SQ thread
 *           polls the SQ without sleeping, at 100 % of a CPU whether it
 *           finds work or not, until it has found none for
 *           SRV_SQ_THREAD_IDLE_MS (10 ms); then it sleeps, sets
 *           IORING_SQ_NEED_WAKEUP, and the next submit wakes it with an
 *           io_uring_enter(). ring.c's loop still enters the kernel to wait
 *           for CQEs, so SQPOLL moves work out of that call rather than
 *           saving it. The kernel refuses SQPOLL together with the flags of
 *           coop and defer (-EINVAL): its thread needs no interrupt.
 *
 * A kernel that lacks a flag refuses the ring (-EINVAL): the server then
 * stops, naming --ring-setup; it does not fall back to plain.
 */
#include "fuse-uring.h"

#include <errno.h>
#include <sched.h>
#include <time.h>

/* How long the start-up waits for the SQ thread to take its SQEs. */
#define SRV_SQ_SUBMIT_TIMEOUT_S 5

static const struct {
	const char *name;
	unsigned int flags;	/* what it adds to IORING_SETUP_SQE128 */
	const char *flag_names;	/* the same, for --verbose */
	const char *what;	/* the call, for a refusal's message */
} setups[] = {
	[SRV_RING_PLAIN] = { "plain", 0, "SQE128",
		"io_uring_queue_init_params(IORING_SETUP_SQE128)" },
	[SRV_RING_COOP] = { "coop",
		IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
		"SQE128 | COOP_TASKRUN | TASKRUN_FLAG",
		"--ring-setup=coop: io_uring_queue_init_params(IORING_SETUP_SQE128 "
		"| IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG; Linux 5.19 "
		"and later)" },
	[SRV_RING_DEFER] = { "defer",
		IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
		"SQE128 | SINGLE_ISSUER | DEFER_TASKRUN",
		"--ring-setup=defer: io_uring_queue_init_params(IORING_SETUP_SQE128 "
		"| IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN; Linux 6.1 "
		"and later)" },
	[SRV_RING_SQPOLL] = { "sqpoll", IORING_SETUP_SQPOLL,
		"SQE128 | SQPOLL",
		"--ring-setup=sqpoll: io_uring_queue_init_params(IORING_SETUP_SQE128 "
		"| IORING_SETUP_SQPOLL)" },
};

_Static_assert(sizeof(setups) / sizeof(setups[0]) == SRV_NR_RING_SETUPS,
	       "one row per enum srv_ring_setup");

/* "plain", ..., or NULL past the last (options.c lists them). */
const char *ring_setup_name(enum srv_ring_setup rs)
{
	return (unsigned int)rs < SRV_NR_RING_SETUPS ? setups[rs].name : NULL;
}

/* The io_uring_setup() flags of rs. */
unsigned int ring_setup_flags(enum srv_ring_setup rs)
{
	return IORING_SETUP_SQE128 | setups[rs].flags;
}

/* Create q's ring of (at least) entries SQEs, as --ring-setup says. */
int ring_setup_init(struct srv_queue *q, unsigned int entries,
		    const char **what)
{
	enum srv_ring_setup rs = q->s->opts->ring_setup;
	struct io_uring_params p = { .flags = ring_setup_flags(rs) };

	/*
	 * SQPOLL's idle time: long enough that the SQ thread does not go to
	 * sleep between the requests of a running job, which come
	 * microseconds apart; short enough that a mount nobody uses stops
	 * spinning a CPU almost at once. The kernel's default (0) is a full
	 * second; it rounds up to whole jiffies. The thread is not pinned
	 * (IORING_SETUP_SQ_AFF): the CPU that is this queue's is taken by
	 * the queue thread, and the scheduler knows better which is free.
	 */
	if (rs == SRV_RING_SQPOLL)
		p.sq_thread_idle = SRV_SQ_THREAD_IDLE_MS;
	*what = setups[rs].what;
	return io_uring_queue_init_params(entries, &q->ring, &p);
}

/*
 * Submit what is queued, and return once the kernel has issued all of it,
 * so that the CQ now holds every command that completed at once (a refused
 * REGISTER). Without SQPOLL that is io_uring_submit() itself. With it the
 * SQ thread issues them later: wait until it has taken every SQE, which it
 * marks only after it posted their CQEs (io_submit_sqes()), waking it if
 * it sleeps (io_uring_submit() does that, and nothing else, when it has
 * nothing new).
 */
int ring_setup_submit(struct srv_queue *q)
{
	int ret = io_uring_submit(&q->ring);
	struct timespec now, end;

	if (ret < 0 || q->s->opts->ring_setup != SRV_RING_SQPOLL)
		return ret;
	/* an SQ thread that never takes them must not hang the start-up */
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += SRV_SQ_SUBMIT_TIMEOUT_S;
	while (io_uring_sq_ready(&q->ring)) {
		int err = io_uring_submit(&q->ring);

		if (err < 0)
			return err;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec ||
		    (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
			return -ETIMEDOUT;
		sched_yield();
	}
	return ret;
}

/* --verbose: the ring every queue has, one line. */
void ring_setup_report(const struct srv_session *s)
{
	enum srv_ring_setup rs = s->opts->ring_setup;
	const struct io_uring *ring = &s->queues[0].ring;
	char idle[48] = "";

	if (rs == SRV_RING_SQPOLL)
		snprintf(idle, sizeof(idle), ", SQ thread idle after %d ms",
			 SRV_SQ_THREAD_IDLE_MS);
	fprintf(stderr, SRV_NAME ": ring per queue: %u SQEs, %u CQEs, "
		"--ring-setup=%s (%s%s)\n", ring->sq.ring_entries,
		ring->cq.ring_entries, setups[rs].name, setups[rs].flag_names,
		idle);
}
