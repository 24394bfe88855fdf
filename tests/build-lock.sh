#!/bin/sh
# tests/build-lock.sh: the checkout's build lock (scripts/with-build-lock),
# run on the host by scripts/check.
#
# Two makes in one checkout once compiled the kernel into the same build/obj
# at the same time and corrupted it. Now every step that writes build/ runs
# under the lock, and a second one waits. Checked here on a copy of the
# scripts in a temporary folder, since `make check` itself holds the real
# lock while it runs this.
. "$(dirname "$0")/lib.sh"
TOP=$(cd "$(dirname "$0")/.." && pwd)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/scripts"
cp "$TOP/scripts/with-build-lock" "$TOP/scripts/lib.sh" "$tmp/scripts/"
locked() { env -u FUSE_LAB_BUILD_LOCK "$tmp/scripts/with-build-lock" "$@"; }

# The first holder writes "a1", waits 3 s, writes "a2"; the second, started
# while the first sleeps, must wait and write "b" after "a2".
locked sh -c 'echo a1 >>"$1"; sleep 3; echo a2 >>"$1"' _ "$tmp/order" &
first=$!
i=0
while [ ! -s "$tmp/order" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
start=$(date +%s)
locked sh -c 'echo b >>"$1"' _ "$tmp/order" 2>"$tmp/second.err"
took=$(($(date +%s) - start))
wait $first

check_eq "build lock: a second step runs after the first one ends" \
	"a1 a2 b" "$(tr '\n' ' ' <"$tmp/order" | sed 's/ $//')"
if [ $took -ge 1 ]; then
	pass "build lock: the second step waited (${took} s)"
else
	fail "build lock: the second step waited" "it took ${took} s"
fi
if grep -qE '^another make is running in this checkout \(PID [0-9]+: .+\), waiting$' "$tmp/second.err"; then
	pass "build lock: the waiting step says who holds the lock"
else
	fail "build lock: the waiting step says who holds the lock" "stderr was: $(cat "$tmp/second.err")"
fi

# A step started under the lock (scripts/check runs `make docs`) must not
# wait for itself.
if out=$(locked timeout 10 "$tmp/scripts/with-build-lock" echo nested 2>&1) && [ "$out" = nested ]; then
	pass "build lock: a step inside a locked step does not wait for itself"
else
	fail "build lock: a step inside a locked step does not wait for itself" "exit $?: $out"
fi

# A process the step leaves behind (a QEMU still shutting down) must not
# keep the lock: the step runs without the lock's descriptor.
locked sh -c 'sleep 30 & echo $! >"$1"' _ "$tmp/orphan"
if out=$(timeout 5 env -u FUSE_LAB_BUILD_LOCK "$tmp/scripts/with-build-lock" true 2>&1); then
	pass "build lock: a process a step leaves behind does not hold the lock"
else
	fail "build lock: a process a step leaves behind does not hold the lock" "a second step waited 5 s: $out"
fi
kill "$(cat "$tmp/orphan")" 2>/dev/null

# Every Makefile recipe that runs one of the pipeline's scripts, the
# compiler or sphinx-build goes through the lock. make -n still runs the
# recipes that call $(MAKE) (the server's): they see the lock as held.
# -o: the test programs need the patched headers, which need a kernel tree.
dry=$tmp/make-n
if FUSE_LAB_BUILD_LOCK=$TOP/build/.lock make -n -B -C "$TOP" \
	-o "$TOP/build/headers/include/linux/fuse.h" deps kernel headers server \
	peer tests check demo bench docs patches patches-check clean >"$dry" 2>&1; then
	unlocked=$(grep -E 'scripts/(deps|kernel|peer|check|demo|bench)|sphinx-build|gcc .*-static|-C reference-server' "$dry" |
		grep -v 'with-build-lock' || true)
	locked_steps=$(grep -c 'with-build-lock' "$dry")
	if [ -z "$unlocked" ] && [ "$locked_steps" -ge 12 ]; then
		pass "build lock: every Makefile step that writes build/ takes the lock ($locked_steps steps)"
	else
		fail "build lock: every Makefile step that writes build/ takes the lock" "$locked_steps locked; unlocked: $unlocked"
	fi
else
	fail "build lock: every Makefile step that writes build/ takes the lock" "make -n failed: $(tail -n 3 "$dry" | tr '\n' ' ')"
fi
[ "${FAILED:-0}" = 0 ]
