#!/bin/sh
# Description: the reference server in bufring mode (--mode=bufring, on the
# buffer-ring patch): it refuses --nbufs in iovec mode, registers one
# headers region and one payload region per queue, passes a coreutils round
# trip, lends a buffer only to requests with payload (--trace: buf=N in
# range, buf=- for FLUSH, FSYNC, RELEASE, RELEASEDIR), passes fio
# --verify=crc32c with 1, 2 and 8 buffers for 8 entries, and with a single
# buffer serves four parallel readers on one queue correctly (their
# requests wait for the buffer, then finish) and survives kill -9 in the
# middle of fio; and with three buffers the kernel's fuse_uring_buffer
# event shows that no buffer is ever lent to two entries at once.
. "$LAB_TOP/tests/lib.sh"
cd "$LAB_TOP" || exit 1

FIO_SIZE=4M
DEPTH=8
MIB=1048576
refsrv_setup /tmp/bufring	# tmpfs in the guest

OLD_CLOCK=
OLD_KB=
cleanup() {
	[ ! -w /sys/kernel/tracing/events/fuse/fuse_uring_buffer/enable ] ||
		echo 0 >/sys/kernel/tracing/events/fuse/fuse_uring_buffer/enable
	# the tracing set-up as it was before this test
	[ -z "$OLD_CLOCK" ] || echo "$OLD_CLOCK" >/sys/kernel/tracing/trace_clock
	[ -z "$OLD_KB" ] || echo "$OLD_KB" >/sys/kernel/tracing/buffer_size_kb
	refsrv_cleanup bufring
}
trap cleanup EXIT

NQ=$(possible_cpu_count)

# mount_bufring LOG NBUFS [ARGS...]: mount in bufring mode, DEPTH entries and
# NBUFS buffers per queue; check the start-up lines. 1 if it did not mount.
mount_bufring() {
	log=$1 nb=$2
	shift 2
	if ! refsrv_start "$log" --mode=bufring --queue-depth=$DEPTH --nbufs="$nb" --verbose "$@"; then
		fail "bufring mount with --nbufs=$nb" "$(tail -n 3 "$log" | tr '\n' ' ')"
		return 1
	fi
	pass "bufring mount with --nbufs=$nb"
	check_eq "--nbufs=$nb: ready line says mode bufring" "1" \
		"$(grep -c ": $NQ queues x $DEPTH entries, payload $MIB B, mode bufring$" "$log")"
	check_eq "--nbufs=$nb: $nb payload buffers of 1 MiB per queue, one header slot per entry" "1" \
		"$(grep -c ": memory per queue: payload $((nb * MIB)) B ($nb x $MIB B), headers $((DEPTH * 288)) B, mode bufring$" "$log")"
}

# buf_summary LOG NBUFS: one line per opcode in LOG's ring trace lines,
# "OP KINDS": "-" (no buffer), "buf" (a buffer below NBUFS), "bad:VALUE".
buf_summary() {
	awk -v n="$2" '/^trace ring q=[0-9]+ ent=[0-9]+ op=/ {
		op = substr($5, 4); b = substr($NF, 5)
		k = b == "-" ? "-" : (b ~ /^[0-9]+$/ && b + 0 < n) ? "buf" : "bad:" b
		if (!((op, k) in seen)) { seen[op, k] = 1; kinds[op] = kinds[op] (kinds[op] ? "," : "") k }
	} END { for (op in kinds) print op, kinds[op] }' "$1"
}
# buf_kinds OP: OP's kinds in $SUMMARY.
buf_kinds() {
	printf '%s\n' "$SUMMARY" | while read -r o k; do [ "$o" = "$1" ] && echo "$k"; done
}

# ---- refusals: one clear message, nothing mounted ----------------------------

check_fails_with "--nbufs with --mode=iovec is refused" \
	"--nbufs needs --mode=bufring, --mode=pool or a mode above them" \
	"$SRV" --foreground --mode=iovec --nbufs=2 "$B" "$M"
check_fails_with "--nbufs=0 is refused" "--nbufs must be 1..65535" \
	"$SRV" --foreground --mode=bufring --nbufs=0 "$B" "$M"
check_eq "no mount left after the refusals" "none" "$(mount_type "$M")"

# ---- coreutils round trip with --trace, 3 buffers for 8 entries -------------

LOG=$W/trace.log
if mount_bufring "$LOG" 3 --trace; then
	check_eq "each of the $NQ queues registered its two regions" "$NQ" \
		"$(grep -c "^trace ring q=[0-9]* registered $DEPTH entries (mode bufring, flags 0x1: iov\\[0\\] $((DEPTH * 288)) B, iov\\[1\\] $((3 * MIB)) B)\$" "$LOG")"

	copy_round_trip $((2 * MIB)) 100000
	check_eq "cat reads back the same bytes" "$(sha256sum <"$W/a.bin")" "$(cat "$M/dir/a.bin" | sha256sum)"
	# coreutils cp asks copy_file_range(2): the server copies on the
	# backing file system, and no data crosses the ring (no WRITE)
	check "cp within the mount (COPY_FILE_RANGE_64)" cp "$M/dir/a.bin" "$M/copy.bin"
	check "the copy has the same bytes" cmp "$W/a.bin" "$M/copy.bin"
	check_eq "the copy went as COPY_FILE_RANGE_64, not as WRITEs" "yes" \
		"$(grep -c "^trace ring .* op=COPY_FILE_RANGE_64 .* out=8 error=0 " "$LOG" | awk '{ print ($1 > 0 ? "yes" : "no COPY_FILE_RANGE_64 line") }')"
	echo "small" >"$M/dir/small"
	check_eq "a small file reads back" "small" "$(cat "$M/dir/small")"
	check "dd conv=fsync (FSYNC)" dd if="$W/b.bin" of="$M/synced" conv=fsync status=none
	check "mv (RENAME2) within the mount" mv "$M/dir/b.bin" "$M/dir/renamed.bin"
	check "busybox mv (RENAME) across directories" busybox mv "$M/dir/renamed.bin" "$M/moved.bin"
	check "the moved file still has the same bytes" cmp "$W/b.bin" "$M/moved.bin"
	check_eq "df (STATFS): the mount's size is the backing fs's" \
		"$(df -k --output=size "$B" | tail -n 1)" "$(df -k --output=size "$M" | tail -n 1)"
	check_eq "ls lists the root" "copy.bin dir moved.bin synced" "$(ls "$M" | tr '\n' ' ' | sed 's/ $//')"
	check_fails_with "rmdir of a non-empty dir passes ENOTEMPTY through" \
		"Directory not empty" rmdir "$M/dir"
	check "rm (UNLINK) on the mount" rm "$M/dir/a.bin" "$M/dir/small" "$M/copy.bin" "$M/moved.bin" "$M/synced"
	check "rmdir on the mount" rmdir "$M/dir"
	check_eq "the backing dir is empty again" "" "$(ls -A "$B")"
	check_eq "WRITE bytes over the ring add up (2 MiB + 100000 + 6 + 100000)" \
		"$((2 * MIB + 200006))" \
		"$(awk '/^trace ring .* op=WRITE .* error=0 buf=/ { for (i = 1; i <= NF; i++) if ($i ~ /^in=/) s += substr($i, 4) } END { print s + 0 }' "$LOG")"
	refsrv_stop "round trip"

	# The trace: every ring request names its buffer, or "-" for none.
	check_eq "every ring request's trace line ends in buf=N or buf=-" "" \
		"$(grep '^trace ring q=[0-9]* ent=' "$LOG" | grep -v -E ' error=-?[0-9]+ buf=([0-9]+|-)$' | head -n 2)"
	check_eq "buffer ids stay below --nbufs (0-2)" "" \
		"$(grep '^trace ring q=[0-9]* ent=' "$LOG" | grep -v -E ' buf=([0-2]|-)$' | head -n 2)"
	check_eq "the three buffers are all used" "0 1 2 " \
		"$(sed -n 's/^trace ring .* buf=\([0-9]*\)$/\1/p' "$LOG" | sort -u | tr '\n' ' ')"
	SUMMARY=$(buf_summary "$LOG" 3)
	# No payload, no buffer: the kernel sends these without out arguments
	# and with nothing after the op header.
	for op in FLUSH FSYNC RELEASE RELEASEDIR; do
		check_eq "$op gets no buffer (buf=-)" "-" "$(buf_kinds $op)"
	done
	# A reply with data needs a buffer even when the request brings none.
	for op in GETATTR OPEN OPENDIR READ READDIR STATFS COPY_FILE_RANGE_64; do
		check_eq "$op gets a buffer for its reply" "buf" "$(buf_kinds $op)"
	done
	for op in LOOKUP CREATE WRITE MKDIR RENAME RENAME2 UNLINK RMDIR; do
		check_eq "$op brings its names or data in a buffer" "buf" "$(buf_kinds $op)"
	done
fi

# ---- fio --verify=crc32c with 1, 2 and 8 buffers for 8 entries ---------------

# The full matrix with one buffer, where requests wait for it most; with
# more, the random write job (direct and buffered), the one with the most
# requests: it reads back and verifies what it wrote, so both directions
# are still checked.
for nb in 1 2 $DEPTH; do
	mount_bufring "$W/fio-$nb.log" "$nb" || continue
	if [ "$nb" = 1 ]; then
		fio_verify_matrix "$M" "bufring nbufs=$nb"
	else
		FIO_JOBS="randwrite:4k" fio_verify_matrix "$M" "bufring nbufs=$nb"
	fi
	refsrv_stop "fio with --nbufs=$nb"
done

# ---- one buffer, four parallel readers on one queue ----------------------------

# All four run on CPU 0, so their READs go to queue 0 and its one buffer:
# at most one READ is in the server at a time, the others wait in the
# kernel until the buffer comes back, then run. Direct I/O sends the
# READs themselves; buffered reads send readahead as background requests,
# the kernel's other queueing path. The readers wait at a FIFO that we
# hold open, each says it is there, and closing it starts them together.
LOG=$W/readers.log
if mount_bufring "$LOG" 1 --trace; then
	for i in 1 2 3 4; do
		head -c $MIB /dev/urandom >"$B/r$i"
	done
	for how in direct buffered; do
		flag=$([ $how = direct ] && echo iflag=direct)
		before=$(wc -l <"$LOG")
		rm -f "$W"/go*
		mkfifo "$W/go"
		exec 3<>"$W/go"	# read-write: opening a FIFO so never blocks
		pids=
		for i in 1 2 3 4; do
			# shellcheck disable=SC2016,SC2086
			timeout 60 taskset -c 0 sh -c 'exec 4<"$1"; : >"$1.$2"; read -r _ <&4; shift 2; exec dd "$@" 4<&-' \
				sh "$W/go" $i if="$M/r$i" of="$W/out$i" bs=128k $flag status=none 3>&- &
			pids="$pids $!"
		done
		i=0
		# (an unmatched glob stays one word: fewer than 4 too)
		while set -- "$W"/go.?; [ $# -lt 4 ] && [ $i -lt 300 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		exec 3>&-	# EOF for all four at once
		st=
		for p in $pids; do
			wait "$p"
			st="$st$?"
		done
		check_eq "--nbufs=1: four parallel $how readers finish" "0000" "$st"
		bad=
		for i in 1 2 3 4; do
			cmp -s "$B/r$i" "$W/out$i" || bad="$bad r$i"
		done
		check_eq "--nbufs=1: four parallel $how readers read the right bytes" "" "$bad"
		check_eq "--nbufs=1: $how READs: 4 x 1 MiB, all on queue 0, all in buffer 0" \
			"$((4 * MIB)) q=0 buf=0" \
			"$(tail -n +"$((before + 1))" "$LOG" | awk '/^trace ring .* op=READ / {
				for (i = 1; i <= NF; i++) if ($i ~ /^out=/) s += substr($i, 5)
				k[$3 " " $NF] = 1
			} END { printf "%d", s; for (x in k) printf " %s", x }')"
		rm -f "$W"/out?
	done

	# kill -9 while the one buffer is lent and requests wait for it: the
	# kernel must end them all (ECONNABORTED, ECANCELED or ENOTCONN, as in
	# 20-reference-server) and give the mount up.
	fio --name=killed --filename="$M/kill.dat" --size=$FIO_SIZE --ioengine=psync \
		--fallocate=none --rw=randrw --bs=4k --direct=1 --numjobs=3 \
		--time_based --runtime=60 >"$W/fio-kill.log" 2>&1 &
	fio_pid=$!
	# past laying out the file, and 30 WRITEs into the random I/O
	i=0
	while [ "$(stat -c %s "$B/kill.dat" 2>/dev/null || echo 0)" -lt $((4 * MIB)) ] && [ $i -lt 600 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	n=$(($(grep -c ' op=WRITE ' "$LOG") + 30))
	i=0
	until [ "$(grep -c ' op=WRITE ' "$LOG")" -ge $n ] || [ $i -ge 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if kill -0 "$fio_pid" 2>/dev/null; then
		pass "kill -9 with --nbufs=1: fio is running on the mount before the kill"
	else
		fail "kill -9 with --nbufs=1: fio is running on the mount before the kill" \
			"$(tail -n 2 "$W/fio-kill.log" | tr '\n' ' ')"
	fi
	kill -9 "$SRV_PID"
	if wait_gone "$fio_pid" 30; then
		wait "$fio_pid"
		check_eq "kill -9 with --nbufs=1: fio fails with ECONNABORTED, ECANCELED or ENOTCONN" "failed yes" \
			"$([ $? != 0 ] && echo failed || echo succeeded) $(grep -q -E 'err=(103|107|125)/' "$W/fio-kill.log" && echo yes || echo no)"
	else
		fail "kill -9 with --nbufs=1: fio ends" "still running 30 s later"
		kill -9 "$fio_pid"
	fi
	wait "$SRV_PID" 2>/dev/null
	SRV_PID=
	check "kill -9 with --nbufs=1: umount of the dead mount works" timeout 10 umount "$M"
fi

# ---- an xattr value larger than the reply buffer -----------------------------

# With --payload-size=8K, a 12 KiB value cannot come back in a payload
# buffer. getxattr(2) with room for it must get E2BIG: ERANGE would tell
# the caller its buffer is too small, and send it to ask again. A small
# value still comes back, and the server lives on.
XV=$B/xattr-probe
touch "$XV"
if ! /usr/bin/python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.big", b"v" * 12288); os.setxattr(sys.argv[1], "user.small", b"small")' "$XV" 2>/dev/null; then
	skip "an xattr larger than the reply buffer" "the backing tmpfs takes no 12 KiB user.* value"
elif refsrv_start "$W/xattr.log" --mode=bufring --payload-size=8K --nbufs=2; then
	check_eq "--payload-size=8K: a 12 KiB xattr value is E2BIG, not ERANGE" \
		"Argument list too long" "$(/usr/bin/python3 -c 'import os, sys
try:
    os.getxattr(sys.argv[1], "user.big")
except OSError as e:
    print(e.strerror)' "$M/xattr-probe")"
	check_eq "--payload-size=8K: a small value still comes back" "small" \
		"$(/usr/bin/python3 -c 'import os, sys; print(os.getxattr(sys.argv[1], "user.small").decode())' "$M/xattr-probe")"
	refsrv_stop "--payload-size=8K xattrs"
else
	fail "bufring mount with --payload-size=8K" "$(tail -n 3 "$W/xattr.log" | tr '\n' ' ')"
fi
rm -f "$XV"

# ---- no buffer is ever lent to two entries at once ---------------------------

# Three buffers, not a power of two, for eight entries: the ring's slot
# index goes round every three selections. The kernel's fuse_uring_buffer
# event says which entry each buffer was selected for and recycled from;
# replayed per queue, a buffer must never be selected while an entry holds
# it, nor recycled by an entry that does not hold it. This checks
# ownership in general; it reaches v2's wrap bug (counters that ran freely
# and, where they wrap at 2^32, lent one buffer to two entries when nbufs
# is not a power of two) only on a kernel whose counters start near the
# wrap, as the fix's demonstration did. The counter trace clock (one
# atomic counter for all CPUs) orders the events of different CPUs.
TRACEFS=/sys/kernel/tracing
mkdir -p "$TRACEFS"
mountpoint -q "$TRACEFS" || mount -t tracefs nodev "$TRACEFS"
BUF_EV=$TRACEFS/events/fuse/fuse_uring_buffer
if [ ! -w "$BUF_EV/enable" ]; then
	fail "tracefs has events/fuse/fuse_uring_buffer" "no $BUF_EV/enable"
else
	OLD_CLOCK=$(sed -n 's/.*\[\(.*\)\].*/\1/p' "$TRACEFS/trace_clock")
	# "7 (expanded: 1408)" until the buffer is first used: 1408 is the size
	# (writing the line back is EIO)
	OLD_KB=$(awk '{ if (match($0, /expanded: [0-9]+/)) print substr($0, RSTART + 10, RLENGTH - 10); else print $1 }' "$TRACEFS/buffer_size_kb")
	echo counter >"$TRACEFS/trace_clock"
	echo 4096 >"$TRACEFS/buffer_size_kb"
	echo >"$TRACEFS/trace"
	# before the mount: every selection of this server is seen
	echo 1 >"$BUF_EV/enable"
	if mount_bufring "$W/owners.log" 3; then
		out=$(fio --name=owners --directory="$M" --size=1M --numjobs=4 \
			--ioengine=psync --fallocate=none --rw=randwrite --bs=4k \
			--direct=1 --verify=crc32c 2>&1)
		check_eq "--nbufs=3: four writers, read back and verified" "0 4" \
			"$? $(printf '%s\n' "$out" | grep -c 'err= 0')"
		refsrv_stop "--nbufs=3 buffer owners"
	fi
	echo 0 >"$BUF_EV/enable"
	# (setting the clock clears the trace: keep it first; cleanup sets it)
	cat "$TRACEFS/trace" >"$W/buffer.trace"
	owners=$(buffer_owners 3 "$W/buffer.trace")
	echo "# fuse_uring_buffer: ${owners%% *} selections"
	check_eq "--nbufs=3: at least 1000 buffer selections traced (the slot index went round)" \
		"yes" "$([ "${owners%% *}" -ge 1000 ] && echo yes || echo "no: ${owners%% *}")"
	check_eq "--nbufs=3: no buffer was lent to two entries, or recycled by one that did not hold it" \
		"none" "${owners#* }"
fi

exit 0
