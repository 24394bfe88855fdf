#!/bin/sh
# Description: the reference server in zero-copy mode (kernel-patches/0008):
# without CAP_SYS_ADMIN it refuses to start, or with --fallback runs in
# pinned-buffers mode; with it, every READ and WRITE of a coreutils round
# trip, of fio --verify=crc32c (direct and buffered, 1 byte to more than
# max_write per call, unaligned offsets) and of mmap reads and writes is
# zero-copied (--trace zc=1, the kernel's fuse_uring_send event
# zero_copied 1; LOOKUP, GETATTR and the rest zero_copied 0), and the data
# is right. READ_FIXED/WRITE_FIXED at an empty fixed-buffer slot fail with
# EFAULT. After kill -9 and a forced unmount in the middle of fio, the
# guest's free memory comes back (no folio kept by a registered buffer) and
# the kernel logs no warning.
. "$LAB_TOP/tests/lib.sh"
cd "$LAB_TOP" || exit 1

EMPTY_SLOT=$LAB_TOP/build/tests/fixed-buf-empty-slot
FIO_SIZE=2M
DEPTH=8
MIB=1048576
TRACEFS=/sys/kernel/tracing
refsrv_setup /tmp/zero-copy	# tmpfs in the guest
marker=$(log_marker 24-zero-copy-start)

cleanup() {
	[ -w "$TRACEFS/events/fuse/fuse_uring_send/enable" ] &&
		echo 0 >"$TRACEFS/events/fuse/fuse_uring_send/enable"
	refsrv_cleanup zero-copy
}
trap cleanup EXIT

NQ=$(possible_cpu_count)
T0=$(date +%s)
took() { echo "# $1 took $(($(date +%s) - T0)) s"; T0=$(date +%s); }

# ring_lines LOG [FROM]: the --trace lines of ring requests, from line FROM.
ring_lines() { tail -n +"${2:-1}" "$1" | grep '^trace ring q=[0-9]* ent='; }

# ---- without CAP_SYS_ADMIN ---------------------------------------------------

# Out of the bounding set too, so exec cannot bring it back. mount(2)
# needs the capability as well: the fallback gets as far as that.
nosysadmin() { setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin -- "$@"; }
out=$(nosysadmin "$SRV" --foreground --mode=zero-copy "$B" "$M" 2>&1)
check_eq "no CAP_SYS_ADMIN: zero-copy exits 1" "1" "$?"
check_eq "no CAP_SYS_ADMIN: one message, naming --fallback" "1 1" \
	"$(printf '%s\n' "$out" | wc -l) $(printf '%s\n' "$out" | grep -c '^fuse-uring-server: --mode=zero-copy needs CAP_SYS_ADMIN: .* add --fallback to run in pinned-buffers mode instead$')"
out=$(nosysadmin "$SRV" --foreground --mode=zero-copy --fallback "$B" "$M" 2>&1)
check_eq "no CAP_SYS_ADMIN, --fallback: a notice, then pinned-buffers mode (whose mount(2) needs it too)" \
	"fuse-uring-server: no CAP_SYS_ADMIN for --mode=zero-copy: falling back to --mode=pinned-buffers (--fallback)
fuse-uring-server: mount: Operation not permitted" "$out"
check_fails_with "--fallback without a pinned or zero-copy mode is refused" "--fallback needs --mode=pinned-headers" \
	"$SRV" --foreground --mode=bufring --fallback "$B" "$M"
check_eq "nothing mounted after the refusals" "none" "$(mount_type "$M")"

took "refusals"

# ---- a coreutils round trip with --trace and the kernel's tracepoint -----------

mkdir -p "$TRACEFS"
mountpoint -q "$TRACEFS" || mount -t tracefs nodev "$TRACEFS"
EV=$TRACEFS/events/fuse/fuse_uring_send
if [ -w "$EV/enable" ]; then
	echo >"$TRACEFS/trace"
	echo 1 >"$EV/enable"
	pass "tracefs has events/fuse/fuse_uring_send"
else
	fail "tracefs has events/fuse/fuse_uring_send" "no $EV/enable"
fi

LOG=$W/trace.log
if ! refsrv_start "$LOG" --mode=zero-copy --queue-depth=$DEPTH --trace; then
	fail "zero-copy mount" "$(tail -n 3 "$LOG" | tr '\n' ' ')"
	exit 1
fi
pass "zero-copy mount"
check_eq "each queue registered its regions with all four flags" "$NQ" \
	"$(grep -c "^trace ring q=[0-9]* registered $DEPTH entries (mode zero-copy, flags 0xf: iov\\[0\\] $((DEPTH * 288)) B, iov\\[1\\] $((DEPTH * MIB)) B)\$" "$LOG")"
need=$((NQ * (4096 + DEPTH * MIB)))
check_eq "VmPin: both regions of every queue, as pinned-buffers ($((need / 1024)) kB)" \
	"$((need / 1024))" "$(vmpin_kb "$SRV_PID")"

copy_round_trip $((MIB + 12345)) 100001
echo 3 >/proc/sys/vm/drop_caches
check_eq "cat after drop_caches reads the same bytes" "$(sha256sum <"$W/a.bin")" "$(cat "$M/dir/a.bin" | sha256sum)"
check "dd iflag=direct reads the same bytes" sh -c "dd if='$M/dir/b.bin' bs=64k iflag=direct status=none | cmp - '$W/b.bin'"
check "dd oflag=direct conv=fsync writes them" dd if="$W/a.bin" of="$M/direct.bin" bs=1M oflag=direct conv=fsync status=none
check "the direct copy has the same bytes" cmp "$W/a.bin" "$B/direct.bin"
check "mv within the mount" mv "$M/dir/b.bin" "$M/moved.bin"
check "rm and rmdir on the mount" sh -c "rm '$M/dir/a.bin' '$M/moved.bin' '$M/direct.bin' && rmdir '$M/dir'"
check_eq "the backing dir is empty again" "" "$(ls -A "$B")"

# The server's trace: READ and WRITE zero-copied, all else not.
check_eq "every ring trace line ends in buf=N|- zc=0|1" "" \
	"$(ring_lines "$LOG" | grep -v -E ' buf=([0-9]+|-) zc=[01]$' | head -n 2)"
check_eq "every READ and WRITE was zero-copied (zc=1)" "" \
	"$(ring_lines "$LOG" | grep -E ' op=(READ|WRITE) ' | grep -v ' zc=1$' | head -n 2)"
check_eq "no other request was (zc=0)" "" \
	"$(ring_lines "$LOG" | grep -v -E ' op=(READ|WRITE) ' | grep -v ' zc=0$' | head -n 2)"
check_eq "a zero-copied READ has no payload buffer (buf=-), a WRITE one for its reply" "" \
	"$(ring_lines "$LOG" | grep -E ' op=READ .* buf=[0-9]| op=WRITE .* buf=-' | head -n 2)"
check_eq "the WRITEs carried every byte (2 x (1 MiB + 12345) + 100001)" \
	"$((2 * (MIB + 12345) + 100001))" \
	"$(ring_lines "$LOG" | awk '/ op=WRITE .* error=0 / { for (i = 1; i <= NF; i++) if ($i ~ /^in=/) s += substr($i, 4) } END { print s + 0 }')"
for op in READ WRITE LOOKUP GETATTR CREATE OPEN; do
	n=$(ring_lines "$LOG" | grep -c " op=$op ")
	if [ "$n" -gt 0 ]; then pass "$op came over the ring ($n)"; else fail "$op came over the ring" "none"; fi
done

# The kernel's own account: fuse_uring_send records zero_copied per request.
if [ -w "$EV/enable" ]; then
	echo 0 >"$EV/enable"
	cp "$TRACEFS/trace" "$W/tracefs.log"
	for op in READ WRITE; do
		check_eq "fuse_uring_send: every FUSE_$op zero_copied 1" "yes 0" \
			"$(grep -q "(FUSE_$op) .* zero_copied 1 " "$W/tracefs.log" && echo yes || echo no) $(grep "(FUSE_$op) " "$W/tracefs.log" | grep -c -v ' zero_copied 1 ')"
	done
	for op in LOOKUP GETATTR CREATE; do
		check_eq "fuse_uring_send: every FUSE_$op zero_copied 0" "yes 0" \
			"$(grep -q "(FUSE_$op) .* zero_copied 0 " "$W/tracefs.log" && echo yes || echo no) $(grep "(FUSE_$op) " "$W/tracefs.log" | grep -c -v ' zero_copied 0 ')"
	done
	check_eq "fuse_uring_send: a zero-copied READ holds no payload buffer (buf -1)" "0" \
		"$(grep '(FUSE_READ) ' "$W/tracefs.log" | grep -c -v ' buf -1 ')"
	{ grep -m 1 '(FUSE_READ)' "$W/tracefs.log"; grep -m 1 '(FUSE_GETATTR)' "$W/tracefs.log"; } | sed 's/^ */# /'
fi
took "the round trip"

# ---- a READ that moves fewer bytes than asked breaks the link ------------------

# The server links each fixed operation to its commit, whose reply says
# every byte was moved. At the end of a file a READ moves fewer: io_uring
# cancels the linked commit, and the server replies again with what the
# READ_FIXED really moved: two --trace lines for that request.
head -c $((MIB + 100)) /dev/urandom >"$W/eof.bin"
cp "$W/eof.bin" "$B/eof.bin"
before=$(wc -l <"$LOG")
check "dd iflag=direct reads a file of 1 MiB + 100 bytes in 1 MiB blocks" \
	sh -c "dd if='$M/eof.bin' bs=1M iflag=direct status=none | cmp - '$W/eof.bin'"
# unique out, for each READ line since then
ring_lines "$LOG" $((before + 1)) | grep ' op=READ ' |
	sed 's/.* unique=\([0-9]*\) .* out=\([0-9]*\) .*/\1 \2/' >"$W/eof-reads.txt"
check_eq "the READ at 1 MiB: first the linked reply (out=$MIB), then the real one (out=100)" \
	"$MIB 100" "$(awk '{ outs[$1] = outs[$1] " " $2 } END { for (u in outs) if (outs[u] ~ / 100$/) print substr(outs[u], 2) }' "$W/eof-reads.txt")"
check_eq "the READ of the first 1 MiB: one line, linked, all of it" \
	"$MIB" "$(awk '{ n[$1]++; outs[$1] = $2 } END { for (u in n) if (n[u] == 1) print outs[u] }' "$W/eof-reads.txt")"
rm -f "$B/eof.bin"
took "the broken link"

# ---- sizes: 1 byte to more than max_write, unaligned offsets -------------------

# One byte per write(2) and read(2), buffered and direct: each is a READ or
# WRITE of 1 byte, at every offset in the folio.
head -c 300 /dev/urandom >"$W/small.bin"
before=$(wc -l <"$LOG")
check "dd bs=1 writes 300 one-byte WRITEs" dd if="$W/small.bin" of="$M/bs1" bs=1 status=none
check "dd bs=1 iflag=direct reads them back one byte at a time" \
	sh -c "dd if='$M/bs1' bs=1 iflag=direct status=none | cmp - '$W/small.bin'"
check "dd bs=1 oflag=direct writes one byte at a time" \
	dd if="$W/small.bin" of="$M/bs1-direct" bs=1 oflag=direct status=none
check "... and they are all there" cmp "$W/small.bin" "$B/bs1-direct"
check_eq "1-byte WRITEs and READs, all zero-copied" "yes yes 0" \
	"$(ring_lines "$LOG" $((before + 1)) | grep -q ' op=WRITE .* in=1 out=8 error=0 buf=[0-9]* zc=1$' && echo yes || echo no) $(ring_lines "$LOG" $((before + 1)) | grep -q ' op=READ .* out=1 error=0 buf=- zc=1$' && echo yes || echo no) $(ring_lines "$LOG" $((before + 1)) | grep -E ' op=(READ|WRITE) ' | grep -c -v 'zc=1$')"
rm -f "$M/bs1" "$M/bs1-direct"

# fio: 4 KiB; 1 MiB + 4 KiB, more than max_write (= --payload-size = 1
# MiB), so the kernel splits each call into 1 MiB and 4 KiB requests; and,
# buffered, an odd block size at an odd offset: every request starts and
# ends inside a page.
took "1-byte requests"
before=$(wc -l <"$LOG")
fio_verify_pairs "zero-copy" 1:4k:1M 0:4k:1M 1:$((MIB + 4096)):$((3 * (MIB + 4096))) \
	0:$((MIB + 4096)):$((3 * (MIB + 4096))) 0:3001:128k:4097
check_eq "the largest READ or WRITE is max_write (1048576), and all are zero-copied" "1048576 0" \
	"$(ring_lines "$LOG" $((before + 1)) | awk '/ op=(READ|WRITE) / { for (i = 1; i <= NF; i++) { if ($i ~ /^in=/ && substr($i, 4) + 0 > m) m = substr($i, 4) + 0; if ($i ~ /^out=/ && $5 == "op=READ" && substr($i, 5) + 0 > m) m = substr($i, 5) + 0 } if ($NF != "zc=1") bad++ } END { print m, bad + 0 }')"
# Buffered, at odd offsets and with an odd block size: every request
# starts and ends inside a page.
check_eq "odd offsets: WRITEs of 3001 bytes, starting inside pages" "yes" \
	"$(ring_lines "$LOG" $((before + 1)) | awk '/ op=(READ|WRITE) / { for (i = 1; i <= NF; i++) if ($i ~ /^in=/ && $5 == "op=WRITE" && substr($i, 4) == 3001) w = 1 } END { print w ? "yes" : "no" }')"
took "fio"

# ---- mmap: page faults read, writeback writes ------------------------------------

# A file written in the backing dir is read through a shared mapping on the
# mount (READs from the fault path), then changed through the mapping at
# odd offsets and msync()ed (WRITEs from writeback), and read back after
# drop_caches.
head -c $((3 * 4096 + 100)) /dev/urandom >"$B/mapped"
before=$(wc -l <"$LOG")
check "mmap: read and write through a shared mapping" python3 -c '
import mmap, os, sys
path, back = sys.argv[1], sys.argv[2]
data = open(back, "rb").read()
fd = os.open(path, os.O_RDWR)
m = mmap.mmap(fd, len(data))
assert m[:] == data, "mapped bytes differ from the backing file"
for off, val in ((1, b"\x01" * 7), (4095, b"\x02" * 3), (9000, b"\x03" * 3000)):
    m[off:off + len(val)] = val
m.flush()
want = bytes(m[:])
m.close()
os.close(fd)
open("/proc/sys/vm/drop_caches", "w").write("3")
got = open(path, "rb").read()
assert got == want, "the mount reads back other bytes"
assert open(back, "rb").read() == want, "the backing file has other bytes"
' "$M/mapped" "$B/mapped"
check_eq "mmap: READs and WRITEs, all zero-copied" "yes yes 0" \
	"$(ring_lines "$LOG" $((before + 1)) | grep -q ' op=READ .* zc=1$' && echo yes || echo no) $(ring_lines "$LOG" $((before + 1)) | grep -q ' op=WRITE .* error=0 .* zc=1$' && echo yes || echo no) $(ring_lines "$LOG" $((before + 1)) | grep -E ' op=(READ|WRITE) ' | grep -c -v 'zc=1$')"
rm -f "$M/mapped"
refsrv_stop "zero-copy with --trace"

# ---- fixed-buffer slots without a request ---------------------------------------

if [ -x "$EMPTY_SLOT" ]; then
	"$EMPTY_SLOT" >"$W/empty-slot.log" 2>&1
	last=$(tail -n 1 "$W/empty-slot.log")
	for name in $("$EMPTY_SLOT" --list); do
		program_result fixed-buf-empty-slot "$name" "$W/empty-slot.log" "$last"
	done
else
	fail "fixed-buf-empty-slot is built" "$EMPTY_SLOT missing: run 'make tests'"
fi
took "mmap and empty slots"

# ---- kill -9 and a forced unmount while buffers are registered --------------------

# fio_bg NAME: direct and buffered I/O of 1 MiB blocks, a job each, for up
# to a minute: requests in flight with 256 pages each registered in the
# server's ring. Waits until both files are laid out.
fio_bg() {
	fio --name="$1-direct" --filename="$M/$1.dat" --size=2M --ioengine=psync \
		--fallocate=none --rw=randrw --bs=1M --direct=1 \
		--time_based --runtime=60 \
		--name="$1-buffered" --filename="$M/$1-b.dat" --size=2M --ioengine=psync \
		--fallocate=none --rw=randrw --bs=1M --direct=0 \
		--time_based --runtime=60 >"$W/fio-$1.log" 2>&1 &
	fio_pid=$!
	fio_started "$1" "$fio_pid" "$1.dat" "$1-b.dat"
}

# forced_unmount: umount -f -l: MNT_FORCE aborts the connection (FUSE's
# umount_begin), MNT_DETACH takes the busy mount away. The server, seeing
# the abort, may detach the mount itself first; then umount(8) finds it
# gone ("not mounted"), which is fine too.
forced_unmount() {
	if out=$(umount -f -l "$M" 2>&1); then
		pass "forced unmount (MNT_FORCE | MNT_DETACH) with requests in flight"
	else
		case "$out" in
		*"not mounted"*) pass "forced unmount (MNT_FORCE | MNT_DETACH) with requests in flight (the server detached it first)" ;;
		*) fail "forced unmount (MNT_FORCE | MNT_DETACH) with requests in flight" "$out" ;;
		esac
	fi
}

base=$(free_or_slab_kb)
echo "# free + slab before: $base kB (slab $(slab_kb) kB)"
LOG=$W/kill.log
if refsrv_start "$LOG" --mode=zero-copy --queue-depth=$DEPTH; then
	fio_bg killed
	kill -9 "$SRV_PID"
	fio_failed killed "kill -9"
	wait "$SRV_PID" 2>/dev/null
	SRV_PID=
	check "kill -9: umount of the dead mount works" timeout 10 umount "$M"
else
	fail "zero-copy mount for kill -9" "$(tail -n 3 "$LOG" | tr '\n' ' ')"
fi
LOG=$W/forced.log
if refsrv_start "$LOG" --mode=zero-copy --queue-depth=$DEPTH; then
	fio_bg forced
	forced_unmount
	fio_failed forced "forced unmount"
	refsrv_exits_after "forced unmount"
else
	fail "zero-copy mount for the forced unmount" "$(tail -n 3 "$LOG" | tr '\n' ' ')"
fi
rm -f "$B"/*.dat
# Two servers' pinned regions (16 MiB each) and whatever folios their
# registered buffers held: all of it must be free again (free_or_slab_kb:
# slab objects, which KASAN holds back after they are freed, are not what
# this looks for). Page tables and per-CPU lists move by a few hundred kB;
# one request's worth of leaked folios is 1 MiB.
sleep 1
after=$(free_or_slab_kb)
echo "# free + slab after: $after kB (before: $base kB, $((base - after)) kB less; slab $(slab_kb) kB)"
if [ $((base - after)) -le 768 ]; then
	pass "free memory (with slab) is back within 768 kB after kill -9 and forced unmount ($((base - after)) kB less)"
else
	fail "free memory (with slab) is back within 768 kB after kill -9 and forced unmount" \
		"$((base - after)) kB less than before ($base -> $after kB)"
fi
took "kill -9 and forced unmount"

kernel_log_clean "the kernel logged no warning" "$marker"
exit 0
