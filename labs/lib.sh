# labs/lib.sh: what the labs share, sourced by each labs/*/run and
# labs/*/check (after they set LAB_TOP, and for a run after W, B, M and LOG).
#
# Why one file: the five labs narrate the same moves (print a command as
# typed, start the reference server and wait for it, unmount it, compare
# checksums) and their checks cut the same output into steps; each lab had
# its own copy, and the copies drifted (three start_server loops, each with
# its own grep of the ready line). Only what two labs or more use is here;
# what one lab alone does stays in that lab. The output the helpers print is
# the output the labs' README.rst shows and their checks assert: change it
# here and every lab's README and check change with it.
#
# Sources tests/lib.sh: its result lines (check_eq, pass, fail, skip), the
# process helpers (running, wait_gone) and possible_cpu_count.
. "$LAB_TOP/tests/lib.sh"

# ---- for a lab's run ------------------------------------------------------------

# REFSRV: another build to test, e.g. build/reference-server/sanitize/...
# (tests/guest/26 runs the labs' checks with one-rung builds this way).
SRV=${REFSRV:-$LAB_TOP/build/reference-server/fuse-uring-server}
PARAM=/sys/module/fuse/parameters/enable_uring
SRV_PID=

# need_server: stop with the fix when the server was not built: the guest
# cannot build it (the repository is read-only there).
need_server() {
	if [ ! -x "$SRV" ]; then
		echo "$SRV missing: run 'make server' on the host first"
		exit 1
	fi
}

# need_tools TOOL...: stop, naming the first TOOL the guest lacks.
need_tools() {
	for nt_tool in "$@"; do
		command -v "$nt_tool" >/dev/null ||
			{ echo "$nt_tool missing (setpriv: util-linux, fio: fio)"; exit 1; }
	done
}

step() { printf '\n== Step %s\n' "$*"; }
# show CMD...: print it as typed at a prompt, then run it.
show() { printf '$ %s\n' "$*"; "$@"; }
# show_sh 'CMD': the same for a command line with pipes or redirections.
show_sh() { printf '$ %s\n' "$1"; sh -c "$1"; }

# sha FILE: its SHA-256 alone.
sha() { sha256sum "$1" | cut -d' ' -f1; }

# read_compare: read data.bin once through the mount, and compare its
# checksum with the backing file's (the "mount:" and "backing:" lines a
# check's sha_pair reads).
read_compare() {
	printf '$ sha256sum %s/data.bin %s/data.bin\n' "$M" "$B"
	echo "mount:    $(sha "$M/data.bin")"
	echo "backing:  $(sha "$B/data.bin")"
}

# show_status_kb FIELD: show the server's FIELD line (VmRSS, VmPin) of
# /proc/PID/status, the kernel's own accounting, and leave the number, in
# kB, in STATUS_KB.
show_status_kb() {
	show_sh "grep $1 /proc/$SRV_PID/status"
	STATUS_KB=$(awk -v f="$1:" '$1 == f { print $2 }' "/proc/$SRV_PID/status")
}

# The capability drop of start_server -l: out of the inheritable and the
# bounding set, so that root's exec of the server cannot bring it back.
NOLOCK="setpriv --inh-caps=-ipc_lock --bounding-set=-ipc_lock --"

# LOG_HIDE: the server's log lines start_server does not print (a grep
# pattern; empty: print them all); a lab may set another after sourcing
# this file. By default the per-request lines of --trace: a lab shows
# those of its workload itself, once it ran.
LOG_HIDE='^trace ring q=[0-9]* ent='

# server_log: the server's log as start_server prints it: indented, the
# LOG_HIDE lines left out.
server_log() {
	if [ -n "$LOG_HIDE" ]; then
		grep -v -e "$LOG_HIDE" "$LOG" | sed 's/^/    /'
	else
		sed 's/^/    /' "$LOG"
	fi
}

# start_server [-q] [-l KIB] [-m MOUNTPOINT] ARGS...: print the command as
# typed, start the server in the foreground (so $! is the server itself,
# whose /proc/PID/status the labs read) on $B and $M (or MOUNTPOINT) with
# its messages in $LOG, wait until it printed its ready line
# ("N queues x M entries", every queue registered), then print the log
# (server_log). -q prints nothing. -l: under 'ulimit -l KIB' and without
# CAP_IPC_LOCK ($NOLOCK). If the server exits instead, returns 1 with its
# exit status in SRV_STATUS, its log and that status printed (-q or not: a
# server that should have started says why); if it is not ready within
# 60 s (wall clock: a TCG guest's loop rounds are slow), stops the run.
start_server() {
	ss_quiet= ss_kib= ss_mnt=$M
	while :; do
		case "${1-}" in	# ${1-}: set -u, and no ARGS at all
		-q) ss_quiet=1; shift ;;
		-l) ss_kib=$2; shift 2 ;;
		-m) ss_mnt=$2; shift 2 ;;
		*) break ;;
		esac
	done
	: >"$LOG"
	if [ -n "$ss_kib" ]; then
		[ -n "$ss_quiet" ] ||
			printf '$ (ulimit -l %s && exec %s fuse-uring-server --foreground %s%s %s 2>%s) &\n' \
				"$ss_kib" "$NOLOCK" "${*:+$* }" "$B" "$ss_mnt" "$LOG"
		# shellcheck disable=SC2086
		(ulimit -l "$ss_kib" && exec $NOLOCK "$SRV" --foreground "$@" "$B" "$ss_mnt" 2>"$LOG") &
	else
		[ -n "$ss_quiet" ] ||
			printf '$ fuse-uring-server --foreground %s%s %s 2>%s &\n' \
				"${*:+$* }" "$B" "$ss_mnt" "$LOG"
		"$SRV" --foreground "$@" "$B" "$ss_mnt" 2>"$LOG" &
	fi
	SRV_PID=$!
	ss_end=$(($(date +%s) + 60))
	until grep -qE ': [0-9]+ queues x [0-9]+ entries, ' "$LOG"; do
		if ! running "$SRV_PID"; then
			wait "$SRV_PID"
			SRV_STATUS=$?
			SRV_PID=
			server_log
			echo "server exited with status $SRV_STATUS"
			return 1
		fi
		if [ "$(date +%s)" -ge $ss_end ]; then
			echo "the server did not start in 60 s:"
			cat "$LOG"
			exit 1
		fi
		sleep 0.1
	done
	[ -n "$ss_quiet" ] || server_log
	return 0
}

# stop_server: umount from outside, as a user would; the server sees its
# connection end (ENODEV on its ring) and exits.
stop_server() {
	show umount "$M"
	wait "$SRV_PID"
	echo "server exited with status $?"
	SRV_PID=
}

# lab_cleanup: what a run leaves behind when it stops early (a failed
# step, ^C): the server killed, and nothing mounted under $W (a lab mounts
# $M, lab 03 a second server on $W/mnt2). Installed on EXIT when the lab set
# W before sourcing this file; a lab with more to undo calls it from its own
# trap. $W itself stays, with the server's log, to look at.
lab_cleanup() {
	if [ -n "${SRV_PID:-}" ]; then
		kill "$SRV_PID" 2>/dev/null
		wait_gone "$SRV_PID" 10 || kill -9 "$SRV_PID" 2>/dev/null
	fi
	for lc_mnt in $(awk -v w="$W/" 'index($2, w) == 1 { print $2 }' /proc/mounts); do
		umount "$lc_mnt" 2>/dev/null || umount -l "$lc_mnt" 2>/dev/null
	done
}
if [ -n "${W:-}" ]; then
	trap lab_cleanup EXIT
fi

# fio_mode MODE: one fio run on MODE's server, of three jobs one after the
# other (--stonewall): lay the file out (write it, read it back and
# verify), read it sequentially, read it at random offsets; each read job
# verifies every 64 KiB it reads against the checksum the layout job wrote
# there. Leaves ok or failed in VERIFY; prints one line. FIO_MB: the
# file's size in MiB.
FIO_MB=${FIO_MB:-8}
fio_mode() {
	start_server -q --mode="$1" || return 1
	# fio --minimal: one line per job; field 3 is its name, 5 its error,
	# 7 its read bandwidth in KiB/s
	# shellcheck disable=SC2086
	fm_out=$(fio --minimal $FIO_ARGS $FIO_JOBS 2>&1)
	fm_status=$?
	fm_jobs=$(printf '%s\n' "$fm_out" | awk -F';' '/^3;fio-/ && $5 == 0 { n++ } END { print n + 0 }')
	if [ $fm_status = 0 ] && [ "$fm_jobs" = 3 ]; then
		VERIFY=ok
	else
		VERIFY=failed
		printf '%s\n' "$fm_out" | grep -v '^3;fio-' | tail -n 3 | sed 's/^/    fio: /'
	fi
	rm -f "$M/fio.dat"
	umount "$M"
	wait "$SRV_PID"
	fm_status=$?
	SRV_PID=
	printf '%-16s layout, seq read and rand read: verify %s, server exited with status %s\n' \
		"$1:" "$VERIFY" "$fm_status"
}

# fio_modes MODE...: the same fio job (fio_mode) on each MODE's server. No
# bandwidth: one short run per mode on a TCG guest cannot compare modes
# (make bench does, with interleaved repeats), and the labs say so.
fio_modes() {
	FIO_ARGS="--filename=$M/fio.dat --size=${FIO_MB}M --ioengine=psync --direct=1 --fallocate=none --verify=crc32c --verify_interval=64k"
	FIO_JOBS="--name=layout --rw=write --bs=1M --stonewall --name=seqread --rw=read --bs=1M --stonewall --name=randread --rw=randread --bs=64k --stonewall"
	echo "each mode: mount, one fio run on a ${FIO_MB} MiB file (direct I/O, a checksum in every 64 KiB), unmount:"
	echo "\$ F='$FIO_ARGS'"
	echo '$ fio $F --name=layout --rw=write --bs=1M --stonewall \'
	echo '         --name=seqread --rw=read --bs=1M --stonewall \'
	echo '         --name=randread --rw=randread --bs=64k --stonewall'
	for fms_mode in "$@"; do
		fio_mode "$fms_mode" || echo "$fms_mode: the server did not start"
	done
}

# ---- for a lab's check ------------------------------------------------------
# A check runs its lab's run once, its output in $OUT, and asserts what
# README.rst promises, step by step.

# run_lab NAME [FILE...]: run $LAB/run ($LAB/$LAB_SCRIPT: run-7.3 for a
# lab's 7.3 half) with its output in $OUT, check that it exited 0, and keep
# $OUT and the FILEs (traces the run left in /tmp) in the run folder that
# goes back to the host.
run_lab() {
	rl_name=$1
	shift
	"$LAB/${LAB_SCRIPT:-run}" >"$OUT" 2>&1
	check_eq "$rl_name: run exits 0" "0" "$?"
	if [ -n "${LAB_RUN:-}" ]; then cp "$OUT" "$@" "$LAB_RUN/" 2>/dev/null; fi
}

# section N: the output of step N (from its "== Step N:" header to the
# next one), empty lines left out.
section() {
	awk -v n="$1" '/^== Step / { on = ($3 == n ":") } on && NF' "$OUT"
}
# count N REGEX: lines of step N matching REGEX (grep -E).
count() { section "$1" | grep -c -E "$2"; }
# value N LABEL: what follows "LABEL" on a line of step N.
value() { section "$1" | sed -n "s/^$2 *//p"; }
# shown_kb N FIELD: the kB of the FIELD line (VmRSS, VmPin) step N showed
# from /proc/PID/status (show_status_kb).
shown_kb() { section "$1" | sed -n "s/^$2:[[:space:]]*\([0-9]*\) kB\$/\1/p"; }
# sha_pair N [FILE]: "ok" when step N printed the same 64-hex checksum for
# FILE (data.bin if none) read through the mount and from the backing dir
# (read_compare's "mount:" and "backing:" lines), else what it printed.
sha_pair() {
	sp_m=$(value "$1" "${2:+$2 }mount:") sp_b=$(value "$1" "${2:+$2 }backing:")
	case "$sp_m" in
	*[!0-9a-f]*|"") echo "mount '$sp_m'" ;;
	*) if [ ${#sp_m} = 64 ] && [ "$sp_m" = "$sp_b" ]; then echo ok; else echo "mount '$sp_m', backing '$sp_b'"; fi ;;
	esac
}
# check_fio_modes LAB N MODE...: the checks of a fio_modes step N: every
# MODE ran its three fio jobs, every read verified, and its server exited
# 0. The bandwidths are only printed (as comments): TCG's are no measure.
check_fio_modes() {
	cfm_lab=$1 cfm_n=$2
	shift 2
	for cfm_mode in "$@"; do
		cfm_line=$(section "$cfm_n" | grep "^$cfm_mode: ")
		echo "# $cfm_line"
		check_eq "$cfm_lab step $cfm_n: $cfm_mode: fio layout, seq and rand read verified, server exited 0" "1" \
			"$(printf '%s\n' "$cfm_line" | grep -c -E "^$cfm_mode: +layout, seq read and rand read: verify ok, server exited with status 0\$")"
	done
}
