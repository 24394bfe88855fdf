#!/bin/sh
# Description: the benchmark still works (a smoke run, not a measurement):
# bench/run with tiny files and one-second jobs moves data in every
# configuration of the main stage (no FUSE, the reference server in iovec
# mode, passthrough_hp) and at one point of two sweeps each (queue depth 2
# in iovec and pinned-buffers mode, 2 buffers per queue in bufring mode,
# one point each to stay short); bench/report turns the results into a summary with a median for
# each, the sweeps' tables, and each server's memory, which for the
# reference server is known to the byte. The real run is `make bench`.
. "$LAB_TOP/tests/lib.sh"
cd "$LAB_TOP" || exit 1

# BENCH_COSTS=0: the cost stage has its own test (41-costs.sh).
if ! BENCH_COSTS=0 BENCH_SIZE=8M BENCH_RUNTIME=1 BENCH_REPEATS=1 BENCH_MODES=iovec \
	BENCH_SWEEPS="depth nbufs" BENCH_DEPTHS=2 BENCH_NBUFS=2 \
	bench/run >"$LAB_RUN/bench-smoke.log" 2>&1; then
	fail "bench/run smoke run" "$(tail -n 2 "$LAB_RUN/bench-smoke.log" | tr '\n' ' ')"
	exit 1
fi
pass "bench/run smoke run"
check "bench/report summarizes the smoke run" python3 bench/report "$LAB_RUN"
SUMMARY=$LAB_RUN/bench/summary.json

# summary PYTHON-EXPRESSION: evaluate it on the summary, as s.
summary() {
	python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
		"$SUMMARY" "$1"
}

# Every configuration moved data in every job: a median above zero each.
for cfg in ceiling refsrv-iovec passthrough_hp; do
	check_eq "bench smoke: $cfg moved data in every job" "5 5" \
		"$(summary "sum(1 for j in s['jobs'].values() if j.get('$cfg', {}).get('median', 0) > 0), len(s['jobs'])" |
			tr -d '(),')"
done

# Every sweep point moved data, and has its table.
check_eq "bench smoke: every sweep point moved data" "depth 2 nbufs 1" \
	"$(summary "' '.join(f'{n} {sum(1 for c in w[\"jobs\"][\"randread-direct\"].values() for e in c.values() if e[\"median\"] > 0)}' for n, w in s['sweeps'].items())")"
for sweep in depth nbufs; do
	check "bench smoke: sweep-$sweep.rst has a row per point" \
		grep -q "^2 *refsrv-" "$LAB_RUN/bench/sweep-$sweep.rst"
done

# The reference server reports the payload memory it gave each queue:
# --queue-depth entries (iovec, and the buffer-ring modes' default) or
# --nbufs buffers of 1 MiB, and 288 bytes of headers per entry.
check_eq "bench smoke: memory of refsrv-bufring-nbufs2 (2 buffers per queue)" \
	"memory per queue: payload 2097152 B (2 x 1048576 B), headers 2304 B, mode bufring" \
	"$(summary "s['sweeps']['nbufs']['memory']['refsrv-bufring']['2']['per_queue']")"
check_eq "bench smoke: memory of refsrv-iovec at depth 2" \
	"memory per queue: payload 2097152 B (2 x 1048576 B), headers 576 B, mode iovec" \
	"$(summary "s['sweeps']['depth']['memory']['refsrv-iovec']['2']['per_queue']")"
check_eq "bench smoke: memory of refsrv-pinned-buffers at depth 2" \
	"memory per queue: payload 2097152 B (2 x 1048576 B), headers 576 B, mode pinned-buffers" \
	"$(summary "s['sweeps']['depth']['memory']['refsrv-pinned-buffers']['2']['per_queue']")"
# ... and pinned-buffers pins exactly that, page-rounded, on every queue:
# 2 MiB of payload and a page of headers each.
check_eq "bench smoke: VmPin of refsrv-pinned-buffers at depth 2" \
	"$(($(possible_cpu_count) * (4096 + 2097152) / 1024))" \
	"$(summary "s['sweeps']['depth']['memory']['refsrv-pinned-buffers']['2']['vmpin_kib']")"
check_eq "bench smoke: iovec pins nothing" "0" \
	"$(summary "s['sweeps']['depth']['memory']['refsrv-iovec']['2']['vmpin_kib']")"
