"""kernelpage: include a page of the patched kernel's Documentation/.

``.. kernel-page:: Documentation/filesystems/fuse/fuse-io-uring.rst`` reads
that file from the kernel tree (``build/linux``, or ``$LINUX``) when the book
is built and inserts it where the directive stands, after three changes that
the kernel's own documentation build does not need but docutils does:

* Headings written ``Title`` / ``-----::`` (an underline that ends in ``::``,
  meant as "heading, then a literal block") are not headings for docutils:
  it renders them as a paragraph and says nothing. They become a heading and
  a ``::`` paragraph. When the block after them is not indented (a literal
  block must be), it is indented.
* The kernel page's heading levels are pushed one level down, under this
  book's page title (the kernel page uses the same ``=`` overline and
  ``=``/``-`` underlines as this book).
* Roles that only the kernel's Sphinx knows (``:c:func:`` and the other C
  domain roles, ``:ref:``/``:doc:`` into the kernel's book) become literal
  text; ``.. kernel-doc::`` directives are dropped.

Each change actually made is listed on the page, above the kernel's text,
so a reader can compare. Warnings about the included text name the kernel
file; their line numbers can be off by the few lines the changes add.
A missing file is a warning (an error under -W)
that says to run ``make tree``. ``:tree: 7.3`` reads the page from Linux
7.3's tree (``build/linux-7.3``) instead.
"""

import os
import re

from docutils.parsers.rst import Directive
from docutils.statemachine import StringList
from sphinx.util import logging

logger = logging.getLogger(__name__)

ADORN = '=-~^"\'`#*+:.'
# This book's heading styles, by level: '=' over and under for the page
# title, then '=', '-', '~', '^' underlines.
OUR_STYLES = [('=', True), ('=', False), ('-', False), ('~', False),
              ('^', False), ('"', False)]
KERNEL_ROLE = re.compile(
    r':(c:func|c:type|c:macro|c:data|c:member|c:struct|c:union|c:enum|'
    r'func|type|ref|doc|manpage):`([^`]+)`')


def is_adorn(line, allow_colons=False):
    s = line.rstrip()
    if allow_colons and s.endswith('::'):
        s = s[:-2]
    return len(s) >= 3 and s[0] in ADORN and s == s[0] * len(s)


def adapt(text):
    """Return (lines, changes): the adapted text as (line, line number in
    the original, from 0) pairs, and what was changed."""
    src = text.split('\n')
    out, changes = [], []
    styles = []          # the kernel page's styles, in order of appearance
    i = 0

    def our(style):
        if style not in styles:
            styles.append(style)
        return OUR_STYLES[min(styles.index(style) + 1, len(OUR_STYLES) - 1)]

    def put(*texts):
        for t in texts:
            out.append((t, min(i, len(src) - 1)))

    def emit_heading(title, style):
        char, over = our(style)
        bar = char * len(title)
        if over:
            put(bar, title, bar)
        else:
            put(title, bar)

    while i < len(src):
        line = src[i]
        nxt = src[i + 1] if i + 1 < len(src) else ''
        nxt2 = src[i + 2] if i + 2 < len(src) else ''
        # Overlined title: bar, text, bar.
        if (is_adorn(line) and nxt.strip() and not is_adorn(nxt)
                and nxt2.rstrip() == line.rstrip()):
            emit_heading(nxt.strip(), (line.strip()[0], True))
            i += 3
            continue
        # Title, then an underline that ends in '::'.
        if (line.strip() and not line.startswith(' ') and not is_adorn(line)
                and is_adorn(nxt, allow_colons=True)
                and nxt.rstrip().endswith('::')):
            title = line.strip()
            emit_heading(title, (nxt.strip()[0], False))
            put('', '::', '')
            i += 2
            # The literal block must be indented and follow a blank line.
            while i < len(src) and not src[i].strip():
                i += 1
            if i < len(src) and not src[i].startswith((' ', '\t')):
                changes.append(f'"{title}": the underline ended in ``::``; '
                               'it is now a heading followed by a literal '
                               'block, whose lines were not indented and are '
                               'now indented by one space.')
                # A diagram goes on across blank lines while its next line
                # still starts with the '|' of its columns.
                while i < len(src):
                    if src[i].strip():
                        put(' ' + src[i])
                    else:
                        rest = next((l for l in src[i:] if l.strip()), '')
                        if not rest.startswith('|'):
                            break
                        put('')
                    i += 1
            else:
                changes.append(f'"{title}": the underline ended in ``::``; '
                               'it is now a heading followed by a literal '
                               'block.')
            continue
        # Title, then a plain underline.
        if (line.strip() and not line.startswith(' ') and not is_adorn(line)
                and is_adorn(nxt) and len(nxt.rstrip()) >= len(line.rstrip())):
            emit_heading(line.strip(), (nxt.strip()[0], False))
            i += 2
            continue
        if line.startswith('.. kernel-doc::'):
            changes.append(f'``{line.strip()}`` dropped: only the kernel\'s '
                           'Sphinx can extract documentation from source.')
            i += 1
            while i < len(src) and (src[i].startswith((' ', '\t'))):
                i += 1
            continue
        new = KERNEL_ROLE.sub(
            lambda m: '``%s``' % re.sub(r'^(.*?)\s*<[^>]*>$', r'\1',
                                         m.group(2)), line)
        if new != line:
            for m in KERNEL_ROLE.finditer(line):
                changes.append(f'the ``:{m.group(1)}:`` role on '
                               f'"{m.group(2)}" became literal text: it '
                               'points into the kernel\'s own book.')
        put(new)
        i += 1
    return out, changes


# :tree: 7.3 reads Linux 7.3's tree (make tree unpacks it) instead of the
# patched 7.2 tree.
TREES = {'7.2': None, '7.3': 'build/linux-7.3'}


class KernelPage(Directive):
    required_arguments = 1
    has_content = False
    option_spec = {'tree': lambda arg: arg if arg in TREES else
                   _bad_tree(arg)}

    def run(self):
        env = self.state.document.settings.env
        tree = TREES[self.options.get('tree', '7.2')] or env.config.kernelpage_tree
        tree = os.path.join(env.srcdir, tree)
        rel = self.arguments[0]
        path = os.path.join(tree, rel)
        if not os.path.exists(path):
            logger.warning(
                f'{rel} is not in the kernel tree ({tree}): run "make tree" '
                'first; this page includes the tree\'s copy',
                type='kernelpage', location=(env.docname, self.lineno))
            return []
        env.note_dependency(path)
        with open(path, encoding='utf-8') as f:
            lines, changes = adapt(f.read())
        head = [f'What was changed in ``{rel}``', '=' * (len(rel) + 26), '']
        if changes:
            head += [f'* {c}' for c in changes]
        else:
            head += ['Nothing: the file is included as it is.']
        head += ['', 'The kernel\'s page starts below.', '']
        content = StringList()
        for n, line in enumerate(head):
            content.append(line, 'docs/_ext/kernelpage.py', n)
        for line, n in lines:
            content.append(line, path, n)
        self.state_machine.insert_input(content, path)
        return []


def _bad_tree(arg):
    raise ValueError(f'kernel-page :tree: is one of {", ".join(TREES)}, not {arg!r}')


def setup(app):
    app.add_config_value('kernelpage_tree',
                         os.environ.get('LINUX', 'build/linux'), 'env')
    app.add_directive('kernel-page', KernelPage)
    return {'version': '1', 'parallel_read_safe': True,
            'parallel_write_safe': True}
