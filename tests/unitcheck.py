"""tests/unitcheck.py: the result lines of the host's Python tests.

scripts/check counts lines that start with "ok", "not ok" or "skip", so
every test prints its checks the same way: check(NAME, COND, WHY) prints
"ok PREFIX: NAME" or "not ok PREFIX: NAME: WHY", and status() is the exit
status, 1 if any failed.
"""


class Checks:
    def __init__(self, prefix):
        self.prefix = prefix
        self.failed = 0

    def __call__(self, name, cond, why=""):
        if cond:
            print(f"ok {self.prefix}: {name}")
        else:
            self.failed += 1
            print(f"not ok {self.prefix}: {name}: {why}")

    def status(self):
        return 1 if self.failed else 0
