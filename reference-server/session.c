// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * session.c: everything that happens on /dev/fuse itself: open it, mount
 * with its fd, answer FUSE_INIT by read(2)/write(2), then serve what the
 * ring never carries (FORGET, BATCH_FORGET, INTERRUPT) until unmount or a
 * signal, and tear down.
 */
#include "fuse-uring.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/signalfd.h>
#include <sys/statfs.h>
#include <unistd.h>

#define ENABLE_URING_PARAM "/sys/module/fuse/parameters/enable_uring"

static void die_msg(const char *what, int err)
{
	fprintf(stderr, SRV_NAME ": %s: %s\n", what, strerror(-err));
}

/* /dev/fuse is the connection: mount(2) gets its fd, rings are bound to it. */
int session_open_dev(struct srv_session *s)
{
	s->devfd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (s->devfd < 0) {
		int err = -errno;

		die_msg("open /dev/fuse", err);
		return err;
	}
	return 0;
}

/*
 * The kernel offers FUSE_OVER_IO_URING in FUSE_INIT only when the fuse
 * module parameter enable_uring is Y; REGISTER then gives -EOPNOTSUPP.
 * The parameter exists only with CONFIG_FUSE_IO_URING. Check before mount,
 * so the message names the fix instead of a failed mount.
 */
int session_check_uring_param(void)
{
	char c = 0;
	int fd;

	fd = open(ENABLE_URING_PARAM, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, SRV_NAME ": this kernel has no FUSE over io_uring "
			"(" ENABLE_URING_PARAM " missing: needs "
			"CONFIG_FUSE_IO_URING=y)\n");
		return -EOPNOTSUPP;
	}
	if (read(fd, &c, 1) != 1)
		c = 0;
	close(fd);
	if (c != 'Y' && c != '1') {
		fprintf(stderr, SRV_NAME ": FUSE over io_uring is disabled; "
			"run: echo 1 > " ENABLE_URING_PARAM "\n");
		return -EOPNOTSUPP;
	}
	return 0;
}

/* doc: mount-begin */
/*
 * mount(2) with the options fusermount would pass: fd= binds the mount to
 * our /dev/fuse, rootmode= is the root's type, user_id/group_id own the
 * connection. default_permissions lets the kernel check access from our
 * attributes: this server runs as root and does not check them itself.
 * Without allow_other only the mounting user may use the mount at all.
 */
int session_mount(struct srv_session *s)
{
	const char *mnt = s->opts->mountpoint;
	char data[256];
	struct stat st;
	int err;

	if (stat(mnt, &st) < 0) {
		err = -errno;
		die_msg(mnt, err);
		return err;
	}
	snprintf(data, sizeof(data),
		 "fd=%d,rootmode=%o,user_id=%u,group_id=%u,default_permissions%s",
		 s->devfd, st.st_mode & S_IFMT, getuid(), getgid(),
		 s->opts->allow_other ? ",allow_other" : "");
	if (mount(SRV_NAME, mnt, "fuse." SRV_NAME, MS_NOSUID | MS_NODEV,
		  data) < 0) {
		err = -errno;
		die_msg("mount", err);
		return err;
	}
	s->mounted = true;
	return 0;
}
/* doc: mount-end */

static void srv_trace_dev(const struct srv_req *r, int err)
{
	fprintf(stderr, "trace dev op=%s unique=%llu arg=%zu in=%zu out=%zu "
		"error=%d\n", fuse_opcode_name(r->in->opcode),
		(unsigned long long)r->in->unique, r->arg_len, r->data_len,
		err ? 0 : r->out_len, err);
}

/* One reply on /dev/fuse: fuse_out_header and payload in one writev(2). */
static int dev_reply(struct srv_session *s, const struct srv_req *r, int err)
{
	struct fuse_out_header oh;
	struct iovec iov[2];

	build_dev_reply(&oh, r->in->unique, err, r->out_len);
	iov[0] = (struct iovec){ &oh, sizeof(oh) };
	iov[1] = (struct iovec){ r->out, err ? 0 : r->out_len };
	if (writev(s->devfd, iov, 2) < 0)
		return -errno;
	return 0;
}

/*
 * The kernel needs a read buffer of at least 8 KiB and room for the largest
 * WRITE (header + fuse_write_in + max_write), even on the INIT read.
 */
static int dev_read(struct srv_session *s, struct srv_req *r)
{
	ssize_t n;

	do {
		n = read(s->devfd, s->devbuf, s->devbuf_size);
	} while (n < 0 && (errno == EINTR || errno == ENOENT));
	/* ENOENT: the request was interrupted before we read it; read again */
	if (n < 0)
		return -errno;
	r->out = s->devout;
	r->out_size = s->opts->payload_size;
	return parse_dev_request(s->devbuf, (size_t)n, r);
}

/* doc: pick-mode-begin */
/*
 * --mode=auto, once FUSE_INIT said what the kernel has: the mode
 * (mode_pick()), said on stderr, then the queues of that mode.
 */
static int session_pick_mode(struct srv_session *s, uint64_t offered)
{
	int err = mode_pick(s->opts, offered);

	if (err) {
		fprintf(stderr, SRV_NAME ": --mode=auto: the kernel offers no "
			"mode this server was built with\n");
		return err;
	}
	fprintf(stderr, SRV_NAME ": --mode=auto: the kernel offers %s: "
		"mode %s\n", mode_ops(s->opts->mode)->kernel,
		mode_name(s->opts->mode));
	err = preflight(s->opts, (unsigned int)ring_count_possible_cpus(),
			(size_t)s->page_size);
	return err ? err : ring_start_queues(s);
}
/* doc: pick-mode-end */

/*
 * FUSE_INIT travels over /dev/fuse even in io_uring mode: the rings are
 * sized from what it negotiates. Our reply sets FUSE_OVER_IO_URING, which
 * promises the kernel that ring entries will come; from then on it holds
 * every new request until every queue has one (see ring.c).
 */
int session_handle_init(struct srv_session *s)
{
	const struct fuse_init_in *in;
	struct fuse_init_out out;
	struct srv_req r;
	int err;

	s->devbuf_size = s->opts->payload_size + (size_t)s->page_size;
	s->devbuf = malloc(s->devbuf_size);
	s->devout = malloc(s->opts->payload_size);
	if (!s->devbuf || !s->devout) {
		die_msg("malloc", -ENOMEM);
		return -ENOMEM;
	}
	err = dev_read(s, &r);
	if (err) {
		die_msg("read FUSE_INIT from /dev/fuse", err);
		return err;
	}
	if (r.in->opcode != FUSE_INIT) {
		fprintf(stderr, SRV_NAME ": expected FUSE_INIT, got %s\n",
			fuse_opcode_name(r.in->opcode));
		return -EPROTO;
	}
	in = r.arg;
	/*
	 * --mode=auto: only now does the server know what the kernel has.
	 * The queues are built now, still before the reply promises io_uring;
	 * if that fails, the reply refuses the connection.
	 */
	if (s->opts->mode == SRV_MODE_AUTO &&
	    (init_offered(in) & FUSE_OVER_IO_URING)) {
		err = session_pick_mode(s, init_offered(in));
		if (err) {
			r.out_len = 0;
			dev_reply(s, &r, -EIO);
			return err;
		}
	}
	err = init_reply_build(in, s->opts, s->nr_queues, s->page_size, &out);
	if (err == -EOPNOTSUPP) {
		fprintf(stderr, SRV_NAME ": the kernel did not offer "
			"FUSE_OVER_IO_URING in FUSE_INIT (enable_uring off?)\n");
		return err;
	}
	if (err == -ENOPROTOOPT) {
		/* doc: mode-refused-begin */
		fprintf(stderr, SRV_NAME ": --mode=%s needs %s, and this kernel "
			"does not offer it (it offers %s): use --mode=auto, or "
			"boot that kernel (vm/run: KERNEL=7.2 or 7.3)\n",
			mode_name(s->opts->mode), s->ops->kernel,
			mode_offered_kernel(init_offered(in)));
		/* doc: mode-refused-end */
		return err;
	}
	if (err) {
		fprintf(stderr, SRV_NAME ": unsupported FUSE_INIT %u.%u\n",
			in->major, in->minor);
		return err;
	}
	memcpy(r.out, &out, sizeof(out));
	r.out_len = sizeof(out);
	err = dev_reply(s, &r, 0);
	if (s->opts->trace)
		srv_trace_dev(&r, err);
	if (err)
		die_msg("write FUSE_INIT reply", err);
	return err;
}

/* doc: dev-handle-begin */
/* A request that arrived on /dev/fuse: same handlers, reply by writev. */
static void dev_handle(struct srv_session *s, struct srv_req *r)
{
	const struct fuse_op_info *op = fuse_op_info(r->in->opcode);
	int err, werr = 0;

	err = srv_dispatch(r);
	if (!op || !op->no_reply) {
		werr = dev_reply(s, r, err);
		/* ENOENT: the request was interrupted and is gone; not an error */
		if (werr && werr != -ENOENT)
			die_msg("write reply to /dev/fuse", werr);
	}
	if (s->opts->trace)
		srv_trace_dev(r, err);
}
/* doc: dev-handle-end */

/*
 * Serve /dev/fuse until the connection ends or a signal asks us to stop.
 * Once the ring is ready, requests come on the rings; forgets and
 * interrupts still come here (the kernel's fuse_io_uring_ops queue them
 * for read(2) on /dev/fuse, as without io_uring). Returns why it stopped,
 * or -errno.
 */
int session_loop(struct srv_session *s)
{
	struct signalfd_siginfo si;
	struct pollfd pfd[2];
	struct srv_req r;
	sigset_t set;
	int sfd, err;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (sfd < 0) {
		err = -errno;
		die_msg("signalfd", err);
		return err;
	}
	pfd[0] = (struct pollfd){ .fd = s->devfd, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = sfd, .events = POLLIN };
	for (;;) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			die_msg("poll", err);
			break;
		}
		if (pfd[1].revents & POLLIN) {
			if (read(sfd, &si, sizeof(si)) == sizeof(si))
				fprintf(stderr, SRV_NAME ": %s, unmounting\n",
					strsignal((int)si.ssi_signo));
			err = SRV_STOP_SIGNAL;
			break;
		}
		if (!pfd[0].revents)
			continue;
		err = dev_read(s, &r);
		/* ENODEV: unmounted, or the connection was aborted */
		if (err == -ENODEV) {
			err = SRV_STOP_DISCONNECTED;
			break;
		}
		if (err) {
			die_msg("read /dev/fuse", err);
			break;
		}
		dev_handle(s, &r);
	}
	close(sfd);
	return err;
}

/*
 * Undo the mount. On a signal we detach it (MNT_DETACH: open files keep
 * it alive, and close(/dev/fuse) then aborts them). After ENODEV we only
 * clean up a mount the kernel aborted: statfs(2) giving ENOTCONN means the
 * path still names our dead connection; otherwise someone unmounted it.
 * (stat(2) could still answer from the attribute cache.)
 */
void session_unmount(struct srv_session *s, bool requested)
{
	struct statfs sf;

	if (!s->mounted)
		return;
	if (!requested && !(statfs(s->opts->mountpoint, &sf) < 0 &&
			    errno == ENOTCONN))
		return;
	if (umount2(s->opts->mountpoint, MNT_DETACH) < 0 && errno != EINVAL)
		die_msg("umount", -errno);
	s->mounted = false;
}

/* Last: closing /dev/fuse aborts the connection if it is still alive. */
void session_teardown(struct srv_session *s)
{
	if (s->devfd >= 0)
		close(s->devfd);
	s->devfd = -1;
	free(s->devbuf);
	free(s->devout);
	s->devbuf = s->devout = NULL;
}
