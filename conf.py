# Sphinx configuration for the fuse-io-uring-lab book.
#
# Build (this is what `make docs` runs; warnings are errors, references nitpicky):
#   sphinx-build -W -n --keep-going -b html . build/docs
# Needs Debian's python3-sphinx, graphviz and furo.

project = 'fuse-io-uring-lab'
author = 'the fuse-io-uring-lab authors'
copyright = '2026, ' + author
language = 'en'

import os
import sys

# Extensions of this book live in docs/_ext/: series.py renders kernel-patches/,
# kernelpage.py includes a page of the patched tree's Documentation/,
# facts.py gives the :fact: role (the numbers runs measure, docs/facts.txt),
# v2mark.py the :v2: role (is a claim about v2 from its posted code or ours?).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                'docs', '_ext'))

root_doc = 'index'
extensions = ['sphinx.ext.graphviz', 'series', 'v2mark', 'kernelpage', 'exercises', 'commands', 'facts']

# Only the book is source: the top page, the chapters and each lab's README.rst.
# build/ holds a full Linux tree with thousands of .rst files, so it (and every
# other non-docs folder) is also excluded, which stops Sphinx walking into it.
include_patterns = ['index.rst', 'docs/**', 'labs/*/README.rst']
exclude_patterns = [
    'build', 'kernel-patches', 'reference-server', 'vm', 'scripts', 'tests',
    '.ci', '.git', '**/.*', 'README.md', 'Makefile',
    'docs/diagrams', 'docs/_static', 'docs/_ext',
]

nitpicky = True
highlight_language = 'none'

# Diagrams are .dot files in docs/diagrams/, rendered as SVG (text stays text).
# A white background keeps them readable when the theme is in dark mode.
graphviz_output_format = 'svg'
# Fonts are set in each .dot file (command-line -N/-E defaults would
# override the files' own choices, e.g. Courier for kernel identifiers).
graphviz_dot_args = ['-Gbgcolor=white']

html_theme = 'furo'
html_title = 'FUSE over io_uring lab'
html_static_path = ['docs/_static']
html_css_files = ['diagrams.css']
html_show_sourcelink = False
html_copy_source = False
