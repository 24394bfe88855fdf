# SPDX-License-Identifier: GPL-2.0-only OR MIT
"""The labs' exercises in the book.

- ``.. exercise-todos:: 02`` lists lab 02's TODOs, read off the markers in
  the reference server's sources by scripts/exercise (the one reader of the
  marker format): number, title, where, hint, what to read.
- ``literalinclude`` of the server leaves the exercise markers out: they
  are for the skeleton generator, and the listing already explains the code.
- ``.. answer::`` folds the answer of a "predict, then check" question
  away (an HTML ``<details>`` block), so the reader predicts first.
"""
import importlib.machinery
import importlib.util
import os
import re

from docutils import nodes
from docutils.parsers.rst import Directive, directives
from sphinx.directives.code import LiteralInclude

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _exercise_module():
    """scripts/exercise, imported (it has no .py suffix)."""
    path = os.path.join(TOP, 'scripts', 'exercise')
    loader = importlib.machinery.SourceFileLoader('exercise_script', path)
    spec = importlib.util.spec_from_loader('exercise_script', loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


_MARKER = re.compile(
    r'^[ \t]*/\*\n[ \t]*\* exercise \d\d\.\d+ begin: .*?\*/\n'   # block marker
    r'|^[ \t]*/\* exercise \d\d\.\d+ (begin: .*?|end) \*/\n',     # one-line ones
    re.M | re.S)


class ServerLiteralInclude(LiteralInclude):
    """literalinclude, without the exercise markers."""

    def run(self):
        result = super().run()
        for node in result:
            for block in node.traverse(nodes.literal_block):
                text = _MARKER.sub('', block.astext())
                block.rawsource = text
                block.children = [nodes.Text(text)]
        return result


class ExerciseTodos(Directive):
    required_arguments = 1

    def run(self):
        ex = _exercise_module()
        lab = self.arguments[0]
        if lab in ex.KERNEL:
            return [self._kernel(ex, lab)]
        todos = ex.todos(lab)
        env = self.state.document.settings.env
        for rs in todos.values():
            for r in rs:
                env.note_dependency(r.path)
        items = nodes.enumerated_list()
        for k, rs in sorted(todos.items()):
            head = next((r for r in rs if 'hint' in r.fields), rs[0])
            # hints name options and code (--nbufs): no typographic quotes
            item = nodes.list_item(support_smartquotes=False)
            para = nodes.paragraph()
            para += nodes.strong(text=rs[0].title)
            para += nodes.Text(' (')
            for n, r in enumerate(rs):
                if n:
                    para += nodes.Text(', ')
                para += nodes.literal(text='%s()' % r.function)
                para += nodes.Text(' in ')
                para += nodes.literal(text='reference-server/' + os.path.basename(r.path))
            para += nodes.Text('): ' + ' '.join(head.fields['hint']))
            item += para
            if head.fields.get('read'):
                item += nodes.paragraph(text='Read: ' + ' '.join(head.fields['read']))
            items += item
        return [items]


    def _kernel(self, ex, lab):
        """A kernel exercise: its TODOs from the lab's spec file."""
        spec = ex.kernel_spec(lab)
        self.state.document.settings.env.note_dependency(
            os.path.join(TOP, ex.KERNEL[lab]))
        items = nodes.enumerated_list()
        for k, t in sorted(spec['todos'].items()):
            item = nodes.list_item(support_smartquotes=False)
            para = nodes.paragraph()
            para += nodes.strong(text=t['title'])
            para += nodes.Text(' (')
            para += nodes.literal(text='%s()' % t['function'])
            para += nodes.Text(' in ')
            para += nodes.literal(text=spec['file'])
            para += nodes.Text('): ' + ' '.join(t['hint']))
            item += para
            if t.get('read'):
                item += nodes.paragraph(text='Read: ' + ' '.join(t['read']))
            items += item
        return items


class Answer(Directive):
    """The body, folded under "Answer"; shown only when the reader opens it."""
    has_content = True
    optional_arguments = 1
    final_argument_whitespace = True
    option_spec = {'summary': directives.unchanged}

    def run(self):
        summary = self.arguments[0] if self.arguments else 'Answer'
        open_ = nodes.raw('', '<details class="answer"><summary>%s</summary>\n'
                          % summary, format='html')
        body = nodes.container(classes=['answer-body'])
        self.state.nested_parse(self.content, self.content_offset, body)
        close = nodes.raw('', '</details>\n', format='html')
        return [open_, body, close]


def setup(app):
    app.add_directive('literalinclude', ServerLiteralInclude, override=True)
    app.add_directive('exercise-todos', ExerciseTodos)
    app.add_directive('answer', Answer)
    return {'version': '1', 'parallel_read_safe': True,
            'parallel_write_safe': True}
