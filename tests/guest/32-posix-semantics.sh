#!/bin/sh
# Description: ownership and permission semantics, measured against the
# kernel's own tmpfs. tests/posix-semantics.py makes the same calls, as an
# unprivileged user, in a directory on the reference server's mount (a root
# server, --allow-other, backed by tmpfs) and in a directory on tmpfs
# directly: create, chmod, chown, utimensat (UTIME_NOW, UTIME_OMIT), the
# clearing of set-user-ID and set-group-ID bits on write and chmod, what a
# set-group-ID directory gives what is made in it, and the sticky bit. Each
# line of the two transcripts must be the same.
. "$LAB_TOP/tests/lib.sh"
cd "$LAB_TOP" || exit 1

USER_ID=4242
PROG=$LAB_TOP/tests/posix-semantics.py
refsrv_setup /tmp/posix
DIRECT=$W/direct
trap 'refsrv_cleanup posix' EXIT

if ! refsrv_start "$W/server.log" --allow-other; then
	fail "server mounts $B on $M" "$(tail -n 3 "$W/server.log" | tr '\n' ' ')"
	exit 1
fi
pass "server mounts $B on $M, for every user"

for d in "$M/t" "$DIRECT/t"; do
	mkdir -p "$d" && chmod 0777 "$d" && /usr/bin/python3 "$PROG" "$d" prepare ||
		fail "prepare $d" "python3 $PROG $d prepare failed"
done
as_user() { setpriv --reuid=$USER_ID --regid=$USER_ID --clear-groups -- "$@"; }
as_user timeout -k 5 120 /usr/bin/python3 "$PROG" "$DIRECT/t" >"$W/direct.txt" 2>&1
as_user timeout -k 5 120 /usr/bin/python3 "$PROG" "$M/t" >"$W/mount.txt" 2>&1
# The program ran to its end on tmpfs (an error in it would otherwise be
# the same on both sides, and pass).
check_eq "the calls ran to the end on tmpfs" "done" "$(tail -n 1 "$W/direct.txt")"
check_eq "the transcripts have the same number of lines" \
	"$(wc -l <"$W/direct.txt")" "$(wc -l <"$W/mount.txt")"
# One check per call: what tmpfs gave, the mount must give.
n=0
while IFS= read -r want; do
	n=$((n + 1))
	got=$(sed -n "${n}p" "$W/mount.txt")
	[ "$want" = done ] && continue
	check_eq "as on tmpfs: ${want%% => *}" "$want" "$got"
done <"$W/direct.txt"
[ -n "${LAB_RUN:-}" ] && cp "$W/direct.txt" "$LAB_RUN/posix-direct.txt" &&
	cp "$W/mount.txt" "$LAB_RUN/posix-mount.txt"
refsrv_stop "posix semantics"
exit 0
