#!/bin/sh
# Description: the reference server in pinned-headers and pinned-buffers mode
# (kernel-patches/0005, 0006): with RLIMIT_MEMLOCK below what it pins and no
# CAP_IPC_LOCK it refuses to start with one message naming the bytes and
# 'ulimit -l N', and mounts nothing; with CAP_IPC_LOCK the same limit does
# not matter; while mounted its VmPin is exactly the pages of every queue's
# pinned regions; when another server of the user holds the pinned memory
# the limit allows, the kernel refuses the REGISTERs (ENOMEM), and with
# --fallback the server registers again in bufring mode on the same
# connection (kernel-patches/0020); fio --verify=crc32c passes in both modes, direct and
# buffered. After kill -9 in the middle of fio, and after a forced unmount
# with requests in flight, a new server whose RLIMIT_MEMLOCK is exactly its
# own need (no CAP_IPC_LOCK) starts: the dead connection's pages were
# uncharged. The kernel logs no warning.
. "$LAB_TOP/tests/lib.sh"
cd "$LAB_TOP" || exit 1

FIO_SIZE=2M
DEPTH=8
MIB=1048576
PAGE=$(getconf PAGESIZE)
refsrv_setup /tmp/pinned	# tmpfs in the guest
SRV_BIN=$SRV		# SRV is what refsrv_start runs; some cases wrap it
for tool in prlimit setpriv; do
	if ! command -v $tool >/dev/null; then
		fail "$tool (util-linux) is there" "not in PATH"
		exit 1
	fi
done
marker=$(log_marker 23-pinned-start)

cleanup() { refsrv_cleanup pinned; }
trap cleanup EXIT

NQ=$(possible_cpu_count)

# What each mode pins, by the kernel's rule: every page a region touches,
# and the server's regions start on page boundaries. Per queue the headers
# region (DEPTH slots of 288 B) and, in pinned-buffers mode, the payload
# region (DEPTH buffers of 1 MiB by default); one queue per possible CPU.
HDR_PINNED=$(((DEPTH * 288 + PAGE - 1) / PAGE * PAGE))
PAYLOAD_PINNED=$((DEPTH * MIB))
need() {
	case $1 in
	pinned-headers) echo $((NQ * HDR_PINNED)) ;;
	*) echo $((NQ * (HDR_PINNED + PAYLOAD_PINNED))) ;;
	esac
}
echo "# $NQ queues, page $PAGE B: pinned-headers pins $(need pinned-headers) B, pinned-buffers $(need pinned-buffers) B"

# limited BYTES CMD...: CMD with RLIMIT_MEMLOCK BYTES and without
# CAP_IPC_LOCK (out of the bounding set too, so exec cannot bring it back).
limited() {
	lim=$1
	shift
	prlimit --memlock="$lim:$lim" setpriv --inh-caps=-ipc_lock \
		--bounding-set=-ipc_lock -- "$@"
}
# Wrappers for refsrv_start, which runs "$SRV": the server with
# RLIMIT_MEMLOCK $LIMIT, with (low-limit-srv) or without (limited-srv)
# CAP_IPC_LOCK. Both exec, so SRV_PID is the server's.
cat >"$W/limited-srv" <<EOF
#!/bin/sh
exec prlimit --memlock="\$LIMIT:\$LIMIT" setpriv --inh-caps=-ipc_lock \
	--bounding-set=-ipc_lock -- "$SRV_BIN" "\$@"
EOF
cat >"$W/low-limit-srv" <<EOF
#!/bin/sh
exec prlimit --memlock="\$LIMIT:\$LIMIT" "$SRV_BIN" "\$@"
EOF
chmod +x "$W/limited-srv" "$W/low-limit-srv"

# has_ipc_lock PID: "yes" if CAP_IPC_LOCK (bit 14) is in its CapEff
has_ipc_lock() {
	eff=$(sed -n 's/^CapEff:[[:space:]]*//p' "/proc/$1/status")
	[ $(((0x$eff >> 14) & 1)) = 1 ] && echo yes || echo no
}

# mount_pinned NAME LOG MODE [ARGS...]: mount; check the start-up lines and
# that VmPin is exactly what the mode pins. 1 if it did not mount.
mount_pinned() {
	name=$1 log=$2 mode=$3
	shift 3
	if ! refsrv_start "$log" --mode="$mode" --queue-depth=$DEPTH --verbose "$@"; then
		fail "$name: mounts" "$(tail -n 3 "$log" | tr '\n' ' ')"
		return 1
	fi
	pass "$name: mounts"
	n=$(need "$mode")
	hp=$HDR_PINNED pp=$PAYLOAD_PINNED
	[ "$mode" = pinned-headers ] && pp=0
	check_eq "$name: start-up line gives the pinned bytes" "1" \
		"$(grep -c ": pinned memory: $n B ($NQ queues x (headers $hp B + payload $pp B), page-rounded)\$" "$log")"
	check_eq "$name: VmPin is exactly the pinned pages ($((n / 1024)) kB)" \
		"$((n / 1024))" "$(vmpin_kb "$SRV_PID")"
	echo "# $name: VmPin $(vmpin_kb "$SRV_PID") kB, VmRSS $(sed -n 's/^VmRSS:[[:space:]]*//p' "/proc/$SRV_PID/status")"
}

T0=$(date +%s)
took() { echo "# $1 took $(($(date +%s) - T0)) s"; T0=$(date +%s); }

# ---- RLIMIT_MEMLOCK: refused before mounting, unless CAP_IPC_LOCK --------------

for mode in pinned-headers pinned-buffers; do
	n=$(need "$mode")
	low=$((n - PAGE))
	out=$(limited "$low" "$SRV_BIN" --foreground --mode="$mode" \
		--queue-depth=$DEPTH "$B" "$M" 2>&1)
	status=$?
	check_eq "$mode: RLIMIT_MEMLOCK one page short, no CAP_IPC_LOCK: exits 1" "1" "$status"
	check_eq "$mode: ... with one message naming the bytes, the limit and the fixes" \
		"fuse-uring-server: --mode=$mode pins $n B of memory ($NQ queues x (headers $HDR_PINNED B + payload $([ $mode = pinned-headers ] && echo 0 || echo $PAYLOAD_PINNED) B)), but RLIMIT_MEMLOCK is $low B and the server lacks CAP_IPC_LOCK: raise the limit with 'ulimit -l $((n / 1024))' (KiB) before starting it, or run it with CAP_IPC_LOCK" \
		"$out"
	check_eq "$mode: ... and mounts nothing" "none" "$(mount_type "$M")"
done

# A limit far too small, but with CAP_IPC_LOCK (root's): the server does
# not refuse, and the kernel does not check the limit.
export LIMIT=65536
SRV=$W/low-limit-srv
if mount_pinned "RLIMIT_MEMLOCK 64 KiB with CAP_IPC_LOCK" "$W/ipc-lock.log" pinned-buffers; then
	check_eq "RLIMIT_MEMLOCK 64 KiB: the server's limit is 64 KiB" "65536" \
		"$(awk '/^Max locked memory/ { print $4 }' "/proc/$SRV_PID/limits")"
	check_eq "RLIMIT_MEMLOCK 64 KiB: the server has CAP_IPC_LOCK" "yes" "$(has_ipc_lock "$SRV_PID")"
	refsrv_stop "RLIMIT_MEMLOCK 64 KiB with CAP_IPC_LOCK"
fi
SRV=$SRV_BIN
took "RLIMIT_MEMLOCK"

# ---- the kernel refuses on the live connection: --fallback steps down ----------

# RLIMIT_MEMLOCK counts every pinned page of the user, which the server's
# own check before mounting cannot see. A first server, the holder, pins
# exactly its limit; a second with the same limit and no CAP_IPC_LOCK
# passes its own check, mounts, and has its REGISTERs refused with ENOMEM.
# Without --fallback it exits 1 with the kernel's explanation; with it, its
# INIT reply carried FUSE_HAS_URING_BUFRING, so the refusal left io_uring
# on (kernel-patches/0020), and it registers again in bufring mode on the
# same connection, and serves.
LIMIT=$(need pinned-buffers)
SRV=$W/limited-srv
if refsrv_start "$W/holder.log" --mode=pinned-buffers --queue-depth=$DEPTH; then
	HOLDER=$SRV_PID HOLDER_M=$M HOLDER_B=$B
	B=$W/backing2 M=$W/mnt2
	mkdir -p "$B" "$M"
	out=$(limited "$LIMIT" "$SRV_BIN" --foreground --mode=pinned-buffers \
		--queue-depth=$DEPTH "$B" "$M" 2>&1)
	status=$?
	check_eq "held memory, no --fallback: the kernel's ENOMEM stops the second server (exit 1)" \
		"1 1" "$status $(printf '%s\n' "$out" | grep -c '^fuse-uring-server: the kernel refused to pin the queue memory (ENOMEM; it counts every process of the user against the limit): ')"
	check_eq "held memory, no --fallback: nothing left mounted" "none" "$(mount_type "$M")"
	if refsrv_start "$W/step-down.log" --mode=pinned-buffers --fallback \
		--queue-depth=$DEPTH; then
		check_eq "held memory, --fallback: registers again in bufring mode on the same connection" \
			"1" "$(grep -c '^fuse-uring-server: --fallback: registering again in --mode=bufring, on the same connection$' "$W/step-down.log")"
		check_eq "held memory, --fallback: ... and runs in bufring mode" \
			"1" "$(grep -c 'entries, payload [0-9]* B, mode bufring$' "$W/step-down.log")"
		check_eq "held memory, --fallback: ... pinning nothing" "0" "$(vmpin_kb "$SRV_PID")"
		head -c 300000 /dev/urandom >"$W/data"
		cp "$W/data" "$M/data"
		check "held memory, --fallback: ... and serves (300000 B written and read back)" \
			cmp "$W/data" "$M/data"
		refsrv_stop "held memory, --fallback"
	else
		fail "held memory, --fallback: mounts" "$(tail -n 3 "$W/step-down.log" | tr '\n' ' ')"
	fi
	SRV_PID=$HOLDER M=$HOLDER_M B=$HOLDER_B
	refsrv_stop "the holder"
else
	fail "the holder of the pinned memory mounts" "$(tail -n 3 "$W/holder.log" | tr '\n' ' ')"
fi
SRV=$SRV_BIN
took "--fallback on the live connection"

# ---- fio in each mode, with VmPin exact while mounted --------------------------

# Direct and buffered, 128 KiB and 4 KiB blocks: writes, then random
# reads of what they wrote.
for mode in pinned-headers pinned-buffers; do
	mount_pinned "$mode" "$W/fio-$mode.log" "$mode" || continue
	check_eq "$mode: the server has CAP_IPC_LOCK (root)" "yes" "$(has_ipc_lock "$SRV_PID")"
	fio_verify_pairs "$mode" 1:128k:$FIO_SIZE 0:128k:$FIO_SIZE 1:4k:1M 0:4k:1M
	check_eq "$mode: VmPin unchanged after fio" "$(($(need "$mode") / 1024))" "$(vmpin_kb "$SRV_PID")"
	refsrv_stop "$mode"
	took "fio in $mode mode"
done

# ---- kill -9 and a forced unmount with requests in flight ------------------------

# fio_bg NAME: random direct I/O from three jobs for up to a minute; waits
# until it is past laying out the file.
fio_bg() {
	fio --name="$1" --filename="$M/$1.dat" --size=$FIO_SIZE --ioengine=psync \
		--fallocate=none --rw=randrw --bs=4k --direct=1 --numjobs=3 \
		--time_based --runtime=60 >"$W/fio-$1.log" 2>&1 &
	fio_pid=$!
	fio_started "$1" "$fio_pid" "$1.dat"
}

# exact_restart NAME: a new pinned-buffers server with RLIMIT_MEMLOCK exactly
# its need and no CAP_IPC_LOCK. The kernel counts every pinned page of the
# user: it starts only if the old connection's pages were uncharged. The
# teardown of a dead connection may finish a moment after the umount, so
# try for up to 5 s, and say how long it took.
exact_restart() {
	n=$(need pinned-buffers)
	t0=$(date +%s%N)
	ok=no
	tries=0
	LIMIT=$n
	SRV=$W/limited-srv
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		tries=$((tries + 1))
		if refsrv_start "$W/restart.log" --mode=pinned-buffers --queue-depth=$DEPTH; then
			ok=yes
			break
		fi
		echo "# $1: try $tries: $(tail -n 1 "$W/restart.log")"
		wait "$SRV_PID" 2>/dev/null
		SRV_PID=
		sleep 0.5
	done
	SRV=$SRV_BIN
	if [ $ok = no ]; then
		fail "$1: a server with RLIMIT_MEMLOCK exactly $n B and no CAP_IPC_LOCK starts" \
			"$(tail -n 1 "$W/restart.log")"
		return
	fi
	pass "$1: a server with RLIMIT_MEMLOCK exactly $n B and no CAP_IPC_LOCK starts (try $tries, $((($(date +%s%N) - t0) / 1000000)) ms)"
	check_eq "$1: ... it really lacks CAP_IPC_LOCK" "no" "$(has_ipc_lock "$SRV_PID")"
	check_eq "$1: ... and pins exactly its need" "$((n / 1024))" "$(vmpin_kb "$SRV_PID")"
	echo "data" >"$M/after"
	check_eq "$1: ... and serves" "data" "$(cat "$M/after")"
	rm -f "$M/after"
}

if mount_pinned "kill -9" "$W/kill.log" pinned-buffers; then
	fio_bg killed
	kill -9 "$SRV_PID"
	fio_failed killed "kill -9"
	wait "$SRV_PID" 2>/dev/null
	SRV_PID=
	check "kill -9: umount of the dead mount works" timeout 10 umount "$M"
	exact_restart "after kill -9"

	# The restarted server: a forced unmount (MNT_FORCE aborts the
	# connection, MNT_DETACH takes the busy mount away) while fio runs.
	if [ -n "$SRV_PID" ]; then
		fio_bg forced
		# The server, seeing the abort, may detach the mount itself
		# before umount(8) does: then it says "not mounted".
		if out=$(umount -f -l "$M" 2>&1); then
			pass "forced unmount with requests in flight"
		else
			case "$out" in
			*"not mounted"*) pass "forced unmount with requests in flight (the server detached it first)" ;;
			*) fail "forced unmount with requests in flight" "$out" ;;
			esac
		fi
		fio_failed forced "forced unmount"
		refsrv_exits_after "forced unmount"
		exact_restart "after the forced unmount"
		[ -n "$SRV_PID" ] && refsrv_stop "the last restart"
	fi
fi

took "kill -9 and forced unmount"
kernel_log_clean "the kernel logged no warning" "$marker"
exit 0
