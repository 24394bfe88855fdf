#!/bin/sh
# Description: fault injection on the REGISTER path, in every mode (issue
# #10; needs the debug kernel's CONFIG_FAILSLAB and CONFIG_FAIL_PAGE_ALLOC,
# vm/kernel-debug.config). For n = 1, 2, ... (or a sample of them, below)
# the n-th slab or page allocation of each of the server's queue threads
# from the moment it is released to REGISTER fails (/proc/<pid>/task/<tid>/fail-nth), until a
# run where no thread reached its n-th allocation. Each time: the server
# either starts and serves a checked write and read, or exits non-zero with
# a "fuse-uring-server: ..." message within 60 s; the mount point is not
# left mounted or hung; every page pinned for the attempt is unpinned
# (FOLL_PIN count back to the baseline); the kernel logs no warning. After
# the loop, a fresh server in the same mode passes fio --verify=crc32c
# and, in the pinning modes, starts with RLIMIT_MEMLOCK exactly its need
# and no CAP_IPC_LOCK (the failed attempts' locked_vm charge was given
# back).
#
# How the n-th allocation is aimed at REGISTER. fail-nth is per task and
# not inherited (fork sets it to 0), and the server's REGISTERs are
# submitted by its queue threads (one per possible CPU), which exist only
# once the server runs. Each queue thread builds its ring and then waits
# (pthread_cond_wait, a futex) until main has mounted and answered
# FUSE_INIT; right after that wait it submits its REGISTERs (one
# io_uring_enter()) and makes no other system call first. So the test holds
# main before the mount while the queue threads wait: the mount point lies
# on another FUSE mount (an "outer" reference server in iovec mode), under
# a name never looked up, and the outer server is stopped (SIGSTOP), so
# main's stat(2) of the mount point waits for the outer server's LOOKUP
# reply. The test checks that every queue thread sits in futex(2) and main
# in another system call, writes n to each queue thread's fail-nth, and
# lets the outer server go on (SIGCONT). The next should_fail() calls of
# each queue thread are its REGISTER's. After the start-up, a queue
# thread's fail-nth above 0 says its REGISTER path had fewer than n
# injectable allocations.
#
# Which allocations count: failslab and fail_page_alloc with
# ignore-gfp-wait=N (sleeping GFP_KERNEL allocations too) and
# fail_page_alloc min-order=0 (single pages too); ignore-gfp-highmem stays
# Y, so user pages (the server's own regions, already touched before
# REGISTER) are not failed. probability stays 0: only fail-nth injects.
# verbose=2 logs each injected failure with its call trace (rate-limited,
# and silent for __GFP_NOWARN allocations): the test prints where each n
# failed.
#
# Which n. Every n, one server start each, is what tests/guest/22's C cases
# fault-inject-register-* do in one process (seconds); here one start costs
# 20-30 s under KASAN and TCG, and a queue thread's start-up has 55-75
# points (two queues, eight entries each), so by default this samples the
# points of each mode: the first (n=1), the middle and the last, then on
# from the last until no thread reaches its n-th any more (the server must
# start; at most 8 more). FI_ALL=1 iterates every n up to FI_MAX_N
# (default 300) instead (hours).
# FI_N="28 29" tries just those n (with MODES=iovec, one point of one
# mode: how to rerun a failure). FI_DRY=1 on a kernel without fault
# injection runs the same steps without arming (to test the test).
. "$LAB_TOP/tests/lib.sh"
cd "$LAB_TOP" || exit 1
W=/tmp/fault-injection
FI_MAX_N=${FI_MAX_N:-300}
FI_ALL=${FI_ALL:-}
FI_N=${FI_N:-}
DBG=/sys/kernel/debug

if [ ! -e /proc/self/fail-nth ] || [ ! -d $DBG/failslab ] || [ ! -d $DBG/fail_page_alloc ]; then
	why="no /proc/self/fail-nth or $DBG/failslab or $DBG/fail_page_alloc: the kernel lacks CONFIG_FAULT_INJECTION, CONFIG_FAILSLAB, CONFIG_FAIL_PAGE_ALLOC or CONFIG_FAULT_INJECTION_DEBUG_FS (vm/kernel-debug.config, FLAVOR=debug), or debugfs is not mounted"
	if [ "${FI_DRY:-}" = 1 ]; then
		echo "# FI_DRY=1: $why; running without arming fail-nth"
	elif [ "${LAB_FLAVOR:-}" = debug ]; then
		fail "fault injection is there" "$why"
		exit 1
	else
		echo "# skip 50-fault-injection: $why"
		exit 0
	fi
fi
ARM=yes
[ -e /proc/self/fail-nth ] || ARM=

. "$LAB_TOP/tests/guest/debug/common.sh"

# The outer FUSE mount that holds the inner mount points.
OB=$W/outer-backing
OM=$W/outer
mkdir -p "$OB" "$OM"
OUTER_PID=

# Fault injection settings, put back at exit.
KNOBS="failslab/ignore-gfp-wait=N fail_page_alloc/ignore-gfp-wait=N fail_page_alloc/min-order=0 failslab/verbose=2 fail_page_alloc/verbose=2"
saved=
if [ -n "$ARM" ]; then
	for kv in $KNOBS; do
		k=${kv%%=*}
		saved="$saved $k=$(cat $DBG/$k)"
		echo "${kv#*=}" >"$DBG/$k" || fail "set $DBG/$k" "write failed"
	done
	check_eq "fault injection settings" "N N 0 0 0" \
		"$(cat $DBG/failslab/ignore-gfp-wait $DBG/fail_page_alloc/ignore-gfp-wait $DBG/fail_page_alloc/min-order $DBG/failslab/probability $DBG/fail_page_alloc/probability | tr '\n' ' ' | sed 's/ $//')"
fi

cleanup() {
	[ -n "$OUTER_PID" ] && kill -CONT "$OUTER_PID" 2>/dev/null
	[ -n "$SRV_PID" ] && kill -9 "$SRV_PID" 2>/dev/null
	[ -n "$M" ] && umount -l "$M" 2>/dev/null
	if [ -n "$OUTER_PID" ]; then
		umount -l "$OM" 2>/dev/null
		kill -9 "$OUTER_PID" 2>/dev/null
	fi
	for kv in $saved; do
		echo "${kv#*=}" >"$DBG/${kv%%=*}"
	done
	refsrv_cleanup fault-injection
}
trap cleanup EXIT
marker=$(log_marker 50-fault-injection-start)

# The outer server, through refsrv_start (it uses $B and $M).
B=$OB M=$OM
if ! refsrv_start "$W/outer.log" --mode=iovec; then
	fail "the outer server (iovec) mounts" "$(tail -n 3 "$W/outer.log" | tr '\n' ' ')"
	exit 1
fi
OUTER_PID=$SRV_PID
SRV_PID=
B=$W/backing
M=

# syscall_of PID TID: the number of the system call TID is in, or
# "running".
syscall_of() { cut -d' ' -f1 "/proc/$1/task/$2/syscall" 2>/dev/null; }
FUTEX=202	# x86_64

# queue_tids PID: the server's threads other than main, oldest first.
queue_tids() { ls "/proc/$1/task" 2>/dev/null | grep -v "^$1\$" | sort -n; }

# stalled PID: every queue thread waits in futex(2) (the hand-shake before
# REGISTER) and main is in another system call (stat(2) of the mount
# point, waiting for the stopped outer server); twice, 0.2 s apart.
stalled() {
	for _ in 1 2; do
		[ "$(queue_tids "$1" | wc -l)" = "$NQ" ] || return 1
		for t in $(queue_tids "$1"); do
			[ "$(syscall_of "$1" "$t")" = $FUTEX ] || return 1
		done
		s=$(syscall_of "$1" "$1")
		case "$s" in "" | running | $FUTEX) return 1 ;; esac
		sleep 0.2
	done
}

# ready_or_gone LOG PID: wait up to 60 s for the ready line or the exit.
# Prints "ready", "exited" or "neither".
# (Wall-clock seconds: under KASAN and TCG one round of this loop takes
# far more than its 0.1 s sleep.)
ready_or_gone() {
	k_end=$(($(date +%s) + 60))
	while [ "$(date +%s)" -lt $k_end ]; do
		if grep -qE ': [0-9]+ queues x [0-9]+ entries, ' "$1"; then echo ready; return; fi
		running "$2" || { echo exited; return; }
		sleep 0.1
	done
	echo neither
}

# where MARKER: where the injected failures since MARKER were, from their
# call traces: the first frames that are not the allocator's.
where() {
	dmesg | sed -n "\\|$1|,\$p" | awk '
		/FAULT_INJECTION: forcing a failure/ { inj = 1; nf = 0; s = ""; next }
		inj && /<\/TASK>|---\[ end/ { if (s != "") print s; inj = 0; next }
		inj && match($0, /[A-Za-z_][A-Za-z0-9_.]*\+0x/) {
			f = substr($0, RSTART, RLENGTH - 3)
			if (f ~ /^(dump_stack|should_fail|should_failslab|fail_dump|__should|kmem_cache_alloc|__kmalloc|kmalloc|__do_kmalloc|slab_|__slab|___slab|kasan|__kasan|alloc_pages|__alloc_pages|alloc_frozen|__alloc_frozen|prepare_alloc|get_page_from|__folio_alloc|folio_alloc|kvmalloc|__kvmalloc|kzalloc|kvzalloc|kcalloc|kmemdup|krealloc|__vmalloc|vmalloc|__get_vm_area|alloc_vmap_area|alloc_pages_bulk|__alloc_pages_bulk|pcpu_alloc|alloc_slab|new_slab|allocate_slab|__pte_alloc|__pmd_alloc|__pud_alloc|__p4d_alloc|pte_alloc|vmap_pages|vmap_range|vmap_small|vmap_pages_range|__vmap_pages|vmap_p|show_stack|entry_SYSCALL|do_syscall|x64_sys|__x64_sys|__do_sys|__se_sys|ret_from)/) next
			if (nf < 4) { s = s (nf ? " < " : "") f; nf++ }
		}'
}

BASE_PINS=$(pins)
echo "# $NQ queues; FOLL_PIN baseline $BASE_PINS pages; ${FI_ALL:+every n up to $FI_MAX_N}${FI_ALL:-n sampled} per mode"

# attempt MODE N: one start of the server in MODE with fail-nth N in each
# queue thread (none with N=0). Sets OUTCOME (ready, exited, neither or
# nostall), LEFT (each queue thread's fail-nth after the start, when it
# started) and PROBLEMS (what went wrong, empty if nothing).
attempt() {
	PROBLEMS= LEFT= OUTCOME=
	M=$OM/m-$1-$2	# a name the outer mount never looked up
	mkdir -p "$OB/m-$1-$2"
	log=$W/$1-$2.log
	amark="fi-attempt $1 n=$2 $(date +%s%N)"
	echo "$amark" >/dev/kmsg
	kill -STOP "$OUTER_PID"
	"$SRV" --foreground --mode="$1" --queue-depth=$DEPTH "$B" "$M" 2>"$log" &
	SRV_PID=$!
	k=0
	until stalled "$SRV_PID"; do
		k=$((k + 1))
		if [ $k -ge 150 ] || ! running "$SRV_PID"; then
			OUTCOME=nostall
			PROBLEMS="the server did not stall before the mount with its queues waiting (threads: $(for t in $(ls /proc/$SRV_PID/task 2>/dev/null); do printf '%s:%s ' "$t" "$(syscall_of "$SRV_PID" "$t")"; done); log: $(tail -n 2 "$log" | tr '\n' ' '))"
			kill -CONT "$OUTER_PID"
			break
		fi
		sleep 0.2
	done
	tids=$(queue_tids "$SRV_PID")
	if [ -z "$OUTCOME" ] && [ -n "$ARM" ] && [ "$2" != 0 ]; then
		for t in $tids; do
			echo "$2" >"/proc/$SRV_PID/task/$t/fail-nth" ||
				PROBLEMS="$PROBLEMS; cannot write fail-nth of thread $t"
			[ "$(cat "/proc/$SRV_PID/task/$t/fail-nth")" = "$2" ] ||
				PROBLEMS="$PROBLEMS; fail-nth of thread $t does not read back $2"
		done
	fi
	[ -z "$OUTCOME" ] && kill -CONT "$OUTER_PID"
	[ -z "$OUTCOME" ] && OUTCOME=$(ready_or_gone "$log" "$SRV_PID")
	case $OUTCOME in
	ready)
		# What each queue thread has left, and disarm it before any
		# request: the fault injected or not, the start-up is over.
		for t in $tids; do
			if [ -n "$ARM" ]; then
				LEFT="$LEFT $(cat "/proc/$SRV_PID/task/$t/fail-nth" 2>/dev/null || echo gone)"
				echo 0 >"/proc/$SRV_PID/task/$t/fail-nth" 2>/dev/null
			else
				LEFT="$LEFT $2"
			fi
		done
		# It serves: a write and a read of 64 KiB, checked.
		head -c 65536 /dev/urandom >"$W/data"
		if ! timeout 20 cp "$W/data" "$M/data" || ! timeout 20 cmp "$W/data" "$M/data" ||
			! cmp "$W/data" "$B/data"; then
			PROBLEMS="$PROBLEMS; started but a write and read back of 64 KiB failed"
		fi
		rm -f "$M/data" "$B/data"
		if ! timeout 20 umount "$M"; then
			PROBLEMS="$PROBLEMS; umount failed"
			conn=$(mountpoint -d "$M" 2>/dev/null | cut -d: -f2)
			[ -n "$conn" ] && echo 1 >"/sys/fs/fuse/connections/$conn/abort"
		fi
		if wait_gone "$SRV_PID" 20; then
			wait "$SRV_PID"
			s=$?
			[ $s = 0 ] || PROBLEMS="$PROBLEMS; exit $s after umount"
		else
			PROBLEMS="$PROBLEMS; still running 20 s after umount"
		fi
		;;
	exited)
		wait "$SRV_PID"
		s=$?
		msg=$(grep '^fuse-uring-server: ' "$log" | tail -n 1)
		[ $s != 0 ] || PROBLEMS="$PROBLEMS; exited 0 without starting"
		[ -n "$msg" ] || PROBLEMS="$PROBLEMS; exited $s without a fuse-uring-server: message ($(tail -n 1 "$log"))"
		LEFT="exit $s: ${msg#fuse-uring-server: }"
		;;
	neither)
		PROBLEMS="$PROBLEMS; neither started nor exited within 60 s ($(tail -n 1 "$log"))"
		# Where each thread of the server waits, before it is killed.
		echo "# server $SRV_PID: $(sed -n 's/^State:[[:space:]]*//p' /proc/$SRV_PID/status 2>&1), threads: $(ls /proc/$SRV_PID/task 2>&1 | tr '\n' ' ')"
		for t in /proc/"$SRV_PID"/task/*; do
			echo "# thread ${t##*/} ($(cat "$t/comm" 2>/dev/null)): syscall $(cut -d' ' -f1 "$t/syscall" 2>/dev/null), state $(sed -n 's/^State:[[:space:]]*//p' "$t/status" 2>/dev/null), wchan $(cat "$t/wchan" 2>/dev/null)"
			sed 's/^/#     /' "$t/stack" 2>/dev/null
		done
		;;
	esac
	if running "$SRV_PID"; then
		kill -9 "$SRV_PID"
		wait "$SRV_PID" 2>/dev/null
	fi
	SRV_PID=
	# The mount point: not mounted, and it answers.
	if [ "$(mount_type "$M")" != none ]; then
		PROBLEMS="$PROBLEMS; left mounted ($(mount_type "$M"))"
		timeout 10 umount -l "$M"
	fi
	timeout 10 stat "$M" >/dev/null 2>&1 || PROBLEMS="$PROBLEMS; stat of the mount point fails or hangs"
	# The pages pinned for the attempt: unpinned within 5 s.
	k=0
	while [ "$(pins)" != "$BASE_PINS" ] && [ $k -lt 50 ]; do sleep 0.1; k=$((k + 1)); done
	[ "$(pins)" = "$BASE_PINS" ] || PROBLEMS="$PROBLEMS; $(($(pins) - BASE_PINS)) pages still pinned 5 s later"
	splat=$(dmesg | sed -n "\\|$amark|,\$p" | grep -E "$SPLATS" | head -n 3 | tr '\n' ' ')
	[ -z "$splat" ] || PROBLEMS="$PROBLEMS; kernel: $splat"
	WHERE=$(where "$amark" | tr '\n' ';')
	rmdir "$OB/m-$1-$2" 2>/dev/null
	PROBLEMS=${PROBLEMS#; }
}

# A wrapper for the last start: RLIMIT_MEMLOCK exactly $LIMIT, without
# CAP_IPC_LOCK (bounding set too), as tests/guest/23-pinned.sh does.
cat >"$W/limited-srv" <<EOF
#!/bin/sh
exec prlimit --memlock="\$LIMIT:\$LIMIT" setpriv --inh-caps=-ipc_lock \
	--bounding-set=-ipc_lock -- "$SRV" "\$@"
EOF
chmod +x "$W/limited-srv"

for mode in $MODES; do
	# 0. how many injectable allocations the queue threads' start-up has:
	# fail-nth far beyond them, and what is left of it afterwards.
	big=1000000
	attempt "$mode" $big
	if [ "$OUTCOME" != ready ] || [ -n "$PROBLEMS" ]; then
		fail "$mode: a start with fail-nth $big (nothing injected) works" "$OUTCOME: $PROBLEMS"
		continue
	fi
	points= most=0
	for l in $LEFT; do
		points="$points $((big - l))"
		[ $((big - l)) -gt $most ] && most=$((big - l))
	done
	echo "# $mode: the queue threads' start-up has$points injectable allocations (per thread)"
	pass "$mode: a start with fail-nth armed beyond its allocations works ($points allocations per queue thread)"

	# 1. n = 1, 2, ... (FI_ALL=1) or the sample, until no queue thread
	# reached its n-th.
	if [ -n "$FI_N" ]; then
		ns=$FI_N
	elif [ -n "$FI_ALL" ]; then
		ns=$(seq 1 "$FI_MAX_N")
	else
		# The count moves by an allocation or two from one start to
		# the next (a cache refilled, a page allocated on first use):
		# from the last point on, go on until a start injects nothing.
		ns=$(printf '%s\n' 1 $(((most + 1) / 2)) $(seq "$most" $((most + 8))) | awk '$1 > 0 && !seen[$1]++')
	fi
	n=0 bad=0 failed_starts=0 badn= tried= reached=yes
	for n in $ns; do
		attempt "$mode" $n
		reached=no
		case $OUTCOME in
		ready)
			for l in $LEFT; do [ "$l" = 0 ] && reached=yes; done
			;;
		*) reached=yes ;;
		esac
		[ "$OUTCOME" = exited ] && failed_starts=$((failed_starts + 1))
		echo "# $mode n=$n: $OUTCOME ($LEFT)${WHERE:+; injected at: $WHERE}"
		if [ -n "$PROBLEMS" ]; then
			fail "$mode n=$n: a failed allocation on the REGISTER path is handled" "$PROBLEMS"
			bad=$((bad + 1))
			badn="$badn $n"
		fi
		[ $reached = no ] && break
		tried="$tried $n"
		if [ "$OUTCOME" = nostall ]; then
			fail "$mode: every attempt stalls before the mount" "n=$n did not; stopping this mode"
			break
		fi
	done
	points_tried=$(echo $tried | wc -w)
	if [ -n "$FI_N" ]; then
		check_eq "$mode: the injection points n =$tried: each a clean failure or a working server, mount point free, pages unpinned, kernel log clean" \
			"0" "$bad${badn:+ (n =$badn)}"
	elif [ $reached = yes ]; then
		fail "$mode: a start with no fault injected after the last point" "n=$n still reached a queue thread's n-th allocation"
	else
		check_eq "$mode: $points_tried injection points tried (n =$tried; $failed_starts starts failed), each: a clean failure or a working server, mount point free, pages unpinned, kernel log clean; n=$n injects nothing and the server starts" \
			"0" "$bad${badn:+ (n =$badn)}"
	fi

	# 2. a fresh server in the same mode: fio, and in the pinning modes
	# the exact RLIMIT_MEMLOCK without CAP_IPC_LOCK.
	M=$W/mnt
	mkdir -p "$M"
	rm -rf "${B:?}"/*
	lim=$(need "$mode")
	if [ "$lim" != 0 ]; then
		export LIMIT=$lim
		SRV_SAVED=$SRV
		SRV=$W/limited-srv
		start_mode "$mode: after the loop, RLIMIT_MEMLOCK $lim B, no CAP_IPC_LOCK," "$mode" "$W/$mode-after.log"
		started=$?
		SRV=$SRV_SAVED
	else
		start_mode "$mode: after the loop" "$mode" "$W/$mode-after.log"
		started=$?
	fi
	if [ $started = 0 ]; then
		verified_io "$mode: after the loop"
		refsrv_stop "$mode: after the loop"
	fi
	pins_back "$mode: after the loop" "$BASE_PINS"
	took "$mode"
done

B=$OB M=$OM
SRV_PID=$OUTER_PID
OUTER_PID=
refsrv_stop "the outer server"
M=
kernel_clean "fault injection" "$marker"
exit 0
