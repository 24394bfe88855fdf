#!/bin/sh
# Description: the io_uring primer's program (tests/first-request.c, shown
# piece by piece in docs/io-uring-primer.rst) does what the chapter says: it mounts,
# answers FUSE_INIT, registers one entry per queue, and answers the GETATTR
# of the root that a stat(2) of the mount sends, which then sees a
# directory; it exits 0 and leaves nothing mounted.
. "$LAB_TOP/tests/lib.sh"
cd "$LAB_TOP" || exit 1

PROG=$LAB_TOP/build/tests/first-request
W=/tmp/first-request		# tmpfs in the guest
program_setup "first request" "$PROG" "$W"
echo 1 >/sys/module/fuse/parameters/enable_uring

out=$(timeout 60 "$PROG" "$W/mnt" 2>&1)
status=$?
printf '%s\n' "$out" | sed 's/^/# /'
check_eq "first request: exits 0" "0" "$status"
check_eq "first request: the request on the ring is the root's GETATTR" "1" \
	"$(printf '%s\n' "$out" | grep -c '^queue [0-9]*: request GETATTR, unique [0-9]*$')"
check_eq "first request: stat(2) of the mount saw the answer" "1" \
	"$(printf '%s\n' "$out" | grep -c '^stat(2) of the mount saw a directory$')"
check_eq "first request: nothing left mounted" "" \
	"$(awk -v m="$W/mnt" '$2 == m' /proc/mounts)"
