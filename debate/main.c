// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * debate/main.c: debate-sim, the command line of the simulator.
 *
 *   debate-sim [OPTIONS] TRACE          (TRACE: CSV, *.csv.xz, or - for stdin)
 *
 * Replays TRACE through each --design and prints one line per design.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* The study's designs at queue depth 8 (docs/buffer-size-debate.rst). */
static const char *const default_designs[] = {
	"a",
	"b:2",
	"c:4K*8,64K*2,128K*2,1M*2",
	"c+:4K*8,64K*2,128K*2,1M*2",
	"d:4K*8/1M*2",
	"e:2464K/split",
	NULL,
};

static void usage(FILE *f)
{
	fputs("usage: debate-sim [OPTIONS] TRACE\n"
	      "\n"
	      "Replay a trace of FUSE ring requests (debate/trace2csv; *.xz is read\n"
	      "through xz -dc; - is stdin) through designs of payload buffers.\n"
	      "\n"
	      "  --design=SPEC     a design, repeatable (default: the study's six):\n"
	      "                      a                  iovec: every entry its own buffer\n"
	      "                      b:N                one ring of N max-size buffers\n"
	      "                      c:SIZE*N,...       size classes; wait for your own\n"
	      "                      c+:SIZE*N,...      size classes; may take a bigger one\n"
	      "                      d:SIZE*N/SIZE*N    two rings, metadata and data\n"
	      "                      e:SIZE             a pool, pieces at offsets (4K unit)\n"
	      "  --depth=N         entries per ring (default: the trace's depth)\n"
	      "  --payload=SIZE    largest payload, the size of a/b buffers (default 1M)\n"
	      "  --replay=closed|open  closed: a task's next request follows the\n"
	      "                    completion of its last one, with the trace's gap\n"
	      "                    (default); open: at the trace's send times\n"
	      "  --server=batch|serial|async  one thread per ring takes the requests\n"
	      "                    that are there, works on them in turn and commits\n"
	      "                    them together (batch, the reference server's loop,\n"
	      "                    default), or commits each when done (serial); or\n"
	      "                    every request is worked on at once (async)\n"
	      "  --policy=pass|head|scan  pass: the first waiting request goes if\n"
	      "                    it can, and past it those that need no buffer, as\n"
	      "                    the series' kernel (default); head: the first one\n"
	      "                    only, as v2 as posted; scan: every one that fits\n"
	      "  --svc=trace|fit   service times: shares of the trace's busy periods\n"
	      "                    (default), or the fitted c0 + bytes/bandwidth\n"
	      "  --need=declared|reply READDIR needs 32 KiB (default) or its reply\n"
	      "  --small=SIZE --large=SIZE  HOL: small <= 4K, large > 64K (defaults)\n"
	      "  --format=csv|table  (default csv)   --no-header\n"
	      "  --label=NAME      first column (default: the trace's workload)\n"
	      "  --fit             print the service time fit and exit\n"
	      "  --requests        one CSV line per request (the last --design): seq,op,\n"
	      "                    qid,ring,need,svc,arrive,disp,end,waited,refused,hol\n", f);
}

static const char *const columns =
	"workload,design,replay,server,policy,need,svc,c0,mb_s,depth,queues,requests,payload,reserved,"
	"peak_held,peak_need,peak_inflight,buf_waits,buf_wait_ticks,buf_wait_max,"
	"frag_waits,upgrades,entry_waits,queue_ticks,small,hol_small,hol_ticks,"
	"small_lat_mean,small_lat_p99,lat_mean,lat_p99,makespan,kicks";

static const char *name_of(const char *const *names, int v)
{
	return names[v];
}

static int pick(const char *arg, const char *const *names, const char *what)
{
	for (int i = 0; names[i]; i++)
		if (!strcmp(arg, names[i]))
			return i;
	fprintf(stderr, "debate-sim: --%s: '%s' is not one of", what, arg);
	for (int i = 0; names[i]; i++)
		fprintf(stderr, " %s", names[i]);
	fputc('\n', stderr);
	exit(2);
}

static double mib(uint64_t v)
{
	return (double)v / MIB;
}

int main(int argc, char **argv)
{
	static const char *const replays[] = { "closed", "open", NULL };
	static const char *const servers[] = { "batch", "serial", "async", NULL };
	static const char *const policies[] = { "pass", "head", "scan", NULL };
	static const char *const svcs[] = { "trace", "fit", NULL };
	static const char *const needs[] = { "declared", "reply", NULL };
	static const struct option longopts[] = {
		{ "design", required_argument, NULL, 'd' },
		{ "depth", required_argument, NULL, 'D' },
		{ "payload", required_argument, NULL, 'p' },
		{ "replay", required_argument, NULL, 'r' },
		{ "server", required_argument, NULL, 's' },
		{ "policy", required_argument, NULL, 'P' },
		{ "svc", required_argument, NULL, 'S' },
		{ "need", required_argument, NULL, 'n' },
		{ "small", required_argument, NULL, 'm' },
		{ "large", required_argument, NULL, 'l' },
		{ "format", required_argument, NULL, 'f' },
		{ "no-header", no_argument, NULL, 'H' },
		{ "label", required_argument, NULL, 'L' },
		{ "fit", no_argument, NULL, 'F' },
		{ "requests", no_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *designs[64];
	int ndesigns = 0, depth = 0, c;
	bool table = false, header = true, fit_only = false, per_req = false;
	const char *label = NULL;
	struct sim_opts so = { REPLAY_CLOSED, SERVER_BATCH, POLICY_PASS, 4 * KIB, 64 * KIB };
	struct prep_opts po = { SVC_TRACE, NEED_DECLARED, MIB };
	struct trace t;
	char err[256];
	uint64_t v;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			if (ndesigns == 64) {
				fprintf(stderr, "debate-sim: at most 64 designs\n");
				return 2;
			}
			designs[ndesigns++] = optarg;
			break;
		case 'D':
			depth = atoi(optarg);
			if (depth < 1 || depth > 65535) {
				fprintf(stderr, "debate-sim: --depth must be 1..65535\n");
				return 2;
			}
			break;
		case 'p':
			v = parse_size(optarg);
			if (v < 4 * KIB || v > 64 * MIB) {
				fprintf(stderr, "debate-sim: --payload must be 4K..64M\n");
				return 2;
			}
			po.max_payload = (uint32_t)v;
			break;
		case 'r': so.replay = (enum replay)pick(optarg, replays, "replay"); break;
		case 's': so.server = (enum server_model)pick(optarg, servers, "server"); break;
		case 'P': so.policy = (enum dispatch_policy)pick(optarg, policies, "policy"); break;
		case 'S': po.svc = (enum svc_src)pick(optarg, svcs, "svc"); break;
		case 'n': po.need = (enum need_rule)pick(optarg, needs, "need"); break;
		case 'm':
		case 'l':
			v = parse_size(optarg);
			if (!v || v > 64 * MIB) {
				fprintf(stderr, "debate-sim: --%s: bad size '%s'\n",
					c == 'm' ? "small" : "large", optarg);
				return 2;
			}
			if (c == 'm')
				so.small = (uint32_t)v;
			else
				so.large = (uint32_t)v;
			break;
		case 'f':
			if (!strcmp(optarg, "table"))
				table = true;
			else if (strcmp(optarg, "csv")) {
				fprintf(stderr, "debate-sim: --format is csv or table\n");
				return 2;
			}
			break;
		case 'H': header = false; break;
		case 'L': label = optarg; break;
		case 'F': fit_only = true; break;
		case 'R': per_req = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	if (trace_read(&t, argv[optind], err, sizeof(err))) {
		fprintf(stderr, "debate-sim: %s\n", err);
		return 1;
	}
	if (!t.n) {
		fprintf(stderr, "debate-sim: %s: no requests\n", argv[optind]);
		return 1;
	}
	trace_prepare(&t, &po);
	if (!depth)
		depth = t.depth;
	if (!label)
		label = trace_meta(&t, "workload") ? trace_meta(&t, "workload") : "trace";
	if (fit_only) {
		printf("%s: %zu requests, %d queues, %d busy periods: service = %.1f + "
		       "bytes / %.1f MB/s (us)\n", label, t.n, t.nqueues, t.groups, t.c0,
		       t.per_byte > 0 ? 1.0 / t.per_byte : 0.0);
		trace_free(&t);
		return 0;
	}
	if (!ndesigns)
		for (; default_designs[ndesigns]; ndesigns++)
			designs[ndesigns] = default_designs[ndesigns];

	if (per_req) {
		struct design d;
		struct sim_result r;
		const struct req_result *q;

		if (design_parse(&d, ndesigns ? designs[ndesigns - 1] : "a", depth, po.max_payload,
				 err, sizeof(err))) {
			fprintf(stderr, "debate-sim: %s\n", err);
			return 2;
		}
		if (simulate(&t, &d, &so, &r))
			return 1;
		q = sim_last_requests();
		if (header)
			printf("seq,op,qid,ring,need,svc,arrive,disp,end,waited,refused,hol\n");
		for (size_t i = 0; i < t.n; i++)
			printf("%d,%s,%d,%d,%u,%lld,%lld,%lld,%lld,%d,%lld,%lld\n", t.r[i].seq,
			       t.r[i].op, t.r[i].qid, q[i].ring, t.r[i].need, (long long)t.r[i].svc,
			       (long long)q[i].arrive, (long long)q[i].disp, (long long)q[i].end,
			       q[i].buf_waited, (long long)q[i].first_refusal, (long long)q[i].hol);
		trace_free(&t);
		return 0;
	}
	if (table && header)
		printf("%-28s %9s %9s %8s %9s %11s %8s %9s %9s\n", "design", "reserved",
		       "peak held", "waits", "wait avg", "HOL small", "HOL avg",
		       "small p99", "makespan");
	else if (header)
		printf("%s\n", columns);
	int status = 0;

	for (int k = 0; k < ndesigns; k++) {
		struct design d;
		struct sim_result r;

		if (design_parse(&d, designs[k], depth, po.max_payload, err, sizeof(err))) {
			fprintf(stderr, "debate-sim: %s\n", err);
			status = 2;
			continue;
		}
		if (simulate(&t, &d, &so, &r)) {
			fprintf(stderr, "debate-sim: %s: the simulation failed\n", d.name);
			status = 1;
			continue;
		}
		if (table) {
			char waits[32], hol[32];

			snprintf(waits, sizeof(waits), "%zu", r.buf_waits);
			snprintf(hol, sizeof(hol), "%zu", r.hol_small);
			printf("%-28s %5.2f MiB %5.2f MiB %8s %6lld us %11s %5lld us %6lld us %6.2f s\n",
			       d.name, mib(r.reserved), mib(r.peak_held), waits,
			       (long long)(r.buf_waits ? r.buf_wait_ticks / (int64_t)r.buf_waits : 0),
			       hol, (long long)(r.hol_small ? r.hol_ticks / (int64_t)r.hol_small : 0),
			       (long long)r.small_lat_p99, (double)r.makespan / 1e6);
			continue;
		}
		printf("%s,\"%s\",%s,%s,%s,%s,%s,%.1f,%.1f,%d,%d,%zu,%zu,%llu,%llu,%llu,%d,%zu,"
		       "%lld,%lld,%zu,%zu,%zu,%lld,%zu,%zu,%lld,%lld,%lld,%lld,%lld,%lld,%zu\n",
		       label, d.name, name_of(replays, so.replay), name_of(servers, so.server),
		       name_of(policies, so.policy), name_of(needs, po.need), name_of(svcs, po.svc),
		       t.c0, t.per_byte > 0 ? 1.0 / t.per_byte : 0.0, depth, t.nqueues, r.requests,
		       r.with_payload, (unsigned long long)r.reserved,
		       (unsigned long long)r.peak_held, (unsigned long long)r.peak_need,
		       r.peak_inflight, r.buf_waits, (long long)r.buf_wait_ticks,
		       (long long)r.buf_wait_max, r.frag_waits, r.upgrades, r.entry_waits,
		       (long long)r.queue_ticks, r.small, r.hol_small, (long long)r.hol_ticks,
		       (long long)r.small_lat_mean, (long long)r.small_lat_p99,
		       (long long)r.lat_mean, (long long)r.lat_p99, (long long)r.makespan,
		       r.kicks);
	}
	trace_free(&t);
	return status;
}
