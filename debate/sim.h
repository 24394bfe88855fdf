/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * debate/sim.h: replay a trace of FUSE ring requests through five designs
 * of payload buffers, and measure what each one costs.
 *
 * A trace (debate/trace2csv) has one row per request: who sent it, on which
 * queue, its opcode, when it was sent, dispatched, committed and ended, and
 * the payload bytes in and out. trace.c reads it and derives, per request,
 * the buffer it needs, its service time in the server, and (closed-loop
 * replay) the earlier request whose completion it waited for. sim.c then
 * runs every queue of the mount as the kernel does (entries, the queue's
 * list of waiting requests, one server thread per ring) with the buffers of
 * one design, in simulated ticks of one microsecond.
 *
 * The model, its assumptions and the designs are described in
 * docs/buffer-size-debate.rst; the tests in debate/tests/unit.c pin each
 * rule down.
 */
#ifndef DEBATE_SIM_H
#define DEBATE_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define KIB 1024u
#define MIB (1024u * 1024u)

/* ---- the trace -------------------------------------------------------- */

struct req {
	int seq;		/* row in the trace: the order of sending */
	int pid;		/* task that sent it (renumbered) */
	int qid;		/* queue it went to */
	char op[16];		/* opcode name without FUSE_ */
	int64_t send;		/* fuse_request_send, us since the first */
	int64_t disp;		/* fuse_uring_send, absolute us */
	int64_t done;		/* fuse_uring_commit, absolute us */
	int64_t end;		/* fuse_request_end, absolute us */
	uint32_t in;		/* payload bytes to the server */
	uint32_t out;		/* reply bytes after fuse_out_header */
	int err;
	int buf;		/* 1: had a payload buffer, 0: none, -1: unknown */
	int64_t wait;		/* first fuse_uring_wait_buffer, absolute; -1 none */
	int nwait;

	/* derived by trace_prepare() */
	bool payload;		/* needs a payload buffer at all */
	uint32_t need;		/* bytes of buffer it needs (0 without payload) */
	int64_t svc;		/* ticks the server works on it */
	int dep;		/* closed loop: index of the request it follows, -1 */
	int64_t gap;		/* ticks from dep's end to this one's send */
};

#define TRACE_MAX_META 24

struct trace {
	struct req *r;
	size_t n;
	int nqueues;		/* max qid + 1, or the header's "queues" */
	int depth;		/* the header's "depth", 8 if absent */
	char meta[TRACE_MAX_META][2][160];	/* "# key: value" lines */
	int nmeta;
	/* service time model, fitted by trace_prepare() */
	double c0;		/* ticks per request */
	double per_byte;	/* ticks per payload byte (1 / bandwidth) */
	int groups;		/* busy periods the fit used */
};

/* How requests are replayed. */
enum replay { REPLAY_CLOSED, REPLAY_OPEN };
/* Where a request's service time comes from. */
enum svc_src { SVC_TRACE, SVC_FIT };
/* How the buffer need of READDIR is estimated. */
enum need_rule { NEED_DECLARED, NEED_REPLY };

struct prep_opts {
	enum svc_src svc;
	enum need_rule need;
	uint32_t max_payload;	/* largest payload (the server's --payload-size) */
};

/* Read a trace (CSV from debate/trace2csv); "-" is stdin, *.xz is read
 * through xz -dc. Returns 0, or -1 with a message in err. */
int trace_read(struct trace *t, const char *path, char *err, size_t errlen);
int trace_parse(struct trace *t, FILE *f, char *err, size_t errlen);
void trace_free(struct trace *t);
const char *trace_meta(const struct trace *t, const char *key);

/* Buffer bytes a request needs, from its opcode and sizes (see sim.c). */
uint32_t req_need(const struct req *r, enum need_rule rule, uint32_t max_payload);
/* Whether it needs a buffer at all: the trace's buf, or the sizes. */
bool req_payload(const struct req *r);

/* Derive need, payload, svc, dep and gap for every request. */
void trace_prepare(struct trace *t, const struct prep_opts *o);

/* ---- the designs ------------------------------------------------------ */

enum alloc_kind {
	AL_ENTRY,	/* (a) iovec: every entry owns a max-size buffer */
	AL_RING,	/* (b) one size, nbufs buffers, taken in turn */
	AL_CLASSES,	/* (c) size classes in one ring */
	AL_POOL,	/* (e) one region, variable-size pieces at offsets */
};

#define MAX_CLASSES 8

struct ring_spec {
	enum alloc_kind kind;
	int entries;		/* entries of this ring (its queue depth) */
	uint32_t bufsize;	/* AL_ENTRY, AL_RING */
	int nbufs;		/* AL_RING */
	int nclasses;		/* AL_CLASSES, smallest first */
	uint32_t class_size[MAX_CLASSES];
	int class_count[MAX_CLASSES];
	bool upgrade;		/* AL_CLASSES: may take a bigger class */
	uint64_t pool;		/* AL_POOL: bytes */
	uint32_t grain;		/* AL_POOL: allocation unit */
	uint32_t split;		/* AL_POOL: pieces <= split come from the top end
				 * (last fit), larger ones from the bottom (first
				 * fit); 0: all first fit */
};

struct design {
	char name[96];		/* as given, e.g. "b:2" */
	int nrings;		/* rings per queue: 1, or 2 for (d) */
	struct ring_spec ring[2];
	uint32_t route;		/* nrings 2: need <= route goes to ring 0 */
};

/* Parse a design:
 *   a                       iovec: depth entries x max payload each
 *   b:N                     one ring of N buffers of max payload
 *   c:SIZE*N,SIZE*N,...     size classes, a request waits for its own
 *   c+:SIZE*N,...           size classes, may take a bigger free one
 *   d:SIZE*N/SIZE*N         two rings (metadata / data), each with depth
 *                           entries and its own server thread; a request
 *                           whose need fits the first ring's size goes there
 *   e:BYTES                 a pool, pieces rounded up to 4 KiB, first fit
 *   e:BYTES/split           the same, but pieces of 64 KiB or less are
 *                           taken from the top of the pool (last fit)
 * SIZE and BYTES take K and M suffixes. Returns 0, or -1 with a message. */
int design_parse(struct design *d, const char *spec, int depth,
		 uint32_t max_payload, char *err, size_t errlen);
/* Payload bytes one queue reserves. */
uint64_t design_reserved(const struct design *d);

/* ---- the simulation ---------------------------------------------------- */

/*
 * The server's threads, one per ring:
 *   SERVER_BATCH   the reference server's loop (and libfuse's): take every
 *                  request that is there, work on them one after the other,
 *                  then commit them all (one io_uring_enter(2))
 *   SERVER_SERIAL  one after the other, each committed when done
 *   SERVER_ASYNC   every request worked on at once, from its dispatch
 */
enum server_model { SERVER_BATCH, SERVER_SERIAL, SERVER_ASYNC };
/* Who takes a freed entry: see debate/sim.c's top comment. */
enum dispatch_policy { POLICY_PASS, POLICY_HEAD, POLICY_SCAN };

struct sim_opts {
	enum replay replay;
	enum server_model server;
	enum dispatch_policy policy;
	uint32_t small;		/* HOL: a request needing <= small is small */
	uint32_t large;		/* HOL: a request needing > large is large */
};

struct sim_result {
	size_t requests, with_payload;
	uint64_t reserved;	/* payload bytes all queues reserve */
	uint64_t peak_held;	/* most buffer bytes lent at once */
	uint64_t peak_need;	/* most bytes the lent buffers' requests needed */
	int peak_inflight;	/* most requests in the server at once */
	size_t buf_waits;	/* requests that found no buffer for them */
	int64_t buf_wait_ticks;	/* their time from the first refusal to dispatch */
	int64_t buf_wait_max;
	size_t frag_waits;	/* pool: waits with enough free bytes, no piece */
	size_t upgrades;	/* c+: requests that took a bigger class */
	size_t entry_waits;	/* requests that found no free entry */
	int64_t queue_ticks;	/* sum of dispatch - arrival */
	size_t hol_small;	/* small requests that sat behind a large one */
	int64_t hol_ticks;	/* their time behind large ones */
	size_t small;		/* small requests */
	int64_t small_lat_mean, small_lat_p99;
	int64_t lat_mean, lat_p99;	/* arrival to end, all requests */
	int64_t makespan;	/* first arrival to last end */
	size_t kicks;		/* heads retried with no commit left (should be 0) */
};

int simulate(const struct trace *t, const struct design *d,
	     const struct sim_opts *o, struct sim_result *res);

/* Per-request results of the last simulate() call, for tests: arrival,
 * dispatch and end ticks, whether it waited for a buffer, its HOL time. */
struct req_result {
	int64_t arrive, disp, end, first_refusal, hol;
	bool buf_waited, entry_waited;
	int ring;
};
const struct req_result *sim_last_requests(void);

/* "4K" -> 4096, "1M" -> 1048576, "2.5M" refused; 0 on error. */
uint64_t parse_size(const char *s);
/* 1048576 -> "1M", 4096 -> "4K", 1000 -> "1000" */
void format_size(uint64_t v, char *buf, size_t len);

#endif
