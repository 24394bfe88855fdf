#!/bin/sh
# Description: the guest is the one the pipeline promises: it runs the kernel
# built from build/linux with exactly the series in kernel-patches/, sees the
# host's repo read-only, can write results back, and has what FUSE over
# io_uring needs (/dev/fuse, the enable_uring switch, a working io_uring).
. "$LAB_TOP/tests/lib.sh"
cd "$LAB_TOP" || exit 1

kobj=build/obj/${LAB_FLAVOR:-normal}

check_eq "kernel release is the one built in $kobj" \
	"$(cat "$kobj/include/config/kernel.release")" "$(uname -r)"

# CONFIG_LOCALVERSION_AUTO puts the tree's commit in the release string.
head=$(git -C build/linux rev-parse --short=12 HEAD)
case "$(uname -r)" in
*"$head"*) pass "kernel release names build/linux HEAD ($head)" ;;
*) fail "kernel release names build/linux HEAD" "$(uname -r) does not contain $head" ;;
esac

patches=$(find kernel-patches -maxdepth 1 -name '[0-9][0-9][0-9][0-9]-*.patch' ! -name '0000-*' | wc -l)
check_eq "build/linux holds the $patches patches of kernel-patches/ above base" \
	"$patches" "$(git -C build/linux rev-list --count base..HEAD)"

# FUSE queues are per possible CPU: the labs count on two.
check_eq "two possible CPUs (two FUSE queues)" "0-1" "$(cat /sys/devices/system/cpu/possible)"

check_eq "/dev/fuse is the FUSE character device (10:229)" \
	"character special file 10:229" "$(stat -c '%F %Hr:%Lr' /dev/fuse)"

param=/sys/module/fuse/parameters/enable_uring
if [ -w "$param" ]; then
	echo 1 >"$param"
	check_eq "enable_uring can be switched on" "Y" "$(cat "$param")"
	echo 0 >"$param"
	check_eq "enable_uring can be switched off" "N" "$(cat "$param")"
else
	fail "enable_uring exists and is writable" "$param missing or read-only"
fi

check "io_uring NOP round trip on an SQE128 ring" build/tests/uring-nop

# scripts/check writes a fresh nonce into build/ just before booting: reading
# it back proves the guest sees the host's repo as it is now.
check_eq "repo visible at the host's path" "${LAB_NONCE:-unset}" "$(cat build/vm/nonce 2>/dev/null)"

if touch "$LAB_TOP/.guest-write" 2>/dev/null; then
	rm -f "$LAB_TOP/.guest-write"
	fail "host root is read-only in the guest" "a file could be created in $LAB_TOP"
else
	pass "host root is read-only in the guest"
fi

echo "written in the guest" >"$LAB_RUN/written"
check_eq "run folder is writable" "written in the guest" "$(cat "$LAB_RUN/written")"
