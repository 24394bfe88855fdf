#!/bin/sh
# Description: the reference server on Linux 7.3, which merged the buffer
# pool instead of the v2 series. The kernel is 7.3 and offers
# FUSE_HAS_IO_URING_BUFPOOL; --mode=auto picks the pool and says so; a v2
# mode is refused with one line naming the kernel it needs; the same
# binary's iovec mode (stock protocol), pool mode and pool-fixed mode
# (the pool registered as an io_uring fixed buffer) each pass a coreutils
# round trip and fio --verify=crc32c, and so does pool-zero-copy, whose
# direct READs and WRITEs are zero-copied; in the pool modes every REGISTER
# names no payload, a request gets a buffer only when it has payload, at an
# offset inside the pool (--trace: buf=N below --nbufs), and with a single
# buffer for eight entries four parallel readers are served correctly; a
# pool of 4 GiB is refused before memory is taken; --zero-copy-min chooses
# zero-copy per file; pool-zero-copy passes a file intact with
# --ring-setup=coop, defer and sqpoll, and the kernel logs no warning.
. "$LAB_TOP/tests/lib.sh"
cd "$LAB_TOP" || exit 1

FIO_SIZE=4M
DEPTH=8
MIB=1048576
refsrv_setup /tmp/pool	# tmpfs in the guest
trap 'refsrv_cleanup pool' EXIT
NQ=$(possible_cpu_count)

case "$(uname -r)" in
7.3.*) pass "the guest runs Linux 7.3 ($(uname -r))" ;;
*) fail "the guest runs Linux 7.3" "uname -r is $(uname -r)" ;;
esac

# ---- auto, and the refusal of a mode this kernel does not have --------------

LOG=$W/auto.log
if refsrv_start "$LOG"; then
	check_eq "--mode=auto says the kernel offers the pool, and picks it" "1" \
		"$(grep -c '^fuse-uring-server: --mode=auto: the kernel offers FUSE_HAS_IO_URING_BUFPOOL (Linux 7.3 or later): mode pool$' "$LOG")"
	check_eq "--mode=auto: ready line says mode pool" "1" \
		"$(grep -c ": $NQ queues x $DEPTH entries, payload $MIB B, mode pool$" "$LOG")"
	copy_round_trip $((3 * MIB)) 77777
	refsrv_stop auto
else
	fail "--mode=auto mounts on 7.3" "$(tail -n 3 "$LOG" | tr '\n' ' ')"
fi

# REFSRV_MODES: what a build with fewer rungs knows (tests/guest/7.3/26)
case "${REFSRV_MODES:-bufring}" in
*bufring*)
	for mode in bufring zero-copy; do
		check_fails_with "--mode=$mode is refused on 7.3, naming the kernel it needs" \
			"--mode=$mode needs FUSE_HAS_URING_BUFRING (Linux 7.2 with the v2 series, kernel-patches/), and this kernel does not offer it (it offers FUSE_HAS_IO_URING_BUFPOOL (Linux 7.3 or later))" \
			"$SRV" --foreground --mode=$mode "$B" "$M"
	done ;;
*)
	check_fails_with "--mode=bufring is not in this build" \
		"--mode=bufring is not built into this server (make MODES=...; supported: $REFSRV_MODES)" \
		"$SRV" --foreground --mode=bufring "$B" "$M" ;;
esac
# ADD_BUFPOOL's length is 32 bits: 4096 buffers of 1 MiB are refused before
# any memory is taken, by name and with --mode=auto
check_fails_with "--mode=pool refuses a pool of 4 GiB before mounting" \
	"a pool of --nbufs=4096 x --payload-size=1048576 B is 4 GiB or more" \
	"$SRV" --foreground --mode=pool --nbufs=4096 "$B" "$M"
check_fails_with "--mode=auto refuses a pool of 4 GiB before its FUSE_INIT reply" \
	"a pool of --nbufs=4096 x --payload-size=1048576 B is 4 GiB or more" \
	"$SRV" --foreground --nbufs=4096 "$B" "$M"
check_eq "no mount left after the refusals" "none" "$(mount_type "$M")"

# ---- each mode: round trip, fio verify ----------------------------------------

for mode in iovec pool pool-fixed; do
	LOG=$W/$mode.log
	rm -rf "${B:?}"/*	# each mode starts from an empty backing directory
	extra=
	[ $mode = iovec ] || extra="--nbufs=3"
	# shellcheck disable=SC2086 # extra is one option or none
	if ! refsrv_start "$LOG" --mode=$mode --queue-depth=$DEPTH $extra --trace --verbose; then
		fail "$mode: mounts on 7.3" "$(tail -n 3 "$LOG" | tr '\n' ' ')"
		continue
	fi
	pass "$mode: mounts on 7.3"
	if [ $mode = iovec ]; then
		check_eq "iovec: each queue registered entries with their own buffers" "$NQ" \
			"$(grep -c "^trace ring q=[0-9]* registered $DEPTH entries (mode iovec, flags 0: iov\\[0\\] 288 B, iov\\[1\\] $MIB B)\$" "$LOG")"
	else
		check_eq "$mode: 3 pool buffers of 1 MiB per queue, one header slot per entry" "1" \
			"$(grep -c ": memory per queue: payload $((3 * MIB)) B (3 x $MIB B), headers $((DEPTH * 288)) B, mode $mode$" "$LOG")"
		check_eq "$mode: each queue's entries register a header slot and no payload" "$NQ" \
			"$(grep -c "^trace ring q=[0-9]* registered $DEPTH entries (mode $mode, flags 0: iov\\[0\\] 288 B, iov\\[1\\] 0 B)\$" "$LOG")"
	fi
	copy_round_trip $((2 * MIB)) 100000
	check_eq "$mode: cat reads back the same bytes" "$(sha256sum <"$W/a.bin")" \
		"$(cat "$M/dir/a.bin" | sha256sum)"
	sync
	if [ $mode != iovec ]; then
		# buf=N: the buffer at offset N x 1 MiB; - for none
		check_eq "$mode: READ and WRITE always got a buffer inside the pool" "" \
			"$(grep -E '^trace ring .* op=(READ|WRITE) ' "$LOG" | grep -vE ' buf=[0-2]$' | head -n 3)"
		check_eq "$mode: FLUSH and RELEASE never got one" "" \
			"$(grep -E '^trace ring .* op=(FLUSH|RELEASE) ' "$LOG" | grep -v ' buf=-$' | head -n 3)"
		check "$mode: some READs and WRITEs went over the ring" \
			grep -qE '^trace ring .* op=(READ|WRITE) .* error=0 buf=[0-9]' "$LOG"
	fi
	fio_verify_matrix "$M" "$mode on 7.3"
	refsrv_stop "$mode"
	# --trace also prints each entry's normal end at umount (ENOTCONN)
	check_eq "$mode: no queue reported an error" "" \
		"$(grep -E 'queue [0-9]+( entry [0-9]+)?: ' "$LOG" | grep -v 'Transport endpoint is not connected$' | head -n 3)"
done

# ---- pool-zero-copy: READ and WRITE data stays in the callers' pages ---------

LOG=$W/pool-zero-copy.log
rm -rf "${B:?}"/*
case "${REFSRV_MODES:-pool-zero-copy}" in
*pool-zero-copy*) ;;
*) check_fails_with "--mode=pool-zero-copy needs the zero-copy rung" \
	"--mode=pool-zero-copy is not built into this server" \
	"$SRV" --foreground --mode=pool-zero-copy "$B" "$M"
   LOG= ;;
esac
if [ -z "$LOG" ]; then
	:
elif refsrv_start "$LOG" --mode=pool-zero-copy --queue-depth=$DEPTH --nbufs=2 --trace; then
	pass "pool-zero-copy: mounts on 7.3"
	copy_round_trip $((2 * MIB)) 100000
	head -c $((2 * MIB)) /dev/urandom >"$W/direct.bin"
	check "pool-zero-copy: O_DIRECT write through the mount" \
		dd if="$W/direct.bin" of="$M/direct.bin" bs=256k oflag=direct status=none
	check_eq "pool-zero-copy: O_DIRECT read back the same bytes" "$(sha256sum <"$W/direct.bin")" \
		"$(dd if="$M/direct.bin" bs=256k iflag=direct status=none | sha256sum)"
	check_eq "pool-zero-copy: the backing file holds them" "$(sha256sum <"$W/direct.bin")" \
		"$(sha256sum <"$B/direct.bin")"
	check "pool-zero-copy: direct READs were zero-copied (zc=1, no buffer)" \
		grep -qE '^trace ring .* op=READ .* error=0 buf=- zc=1$' "$LOG"
	check "pool-zero-copy: WRITEs were zero-copied (zc=1, a buffer for the reply)" \
		grep -qE '^trace ring .* op=WRITE .* error=0 buf=[01] zc=1$' "$LOG"
	check_eq "pool-zero-copy: no zero-copied READ or WRITE failed" "" \
		"$(grep -E '^trace ring .* op=(READ|WRITE) .* zc=1$' "$LOG" | grep -v ' error=0 ' | head -n 3)"
	fio_verify_matrix "$M" "pool-zero-copy on 7.3"
	refsrv_stop pool-zero-copy
else
	fail "pool-zero-copy: mounts on 7.3" "$(tail -n 3 "$LOG" | tr '\n' ' ')"
fi

# ---- pool-zero-copy on rings created another way: --ring-setup ---------------

case "${REFSRV_MODES:-pool-zero-copy}" in
*pool-zero-copy*) setups="coop defer sqpoll" ;;
*) setups= ;;	# a build without zero-copy (tests/guest/7.3/26)
esac
head -c $((2 * MIB + 12345)) /dev/urandom >"$W/rs.bin"
for setup in $setups; do
	rsn="pool-zero-copy, --ring-setup=$setup"
	LOG=$W/ring-$setup.log
	rm -rf "${B:?}"/*
	marker=$(log_marker "7.3-20-ring-setup-$setup")
	if ! refsrv_start "$LOG" --mode=pool-zero-copy --ring-setup="$setup" \
		--queue-depth=$DEPTH --nbufs=2 --verbose --trace; then
		fail "$rsn: mounts on 7.3" "$(tail -n 3 "$LOG" | tr '\n' ' ')"
		continue
	fi
	pass "$rsn: mounts on 7.3"
	check_eq "$rsn: --verbose names the ring setup" "1" \
		"$(grep -c "^fuse-uring-server: ring per queue: [0-9]* SQEs, [0-9]* CQEs, --ring-setup=$setup (" "$LOG")"
	check "$rsn: cp a file onto the mount" cp "$W/rs.bin" "$M/rs.bin"
	check "$rsn: cmp: the backing file got every byte" cmp "$W/rs.bin" "$B/rs.bin"
	check "$rsn: cmp: an O_DIRECT read through the server gives them back" \
		sh -c "dd if='$M/rs.bin' bs=256k iflag=direct status=none | cmp - '$W/rs.bin'"
	check "$rsn: direct READs were zero-copied (zc=1)" \
		grep -qE '^trace ring .* op=READ .* error=0 buf=- zc=1$' "$LOG"
	refsrv_stop "$rsn"
	# --trace also prints each entry's normal end at umount (ENOTCONN)
	check_eq "$rsn: no queue reported an error" "" \
		"$(grep -E 'queue [0-9]+( entry [0-9]+)?: ' "$LOG" | grep -v 'Transport endpoint is not connected$' | head -n 3)"
	kernel_log_clean "$rsn: the kernel logged no warning" "$marker"
done

# ---- zero-copy is chosen per file: --zero-copy-min ---------------------------

LOG=$W/zero-copy-min.log
if [ -n "${REFSRV_MODES:-}" ] && case "$REFSRV_MODES" in *pool-zero-copy*) false ;; *) true ;; esac; then
	:	# a build without zero-copy (tests/guest/7.3/26)
elif refsrv_start "$LOG" --mode=pool-zero-copy --zero-copy-min=1M --trace; then
	head -c $((2 * MIB)) /dev/urandom >"$B/large.bin"
	head -c 65536 /dev/urandom >"$B/small.bin"
	mark=$(wc -l <"$LOG")
	check_eq "--zero-copy-min=1M: the large file reads intact" "$(sha256sum <"$B/large.bin")" \
		"$(dd if="$M/large.bin" bs=256k iflag=direct status=none | sha256sum)"
	large=$(tail -n +"$((mark + 1))" "$LOG" | grep -E '^trace ring .* op=READ ' | sort -u | grep -c ' zc=1$')
	mark=$(wc -l <"$LOG")
	check_eq "--zero-copy-min=1M: the small file reads intact" "$(sha256sum <"$B/small.bin")" \
		"$(dd if="$M/small.bin" bs=64k iflag=direct status=none | sha256sum)"
	small=$(tail -n +"$((mark + 1))" "$LOG" | grep -E '^trace ring .* op=READ ' | grep -c ' zc=1$')
	check "--zero-copy-min=1M: READs of the 2 MiB file were zero-copied ($large)" [ "$large" -gt 0 ]
	check_eq "--zero-copy-min=1M: no READ of the 64 KiB file was" "0" "$small"
	refsrv_stop zero-copy-min
else
	fail "pool-zero-copy --zero-copy-min mounts" "$(tail -n 3 "$LOG" | tr '\n' ' ')"
fi

# ---- one buffer for eight entries: requests wait for it --------------------

LOG=$W/one-buffer.log
if refsrv_start "$LOG" --mode=pool --queue-depth=$DEPTH --nbufs=1; then
	head -c $((4 * MIB)) /dev/urandom >"$B/big.bin"
	want=$(sha256sum <"$B/big.bin")
	# O_DIRECT, on one CPU: every READ goes to queue 0, and they overlap.
	# (wait names them: the server is a child of this shell too.)
	pids=
	for i in 1 2 3 4; do
		timeout 60 taskset -c 0 dd if="$M/big.bin" of="$W/out.$i" bs=256k \
			iflag=direct status=none &
		pids="$pids $!"
	done
	# shellcheck disable=SC2086 # a list of pids
	wait $pids
	for i in 1 2 3 4; do
		check_eq "one buffer: parallel reader $i read the right bytes" "$want" \
			"$(sha256sum <"$W/out.$i")"
	done
	refsrv_stop one-buffer
else
	fail "pool with --nbufs=1 mounts" "$(tail -n 3 "$LOG" | tr '\n' ' ')"
fi
