/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * tests/uapi-errors/server.h: what the cases of build/tests/uapi-errors
 * share (server.c): the set-up every case bends one field of, the
 * connection and its commands, queue memory, a request served from a
 * thread's stat(2), and the small file system the zero-copy cases serve
 * (serve_mini()). main.c says what the program does and how it reports.
 */
#ifndef UAPI_ERRORS_SERVER_H
#define UAPI_ERRORS_SERVER_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE		/* pthread_timedjoin_np() */
#endif

#include <liburing.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#define MNT_DEFAULT	"/tmp/uapi-errors-mnt"
#define ENABLE_URING	"/sys/module/fuse/parameters/enable_uring"
#define CPUS_POSSIBLE	"/sys/devices/system/cpu/possible"

/* The well-formed set-up: entries and payload buffers per queue. */
#define DEPTH		2
#define NBUFS		2
#define HDR_SZ		sizeof(struct fuse_uring_req_header)

/* FUSE_INIT asks for max_pages = 2: small buffers, quick cases. */
#define INIT_MAX_PAGES	2
#define INIT_READ_BUF	(64 * 1024)	/* >= FUSE_MIN_READ_BUFFER (8 KiB) */

/*
 * How long to wait. A refused command completes inline, before
 * io_uring_submit() returns, so ACCEPT_MS is only a margin; the others bound
 * what could otherwise hang (a request that never arrives, a stat(2) that
 * never returns).
 */
#define ACCEPT_MS	10
#define REQUEST_MS	5000
#define JOIN_MS		5000

/* Header slots start out as this byte; the kernel writes only its own. */
#define POISON		0xa5

/* st_size our GETATTR reply carries: stat(2) seeing it saw our reply. */
#define MARKER_SIZE	0x5eedULL

/* Results of a command besides a CQE's res (which is 0 or -errno). */
#define ACCEPTED	1	/* no CQE: the kernel queued the command */
#define NOT_SUBMITTED	2	/* io_uring_submit() failed (printed) */

/* user_data: what the command was, and for which queue and entry. */
enum { UD_REGISTER = 1, UD_COMMIT = 2, UD_FIXED = 3 };
#define UD(kind, qid, ent) \
	((uint64_t)(kind) << 32 | (uint64_t)(qid) << 16 | (uint64_t)(ent))
#define UD_KIND(ud)	((unsigned int)((ud) >> 32))
#define UD_QID(ud)	((uint16_t)((ud) >> 16))
#define UD_ENT(ud)	((uint16_t)(ud))

/* The flags of the pinned and zero-copy cases. */
#define PINNED		(FUSE_URING_PINNED_HEADERS | FUSE_URING_PINNED_BUFFERS)
#define ZERO_COPY_ALL	(FUSE_URING_BUFRING | PINNED | FUSE_URING_ZERO_COPY)


/* the connection: /dev/fuse, the mount, FUSE_INIT, the ring */
struct conn {
	int fd;			/* /dev/fuse: the connection */
	bool mounted;
	bool ring_up;
	struct io_uring ring;
};

/* How conn_open_init() answers FUSE_INIT. */
enum init_mode {
	INIT_URING,	/* with FUSE_OVER_IO_URING: what every case but three wants */
	INIT_NO_URING,	/* without it: the connection has no ring */
	INIT_LATER,	/* not yet: the case calls answer_init() itself */
	/*
	 * with FUSE_OVER_IO_URING and FUSE_HAS_URING_BUFRING: a REGISTER
	 * refused for want of a resource can be tried again (patch 0020)
	 */
	INIT_URING_RETRY,
	/*
	 * with FUSE_OVER_IO_URING, FUSE_ASYNC_DIO and max_background 2: a
	 * direct read from io_uring is a background request, and a third
	 * one waits in the queue's background list
	 */
	INIT_URING_ASYNC_DIO,
};

/* What one REGISTER carries. */
struct reg {
	uint16_t qid;
	uint64_t flags;
	uint32_t buf_size;	/* init.buf_size */
	uint16_t depth;		/* init.queue_depth */
	uint16_t ent;		/* sqe->buf_index: the entry id, its header slot */
	const struct iovec *iov; /* [0] headers, [1] payload */
	uint16_t padding;	/* cmd_req.padding: must be 0 */
	uint16_t init_padding;	/* cmd_req.init.padding: must be 0 */
};

/*
 * One queue's memory in the buffer-ring layout: iov[0] the headers region
 * (one struct fuse_uring_req_header per entry, indexed by entry id), iov[1]
 * the payload region (buffers of buf_size). Cases bend the iovecs after
 * qmem_alloc(); the mappings stay as allocated, for qmem_free().
 */
struct qmem {
	void *hmap, *pmap;
	size_t hmap_len, pmap_len;
	struct iovec iov[2];
	uint16_t depth;
	uint32_t buf_size;
	uint64_t flags;		/* what reg_bufring() registers: BUFRING, ... */
};

/*
 * The thread is created first and waits for stat_go(): creating it maps a
 * stack, and the unmapped-headers case must not have that mapping land in
 * the hole it made.
 */
struct stat_job {
	pthread_t th;
	sem_t go;
	int err;		/* errno of stat(2), 0 on success */
	struct stat st;
};

struct served {
	uint16_t qid, ent, buf_id;
	uint64_t unique;
	int wrong_qid_res;	/* with reply_bend.wrong_qid_first */
	int padded_commit_res;	/* with reply_bend.padded_commit_first */
	int other_process_res;	/* with reply_bend.other_process_commit_first */
};

/*
 * A reply with one thing wrong (the reply-* and commit-wrong-qid cases);
 * serve_getattr() with NULL sends the right one.
 */
struct reply_bend {
	bool payload_sz_set;
	uint32_t payload_sz;	/* ring_ent_in_out.payload_sz, if set */
	uint64_t unique_xor;	/* fuse_out_header.unique ^= this */
	int32_t error;		/* fuse_out_header.error */
	bool wrong_qid_first;	/* COMMIT_AND_FETCH on the other queue first */
	uint16_t ent_padding;	/* ring_ent_in_out.padding: must stay 0 */
	uint64_t ent_reserved;	/* ring_ent_in_out.reserved: must stay 0 */
	bool padded_commit_first; /* a COMMIT_AND_FETCH with cmd_req.padding 1 first */
	bool other_process_commit_first; /* the right commit, from another process first */
};

/*
 * The zero-copy cases with requests (zero-copy.c) serve real requests: a
 * client thread makes system calls on the mount, and serve_mini() answers
 * them on the ring as a server would. Its file system: the root (nodeid 1), "f" and "g" (nodeids 2, 3:
 * regular, FILE_SIZE bytes) and "x" (4: a script, mode 0755). OPEN replies
 * FOPEN_DIRECT_IO, so every read(2) and write(2) is one READ or WRITE, on
 * the caller's own pages.
 */
#define FILE_SIZE	8192
#define IO_SIZE		4096
#define SCRIPT		"#!/nonexistent-interpreter\n"
#define MINI_MS		10000	/* the whole client script */

enum rw_policy {
	RW_UNEXPECTED,	/* a READ or WRITE must not reach the server */
	RW_FIXED,	/* zero-copied: wrong direction first, then the right one */
	RW_COPY,	/* not zero-copied: data in the payload buffer */
	RW_RACE,	/* zero-copied READs only: READ_FIXED, which may fail */
};

struct mini {
	const char *name;
	struct conn *c;
	struct qmem *qs;
	enum rw_policy rw;
	int memfd;		/* the data of "f", for the fixed operations */
	bool async_commit;	/* COMMIT_AND_FETCH with IOSQE_ASYNC: from io-wq */
	bool async_fixed;	/* fixed operations with IOSQE_ASYNC: from io-wq */
	int fixed_errs;		/* RW_RACE: READ_FIXEDs that failed */
	/* what happened */
	int zc_reads, zc_writes, copy_reads, copy_writes, unexpected;
	int wrong_dir_read, wrong_dir_write;	/* res of the wrong direction */
	int empty_slot;		/* res of READ_FIXED at an empty slot */
	char failure[200];	/* the first protocol failure, if any */
	/* CQEs that arrived while we waited for a fixed operation's */
	struct { uint64_t ud; int res; } stash[16];
	unsigned int nstash;
};

/* The client: system calls on the mount, in a thread of their own. */
struct client {
	pthread_t th;
	void (*fn)(struct client *);
	volatile int done;	/* set by the thread when fn returned */
	/* results, errno or 0, per step */
	int open_err, read_err, write_err[3], stat_err, close_err, exec_err;
	ssize_t read_n;
	/* page-aligned, as direct I/O buffers usually are */
	char rdata[IO_SIZE] __attribute__((aligned(4096)));
	char data[IO_SIZE] __attribute__((aligned(4096)));
};


/* ---- the run: set by main(), read by every case -------------------------- */

extern const char *mnt;			/* the mount point, --mnt */
extern unsigned int nr_queues;		/* one FUSE queue per possible CPU */
extern size_t page_size;
extern uint32_t max_payload;		/* the ring's max_payload_sz, see main() */
extern uint64_t init_offered;		/* the flags the last FUSE_INIT offered */

/* ---- reporting: main() prints the line, see server.c --------------------- */

extern bool case_passed, case_failed, case_skipped;
extern char case_skip_why[200];
void pass(const char *name);
__attribute__((format(printf, 2, 3)))
int fail(const char *name, const char *fmt, ...);
__attribute__((format(printf, 2, 3)))
void skip(const char *name, const char *fmt, ...);
void kmsg_check(const char *name, int fd);
const char *res_str(int res, char *buf, size_t len);
int expect_res(const char *name, int want, int got);

/* ---- the connection and its commands ------------------------------------- */

int answer_init(int fd, enum init_mode mode, const char **what);
void conn_close(struct conn *c);
int conn_open_init(struct conn *c, const char *name, enum init_mode mode);
int conn_open(struct conn *c, const char *name);
struct io_uring_sqe *fuse_cmd_sqe(struct conn *c, uint32_t cmd_op,
				  const struct fuse_uring_cmd_req *req,
				  uint64_t ud);
int wait_cqe_ms(struct conn *c, int ms, uint64_t *ud, int *res);
int submit_and_reap(struct conn *c, uint64_t ud);
int do_register_ms(struct conn *c, const struct reg *r, int ms);
int do_register(struct conn *c, const struct reg *r);
struct io_uring_sqe *register_sqe(struct conn *c, const struct reg *r);
int in_other_process(const char *name, const struct conn *c,
		     int (*fn)(struct conn *c2, const void *arg), const void *arg);
int do_commit(struct conn *c, uint16_t qid, uint16_t ent, uint64_t commit_id);
char set_enable_uring(char value);

/* ---- queue memory and REGISTERs ------------------------------------------ */

void *map_anon(size_t len, int prot);
size_t page_round(size_t len);
void qmem_free(struct qmem *q);
int qmem_alloc(const char *name, struct qmem *q, uint16_t depth,
	       uint32_t buf_size, size_t payload_len);
int qmem_good(const char *name, struct qmem *q);
int qmem_iovec(const char *name, struct qmem *q);
int alloc_pinned(const char *name, struct qmem *q);
char *slot(const struct qmem *q, uint16_t ent);
struct reg reg_bufring(uint16_t qid, uint16_t ent, const struct qmem *q);
struct reg reg_iovec(uint16_t qid, const struct qmem *q);
int setup_register(const char *name, struct conn *c, const struct reg *r);
int setup_bufring_queue(const char *name, struct conn *c, uint16_t qid,
			const struct qmem *q);
int register_all(const char *name, struct conn *c, const struct qmem *qs);
int need_two_queues(const char *name);
void first_register(const char *name, int want,
		    void (*bend)(struct reg *r, struct qmem *q));
int qs_alloc(const char *name, struct qmem *qs,
	     int (*alloc)(const char *, struct qmem *));
void qs_free(struct qmem *qs);

/* ---- a request: stat(2) of the mount root, served ------------------------ */

int stat_start(const char *name, struct stat_job **jp);
void stat_go(struct stat_job *j);
int stat_join(struct stat_job *j, int ms);
void stat_end(struct stat_job *j, bool joined);
int round_trip(const char *name, struct conn *c, struct qmem *qs,
	       struct served *s);
int stat_round(const char *name, struct conn *c, const struct qmem *qs,
	       struct served *s, const struct reply_bend *b, int want_err);
void retry_and_serve(const char *name, struct conn *c, const struct qmem *qs,
		     const char *what, uint16_t q0_first);

/* ---- capabilities and pinned memory -------------------------------------- */

int cap_effective(int cap, bool on);
long vmpin_kb(void);

/* ---- threads that make requests ------------------------------------------ */

int pin_to_cpu(int cpu);
bool thread_sleeps(pid_t tid, int ms);

/* ---- the small file system of the zero-copy cases ------------------------ */

int mini_next_cqe(struct mini *m, int ms, uint64_t *ud, int *res);
int mini_fixed_start(struct mini *m, uint8_t opcode, uint16_t idx, int fd,
		     unsigned int len, uint64_t off);
int mini_fixed_wait(struct mini *m, uint16_t idx);
int mini_fixed(struct mini *m, uint8_t opcode, uint16_t idx, int fd,
	       unsigned int len, uint64_t off);
void mini_serve_one(struct mini *m, uint16_t qid, uint16_t ent);
void mini_commit(struct mini *m, uint16_t qid, uint16_t ent, int len);
void *client_thread(void *arg);
void mnt_path(char *buf, size_t len, const char *name);
int serve_mini_ms(struct mini *m, struct client *cl, int limit_ms);
int serve_mini(struct mini *m, struct client *cl);

#endif /* UAPI_ERRORS_SERVER_H */
