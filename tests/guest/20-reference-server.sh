#!/bin/sh
# Description: the reference server (build/reference-server/fuse-uring-server)
# in iovec mode on the guest kernel: it refuses clearly without enable_uring,
# mounts a tmpfs backing directory, passes a coreutils round trip and fio
# --verify=crc32c (direct and buffered, sequential and random), gets every
# request after FUSE_INIT over io_uring on the queue of the calling CPU,
# survives kill -9 during fio (ENOTCONN, no hang, umount works, next mount
# works) and ends cleanly on umount, SIGINT, SIGTERM and an aborted connection.
# With --ring-setup=coop, defer and sqpoll, in iovec and zero-copy mode, a
# file goes through intact and the kernel logs no warning; an unknown
# --ring-setup is refused.
# The signal, abort and daemon cases run without --mode: --mode=auto, which
# picks bufring on the v2 series' kernel and says so; a queue-memory failure
# in auto mode, which comes after the mount, still leaves nothing mounted.
. "$LAB_TOP/tests/lib.sh"
cd "$LAB_TOP" || exit 1

PARAM=/sys/module/fuse/parameters/enable_uring
FIO_SIZE=16M
refsrv_setup /tmp/refsrv	# tmpfs in the guest

# A last-resort cleanup if a check goes wrong. The server logs go back to
# the host with the run folder.
cleanup() { refsrv_cleanup refsrv; }
trap cleanup EXIT

# cpus LIST: "0-2,5" -> "0 1 2 5" (the sysfs CPU list format).
cpus() {
	echo "$1" | tr ',' '\n' | while IFS=- read -r lo hi; do
		seq "$lo" "${hi:-$lo}"
	done | tr '\n' ' '
}
# One FUSE queue per possible CPU; the kernel queues on the caller's CPU.
NQ=$(possible_cpu_count)
ONLINE=$(cpus "$(cat /sys/devices/system/cpu/online)")
QMAX=$((NQ - 1))

# ---- refusals: one clear message, non-zero exit, nothing mounted ----------

echo 0 >"$PARAM"
check_fails_with "server refuses to start with enable_uring=0, naming the fix" \
	"echo 1 > $PARAM" "$SRV" --foreground "$B" "$M"
check_eq "no mount left after the refusal" "none" "$(mount_type "$M")"
echo 1 >"$PARAM"

# Queue memory is allocated before the mount, so running out of it fails
# the start instead of hanging a mount whose FUSE_INIT promised io_uring.
# 1024 entries x 16 MiB is 16 GiB a queue: more than the guest has. (The
# ASan build would abort instead of returning NULL without the option.)
check_fails_with "queue memory that cannot be allocated fails before mounting" \
	"allocate queue memory: Cannot allocate memory" \
	env ASAN_OPTIONS=allocator_may_return_null=1 \
	"$SRV" --foreground --mode=iovec --queue-depth=1024 --payload-size=16M "$B" "$M"
check_eq "no mount left after the memory failure" "none" "$(mount_type "$M")"
# --mode=auto builds the queues once FUSE_INIT named the kernel, after the
# mount but before the reply: the reply refuses the connection instead.
check_fails_with "--mode=auto: queue memory that cannot be allocated fails the start" \
	"allocate queue memory: Cannot allocate memory" \
	env ASAN_OPTIONS=allocator_may_return_null=1 \
	"$SRV" --foreground --queue-depth=1024 --payload-size=16M "$B" "$M"
check_eq "--mode=auto: no mount left after the memory failure" "none" "$(mount_type "$M")"

check_fails_with "server rejects an unknown --mode" "unknown --mode 'turbo'" \
	"$SRV" --mode=turbo "$B" "$M"
# REFSRV_MODES: what a build with fewer rungs knows (tests/guest/26)
check_fails_with "an unknown --mode names the modes built in" \
	"supported: ${REFSRV_MODES:-auto, iovec, bufring, pinned-headers, pinned-buffers, zero-copy, pool, pool-fixed, pool-zero-copy})" \
	"$SRV" --mode=turbo "$B" "$M"

# ---- first mount, with --trace ------------------------------------------------

LOG=$W/server.log
if ! refsrv_start "$LOG" --mode=iovec --trace --verbose --allow-other; then
	fail "server mounts $B on $M" "$(tail -n 3 "$LOG" | tr '\n' ' ')"
	exit 1
fi
pass "server mounts $B on $M"
check_eq "mount type is fuse.fuse-uring-server" "fuse.fuse-uring-server" "$(mount_type "$M")"
check_eq "one queue per possible CPU ($NQ), default depth 8" "1" \
	"$(grep -c ": $NQ queues x 8 entries, payload 1048576 B, mode iovec$" "$LOG")"
check_eq "start-up line: 8 payload buffers of 1 MiB per queue, one per entry" "1" \
	"$(grep -c ': memory per queue: payload 8388608 B (8 x 1048576 B), headers 2304 B, mode iovec$' "$LOG")"
want=$(for q in $(seq 0 $QMAX); do printf 'fuse-uring-q%s:%s ' $q $q; done)
check_eq "each queue thread is pinned to its CPU" "$want" \
	"$(for t in /proc/"$SRV_PID"/task/*; do
		case $(cat "$t/comm") in
		fuse-uring-q*) printf '%s:%s\n' "$(cat "$t/comm")" \
			"$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "$t/status")" ;;
		esac
	done | sort -V | tr '\n' ' ')"
check_eq "each of the $NQ queues registered 8 entries" "$NQ" \
	"$(grep -c '^trace ring q=[0-9]* registered 8 entries (mode iovec, flags 0: iov\[0\] 288 B, iov\[1\] 1048576 B)$' "$LOG")"

# ---- coreutils round trip ------------------------------------------------------

head -c 8388608 /dev/urandom >"$W/random.bin"
check "mkdir on the mount" mkdir "$M/dir"
check_eq "mkdir reaches the backing dir" "directory" "$(stat -c %F "$B/dir")"
check "cp of an 8 MiB random file onto the mount" cp "$W/random.bin" "$M/dir/random.bin"
check "cmp: the mount reads back what was written" cmp "$W/random.bin" "$M/dir/random.bin"
check "cmp: the backing copy is identical" cmp "$W/random.bin" "$B/dir/random.bin"
check_eq "ls -l shows size 8388608" "8388608" \
	"$(ls -l "$M/dir/random.bin" | awk '{ print $5 }')"
check_eq "WRITE bytes over the ring add up to the file (8388608)" "8388608" \
	"$(awk '/^trace ring .* op=WRITE / { for (i = 1; i <= NF; i++) if ($i ~ /^in=/) s += substr($i, 4) } END { print s + 0 }' "$LOG")"
# coreutils mv asks renameat2(RENAME_NOREPLACE): FUSE_RENAME2;
# busybox mv calls rename(2): FUSE_RENAME.
check "mv within the mount" mv "$M/dir/random.bin" "$M/dir/renamed.bin"
check "busybox mv (plain rename) within the mount" busybox mv "$M/dir/renamed.bin" "$M/moved.bin"
check_eq "mv renamed the backing file" "gone there" \
	"$( [ -e "$B/dir/random.bin" ] && echo still || echo gone) $( [ -e "$B/moved.bin" ] && echo there || echo missing)"
check "the moved file still has the same bytes" cmp "$W/random.bin" "$M/moved.bin"
check_eq "ls lists the root" "dir moved.bin" "$(ls "$M" | tr '\n' ' ' | sed 's/ $//')"

# The namespace beyond files and directories (FUSE_SYMLINK, READLINK, LINK,
# MKNOD): what a git checkout or a tarball with links needs.
check "ln -s on the mount (FUSE_SYMLINK)" ln -s moved.bin "$M/link"
check_eq "readlink reads the target back (FUSE_READLINK)" "moved.bin" "$(readlink "$M/link")"
check_eq "the backing dir holds the same symlink" "moved.bin" "$(readlink "$B/link")"
check "the symlink resolves through the mount" cmp "$W/random.bin" "$M/link"
check "ln makes a second name (FUSE_LINK)" ln "$M/moved.bin" "$M/hard"
check_eq "both names count as links, on the mount and behind it" "2 2" \
	"$(stat -c %h "$M/hard") $(stat -c %h "$B/moved.bin")"
check "mkfifo on the mount (FUSE_MKNOD)" mkfifo "$M/fifo"
check_eq "the fifo is a fifo, on the mount and behind it" "fifo fifo" \
	"$(stat -c %F "$M/fifo" | cut -d' ' -f1) $(stat -c %F "$B/fifo" | cut -d' ' -f1)"
check_fails_with "ln -s onto an existing name passes EEXIST through" \
	"File exists" ln -s x "$M/link"
# Extended attributes pass through (FUSE_SETXATTR, GETXATTR, LISTXATTR,
# REMOVEXATTR), where the backing file system has user.* ones.
xattr() { /usr/bin/python3 -c 'import os, sys
op, path = sys.argv[1], sys.argv[2]
try:
    if op == "set": os.setxattr(path, "user.lab", sys.argv[3].encode())
    elif op == "get": print(os.getxattr(path, "user.lab").decode())
    elif op == "list": print(" ".join(os.listxattr(path)))
    elif op == "remove": os.removexattr(path, "user.lab")
    # a symlink itself: trusted.*, since the VFS refuses user.* on links
    elif op == "lget": print(os.getxattr(path, "trusted.lab", follow_symlinks=False).decode())
except OSError as e: print(os.strerror(e.errno)); sys.exit(1)' "$@"; }
if ! xattr set "$B/moved.bin" probe >/dev/null; then
	skip "extended attributes pass through" "the backing tmpfs has no user.* xattrs (CONFIG_TMPFS_XATTR)"
else
	xattr remove "$B/moved.bin"
	check "setxattr on the mount (FUSE_SETXATTR)" xattr set "$M/moved.bin" value1
	check_eq "getxattr on the mount and behind it (FUSE_GETXATTR)" "value1 value1" \
		"$(xattr get "$M/moved.bin") $(xattr get "$B/moved.bin")"
	check_eq "listxattr on the mount (FUSE_LISTXATTR)" "user.lab" "$(xattr list "$M/moved.bin")"
	check "removexattr on the mount (FUSE_REMOVEXATTR)" xattr remove "$M/moved.bin"
	check_eq "then getxattr is ENODATA, passed through" "No data available" \
		"$(xattr get "$M/moved.bin")"
	# A symlink's own attributes cannot be reached without a race (ops.c,
	# xattr_path(), by the type remembered at LOOKUP): EOPNOTSUPP.
	ln -s moved.bin "$B/xattr-link"
	check_eq "getxattr of a symlink itself is EOPNOTSUPP" "Operation not supported" \
		"$(xattr lget "$M/xattr-link")"
	rm -f "$B/xattr-link"
fi
# Space and holes (FUSE_FALLOCATE, LSEEK), copies without a round trip
# through the caller (COPY_FILE_RANGE_64), the birth time (STATX).
check "fallocate -l 1MiB on the mount (FUSE_FALLOCATE)" fallocate -l 1048576 "$M/space"
check_eq "the space is there, on the mount and behind it" "1048576 1048576" \
	"$(stat -c %s "$M/space") $(stat -c %s "$B/space")"
# 4 KiB of data, then a hole to 1 MiB. Without LSEEK the kernel would
# answer SEEK_HOLE itself, with the end of the file.
head -c 4096 /dev/urandom >"$M/sparse"
truncate -s 1048576 "$M/sparse"
check_eq "SEEK_DATA and SEEK_HOLE come from the backing file (FUSE_LSEEK)" "0 4096" \
	"$(/usr/bin/python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
print(os.lseek(fd, 0, os.SEEK_DATA), os.lseek(fd, 0, os.SEEK_HOLE))' "$M/sparse")"
check "copy_file_range(2) on the mount (FUSE_COPY_FILE_RANGE_64)" /usr/bin/python3 -c 'import os, sys
src, dst = os.open(sys.argv[1], os.O_RDONLY), os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT, 0o644)
left = os.fstat(src).st_size
while left:
    n = os.copy_file_range(src, dst, left)
    assert n > 0
    left -= n' "$M/moved.bin" "$M/copy.bin"
check "the copy has the same bytes" cmp "$W/random.bin" "$M/copy.bin"
# (tmpfs keeps a birth time: 0, "unknown", would not tell STATX worked)
check_eq "stat's birth time is the backing file's, and known (FUSE_STATX)" \
	"$(stat -c %W "$B/copy.bin") known" \
	"$(stat --cached=never -c %W "$M/copy.bin") $( [ "$(stat -c %W "$B/copy.bin")" != 0 ] && echo known || echo unknown)"
rm -f "$M/space" "$M/sparse" "$M/copy.bin"
# New names belong to whoever made them: a root server creates as the caller.
# --allow-other lets other users reach the mount at all.
check_eq "--allow-other: the mount has allow_other and default_permissions" "yes yes" \
	"$(awk -v m="$M" '$2 == m { print ($4 ~ /allow_other/ ? "yes" : "no"), ($4 ~ /default_permissions/ ? "yes" : "no") }' /proc/mounts)"
mkdir -m 0777 "$M/open"
check "as uid 65534: touch, mkdir, ln -s and mkfifo on the mount" \
	setpriv --reuid=65534 --regid=65533 --clear-groups \
	sh -c 'touch "$1/f" && mkdir "$1/d" && ln -s f "$1/s" && mkfifo "$1/p"' sh "$M/open"
check_eq "they belong to 65534:65533, behind the mount too" \
	"65534:65533 65534:65533 65534:65533 65534:65533" \
	"$(stat -c %u:%g "$B/open/f" "$B/open/d" "$B/open/s" "$B/open/p" | tr '\n' ' ' | sed 's/ $//')"
# A directory of group 4242, writable by the group only: a caller with 4242
# as a supplementary group may create in it. The kernel sends that group
# with the request (FUSE_CREATE_SUPP_GROUP), for the backing file system.
mkdir -m 0770 "$M/shared" && chgrp 4242 "$M/shared"
check "as uid 65534 with supplementary group 4242: touch in a 4242 dir" \
	setpriv --reuid=65534 --regid=65533 --groups=4242 touch "$M/shared/f"
check_eq "it belongs to 65534:65533" "65534:65533" "$(stat -c %u:%g "$B/shared/f")"
rm -rf "$M/shared"
# (refused by the kernel, default_permissions, before the server sees it)
check_fails_with "as uid 65534: creating in a root-only dir is EACCES" \
	"Permission denied" setpriv --reuid=65534 --regid=65533 --clear-groups touch "$M/dir/nope"
check_eq "and left nothing" "gone" "$( [ -e "$B/dir/nope" ] && echo still || echo gone)"
rm -rf "$M/open"
check "rm of the symlink, the second name and the fifo" rm "$M/link" "$M/hard" "$M/fifo"
check_eq "and only they are gone" "dir moved.bin" "$(ls "$M" | tr '\n' ' ' | sed 's/ $//')"
touch "$M/dir/keep"
check_fails_with "rmdir of a non-empty dir passes ENOTEMPTY through" \
	"Directory not empty" rmdir "$M/dir"
check_fails_with "a missing name is ENOENT" "No such file or directory" cat "$M/nope"
# O_TMPFILE: a nameless file (FUSE_TMPFILE), which linkat(2) can name.
check_eq "open(O_TMPFILE), write, then linkat(2) gives it a name (FUSE_TMPFILE, LINK)" "tmp 1" \
	"$(/usr/bin/python3 -c 'import ctypes, os, sys
fd = os.open(sys.argv[1], os.O_TMPFILE | os.O_RDWR, 0o600)
os.write(fd, b"tmp")
# linkat(fd, "", AT_FDCWD, name, AT_EMPTY_PATH); os.link() would call link(2)
libc = ctypes.CDLL(None, use_errno=True)
if libc.linkat(fd, b"", -100, (sys.argv[1] + "/named").encode(), 0x1000):
    sys.exit(os.strerror(ctypes.get_errno()))
print(open(sys.argv[1] + "/named").read(), os.stat(sys.argv[1] + "/named").st_nlink)' "$M/dir" 2>&1)"
check_eq "the backing dir has it too" "tmp" "$(cat "$B/dir/named")"
rm -f "$M/dir/named"
# An opcode without a handler is answered ENOSYS, which the kernel
# remembers per opcode: for FSYNCDIR it then does nothing, and fsync(2) of
# a directory succeeds.
check_eq "an unimplemented op (FSYNCDIR): ENOSYS, after which fsync(2) of a directory succeeds" \
	"ok" "$(/usr/bin/python3 -c 'import os, sys
os.fsync(os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY))
print("ok")' "$M/dir")"
check "rm on the mount" rm "$M/moved.bin" "$M/dir/keep"
check_eq "rm removed the backing file" "gone" "$( [ -e "$B/moved.bin" ] && echo still || echo gone)"
check "rmdir on the mount" rmdir "$M/dir"
check_eq "df: the mount's size is the backing fs's" \
	"$(df -k --output=size "$B" | tail -n 1)" "$(df -k --output=size "$M" | tail -n 1)"
check_eq "df: the mount's source is the server" "fuse-uring-server" \
	"$(df --output=source "$M" | tail -n 1)"

# ---- the trace: FUSE_INIT on /dev/fuse, everything after it on the ring -------

check_eq "exactly one FUSE_INIT, read from /dev/fuse" "1" "$(grep -c '^trace dev op=INIT ' "$LOG")"
check_eq "FUSE_INIT is the first request" "dev op=INIT" \
	"$(grep -m 1 -E '^trace (dev|ring q=[0-9]+ ent=[0-9]+) op=' "$LOG" | awk '{ print $2, $3 }')"
check_eq "no request but FORGET/INTERRUPT on /dev/fuse after INIT" "" \
	"$(grep '^trace dev ' "$LOG" | grep -v -E ' op=(INIT|FORGET|BATCH_FORGET|INTERRUPT) ')"
# Each handled opcode arrived over the ring and succeeded at least once (an
# ENOSYS line would not do: the kernel falls back to its own code for
# COPY_FILE_RANGE, say); FSYNCDIR has no handler.
for op in LOOKUP GETATTR MKDIR CREATE OPEN WRITE READ FLUSH RELEASE OPENDIR \
	READDIR RELEASEDIR RENAME RENAME2 UNLINK RMDIR STATFS SYMLINK READLINK \
	LINK MKNOD FALLOCATE LSEEK COPY_FILE_RANGE_64 STATX TMPFILE FSYNCDIR; do
	want=0
	[ "$op" = FSYNCDIR ] && want=-38
	n=$(grep -c "^trace ring q=[0-$QMAX] ent=[0-7] op=$op unique=[0-9]* commit_id=[0-9]* arg=[0-9]* in=[0-9]* out=[0-9]* error=$want\$" "$LOG")
	if [ "$n" -gt 0 ]; then
		pass "$op arrived over io_uring, error=$want ($n)"
	else
		fail "$op arrived over io_uring, error=$want" "no 'trace ring ... op=$op ... error=$want' line"
	fi
done
check_eq "commit_id is the request's unique" "" \
	"$(awk '/^trace ring .* op=/ { u = c = ""; for (i = 1; i <= NF; i++) { if ($i ~ /^unique=/) u = substr($i, 8); if ($i ~ /^commit_id=/) c = substr($i, 11) } if (u != c) print }' "$LOG" | head -n 1)"

# The kernel picks the queue of the CPU the calling task runs on.
for cpu in $ONLINE; do
	echo "cpu $cpu" >"$B/on-cpu$cpu"
	before=$(wc -l <"$LOG")
	taskset -c "$cpu" cat "$M/on-cpu$cpu" >/dev/null
	queues=$(tail -n +"$((before + 1))" "$LOG" | sed -n 's/^trace ring q=\([0-9]*\) .*/\1/p' | sort -u | tr '\n' ' ')
	check_eq "a task on CPU $cpu is served by queue $cpu" "$cpu " "$queues"
	rm -f "$B/on-cpu$cpu"
done

# ---- fio with --verify=crc32c ------------------------------------------------

fio_verify_matrix "$M" "reference server"

# ---- kill -9 during fio ------------------------------------------------------

fio --name=killed --filename="$M/kill.dat" --size=$FIO_SIZE --ioengine=psync \
	--fallocate=none --rw=randrw --bs=4k --direct=1 --time_based --runtime=120 \
	>"$W/fio-kill.log" 2>&1 &
fio_pid=$!
# wait until fio is past laying out the file and doing I/O
i=0
while [ "$(stat -c %s "$B/kill.dat" 2>/dev/null || echo 0)" -lt 16777216 ] && [ $i -lt 600 ]; do
	sleep 0.1
	i=$((i + 1))
done
sleep 2
if kill -0 "$fio_pid" 2>/dev/null; then
	pass "fio is running on the mount before the kill"
else
	fail "fio is running on the mount before the kill" "$(tail -n 2 "$W/fio-kill.log" | tr '\n' ' ')"
fi
kill -9 "$SRV_PID"
killed=$(date +%s)
if wait_gone "$fio_pid" 60; then
	pass "fio ends after the server is killed ($(($(date +%s) - killed)) s)"
else
	fail "fio ends after the server is killed" "still running 60 s later"
	kill -9 "$fio_pid" 2>/dev/null
fi
wait "$fio_pid"
fio_status=$?
# Which error fio's request gets depends on where the kill caught it: one
# the dead server held ends with ECONNABORTED (103, ring teardown), one
# whose copy to the ring was still pending with ECANCELED (125, the task
# work cancelled with the thread), one sent after the abort with ENOTCONN
# (107). Anything else (EIO, a hang, success) is a failure.
check_eq "fio fails with ECONNABORTED, ECANCELED or ENOTCONN" "1 yes" \
	"$fio_status $(grep -q -E 'err=(103|107|125)/' "$W/fio-kill.log" && echo yes || echo no)"
wait "$SRV_PID" 2>/dev/null
SRV_PID=
check_fails_with "the dead mount reports ENOTCONN" "Transport endpoint is not connected" \
	timeout 10 stat "$M"
check_fails_with "ls on the dead mount does not hang" "Transport endpoint is not connected" \
	timeout 10 ls "$M"
check "umount of the dead mount works" timeout 10 umount "$M"
check_eq "nothing mounted at $M" "none" "$(mount_type "$M")"

# ---- a second mount: another depth, ended by umount --------------------------

LOG2=$W/server2.log
if refsrv_start "$LOG2" --mode=iovec --trace --queue-depth=4 --payload-size=128K; then
	pass "a second mount after kill -9 works"
	check_eq "--queue-depth=4 gives 4 entries per queue" "$NQ" \
		"$(grep -c '^trace ring q=[0-9]* registered 4 entries ' "$LOG2")"
	echo "second mount" >"$M/hello"
	check_eq "read back through the second mount" "second mount" "$(cat "$M/hello")"
	# max_write = --payload-size: a 1 MiB write comes as 8 WRITEs of 128 KiB
	before=$(wc -l <"$LOG2")
	dd if=/dev/zero of="$M/big" bs=1M count=1 oflag=direct 2>/dev/null
	check_eq "--payload-size=128K: 1 MiB arrives as 8 WRITEs of 131072" "8 x 131072" \
		"$(tail -n +"$((before + 1))" "$LOG2" | awk '/^trace ring .* op=WRITE .* error=0$/ { for (i = 1; i <= NF; i++) if ($i ~ /^in=/) { n++; v[substr($i, 4)]++ } } END { for (k in v) s = s k " "; print n " x " s }' | sed 's/ $//')"
	check_eq "entry ids stay below the depth (0-3)" "" \
		"$(grep '^trace ring q=[0-9]* ent=' "$LOG2" | grep -v '^trace ring q=[0-9]* ent=[0-3] ')"
	check "umount from outside" umount "$M"
	if wait_gone "$SRV_PID" 20; then
		wait "$SRV_PID"
		check_eq "server exits 0 after umount" "0" "$?"
	else
		fail "server exits after umount" "still running 20 s later"
	fi
	SRV_PID=
else
	fail "a second mount after kill -9 works" "$(tail -n 3 "$LOG2" | tr '\n' ' ')"
fi

# ---- SIGINT and SIGTERM: the server unmounts and exits 0 -----------------------

for sig in INT TERM; do
	if ! refsrv_start "$W/server-$sig.log"; then
		fail "mount for SIG$sig" "$(tail -n 3 "$W/server-$sig.log" | tr '\n' ' ')"
		continue
	fi
	echo data >"$M/file"
	kill -"$sig" "$SRV_PID"
	if wait_gone "$SRV_PID" 20; then
		wait "$SRV_PID"
		check_eq "SIG$sig: server exits 0" "0" "$?"
	else
		fail "SIG$sig: server exits" "still running 20 s later"
	fi
	SRV_PID=
	check_eq "SIG$sig: the server unmounted" "none" "$(mount_type "$M")"
	check_eq "SIG$sig: data stays in the backing dir" "data" "$(cat "$B/file")"
done

# A busy mount: MNT_DETACH takes it out of the tree at once, and closing
# /dev/fuse then aborts the connection under the file still open.
if refsrv_start "$W/server-busy.log"; then
	echo busy >"$M/busy"
	sleep 300 <"$M/busy" &
	holder=$!
	# the child opens the file after the fork: wait until it holds it
	i=0
	while [ "$(readlink "/proc/$holder/fd/0")" != "$M/busy" ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	check_eq "a process holds a file open on the mount" "$M/busy" \
		"$(readlink "/proc/$holder/fd/0")"
	kill -TERM "$SRV_PID"
	if wait_gone "$SRV_PID" 20; then
		wait "$SRV_PID"
		check_eq "SIGTERM with a file open: server exits 0" "0" "$?"
	else
		fail "SIGTERM with a file open: server exits" "still running 20 s later"
	fi
	SRV_PID=
	check_eq "SIGTERM with a file open: the mount is detached" "none" "$(mount_type "$M")"
	check_fails_with "the open file's connection is gone (ENOTCONN)" \
		"Transport endpoint is not connected" timeout 10 cat "/proc/$holder/fd/0"
	kill "$holder" 2>/dev/null
	wait "$holder" 2>/dev/null
else
	fail "mount for the busy-SIGTERM test" "$(tail -n 3 "$W/server-busy.log" | tr '\n' ' ')"
fi

# ---- the kernel aborts the connection (fusectl) ----------------------------

mkdir -p /sys/fs/fuse/connections 2>/dev/null
mount -t fusectl none /sys/fs/fuse/connections 2>/dev/null
if refsrv_start "$W/server-abort.log"; then
	conn=$(mountpoint -d "$M" | cut -d: -f2)
	if [ -w "/sys/fs/fuse/connections/$conn/abort" ]; then
		echo 1 >"/sys/fs/fuse/connections/$conn/abort"
		if wait_gone "$SRV_PID" 20; then
			wait "$SRV_PID"
			check_eq "abort: server exits 0" "0" "$?"
		else
			fail "abort: server exits" "still running 20 s later"
		fi
		check_eq "abort: the server removed the dead mount" "none" "$(mount_type "$M")"
	else
		fail "abort: fusectl has connection $conn" "no /sys/fs/fuse/connections/$conn/abort"
	fi
	SRV_PID=
else
	fail "mount for the abort test" "$(tail -n 3 "$W/server-abort.log" | tr '\n' ' ')"
fi

# ---- --ring-setup: the same server on rings created another way -------------

check_fails_with "an unknown --ring-setup is refused, naming the valid ones" \
	"unknown --ring-setup 'bogus' (supported: plain, coop, defer, sqpoll)" \
	"$SRV" --foreground --ring-setup=bogus "$B" "$M"
# In iovec mode, and in zero-copy mode, whose READ_FIXED/WRITE_FIXED and
# the kernel's buffer registrations go through the same ring. An
# iovec-only build (tests/guest/26) has no zero-copy.
rs_modes=iovec
case "${REFSRV_MODES:-zero-copy}" in *zero-copy*) rs_modes="iovec zero-copy" ;; esac
head -c $((3 * 1048576 + 12345)) /dev/urandom >"$W/rs.bin"
for setup in coop defer sqpoll; do
	for mode in $rs_modes; do
		rsn="--ring-setup=$setup, $mode"
		LOG=$W/ring-$setup-$mode.log
		rm -rf "${B:?}"/*
		marker=$(log_marker "20-ring-setup-$setup-$mode")
		if ! refsrv_start "$LOG" --mode="$mode" --ring-setup=$setup --verbose --trace; then
			fail "$rsn: mounts" "$(tail -n 3 "$LOG" | tr '\n' ' ')"
			continue
		fi
		pass "$rsn: mounts"
		check_eq "$rsn: --verbose names the ring setup" "1" \
			"$(grep -c "^fuse-uring-server: ring per queue: [0-9]* SQEs, [0-9]* CQEs, --ring-setup=$setup (" "$LOG")"
		# SQPOLL's kernel threads are the server's: iou-sqp-TID, one per ring
		[ "$setup" = sqpoll ] && check_eq "$rsn: one SQ thread per queue" "$NQ" \
			"$(cat /proc/"$SRV_PID"/task/*/comm | grep -c '^iou-sqp-[0-9]*$')"
		check "$rsn: cp a file onto the mount" cp "$W/rs.bin" "$M/rs.bin"
		check "$rsn: cmp: the backing file got every byte" cmp "$W/rs.bin" "$B/rs.bin"
		check "$rsn: cmp: an O_DIRECT read through the server gives them back" \
			sh -c "dd if='$M/rs.bin' bs=256k iflag=direct status=none | cmp - '$W/rs.bin'"
		[ "$mode" = zero-copy ] && check "$rsn: READs and WRITEs were zero-copied (zc=1)" \
			sh -c "grep -q ' op=READ .* error=0 buf=- zc=1\$' '$LOG' && grep -q ' op=WRITE .* error=0 buf=[0-9]* zc=1\$' '$LOG'"
		refsrv_stop "$rsn"
		# --trace also prints each entry's normal end at umount (ENOTCONN)
		check_eq "$rsn: no queue reported an error" "" \
			"$(grep -E 'queue [0-9]+( entry [0-9]+)?: ' "$LOG" | grep -v 'Transport endpoint is not connected$' | head -n 3)"
		kernel_log_clean "$rsn: the kernel logged no warning" "$marker"
	done
done

# ---- daemon mode: returns once mounted --------------------------------------

if "$SRV" "$B" "$M" 2>"$W/server-daemon.log"; then
	check_eq "daemon mode returns 0 with the mount ready" "fuse.fuse-uring-server" "$(mount_type "$M")"
	# no --mode: auto, the best this build has of what the kernel offers
	case "${REFSRV_MODES:-}" in
	"auto, iovec") want="FUSE over io_uring (stock Linux 7.2 or later): mode iovec" ;;
	*) want="FUSE_HAS_URING_BUFRING (Linux 7.2 with the v2 series, kernel-patches/): mode bufring" ;;
	esac
	check_eq "--mode=auto on the v2 series says what it picked" "1" \
		"$(grep -cF -- "--mode=auto: the kernel offers $want" "$W/server-daemon.log")"
	echo daemon >"$M/d"
	check_eq "daemon serves requests" "daemon" "$(cat "$M/d")"
	check "umount the daemon's mount" umount "$M"
	i=0
	while pgrep -x fuse-uring-serv >/dev/null && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
	check_eq "the daemon exits after umount" "" "$(pgrep -x fuse-uring-serv)"
else
	fail "daemon mode returns 0 with the mount ready" "$(tail -n 3 "$W/server-daemon.log" | tr '\n' ' ')"
fi

exit 0
