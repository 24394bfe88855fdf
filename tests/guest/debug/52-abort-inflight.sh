#!/bin/sh
# Description: the connection ends with requests in flight, in every mode
# (issue #10), three ways: the fusectl abort file
# (/sys/fs/fuse/connections/N/abort), a forced unmount (umount -f:
# MNT_FORCE aborts the connection, fuse's umount_begin) and a lazy one
# (umount -l: MNT_DETACH alone aborts nothing; the open files keep the
# connection until they are closed). Each time: fio (direct 1 MiB and
# buffered 4 KiB random reads and writes) does not hang: after an abort it
# ends within 30 s, each job completing or failing with ECONNABORTED,
# ENOTCONN or ECANCELED (the buffered one also EIO on a read: fio_ended in
# common.sh says why); after a lazy unmount it completes without an
# error; the server exits 0 by itself; nothing is left mounted; the pinned
# pages are unpinned; a fresh server mounts and passes fio
# --verify=crc32c. Runs on any kernel of the
# series; the debug kernel adds KASAN, lockdep and kmemleak.
. "$LAB_TOP/tests/lib.sh"
cd "$LAB_TOP" || exit 1
W=/tmp/abort-inflight
. "$LAB_TOP/tests/guest/debug/common.sh"

WAYS=${WAYS:-abort umount-f umount-l}

cleanup() {
	[ -n "${FIO_PID:-}" ] && kill -9 "$FIO_PID" 2>/dev/null
	refsrv_cleanup abort-inflight
}
trap cleanup EXIT
marker=$(log_marker 52-abort-inflight-start)

if ! mountpoint -q /sys/fs/fuse/connections; then
	fail "fusectl is mounted on /sys/fs/fuse/connections" "mount -t fusectl failed"
	exit 1
fi

# server_exits NAME: the server exits 0 by itself within 20 s.
server_exits() {
	if wait_gone "$SRV_PID" 20; then
		wait "$SRV_PID"
		check_eq "$1: the server exits 0 by itself" "0" "$?"
	else
		fail "$1: the server exits by itself" "still running 20 s later"
		kill -9 "$SRV_PID"
		wait "$SRV_PID" 2>/dev/null
	fi
	SRV_PID=
}

BASE_PINS=$(pins)
echo "# $NQ queues, ways: $WAYS; FOLL_PIN baseline $BASE_PINS pages"

for mode in $MODES; do
	start_mode "$mode" "$mode" "$W/$mode-start.log" || continue
	for way in $WAYS; do
		[ -n "$SRV_PID" ] || break
		tag="$mode $way"
		case $way in
		abort)
			conn=$(mountpoint -d "$M" | cut -d: -f2)
			fio_bg "$way" 60
			if [ -w "/sys/fs/fuse/connections/$conn/abort" ]; then
				echo 1 >"/sys/fs/fuse/connections/$conn/abort"
				pass "$tag: abort connection $conn with fio in flight"
			else
				fail "$tag: fusectl has connection $conn" "no /sys/fs/fuse/connections/$conn/abort"
			fi
			fio_ended "$way" "$tag"
			;;
		umount-f)
			fio_bg "$way" 60
			# MNT_FORCE aborts the connection first; the unmount itself
			# then finds the mount busy (fio's open files), unless the
			# server, seeing the abort, detached it already.
			uout=$(timeout 20 umount -f "$M" 2>&1)
			st=$?
			case "$st $uout" in
			"0 "*) how="unmounted" ;;
			*busy*) how="busy, as expected with open files" ;;
			*"not mounted"*) how="the server detached it first" ;;
			*) how= ;;
			esac
			if [ -n "$how" ]; then
				pass "$tag: umount -f with fio in flight returns ($how)"
			else
				fail "$tag: umount -f with fio in flight returns" "exit $st: $uout"
			fi
			fio_ended "$way" "$tag"
			;;
		umount-l)
			# A shorter run: MNT_DETACH alone aborts nothing, so fio
			# goes on through its open files and completes. Not too
			# short: on the debug kernel fio_started needs seconds to
			# see the jobs, and a 5 s run had ended by then.
			fio_bg "$way" 20
			check "$tag: umount -l with fio in flight" timeout 20 umount -l "$M"
			check_eq "$tag: the mount is detached at once" "none" "$(mount_type "$M")"
			fio_ended "$way" "$tag"
			check_eq "$tag: fio completes through its open files" "completed" "$FIO_HOW"
			;;
		esac
		server_exits "$tag"
		# An abort leaves a dead mount, which the server detaches
		# (statfs: ENOTCONN); otherwise umount must work now.
		[ "$(mount_type "$M")" = none ] || timeout 10 umount "$M"
		check_eq "$tag: nothing is left mounted" "none" "$(mount_type "$M")"
		check "$tag: the mount point answers" timeout 10 ls "$M"
		pins_back "$tag" "$BASE_PINS"
		echo "# $tag: fio $FIO_HOW"
		rm -f "$B"/*
		if start_mode "$tag: fresh" "$mode" "$W/$mode-$way.log"; then
			verified_io "$tag: fresh server"
		fi
	done
	[ -n "$SRV_PID" ] && refsrv_stop "$mode: last server"
	pins_back "$mode: after the last server" "$BASE_PINS"
	took "$mode"
done

kernel_clean "abort in flight" "$marker"
exit 0
