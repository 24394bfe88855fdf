#!/bin/sh
# Description: a reader can copy one rung of the mode ladder. The reference
# server built with `make -C reference-server MODES=iovec` (no bufring.c, no
# zero-copy.c) passes every check of 20-reference-server.sh, and the one
# built with MODES=iovec,bufring every check of 21-bufring.sh; each refuses
# the modes it was built without, by name. Their checks are reported with
# the build's name in front.
. "$LAB_TOP/tests/lib.sh"
cd "$LAB_TOP" || exit 1

RUNGS=$LAB_TOP/build/reference-server/rungs
IOVEC=$RUNGS/iovec/fuse-uring-server
BUFRING=$RUNGS/bufring/fuse-uring-server
for srv in "$IOVEC" "$BUFRING"; do
	if [ ! -x "$srv" ]; then
		fail "one-rung builds are built" "$srv missing: run 'make server'"
		exit 1
	fi
done

check_fails_with "iovec-only build refuses --mode=bufring" \
	"--mode=bufring is not built into this server (make MODES=...; supported: auto, iovec)" \
	"$IOVEC" --foreground --mode=bufring /tmp /mnt
check_fails_with "iovec-only build refuses --mode=zero-copy" \
	"--mode=zero-copy is not built into this server" \
	"$IOVEC" --foreground --mode=zero-copy /tmp /mnt
check_fails_with "iovec,bufring build refuses --mode=zero-copy" \
	"--mode=zero-copy is not built into this server (make MODES=...; supported: auto, iovec, bufring, pinned-headers, pinned-buffers)" \
	"$BUFRING" --foreground --mode=zero-copy /tmp /mnt

LAB_CHECK_PREFIX="iovec-only build: " REFSRV=$IOVEC REFSRV_MODES="auto, iovec" \
	sh tests/guest/20-reference-server.sh
LAB_CHECK_PREFIX="iovec,bufring build: " REFSRV=$BUFRING \
	REFSRV_MODES="auto, iovec, bufring, pinned-headers, pinned-buffers" \
	sh tests/guest/21-bufring.sh
