# debate/workloads.sh: the workloads whose requests debate/capture records.
# Sourced by debate/capture and labs/05-buffer-size-debate/run; runs in the
# guest. Every workload has two halves:
#
#   wl_setup NAME SRC BACKING  put what it needs in SRC (scratch, not on the
#                              mount) and BACKING (the server's backing
#                              directory, written directly: not traced)
#   wl_run NAME SRC MNT        the traced part, on the mount
#
# Everything they read comes from fixed inputs (a pinned commit of this
# repository, /usr/include, fixed-size files), so a second capture sends the
# same requests, give or take timing: the sizes and opcodes repeat, the
# concurrency is whatever the guest's scheduler makes of it.
#
# LAB_TOP is the repository (read-only in the guest).

# The commit whose sources the build and git workloads use: fixed, so the
# workload does not change when the repository moves on.
WL_COMMIT=62d4a00
WL_ALL="build tree git fio-seq fio-rand mixed"
# "lab" is the small workload of labs/05-buffer-size-debate, not in WL_ALL.

# wl_describe NAME: one line, for the trace's header and the book.
wl_describe() {
	case "$1" in
	build) echo "untar the reference server's sources (commit $WL_COMMIT, 12 files) and compile and link them with gcc, four compilers at a time" ;;
	tree) echo "ls -lR, find and du over a copy of /usr/include/linux, asm-generic and asm (864 files in 31 directories)" ;;
	git) echo "git clone (--no-local) of this repository at commit $WL_COMMIT, git status, checkout of an older commit and back" ;;
	fio-seq) echo "fio sequential, 1 MiB blocks: 16 MiB buffered write; 2 jobs x 16 MiB buffered read; 6 jobs x 4 MiB direct read; 4 jobs x 4 MiB direct write" ;;
	fio-rand) echo "fio random: 12 jobs x 64 direct 4 KiB reads; 6 jobs x 32 direct 4 KiB writes; 4 jobs x 64 buffered 4 KiB reads; 6 jobs direct reads of 4-128 KiB (2 MiB each)" ;;
	mixed) echo "three small-file workers (create, write 1-8 KiB, read, rename, then list and delete; 30 files each) while three fio jobs stream 1 MiB direct reads at 12 MiB/s each" ;;
	lab) echo "four readers, each reading a 4 MiB file twice with 1 MiB direct reads, while ls -lR, cat and find go through 91 small headers" ;;
	*) return 1 ;;
	esac
}

wl_setup() {
	name=$1 src=$2 b=$3
	mkdir -p "$src" "$b"
	case "$name" in
	build)
		git -C "$LAB_TOP" archive --format=tar "$WL_COMMIT" reference-server >"$src/src.tar"
		;;
	tree)
		mkdir -p "$b/tree"
		cp -r /usr/include/linux /usr/include/asm-generic "$b/tree/"
		cp -r /usr/include/x86_64-linux-gnu/asm "$b/tree/asm"
		;;
	git)
		git clone -q --bare "file://$LAB_TOP" "$src/src.git"
		git -C "$src/src.git" branch -f wl "$WL_COMMIT"
		;;
	fio-seq)
		for j in 0 1; do head -c 16M /dev/urandom >"$b/seqread.$j.0"; done
		for j in 0 1 2 3 4 5; do head -c 4M /dev/urandom >"$b/direct.$j.0"; done
		;;
	fio-rand)
		for j in $(seq 0 11); do head -c 4M /dev/urandom >"$b/rr.$j.0"; done
		for j in $(seq 0 5); do head -c 4M /dev/urandom >"$b/rw.$j.0"; done
		for j in 0 1 2 3; do head -c 4M /dev/urandom >"$b/rb.$j.0"; done
		for j in $(seq 0 5); do head -c 4M /dev/urandom >"$b/rs.$j.0"; done
		;;
	mixed)
		for j in 0 1 2; do head -c 64M /dev/urandom >"$b/stream.$j.0"; done
		;;
	lab)
		for j in 1 2 3 4; do head -c 4M /dev/urandom >"$b/big$j"; done
		mkdir -p "$b/tree"
		cp -r /usr/include/linux/netfilter "$b/tree/"
		;;
	*) echo "wl_setup: no workload '$name'" >&2; return 1 ;;
	esac
}

# wl_fio ARGS...: fio on the mount (WL_MNT), quiet; fails as fio does.
wl_fio() {
	fio --minimal --output=/dev/null --directory="$WL_MNT" --ioengine=psync \
		--fallocate=none --randrepeat=1 --random_generator=lfsr "$@"
}

# churn DIR N: the small-file worker of the mixed workload; shell builtins
# where possible, so most requests come from the file system, not exec.
wl_churn() {
	d=$1 n=$2
	mkdir -p "$d"
	blk=$(head -c 1024 /dev/zero | tr '\0' x)
	i=1
	while [ "$i" -le "$n" ]; do
		k=$((1 + i % 8))
		: >"$d/f$i"
		j=0
		while [ $j -lt $k ]; do printf '%s' "$blk" >>"$d/f$i"; j=$((j + 1)); done
		[ -s "$d/f$i" ] || return 1
		while read -r _; do :; done <"$d/f$i"
		mv "$d/f$i" "$d/g$i"
		i=$((i + 1))
	done
	ls -l "$d" >/dev/null
	rm -f "$d"/g*
}

wl_run() {
	name=$1 src=$2 m=$3
	WL_MNT=$m
	case "$name" in
	build)
		mkdir "$m/build" && tar xf "$src/src.tar" -C "$m/build" || return 1
		cd "$m/build/reference-server" || return 1
		ls ./*.c | xargs -P 4 -n 1 gcc -O1 -std=c11 -D_GNU_SOURCE -pthread \
			-I"$LAB_TOP/build/headers/include" -c || return 1
		gcc -pthread -o fuse-uring-server ./*.o -luring || return 1
		./fuse-uring-server --help >/dev/null
		cd / || return 1
		;;
	tree)
		ls -lR "$m/tree" >/dev/null || return 1
		find "$m/tree" -type f -name '*.h' | wc -l >/dev/null
		find "$m/tree" -newer "$m/tree/linux/fuse.h" >/dev/null
		du -s "$m/tree" >/dev/null
		;;
	git)
		git clone -q --no-local --single-branch --branch wl "$src/src.git" "$m/repo" || return 1
		cd "$m/repo" || return 1
		git status --short >/dev/null &&
		git checkout -q 5c80109 &&
		git status --short >/dev/null &&
		git checkout -q wl &&
		git log --oneline | wc -l >/dev/null || return 1
		cd / || return 1
		;;
	fio-seq)
		wl_fio --name=seqwrite --rw=write --bs=1M --size=16M &&
		wl_fio --name=seqread --rw=read --bs=1M --size=16M --numjobs=2 &&
		wl_fio --name=direct --rw=read --bs=1M --size=4M --direct=1 --numjobs=6 &&
		wl_fio --name=dwrite --rw=write --bs=1M --size=4M --direct=1 --numjobs=4
		;;
	fio-rand)
		wl_fio --name=rr --rw=randread --bs=4k --size=4M --io_size=256k --direct=1 --numjobs=12 &&
		wl_fio --name=rw --rw=randwrite --bs=4k --size=4M --io_size=128k --direct=1 --numjobs=6 &&
		wl_fio --name=rb --rw=randread --bs=4k --size=4M --io_size=256k --numjobs=4 &&
		wl_fio --name=rs --rw=randread --bsrange=4k-128k --size=4M --io_size=2M --direct=1 --numjobs=6
		;;
	mixed)
		# fio itself in the background (not a function's subshell), so
		# that $! is fio and SIGINT stops it and its jobs cleanly
		fio --minimal --output=/dev/null --directory="$m" --ioengine=psync \
			--fallocate=none --name=stream --rw=read --bs=1M --size=64M \
			--direct=1 --numjobs=3 --loops=100 --rate=12m &
		fpid=$!
		pids=
		for k in 1 2 3; do
			wl_churn "$m/small$k" 30 &
			pids="$pids $!"
		done
		st=0
		for p in $pids; do wait "$p" || st=1; done
		kill -INT $fpid 2>/dev/null
		wait $fpid
		return $st
		;;
	lab)
		pids=
		for j in 1 2 3 4; do
			( for k in 1 2; do
				dd if="$m/big$j" of=/dev/null bs=1M iflag=direct status=none || exit 1
			done ) &
			pids="$pids $!"
		done
		st=0
		ls -lR "$m/tree" >/dev/null || st=1
		cat "$m"/tree/netfilter/*.h >/dev/null || st=1
		find "$m/tree" -name '*.h' | wc -l >/dev/null
		for p in $pids; do wait "$p" || st=1; done
		return $st
		;;
	*) echo "wl_run: no workload '$name'" >&2; return 1 ;;
	esac
}
