# tests/lib.sh: the one way every check in this repo reports a result.
#
# Sourced by guest test scripts (tests/guest/*.sh) and by each lab's `check`.
# Every check prints exactly one line, "ok NAME" or "not ok NAME: WHY"; the
# host (scripts/check) counts those lines, so a check that never runs can
# never be counted as a pass.

# report LINE: print a result line, and append it to $LAB_RESULTS when the
# suite runner (tests/guest/run) collects them for the host.
report() {
	printf '%s\n' "$1"
	if [ -n "${LAB_RESULTS:-}" ]; then printf '%s\n' "$1" >>"$LAB_RESULTS"; fi
}

# pass NAME / fail NAME WHY: report a result decided by the caller.
pass() { report "ok $1"; }
fail() { report "not ok $1: $2"; FAILED=$((${FAILED:-0} + 1)); }

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

# fio_verify_matrix DIR LABEL: the data check every server must pass. Writes
# then reads back DIR/fio.dat with --verify=crc32c, direct and buffered,
# sequential (128k) and random (4k); one check per job. Each read job
# verifies the checksums its write job stored, so every byte read is checked.
# FIO_SIZE (default 16M) sets the file size.
fio_verify_matrix() {
	dir=$1 label=$2
	for direct in 1 0; do
		kind=$([ $direct = 1 ] && echo direct || echo buffered)
		for job in write:128k read:128k randwrite:4k randread:4k; do
			rw=${job%:*} bs=${job#*:}
			out=$(fio --name="$rw-$kind" --filename="$dir/fio.dat" \
				--size="${FIO_SIZE:-16M}" --ioengine=psync --fallocate=none \
				--verify=crc32c --rw="$rw" --bs="$bs" --direct=$direct 2>&1)
			status=$?
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
