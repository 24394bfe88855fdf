// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * Description: host unit tests of the buffer-size simulator: sizes, trace
 * parsing, each request's buffer need, design parsing and the memory each
 * design reserves, and the replay rules one by one on small hand-made
 * traces: no wait with a buffer per entry, a wait for the one buffer and
 * its length, no wait without payload, v2's head-of-list rule against
 * scanning the list, the series' kernel letting requests without payload
 * pass one that waits for a buffer (and v2 not), a class that waits and one that upgrades, a
 * pool that refuses because of fragmentation, head-of-line blocking in one
 * server thread and none with two rings, closed-loop replay shifting a
 * task's next request, entry waits, the service-time fit and busy-period
 * shares, the reference server's batches (commit together, HOL inside a
 * batch), and a deterministic result.
 * Prints "ok NAME" or "not ok NAME: why" per case; exits 1 on any failure.
 * Build and run: make -C debate unit (ASan/UBSan).
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#define UNIT_PREFIX "debate: "
#include "unit.h"

#define HEADER "seq,pid,comm,qid,op,send,disp,done,end,in,out,err,buf,wait,nwait\n"

/* A trace from CSV rows (the header is added); exits on a parse error. */
static void mk(struct trace *t, const char *meta, const char *rows)
{
	char text[8192], err[256];
	FILE *f;

	snprintf(text, sizeof(text), "%s" HEADER "%s", meta, rows);
	f = fmemopen(text, strlen(text), "r");
	if (!f || trace_parse(t, f, err, sizeof(err))) {
		printf("not ok debate: test trace does not parse: %s\n", err);
		exit(1);
	}
	fclose(f);
}

static void prep(struct trace *t)
{
	struct prep_opts po = { SVC_TRACE, NEED_DECLARED, MIB };

	trace_prepare(t, &po);
}

static struct design des(const char *spec, int depth)
{
	struct design d;
	char err[256];

	if (design_parse(&d, spec, depth, MIB, err, sizeof(err))) {
		printf("not ok debate: design %s: %s\n", spec, err);
		exit(1);
	}
	return d;
}

static const struct sim_opts OPEN_ASYNC = { REPLAY_OPEN, SERVER_ASYNC, POLICY_HEAD, 4 * KIB, 64 * KIB };
static const struct sim_opts OPEN_SERIAL = { REPLAY_OPEN, SERVER_SERIAL, POLICY_HEAD, 4 * KIB, 64 * KIB };
static const struct sim_opts OPEN_BATCH = { REPLAY_OPEN, SERVER_BATCH, POLICY_HEAD, 4 * KIB, 64 * KIB };

static struct sim_result run(struct trace *t, const char *spec, int depth,
			     const struct sim_opts *o)
{
	struct design d = des(spec, depth);
	struct sim_result r;

	if (simulate(t, &d, o, &r)) {
		printf("not ok debate: simulate %s failed\n", spec);
		exit(1);
	}
	return r;
}

static void set_svc(struct trace *t, const int64_t *svc)
{
	for (size_t i = 0; i < t->n; i++)
		t->r[i].svc = svc[i];
}

/* ---- sizes, parsing, needs, designs ---------------------------------------- */

static void test_sizes(void)
{
	char b[32];

	EXPECT_INT("parse_size 4K", 4096, parse_size("4K"));
	EXPECT_INT("parse_size 1M", MIB, parse_size("1M"));
	EXPECT_INT("parse_size 123", 123, parse_size("123"));
	EXPECT_INT("parse_size refuses 2.5M", 0, parse_size("2.5M"));
	EXPECT_INT("parse_size refuses empty", 0, parse_size(""));
	format_size(MIB, b, sizeof(b));
	result("format_size 1M", !strcmp(b, "1M"), "got %s", b);
	format_size(65536, b, sizeof(b));
	result("format_size 64K", !strcmp(b, "64K"), "got %s", b);
}

static void test_parse(void)
{
	struct trace t;
	char text[512], err[256];
	FILE *f;

	mk(&t, "# workload: unit\n# queues: 4\n# depth: 16\n",
	   "0,1,ls,1,LOOKUP,0,100,300,310,5,128,0,1,-,0\n"
	   "1,2,fio,0,READ,50,60,500,505,0,65536,0,1,55,2\n");
	EXPECT_INT("parse: two requests", 2, t.n);
	result("parse: workload meta", trace_meta(&t, "workload") &&
	       !strcmp(trace_meta(&t, "workload"), "unit"), "missing");
	EXPECT_INT("parse: queues from the header", 4, t.nqueues);
	EXPECT_INT("parse: depth from the header", 16, t.depth);
	EXPECT_INT("parse: disp is absolute", 110, t.r[1].disp);
	EXPECT_INT("parse: done is absolute", 550, t.r[1].done);
	EXPECT_INT("parse: end is absolute", 555, t.r[1].end);
	EXPECT_INT("parse: wait is absolute", 105, t.r[1].wait);
	EXPECT_INT("parse: no wait is -1", -1, t.r[0].wait);
	result("parse: op", !strcmp(t.r[1].op, "READ"), "got %s", t.r[1].op);
	trace_free(&t);

	snprintf(text, sizeof(text), "seq,pid\n0,1\n");
	f = fmemopen(text, strlen(text), "r");
	result("parse: a missing column is an error", trace_parse(&t, f, err, sizeof(err)) == -1 &&
	       strstr(err, "qid"), "err '%s'", err);
	fclose(f);
	trace_free(&t);
	snprintf(text, sizeof(text), HEADER "0,1,a,0,READ,50,1,2,3,0,0,0,1,-,0\n"
		 "1,1,a,0,READ,10,1,2,3,0,0,0,1,-,0\n");
	f = fmemopen(text, strlen(text), "r");
	result("parse: rows out of send order are an error",
	       trace_parse(&t, f, err, sizeof(err)) == -1 && strstr(err, "sorted"), "err '%s'", err);
	fclose(f);
	trace_free(&t);
}

static uint32_t need_of(const char *op, uint32_t in, uint32_t out, int buf, enum need_rule rule)
{
	struct req r = { 0 };

	snprintf(r.op, sizeof(r.op), "%s", op);
	r.in = in;
	r.out = out;
	r.buf = buf;
	return req_need(&r, rule, MIB);
}

static void test_need(void)
{
	EXPECT_INT("need: READ of 3000 bytes asked a page", 4096, need_of("READ", 0, 3000, 1, NEED_DECLARED));
	EXPECT_INT("need: READ of 128 KiB", 131072, need_of("READ", 0, 131072, 1, NEED_DECLARED));
	EXPECT_INT("need: READ at EOF (0 bytes) still a page", 4096, need_of("READ", 0, 0, 1, NEED_DECLARED));
	EXPECT_INT("need: READDIR declared 32 KiB", 32768, need_of("READDIR", 0, 168, 1, NEED_DECLARED));
	EXPECT_INT("need: READDIR by its reply", 4096, need_of("READDIR", 0, 168, 1, NEED_REPLY));
	EXPECT_INT("need: READDIRPLUS reply above 32 KiB", 40960, need_of("READDIRPLUS", 0, 40000, 1, NEED_DECLARED));
	EXPECT_INT("need: WRITE of 4 KiB", 4096, need_of("WRITE", 4096, 8, 1, NEED_DECLARED));
	EXPECT_INT("need: GETATTR is its reply", 104, need_of("GETATTR", 0, 104, 1, NEED_DECLARED));
	EXPECT_INT("need: FLUSH without buffer", 0, need_of("FLUSH", 0, 0, 0, NEED_DECLARED));
	EXPECT_INT("need: failed LOOKUP needs its name", 5, need_of("LOOKUP", 5, 0, 1, NEED_DECLARED));
	EXPECT_INT("need: payload of 0 bytes needs 1", 1, need_of("OPEN", 0, 0, 1, NEED_DECLARED));
	EXPECT_INT("need: READLINK a page", 4096, need_of("READLINK", 0, 10, 1, NEED_DECLARED));
	EXPECT_INT("need: capped at the max payload", MIB, need_of("WRITE", 2 * MIB, 8, 1, NEED_DECLARED));
	EXPECT_INT("need: iovec trace, FLUSH has none", 0, need_of("FLUSH", 0, 0, -1, NEED_DECLARED));
	EXPECT_INT("need: iovec trace, GETATTR has one", 104, need_of("GETATTR", 0, 104, -1, NEED_DECLARED));
}

static void test_designs(void)
{
	struct design d;
	char err[256];

	d = des("a", 8);
	EXPECT_INT("design a: depth x 1 MiB", 8 * MIB, design_reserved(&d));
	d = des("b:2", 8);
	EXPECT_INT("design b:2: 2 x 1 MiB", 2 * MIB, design_reserved(&d));
	d = des("c:1M*2,4K*8,128K*2,64K*2", 8);
	EXPECT_INT("design c: 8x4K + 2x64K + 2x128K + 2x1M", 8 * 4096 + 2 * 65536 + 2 * 131072 + 2 * MIB,
		   design_reserved(&d));
	EXPECT_INT("design c: classes sorted smallest first", 4096, d.ring[0].class_size[0]);
	result("design c: waits for its own class", !d.ring[0].upgrade, "upgrade set");
	d = des("c+:4K*8,1M*2", 8);
	result("design c+: may upgrade", d.ring[0].upgrade, "upgrade not set");
	d = des("d:4K*8/1M*2", 8);
	EXPECT_INT("design d: two rings", 2, d.nrings);
	EXPECT_INT("design d: 8 x 4K + 2 x 1M", 8 * 4096 + 2 * MIB, design_reserved(&d));
	EXPECT_INT("design d: routes by the first ring's size", 4096, d.route);
	EXPECT_INT("design d: each ring has the depth's entries", 8, d.ring[1].entries);
	d = des("e:2M", 8);
	EXPECT_INT("design e: the pool", 2 * MIB, design_reserved(&d));
	result("design: c without a class for the max payload is refused",
	       design_parse(&d, "c:4K*8,64K*2", 8, MIB, err, sizeof(err)) == -1, "accepted");
	result("design: a pool smaller than the max payload is refused",
	       design_parse(&d, "e:512K", 8, MIB, err, sizeof(err)) == -1, "accepted");
	result("design: b:0 is refused", design_parse(&d, "b:0", 8, MIB, err, sizeof(err)) == -1,
	       "accepted");
	result("design: d with a small data ring is refused",
	       design_parse(&d, "d:4K*8/64K*2", 8, MIB, err, sizeof(err)) == -1, "accepted");
	d = des("e:2M/split", 8);
	EXPECT_INT("design e/split: small pieces from the top", 64 * KIB, d.ring[0].split);
	result("design: e:2M/x is refused", design_parse(&d, "e:2M/x", 8, MIB, err, sizeof(err)) == -1,
	       "accepted");
	result("design: an unknown one is refused",
	       design_parse(&d, "z", 8, MIB, err, sizeof(err)) == -1, "accepted");
}

/* ---- the replay --------------------------------------------------------------- */

/* Requests' own times (disp, done, end) only matter for the service time
 * estimate, which these tests override; they are kept plausible. */

static void test_iovec_no_wait(void)
{
	struct trace t;
	struct sim_result r;
	const int64_t svc[] = { 100, 100, 100, 100 };

	mk(&t, "",
	   "0,1,fio,0,READ,0,1,100,100,0,1048576,0,1,-,0\n"
	   "1,2,fio,0,READ,0,1,100,100,0,1048576,0,1,-,0\n"
	   "2,3,fio,0,READ,0,1,100,100,0,1048576,0,1,-,0\n"
	   "3,4,fio,0,READ,0,1,100,100,0,1048576,0,1,-,0\n");
	prep(&t);
	set_svc(&t, svc);
	r = run(&t, "a", 8, &OPEN_ASYNC);
	EXPECT_INT("a: four 1 MiB READs at once: no wait", 0, r.buf_waits);
	EXPECT_INT("a: reserved, one queue", 8 * MIB, r.reserved);
	EXPECT_INT("a: peak held, four buffers", 4 * MIB, r.peak_held);
	EXPECT_INT("a: peak in flight", 4, r.peak_inflight);
	r = run(&t, "b:2", 8, &OPEN_ASYNC);
	EXPECT_INT("b:2: two of the four wait", 2, r.buf_waits);
	EXPECT_INT("b:2: each waits 100 ticks", 200, r.buf_wait_ticks);
	EXPECT_INT("b:2: peak held, two buffers", 2 * MIB, r.peak_held);
	EXPECT_INT("b:2: makespan 200", 200, r.makespan);
	t.nqueues = 2;
	r = run(&t, "a", 8, &OPEN_ASYNC);
	EXPECT_INT("a: reserved counts every queue", 16 * MIB, r.reserved);
	trace_free(&t);
}

static void test_one_buffer(void)
{
	struct trace t;
	struct sim_result r;
	const struct req_result *q;
	const int64_t svc[] = { 100, 100, 5 };

	mk(&t, "",
	   "0,1,fio,0,READ,0,1,100,100,0,4096,0,1,-,0\n"
	   "1,2,fio,0,READ,10,1,100,100,0,4096,0,1,-,0\n"
	   "2,3,cat,0,FLUSH,20,1,5,5,0,0,0,0,-,0\n");
	prep(&t);
	set_svc(&t, svc);
	r = run(&t, "b:1", 8, &OPEN_ASYNC);
	q = sim_last_requests();
	EXPECT_INT("b:1: the second READ waits", 1, r.buf_waits);
	EXPECT_INT("b:1: from its arrival to the first commit", 90, r.buf_wait_ticks);
	EXPECT_INT("b:1: it is dispatched at the commit", 100, q[1].disp);
	result("b:1: FLUSH (no payload) does not wait", !q[2].buf_waited && q[2].disp == 20,
	       "waited %d, disp %lld", q[2].buf_waited, (long long)q[2].disp);
	EXPECT_INT("b:1: payload requests counted", 2, r.with_payload);
	trace_free(&t);
}

/*
 * Classes 4K*1 and 1M*1, async server. r0 1M and r1 4K take both buffers;
 * r2 (1M) and r3 (4K) wait. r1's commit at 10 frees the 4K buffer: the
 * kernel's rule tries only the head, r2, which cannot go, so r3 waits
 * behind it until r2 has gone (100) and committed (200). Scanning the list
 * lets r3 go at 10.
 */
static void test_head_rule(void)
{
	struct trace t;
	struct sim_result r;
	const struct req_result *q;
	const int64_t svc[] = { 100, 10, 100, 10 };
	struct sim_opts scan = OPEN_ASYNC;

	mk(&t, "",
	   "0,1,fio,0,READ,0,1,100,100,0,1048576,0,1,-,0\n"
	   "1,2,ls,0,GETATTR,0,1,10,10,0,104,0,1,-,0\n"
	   "2,3,fio,0,READ,1,1,100,100,0,1048576,0,1,-,0\n"
	   "3,4,ls,0,GETATTR,2,1,10,10,0,104,0,1,-,0\n");
	prep(&t);
	set_svc(&t, svc);
	r = run(&t, "c:4K*1,1M*1", 8, &OPEN_ASYNC);
	q = sim_last_requests();
	EXPECT_INT("head rule: the large READ goes at the first 1M commit", 100, q[2].disp);
	EXPECT_INT("head rule: the small one waits behind it until its commit", 200, q[3].disp);
	EXPECT_INT("head rule: HOL time of the small one behind the large", 98, q[3].hol);
	EXPECT_INT("head rule: one small request had HOL", 1, r.hol_small);
	scan.policy = POLICY_SCAN;
	r = run(&t, "c:4K*1,1M*1", 8, &scan);
	q = sim_last_requests();
	EXPECT_INT("scan: the small one goes when the 4K buffer is back", 10, q[3].disp);
	EXPECT_INT("scan: the large one still at 100", 100, q[2].disp);
	(void)r;
	trace_free(&t);
}

/*
 * b:1, two entries. R0 (1M READ) holds the buffer until 100; R1 (FLUSH,
 * no payload) holds the other entry until 11; R2 (1M READ) and R3 (FLUSH)
 * find no entry and wait. At 11 R1's entry is free: R2 needs the buffer,
 * R3 does not. The series' kernel (pass) sends R3 then; v2 (head) tries R2
 * only, parks, and R3 waits until an entry commits after R2 has gone: 200.
 */
static void test_pass_rule(void)
{
	struct trace t;
	const struct req_result *q;
	const int64_t svc[] = { 100, 10, 100, 10 };
	struct sim_opts pass = OPEN_ASYNC;

	mk(&t, "",
	   "0,1,fio,0,READ,0,1,100,100,0,1048576,0,1,-,0\n"
	   "1,2,ls,0,FLUSH,1,1,10,10,0,0,0,0,-,0\n"
	   "2,3,fio,0,READ,2,1,100,100,0,1048576,0,1,-,0\n"
	   "3,4,ls,0,FLUSH,3,1,10,10,0,0,0,0,-,0\n");
	prep(&t);
	set_svc(&t, svc);
	pass.policy = POLICY_PASS;
	run(&t, "b:1", 2, &pass);
	q = sim_last_requests();
	EXPECT_INT("pass: the FLUSH goes past the READ that waits for the buffer", 11, q[3].disp);
	EXPECT_INT("pass: the READ gets the buffer at its commit", 100, q[2].disp);
	run(&t, "b:1", 2, &OPEN_ASYNC);
	q = sim_last_requests();
	EXPECT_INT("head: the FLUSH waits behind the READ until an entry commits", 200, q[3].disp);
	EXPECT_INT("head: the READ gets the buffer at its commit", 100, q[2].disp);
	trace_free(&t);
}

static void test_upgrade(void)
{
	struct trace t;
	struct sim_result r;
	const struct req_result *q;
	const int64_t svc[] = { 100, 100 };

	mk(&t, "",
	   "0,1,ls,0,GETATTR,0,1,100,100,0,104,0,1,-,0\n"
	   "1,2,ls,0,GETATTR,1,1,100,100,0,104,0,1,-,0\n");
	prep(&t);
	set_svc(&t, svc);
	r = run(&t, "c:4K*1,64K*1,1M*1", 8, &OPEN_ASYNC);
	q = sim_last_requests();
	EXPECT_INT("c: the second small request waits for the 4K buffer", 1, r.buf_waits);
	EXPECT_INT("c: until it is back", 100, q[1].disp);
	r = run(&t, "c+:4K*1,64K*1,1M*1", 8, &OPEN_ASYNC);
	q = sim_last_requests();
	EXPECT_INT("c+: it takes the 64K buffer instead", 0, r.buf_waits);
	EXPECT_INT("c+: one upgrade", 1, r.upgrades);
	EXPECT_INT("c+: at once", 1, q[1].disp);
	EXPECT_INT("c+: peak held 4K + 64K", 4096 + 65536, r.peak_held);
	trace_free(&t);
}

/*
 * Pool of 2M: A 1M [0,1M), B 512K [1M,1.5M), C 512K [1.5M,2M). A ends at
 * 100; D 768K takes [0,768K). C ends at 200: free 256K + 512K = 768K, but
 * no piece of 640K, so E (640K) waits although enough bytes are free, until
 * B ends at 1000 and [768K,2M) is one piece.
 */
static void test_pool_fragmentation(void)
{
	struct trace t;
	struct sim_result r;
	const struct req_result *q;
	const int64_t svc[] = { 100, 1000, 200, 10000, 10 };

	mk(&t, "",
	   "0,1,a,0,WRITE,0,1,2,2,1048576,8,0,1,-,0\n"
	   "1,2,b,0,WRITE,0,1,2,2,524288,8,0,1,-,0\n"
	   "2,3,c,0,WRITE,0,1,2,2,524288,8,0,1,-,0\n"
	   "3,4,d,0,WRITE,150,1,2,2,786432,8,0,1,-,0\n"
	   "4,5,e,0,WRITE,250,1,2,2,655360,8,0,1,-,0\n");
	prep(&t);
	set_svc(&t, svc);
	r = run(&t, "e:2M", 8, &OPEN_ASYNC);
	q = sim_last_requests();
	EXPECT_INT("e: E waits for a piece", 1, r.buf_waits);
	EXPECT_INT("e: with enough free bytes: fragmentation", 1, r.frag_waits);
	EXPECT_INT("e: E goes when B's piece joins the free space", 1000, q[4].disp);
	EXPECT_INT("e: peak held is what was asked, 2 MiB", 2 * MIB, r.peak_held);
	trace_free(&t);
}

/*
 * Pool of 1088K. First fit: S1 64K [0,64K), M 512K [64K,576K), S2 64K
 * [576K,640K); when M ends the free space is 512K + 448K, and L (900K)
 * waits for fragmentation. /split takes S1 and S2 from the top: when M
 * ends, [0,960K) is one piece and L fits at once.
 */
static void test_pool_split(void)
{
	struct trace t;
	struct sim_result r;
	const struct req_result *q;
	const int64_t svc[] = { 1000, 100, 1000, 10 };

	mk(&t, "",
	   "0,1,a,0,WRITE,0,1,2,2,65536,8,0,1,-,0\n"
	   "1,2,b,0,WRITE,1,1,2,2,524288,8,0,1,-,0\n"
	   "2,3,c,0,WRITE,2,1,2,2,65536,8,0,1,-,0\n"
	   "3,4,d,0,WRITE,150,1,2,2,921600,8,0,1,-,0\n");
	prep(&t);
	set_svc(&t, svc);
	r = run(&t, "e:1088K", 8, &OPEN_ASYNC);
	q = sim_last_requests();
	EXPECT_INT("e first fit: L waits", 1, r.buf_waits);
	EXPECT_INT("e first fit: for fragmentation", 1, r.frag_waits);
	EXPECT_INT("e first fit: until S1 and S2 are back", 1002, q[3].disp);
	r = run(&t, "e:1088K/split", 8, &OPEN_ASYNC);
	q = sim_last_requests();
	EXPECT_INT("e split: L does not wait", 0, r.buf_waits);
	EXPECT_INT("e split: it goes at its arrival", 150, q[3].disp);
	trace_free(&t);
}

/*
 * A 1 MiB READ (1000 ticks) and then a GETATTR (10) on one queue with a
 * serial server: on one ring the GETATTR waits for the thread behind the
 * READ; with two rings it has a thread of its own.
 */
static void test_hol_threads(void)
{
	struct trace t;
	struct sim_result r;
	const struct req_result *q;
	const int64_t svc[] = { 1000, 10 };

	mk(&t, "",
	   "0,1,fio,0,READ,0,1,1000,1000,0,1048576,0,1,-,0\n"
	   "1,2,ls,0,GETATTR,1,1,10,10,0,104,0,1,-,0\n");
	prep(&t);
	set_svc(&t, svc);
	r = run(&t, "b:2", 8, &OPEN_SERIAL);
	q = sim_last_requests();
	EXPECT_INT("serial, one ring: GETATTR ends after the READ", 1010, q[1].end);
	EXPECT_INT("serial, one ring: its HOL time", 999, q[1].hol);
	EXPECT_INT("serial, one ring: no buffer wait", 0, r.buf_waits);
	r = run(&t, "d:4K*8/1M*2", 8, &OPEN_SERIAL);
	q = sim_last_requests();
	EXPECT_INT("serial, two rings: GETATTR on its own thread", 11, q[1].end);
	EXPECT_INT("serial, two rings: no HOL", 0, r.hol_small);
	EXPECT_INT("serial, two rings: GETATTR went to ring 0", 0, q[1].ring);
	EXPECT_INT("serial, two rings: READ went to ring 1", 1, q[0].ring);
	r = run(&t, "b:2", 8, &OPEN_ASYNC);
	q = sim_last_requests();
	EXPECT_INT("async, one ring: no HOL", 11, q[1].end);
	trace_free(&t);
}

/*
 * Task 1 sends s1 at 10 and, 50 after it ended (110), s2. With one buffer
 * s1 waits for s0 (until 100) and ends at 200: closed loop, s2 comes at
 * 250; open loop, at the trace's 160.
 */
static void test_closed_loop(void)
{
	struct trace t;
	const struct req_result *q;
	const int64_t svc[] = { 100, 100, 10 };
	struct sim_opts closed = OPEN_ASYNC;

	mk(&t, "",
	   "0,2,fio,0,READ,0,1,100,100,0,1048576,0,1,-,0\n"
	   "1,1,fio,0,READ,10,1,100,100,0,1048576,0,1,-,0\n"
	   "2,1,fio,0,GETATTR,160,1,10,10,0,104,0,1,-,0\n");
	prep(&t);
	set_svc(&t, svc);
	EXPECT_INT("closed loop: s2 follows s1", 1, t.r[2].dep);
	EXPECT_INT("closed loop: with the trace's gap", 50, t.r[2].gap);
	EXPECT_INT("closed loop: s1 follows nothing", -1, t.r[1].dep);
	closed.replay = REPLAY_CLOSED;
	run(&t, "b:1", 8, &closed);
	q = sim_last_requests();
	EXPECT_INT("closed loop: s2 arrives 50 after s1's simulated end", 250, q[2].arrive);
	run(&t, "b:1", 8, &OPEN_ASYNC);
	q = sim_last_requests();
	EXPECT_INT("open loop: s2 arrives at the trace's time", 160, q[2].arrive);
	trace_free(&t);
}

static void test_entry_waits(void)
{
	struct trace t;
	struct sim_result r;
	const struct req_result *q;
	const int64_t svc[] = { 100, 100 };

	mk(&t, "",
	   "0,1,a,0,FLUSH,0,1,100,100,0,0,0,0,-,0\n"
	   "1,2,b,0,FLUSH,0,1,100,100,0,0,0,0,-,0\n");
	prep(&t);
	set_svc(&t, svc);
	r = run(&t, "b:1", 1, &OPEN_ASYNC);
	q = sim_last_requests();
	EXPECT_INT("depth 1: the second request waits for the entry", 1, r.entry_waits);
	EXPECT_INT("depth 1: that is no buffer wait", 0, r.buf_waits);
	EXPECT_INT("depth 1: it goes at the commit", 100, q[1].disp);
	trace_free(&t);
}

/*
 * Service times. Queue 0: two requests alone (each reaches an idle thread):
 * a GETATTR in 100 ticks (c0), and 10000 bytes in 1100 (10 bytes a tick).
 * Queue 1: three requests dispatched together and committed together at
 * 3300 after a start at 0: one busy period of 3300, shared by the model's
 * weights 1100 : 2100 : 100.
 */
static void test_service(void)
{
	struct trace t;
	struct prep_opts fit = { SVC_FIT, NEED_DECLARED, MIB };
	int64_t sum;

	mk(&t, "",
	   "0,1,a,0,GETATTR,0,0,100,100,0,0,0,1,-,0\n"
	   "1,1,a,1,WRITE,0,0,3300,3300,10000,0,0,1,-,0\n"
	   "2,2,b,1,WRITE,0,0,3300,3300,20000,0,0,1,-,0\n"
	   "3,3,c,1,GETATTR,0,0,3300,3300,0,0,0,1,-,0\n"
	   "4,1,a,0,WRITE,1000,0,1100,1100,10000,0,0,1,-,0\n");
	prep(&t);
	result("fit: c0 is 100 ticks", t.c0 > 99.9 && t.c0 < 100.1, "c0 %.3f", t.c0);
	result("fit: 10 bytes a tick", t.per_byte > 0.0999 && t.per_byte < 0.1001,
	       "per_byte %.5f", t.per_byte);
	EXPECT_INT("fit: three busy periods", 3, t.groups);
	EXPECT_INT("svc: a request alone takes its period", 100, t.r[0].svc);
	sum = t.r[1].svc + t.r[2].svc + t.r[3].svc;
	EXPECT_INT("svc: a batch's shares add up to its period", 3300, sum);
	EXPECT_INT("svc: shared by weight (10000 bytes: 1100)", 1100, t.r[1].svc);
	EXPECT_INT("svc: shared by weight (20000 bytes: 2100)", 2100, t.r[2].svc);
	EXPECT_INT("svc: shared by weight (no bytes: 100)", 100, t.r[3].svc);
	trace_prepare(&t, &fit);
	EXPECT_INT("svc fit: 100 + 10000 / 10", 1100, t.r[4].svc);
	trace_free(&t);
}

/*
 * The reference server's loop: r0 alone is a batch (0-100); r1 and r2
 * arrive meanwhile and form the next batch, worked on 100-110 and 110-120
 * and committed together at 120. With one buffer, the commit of r0 lets
 * only r1 go (100), r2 goes at r1's commit (110).
 */
static void test_batch(void)
{
	struct trace t;
	const struct req_result *q;
	const int64_t svc[] = { 100, 10, 10 };

	mk(&t, "",
	   "0,1,a,0,GETATTR,0,1,100,100,0,104,0,1,-,0\n"
	   "1,2,b,0,GETATTR,1,1,100,100,0,104,0,1,-,0\n"
	   "2,3,c,0,GETATTR,2,1,100,100,0,104,0,1,-,0\n");
	prep(&t);
	set_svc(&t, svc);
	run(&t, "b:8", 8, &OPEN_BATCH);
	q = sim_last_requests();
	EXPECT_INT("batch: the first batch is r0 alone", 100, q[0].end);
	EXPECT_INT("batch: r1 is committed with its batch, not when done", 120, q[1].end);
	EXPECT_INT("batch: r2 with it", 120, q[2].end);
	run(&t, "b:8", 8, &OPEN_SERIAL);
	q = sim_last_requests();
	EXPECT_INT("serial: r1 is committed when done", 110, q[1].end);
	run(&t, "b:1", 8, &OPEN_BATCH);
	q = sim_last_requests();
	EXPECT_INT("batch, one buffer: r1 goes at r0's commit", 100, q[1].disp);
	EXPECT_INT("batch, one buffer: r2 at r1's", 110, q[2].disp);
	EXPECT_INT("batch, one buffer: r2 ends", 120, q[2].end);
	trace_free(&t);
}

/*
 * HOL in a batch: r1 (small) and r2 (large) form one batch after r0; r1 is
 * done at 20 but committed with r2 at 1020, and counts 1010 ticks behind it.
 */
static void test_batch_hol(void)
{
	struct trace t;
	struct sim_result r;
	const struct req_result *q;
	const int64_t svc[] = { 10, 10, 1000 };

	mk(&t, "",
	   "0,1,a,0,GETATTR,0,1,100,100,0,104,0,1,-,0\n"
	   "1,2,b,0,GETATTR,1,1,100,100,0,104,0,1,-,0\n"
	   "2,3,c,0,READ,2,1,100,100,0,1048576,0,1,-,0\n");
	prep(&t);
	set_svc(&t, svc);
	r = run(&t, "b:8", 8, &OPEN_BATCH);
	q = sim_last_requests();
	EXPECT_INT("batch HOL: the small one ends with the large one", 1020, q[1].end);
	EXPECT_INT("batch HOL: its time behind it", 1010, q[1].hol);
	EXPECT_INT("batch HOL: one small request", 1, r.hol_small);
	r = run(&t, "d:4K*8/1M*2", 8, &OPEN_BATCH);
	q = sim_last_requests();
	EXPECT_INT("batch, two rings: the small one has its own thread", 20, q[1].end);
	EXPECT_INT("batch, two rings: no HOL", 0, r.hol_small);
	trace_free(&t);
}

static void test_deterministic(void)
{
	struct trace t;
	struct sim_result a, b;
	struct sim_opts o = OPEN_SERIAL;

	mk(&t, "# queues: 2\n",
	   "0,1,fio,0,READ,0,5,300,310,0,1048576,0,1,-,0\n"
	   "1,2,ls,1,LOOKUP,3,4,50,52,7,128,0,1,-,0\n"
	   "2,2,ls,1,GETATTR,60,2,40,41,0,104,0,1,-,0\n"
	   "3,1,fio,0,READ,320,5,300,303,0,1048576,0,1,-,0\n"
	   "4,3,cat,0,FLUSH,330,1,20,21,0,0,0,0,-,0\n");
	prep(&t);
	o.replay = REPLAY_CLOSED;
	a = run(&t, "c:4K*8,64K*2,128K*2,1M*2", 8, &o);
	b = run(&t, "c:4K*8,64K*2,128K*2,1M*2", 8, &o);
	result("the same replay twice gives the same result", !memcmp(&a, &b, sizeof(a)),
	       "results differ");
	EXPECT_INT("two queues: reserved doubles", 2 * design_reserved(&(struct design){
		.nrings = 1, .ring = { { .kind = AL_CLASSES, .nclasses = 4,
		.class_size = { 4096, 65536, 131072, MIB }, .class_count = { 8, 2, 2, 2 } } } }),
		a.reserved);
	EXPECT_INT("no request was left for a kick", 0, a.kicks);
	trace_free(&t);
}

int main(void)
{
	test_sizes();
	test_parse();
	test_need();
	test_designs();
	test_iovec_no_wait();
	test_one_buffer();
	test_head_rule();
	test_pass_rule();
	test_upgrade();
	test_pool_fragmentation();
	test_pool_split();
	test_hol_threads();
	test_closed_loop();
	test_entry_waits();
	test_service();
	test_batch();
	test_batch_hol();
	test_deterministic();
	return unit_exit_status();
}
