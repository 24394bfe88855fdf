#!/bin/sh
# Description: the benchmark still works (a smoke run, not a measurement):
# bench/run with tiny files and one-second jobs moves data in every
# configuration (the reference server in iovec mode and in bufring mode
# with 2 buffers per queue among them), and bench/report turns the results
# into a summary with a median for each and each server's memory. The real
# run is `make bench`.
. "$LAB_TOP/tests/lib.sh"
cd "$LAB_TOP" || exit 1

if ! BENCH_SIZE=8M BENCH_RUNTIME=1 BENCH_REPEATS=1 BENCH_MODES="iovec bufring:2" bench/run >"$LAB_RUN/bench-smoke.log" 2>&1; then
	fail "bench/run smoke run" "$(tail -n 2 "$LAB_RUN/bench-smoke.log" | tr '\n' ' ')"
	exit 1
fi
pass "bench/run smoke run"
check "bench/report summarizes the smoke run" python3 bench/report "$LAB_RUN"

# Every configuration moved data in every job: a median above zero each.
for cfg in ceiling refsrv-iovec refsrv-bufring-nbufs2 passthrough_hp; do
	n=$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["jobs"]
print(sum(1 for job in s.values() if job.get(sys.argv[2], {}).get("median", 0) > 0), len(s))
' "$LAB_RUN/bench/summary.json" "$cfg")
	check_eq "bench smoke: $cfg moved data in every job" "5 5" "$n"
done

# The reference server reports the payload memory it gave each queue.
check_eq "bench smoke: memory of refsrv-bufring-nbufs2 (2 buffers per queue)" \
	"memory per queue: payload 2097152 B (2 x 1048576 B), headers 2304 B, mode bufring" \
	"$(python3 -c '
import json, sys, re
m = json.load(open(sys.argv[1]))["memory"].get("refsrv-bufring-nbufs2", "")
print(re.sub(r".*(memory per queue: )", r"\1", m))
' "$LAB_RUN/bench/summary.json")"
