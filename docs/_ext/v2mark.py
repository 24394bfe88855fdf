# SPDX-License-Identifier: GPL-2.0-only OR MIT
"""v2mark: where a claim about the v2 posting comes from.

Four of the v2 posting's 14 patches (8, 9, 12 and 13) were not available to
this project; kernel-patches/ rebuilds them (the cover letter says from
what). So a sentence that says what v2 does rests either on the posting or
on our reconstruction, and the book marks which:

    v2 :v2:`posted 10` kept head and tail as counters ...
    v2 :v2:`rebuilt 13` ended the request at once ...
    not in v2 :v2:`posted` (a claim on the whole posting)

The word is ``posted`` or ``rebuilt``; the number, if given, is the v2 patch
whose posted code or text shows it (``posted``) or the missing patch it
lives in (``rebuilt``), and must agree with the word: 8, 9, 12 and 13 are
rebuilt, the others posted. The mark renders as a small badge with a
tooltip, linked to the explanation in docs/series.rst (the label
``v2-provenance``), which also says when a sentence gets none.
:v2patch:`N` (series.py) appends the mark of patch N by itself.

A wrong word, a number outside the posting or one that disagrees with the
word, and a missing label are warnings of type ``v2mark`` (errors under -W).
"""
import re

from docutils import nodes
from sphinx.util import logging

logger = logging.getLogger(__name__)

LABEL = 'v2-provenance'
PATCHES = 14
# The cover letter (kernel-patches/cover-letter.txt): "08, 09, 12 and 13
# were not available from the posting".
REBUILT = {8, 9, 12, 13}
POSTED_BY = 'Joanne Koong, 2 April 2026'


def tooltip(word, num):
    if word == 'rebuilt':
        which = (f'v2 patch {num}/{PATCHES}, which was' if num
                 else 'a v2 patch that was')
        return (f'Our reconstruction of {which} not available: written '
                'from its title, the posted patches around it, v2\'s '
                'documentation and Linux 7.3. Posted v2 may differ.')
    if num:
        return (f'From v2 patch {num}/{PATCHES} as posted ({POSTED_BY}).')
    return ('From the v2 posting as published: its patches, cover letter, '
            f'documentation or libfuse branch ({POSTED_BY}).')


def mark_node(word, num):
    """The badge, before resolution: an inline that doctree-resolved turns
    into a link. Its text has no digits, so the patch-number lint of
    series.py has nothing to say about it."""
    node = nodes.inline('', word, classes=['v2mark', f'v2mark-{word}'])
    node['v2mark_title'] = tooltip(word, num)
    return node


def mark_for_patch(num):
    return mark_node('rebuilt' if num in REBUILT else 'posted', num)


def v2_role(name, rawtext, text, lineno, inliner, options={}, content=[]):
    m = re.fullmatch(r'\s*(posted|rebuilt)(?:\s+(\d+))?\s*', text)
    if not m:
        msg = inliner.reporter.warning(
            f':v2:`{text}`: write :v2:`posted`, :v2:`posted N` or '
            ':v2:`rebuilt N` (N: the v2 patch)', line=lineno)
        return [nodes.Text(text)], [msg]
    word, num = m.group(1), int(m.group(2)) if m.group(2) else None
    problem = None
    if num is not None and not 1 <= num <= PATCHES:
        problem = f'the v2 posting has patches 1 to {PATCHES}'
    elif num is not None and (word == 'rebuilt') != (num in REBUILT):
        problem = (f'v2 patch {num} was ' +
                   ('not available, so it is rebuilt' if num in REBUILT
                    else 'posted, so it is not rebuilt'))
    if problem:
        msg = inliner.reporter.warning(f':v2:`{text}`: {problem}',
                                       line=lineno)
        return [mark_node(word, num)], [msg]
    return [mark_node(word, num)], []


def resolve(app, doctree, docname):
    """Each mark becomes a link to the explanation, with its tooltip."""
    marks = [n for n in doctree.traverse(nodes.inline)
             if 'v2mark' in n.get('classes', [])]
    if not marks:
        return
    target = app.env.get_domain('std').labels.get(LABEL)
    if target is None:
        logger.warning(f'no label "{LABEL}" for the v2 marks to link to '
                       '(docs/series.rst explains them)', type='v2mark',
                       location=docname)
        return
    todoc, labelid = target[0], target[1]
    for node in marks:
        ref = nodes.reference('', '', internal=True,
                              classes=list(node['classes']),
                              reftitle=node['v2mark_title'])
        if todoc == docname:
            ref['refid'] = labelid
        else:
            ref['refuri'] = (app.builder.get_relative_uri(docname, todoc)
                             + '#' + labelid)
        ref += nodes.Text(node.astext())
        node.replace_self(ref)


def setup(app):
    app.add_role('v2', v2_role)
    app.connect('doctree-resolved', resolve)
    return {'version': '1', 'parallel_read_safe': True,
            'parallel_write_safe': True}
