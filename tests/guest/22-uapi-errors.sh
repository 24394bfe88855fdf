#!/bin/sh
# Description: every mistake a server can make when it registers a buffer
# ring or commits a reply gets its exact errno from the kernel; positive
# controls show that the well-formed set-up the other cases break carries a
# request. The connection (FUSE_INIT offers FUSE_HAS_URING_BUFRING exactly when
# it offers FUSE_OVER_IO_URING; REGISTER before the FUSE_INIT reply: EAGAIN; without
# FUSE_OVER_IO_URING or after a failed REGISTER: EOPNOTSUPP; no SQE128, an
# unknown op, flag or qid, padding that is not 0: EINVAL; refused once the
# ring is ready: the ring goes on serving), the buffer ring's geometry, entry ids (out
# of range: EINVAL; twice, or more than queue_depth: EBUSY), COMMIT_AND_FETCH
# (unknown, double, on the other queue: ENOENT; no such queue: EINVAL or
# ENOTCONN), bad replies (payload_sz past the buffer, a positive error, a
# wrong unique, padding: the caller gets EINVAL or ENOENT, the next request is
# served). The same for pinned headers and buffers (pinned flags without a
# buffer ring, unaligned regions, RLIMIT_MEMLOCK without CAP_IPC_LOCK: exactly
# enough accepted, a page less ENOMEM and nothing pinned, regions larger than
# the queue uses charged only what it uses) and zero-copy (without the pinned flags,
# without CAP_SYS_ADMIN, a fixed-buffer table too small: the request fails
# with EINVAL; the direction rules of READ_FIXED and WRITE_FIXED on a
# request's folios; an ITER_KVEC read is copied; an abort revokes the
# folios; a zero-copied read returns only when io_uring lets go of its
# folios, across an abort and a commit, with a READ_FIXED waiting on a
# pipe or in io-wq, and none of its bytes change after; a REGISTER or
# COMMIT_AND_FETCH from another process (forked, own ring) is refused;
# eight REGISTERs racing for a new pinned queue pin it once; 15 s of commits from io-wq racing a thread that empties the
# fixed-buffer slot). build/tests/uapi-errors (tests/uapi-errors/) speaks the
# protocol itself (no server) and prints "ok name", "not ok name: why" or
# "skip name: why" per case (tests/lib.sh's words), after reading the kernel
# log the case produced: a case during which the kernel logged a splat
# (WARNING:, BUG:, KASAN:, lockdep, ...) fails, with that line; the other
# lines are shown as "# kernel: ...". Each case becomes one check here
# (program_result); the whole log since the start is checked once more at
# the end.
. "$LAB_TOP/tests/lib.sh"
cd "$LAB_TOP" || exit 1

PROG=$LAB_TOP/build/tests/uapi-errors
W=/tmp/uapi-errors		# tmpfs in the guest
OUT=$W/output.txt
LABEL="uapi errors"
# kmemleak's own allocation failed under fault injection (the fault-inject
# cases of tests/uapi-errors/fault-inject.c): it scans the whole object
# instead; not a report of the kernel under test.
FAULT_INJECTION_ARTIFACT='kmemleak: Cannot allocate a scan area'

# A mount the program left behind (if it died) must not outlive the test.
program_setup "$LABEL" "$PROG" "$W"
marker=$(log_marker uapi-errors-start)

# The program bounds every wait itself (no case can hang); timeout is the
# last resort should a syscall never return.
start=$(date +%s)
timeout 300 "$PROG" --mnt "$W/mnt" >"$OUT" 2>&1
status=$?
echo "# uapi-errors exited $status after $(($(date +%s) - start)) s"
grep '^#' "$OUT"
[ -n "${LAB_RUN:-}" ] && cp "$OUT" "$LAB_RUN/uapi-errors.txt"

# One check per case the program knows, so a case that never printed (a
# crash, a timeout) is a failure too, not a missing line. The context of
# such a failure is computed once: under TCG every fork in this loop costs.
last="exit status $status: $(grep -v '^#' "$OUT" | tail -n 1)"
for name in $("$PROG" --list); do
	program_result "$LABEL" "$name" "$OUT" "$last"
done
fails=$(grep -c '^not ok ' "$OUT")
check_eq "$LABEL: exit status is 1 exactly when a case failed" \
	"$([ "$fails" -gt 0 ] && echo 1 || echo 0)" "$status"
check_eq "$LABEL: no mount left behind" "" \
	"$(awk -v m="$W/mnt" '$2 == m' /proc/mounts)"

kernel_log_clean "$LABEL: the kernel logged no warning" "$marker" \
	"$FAULT_INJECTION_ARTIFACT"
exit 0
