#!/bin/sh
# Description: libfuse's own syscall suite (test_syscalls, from Debian's
# fuse3 source, built by `make peer`) on Linux 7.3, held to the same rule as
# on 7.2 (tests/guest/31-conformance.sh, which this runs): the reference
# server in iovec mode and in pool mode, and passthrough_hp -o io_uring, each
# as root, as an unprivileged user, and shared; the reference server must
# pass every test passthrough_hp passes, in both modes and as each user.
# (pool-fixed pins its pool, which an unprivileged user's RLIMIT_MEMLOCK
# does not cover, and pool-zero-copy needs CAP_SYS_ADMIN: their data paths
# are tests/guest/7.3/20's.)
CONFORMANCE_CONFIGS="iovec pool passthrough_hp" \
	exec sh "$LAB_TOP/tests/guest/31-conformance.sh"
