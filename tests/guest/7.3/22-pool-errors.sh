#!/bin/sh
# Description: Linux 7.3's buffer-pool uapi refuses what it must, each with
# the errno 7.3's fs/fuse/dev_uring.c gives (tests/pool-errors.c, one mount
# per case that needs one): ADD_QUEUE past the last queue, with an unknown
# flag, or again (EEXIST, also after a REGISTER made the queue); ADD_BUFPOOL
# before ADD_QUEUE, shorter than one buffer, with flags or bufpool.reserved
# set, twice, or after a per-entry REGISTER; a REGISTER that names a payload
# on a pool queue, lacks the fixed flag on a fixed pool, names a zero-copy
# slot on a queue without zero-copy, or comes per entry on a zero-copy
# queue; a COMMIT_AND_FETCH without the fixed flag, or
# with another fixed buffer's index, on a fixed pool, after which the right
# commit still answers the request; with zero-copy, that a caller's read
# waits while io_uring holds its pages, across an abort (then a late
# READ_FIXED fills pages the request still owns) and at a commit (a
# READ_FIXED waiting on a pipe), and that no byte of its buffer changes
# after it returns (kernel-patches-7.3/0002; 7.3 as released fails five of
# these cases), and a commit of it from a second ring is refused (EINVAL)
# and can then be made on its own; and two entries of a queue on one zero-copy slot: REGISTER takes both, and
# while one zero-copied READ is held, the next one fails with EBUSY before
# the server sees it, the held one's data intact (recorded too); and with a
# pool of one buffer and two entries, a RELEASE passes a WRITE that waits
# for the buffer a held READ has, and the buffer of a send io_uring
# cancelled goes to the waiting WRITE at once; and an entry registered
# while a WRITE waits for one takes it at once; and, with FUSE_ASYNC_DIO and
# max_background 2, a RELEASE that the commit of a direct READ from
# io_uring lets in goes to the free entry while the committing one takes
# the READ that waited for the buffer (kernel-patches-7.3/0003; 7.3 as
# released fails five of these cases).
. "$LAB_TOP/tests/lib.sh"
cd "$LAB_TOP" || exit 1

PROG=$LAB_TOP/build/tests/pool-errors
W=/tmp/pool-errors		# tmpfs in the guest
program_setup "pool uapi" "$PROG" "$W"
echo 1 >/sys/module/fuse/parameters/enable_uring

OUT=$W/out.txt
timeout 120 "$PROG" "$W/mnt" >"$OUT" 2>&1
status=$?
sed 's/^/# /' "$OUT"
for name in $("$PROG" --list); do
	program_result "pool uapi" "$name" "$OUT" "exit $status"
done
check_eq "pool uapi: nothing left mounted" "" \
	"$(awk -v m="$W/mnt" '$2 == m' /proc/mounts)"
