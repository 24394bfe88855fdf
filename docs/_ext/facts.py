#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR MIT
"""facts: the numbers the prose states that a run measures, or that the
tree counts, kept true.

A number in the README or the book that a run measures (how long make
check takes, how many checks it runs) or that the tree can count (patches,
lines, test cases) must never be typed by hand and then forgotten. So:

* The tree's counts (``patches.7.2``, ``lines.server``, ...) are computed
  here, from the files, every time they are asked for.
* What runs measure lives in one place, ``docs/facts.txt``: one line per
  fact, ``KEY VALUE``, then a comment on what measured it. Times are in
  seconds.
* The book says them with a role, ``:fact:`check.time``` (``15 min 33 s``)
  or ``:fact:`~check.time``` (``about 16 minutes``): generated at build
  time, they cannot drift from the file.
* Markdown has no roles, so the READMEs write the rendering and mark it:
  ``15 min 33 s<!-- fact: check.time -->``. ``facts.py check`` (a host
  check of ``make check``) fails on a marked number that is not what the
  fact renders, and on a fact no run measures any more.
* The runs compare what they measured with the file: ``facts.py compare
  KEY VALUE`` fails when a time is more than twice or less than half the
  stated one, or a count differs at all. scripts/check does it for its
  time and its number of checks, scripts/fresh-check for each command's
  time, scripts/bench for the cost table and the full benchmark,
  scripts/conformance for the suite. The failure says the command that
  brings the file and every marked README up to date: ``facts.py set KEY
  VALUE``.

Used as a Sphinx extension (conf.py) and as a program: docs/_ext/facts.py.
"""
import glob
import os
import re
import sys

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# FACTS_FILE: another copy (scripts/fresh-check compares with the tested
# commit's, not the working tree's).
FACTS = os.environ.get('FACTS_FILE') or os.path.join(TOP, 'docs', 'facts.txt')
# Where the times were measured. A run elsewhere (KVM, more cores) is not
# held to them: its times say nothing about these.
MACHINE = ('tcg', 2, 2)		# accelerator, guest CPUs, host CPUs
# Markdown files whose marked numbers are checked and rewritten by set.
MARKDOWN = ('README.md', 'reference-server/README.md',
            'kernel-patches/README.md', 'kernel-patches-7.3/README.md')
MARKER = re.compile(r'<!-- fact: (~?)([\w.-]+) -->')


def _files(pattern):
    return sorted(glob.glob(os.path.join(TOP, pattern)))


def _lines(*patterns):
    return sum(sum(1 for _ in open(f)) for p in patterns for f in _files(p))


def _series(folder):
    return sum(1 for f in _files(folder + '/[0-9][0-9][0-9][0-9]-*.patch')
               if not os.path.basename(f).startswith('0000-'))


def _uapi_error_cases():
    text = open(os.path.join(TOP, 'tests/uapi-errors/main.c')).read()
    return len(re.findall(r'^\t\{ "[a-z0-9-]+", case_', text, re.M))


# What the tree counts: computed, never stored.
COUNTED = {
    'patches.7.2': lambda: _series('kernel-patches'),
    'patches.7.3': lambda: _series('kernel-patches-7.3'),
    'lines.server': lambda: _lines('reference-server/*.c', 'reference-server/*.h'),
    'lines.first-request': lambda: _lines('tests/first-request.c'),
    'cases.uapi-errors': _uapi_error_cases,
}


class FactError(Exception):
    pass


def measured():
    """docs/facts.txt: {KEY: (int VALUE, comment)}."""
    facts = {}
    for n, line in enumerate(open(FACTS), 1):
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        m = re.match(r'([\w.-]+)\s+(\d+)\s*(?:#\s*(.*))?$', line)
        if not m:
            raise FactError('docs/facts.txt:%d: not "KEY VALUE # what measured it": %s' % (n, line))
        facts[m.group(1)] = (int(m.group(2)), m.group(3) or '')
    return facts


def value(key):
    if key in COUNTED:
        return COUNTED[key]()
    facts = measured()
    if key not in facts:
        raise FactError('no fact %s: not counted by docs/_ext/facts.py, not in docs/facts.txt' % key)
    return facts[key][0]


def is_time(key):
    return key.endswith('.time') or '.time.' in key


def round2(n):
    """How "about N" says a count: 47 -> 47, 161 -> 160, 5035 -> 5000,
    5300 -> 5500 (to 10 under 1000, to 500 above: a line count then does
    not move with every change)."""
    if n < 100:
        return n
    scale = 10 if n < 1000 else 500
    return (n + scale // 2) // scale * scale


def render(key, about=False):
    """How the prose says KEY: '15 min 33 s', 'about 16 minutes', '2115',
    'about 5,000'."""
    v = value(key)
    if is_time(key):
        if about:
            if v < 90:
                return 'about %d s' % round2(v)
            return 'about %d minutes' % ((v + 30) // 60)
        return '%d min %d s' % divmod(v, 60) if v >= 60 else '%d s' % v
    if about:
        return 'about {:,}'.format(round2(v))
    return str(v)


def markers():
    """Every marked number in the Markdown files: (file, line, about, key,
    the text before the marker on its line)."""
    for md in MARKDOWN:
        path = os.path.join(TOP, md)
        if not os.path.exists(path):
            continue
        for n, line in enumerate(open(path), 1):
            for m in MARKER.finditer(line):
                yield md, n, m.group(1) == '~', m.group(2), line[:m.start()]


def check():
    """ok/not ok lines: every marked number is what its fact renders, and
    every measured fact is said somewhere."""
    bad = 0
    said = set()
    nmarks = 0
    for md, n, about, key, before in markers():
        nmarks += 1
        said.add(key)
        try:
            want = render(key, about)
        except FactError as e:
            print('not ok fact %s (%s:%d): %s' % (key, md, n, e))
            bad += 1
            continue
        if not re.search(r'(?<![\w.,])' + re.escape(want) + '$', before):
            number = re.search(r'(?:[Aa]bout )?[\d,]+(?: min \d+ s| s| minutes)?$', before)
            got = number.group(0) if number else before[-20:].strip()
            print('not ok fact %s (%s:%d): the text says "%s", the fact is "%s"%s'
                  % (key, md, n, got, want,
                     '' if key in COUNTED else
                     ' (docs/facts.txt; after a new run: docs/_ext/facts.py set %s VALUE)' % key))
            bad += 1
    for rst in _files('docs/*.rst') + _files('labs/*/README.rst') + _files('index.rst'):
        said.update(m for m in re.findall(r':fact:`~?([\w.-]+)`', open(rst).read()))
    try:
        facts = measured()
    except FactError as e:
        print('not ok facts: %s' % e)
        return 1
    for key in facts:
        if key not in said:
            print('not ok fact %s: docs/facts.txt has it, no page says it: delete it' % key)
            bad += 1
    if not bad:
        print('ok the prose\'s %d marked numbers are their facts, and docs/facts.txt\'s %d '
              'measured facts are each said' % (nmarks, len(facts)))
    return 1 if bad else 0


def this_machine():
    """(accelerator, guest CPUs, host CPUs) of the runs here: FACTS_ACCEL or
    ACCEL, else what vm/run found (build/vm/accel); VM_CPUS, else vm/run's
    2; FACTS_HOST_CPUS, else os.cpu_count()."""
    accel = os.environ.get('FACTS_ACCEL') or os.environ.get('ACCEL', '')
    if accel not in ('kvm', 'tcg'):
        try:
            accel = open(os.path.join(TOP, 'build', 'vm', 'accel')).read().strip()
        except OSError:
            accel = 'unknown'
    cpus = os.environ.get('VM_CPUS') or '2'
    host = os.environ.get('FACTS_HOST_CPUS') or str(os.cpu_count() or 1)
    return accel, int(cpus) if cpus.isdigit() else 0, int(host) if host.isdigit() else 0


def compare(key, got):
    """A run's measurement against the stated fact: a time within a factor
    of two, a count exact. Prints ok or not ok; 0 if ok."""
    want = value(key)
    if is_time(key) and this_machine() != MACHINE:
        print('ok fact %s: not compared: the stated times are for QEMU under %s, %d guest CPUs on '
              '%d host CPUs; this run: %s, %d on %d (it took %d s)'
              % ((key,) + MACHINE + this_machine() + (got,)))
        return 0
    if is_time(key):
        ok = want <= got * 2 and got <= want * 2
        how = 'within a factor of two'
        shown = lambda s: '%d min %d s' % divmod(s, 60)
    else:
        ok = got == want
        how = 'exactly'
        shown = str
    if ok:
        print('ok fact %s: this run measured %s, the prose says %s (%s)'
              % (key, shown(got), shown(want), how))
        return 0
    print('not ok fact %s: this run measured %s, the prose says %s, not %s: if the run is '
          'right, docs/_ext/facts.py set %s %d, and commit'
          % (key, shown(got), shown(want), how, key, got))
    return 1


def set_facts(pairs):
    """Write new values into docs/facts.txt and every marked README."""
    lines = open(FACTS).read().split('\n')
    for key, new in pairs:
        if key in COUNTED:
            raise FactError('%s is counted from the tree, not set' % key)
        for i, line in enumerate(lines):
            m = re.match(r'([\w.-]+)(\s+)(\d+)(.*)$', line)
            if m and m.group(1) == key:
                # the value keeps its right edge: the column stays aligned
                pad = max(1, len(m.group(2)) + len(m.group(3)) - len(str(new)))
                lines[i] = '%s%s%d%s' % (key, ' ' * pad, new, m.group(4))
                break
        else:
            raise FactError('no fact %s in docs/facts.txt: add it by hand, with what measures it' % key)
    old = {k: (render(k), render(k, True)) for k, _ in pairs}
    with open(FACTS, 'w') as f:
        f.write('\n'.join(lines))
    for md in MARKDOWN:
        path = os.path.join(TOP, md)
        if not os.path.exists(path):
            continue
        text = open(path).read()

        def fix(m):
            before, about, key = m.group(1), m.group(2) == '~', m.group(3)
            if key in old and re.search(r'(?<![\w.,])' + re.escape(old[key][about]) + '$', before):
                before = before[:len(before) - len(old[key][about])] + render(key, about)
            return before + m.group(0)[len(m.group(1)):]
        text = re.sub(r'([^\n]*?)<!-- fact: (~?)([\w.-]+) -->', fix, text)
        with open(path, 'w') as f:
            f.write(text)


def fact_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    from docutils import nodes
    about = text.startswith('~')
    try:
        return [nodes.Text(render(text.lstrip('~'), about))], []
    except FactError as e:
        msg = inliner.reporter.error(str(e), line=lineno)
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]


def setup(app):
    app.add_role('fact', fact_role)
    return {'parallel_read_safe': True}


USAGE = """usage: docs/_ext/facts.py COMMAND
  get KEY            the fact's value (seconds for a time)
  render [~]KEY      how the prose says it (~: rounded, "about ...")
  check              every marked number in the READMEs is its fact
  compare KEY VALUE  a run's measurement against the fact (a time within
                     a factor of two, a count exactly); exit 1 if not
  set KEY VALUE...   new values into docs/facts.txt and the READMEs"""


def main(argv):
    try:
        if len(argv) == 2 and argv[0] == 'get':
            print(value(argv[1]))
        elif len(argv) == 2 and argv[0] == 'render':
            print(render(argv[1].lstrip('~'), argv[1].startswith('~')))
        elif argv == ['check']:
            return check()
        elif len(argv) == 3 and argv[0] == 'compare':
            return compare(argv[1], int(argv[2]))
        elif len(argv) >= 3 and argv[0] == 'set' and len(argv) % 2 == 1:
            set_facts([(argv[i], int(argv[i + 1])) for i in range(1, len(argv), 2)])
        else:
            print(USAGE, file=sys.stderr)
            return 2
    except (FactError, ValueError, OSError) as e:
        print('facts: %s' % e, file=sys.stderr)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
