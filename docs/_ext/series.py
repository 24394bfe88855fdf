"""series: render kernel-patches/*.patch into docs/series.rst at build time.

docs/series.rst holds the hand-written introduction and the line
``.. series-generated-here``. On ``source-read`` this extension replaces that
line with reStructuredText generated from:

* ``kernel-patches/0000-cover-letter.patch`` (the cover letter), if present;
* every other ``kernel-patches/*.patch`` (``git format-patch`` output), in
  file-name order: subject, author, date, the hand-written note from
  ``docs/series-notes.txt``, the commit message, the text between ``---``
  and the diffstat (how the patch differs from v2), the diffstat and the
  diff;
* ``docs/series-v2.txt``: the v2 posting's 14 patches, what 7.2 already
  carries (each claim checked against the patched tree) and which of our
  patches implements the rest, matched by subject; each number carries its
  posted/rebuilt mark (``v2mark.py``).

Nothing is copied from the patches by hand, so the page cannot go stale.
Problems are Sphinx warnings of type ``series`` (errors under ``-W``): a
patch without a note, a note for no patch, a 7.2 claim the tree does not
back, a file that is not a patch.
"""

import email
import email.header
import email.policy
import os
import re

from sphinx.util import logging

from v2mark import REBUILT, mark_for_patch

logger = logging.getLogger(__name__)

MARKER = '.. series-generated-here'
DOCNAME = 'docs/series'
COVER = '0000-cover-letter.patch'


def warn(msg, location=DOCNAME):
    logger.warning(msg, type='series', location=location)


def norm(subject):
    """Subjects compare without case and runs of blanks."""
    return ' '.join(subject.split()).lower()


def decode(value):
    return str(email.header.make_header(email.header.decode_header(value or '')))


def strip_prefix(subject):
    """'[PATCH v3 02/11] fuse: x' -> ('02/11', 'fuse: x')."""
    m = re.match(r'\s*\[([^\]]*)\]\s*(.*)', subject, re.S)
    if not m:
        return '', ' '.join(subject.split())
    num = re.search(r'(\d+/\d+)', m.group(1))
    return (num.group(1) if num else ''), ' '.join(m.group(2).split())


DIFFSTAT_LINE = re.compile(r'^ \S.*\|\s+(\d+|Bin)')
DIFFSTAT_SUMMARY = re.compile(r'^ \d+ files? changed')


def parse_patch(path):
    """Split one format-patch file into its parts; None if it is not one."""
    with open(path, encoding='utf-8', errors='replace') as f:
        text = f.read()
    msg = email.message_from_string(text, policy=email.policy.compat32)
    if not msg['Subject']:
        return None
    number, subject = strip_prefix(decode(msg['Subject']))
    body = msg.get_payload()
    if not isinstance(body, str):
        return None
    lines = body.split('\n')
    # git's signature ('-- ' then the version) closes the file.
    for i in range(len(lines) - 1, -1, -1):
        if lines[i] == '-- ':
            lines = lines[:i]
            break
    # The commit message ends at the first line that is exactly '---'.
    try:
        sep = lines.index('---')
    except ValueError:
        sep = len(lines)
    message = '\n'.join(lines[:sep]).strip('\n')
    rest = lines[sep + 1:]
    # The diff starts at the first 'diff --git' line.
    start = next((i for i, l in enumerate(rest) if l.startswith('diff --git ')),
                 len(rest))
    between, diff = rest[:start], rest[start:]
    # Between '---' and the diff: free text (the notes), then the diffstat.
    first_stat = next((i for i, l in enumerate(between)
                       if DIFFSTAT_LINE.match(l) or DIFFSTAT_SUMMARY.match(l)),
                      len(between))
    notes = '\n'.join(between[:first_stat]).strip('\n')
    diffstat = '\n'.join(between[first_stat:]).strip('\n')
    return {
        'file': os.path.basename(path),
        'number': number,
        'subject': subject,
        'author': decode(msg['From']),
        'date': decode(msg['Date']),
        'message': message,
        'notes': notes,
        'diffstat': diffstat,
        'diff': '\n'.join(diff).rstrip('\n'),
    }


def read_notes(path):
    """docs/series-notes.txt: '[subject]' lines, each followed by its note
    (reStructuredText). Lines before the first '[' are comments."""
    notes, current = {}, None
    if not os.path.exists(path):
        return notes
    with open(path, encoding='utf-8') as f:
        for line in f:
            m = re.match(r'^\[(.+)\]\s*$', line)
            if m:
                current = m.group(1)
                notes[current] = []
            elif current is not None:
                notes[current].append(line.rstrip('\n'))
    return {s: '\n'.join(l).strip('\n') for s, l in notes.items()}


def read_v2(path, tree):
    rows = []
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            if not line.strip() or line.startswith('#'):
                continue
            parts = [p.strip() for p in line.split('|')]
            if len(parts) != 3:
                warn(f'{path}:{n}: expected "number | subject | evidence"')
                continue
            num, subject, evidence = parts
            if evidence:
                rel, _, ident = evidence.partition(' ')
                src = os.path.join(tree, rel)
                if not os.path.exists(src):
                    warn(f'{path}:{n}: {rel} not in {tree}: run "make kernel"')
                else:
                    with open(src, encoding='utf-8', errors='replace') as s:
                        if not re.search(r'\b%s\b' % re.escape(ident), s.read()):
                            warn(f'{path}:{n}: v2 patch {num} is said to be in '
                                 f'7.2 as {ident} in {rel}, but the patched '
                                 f'tree has no {ident} there')
                evidence = (rel, ident)
            rows.append((num, subject, evidence))
    return rows


def indent(text, by='   '):
    return '\n'.join((by + l) if l.strip() else '' for l in text.split('\n'))


def literal(text, lang='none'):
    if not text.strip():
        return ''
    return f'.. code-block:: {lang}\n\n{indent(text.expandtabs(8))}\n'


def label(subject):
    return 'series-' + re.sub(r'[^a-z0-9]+', '-', subject.lower()).strip('-')


def heading(text, char):
    return f'{text}\n{char * len(text)}\n'


def generate(app):
    top = app.srcdir
    cfg = app.config
    pdir = os.path.join(top, cfg.series_patch_dir)
    notes_path = os.path.join(top, cfg.series_notes)
    v2_path = os.path.join(top, cfg.series_v2)
    tree = os.path.join(top, cfg.series_tree)

    files = sorted(f for f in os.listdir(pdir) if f.endswith('.patch')) \
        if os.path.isdir(pdir) else []
    for f in files + [os.path.basename(notes_path), os.path.basename(v2_path)]:
        p = os.path.join(pdir, f) if f.endswith('.patch') else \
            os.path.join(top, 'docs', f)
        if os.path.exists(p):
            app.env.note_dependency(p)

    cover, patches = None, []
    for f in files:
        p = parse_patch(os.path.join(pdir, f))
        if p is None:
            warn(f'{cfg.series_patch_dir}/{f} is not a git format-patch file '
                 '(no Subject: header)')
            continue
        if f == COVER:
            cover = p
        else:
            patches.append(p)

    notes = read_notes(notes_path)
    by_subject = {norm(p['subject']): p for p in patches}
    for p in patches:
        if norm(p['subject']) not in {norm(s) for s in notes}:
            warn(f'{cfg.series_patch_dir}/{p["file"]} ("{p["subject"]}") has '
                 f'no note in {cfg.series_notes}: add a paragraph under the '
                 f'line "[{p["subject"]}]" saying what to look at in it')
    for s in notes:
        if norm(s) not in by_subject:
            warn(f'{cfg.series_notes} has a note for "{s}", which is the '
                 f'subject of no patch in {cfg.series_patch_dir}/: fix the '
                 'subject line or remove the note')

    out = []
    v2 = read_v2(v2_path, tree)
    out.append(heading('The v2 posting and this series', '='))
    out.append(
        'Each of the 14 patches of the v2 posting, and where its change is in '
        'this project: already in 7.2 (the identifier is checked in the '
        'patched tree when the book is built), in a patch of this series '
        '(same subject), or still to come.\n')
    table = ['.. list-table::', '   :header-rows: 1', '   :widths: 8 42 50', '',
             '   * - v2', '     - Subject', '     - Here']
    matched = set()
    for num, subject, evidence in v2:
        if evidence:
            rel, ident = evidence
            here = f'in 7.2: ``{ident}`` in ``{rel}``'
        elif norm(subject) in by_subject:
            p = by_subject[norm(subject)]
            matched.add(p['file'])
            here = (f'this series, :ref:`{p["number"] or p["file"]} '
                    f'<{label(p["subject"])}>`')
        else:
            here = 'to come'
        mark = 'rebuilt' if int(num) in REBUILT else 'posted'
        table += [f'   * - {num} :v2:`{mark} {int(num)}`',
                  f'     - {subject}', f'     - {here}']
    out.append('\n'.join(table) + '\n')
    own = [p for p in patches if p['file'] not in matched]
    if own:
        out.append('Patches of this series with no v2 counterpart (by '
                   'subject):\n')
        out.append('\n'.join(
            f'* :ref:`{p["number"] or p["file"]} <{label(p["subject"])}>`: '
            f'{p["subject"]}' for p in own) + '\n')

    out.append(heading('The patches', '='))
    if not patches:
        out.append(f'No patch has landed in ``{cfg.series_patch_dir}/`` yet. '
                   'This page lists each one, with its diff, as soon as it '
                   'does.\n')
    if cover:
        out.append(heading('The cover letter', '-'))
        out.append(f'{cover["subject"]}, from {cover["author"]}, '
                   f'{cover["date"]}.\n')
        out.append(literal(cover['message']))
        if cover['diffstat']:
            out.append(literal(cover['diffstat']))
    for p in patches:
        title = (f'{p["number"]} ' if p['number'] else '') + p['subject']
        out.append(f'.. _{label(p["subject"])}:\n')
        out.append(heading(title, '-'))
        out.append(f'From {p["author"]}, {p["date"]}; file '
                   f'``{cfg.series_patch_dir}/{p["file"]}``.\n')
        note = next((n for s, n in notes.items()
                     if norm(s) == norm(p['subject'])), None)
        if note:
            out.append(heading('What to look at', '~'))
            out.append(note + '\n')
        out.append(heading('Commit message', '~'))
        out.append(literal(p['message']))
        if p['notes']:
            out.append(heading('Below the ---: changes from v2', '~'))
            out.append(literal(p['notes']))
        if p['diffstat']:
            out.append(heading('Diffstat', '~'))
            out.append(literal(p['diffstat']))
        out.append(heading('Diff', '~'))
        out.append(literal(p['diff'], 'diff') or 'The patch has no diff.\n')
    return '\n'.join(out)


# ---- naming a patch in prose ---------------------------------------------
#
# A patch's number changes when the series changes, so prose never writes
# one: :patch:`buffer rings` is "patch N", N read from kernel-patches/ (the
# patch whose subject contains the words), linked to its section of the
# series page; :v2patch:`10` is the v2 posting's "v2 patch 10/14". A literal
# "patch 8", "4/14" or "the last patch" in prose is a warning (an error
# under -W), as is a :patch: that names no patch or several.

def our_patches(app):
    pdir = os.path.join(app.srcdir, app.config.series_patch_dir)
    out = []
    for f in sorted(os.listdir(pdir)) if os.path.isdir(pdir) else []:
        if f.endswith('.patch') and f != COVER:
            p = parse_patch(os.path.join(pdir, f))
            if p:
                out.append(p)
    return out


def patch_role(name, rawtext, text, lineno, inliner, options={}, content=[]):
    from docutils import nodes
    from sphinx.addnodes import pending_xref
    app = inliner.document.settings.env.app
    words = norm(text)
    hits = [p for p in our_patches(app) if words in norm(p['subject'])]
    if len(hits) != 1:
        msg = inliner.reporter.warning(
            f':patch:`{text}` names {len(hits)} patches of kernel-patches/ '
            '(give words of exactly one subject)', line=lineno)
        return [nodes.Text(f'patch "{text}"')], [msg]
    p = hits[0]
    n = int(p['number'].split('/')[0]) if p['number'] else int(p['file'][:4])
    ref = pending_xref('', refdomain='std', reftype='ref',
                       reftarget=label(p['subject']), refexplicit=True)
    ref += nodes.inline('', f'patch {n}')
    return [ref], []


def v2patch_role(name, rawtext, text, lineno, inliner, options={}, content=[]):
    from docutils import nodes
    app = inliner.document.settings.env.app
    v2 = read_v2(os.path.join(app.srcdir, app.config.series_v2),
                 os.path.join(app.srcdir, app.config.series_tree))
    nums = [int(num) for num, _, _ in v2]
    if not text.isdigit() or int(text) not in nums:
        msg = inliner.reporter.warning(
            f':v2patch:`{text}`: the v2 posting has patches 1 to {len(nums)}',
            line=lineno)
        return [nodes.Text(text)], [msg]
    # followed by the posted/rebuilt mark of that patch (v2mark.py)
    return [nodes.inline('', f'v2 patch {int(text)}/{len(nums)}',
                         classes=['v2patch']),
            nodes.Text(' '), mark_for_patch(int(text))], []


# "patch 8", "patches 5 and 6", "the last patch", and "4/14" near the word
# patch or series: read in the parsed page, so that wrapped lines are joined,
# an indented definition (the glossary's) counts, and literal text, links and
# what the roles above wrote do not.
PATCH_NUMBER = re.compile(r'(?i)\bpatch(es)?\s+\d|\b(last|final) patch\b')
FRACTION = re.compile(r'\b\d{1,2}/\d{1,2}\b')
SKIP = ('literal_block', 'literal', 'raw', 'comment', 'pending_xref',
        'reference', 'title_reference')


def lint_numbers(app, doctree):
    from docutils import nodes
    docname = app.env.docname
    if docname == DOCNAME:
        return
    for text in doctree.traverse(nodes.Text):
        parent, skip = text.parent, False
        while parent is not None:
            if parent.tagname in SKIP or 'v2patch' in parent.get('classes', []):
                skip = True
                break
            parent = parent.parent
        if skip:
            continue
        t = text.astext()
        m = PATCH_NUMBER.search(t)
        if not m and re.search(r'(?i)patch|series', t):
            m = FRACTION.search(t)
        if m:
            logger.warning(
                f'"{m.group(0)}" names a patch by its number: write '
                ':patch:`words of its subject` (or :v2patch:`N` for the v2 '
                'posting), which the series renumbers for you',
                type='series', location=text.parent)


def source_read(app, docname, source):
    if docname != DOCNAME:
        return
    if MARKER not in source[0]:
        warn(f'{DOCNAME}.rst has no line "{MARKER}"')
        return
    source[0] = source[0].replace(MARKER, generate(app))


def setup(app):
    app.add_config_value('series_patch_dir', 'kernel-patches', 'env')
    app.add_config_value('series_notes', 'docs/series-notes.txt', 'env')
    app.add_config_value('series_v2', 'docs/series-v2.txt', 'env')
    app.add_config_value('series_tree',
                         os.environ.get('LINUX', 'build/linux'), 'env')
    app.connect('source-read', source_read)
    app.connect('doctree-read', lint_numbers)
    app.add_role('patch', patch_role)
    app.add_role('v2patch', v2patch_role)
    # :v2:`posted N` / :v2:`rebuilt N`, and the mark :v2patch: appends
    app.setup_extension('v2mark')
    return {'version': '1', 'parallel_read_safe': True,
            'parallel_write_safe': True}
