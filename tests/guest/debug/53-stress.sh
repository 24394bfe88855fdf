#!/bin/sh
# Description: a bounded stress run in every mode (issue #10): for
# STRESS_SECS per mode, at the same time, four fio jobs with
# --verify=crc32c (two writers, random overwrites of their own files,
# direct with 64 KiB blocks and buffered with 4 KiB blocks, each checking
# what it wrote as it goes, --verify_backlog; two readers, random direct and
# buffered reads of files laid out before, each block checked) and a
# metadata churn loop (mkdir, create, rename, read back, unlink, rmdir in a
# subtree, keeping every fifth round's directory). Then every job must report no
# error, the churn must have seen no failed operation, every block of every
# fio file must read back valid (a sequential --verify=crc32c read of each,
# after dropping the caches), and the whole tree seen through the mount
# (names, sizes and sha256 of every file) must equal the backing dir's.
# Runs on any kernel of the series; the debug kernel adds KASAN, lockdep
# and kmemleak to the same load.
. "$LAB_TOP/tests/lib.sh"
cd "$LAB_TOP" || exit 1
W=/tmp/stress
. "$LAB_TOP/tests/guest/debug/common.sh"

STRESS_SECS=${STRESS_SECS:-60}	# per mode: five minutes over the five modes
FSIZE=2M			# each fio file

cleanup() {
	[ -n "${FIO_PID:-}" ] && kill -9 "$FIO_PID" 2>/dev/null
	[ -n "${CHURN_PID:-}" ] && kill -9 "$CHURN_PID" 2>/dev/null
	refsrv_cleanup stress
}
trap cleanup EXIT
marker=$(log_marker 53-stress-start)
cd "$W" || exit 1	# fio may leave verify state files in its folder

# The four files and the block size each is written and read with (fio
# checks a block against the size it was written with).
FILES="w1:64k:1 w2:4k:0 r1:64k:1 r2:64k:0"	# name:bs:direct

# fio_jobs ARGS...: run fio with ARGS; every job must end with err= 0.
# Output in $W/fio-$LABEL.log.
fio_ok() {
	label=$1
	shift
	timeout $((STRESS_SECS + 120)) fio --ioengine=psync --fallocate=none \
		--verify=crc32c --verify_state_save=0 "$@" >"$W/fio-$label.log" 2>&1
	st=$?
	jobs=$(grep -c '(groupid=' "$W/fio-$label.log")
	okjobs=$(grep -c '(groupid=[0-9]*, jobs=1): err= 0:' "$W/fio-$label.log")
	if [ $st = 0 ] && [ "$jobs" -gt 0 ] && [ "$jobs" = "$okjobs" ]; then
		pass "$mode: $label: $jobs fio jobs, err= 0, --verify=crc32c"
	else
		fail "$mode: $label: every fio job ends with err= 0, --verify=crc32c" \
			"exit $st, $okjobs of $jobs jobs without error: $(grep -E 'verify|err=' "$W/fio-$label.log" | grep -v 'err= 0' | head -n 2 | tr '\n' ' ')"
	fi
	[ -n "${LAB_RUN:-}" ] && cp "$W/fio-$label.log" "$LAB_RUN/stress-$mode-fio-$label.log"
}

# churn SECONDS: the metadata loop, on $M/churn. Each round: mkdir of a
# directory with five subdirectories, ten files created (shell built-ins,
# no process to start: under TCG that is what costs), renamed into a
# subdirectory and read back, the directory renamed; then, except every
# fifth round, all of it removed (rm -r: unlink and rmdir). Counts rounds
# and failed operations in $W/churn.out.
churn() {
	end=$(($(date +%s) + $1))
	k=0 bad=0
	mkdir "$M/churn" || bad=$((bad + 1))
	while [ "$(date +%s)" -lt $end ]; do
		d=$M/churn/d$k
		mkdir "$d" "$d/s0" "$d/s1" "$d/s2" "$d/s3" "$d/s4" || bad=$((bad + 1))
		names=
		for j in 0 1 2 3 4 5 6 7 8 9; do
			echo "round $k file $j" >"$d/f$j" || bad=$((bad + 1))
			names="$names $d/f$j"
		done
		# shellcheck disable=SC2086
		mv $names "$d/s$((k % 5))/" || bad=$((bad + 1))
		for j in 0 1 2 3 4 5 6 7 8 9; do
			line=
			read -r line <"$d/s$((k % 5))/f$j" || bad=$((bad + 1))
			[ "$line" = "round $k file $j" ] || bad=$((bad + 1))
		done
		mv "$d" "$M/churn/e$k" || bad=$((bad + 1))
		if [ $((k % 5)) != 0 ]; then
			rm -r "$M/churn/e$k" || bad=$((bad + 1))
		fi
		k=$((k + 1))
	done
	echo "$k $bad" >"$W/churn.out"
}

# tree DIR: every name under DIR with its type and size, and the sha256 of
# every file, sorted.
tree() {
	(cd "$1" && find . -printf '%y %s %p\n' | grep -v '^d ' | sort &&
		find . -type d | sort && find . -type f | sort | xargs -r sha256sum)
}

BASE_PINS=$(pins)
echo "# $STRESS_SECS s of stress per mode, modes: $MODES"

for mode in $MODES; do
	rm -rf "${B:?}"/*
	start_mode "$mode" "$mode" "$W/$mode.log" || continue

	# Lay out every file with verify headers, each with its own block size.
	lay=
	for f in $FILES; do
		n=${f%%:*} rest=${f#*:}
		lay="$lay --name=lay-$n --filename=$M/$n.dat --size=$FSIZE --rw=write --bs=${rest%:*} --direct=${rest#*:} --do_verify=0"
	done
	# shellcheck disable=SC2086
	fio_ok layout $lay

	# The load: four fio jobs and the churn, all at once.
	load=
	for f in $FILES; do
		n=${f%%:*} rest=${f#*:}
		case $n in
		w*) rw="randwrite --verify_backlog=16" ;;
		r*) rw=randread ;;
		esac
		load="$load --name=$n --filename=$M/$n.dat --size=$FSIZE --rw=$rw --bs=${rest%:*} --direct=${rest#*:} --time_based --runtime=$STRESS_SECS"
	done
	churn "$STRESS_SECS" &
	CHURN_PID=$!
	# shellcheck disable=SC2086
	fio_ok stress $load
	if wait_gone "$CHURN_PID" 60; then
		read -r rounds bad <"$W/churn.out"
		if [ "$bad" = 0 ] && [ "$rounds" -gt 0 ]; then
			pass "$mode: metadata churn beside fio: $rounds rounds, no failed operation"
		else
			fail "$mode: metadata churn beside fio: no failed operation" "$bad failed in $rounds rounds"
		fi
	else
		fail "$mode: metadata churn ends" "still running 60 s after its time"
		kill -9 "$CHURN_PID"
	fi
	wait "$CHURN_PID" 2>/dev/null
	CHURN_PID=

	# Everything, read again from the server after dropping the caches:
	# each block of each fio file, and the whole tree against the backing dir.
	sync
	echo 3 >/proc/sys/vm/drop_caches
	all=
	for f in $FILES; do
		n=${f%%:*} rest=${f#*:}
		all="$all --name=check-$n --filename=$M/$n.dat --size=$FSIZE --rw=read --bs=${rest%:*} --direct=${rest#*:}"
	done
	# shellcheck disable=SC2086
	fio_ok check-all $all
	tree "$M" >"$W/tree-mount"
	tree "$B" >"$W/tree-backing"
	kept=$(grep -c '^\./churn/e[0-9]*$' "$W/tree-mount")
	if cmp -s "$W/tree-mount" "$W/tree-backing" && [ -s "$W/tree-mount" ]; then
		pass "$mode: the tree through the mount equals the backing dir ($(grep -c . "$W/tree-mount") lines, $kept kept directories)"
	else
		fail "$mode: the tree through the mount equals the backing dir" \
			"$(diff "$W/tree-mount" "$W/tree-backing" | grep '^[<>]' | head -n 3 | tr '\n' ' ')"
	fi
	check_eq "$mode: the churn kept every fifth directory" "$(((${rounds:-0} + 4) / 5))" "$kept"
	refsrv_stop "$mode"
	pins_back "$mode" "$BASE_PINS"
	took "$mode"
done

kernel_clean "stress" "$marker"
exit 0
