#!/bin/sh
# Description: the benchmark still works (a smoke run, not a measurement):
# bench/run with tiny files and one-second jobs moves data in every
# configuration, and bench/report turns the results into a summary with a
# median for each. The real run is `make bench`.
. "$LAB_TOP/tests/lib.sh"
cd "$LAB_TOP" || exit 1

if ! BENCH_SIZE=8M BENCH_RUNTIME=1 BENCH_REPEATS=1 bench/run >"$LAB_RUN/bench-smoke.log" 2>&1; then
	fail "bench/run smoke run" "$(tail -n 2 "$LAB_RUN/bench-smoke.log" | tr '\n' ' ')"
	exit 1
fi
pass "bench/run smoke run"
check "bench/report summarizes the smoke run" python3 bench/report "$LAB_RUN"

# Every configuration moved data in every job: a median above zero each.
for cfg in ceiling refsrv-iovec passthrough_hp; do
	n=$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["jobs"]
print(sum(1 for job in s.values() if job.get(sys.argv[2], {}).get("median", 0) > 0), len(s))
' "$LAB_RUN/bench/summary.json" "$cfg")
	check_eq "bench smoke: $cfg moved data in every job" "5 5" "$n"
done
