#!/usr/bin/python3
"""tests/docs-browser-output.py: the browser check's result lines stay
whole when its threads report at once; run on the host by scripts/check.

tests/docs-browser.py loads pages in parallel threads, and each thread
prints its own "ok NAME" lines. scripts/check counts the lines that start
with "ok", "not ok" or "skip", so two lines run together ("...svg+xmlok
docs diagram ...", as a make check log once showed) would lose a check
from the count, or hide a "not ok" inside an "ok" line. This calls its
ok() and not_ok() from 16 threads at once, in a child process whose
output goes to a pipe as scripts/check's does, and checks every line.
Prints "ok NAME" or "not ok NAME: why"; exits 1 on failure.
"""
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

BROWSER = Path(__file__).resolve().parent / "docs-browser.py"
THREADS, LINES = 16, 400

CHILD = f"""
import importlib.util, threading
spec = importlib.util.spec_from_file_location("docs_browser", {str(BROWSER)!r})
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
def run(t):
    for i in range({LINES}):
        (m.ok if i % 2 else lambda n: m.not_ok(n, "planted"))(f"t{{t}} line {{i}}")
ts = [threading.Thread(target=run, args=(t,)) for t in range({THREADS})]
for t in ts: t.start()
for t in ts: t.join()
"""


def main():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True).stdout
    lines = out.splitlines()
    whole = [l for l in lines if re.fullmatch(r"(ok t\d+ line \d+|not ok t\d+ line \d+: planted)", l)]
    name = (f"docs-browser: {THREADS} threads' {THREADS * LINES} result lines "
            f"each on a line of its own")
    if len(whole) == len(lines) == THREADS * LINES:
        print(f"ok {name}")
        return 0
    bad = next((l for l in lines if l not in whole), "")
    print(f"not ok {name}: {len(whole)} whole lines of {len(lines)}, "
          f"for {THREADS * LINES}; the first run together: {bad[:100]!r}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
