#!/usr/bin/python3
"""tests/facts.py: docs/_ext/facts.py, the rule that keeps the READMEs'
measured numbers true, on a small tree of its own; run on the host by
scripts/check.

Each check copies facts.py into a temporary tree with a docs/facts.txt and
a README.md, plants what it wants (a stale number, a run that took three
times as long), runs the program as scripts do, and reads what it printed.
Prints "ok NAME" or "not ok NAME: why" per check and exits 1 if any
failed.
"""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from unitcheck import Checks  # tests/unitcheck.py, beside this file

TOP = Path(__file__).resolve().parent.parent
check = Checks("facts")
trees = []

FACTS = """# test facts
check.time     933   # a run
check.checks  2118   # a run
"""
README = """make check took 15 min 33 s<!-- fact: check.time --> for
2118<!-- fact: check.checks --> checks, about 16 minutes<!-- fact: ~check.time -->;
there are 2<!-- fact: patches.7.2 --> patches.
"""


def tree(facts=FACTS, readme=README):
    """A tree with facts.py, docs/facts.txt, README.md and two patches."""
    top = Path(tempfile.mkdtemp(prefix="facts-test."))
    trees.append(top)
    (top / "docs" / "_ext").mkdir(parents=True)
    shutil.copy(TOP / "docs" / "_ext" / "facts.py", top / "docs" / "_ext")
    (top / "docs" / "facts.txt").write_text(facts)
    (top / "README.md").write_text(readme)
    (top / "kernel-patches").mkdir()
    for name in ("0000-cover-letter.patch", "0001-a.patch", "0002-b.patch"):
        (top / "kernel-patches" / name).write_text("")
    return top


# The machine the stated times are for (facts.py's MACHINE), unless a
# check says otherwise.
TCG2 = {"FACTS_ACCEL": "tcg", "VM_CPUS": "2", "FACTS_HOST_CPUS": "2"}


def run(top, *args, machine=TCG2):
    env = {k: v for k, v in os.environ.items() if k not in ("ACCEL", "FACTS_FILE")}
    p = subprocess.run([sys.executable, str(top / "docs" / "_ext" / "facts.py"), *args],
                       capture_output=True, text=True, env={**env, **machine})
    return p.returncode, p.stdout + p.stderr


def main():
    t = tree()
    status, out = run(t, "check")
    check("a README whose numbers are its facts passes", status == 0 and out.startswith("ok "), out)
    check("... and says how many it checked", "3 marked numbers" not in out and "4 marked numbers" in out, out)

    # A stale number planted in the README fails, naming the fact and both values.
    (t / "README.md").write_text(README.replace("2118<!--", "2117<!--"))
    status, out = run(t, "check")
    check("a planted stale count in the README fails", status == 1 and
          'not ok fact check.checks (README.md:2): the text says "2117", the fact is "2118"' in out, out)
    (t / "README.md").write_text(README.replace("2<!-- fact: patches", "3<!-- fact: patches"))
    status, out = run(t, "check")
    check("a count the tree disagrees with fails (3 patches said, 2 in kernel-patches/)",
          status == 1 and 'not ok fact patches.7.2 (README.md:3): the text says "3", the fact is "2"' in out, out)
    (t / "README.md").write_text(README.replace("about 16 minutes", "about 12 minutes"))
    status, out = run(t, "check")
    check("a stale rounded time fails", status == 1 and '"about 16 minutes"' in out, out)
    (t / "README.md").write_text(README.replace("2118<!--", "12118<!--"))
    status, out = run(t, "check")
    check("a number that only ends with the fact (12118 for 2118) fails", status == 1 and
          "not ok fact check.checks" in out, out)

    # A fact that no page says any more is reported.
    t = tree(facts=FACTS + "costs.time 197 # unsaid\n")
    status, out = run(t, "check")
    check("a measured fact no page says fails", status == 1 and
          "not ok fact costs.time: docs/facts.txt has it, no page says it" in out, out)

    # A run against the facts: times within a factor of two, counts exact.
    t = tree()
    for got, want in ((933, 0), (1866, 0), (467, 0), (1867, 1), (466, 1)):
        status, out = run(t, "compare", "check.time", str(got))
        check(f"a run of {got} s against 933 s {'passes' if want == 0 else 'fails'}", status == want, out)
    for machine in ({**TCG2, "FACTS_ACCEL": "kvm"}, {**TCG2, "VM_CPUS": "4"}, {**TCG2, "FACTS_HOST_CPUS": "8"}):
        status, out = run(t, "compare", "check.time", "100", machine=machine)
        check(f"a time from another machine ({', '.join(f'{k}={v}' for k, v in machine.items())}) "
              "is not compared", status == 0 and "not compared" in out, out)
    status, out = run(t, "compare", "check.checks", "2119", machine={**TCG2, "FACTS_ACCEL": "kvm"})
    check("... but a count is, anywhere", status == 1, out)
    status, out = run(t, "compare", "check.checks", "2119")
    check("a run with one check more than the README says fails", status == 1 and
          "docs/_ext/facts.py set check.checks 2119" in out, out)
    status, out = run(t, "compare", "check.checks", "2118")
    check("a run with the README's count passes", status == 0, out)

    # set rewrites the file and every marked number, rounded ones too.
    status, out = run(t, "set", "check.time", "1500", "check.checks", "2120")
    text = (t / "README.md").read_text()
    check("set rewrites the README's marked numbers", status == 0 and
          "took 25 min 0 s<!-- fact: check.time -->" in text and
          "2120<!-- fact: check.checks -->" in text and
          "about 25 minutes<!-- fact: ~check.time -->" in text, text + out)
    status, out = run(t, "check")
    check("... after which the README passes again", status == 0, out)
    status, out = run(t, "set", "patches.7.2", "4")
    check("a count of the tree cannot be set", status == 2 and "counted from the tree" in out, out)
    status, out = run(t, "set", "nothing.time", "4")
    check("an unknown fact cannot be set", status == 2 and "no fact nothing.time" in out, out)
    return check.status()


if __name__ == "__main__":
    try:
        status = main()
    finally:
        for t in trees:
            shutil.rmtree(t, ignore_errors=True)
    sys.exit(status)
