#!/bin/sh
# Description: the uapi fuzzer (tests/uapi-fuzz.c) in all five modes: a
# hostile FUSE server that registers, commits and replies with fields set to
# boundary and random values, takes regions away with mprotect(), empties the
# fixed-buffer table under zero-copy, leaves READ_FIXEDs blocking on a pipe
# while their requests are committed, sends commands from a forked process
# that holds the fd, answers FUSE_INIT with and without the retry flag
# (FUSE_HAS_URING_BUFRING), issues commands from io-wq, and ends
# each episode with umount, umount -f, a fusectl abort or kill -9, while a
# workload uses the mount. One check per mode: every episode ended with all
# its processes gone and no kernel report (KASAN, lockdep, WARNING, hung
# task, ...) in the log. A smoke run of 60 s here; 600 s on the debug kernel
# (make check-debug); FUZZ_SECONDS sets another budget, FUZZ_SEED a seed.
# A failure names the episode's seed and the command that replays it.
. "$LAB_TOP/tests/lib.sh"
cd "$LAB_TOP" || exit 1

PROG=$LAB_TOP/build/tests/uapi-fuzz
W=/tmp/uapi-fuzz		# tmpfs in the guest
OUT=$W/output.txt
MODES="iovec bufring pinned-headers pinned-buffers zero-copy"

if [ "${LAB_FLAVOR:-}" = debug ]; then
	SECONDS_DEFAULT=600
else
	SECONDS_DEFAULT=60
fi
FUZZ_SECONDS=${FUZZ_SECONDS:-$SECONDS_DEFAULT}

program_setup "uapi fuzzer" "$PROG" "$W"
marker=$(log_marker uapi-fuzz-start)
# Each episode bounds its own end (30 s for its processes to go); timeout
# is the last resort should the program itself never return.
timeout $((FUZZ_SECONDS + 300)) "$PROG" --seconds "$FUZZ_SECONDS" \
	${FUZZ_SEED:+--seed "$FUZZ_SEED"} --mnt "$W/mnt" >"$OUT" 2>&1
status=$?
grep -v ' episode [0-9]* seed ' "$OUT" | sed 's/^\(ok\|not ok\) /# /'
echo "# $(grep -c ' episode [0-9]* seed ' "$OUT") episodes in $FUZZ_SECONDS s (exit status $status)"
[ -n "${LAB_RUN:-}" ] && cp "$OUT" "$LAB_RUN/uapi-fuzz.txt"

for mode in $MODES; do
	line=$(grep -E "^(ok|not ok) uapi-fuzz $mode: " "$OUT" | head -n 1)
	case "$line" in
	"ok uapi-fuzz $mode: "*) pass "uapi fuzzer: $mode" ;;
	"not ok uapi-fuzz $mode: "*) fail "uapi fuzzer: $mode" "${line#"not ok uapi-fuzz $mode: "}" ;;
	*) fail "uapi fuzzer: $mode" "no result line (exit status $status: $(tail -n 1 "$OUT"))" ;;
	esac
done
check_eq "uapi fuzzer: no mount left behind" "" \
	"$(awk -v m="$W/mnt" '$2 == m' /proc/mounts)"
kernel_log_clean "uapi fuzzer: the kernel logged no warning" "$marker"
exit 0
