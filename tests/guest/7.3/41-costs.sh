#!/bin/sh
# Description: the cost table counts the pool as it counts the v2 modes
# (bench/costs on 7.3, with kernel-patches-7.3/0001's fuse_uring_send and
# fuse_uring_commit; 16 MiB per job, two runs). A copying pool mode, plain
# or fixed, copies each byte of a direct READ twice (the kernel from its
# pool buffer into the caller's pages, the server's pread into the pool),
# like iovec mode on the same kernel; a direct WRITE the same the other
# way, with fuse_write_out's 8 bytes back. Zero-copy per file copies
# nothing in the kernel, lends every byte, and moves it once by its
# READ_FIXED or WRITE_FIXED, one SQE more per request than the plain pool.
# Registering the pool as a fixed buffer changes no count of bytes,
# requests or SQEs. The counts that do not depend on timing agree between
# the runs, no trace lost an event, and the kernel logged no warning.
. "$LAB_TOP/tests/lib.sh"
cd "$LAB_TOP" || exit 1

MIB=1048576
marker=$(log_marker 7.3-41-costs-start)
if ! COSTS_SIZE=16M COSTS_RUNS=2 COSTS_FILES=16 COSTS_SETUPS= \
	COSTS_CONFIGS="refsrv-iovec refsrv-pool refsrv-pool-fixed refsrv-pool-zero-copy passthrough_hp" \
	bench/costs >"$LAB_RUN/costs-7.3.log" 2>&1; then
	fail "bench/costs on 7.3" "$(tail -n 2 "$LAB_RUN/costs-7.3.log" | tr '\n' ' ')"
	exit 1
fi
pass "bench/costs on 7.3: 2 runs x 5 configurations x 4 jobs"
check "bench/costs-report reads every 7.3 trace (none lost an event)" \
	python3 bench/costs-report "$LAB_RUN"
COSTS=$LAB_RUN/bench/costs.json
COSTS_AT=@7.3
. "$LAB_TOP/tests/costs-lib.sh"

for mode in iovec pool pool-fixed; do
	check_eq "7.3 $mode randread-direct: the kernel copies every byte of a READ" \
		"$MIB" "$(cost 1 "refsrv-$mode" randread-direct kernel_copied)"
	check_eq "7.3 $mode randread-direct: the server's pread moves every byte" \
		"$MIB" "$(cost 1 "refsrv-$mode" randread-direct server_io)"
	check_eq "7.3 $mode randread-direct: it lends nothing" \
		"0" "$(cost 1 "refsrv-$mode" randread-direct kernel_lent)"
	check_eq "7.3 $mode randread-direct: 2 copies per byte" \
		"2" "$(cost 1 "refsrv-$mode" randread-direct copies_per_byte)"
	check_eq "7.3 $mode seqwrite-direct: a WRITE's data, and 8 bytes of fuse_write_out back" \
		"$((MIB + 8))" "$(cost 1 "refsrv-$mode" seqwrite-direct kernel_copied)"
done
check_eq "7.3 pool-zero-copy randread-direct: the kernel copies nothing of a READ" \
	"0" "$(cost 1 refsrv-pool-zero-copy randread-direct kernel_copied)"
check_eq "7.3 pool-zero-copy randread-direct: it lends every byte of a READ" \
	"$MIB" "$(cost 1 refsrv-pool-zero-copy randread-direct kernel_lent)"
check_eq "7.3 pool-zero-copy randread-direct: the server copies nothing into its own memory" \
	"0" "$(cost 1 refsrv-pool-zero-copy randread-direct server_io)"
check_eq "7.3 pool-zero-copy randread-direct: 1 copy per byte (READ_FIXED's)" \
	"1" "$(cost 1 refsrv-pool-zero-copy randread-direct copies_per_byte)"
check_eq "7.3 pool-zero-copy seqwrite-direct: only the 8 bytes of fuse_write_out" \
	"8" "$(cost 1 refsrv-pool-zero-copy seqwrite-direct kernel_copied)"
check_eq "7.3 pool-zero-copy seqwrite-direct: it lends every byte of a WRITE" \
	"$MIB" "$(cost 1 refsrv-pool-zero-copy seqwrite-direct kernel_lent)"
check_eq "7.3 pool-zero-copy seqwrite-direct: 1 copy per byte (WRITE_FIXED's)" \
	"1" "$(cost 1 refsrv-pool-zero-copy seqwrite-direct copies_per_byte)"

# 7.3 sends the buffered job in READs of 1 MiB (docs/pool.rst), 7.2 in
# READs of 256 KiB (tests/guest/41-costs.sh): 16 for 16 MiB.
check_eq "7.3 seqread-buffered: READs of 1 MiB (16 for 16 MiB)" \
	"16" "$(cost 1 refsrv-pool seqread-buffered data_requests)"

# As on 7.2: tmpfs has no FMODE_NOWAIT, so each fixed operation of
# zero-copy goes to an io-wq worker (tests/guest/41-costs.sh).
for job in randread-direct seqwrite-direct; do
	check_eq "7.3 pool $job: no request goes to io-wq" \
		"0" "$(cost 1 refsrv-pool "$job" io_wq_punts)"
	check_eq "7.3 pool-zero-copy $job: its fixed operation goes to io-wq, once per request" \
		"1" "$(cost 1 refsrv-pool-zero-copy "$job" io_wq_punts)"
done

for job in randread-direct seqwrite-direct; do
	check_eq "7.3 pool-zero-copy $job: one SQE more per data request than the pool (the fixed operation)" \
		"1" "$(minus refsrv-pool-zero-copy refsrv-pool "$job" sqes)"
	for key in requests sqes cqes kernel_copied server_io; do
		check_eq "7.3 pool-fixed $job: the same $key as the plain pool" \
			"0" "$(minus refsrv-pool-fixed refsrv-pool "$job" "$key")"
	done
done

# No more requests than passthrough_hp on any job (#36): the reference
# server negotiates FUSE_HANDLE_KILLPRIV_V2, so the kernel does not ask for
# security.capability before every WRITE, and both servers cache names and
# attributes alike (bench/servers.sh), negative entries too.
check_eq "7.3 costs: no reference-server job sends more requests than passthrough_hp's" \
	"none" "$(at_most_peer)"

metadata_checks "7.3 "
agreement_checks "7.3 "
check "7.3 costs.rst has a row per configuration and job" \
	test "$(grep -c -E '^(randread-direct|seqwrite-direct|seqread-buffered|metadata) +7\.3 +(refsrv|passthrough_hp)' \
		"$LAB_RUN/bench/costs.rst")" = 20
kernel_log_clean "7.3 costs: the kernel logged no warning" "$marker"
