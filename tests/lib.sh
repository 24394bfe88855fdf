# tests/lib.sh: the one way every check in this repo reports a result.
#
# Sourced by guest test scripts (tests/guest/*.sh) and by each lab's `check`.
# Every check prints exactly one line, "ok NAME", "not ok NAME: WHY" or
# "skip NAME: WHY"; the
# host (scripts/check) counts those lines, so a check that never runs can
# never be counted as a pass.

# report LINE: print a result line, and append it to $LAB_RESULTS when the
# suite runner (tests/guest/run) collects them for the host.
report() {
	printf '%s\n' "$1"
	if [ -n "${LAB_RESULTS:-}" ]; then printf '%s\n' "$1" >>"$LAB_RESULTS"; fi
}

# pass NAME / fail NAME WHY: report a result decided by the caller.
# skip NAME WHY: the check cannot run here (a kernel without the feature,
# a tool the guest lacks); counted apart, never as a pass.
# LAB_CHECK_PREFIX names a second run of the same checks (tests/guest/26).
pass() { report "ok ${LAB_CHECK_PREFIX:-}$1"; }
fail() { report "not ok ${LAB_CHECK_PREFIX:-}$1: $2"; FAILED=$((${FAILED:-0} + 1)); }
skip() { report "skip ${LAB_CHECK_PREFIX:-}$1: $2"; }

# program_result LABEL NAME FILE [CONTEXT]: report case NAME of a C test
# program (tests/uapi-errors/, tests/fixed-buf-empty-slot.c) as "LABEL:
# NAME", from the first result line the program wrote for it in FILE. The
# programs print this file's words ("ok NAME", "not ok NAME: why", "skip
# NAME: why"); the first line counts, as a case may fail twice (its own
# check, then the kernel log's). A case without a line (the program
# crashed or timed out first) fails, "no result line", with CONTEXT if
# given. Call it once per name the program's --list prints, so a case that
# never ran is never missing from the count.
program_result() {
	pr_line=$(grep -E "^(ok|not ok|skip) $2(: |\$)" "$3" | head -n 1)
	case "$pr_line" in
	"ok $2") pass "$1: $2" ;;
	"not ok $2: "*) fail "$1: $2" "${pr_line#"not ok $2: "}" ;;
	"skip $2: "*) skip "$1: $2" "${pr_line#"skip $2: "}" ;;
	*) fail "$1: $2" "no result line${4:+ ($4)}" ;;
	esac
}

# check NAME CMD...: ok when CMD exits 0; on failure show its last output.
check() {
	name=$1; shift
	if out=$("$@" 2>&1); then
		pass "$name"
	else
		fail "$name" "'$*' exited $? ($(printf '%s' "$out" | tail -n 3 | tr '\n' ' '))"
	fi
}

# check_eq NAME EXPECTED ACTUAL: ok when the two strings are equal.
check_eq() {
	if [ "$2" = "$3" ]; then
		pass "$1"
	else
		fail "$1" "expected '$2', got '$3'"
	fi
}

# check_fails_with NAME TEXT CMD...: CMD must fail, and its output must
# contain TEXT (an errno's message, e.g. "Transport endpoint is not connected").
check_fails_with() {
	name=$1; want=$2; shift 2
	if out=$("$@" 2>&1); then
		fail "$name" "'$*' succeeded, expected $want"
	else
		case "$out" in
		*"$want"*) pass "$name" ;;
		*) fail "$name" "expected $want, got: $(printf '%s' "$out" | tail -n 1)" ;;
		esac
	fi
}

# fio_verify_matrix DIR LABEL [FIO-ARGS...]: the data check every server
# must pass. Writes then reads back DIR/fio.dat with --verify=crc32c, direct
# and buffered, sequential (128k) and random (4k); one check per job. Each
# read job verifies the checksums its write job stored, so every byte read
# is checked. FIO-ARGS go to every job. FIO_SIZE (default 16M) sets the
# file size; FIO_JOBS (rw:bs pairs, default all four) a smaller matrix, for
# instance "write:128k read:128k" (a read job checks blocks of its own
# size only: it must follow a write of the same bs, as in the default). Prints each job's bandwidth; with
# $LAB_RUN, keeps each job's output there as fio-LABEL-JOB.txt.
fio_verify_matrix() {
	dir=$1 label=$2
	shift 2
	slug=$(printf '%s' "$label" | tr -c 'A-Za-z0-9_.=-' '-')
	for direct in 1 0; do
		kind=$([ $direct = 1 ] && echo direct || echo buffered)
		for job in ${FIO_JOBS:-write:128k read:128k randwrite:4k randread:4k}; do
			rw=${job%:*} bs=${job#*:}
			out=$(fio --name="$rw-$kind" --filename="$dir/fio.dat" \
				--size="${FIO_SIZE:-16M}" --ioengine=psync --fallocate=none \
				--verify=crc32c --rw="$rw" --bs="$bs" --direct=$direct "$@" 2>&1)
			status=$?
			if [ -n "${LAB_RUN:-}" ]; then
				printf '%s\n' "$out" >"$LAB_RUN/fio-$slug-$rw-$kind.txt"
			fi
			echo "# fio $label $rw $bs $kind:" \
				"$(printf '%s\n' "$out" | sed -n 's/^ *\(READ\|WRITE\): bw=\([^ ]*\) .*/\1 \2/p' | tr '\n' ' ')"
			if [ $status = 0 ] && [ -n "$(printf '%s\n' "$out" | grep 'err= 0')" ]; then
				pass "$label: fio $rw $bs $kind, verify=crc32c"
			else
				fail "$label: fio $rw $bs $kind, verify=crc32c" \
					"exit $status: $(printf '%s\n' "$out" | grep -E 'verify|err' | tail -n 2 | tr '\n' ' ')"
			fi
		done
		rm -f "$dir/fio.dat"
	done
}

# ---- the reference server, for the tests that start it --------------------
# They set SRV (the binary), B (backing dir) and M (mount point) first.

# running PID: the process is there and has not exited. kill -0 alone
# says yes to a zombie too: an exited child stays one until its parent
# reaps it, and in a subshell such as $(...) the parent cannot, as it is
# waiting for the subshell.
running() {
	kill -0 "$1" 2>/dev/null &&
		[ "$(sed -n 's/^State:[[:space:]]*\(.\).*/\1/p' "/proc/$1/status" 2>/dev/null)" != Z ]
}

# ---- the kernel log -----------------------------------------------------

# What a kernel says when something is wrong with it: tests/guest/run reads
# the log after every test file with it, a test that runs many cases after
# each of its own. The C programs have the same list (tests/kernel-log.h).
SPLATS='BUG:|WARNING:|Oops|Kernel panic|general protection fault|blocked for more than|UBSAN:|KASAN:|KFENCE:|kmemleak:|list_(add|del) corruption|refcount_t:|INFO: task|possible circular locking|inconsistent lock state|sleeping function called from invalid context'

# log_marker NAME: write a unique line to the kernel log and print it, to
# read from there on with kernel_splats.
log_marker() {
	lm="$1 $(date +%s%N)"
	echo "$lm" >/dev/kmsg
	printf '%s\n' "$lm"
}

# kernel_splats MARKER [IGNORE]: the first three splats logged since MARKER
# on one line, leaving out lines that match the extended regex IGNORE;
# nothing if there are none. MARKER is matched as a plain string; if it has
# rotated out of the log buffer, the whole log is read (stricter, never
# blind).
kernel_splats() {
	dmesg | awk -v m="$1" '
		{ line[NR] = $0 }
		index($0, m) { from = NR }
		END { for (i = (from ? from : 1); i <= NR; i++) print line[i] }' |
		grep -E "$SPLATS" |
		{ if [ -n "${2:-}" ]; then grep -vE "$2"; else cat; fi; } |
		head -n 3 | tr '\n' ' '
}

# kernel_log_clean LABEL MARKER [IGNORE]: one check, that the kernel logged
# no splat since MARKER.
kernel_log_clean() {
	kl_splat=$(kernel_splats "$2" "${3:-}")
	if [ -n "$kl_splat" ]; then
		fail "$1" "$kl_splat"
	else
		pass "$1"
	fi
}

# ---- the reference server ------------------------------------------------

# refsrv_setup WORKDIR: what every test of the reference server starts
# with. SRV (REFSRV: another build to test, e.g.
# build/reference-server/sanitize/...), B and M in an empty WORKDIR on the
# guest's tmpfs, FUSE over io_uring switched on. Fails, and exits, when the
# server is not built.
refsrv_setup() {
	SRV=${REFSRV:-$LAB_TOP/build/reference-server/fuse-uring-server}
	W=$1
	B=$W/backing
	M=$W/mnt
	SRV_PID=
	if [ ! -x "$SRV" ]; then
		fail "reference server is built" "$SRV missing: run 'make server'"
		exit 1
	fi
	echo 1 >/sys/module/fuse/parameters/enable_uring
	rm -rf "$W"
	mkdir -p "$B" "$M"
}

# refsrv_exits_after WHAT: after something that ends the connection (a
# forced unmount, an abort), the server, SRV_PID, exits 0 within 20 s,
# and nothing is left mounted. Two checks (and a kill -9 if it hangs).
refsrv_exits_after() {
	if wait_gone "$SRV_PID" 20; then
		wait "$SRV_PID"
		check_eq "$1: the server exits 0" "0" "$?"
	else
		fail "$1: the server exits" "still running 20 s later"
		kill -9 "$SRV_PID"
	fi
	SRV_PID=
	check_eq "$1: nothing mounted" "none" "$(mount_type "$M")"
}

# copy_round_trip SIZE-A SIZE-B: two random files of those sizes, copied
# onto the mount with cp(1) into a new directory: the mount and the backing
# directory then hold the same bytes. Four checks; the files stay in $M/dir.
copy_round_trip() {
	head -c "$1" /dev/urandom >"$W/a.bin"
	head -c "$2" /dev/urandom >"$W/b.bin"
	crt_want=$(cd "$W" && sha256sum a.bin b.bin)
	check "mkdir on the mount" mkdir "$M/dir"
	check "cp of two random files onto the mount" cp "$W/a.bin" "$W/b.bin" "$M/dir/"
	check_eq "sha256sum through the mount matches" "$crt_want" "$(cd "$M/dir" && sha256sum a.bin b.bin)"
	check_eq "sha256sum of the backing files matches" "$crt_want" "$(cd "$B/dir" && sha256sum a.bin b.bin)"
}

# program_setup LABEL PROG WORKDIR: for a test that runs one of the C
# programs in tests/ on a mount of its own at WORKDIR/mnt. Fails, and
# exits, when PROG is not built; makes WORKDIR/mnt empty, and removes it
# at exit with whatever the program left mounted there.
program_setup() {
	if [ ! -x "$2" ]; then
		fail "$1: program is built" "$2 missing: run 'make tests'"
		exit 1
	fi
	PROGRAM_DIR=$3
	trap 'umount -l "$PROGRAM_DIR/mnt" 2>/dev/null; rm -rf "$PROGRAM_DIR"' EXIT
	rm -rf "$3"
	mkdir -p "$3/mnt"
}

# refsrv_start LOG ARGS...: start the reference server in the foreground (as
# a child, pid in SRV_PID) on $B and $M, and wait until it printed its
# "N queues x M entries" line, i.e. every REGISTER was accepted. Returns 1
# if it exited or took more than 60 s.
refsrv_start() {
	log=$1
	shift
	"$SRV" --foreground "$@" "$B" "$M" 2>"$log" &
	SRV_PID=$!
	i=0
	while [ $i -lt 600 ]; do
		grep -qE ': [0-9]+ queues x [0-9]+ entries, ' "$log" && return 0
		running "$SRV_PID" || return 1
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# wait_gone PID SECONDS: wait for a process to end; 1 if it is still there.
# Counts wall-clock seconds: on the debug kernel under TCG a round of the
# loop takes much longer than its sleep.
wait_gone() {
	wg_end=$(($(date +%s) + $2))
	while running "$1"; do
		[ "$(date +%s)" -ge $wg_end ] && return 1
		sleep 0.1
	done
	return 0
}

# mount_type DIR: the type field of the mount at DIR, or "none".
mount_type() {
	awk -v m="$1" '$2 == m { t = $3 } END { print t ? t : "none" }' /proc/mounts
}

# possible_cpu_count: the number of possible CPUs, which is the number of
# queues a server registers (one per possible CPU).
possible_cpu_count() {
	tr ',' '\n' </sys/devices/system/cpu/possible |
		awk -F- '{ n += ($2 == "" ? 1 : $2 - $1 + 1) } END { print n }'
}

# refsrv_cleanup TAG: the last-resort cleanup of a test that started the
# reference server: kill it ($SRV_PID), unmount $M, keep $W/*.log in the run
# folder as TAG-NAME.log (they go back to the host), remove $W.
refsrv_cleanup() {
	[ -n "${SRV_PID:-}" ] && kill -9 "$SRV_PID" 2>/dev/null
	umount -l "$M" 2>/dev/null
	if [ -n "${LAB_RUN:-}" ]; then
		for f in "$W"/*.log; do
			[ -f "$f" ] && cp "$f" "$LAB_RUN/$1-${f##*/}"
		done
	fi
	rm -rf "$W"
}

# fio_jobs_have PID FILE...: each FILE (under $M) is open in one of fio's
# job processes (the children of fio PID). Shell builtins only (read, a
# glob, test -ef): with fio and the server keeping a TCG guest's CPUs busy,
# every fork takes long, and a look through /proc that forked pgrep and ls
# missed a 20-second fio run on the debug kernel.
fio_jobs_have() {
	fj_pid=$1
	shift
	fj_fds=
	for fj_stat in /proc/[0-9]*/stat; do
		read -r fj_p _ _ fj_ppid _ 2>/dev/null <"$fj_stat" || continue
		[ "$fj_ppid" = "$fj_pid" ] && fj_fds="$fj_fds /proc/$fj_p/fd/*"
	done
	for fj_file in "$@"; do
		fj_found=
		for fj_fd in $fj_fds; do
			[ "$fj_fd" -ef "$M/$fj_file" ] && fj_found=1 && break
		done
		[ -n "$fj_found" ] || return 1
	done
}

# fio_started NAME PID FILE...: fio (PID, log $W/fio-NAME.log), started in
# the background, runs its jobs: each FILE (under $M) is open in a job
# process, and still is, with fio running, half a second later: its
# requests are in flight on the mount. Waits up to 60 s (wall clock).
# Why not the file's size: fio sizes a new file with ftruncate first and
# writes its layout after, in the parent, before it starts any job; an
# abort then hits the layout, and a job started after the server detached
# the dead mount opens a new, empty file in the folder underneath (a read
# of 0 bytes: fio's "full resid" EIO).
fio_started() {
	fs_name=$1 fs_pid=$2
	shift 2
	fs_end=$(($(date +%s) + 60))
	while ! fio_jobs_have "$fs_pid" "$@" && running "$fs_pid" &&
		[ "$(date +%s)" -lt $fs_end ]; do
		sleep 0.1
	done
	sleep 0.5
	if running "$fs_pid" && fio_jobs_have "$fs_pid" "$@"; then
		pass "$fs_name: fio is running on the mount"
	else
		fail "$fs_name: fio is running on the mount" "$(tail -n 2 "$W/fio-$fs_name.log" | tr '\n' ' ')"
	fi
}

# fio_failed NAME LABEL: the fio of fio_started NAME ($fio_pid) ends within
# 30 s, with an error of the dead connection (ECONNABORTED 103, ENOTCONN
# 107, ECANCELED 125).
fio_failed() {
	if wait_gone "$fio_pid" 30; then
		wait "$fio_pid"
		check_eq "$2: fio fails with ECONNABORTED, ECANCELED or ENOTCONN" "failed yes" \
			"$([ $? != 0 ] && echo failed || echo succeeded) $(grep -q -E 'err=(103|107|125)/' "$W/fio-$1.log" && echo yes || echo no)"
	else
		fail "$2: fio ends" "still running 30 s later"
		kill -9 "$fio_pid"
	fi
}

# refsrv_stop NAME: umount $M from outside, as a user would; the server
# sees its connection end (ENODEV on its ring) and must exit 0 within 20 s.
refsrv_stop() {
	check "$1: umount" timeout 20 umount "$M"
	if wait_gone "$SRV_PID" 20; then
		wait "$SRV_PID"
		check_eq "$1: server exits 0 after umount" "0" "$?"
	else
		fail "$1: server exits after umount" "still running 20 s later"
		kill -9 "$SRV_PID"
		wait "$SRV_PID" 2>/dev/null
	fi
	SRV_PID=
}

# vmpin_kb PID: the process's pinned memory (VmPin), in kB.
vmpin_kb() { sed -n 's/^VmPin:[[:space:]]*\([0-9]*\) kB$/\1/p' "/proc/$1/status"; }

# free_kb: free memory after sync and dropping clean caches, in kB: every
# zone's free pages plus those waiting in the per-CPU lists, which MemFree
# leaves out (they come and go by megabytes).
free_kb() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
	awk '$1 == "pages" && $2 == "free" { n += $3 } $1 == "count:" { n += $2 }
		END { print n * 4 }' /proc/zoneinfo
}

# slab_kb: the slab caches' memory (SReclaimable + SUnreclaim), in kB.
slab_kb() { awk '/^(SReclaimable|SUnreclaim):/ { n += $2 } END { print n }' /proc/meminfo; }

# free_or_slab_kb: free_kb plus slab_kb, in kB. A leak of pages (a folio
# still referenced, a page still pinned) shows as less of it; slab does
# not, and need not: caches grow and shrink by themselves, and on the
# debug kernel KASAN's quarantine holds freed objects back for a while.
# Leaked slab objects are kmemleak's to find (make check-debug).
free_or_slab_kb() {
	fs_free=$(free_kb)
	echo $((fs_free + $(slab_kb)))
}

# fio_verify_pairs LABEL SPEC...: one fio run (fio starts slowly under
# TCG) of a write job and then a random read job per SPEC, all one after
# another (stonewall), each pair on a file of its own, --verify=crc32c: the
# write job reads back and checks what it wrote, the read job, after fio
# dropped the file's cached pages, reads it from the server again and checks
# it too. SPEC is direct:bs:size[:offset] (direct 1 or 0). One check per job.
fio_verify_pairs() {
	label=$1
	shift
	jobs= n=0
	for spec in "$@"; do
		n=$((n + 1))
		direct=${spec%%:*} rest=${spec#*:}
		bs=${rest%%:*} rest=${rest#*:}
		size=${rest%%:*} offset=0
		[ "$size" != "$rest" ] && offset=${rest#*:}
		kind=$([ "$direct" = 1 ] && echo direct || echo buffered)
		for rw in write randread; do
			jobs="$jobs --name=$rw-$bs-$kind-at-$offset --stonewall --filename=$M/pair$n.dat --rw=$rw --bs=$bs --size=$size --offset=$offset --direct=$direct"
		done
	done
	# shellcheck disable=SC2086
	out=$(fio --ioengine=psync --fallocate=none --verify=crc32c $jobs 2>&1)
	[ -n "${LAB_RUN:-}" ] && printf '%s\n' "$out" >"$LAB_RUN/fio-$(printf '%s' "$label" | tr -c 'A-Za-z0-9_.=-' '-').txt"
	for job in $(printf '%s\n' "$jobs" | tr ' ' '\n' | sed -n 's/^--name=//p'); do
		if printf '%s\n' "$out" | grep -q "^$job: (groupid=[0-9]*, jobs=1): err= 0:"; then
			pass "$label: fio $job, verify=crc32c"
		else
			fail "$label: fio $job, verify=crc32c" \
				"$(printf '%s\n' "$out" | grep -E "^$job:|verify|err=" | tail -n 2 | tr '\n' ' ')"
		fi
	done
	rm -f "$M"/pair*.dat
}

# buffer_owners NBUFS TRACE: replay the kernel's fuse_uring_buffer events in
# TRACE (a copy of tracefs's trace, taken with the counter clock, which
# orders the events of all CPUs) per queue. A buffer must never be selected
# while an entry holds it, nor recycled by an entry that does not hold it,
# and its id must be below NBUFS. Prints the number of selections, then
# "none" or what went wrong ("q0:buf2:to-ent5:held-by-ent7 ...").
buffer_owners() {
	awk -v nbufs="$1" '/fuse_uring_buffer:/ {
		for (i = 1; i < NF; i++) {
			if ($i == "qid") q = $(i + 1)
			if ($i == "ent") e = $(i + 1)
			if ($i == "buf") b = $(i + 1)
		}
		if (b + 0 >= nbufs) bad = bad " q" q ":buf" b ":out-of-range"
		if ($0 ~ / selected /) {
			n++
			if ((q, b) in owner)
				bad = bad " q" q ":buf" b ":to-ent" e ":held-by-ent" owner[q, b]
			owner[q, b] = e
		} else {
			if (!((q, b) in owner) || owner[q, b] != e)
				bad = bad " q" q ":buf" b ":recycled-by-ent" e ":not-its-holder"
			delete owner[q, b]
		}
	} END { printf "%d %s", n, bad == "" ? "none" : substr(bad, 2) }' "$2"
}
