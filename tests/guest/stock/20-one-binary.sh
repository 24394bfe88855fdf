#!/bin/sh
# Description: the third kernel of "one server binary for every kernel":
# Linux 7.2 as Debian ships it, without the series (FLAVOR=stock). The guest
# runs the kernel built from build/stock/linux at `base`, with no patch
# above it. The same fuse-uring-server that picks bufring on the series and
# the pool on 7.3 picks iovec here (--mode=auto) and says so; a file copied
# in and out comes back intact, fio's crc32c jobs verify what they wrote;
# the series' and 7.3's modes are each refused with the one line that names
# the kernel they need, and nothing is left mounted.
. "$LAB_TOP/tests/lib.sh"
cd "$LAB_TOP" || exit 1

kobj=build/stock/obj/normal
check_eq "kernel release is the one built in $kobj" \
	"$(cat "$kobj/include/config/kernel.release")" "$(uname -r)"
base=$(git -C build/stock/linux rev-parse --short=12 base)
case "$(uname -r)" in
*"$base"*) pass "kernel release names Debian's tree, base ($base)" ;;
*) fail "kernel release names Debian's tree, base" "$(uname -r) does not contain $base" ;;
esac
check_eq "build/stock/linux holds no patch above base" \
	"0" "$(git -C build/stock/linux rev-list --count base..HEAD)"

refsrv_setup /tmp/stock
trap 'refsrv_cleanup stock' EXIT
LOG=$W/auto.log
if refsrv_start "$LOG"; then
	check_eq "--mode=auto picks iovec on stock 7.2, and says why" "1" \
		"$(grep -c -- '--mode=auto: the kernel offers FUSE over io_uring (stock Linux 7.2 or later): mode iovec$' "$LOG")"
	copy_round_trip 3000000 77777
	FIO_SIZE=4M fio_verify_matrix "$M" "auto on stock 7.2"
	refsrv_stop auto
else
	fail "--mode=auto mounts on stock 7.2" "$(cat "$LOG")"
fi
check_fails_with "--mode=bufring is refused on stock 7.2" \
	"--mode=bufring needs FUSE_HAS_URING_BUFRING (Linux 7.2 with the v2 series, kernel-patches/), and this kernel does not offer it (it offers FUSE over io_uring (stock Linux 7.2 or later))" \
	"$SRV" --foreground --mode=bufring "$B" "$M"
check_fails_with "--mode=pool is refused on stock 7.2" \
	"--mode=pool needs FUSE_HAS_IO_URING_BUFPOOL (Linux 7.3 or later), and this kernel does not offer it" \
	"$SRV" --foreground --mode=pool "$B" "$M"
check_eq "no mount left" "none" "$(mount_type "$M")"
