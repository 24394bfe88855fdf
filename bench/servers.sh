# bench/servers.sh: mounting and unmounting the benchmark's servers, for
# bench/run and bench/costs (sourced; POSIX sh). Needs SRV, PEER (the two
# servers' binaries), B (the backing directory), M (the mount point), W
# (a scratch folder for the server's log) and die().
#
# A configuration's name says which server, in which mode:
#   ceiling                    no FUSE: fio runs in $B itself
#   refsrv-MODE                the reference server, --mode=MODE
#   refsrv-MODE-nbufsN         ... with --nbufs=N
#   refsrv-zero-copy-unlinked  ... zero-copy with --unlinked (each commit
#                              waits for its fixed operation's CQE)
#   refsrv-MODE-coop, -defer, -sqpoll
#                              ... with --ring-setup=coop, defer or sqpoll
#                              (the ring's task-work and submission setups:
#                              reference-server/ring-setup.c); MODE is a
#                              mode alone: a setup does not combine with
#                              -nbufsN or -unlinked
#   passthrough_hp             libfuse's passthrough_hp -o io_uring, its
#                              data through the ring too (--nopassthrough)

# Both servers cache names and attributes for a day: passthrough_hp's
# default, which assumes that nothing but the server changes the backing
# directory (true here); the reference server's default is libfuse's 1 s,
# so it is told the same (--timeout). Otherwise the counts would compare
# cache settings, not servers: a 1 s cache re-asks LOOKUP and GETATTR, and
# each refreshed inode asks again for its security.capability.
REFSRV_CACHE=--timeout=86400

# mount_config NAME [SERVER-ARGS...]: mount NAME's server on $M (or
# nothing, for the ceiling), with SERVER-ARGS added (a sweep's setting).
# Sets DIR to the directory fio runs in and PID to the server's process.
PID= DIR=
mount_config() {
	config=$1
	shift
	case "$config" in
	ceiling) DIR=$B; return 0 ;;
	refsrv-*-unlinked)
		mode=${config#refsrv-}
		"$SRV" --foreground --verbose $REFSRV_CACHE --mode="${mode%-unlinked}" --unlinked \
			"$@" "$B" "$M" 2>"$W/server.log" & ;;
	refsrv-*-coop | refsrv-*-defer | refsrv-*-sqpoll)
		mode=${config#refsrv-}
		"$SRV" --foreground --verbose $REFSRV_CACHE --mode="${mode%-*}" \
			--ring-setup="${mode##*-}" "$@" "$B" "$M" 2>"$W/server.log" & ;;
	refsrv-*-nbufs*)
		mode=${config#refsrv-}
		"$SRV" --foreground --verbose $REFSRV_CACHE --mode="${mode%-nbufs*}" \
			--nbufs="${mode##*-nbufs}" "$@" "$B" "$M" 2>"$W/server.log" & ;;
	refsrv-*) "$SRV" --foreground --verbose $REFSRV_CACHE --mode="${config#refsrv-}" "$@" \
		"$B" "$M" 2>"$W/server.log" & ;;
	passthrough_hp) "$PEER" --foreground --nopassthrough -o io_uring "$B" "$M" >"$W/server.log" 2>&1 & ;;
	*) die "no configuration called '$config' (bench/servers.sh lists them)" ;;
	esac
	PID=$!
	for _ in $(seq 100); do
		grep -q " $M fuse" /proc/mounts && { stat "$M" >/dev/null; DIR=$M; return 0; }
		sleep 0.1
	done
	die "$config did not mount: $(tail -n 3 "$W/server.log")"
}

# unmount_config RESULT-DIR: note the server's memory there, unmount it.
unmount_config() {
	rm -f "$DIR"/write.*
	[ -n "$PID" ] || return 0
	# What the server holds, read while it still runs: RSS and pinned pages,
	# and (the reference server) the payload memory it gave each queue and,
	# in the pinned modes, what the kernel pinned of it.
	grep -E '^(VmRSS|VmPin):' "/proc/$PID/status" >"$1/memory.txt"
	sed -n 's/^fuse-uring-server: \(memory per queue: .*\)/\1/p' "$W/server.log" >>"$1/memory.txt"
	sed -n 's/^fuse-uring-server: \(pinned memory: .*\)/\1/p' "$W/server.log" >>"$1/memory.txt"
	umount "$M" || die "umount $M failed"
	wait "$PID"
	PID=
}
