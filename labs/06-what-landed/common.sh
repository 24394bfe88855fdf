# labs/06-what-landed/common.sh: what the two halves of lab 06 (run on 7.2,
# run-7.3 on 7.3) share, sourced after labs/lib.sh. Each half shows the same
# steps on its kernel and keeps its numbers in build/vm/out/lab06/, the one
# folder of the host a guest can write, so that the 7.3 half can set both
# side by side (lab06_table).
LAB06_OUT=$LAB_TOP/build/vm/out/lab06

# lab06_files: the backing files both halves read: data.bin (8 MiB),
# large.bin (2 MiB) and small.bin (64 KiB); FUSE over io_uring on.
lab06_files() {
	rm -rf "$W"
	mkdir -p "$B" "$M" "$W/abort"
	step "0: the files, and FUSE over io_uring switched on"
	show_sh "echo 1 > $PARAM"
	show_sh "head -c 8M /dev/urandom > $B/data.bin"
	head -c 2M /dev/urandom >"$B/large.bin"
	head -c 64K /dev/urandom >"$B/small.bin"
	echo "(and large.bin, 2 MiB, and small.bin, 64 KiB, for step 4)"
}

# payload_per_queue: the bytes the last server said each queue allocated.
payload_per_queue() {
	sed -n 's/.*memory per queue: payload \([0-9]*\) B .*/\1/p' "$LOG" | tail -n 1
}

# zero_copied_reads FILE BS: read FILE through the mount with direct I/O,
# compare its checksum with the backing file's, and count the READs of it
# the trace marks zc=1 (their data went by READ_FIXED) among all its READs;
# leaves the count in ZC as "Z of N".
zero_copied_reads() {
	zr_mark=$(wc -l <"$LOG")
	printf '$ dd if=%s/%s bs=%s iflag=direct | sha256sum\n' "$M" "$1" "$2"
	echo "$1 mount:   $(dd if="$M/$1" bs="$2" iflag=direct status=none | sha256sum | cut -d' ' -f1)"
	echo "$1 backing: $(sha "$B/$1")"
	zr_reads=$(tail -n +"$((zr_mark + 1))" "$LOG" | grep -E '^trace ring .* op=READ ')
	zr_n=$(printf '%s\n' "$zr_reads" | grep -c ' op=READ ')
	zr_z=$(printf '%s\n' "$zr_reads" | grep -c ' zc=1$')
	ZC="$zr_z of $zr_n"
	echo "READs of $1 zero-copied (zc=1): $ZC"
}

# lab06_copies CONFIG...: count what each byte costs in copies on CONFIGs
# (bench/servers.sh names) with the cost table's own tools: bench/costs
# runs its three fio jobs of 8 MiB on each, the kernel's fuse_uring_send
# and fuse_uring_commit events count the bytes it copied and lent, and
# bench/costs-report sums them. Prints, per configuration, the copies per
# byte of a direct READ and of a direct WRITE; leaves them in
# COPIES_<config> as "READ/WRITE".
lab06_copies() {
	show_sh "COSTS_SIZE=8M COSTS_RUNS=1 COSTS_CONFIGS='$*' LAB_RUN=$W bench/costs"
	python3 bench/costs-report "$W" >/dev/null || return 1
	printf '%-24s %-8s %s\n' "copies per byte:" "READ" "WRITE"
	for lc_config in "$@"; do
		lc_v=$(python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["runs"]["1"]
c = [k for k in r if k.split("@")[0] == sys.argv[2]][0]
j = r[c]["jobs"]
print("%.2f/%.2f" % (j["randread-direct"]["copies_per_byte"], j["seqwrite-direct"]["copies_per_byte"]))' \
			"$W/bench/costs.json" "$lc_config") || return 1
		printf '%-24s %-8s %s\n' "$lc_config" "${lc_v%/*}" "${lc_v#*/}"
		eval "COPIES_$(echo "$lc_config" | tr -c 'a-z0-9\n' _)=\$lc_v"
	done
}

# lab06_save NAME KEY=VALUE...: this half's numbers, for the table.
lab06_save() {
	ls_name=$1
	shift
	mkdir -p "$LAB06_OUT"
	printf '%s\n' "$@" >"$LAB06_OUT/$ls_name.txt"
}

# lab06_get NAME KEY: a number a half saved, or "(not run)".
lab06_get() {
	sed -n "s/^$2=//p" "$LAB06_OUT/$1.txt" 2>/dev/null | grep . || echo "(not run)"
}

# lab06_table: the two halves side by side, from what each saved.
lab06_table() {
	[ -f "$LAB06_OUT/v2.txt" ] ||
		echo "(no v2 numbers: run the 7.2 half first, vm/run -- labs/06-what-landed/run)"
	printf '%-40s %-18s %-18s\n' "" "v2 series (7.2)" "Linux 7.3"
	lt_row() { printf '%-40s %-18s %-18s\n' "$1" "$(lab06_get v2 "$2")" "$(lab06_get 7.3 "$2")"; }
	lt_row "payload per queue, B (2 buffers)" PAYLOAD_PER_QUEUE
	lt_row "VmPin, kB: plain ring or pool" PIN_PLAIN
	lt_row "VmPin, kB: pinned-buffers, pool-fixed" PIN_PINNED
	lt_row "zero-copied READs, 2 MiB file" ZC_LARGE
	lt_row "zero-copied READs, 64 KiB file" ZC_SMALL
	lt_row "copies per byte, READ/WRITE: copying" COPIES_COPYING
	lt_row "copies per byte, READ/WRITE: zero-copy" COPIES_ZERO_COPY
}
