// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * main.c: fuse-uring-server, a pass-through FUSE server over io_uring.
 *
 * main() is the life-cycle in protocol order; each step is one function
 * in session.c or ring.c. Build: make -C reference-server (see Makefile).
 */
#include "fuse-uring.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * Without --foreground, fork before any thread exists (fork copies only
 * the calling thread). The parent waits on a pipe and exits 0 only once
 * the child reports the mount is up, so "server && use mount" works.
 */
static int daemon_start(void)
{
	int p[2];
	pid_t pid;
	char c;

	if (pipe2(p, O_CLOEXEC) < 0) {
		perror(SRV_NAME ": pipe");
		exit(1);
	}
	pid = fork();
	if (pid < 0) {
		perror(SRV_NAME ": fork");
		exit(1);
	}
	if (pid > 0) {
		close(p[1]);
		_exit(read(p[0], &c, 1) == 1 && c == 0 ? 0 : 1);
	}
	close(p[0]);
	setsid();
	return p[1];
}

/* Tell the waiting parent we are mounted; stderr stays for --trace. */
static void daemon_ready(int fd)
{
	char c = 0;
	int null = open("/dev/null", O_RDWR);

	if (write(fd, &c, 1) != 1)
		perror(SRV_NAME ": notify parent");
	close(fd);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		close(null);
	}
}

int main(int argc, char **argv)
{
	struct srv_session s = {
		.devfd = -1,
		.lock = PTHREAD_MUTEX_INITIALIZER,
		.cond = PTHREAD_COND_INITIALIZER,
	};
	struct srv_opts o;
	char msg[256];
	sigset_t set;
	int notify_fd = -1, nr_queues, err, stop = 0;

	if (parse_options(argc, argv, &o, msg, sizeof(msg))) {
		fprintf(stderr, SRV_NAME ": %s (see --help)\n", msg);
		return 2;
	}
	if (o.help) {
		print_usage(stdout);
		return 0;
	}
	s.opts = &o;
	s.page_size = sysconf(_SC_PAGESIZE);
	/* the kernel already applied the caller's umask to every mode */
	umask(0);

	ops_set_timeouts(o.timeout, o.negative_timeout);
	err = ops_init(o.backing_dir);
	if (err) {
		fprintf(stderr, SRV_NAME ": %s: %s\n", o.backing_dir,
			strerror(-err));
		return 1;
	}
	/*
	 * 0. can the mode run here? Pinned modes need RLIMIT_MEMLOCK (or
	 * CAP_IPC_LOCK), zero-copy CAP_SYS_ADMIN; say so now, on the
	 * terminal, rather than fail a REGISTER after the mount.
	 */
	nr_queues = ring_count_possible_cpus();
	if (nr_queues > 0 &&
	    preflight(&o, (unsigned int)nr_queues, (size_t)s.page_size)) {
		ops_destroy();
		return 1;
	}
	if (!o.foreground)
		notify_fd = daemon_start();
	/*
	 * Threads inherit the mask: only session_loop() takes the signals,
	 * through a signalfd. A shell starts background jobs with SIGINT
	 * ignored, so put the default back first.
	 */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	/* doc: steps-begin */
	/* 1. the connection */
	err = session_open_dev(&s);
	if (!err)
		err = session_check_uring_param();
	/*
	 * 2. every queue's memory and ring, before anything is promised;
	 * --mode=auto does this in step 4, once FUSE_INIT named the kernel
	 */
	if (!err && o.mode != SRV_MODE_AUTO)
		err = ring_start_queues(&s);
	/* 3. the mount: the kernel now queues FUSE_INIT on /dev/fuse */
	if (!err)
		err = session_mount(&s);
	/* 4. FUSE_INIT by read/write, replying FUSE_OVER_IO_URING */
	if (!err)
		err = session_handle_init(&s);
	/* 5. REGISTER each entry; the last one makes the ring ready */
	if (!err)
		err = ring_register_all(&s);
	/* 5b. refused for want of a resource, with --fallback: a rung lower */
	while (err && ring_step_down(&s, err)) {
		err = ring_start_queues(&s);
		if (!err)
			err = ring_register_all(&s);
	}
	if (!err) {
		if (o.verbose) {
			preflight_report(&s);
			ring_setup_report(&s);
		}
		fprintf(stderr, SRV_NAME ": %s on %s: %u queues x %u entries, "
			"payload %zu B, mode %s\n", o.backing_dir, o.mountpoint,
			s.nr_queues, o.queue_depth, o.payload_size,
			mode_name(o.mode));
		if (notify_fd >= 0)
			daemon_ready(notify_fd);
		/* 6. serve: the queue threads do the work, we watch /dev/fuse */
		stop = session_loop(&s);
	}

	/* 7. teardown, in reverse: mount, rings, /dev/fuse */
	session_unmount(&s, err || stop == SRV_STOP_SIGNAL);
	ring_stop_queues(&s);
	session_teardown(&s);
	ops_destroy();
	/* doc: steps-end */
	/* s.failed: a queue met a broken protocol and stopped us */
	return err || stop < 0 || s.failed ? 1 : 0;
}
