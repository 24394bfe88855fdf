/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * tests/exercise.h: the harness of a lab's TODO checks (a lab's exercise.c),
 * which scripts/exercise builds with the reader's copy of the server.
 *
 * Each TODO has one check function. It calls the reader's code on a made-up
 * queue and entry (no kernel, no mount) and says what is wrong with
 * wrong("..."), in words that point at the field or value to fix. The checks
 * run in TODO order, each in a child process of its own, so one that crashes
 * (a NULL payload, an out-of-bounds write caught by ASan) is reported as
 * that TODO's failure and the next TODO is still checked. Output, read by
 * scripts/exercise:
 *
 *   ok TODO 1
 *   not ok TODO 2: for buf_id 3 the payload is buffer 0, expected buffer 3
 */
#ifndef EXERCISE_H
#define EXERCISE_H

#include <stdarg.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char exercise_why[512];

/* The first thing a check finds wrong is the one reported. */
__attribute__((format(printf, 1, 2), unused))
static void wrong(const char *fmt, ...)
{
	va_list ap;

	if (exercise_why[0])
		return;
	va_start(ap, fmt);
	vsnprintf(exercise_why, sizeof(exercise_why), fmt, ap);
	va_end(ap);
}

#define EXPECT_EQ(what, want, got) do {					\
	long long w_ = (long long)(want), g_ = (long long)(got);	\
	if (w_ != g_)							\
		wrong("%s is %lld, expected %lld", what, g_, w_);	\
} while (0)

struct exercise_check {
	int todo;
	void (*check)(void);
};

/*
 * What the child wrote on stderr: copied to ours (the whole sanitizer
 * report, for whoever runs the checks by hand), and its summary line kept
 * in summary, without directories: "AddressSanitizer: heap-buffer-overflow
 * in bufring_find_payload() (bufring.c:142:2)", the first frame in a file
 * that is not the sanitizer's; or UBSan's first "bufring.c:187:50: runtime
 * error: ...".
 */
static void exercise_stderr(FILE *f, char *summary, size_t len)
{
	char line[1024], kind[128] = "";

	summary[0] = '\0';
	rewind(f);
	while (fgets(line, sizeof(line), f)) {
		char func[128], path[512], *err, *slash;

		fputs(line, stderr);
		if (summary[0])
			continue;
		line[strcspn(line, "\n")] = '\0';
		/* UBSan: "/dir/bufring.c:187:50: runtime error: member access..." */
		err = strstr(line, ": runtime error: ");
		if (err) {
			*err = '\0';
			slash = strrchr(line, '/');
			snprintf(summary, len, "%.100s: %.150s",
				 slash ? slash + 1 : line, err + 2);
			continue;
		}
		/* ASan: "==1==ERROR: AddressSanitizer: heap-buffer-overflow on..." */
		err = strstr(line, "ERROR: AddressSanitizer: ");
		if (err) {
			err += strlen("ERROR: ");	/* "AddressSanitizer: KIND" */
			snprintf(kind, sizeof(kind), "%.*s", (int)(strlen(
				 "AddressSanitizer: ") + strcspn(err + strlen(
				 "AddressSanitizer: "), " ")), err);
			continue;
		}
		/* then the first frame in a file of ours, not the sanitizer's */
		if (kind[0] &&
		    sscanf(line, " #%*d %*s in %127s %511s", func, path) == 2 &&
		    !strstr(path, "sanitizer")) {
			slash = strrchr(path, '/');
			snprintf(summary, len, "%.80s in %.60s() (%.100s)", kind, func,
				 slash ? slash + 1 : path);
		}
	}
	if (!summary[0] && kind[0])
		snprintf(summary, len, "%.127s", kind);
}

/*
 * Run one check in a child; print its line. The child writes its verdict to
 * a pipe, so a child that dies before it (a signal, ASan's exit) is told
 * apart from one that found nothing wrong; its stderr goes to a file, read
 * once it has ended.
 */
static bool exercise_run(const struct exercise_check *c)
{
	char buf[sizeof(exercise_why) + 1] = "", summary[256];
	FILE *err = tmpfile();
	int p[2], status;
	ssize_t n = 0, got;
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	if (!err || pipe(p) < 0 || (pid = fork()) < 0) {
		printf("not ok TODO %d: could not start the check\n", c->todo);
		return false;
	}
	if (pid == 0) {
		dup2(fileno(err), STDERR_FILENO);
		close(p[0]);
		alarm(10);	/* a check takes milliseconds: a loop is the reader's */
		c->check();
		/* "P" passed, "F" + why */
		dprintf(p[1], "%s%s", exercise_why[0] ? "F" : "P", exercise_why);
		_exit(0);
	}
	close(p[1]);
	while ((got = read(p[0], buf + n, sizeof(buf) - 1 - (size_t)n)) > 0)
		n += got;
	close(p[0]);
	waitpid(pid, &status, 0);
	buf[n > 0 ? n : 0] = '\0';
	exercise_stderr(err, summary, sizeof(summary));
	fclose(err);
	if (buf[0] == 'P') {
		printf("ok TODO %d\n", c->todo);
		return true;
	}
	if (buf[0] == 'F')
		printf("not ok TODO %d: %s\n", c->todo, buf + 1);
	else if (summary[0])
		printf("not ok TODO %d: your code crashed: %s\n", c->todo,
		       summary);
	else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
		printf("not ok TODO %d: your code did not return within 10 s (a "
		       "loop that never ends?)\n", c->todo);
	else if (WIFSIGNALED(status))
		printf("not ok TODO %d: your code crashed (signal %d, %s)\n",
		       c->todo, WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		printf("not ok TODO %d: your code stopped the check (exit status "
		       "%d)\n", c->todo,
		       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return false;
}

/* Every check, in TODO order; exit status 1 if one failed. */
static int exercise_main(const struct exercise_check *checks, size_t n)
{
	int failed = 0;

	for (size_t i = 0; i < n; i++)
		failed += !exercise_run(&checks[i]);
	return failed ? 1 : 0;
}

/* A lab's main(): its checks, in TODO order, e.g.
 * EXERCISE_MAIN({ 1, check_register }, { 2, check_has_buf }) */
#define EXERCISE_MAIN(...)						\
int main(void)								\
{									\
	static const struct exercise_check checks_[] = { __VA_ARGS__ };	\
									\
	return exercise_main(checks_, sizeof(checks_) / sizeof(checks_[0])); \
}

#ifdef FUSE_URING_H
/* ---- a queue and its entries, made up: no ring, no kernel -------------- */

#include <stdlib.h>

struct fake {
	struct srv_opts o;
	struct srv_session s;
	struct srv_queue q;
};

/*
 * What queue_setup() builds for a mode, without the kernel: page-aligned
 * regions (aligned_alloc), entries that know their queue, id and header
 * slot. ent_init is left to the check: it may be the reader's TODO.
 */
__attribute__((unused))
static void fake_queue(struct fake *f, enum srv_mode mode, unsigned int depth,
		       unsigned int nbufs, size_t payload_size)
{
	size_t headers = depth * sizeof(struct fuse_uring_req_header);

	memset(f, 0, sizeof(*f));
	f->o = (struct srv_opts){ .queue_depth = depth, .nbufs = nbufs,
				  .payload_size = payload_size, .mode = mode };
	f->s = (struct srv_session){ .opts = &f->o, .devfd = 42,
				     .page_size = 4096, .nr_queues = 2,
				     .ops = mode_ops(mode) };
	f->q.s = &f->s;
	f->q.qid = 1;
	f->q.headers_size = headers;
	f->q.headers_map_size = (headers + 4095) / 4096 * 4096;
	f->q.headers_mem = aligned_alloc(4096, f->q.headers_map_size);
	f->q.payload_mem_size = opts_queue_payload_bytes(&f->o);
	f->q.payload_mem = aligned_alloc(4096, f->q.payload_mem_size);
	f->q.ents = calloc(depth, sizeof(*f->q.ents));
	if (!f->q.headers_mem || !f->q.payload_mem || !f->q.ents) {
		printf("exercise: out of memory for the made-up queue\n");
		exit(3);
	}
	memset(f->q.headers_mem, 0, f->q.headers_map_size);
	for (unsigned int i = 0; i < depth; i++) {
		f->q.ents[i].queue = &f->q;
		f->q.ents[i].id = i;
		f->q.ents[i].header =
			(struct fuse_uring_req_header *)f->q.headers_mem + i;
	}
}

/*
 * A request as the kernel leaves it in an entry's header slot: the
 * fuse_in_header, and ent_in_out's payload_sz, buf_id and flags.
 */
__attribute__((unused))
static void fake_request(struct srv_ent *ent, uint32_t opcode,
			 uint32_t payload_sz, unsigned int buf_id, uint64_t flags)
{
	struct fuse_uring_req_header *h = ent->header;
	struct fuse_in_header *in = (void *)h->in_out;

	memset(h, 0, sizeof(*h));
	in->opcode = opcode;
	in->unique = 2 * (ent->id + 1);
	in->len = (uint32_t)(sizeof(*in) + payload_sz);
	h->ring_ent_in_out.payload_sz = payload_sz;
	h->ring_ent_in_out.commit_id = in->unique;
	h->ring_ent_in_out.flags = flags;
#ifdef FUSE_URING_ENT_ZERO_COPY
	h->ring_ent_in_out.buf_id = (uint16_t)buf_id;
#else
	(void)buf_id;
#endif
}

/*
 * The queue's ring, as far as io_uring_get_sqe() looks at it: an SQE128
 * submission queue of n slots in sqes (2 * n struct io_uring_sqe), which
 * this process never submits.
 */
__attribute__((unused))
static void fake_ring(struct srv_queue *q, struct io_uring_sqe *sqes,
		      unsigned int n)
{
	static unsigned int khead;

	memset(&q->ring, 0, sizeof(q->ring));
	memset(sqes, 0xa5, 2 * n * sizeof(*sqes));	/* not zero: see memset */
	khead = 0;
	q->ring.flags = IORING_SETUP_SQE128;
	q->ring.sq.sqes = sqes;
	q->ring.sq.khead = &khead;
	q->ring.sq.ring_entries = n;
	q->ring.sq.ring_mask = n - 1;
}
#endif /* FUSE_URING_H */

#endif /* EXERCISE_H */
