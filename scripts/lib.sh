# scripts/lib.sh: what every script of the pipeline shares.
#
# Paths, the pinned kernel and the error convention live here once, so that
# `make`, vm/run and the tests all agree on them. Sourced, never run.

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$TOP/build

# Downloads and ccache survive `make clean` and fresh clones: a second run on
# the same machine reuses them.
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/fuse-io-uring-lab

# The two kernels, each Debian's linux-source-X.Y package pinned to one exact
# version and checksum:
#   7.2  the default: the tree the v2 series in kernel-patches/ applies to
#        (buffer rings, pinned headers and buffers, zero-copy; not merged)
#   7.3  what upstream merged instead: the per-queue buffer pool, stock,
#        with kernel-patches-7.3/ on top (fixes of 7.3 itself, if any)
# KERNEL=7.3 picks the second for every entry point alike: make kernel,
# make headers, vm/run, scripts/check. When Debian stops serving a version,
# `apt-cache policy linux-source-X.Y` (after `make deps` added the suites)
# lists what it serves: change both lines to one of those, run `make
# kernel`, and check the series still applies (`make patches-check`).
KERNELS="7.2 7.3"
KERNEL=${KERNEL:-7.2}
kernel_pin() {	# kernel_pin X.Y: set KERNEL_DEB_VERSION, KERNEL_DEB_SHA256
	case "$1" in
	7.2)
		KERNEL_DEB_VERSION=7.2.12-1~bpo13+1
		KERNEL_DEB_SHA256=73ca6c22599ba411ab3179642d33501ca2c90174e13c3c8d86e996ea1cbf2a8f
		;;
	7.3)
		KERNEL_DEB_VERSION=7.3.4-1~bpo13+1
		KERNEL_DEB_SHA256=703e369ddd4cce971452f5a593ee55df3a5c10c83caf0fa0df039633ed181ee3
		;;
	*) return 1 ;;
	esac
}
kernel_deb() { echo "$CACHE/downloads/linux-source-${1}_${KERNEL_DEB_VERSION}_all.deb"; }
kernel_pin "$KERNEL" || { printf '%s: error: KERNEL is 7.2 or 7.3, not "%s"\n' "${0##*/}" "$KERNEL" >&2; exit 1; }
KERNEL_DEB=$(kernel_deb "$KERNEL")

# The kernel tree (a git repository, tag `base` = pristine Debian source) and
# the build folders, one per kernel and flavour, so a debug kernel never
# dirties the normal one, nor 7.3 the 7.2 one. The 7.2 paths keep their
# names (build/linux, build/obj/normal, build/headers). LINUX can point at a
# clone of build/linux (with FLAVOR naming its own build folder) to develop
# the series without disturbing the tree that `make check` builds. LINUX and
# KOBJ together name another tree and its build folder: the kernel
# exercise's (scripts/exercise), which `scripts/kernel compile` builds and
# vm/run boots.
#
# FLAVOR=stock (KERNEL=7.2 only) is 7.2 as Debian ships it, without the
# series: the third kernel the one server binary must run on (iovec mode),
# booted by `make check`. Its tree is a shared clone of build/linux at
# `base`. Its folders sit as build/linux and build/obj/normal do, one level
# down (build/stock/linux, build/stock/obj/normal), so that the compiler
# sees the same relative paths (ccache's base_dir is $TOP) and ccache
# serves every file the series does not touch from the 7.2 build: the
# third kernel costs a warm build, not a cold one.
FLAVOR=${FLAVOR:-normal}
if [ "$FLAVOR" = stock ]; then
	[ "$KERNEL" = 7.2 ] || { printf '%s: error: FLAVOR=stock is stock 7.2: KERNEL=7.2, not "%s"\n' "${0##*/}" "$KERNEL" >&2; exit 1; }
	PATCHES=	# none
	LINUX=${LINUX:-$BUILD/stock/linux}
	KOBJ=${KOBJ:-$BUILD/stock/obj/normal}
	HEADERS=$BUILD/headers-stock
elif [ "$KERNEL" = 7.2 ]; then
	PATCHES=$TOP/kernel-patches
	LINUX=${LINUX:-$BUILD/linux}
	KOBJ=${KOBJ:-$BUILD/obj/$FLAVOR}
	HEADERS=$BUILD/headers
else
	PATCHES=$TOP/kernel-patches-$KERNEL
	LINUX=${LINUX:-$BUILD/linux-$KERNEL}
	KOBJ=${KOBJ:-$BUILD/obj/$KERNEL-$FLAVOR}
	HEADERS=$BUILD/headers-$KERNEL
fi
BZIMAGE=$KOBJ/arch/x86/boot/bzImage
HEADERS_STOCK=$BUILD/headers-stock	# 7.2 as released: the iovec rung

# Messages: one line saying what is wrong and what to run. `step` narrates
# the long steps so a person watching knows what the machine is doing.
die() { printf '\n%s: error: %s\n' "${0##*/}" "$*" >&2; exit 1; }
step() { printf '==> %s\n' "$*" >&2; }
note() { printf '    %s\n' "$*" >&2; }

# need_space MIB WHAT: stop early, with a clear message, rather than fail
# half-way through unpacking or building with "No space left on device".
need_space() {
	local have
	mkdir -p "$BUILD"
	have=$(($(df --output=avail -k "$BUILD" | tail -n 1) / 1024))
	[ "$have" -ge "$1" ] || die "$2 needs $1 MiB free in $BUILD, there are $have MiB: free some space (make clean removes build/)"
}

# debian_archive_uri SUITE: the address this machine's own apt configuration
# uses for Debian's SUITE (bookworm, bookworm-security, ...). scripts/deps adds
# suites from the same archive, and scripts/fresh-check builds its new root
# from it: no host name is written anywhere in the project.
debian_archive_uri() {
	apt-get indextargets --format '$(REPO_URI) $(CODENAME) $(ORIGIN)' \
		'Identifier: Packages' 2>/dev/null |
		awk -v c="$1" '$2 == c && $3 == "Debian" { print $1; exit }'
}

# Run as root, or through sudo when that is possible without a password.
as_root() {
	if [ "$(id -u)" = 0 ]; then
		"$@"
	elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
		sudo "$@"
	else
		die "installing packages needs root: run 'sudo make deps' once (or as root)"
	fi
}
