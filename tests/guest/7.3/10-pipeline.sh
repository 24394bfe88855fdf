#!/bin/sh
# Description: the 7.3 guest runs the kernel built from build/linux-7.3 with
# exactly the patches of kernel-patches-7.3/ above Debian's tree, and that
# kernel is what the rest of the 7.3 suite takes it for: FUSE minor 46 with
# the pool's FUSE_INIT flag in its header, and the two tracepoints the cost
# table counts with (kernel-patches-7.3/0001).
. "$LAB_TOP/tests/lib.sh"
cd "$LAB_TOP" || exit 1

kobj=build/obj/7.3-${LAB_FLAVOR:-normal}
check_eq "kernel release is the one built in $kobj" \
	"$(cat "$kobj/include/config/kernel.release")" "$(uname -r)"

# CONFIG_LOCALVERSION_AUTO puts the tree's commit in the release string.
head=$(git -C build/linux-7.3 rev-parse --short=12 HEAD)
case "$(uname -r)" in
*"$head"*) pass "kernel release names build/linux-7.3 HEAD ($head)" ;;
*) fail "kernel release names build/linux-7.3 HEAD" "$(uname -r) does not contain $head" ;;
esac

series=$(find kernel-patches-7.3 -maxdepth 1 -name '[0-9][0-9][0-9][0-9]-*.patch' ! -name '0000-*' | sort)
patches=$(printf '%s\n' "$series" | grep -c .)
check_eq "build/linux-7.3 holds the $patches patches of kernel-patches-7.3/ above base" \
	"$patches" "$(git -C build/linux-7.3 rev-list --count base..HEAD)"
# scripts/kernel stamps the tree with the hash of the series it applied
check_eq "build/linux-7.3 was made from exactly these patch files" \
	"$(printf '%s\n' "$series" | xargs cat | sha256sum | cut -d' ' -f1)" \
	"$(cat build/linux-7.3/.git/lab-series 2>/dev/null)"

check_eq "the 7.3 headers say FUSE minor 46" "46" \
	"$(sed -n 's/^#define FUSE_KERNEL_MINOR_VERSION[[:space:]]*\([0-9]*\).*/\1/p' build/headers-7.3/include/linux/fuse.h)"

T=/sys/kernel/tracing
for e in fuse_uring_send fuse_uring_commit; do
	check "tracefs has the fuse/$e event (kernel-patches-7.3/0001)" test -d "$T/events/fuse/$e"
done
