#!/bin/sh
# Description: a conformance comparison no one here wrote. libfuse's own
# file-system syscall suite, test/test_syscalls.c from Debian's fuse3 source
# (built by `make peer`), runs on three mounts in this boot: the reference
# server in iovec mode, in bufring mode, and passthrough_hp -o io_uring. Each
# mount gets a fresh tmpfs as its backing directory; the suite runs on it as
# root, then again as an unprivileged user, which adds its EACCES cases. One
# line per run says how many tests passed; the reference server must pass
# every test passthrough_hp passes, in both modes and as each user. A third
# run has root servers, mounted for every user, and the suite as the user. Every
# test's result is in the run folder (conformance.tsv), and each run's
# output (conformance-CONFIG-WHO.log).
#
# The whole suite is fast (1-2 s a run under TCG; the file, the servers'
# starts included, took 33-48 s on 2 idle cores), so make check runs all of it;
# `make conformance` runs this same file and prints the table
# (scripts/conformance). Some of the runs only, in the guest:
#   vm/run -- env CONFORMANCE_WHO=shared tests/guest/run tests/guest/31-conformance.sh
. "$LAB_TOP/tests/lib.sh"
cd "$LAB_TOP" || exit 1

SUITE=$LAB_TOP/build/libfuse/build/test/test_syscalls
PEER=$LAB_TOP/build/libfuse/build/example/passthrough_hp
SRV=${REFSRV:-$LAB_TOP/build/reference-server/fuse-uring-server}
# Short: the suite binds a UNIX socket on the mount (108-byte sun_path).
W=/tmp/conformance B=/tmp/conformance/backing M=/tmp/conformance/mnt
# CONFORMANCE_CONFIGS: the mounts (tests/guest/7.3/31 runs the pool's)
CONFIGS=${CONFORMANCE_CONFIGS:-iovec bufring passthrough_hp}
# the reference server's modes among them, held to passthrough_hp's results
OURS=$(for c in $CONFIGS; do [ "$c" = passthrough_hp ] || echo "$c"; done)
# root: the suite and the server as root. user: both as an unprivileged
# user. shared: the server as root, mounted for every user (allow_other),
# the suite as the unprivileged user: a root server that acts for its
# callers, or does not (the reference server's README, "Who acts").
WHO=${CONFORMANCE_WHO:-root user shared}
for who in $WHO; do
	case $who in
	root | user | shared) ;;
	*) fail "conformance: CONFORMANCE_WHO" "'$who' is not root, user or shared"; exit 1 ;;
	esac
done
# The unprivileged user: any uid without privileges will do; it needs no
# name in /etc/passwd.
USER_ID=4242
TSV=${LAB_RUN:-$W}/conformance.tsv
# A hung server must not hang make check.
SUITE_TIMEOUT=${CONFORMANCE_TIMEOUT:-300}

for prog in "$SUITE" "$PEER"; do
	if [ ! -x "$prog" ]; then
		fail "conformance: ${prog##*/} is built" "$prog missing: run 'make peer'"
		exit 1
	fi
done
if [ ! -x "$SRV" ]; then
	fail "conformance: the reference server is built" "$SRV missing: run 'make server'"
	exit 1
fi
echo 1 >/sys/module/fuse/parameters/enable_uring
# The user's servers open /dev/fuse: 0666, as udev's default rules make it
# on a distribution (devtmpfs makes it 0600).
FUSE_MODE=$(stat -c %a /dev/fuse)
chmod 0666 /dev/fuse
umount -l "$M" "$B" 2>/dev/null
rm -rf "$W"
mkdir -p "$B" "$M"
[ -n "${LAB_RUN:-}" ] || mkdir -p "${TSV%/*}"
: >"$TSV"

SPID=
cleanup() {
	[ -n "$SPID" ] && kill -9 "$SPID" 2>/dev/null
	umount -l "$M" 2>/dev/null
	umount -l "$B" 2>/dev/null
	rm -rf "$W"
	chmod "$FUSE_MODE" /dev/fuse
}
trap cleanup EXIT

# as WHO CMD...: run CMD as root, or as the unprivileged user: no
# supplementary groups and, after the uid change, no capabilities.
as() {
	as_who=$1
	shift
	if [ "$as_who" = root ]; then	# (shared: the suite is the user's)
		"$@"
	else
		setpriv --reuid=$USER_ID --regid=$USER_ID --clear-groups -- "$@"
	fi
}

# server_as WHO CMD...: a server for WHO runs as WHO, as libfuse's CI runs
# passthrough_hp for an unprivileged suite. There is no setuid fusermount3
# here, so the user's server keeps CAP_SYS_ADMIN, for mount(2), and nothing
# else: its files are the user's, its access checks the user's. Started
# with &, in a subshell: exec, so that $! is the server's own pid.
server_as() {
	sa_who=$1
	shift
	if [ "$sa_who" = root ] || [ "$sa_who" = shared ]; then
		exec "$@"
	else
		exec setpriv --reuid=$USER_ID --regid=$USER_ID --clear-groups \
			--inh-caps=+sys_admin --ambient-caps=+sys_admin -- "$@"
	fi
}

# server_start CONFIG WHO LOG: mount $M with CONFIG's server (pid in SPID),
# serving $B. 1 if it did not mount within 60 s.
server_start() {
	ss_who=$2 ss_log=$3
	case $1 in
	passthrough_hp)
		# --nocache, as libfuse's CI runs test_syscalls on it: the suite
		# checks the backing directory behind the mount's back, which
		# passthrough_hp's day-long caching is allowed not to see.
		# --nopassthrough: every read and write goes over the ring, as
		# in tests/guest/30 and the benchmarks.
		# shellcheck disable=SC2046
		server_as "$ss_who" "$PEER" --foreground --nocache --nopassthrough \
			-o io_uring -o io_uring_q_depth=8 \
			$([ "$ss_who" = shared ] && echo "-o allow_other") \
			"$B" "$M" >"$ss_log" 2>&1 &
		;;
	*)
		# shellcheck disable=SC2046
		server_as "$ss_who" "$SRV" --foreground --mode="$1" \
			$([ "$ss_who" = shared ] && echo --allow-other) \
			"$B" "$M" 2>"$ss_log" &
		;;
	esac
	SPID=$!
	# The reference server says "N queues x M entries" once every REGISTER
	# was accepted.
	ss_end=$(($(date +%s) + 60))
	while [ "$(mount_type "$M")" = none ] || { [ "$1" != passthrough_hp ] &&
		! grep -qE ': [0-9]+ queues x [0-9]+ entries, ' "$ss_log"; }; do
		running "$SPID" && [ "$(date +%s)" -lt $ss_end ] || return 1
		sleep 0.1
	done
	# The first request waits for FUSE_INIT's answer (libfuse starts its
	# rings in INIT's handler).
	as "$ss_who" timeout -k 5 60 stat "$M" >/dev/null
}

# server_stop LABEL: umount $M; the server exits 0 within 20 s.
server_stop() {
	timeout 20 umount "$M" || umount -l "$M"
	if wait_gone "$SPID" 20; then
		wait "$SPID"
		check_eq "$1: the server exits 0 after umount" 0 $?
	else
		fail "$1: the server exits after umount" "still running 20 s later"
		kill -9 "$SPID"
		wait "$SPID" 2>/dev/null
	fi
	SPID=
}

# parse CONFIG WHO LOG STATUS: test_syscalls' output in LOG (exit STATUS)
# as lines of $TSV: CONFIG WHO NUMBER NAME RESULT MESSAGE, tab-separated.
# Each test prints "+ TIME NUM [NAME] START", then "... OK" or lines
# "NUM [NAME] FUNC() - what: why". A test with neither is "none" (no
# verdict), for verdict() to settle; if the suite was killed (timeout) in
# it, "fail". With -u the suite ends by checking again, by fstat(), every
# file a test unlinked while holding it open, as test NUM
# "check_unlinked_testfile" again; it prints nothing when a check passes,
# and skips them all after any failed test: one line "unlinked files (-u)"
# for all of them.
parse() {
	awk -v cfg="$1" -v who="$2" -v status="$4" -v killed="$([ "$4" -ge 124 ] && echo 1)" '
		function row(num, name, res, msg) {
			printf "%s\t%s\t%s\t%s\t%s\t%s\n", cfg, who, num, name, res, msg
		}
		/^\+ *[0-9.]+s +[0-9]+ \[.*\] (START|OK)$/ {
			line = $0
			sub(/^\+ *[0-9.]+s +/, "", line)
			num = line; sub(/ .*/, "", num)
			word = line; sub(/.* /, "", word)
			name = substr(line, index(line, "[") + 1)
			sub(/\] (START|OK)$/, "", name)
			if (name == "check_unlinked_testfile") { unlinked = 1; next }
			if (word == "START") {
				if (!(num in title)) order[++n] = num
				title[num] = name
				last = num
			} else {
				ok[num] = 1
			}
			next
		}
		/^ *[0-9]+ \[[^]]*\] / {
			num = $1
			name = substr($0, index($0, "[") + 1)
			msg = substr(name, index(name, "] ") + 2)
			name = substr(name, 1, index(name, "] ") - 1)
			gsub(/\t/, " ", msg)
			if (name == "check_unlinked_testfile") {
				ubad = ubad (ubad == "" ? "" : "; ") title[num] ": " msg
				nubad++
				next
			}
			if (!(num in title)) { order[++n] = num; title[num] = name }
			if (!(num in err)) err[num] = msg
			else more[num]++
			next
		}
		END {
			for (i = 1; i <= n; i++) {
				num = order[i]
				if (num in err)
					row(num, title[num], "fail", err[num] (more[num] ? " (and " more[num] " more)" : ""))
				else if (num in ok)
					row(num, title[num], "pass", "")
				else if (killed && num == last && !unlinked)
					row(num, title[num], "fail", "killed in this test (timeout)")
				else
					row(num, title[num], "none", "")
			}
			if (nubad)
				row("-", "unlinked files (-u)", "fail", nubad " checks failed: " ubad)
			else if (unlinked && status == 0)
				row("-", "unlinked files (-u)", "pass", "")
			else if (unlinked && !killed)
				row("-", "unlinked files (-u)", "fail", "no message, but the suite exited " status)
			else if (unlinked)
				row("-", "unlinked files (-u)", "fail", "killed in the checks (timeout)")
			else
				row("-", "unlinked files (-u)", "skip", "not run: the suite checks them only when every test passed")
		}' "$3"
}

# verdict CONFIG WHO: a test with no verdict either returned 0 without
# saying OK (the suite skips O_TMPFILE where it is not supported) or -1
# without a message (statx's checks fail silently). Run it alone: its exit
# status tells which.
verdict() {
	while IFS='	' read -r c w num name res msg; do
		if [ "$c $w $res" = "$1 $2 none" ]; then
			if as "$2" timeout -k 5 60 "$SUITE" "$M" ":$B" "$num" </dev/null >/dev/null 2>&1; then
				res=skip msg="the suite returned without a verdict (alone it exits 0)"
			else
				res=fail msg="no message; alone it exits non-zero"
			fi
		fi
		printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$w" "$num" "$name" "$res" "$msg"
	done
}

# run_suite CONFIG WHO: one run of the whole suite on a fresh mount.
run_suite() {
	cfg=$1 who=$2
	label="conformance: $cfg, $who"
	log=$W/conformance-$cfg-$who.log
	slog=$W/conformance-server-$cfg-$who.log
	owner=0 mode=0755
	[ "$who" = user ] && owner=$USER_ID
	[ "$who" = shared ] && mode=0777	# root's, and the user may create in it
	mount -t tmpfs -o "size=64m,mode=$mode,uid=$owner,gid=$owner" conformance "$B"
	if ! server_start "$cfg" "$who" "$slog"; then
		fail "$label: the server mounts" "$(tail -n 3 "$slog" | tr '\n' ' ')"
		[ -n "$SPID" ] && kill -9 "$SPID" 2>/dev/null
		SPID=
		umount -l "$M" 2>/dev/null
		umount "$B" || umount -l "$B"
		return
	fi
	# The setup itself: every request after FUSE_INIT goes over io_uring, in
	# the mode named; the user's files are the user's, behind the mount.
	if [ "$cfg" = passthrough_hp ]; then
		check_eq "$label: one io_uring per FUSE queue" "$(possible_cpu_count)" \
			"$(ls -l "/proc/$SPID/fd" | grep -c 'anon_inode:\[io_uring\]')"
	else
		check_eq "$label: the server's rings run in $cfg mode" 1 \
			"$(grep -c ": [0-9]* queues x [0-9]* entries, .*, mode $cfg\$" "$slog")"
	fi
	if [ "$who" = user ]; then
		as user timeout -k 5 60 touch "$M/owner"
		check_eq "$label: the server runs as the user; a file the user creates is the user's" \
			"$USER_ID $USER_ID:$USER_ID" "$(stat -c %u "/proc/$SPID") $(stat -c %u:%g "$B/owner" 2>&1)"
		rm -f "$B/owner"
	elif [ "$who" = shared ]; then
		as shared timeout -k 5 60 touch "$M/owner" 2>/dev/null
		made="$(stat -c %u "/proc/$SPID") $(stat -c %u:%g "$B/owner" 2>&1)"
		if [ "$cfg" = passthrough_hp ]; then
			# a fact about the peer, not a check: it creates as itself
			echo "# $label: server uid, then the owner of a file the user creates: $made"
		else
			check_eq "$label: the server runs as root; a file the user creates is the user's" \
				"0 $USER_ID:$USER_ID" "$made"
		fi
		rm -f "$B/owner"
	fi
	start=$(date +%s)
	# -u: at the end, check every file the suite unlinked while it held
	# it open, as libfuse's CI does on passthrough_hp --nocache.
	as "$who" timeout -k 10 "$SUITE_TIMEOUT" "$SUITE" "$M" ":$B" -u >"$log" 2>&1
	status=$?
	took=$(($(date +%s) - start))
	parse "$cfg" "$who" "$log" "$status" | verdict "$cfg" "$who" >>"$TSV"
	server_stop "$label"
	umount "$B" || umount -l "$B"
	[ -n "${LAB_RUN:-}" ] && cp "$log" "$slog" "$LAB_RUN/"

	# Exit 0 with no failed test, or 1 with some: anything else is a crash
	# or the timeout.
	counts=$(awk -F'\t' -v c="$cfg" -v w="$who" '$1 == c && $2 == w { n[$5]++ }
		END { printf "%d %d %d", n["pass"], n["fail"], n["skip"] }' "$TSV")
	# shellcheck disable=SC2086
	set -- $counts
	summary="$1 passed, $2 failed, $3 skipped by the suite; $took s"
	echo "# $label: $summary"
	# the suite exits 1 exactly when a test failed
	agrees=no
	[ "$status" = 0 ] && [ "$2" = 0 ] && agrees=yes
	[ "$status" = 1 ] && [ "$2" -gt 0 ] && agrees=yes
	if [ $(($1 + $2)) -gt 0 ] && [ $agrees = yes ]; then
		pass "$label: the suite ran ($summary)"
	else
		fail "$label: the suite ran" "exit $status ($summary): $(tail -n 2 "$log" | tr '\n' ' ')"
	fi
}

for who in $WHO; do
	for cfg in $CONFIGS; do
		run_suite "$cfg" "$who"
	done
done

# The comparison: every test passthrough_hp passes, the reference server
# passes too, in each mode, as each user.
for who in $WHO; do
	for cfg in $OURS; do
		label="conformance: $cfg, $who"
		# shared: passthrough_hp creates as root there, and fails half the
		# suite; hold the reference server to what the peer passes when it
		# runs as the user (the same tests, as the same uid)
		peer_who=$who
		[ "$who" = shared ] && peer_who=user label="$label (passthrough_hp as the user)"
		cmp=$(awk -F'\t' -v c="$cfg" -v w="$who" -v pw="$peer_who" '
			$1 == "passthrough_hp" && $2 == pw && $5 == "pass" { peer[$4] = 1; np++ }
			$1 == c && $2 == w && $5 == "pass" { ours[$4] = 1; n++ }
			END {
				printf "%d %d", n, np
				for (t in peer) if (!(t in ours)) printf "\t%s", t
			}' "$TSV")
		n=${cmp%%	*} rest=${cmp#*	}
		ours=${n% *} peer=${n#* }
		if [ "$peer" = 0 ]; then
			skip "$label: passes what passthrough_hp passes" "passthrough_hp passed nothing ($who)"
			continue
		fi
		if [ "$ours" -ge "$peer" ]; then
			pass "$label: passes as many tests as passthrough_hp ($ours, $peer)"
		else
			fail "$label: passes as many tests as passthrough_hp" "$ours, passthrough_hp $peer"
		fi
		if [ "$rest" = "$cmp" ]; then
			pass "$label: passes every test passthrough_hp passes"
		else
			missing=$(printf '%s\n' "$rest" | tr '\t' '\n' | sort | sed 's/$/;/' | tr '\n' ' ' | sed 's/; $//')
			fail "$label: passes every test passthrough_hp passes" "fails $missing"
			printf '%s\n' "$rest" | tr '\t' '\n' | while read -r t; do
				awk -F'\t' -v c="$cfg" -v w="$who" -v t="$t" \
					'$1 == c && $2 == w && $4 == t { print "#   " t ": " $5 " " $6 }' "$TSV"
			done
		fi
	done
done
exit 0
