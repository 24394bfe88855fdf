#!/bin/sh
# Description: the cost table counts what it says (bench/costs, then
# bench/costs-report, on 16 MiB per job, two runs): a direct READ costs
# iovec mode one kernel copy and one pread of each byte (2 copies per
# byte), zero-copy mode only its READ_FIXED (1 copy: the kernel copies
# nothing); a direct WRITE the same the other way, but for the 8-byte
# fuse_write_out every mode copies back. Linking each fixed operation to
# its commit saves exactly one CQE per READ and WRITE against --unlinked,
# and one io_uring_enter() per direct READ (one request in flight at a
# time; where several are, one call may reap several CQEs). The counts
# that do not depend on timing (requests, bytes, SQEs, CQEs, syscalls of
# the direct jobs) agree between the two runs within 1 %, and no trace
# lost an event.
. "$LAB_TOP/tests/lib.sh"
cd "$LAB_TOP" || exit 1

MIB=1048576
marker=$(log_marker 41-costs-start)
if ! COSTS_SIZE=16M COSTS_RUNS=2 COSTS_FILES=16 COSTS_SETUPS= \
	COSTS_CONFIGS="refsrv-iovec refsrv-zero-copy-unlinked refsrv-zero-copy passthrough_hp" \
	bench/costs >"$LAB_RUN/costs.log" 2>&1; then
	fail "bench/costs" "$(tail -n 2 "$LAB_RUN/costs.log" | tr '\n' ' ')"
	exit 1
fi
pass "bench/costs: 2 runs x 4 configurations x 4 jobs"
check "bench/costs-report reads every trace (none lost an event)" \
	python3 bench/costs-report "$LAB_RUN"
COSTS=$LAB_RUN/bench/costs.json
COSTS_AT=""
. "$LAB_TOP/tests/costs-lib.sh"

# What each byte of a direct READ and WRITE costs in copies, per mode.
check_eq "iovec randread-direct: the kernel copies every byte of a READ" \
	"$MIB" "$(cost 1 refsrv-iovec randread-direct kernel_copied)"
check_eq "iovec randread-direct: the server's pread moves every byte" \
	"$MIB" "$(cost 1 refsrv-iovec randread-direct server_io)"
check_eq "iovec randread-direct: 2 copies per byte" \
	"2" "$(cost 1 refsrv-iovec randread-direct copies_per_byte)"
check_eq "zero-copy randread-direct: the kernel copies nothing of a READ" \
	"0" "$(cost 1 refsrv-zero-copy randread-direct kernel_copied)"
check_eq "zero-copy randread-direct: it lends every byte of a READ" \
	"$MIB" "$(cost 1 refsrv-zero-copy randread-direct kernel_lent)"
check_eq "zero-copy randread-direct: the server copies nothing into its own memory" \
	"0" "$(cost 1 refsrv-zero-copy randread-direct server_io)"
check_eq "zero-copy randread-direct: 1 copy per byte (READ_FIXED's)" \
	"1" "$(cost 1 refsrv-zero-copy randread-direct copies_per_byte)"
check_eq "iovec randread-direct: it lends nothing" \
	"0" "$(cost 1 refsrv-iovec randread-direct kernel_lent)"
check_eq "iovec seqwrite-direct: a WRITE's data, and 8 bytes of fuse_write_out back" \
	"$((MIB + 8))" "$(cost 1 refsrv-iovec seqwrite-direct kernel_copied)"
check_eq "zero-copy seqwrite-direct: only the 8 bytes of fuse_write_out" \
	"8" "$(cost 1 refsrv-zero-copy seqwrite-direct kernel_copied)"
check_eq "zero-copy seqwrite-direct: it lends every byte of a WRITE" \
	"$MIB" "$(cost 1 refsrv-zero-copy seqwrite-direct kernel_lent)"
check_eq "zero-copy seqwrite-direct: 1 copy per byte (WRITE_FIXED's)" \
	"1" "$(cost 1 refsrv-zero-copy seqwrite-direct copies_per_byte)"

# The buffered job's READs are 256 KiB on 7.2 (1 MiB on 7.3: docs/pool.rst):
# 64 for 16 MiB.
check_eq "seqread-buffered: READs of 256 KiB (64 for 16 MiB)" \
	"64" "$(cost 1 refsrv-iovec seqread-buffered data_requests)"

# The second wake-up of zero-copy (#36): the backing directory is tmpfs,
# whose files lack FMODE_NOWAIT, so io_uring cannot try a READ_FIXED or
# WRITE_FIXED inline and hands each to an io-wq worker, whose completion
# wakes the server. The copying modes' pread/pwrite are plain syscalls.
for job in randread-direct seqwrite-direct; do
	check_eq "iovec $job: no request goes to io-wq" \
		"0" "$(cost 1 refsrv-iovec "$job" io_wq_punts)"
	check_eq "zero-copy $job: its fixed operation goes to io-wq, once per request (tmpfs: no FMODE_NOWAIT)" \
		"1" "$(cost 1 refsrv-zero-copy "$job" io_wq_punts)"
done

# The lending is the server's fixed operation: one SQE more per READ and
# WRITE than iovec mode submits (its READ_FIXED or WRITE_FIXED).
for job in randread-direct seqwrite-direct; do
	check_eq "zero-copy $job: one SQE more per data request than iovec (the fixed operation)" \
		"1" "$(minus refsrv-zero-copy refsrv-iovec "$job" sqes)"
done

# The link: one CQE less per READ and WRITE (the fixed operation's, which
# IOSQE_CQE_SKIP_SUCCESS drops), and, where one request is in flight at a
# time, one io_uring_enter() less per READ.
for job in randread-direct seqwrite-direct; do
	check_eq "zero-copy $job: linking saves one CQE per data request" "1" \
		"$(minus refsrv-zero-copy-unlinked refsrv-zero-copy "$job" cqes)"
done
check_eq "zero-copy randread-direct: linking saves one io_uring_enter per READ" "1" \
	"$(minus refsrv-zero-copy-unlinked refsrv-zero-copy randread-direct io_uring_enter)"

# No more requests than passthrough_hp on any job (#36): the reference
# server negotiates FUSE_HANDLE_KILLPRIV_V2, so the kernel does not ask for
# security.capability before every WRITE, and both servers cache names and
# attributes alike (bench/servers.sh), negative entries too.
check_eq "costs: no reference-server job sends more requests than passthrough_hp's" \
	"none" "$(at_most_peer)"

# A root caller's CREATE (fio's, here) is made as the server, who is root
# too: as_caller() (reference-server/ops.c) skips a switch that would
# change nothing. It used to cost 8 syscalls per new file, setfsuid and
# setfsgid (x86-64 numbers 122 and 123), which passthrough_hp, creating
# every file as itself, does not make (#36).
check_eq "costs: a root caller's CREATE costs the reference server no setfsuid or setfsgid" "0" \
	"$(grep -c -E 'sys_enter: NR (122|123) ' "$LAB_RUN/bench/costs/1/refsrv-iovec/seqwrite-direct/trace.txt")"

metadata_checks ""
# The counts that do not depend on timing repeat exactly. Of the direct
# read, where one request is in flight at a time, all but the context
# switches do.
agreement_checks ""
check_eq "costs: randread-direct io_uring_enter agrees between the runs within 1 %" "True" \
	"$(agrees randread-direct io_uring_enter)"
check "costs.rst has a row per configuration and job" \
	test "$(grep -c -E '^(randread-direct|seqwrite-direct|seqread-buffered|metadata) +7\.2 +(refsrv|passthrough_hp)' \
		"$LAB_RUN/bench/costs.rst")" = 16
kernel_log_clean "costs: the kernel logged no warning" "$marker"
