#!/bin/sh
# Description: a reader can copy the pool rung alone. The build with only
# iovec and pool (make server's build/reference-server/rungs/pool, every
# file against stock 7.2's uapi but pool.c, against 7.3's) refuses the v2
# modes as not built in, and passes tests/guest/7.3/20-pool.sh on 7.3: auto
# picks the pool, iovec, pool and pool-fixed move data intact.
. "$LAB_TOP/tests/lib.sh"
cd "$LAB_TOP" || exit 1

POOL=$LAB_TOP/build/reference-server/rungs/pool/fuse-uring-server
if [ ! -x "$POOL" ]; then
	fail "the iovec,pool build is built" "$POOL missing: run 'make server'"
	exit 1
fi
check_fails_with "iovec,pool build refuses --mode=zero-copy" \
	"--mode=zero-copy is not built into this server (make MODES=...; supported: auto, iovec, pool, pool-fixed)" \
	"$POOL" --foreground --mode=zero-copy /tmp /mnt

LAB_CHECK_PREFIX="iovec,pool build: " REFSRV=$POOL REFSRV_MODES="auto, iovec, pool, pool-fixed" \
	sh tests/guest/7.3/20-pool.sh
