/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * fuse-uring.h: the types every part of the reference server shares.
 *
 * Read this first: options, one request as the handlers see it, the queue
 * and ring-entry state machine, and the functions each .c file exports.
 */
#ifndef FUSE_URING_H
#define FUSE_URING_H

/*
 * Which linux/fuse.h: every file but pool.c is compiled against the 7.2
 * tree's uapi with the v2 series (build/headers); pool.c against 7.3's
 * (build/headers-7.3), see the Makefile. The two uapis give the same names
 * other meanings (FUSE_URING_ZERO_COPY is 1 << 3 in v2 and 1 << 0 in 7.3;
 * struct fuse_uring_cmd_req has other fields after qid), so no file can
 * include both. What this header and the files it serves use of the uapi
 * is what stock 7.2 already had, the same in both: fuse_in_header, the
 * 288-byte fuse_uring_req_header (only the meaning of ring_ent_in_out's
 * bytes 20-23 differs: v2's buf_id, 7.3's offset; each rung reads them
 * through its own header), and cmd_req's flags, commit_id and qid. The
 * names of one design are used only in that design's rung files, which
 * check for their own uapi at the top.
 */
#include <linux/fuse.h>
#include <liburing.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/uio.h>

#define SRV_NAME "fuse-uring-server"

/* ---- options (options.c) ---------------------------------------------- */

/*
 * How ring entries hand buffers to the kernel. Stock 7.2 knows only iovec
 * mode. Above it are two ladders, one per design; each mode is the one
 * before plus one step:
 *
 * the v2 series (kernel-patches/, on 7.2), REGISTER flags:
 *   bufring         FUSE_URING_BUFRING (0004)
 *   pinned-headers  ... | FUSE_URING_PINNED_HEADERS (0005)
 *   pinned-buffers  ... | FUSE_URING_PINNED_BUFFERS (0006)
 *   zero-copy       ... | FUSE_URING_ZERO_COPY (0008)
 *
 * what Linux 7.3 merged, queue commands before REGISTER (pool.c):
 *   pool            ADD_QUEUE, then ADD_BUFPOOL: one payload pool per queue
 *   pool-fixed      ... the pool registered as an io_uring fixed buffer
 *   pool-zero-copy  ... and ADD_QUEUE with FUSE_URING_ZERO_COPY; files
 *                   opened with FOPEN_IO_URING_ZERO_COPY
 *
 * auto, the default, is none of them: FUSE_INIT's offer picks one
 * (mode_pick()), and the server says which.
 */
enum srv_mode {
	SRV_MODE_AUTO,		/* the best one FUSE_INIT offers */
	SRV_MODE_IOVEC,		/* REGISTER passes iov[0] header, iov[1] payload */
	SRV_MODE_BUFRING,	/* one headers and one payload region per queue */
	SRV_MODE_PINNED_HEADERS,/* the kernel pins the headers region */
	SRV_MODE_PINNED_BUFFERS,/* ... and the payload region */
	SRV_MODE_ZERO_COPY,	/* ... and lends READ/WRITE folios as fixed buffers */
	SRV_MODE_POOL,		/* 7.3: a payload pool per queue, offsets per request */
	SRV_MODE_POOL_FIXED,	/* ... registered as an io_uring fixed buffer */
	SRV_MODE_POOL_ZERO_COPY,/* ... and zero-copy, per file */
};

/*
 * How each queue's ring is created (--ring-setup, ring-setup.c): which of
 * io_uring's ways to run the kernel's task work it asks for.
 */
enum srv_ring_setup {
	SRV_RING_PLAIN,		/* SQE128 only: task work interrupts the thread */
	SRV_RING_COOP,		/* ... | COOP_TASKRUN | TASKRUN_FLAG: no interrupt */
	SRV_RING_DEFER,		/* ... | SINGLE_ISSUER | DEFER_TASKRUN: when we wait */
	SRV_RING_SQPOLL,	/* ... | SQPOLL: a kernel thread submits for us */
	SRV_NR_RING_SETUPS
};

struct srv_opts {
	const char *backing_dir;
	const char *mountpoint;
	unsigned int queue_depth;	/* ring entries per queue */
	size_t payload_size;		/* bytes of one payload buffer = max_write */
	unsigned int nbufs;		/* bufring, pool: payload buffers per queue */
	enum srv_mode mode;
	enum srv_ring_setup ring_setup;	/* how each queue's ring is created */
	bool fallback;			/* a rung down when the mode is refused */
	bool unlinked;			/* zero-copy: commit after the fixed I/O's CQE */
	size_t zero_copy_min;		/* pool-zero-copy: only files this big, at open */
	unsigned int timeout;		/* seconds the kernel may cache names, attrs */
	unsigned int negative_timeout;	/* ... and that a name is missing */
	bool allow_other;		/* every user may reach the mount */
	bool foreground;
	bool trace;			/* one line per request on stderr */
	bool verbose;			/* the memory report at start-up */
	bool help;
};

#define SRV_DEFAULT_QUEUE_DEPTH 8		/* libfuse's default, too */
#define SRV_MAX_QUEUE_DEPTH 1024
/* = 256 pages, fuse's default max_pages_limit */
#define SRV_DEFAULT_PAYLOAD_SIZE (1024 * 1024)
#define SRV_MIN_PAYLOAD_SIZE FUSE_MIN_READ_BUFFER
#define SRV_MAX_PAYLOAD_SIZE (16 * 1024 * 1024)
#define SRV_MAX_NBUFS 65535	/* v2's buf_id is a u16; 7.3's pool: below 4 GiB */
#define SRV_DEFAULT_TIMEOUT 1	/* seconds: libfuse's default */
#define SRV_MAX_TIMEOUT 86400	/* a day: passthrough_hp's default */
#define SRV_SQ_THREAD_IDLE_MS 10	/* --ring-setup=sqpoll (ring-setup.c: why) */

int parse_options(int argc, char **argv, struct srv_opts *o,
		  char *err, size_t errlen);
const char *mode_name(enum srv_mode m);
bool mode_uses_bufring(enum srv_mode m);
bool mode_uses_pool(enum srv_mode m);
bool mode_pins_headers(enum srv_mode m);
bool mode_pins_buffers(enum srv_mode m);
bool mode_zero_copy(enum srv_mode m);
uint64_t mode_register_flags(enum srv_mode m);
struct srv_mode_ops;
const struct srv_mode_ops *mode_ops(enum srv_mode m);
unsigned int opts_payload_bufs(const struct srv_opts *o);
size_t opts_queue_payload_bytes(const struct srv_opts *o);
void print_usage(FILE *f);
int mode_pick(struct srv_opts *o, uint64_t offered);
const char *mode_offered_kernel(uint64_t offered);

/* ---- one request, as every handler sees it (proto.c) ------------------- */

/*
 * The same view is filled from a /dev/fuse read buffer or from a ring entry,
 * so the handlers in ops.c do not know which channel a request came on.
 * Over io_uring, out is the payload buffer that data points into: a
 * handler reads all of data before it writes its reply.
 */
struct srv_req {
	const struct fuse_in_header *in;
	const void *arg;	/* per-opcode header, e.g. struct fuse_write_in */
	size_t arg_len;
	const char *data;	/* what follows: names, WRITE data */
	size_t data_len;
	void *out;		/* reply payload goes here (no fuse_out_header) */
	size_t out_size;	/* capacity of out */
	size_t out_len;		/* set by the handler */
};

/* What the protocol says about one opcode (proto.c's table). */
struct fuse_op_info {
	const char *name;	/* the uapi name without FUSE_, for --trace */
	size_t arg_size;	/* its per-opcode header, 0 if none */
	bool out_args;		/* the reply has data after fuse_out_header */
	bool no_reply;		/* FORGET, BATCH_FORGET, INTERRUPT, NOTIFY_REPLY */
};

const struct fuse_op_info *fuse_op_info(uint32_t opcode);
const char *fuse_opcode_name(uint32_t opcode);
int parse_dev_request(void *buf, size_t n, struct srv_req *r);
int parse_ring_request(struct fuse_uring_req_header *hdr, void *payload,
		       size_t payload_cap, struct srv_req *r);
void build_ring_reply(struct fuse_uring_req_header *hdr, uint64_t unique,
		      int error, size_t out_len);
void build_dev_reply(struct fuse_out_header *oh, uint64_t unique, int error,
		     size_t out_len);
int req_name(const struct srv_req *r, size_t skip, const char **name,
	     size_t *consumed);
int req_supp_group(const struct srv_req *r, uint32_t *gid);
size_t dirent_pack(void *buf, size_t cap, const char *name, uint64_t ino,
		   uint64_t off, uint32_t type);
void stat_to_fuse_attr(const struct stat *st, struct fuse_attr *a);
void statx_to_fuse_statx(const struct statx *sx, struct fuse_statx *f);
uint64_t init_offered(const struct fuse_init_in *in);
int init_reply_build(const struct fuse_init_in *in, const struct srv_opts *o,
		     unsigned int nr_queues, long page_size,
		     struct fuse_init_out *out);
unsigned int mode_after_kill_suidgid(unsigned int mode);

/* ---- the passthrough file system (ops.c, inodes.c) --------------------- */

int ops_init(const char *backing_dir);
void ops_set_timeouts(unsigned int timeout, unsigned int negative_timeout);
void ops_destroy(void);
int srv_dispatch(struct srv_req *r);
int srv_write_kill_suidgid(const struct srv_req *r);

/* ---- queues and ring entries (ring.c) ---------------------------------- */

struct srv_queue;

/*
 * The request an entry holds, as the CQE found it. The reply overwrites
 * in_out and payload_sz in the header slot, so what the reply, the trace
 * and a later commit (zero-copy) need is kept here, once per request.
 */
struct srv_ent_req {
	uint64_t unique, commit_id;
	uint32_t opcode;
	uint32_t payload_sz;		/* ent_in_out.payload_sz of the request */
	size_t arg_len;			/* its per-opcode header, for --trace */
	void *payload;			/* its payload buffer, NULL for none */
	int buf;			/* bufring, pool: buffer for --trace, -1 none */
	bool zero_copied;		/* zero-copy: data lent as a fixed buffer */
};

/*
 * One ring entry: a header slot and a payload buffer the kernel copies to.
 * In iovec mode the buffer is the entry's own; in bufring and pool modes
 * the kernel lends one of the queue's buffers per request (or none), so it
 * is found anew in every request's ent_in_out (v2's buf_id, 7.3's offset).
 */
struct srv_ent {
	struct srv_queue *queue;
	unsigned int id;			/* index in queue->ents */
	uint32_t last_cmd;			/* FUSE_IO_URING_CMD_*, for messages */
	struct fuse_uring_req_header *header;	/* its slot: headers_mem + id */
	void *payload;				/* iovec mode: its own buffer */
	struct srv_ent_req req;			/* the request it holds */
	/*
	 * REGISTER hands the kernel this array's address; it must stay put.
	 * iovec: this entry's header and payload; bufring: the queue's regions.
	 */
	struct iovec iov[2];
};

/* doc: user-data-begin */
/*
 * What a CQE completes, from its user_data. Entries are 8-byte aligned,
 * so the low bit of an entry's address is free to say which of its
 * operations it was:
 *
 *   UD_STOP (0)         the poll on the stop eventfd
 *   ent                 a FUSE command of ent: REGISTER, COMMIT_AND_FETCH
 *   ent | UD_MODE_IO    an operation of the mode's own for ent (zero-copy:
 *                       READ_FIXED/WRITE_FIXED)
 */
#define UD_STOP 0
#define UD_MODE_IO 1ULL
/* doc: user-data-end */

/*
 * What a mode adds to ring.c's stock life-cycle: one per rung of the
 * ladder, defined with its code (iovec.c, bufring.c, zero-copy.c). ring.c
 * calls these and knows no mode by name. NULL hooks do nothing.
 */
struct srv_mode_ops {
	/* FUSE_INIT flags the kernel must offer for this mode to work */
	uint64_t init_needs;
	/* that flag, and the kernel that offers it, for messages */
	const char *kernel;
	/* the flags every REGISTER of mode m carries; NULL: none */
	uint64_t (*register_flags)(enum srv_mode m);
	/* set ent->iov[] (what REGISTER names) and ent->payload */
	void (*ent_init)(struct srv_ent *ent);
	/* more set-up of the queue's ring, once it exists */
	int (*ring_init)(struct srv_queue *q, const char **what);
	/*
	 * Commands for the whole queue, after the INIT reply and before its
	 * first REGISTER (7.3: ADD_QUEUE, ADD_BUFPOOL); 0 or -errno, with
	 * *what naming the command that failed
	 */
	int (*queue_add)(struct srv_queue *q, const char **what);
	/* REGISTER's fields beyond the iovec pair */
	void (*prep_register)(struct io_uring_sqe *sqe, struct srv_ent *ent);
	/* COMMIT_AND_FETCH's fields beyond qid and commit_id (7.3's fixed pool) */
	void (*prep_commit)(struct io_uring_sqe *sqe, struct srv_ent *ent);
	/* where ent's request has its payload: ent->req.payload and .buf */
	int (*find_payload)(struct srv_ent *ent);
	/*
	 * Serve the request itself instead of the file system's handler, and
	 * commit later: true if it did. false with *err set: reply *err now.
	 */
	bool (*take_request)(struct srv_ent *ent, const struct srv_req *r,
			     int *err);
	/* the CQE of an operation it tagged ent | UD_MODE_IO */
	void (*mode_io_done)(struct srv_ent *ent, int res);
	/*
	 * Change a reply the file system's handler built, before it is
	 * committed (7.3's zero-copy: the per-file opt-in in OPEN and CREATE)
	 */
	void (*reply_ready)(struct srv_ent *ent, struct srv_req *r);
	/* zero-copy: the fixed-buffer slot of entry 0; entry i's is slot0 + i */
	unsigned int zero_copy_slot0;
};

struct srv_session;

struct srv_queue {
	struct srv_session *s;
	unsigned int qid;		/* = the CPU whose requests it gets */
	struct io_uring ring;
	bool ring_ready;		/* io_uring_queue_init succeeded */
	int stop_efd;			/* eventfd: main writes it to stop us */
	bool registering;		/* in queue_register(): errors are its */
	int reg_err;			/* first REGISTER error, -errno */
	struct srv_ent *ents;
	unsigned int live_ents;		/* entries the kernel has not ended */
	void *headers_mem, *payload_mem;	/* mmap()ed: page-aligned */
	size_t headers_size, payload_mem_size;	/* what the kernel may use */
	size_t headers_map_size;		/* headers_size, page-rounded */
	pthread_t thread;
	bool thread_started;
};

/* ---- the session: /dev/fuse, the mount, and the start-up hand-shake ---- */

struct srv_session {
	struct srv_opts *opts;
	int devfd;
	bool mounted;
	void *devbuf, *devout;		/* /dev/fuse request and reply buffers */
	size_t devbuf_size;
	unsigned int nr_queues;
	long page_size;
	struct srv_queue *queues;
	const struct srv_mode_ops *ops;	/* the mode's hooks (mode_ops()) */

	/*
	 * Start-up hand-shake between main and the queue threads, under lock:
	 * threads report "ring built", wait for "go" (sent after the INIT
	 * reply), then report "REGISTER accepted" or the error they got.
	 */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int nr_built, nr_registered;
	unsigned int nr_accepted;	/* REGISTERs the kernel kept, all queues */
	int setup_err;			/* first error, -errno */
	const char *setup_err_what;	/* which call gave it */
	bool go, abort_start;
	bool failed;			/* a queue stopped the server on an error */
};

/* session.c; session_loop() returns one of these, or -errno */
#define SRV_STOP_SIGNAL 1	/* SIGINT/SIGTERM: we unmount */
#define SRV_STOP_DISCONNECTED 2	/* unmounted or aborted from outside */
int session_open_dev(struct srv_session *s);
int session_check_uring_param(void);
int session_mount(struct srv_session *s);
int session_handle_init(struct srv_session *s);
int session_loop(struct srv_session *s);
void session_unmount(struct srv_session *s, bool requested);
void session_teardown(struct srv_session *s);

/* preflight.c: what a mode needs of the system, checked before mounting */
size_t page_round_up(size_t len, size_t page);
size_t pinned_queue_headers_bytes(const struct srv_opts *o, size_t page);
size_t pinned_queue_payload_bytes(const struct srv_opts *o, size_t page);
uint64_t pinned_total_bytes(const struct srv_opts *o, unsigned int nr_queues,
			    size_t page);
int preflight(struct srv_opts *o, unsigned int nr_queues, size_t page);
void preflight_report(const struct srv_session *s);
void explain_register_error(const struct srv_session *s, int err);
enum srv_mode register_fallback(enum srv_mode m, int err);

/* ring.c: the stock life-cycle of every queue */
int ring_count_possible_cpus(void);
int ring_start_queues(struct srv_session *s);
int ring_register_all(struct srv_session *s);
void ring_stop_queues(struct srv_session *s);
bool ring_step_down(struct srv_session *s, int err);

/* ring-setup.c: --ring-setup, the flags each queue's ring is created with */
const char *ring_setup_name(enum srv_ring_setup rs);
unsigned int ring_setup_flags(enum srv_ring_setup rs);
int ring_setup_init(struct srv_queue *q, unsigned int entries,
		    const char **what);
int ring_setup_submit(struct srv_queue *q);
void ring_setup_report(const struct srv_session *s);

/* sqe.c: the SQEs ring.c and the modes submit, and the --trace line */
struct io_uring_sqe *queue_sqe(struct srv_queue *q);
void prep_fuse_cmd(struct io_uring_sqe *sqe, struct srv_ent *ent,
		   uint32_t cmd_op, uint64_t commit_id);
const char *cmd_name(uint32_t cmd_op);
void trace_ring(const struct srv_ent *ent, size_t out_len, int err);

/*
 * the modes: iovec.c (stock 7.2), bufring.c (0004-0006), zero-copy.c
 * (0008), pool.c (7.3)
 */
extern const struct srv_mode_ops iovec_ops;
extern const struct srv_mode_ops bufring_ops;
extern const struct srv_mode_ops zero_copy_ops;
extern const struct srv_mode_ops pool_ops;
void bufring_ent_init(struct srv_ent *ent);
void bufring_prep_register(struct io_uring_sqe *sqe, struct srv_ent *ent);
int bufring_find_payload(struct srv_ent *ent);
uint64_t bufring_register_flags(enum srv_mode m);
bool bufring_req_has_buf(const struct fuse_uring_req_header *hdr);
bool req_zero_copied(const struct fuse_uring_req_header *hdr);
bool zero_copy_take_request(struct srv_ent *ent, const struct srv_req *r,
			    int *err);
void zero_copy_io_done(struct srv_ent *ent, int res);
extern const struct srv_mode_ops pool_zero_copy_ops;

#endif /* FUSE_URING_H */
