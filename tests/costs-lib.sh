# tests/costs-lib.sh: reading bench/costs-report's costs.json, for the cost
# tests of both kernels (tests/guest/41-costs.sh, tests/guest/7.3/41-costs.sh).
# Sourced after tests/lib.sh; needs COSTS (the costs.json) and COSTS_AT, the
# folder suffix of the kernel's configurations ("" on 7.2, "@7.3" on 7.3:
# bench/costs).

# cost RUN CONFIG JOB KEY: one count, per data request (as in the table).
cost() {
	python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))["runs"][sys.argv[3]][sys.argv[4] + sys.argv[2]]["jobs"][sys.argv[5]][sys.argv[6]]
v = round(c, 2)
print(int(v) if float(v).is_integer() else v)' "$COSTS" "$COSTS_AT" "$@"
}

# minus CONFIG-A CONFIG-B JOB KEY: run 1's count of CONFIG-A less
# CONFIG-B's, per data request.
minus() {
	python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["runs"]["1"]
a, b = (r[c + sys.argv[2]]["jobs"][sys.argv[5]][sys.argv[6]] for c in sys.argv[3:5])
print("%g" % round(a - b, 2))' "$COSTS" "$COSTS_AT" "$@"
}

# at_most_peer: every reference-server job of this kernel whose requests
# exceed passthrough_hp's on the same job, or "none".
at_most_peer() {
	python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["runs"]["1"]
at = sys.argv[2]
peer = r["passthrough_hp" + at]["jobs"]
out = []
for cfg, entry in sorted(r.items()):
    if not cfg.startswith("refsrv-") or cfg.partition("@")[2] != at.lstrip("@"):
        continue
    for job, c in sorted(entry["jobs"].items()):
        if c["requests"] > peer[job]["requests"]:
            out.append("%s %s: %d > %d" % (cfg, job, c["requests"], peer[job]["requests"]))
print("; ".join(out) or "none")' "$COSTS" "$COSTS_AT"
}

# agrees JOB KEY: True if the runs agree on KEY within 1 % (over every
# configuration of the file).
agrees() {
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["agreement"][sys.argv[2]][sys.argv[3]]["agree"])' \
		"$COSTS" "$@"
}
