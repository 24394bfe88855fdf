# SPDX-License-Identifier: GPL-2.0-only OR MIT
"""commands: every command the book shows must exist.

On source-read, each page's command lines (the literal blocks, indented,
with or without a "$ " prompt, and ``inline literals``) are read for:

* ``make TARGET`` (``make -C DIR TARGET`` too): TARGET is a rule of that
  Makefile;
* ``FLAVOR=NAME``: a flavour the project builds (normal, debug);
* a path into the repository (labs/..., scripts/..., vm/..., tests/...,
  bench/..., debate/..., reference-server/..., kernel-patches/...): it
  exists (``NN`` and ``*`` stand for any).

A command that fails one of these is a warning of type ``commands`` (an
error under -W): the book then cannot print a command the repository does
not have, as it once printed ``FLAVOR=dev``.
"""
import glob
import os
import re

from sphinx.util import logging

logger = logging.getLogger(__name__)

FLAVORS = {'normal', 'debug'}
ROOTS = ('labs', 'scripts', 'vm', 'tests', 'bench', 'debate',
         'reference-server', 'kernel-patches')
# make at the start of a command (after variables, or after && or ;)
MAKE = re.compile(r'(?:^|&&|;)\s*(?:[A-Z_]+=\S*\s+)*make\s+(?:-s\s+)?(?:-C\s+(\S+)\s+)?'
                  r'((?:[A-Z_]+=\S*\s+)*)([a-z][\w-]*)?')
FLAVOR = re.compile(r'\bFLAVOR=([\w-]+)')
PATH = re.compile(r'(?<![\w/.~-])((?:%s)/[\w./*-]*)' % '|'.join(map(re.escape, ROOTS)))


def targets(top, subdir):
    mk = os.path.join(top, subdir or '', 'Makefile')
    if not os.path.exists(mk):
        return None
    text = open(mk).read()
    return set(re.findall(r'^([a-z][\w-]*)\s*:(?!=)', text, re.M))


def path_exists(top, path):
    """The path, or a file it is the start of ("tests/guest/10" for
    tests/guest/10-pipeline.sh); NN, N and "name" stand for any."""
    path = path.rstrip('.,:;)/')
    pattern = path.replace('NN', '[0-9][0-9]').replace('name', '*')
    pattern = re.sub(r'(?<=[0-9/])N', '[0-9]', pattern)
    return bool(glob.glob(os.path.join(top, pattern)) or
                glob.glob(os.path.join(top, pattern) + '*'))


def command_lines(text):
    """(line number, text) of what is shown as a command."""
    for n, line in enumerate(text.split('\n'), 1):
        # literal blocks (four spaces) and code-block bodies (three)
        if line.startswith('   '):
            yield n, line.strip().removeprefix('$ ')
        for lit in re.findall(r'``([^`]+)``', line):
            yield n, lit


def check(app, docname, source):
    if docname == 'docs/series':	# the patches' own text, not commands
        return
    top = app.srcdir
    cache = {}
    for n, cmd in command_lines(source[0]):
        problems = []
        for m in MAKE.finditer(cmd):
            subdir, target = m.group(1), m.group(3)
            if not target or (subdir and subdir.startswith('$')):
                continue
            if subdir not in cache:
                cache[subdir] = targets(top, subdir)
            if cache[subdir] is not None and target not in cache[subdir]:
                problems.append(f'"make {target}": no such rule in '
                                f'{os.path.join(subdir or "", "Makefile")}')
        for m in FLAVOR.finditer(cmd):
            if m.group(1) not in FLAVORS:
                problems.append(f'FLAVOR={m.group(1)}: the flavours are '
                                f'{", ".join(sorted(FLAVORS))}')
        for m in PATH.finditer(cmd):
            p = m.group(1)
            # build/ paths are made by the commands; these are the repo's
            if not path_exists(top, p):
                problems.append(f'{p}: no such file in the repository')
        for p in problems:
            logger.warning(f'a command the book shows: {p}', type='commands',
                           location=(docname, n))


def setup(app):
    app.connect('source-read', check)
    return {'version': '1', 'parallel_read_safe': True,
            'parallel_write_safe': True}
