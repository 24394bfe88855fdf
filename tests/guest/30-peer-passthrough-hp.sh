#!/bin/sh
# Description: the peer, libfuse 3.18's passthrough_hp with -o io_uring (built
# by `make peer` from Debian's fuse3 source), runs on the guest kernel: it
# mounts, sets up one io_uring per FUSE queue, and passes the same fio
# --verify matrix as the reference server. The benchmarks compare with it.
. "$LAB_TOP/tests/lib.sh"

PEER=$LAB_TOP/build/libfuse/build/example/passthrough_hp
W=/tmp/peer B=/tmp/peer/backing M=/tmp/peer/mnt

if [ ! -x "$PEER" ]; then
	fail "passthrough_hp is built" "$PEER missing: run 'make peer'"
	exit 1
fi
rm -rf "$W" && mkdir -p "$B" "$M"
echo 1 >/sys/module/fuse/parameters/enable_uring

# --nopassthrough: every read and write goes through the server (and so the
# ring), as in the v2 series' benchmarks, instead of the kernel's backing-file
# passthrough that would bypass FUSE altogether.
"$PEER" --foreground --nopassthrough -o io_uring -o io_uring_q_depth=8 "$B" "$M" \
	>"$W/peer.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
	grep -q " $M fuse" /proc/mounts && break
	sleep 0.1
done
if ! grep -q " $M fuse" /proc/mounts; then
	fail "passthrough_hp mounts" "$(tail -n 3 "$W/peer.log" | tr '\n' ' ')"
	kill -9 $pid 2>/dev/null
	exit 1
fi
pass "passthrough_hp -o io_uring mounts"

# libfuse starts its rings in the FUSE_INIT handler; the first request
# after the mount makes sure INIT has been answered.
stat "$M" >/dev/null
queues=$(possible_cpu_count)
rings=$(ls -l /proc/$pid/fd | grep -c 'anon_inode:\[io_uring\]')
check_eq "passthrough_hp has one io_uring per FUSE queue" "$queues" "$rings"

fio_verify_matrix "$M" "passthrough_hp"

umount "$M"
wait $pid
check_eq "passthrough_hp exits 0 after umount" 0 $?
rm -rf "$W"
