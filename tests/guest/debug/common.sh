# tests/guest/debug/common.sh: what the reliability tests (issue #10) share.
# Sourced by tests/guest/debug/5N-*.sh after tests/lib.sh; not a test
# itself (tests/guest/run only runs [0-9]*.sh). The caller sets W (its
# tmpfs work folder) before sourcing; this sets SRV, B, M (refsrv_setup)
# and the rest.

DEPTH=8
MIB=1048576
PAGE=$(getconf PAGESIZE)
# Every mode of the reference server, the stock one first.
MODES=${MODES:-iovec bufring pinned-headers pinned-buffers zero-copy}

refsrv_setup "$W"
mkdir -p /sys/fs/fuse/connections 2>/dev/null
mountpoint -q /sys/fs/fuse/connections ||
	mount -t fusectl none /sys/fs/fuse/connections 2>/dev/null
NQ=$(possible_cpu_count)

T0=$(date +%s)
took() { echo "# $1 took $(($(date +%s) - T0)) s"; T0=$(date +%s); }

# need MODE: the bytes the kernel pins for MODE (one queue per possible
# CPU; per queue the headers region, DEPTH x 288 B page-rounded, and from
# pinned-buffers on the payload region, DEPTH x 1 MiB). See
# reference-server/README.md, "Pinned modes".
need() {
	c_hdr=$(((DEPTH * 288 + PAGE - 1) / PAGE * PAGE))
	case $1 in
	iovec | bufring) echo 0 ;;
	pinned-headers) echo $((NQ * c_hdr)) ;;
	*) echo $((NQ * (c_hdr + DEPTH * MIB))) ;;
	esac
}

# pins: the pages pinned with FOLL_PIN in the whole guest, now
# (/proc/vmstat: acquired minus released). The pinned modes' regions are
# pinned this way (pin_user_pages(FOLL_LONGTERM)), and nothing else in the
# guest holds a long-term pin, so with no server running this is the
# baseline, and a pinned-buffers server adds exactly need/PAGE pages. A
# page left pinned after a server is gone is a leak. (Pinned pages are
# neither Mlocked nor Unevictable in /proc/meminfo: these counters are
# the only global view of them.) Reading /proc/sys/vm/stat_refresh first
# folds the per-CPU deltas into the totals: without it the counters lag by
# up to a few dozen pages per CPU.
pins() {
	cat /proc/sys/vm/stat_refresh >/dev/null 2>&1
	awk '$1 == "nr_foll_pin_acquired" { a = $2 } $1 == "nr_foll_pin_released" { r = $2 }
		END { print a - r }' /proc/vmstat
}

# pins_back NAME BASE: the pinned pages come back to BASE within 5 s (the
# teardown of a dead connection unpins from a work item, every HZ/20, once
# its last entry is gone: docs/pinned.rst, "When the pages are given back").
pins_back() {
	c_i=0
	while [ "$(pins)" != "$2" ] && [ $c_i -lt 50 ]; do
		sleep 0.1
		c_i=$((c_i + 1))
	done
	check_eq "$1: pinned pages back to the baseline ($2) after $((c_i * 100)) ms" "$2" "$(pins)"
}

# start_mode NAME MODE LOG: start the server in MODE on $B and $M; check
# that it mounted, and that it pins exactly what its mode pins (VmPin, and
# the guest's pinned pages over BASE_PINS when that is set). 1 if not.
start_mode() {
	if ! refsrv_start "$3" --mode="$2" --queue-depth=$DEPTH; then
		fail "$1: $2 server mounts" "$(tail -n 3 "$3" | tr '\n' ' ')"
		[ -n "$SRV_PID" ] && kill -9 "$SRV_PID" 2>/dev/null
		wait "$SRV_PID" 2>/dev/null
		SRV_PID=
		return 1
	fi
	c_n=$(need "$2")
	if [ -n "${BASE_PINS:-}" ]; then
		check_eq "$1: $2 server mounts, VmPin and pinned pages = its need ($c_n B)" \
			"$((c_n / 1024)) $((BASE_PINS + c_n / PAGE))" "$(vmpin_kb "$SRV_PID") $(pins)"
	else
		check_eq "$1: $2 server mounts, VmPin = its need ($c_n B)" "$((c_n / 1024))" "$(vmpin_kb "$SRV_PID")"
	fi
	return 0
}

# verified_io NAME: one fio run on the mount: a direct sequential write of
# 1 MiB in 64 KiB blocks, then buffered random reads of it (the same block size: fio checks it), both
# --verify=crc32c (the read job reads what the write job stored, after fio
# dropped the cached pages); then the backing file must hold the same
# bytes as the mount shows. Bounded by a 60 s timeout.
verified_io() {
	c_out=$(timeout 60 fio --ioengine=psync --fallocate=none --verify=crc32c \
		--filename="$M/verified.dat" --size=1M \
		--name=write --rw=write --bs=64k --direct=1 \
		--name=read --stonewall --rw=randread --bs=64k --direct=0 2>&1)
	c_status=$?
	if [ $c_status = 0 ] && [ "$(printf '%s\n' "$c_out" | grep -c '): err= 0:')" = 2 ]; then
		pass "$1: fio write + read back, --verify=crc32c"
	else
		fail "$1: fio write + read back, --verify=crc32c" \
			"exit $c_status: $(printf '%s\n' "$c_out" | grep -E 'verify|err' | tail -n 2 | tr '\n' ' ')"
	fi
	check "$1: the backing file has the bytes the mount shows" cmp "$M/verified.dat" "$B/verified.dat"
	rm -f "$M/verified.dat"
}

# fio_bg NAME [SECONDS]: I/O in flight on the mount, in the background
# (FIO_PID): a direct job with 1 MiB blocks (requests with 256 pages each,
# zero-copied in zero-copy mode) and a buffered one with 4 KiB blocks, on
# 2 MiB files, random reads and writes, for SECONDS (default 60). Waits
# until both files are laid out and the jobs run; checks that fio is
# still running then.
fio_bg() {
	fio --ioengine=psync --fallocate=none --time_based --runtime="${2:-60}" \
		--name="$1-direct" --filename="$M/$1-d.dat" --size=2M --rw=randrw --bs=1M --direct=1 \
		--name="$1-buffered" --filename="$M/$1-b.dat" --size=2M --rw=randrw --bs=4k --direct=0 \
		>"$W/fio-$1.log" 2>&1 &
	FIO_PID=$!
	fio_started "$1" "$FIO_PID" "$1-d.dat" "$1-b.dat"
}

# fio_job_ends NAME: one line "JOB ERR FUNC" per job in fio-NAME.log, from
# fio's per-job summary ("NAME-direct: (groupid=0, ...): err=103 (file:
# io_u.c:1876, func=io_u error, ...)"); FUNC is "-" for err=0.
fio_job_ends() {
	awk '/^[^ ]+: \(groupid=/ {
		job = $1; sub(/:$/, "", job)
		e = $0; sub(/.*err= */, "", e); sub(/[^0-9].*/, "", e)
		f = "-"
		if (match($0, /func=[^,]*/)) { f = substr($0, RSTART + 5, RLENGTH - 5); gsub(/ /, "_", f) }
		print job, e, f
	}' "$W/fio-$1.log"
}

# fio_ended NAME LABEL: fio_bg NAME ends within 30 s (it does not hang),
# and each of its two jobs either completed or failed the way a dead
# connection fails a request: ECONNABORTED (103), ENOTCONN (107) or
# ECANCELED (125). The buffered job may also fail with EIO (5) on a read:
# fuse reads pages through iomap, which records a failed read as a folio
# that is not uptodate, and the page cache reports that as EIO
# (filemap_read_folio()), whatever the request's error was. Anything
# else fails the check, among them fio's "full resid" (a read or write
# that moved 0 bytes with no error). Sets FIO_HOW.
fio_ended() {
	if ! wait_gone "$FIO_PID" 30; then
		FIO_HOW=hung
		fail "$2: fio in flight ends" "still running 30 s later"
		kill -9 "$FIO_PID"
		wait "$FIO_PID" 2>/dev/null
		rm -f "$B/$1-d.dat" "$B/$1-b.dat"
		return
	fi
	wait "$FIO_PID"
	c_st=$?
	c_ends=$(fio_job_ends "$1")
	c_bad=$(printf '%s\n' "$c_ends" | awk -v n="$1" '
		$2 == 0 || $2 == 103 || $2 == 107 || $2 == 125 { next }
		$1 == n "-buffered" && $2 == 5 && $3 == "io_u_error" { next }
		{ print }' | tr '\n' ' ')
	c_jobs=$(printf '%s\n' "$c_ends" | awk '{ print $1 }' | sort | tr '\n' ' ')
	FIO_HOW="exit $c_st: $(printf '%s\n' "$c_ends" | awk '{ printf "%s%s err=%s", (NR > 1 ? ", " : ""), $1, $2 }')"
	if [ "$c_jobs" != "$1-buffered $1-direct " ]; then
		fail "$2: fio in flight ends, both jobs reporting" \
			"exit $c_st, jobs: $c_jobs$(tail -n 2 "$W/fio-$1.log" | tr '\n' ' ')"
	elif [ -n "$c_bad" ]; then
		fail "$2: fio in flight: each job completes or fails as the connection ends" \
			"$c_bad$(grep -E 'error' "$W/fio-$1.log" | tail -n 2 | tr '\n' ' ')"
	elif [ $c_st = 0 ]; then
		FIO_HOW=completed
		pass "$2: fio in flight completed"
	else
		pass "$2: fio in flight: each job completes or fails as the connection ends ($FIO_HOW)"
	fi
	rm -f "$B/$1-d.dat" "$B/$1-b.dat"
}

# kernel_clean NAME MARKER: no warning in the kernel log since MARKER.
kernel_clean() {
	kernel_log_clean "$1: the kernel logged no warning" "$2"
}
