#!/usr/bin/env python3
"""tests/docs-browser.py: the book, as a browser sees it.

Run by scripts/check-docs-browser, which serves build/docs on 127.0.0.1 and
passes its URL. Usage: docs-browser.py DOCS_DIR BASE_URL SHOTS_DIR

* Every page is loaded in headless Chromium (--dump-dom): it must have a
  <title> that starts with its <h1>, and every diagram the built HTML has
  (sphinx.ext.graphviz writes <object data="../_images/graphviz-*.svg"
  type="image/svg+xml">) must still be in the DOM.
* Every diagram's SVG file must be non-empty and hold <svg and <text, and
  be served as image/svg+xml (what an <object> needs to render it).
* Every internal href/src of every built HTML file must point to a file
  that exists, and its #anchor to an id (or name) in that file.
* Screenshots in SHOTS_DIR: every page wide (1280 px, taken in the same
  Chromium run as the DOM dump), the main pages (PHONE_PAGES) also at a
  phone's 412 px.

Prints "ok NAME" / "not ok NAME: why" lines; exits 1 if any is "not ok".
One Chromium run costs about 2 s of CPU and some waiting, so runs go in
parallel, two per CPU: the whole check takes well under a minute.
"""

import concurrent.futures
import html
import html.parser
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.parse
import urllib.request

CHROMIUM_FLAGS = [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
    '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--hide-scrollbars',
]
WIDTHS = {'wide': 1280, 'phone': 412}
SHOT_HEIGHT = 1600
PARALLEL = 2 * (os.cpu_count() or 1)
# Phone screenshots for the pages with wide tables, diagrams and code.
PHONE_PAGES = ('index.html', 'docs/stock-protocol.html',
               'docs/reference-server.html', 'docs/series.html')

failed = False


# The page threads report at once: print() writes a line and its newline
# apart, so two threads' lines could run together and scripts/check, which
# counts whole lines, would lose one (tests/docs-browser-output.py).
_output = threading.Lock()


def report(line):
    with _output:
        sys.stdout.write(line + '\n')
        sys.stdout.flush()


def ok(name):
    report(f'ok {name}')


def not_ok(name, why):
    global failed
    failed = True
    report(f'not ok {name}: {why}')


def chromium(*args, timeout=60):
    """Run one headless Chromium with a fresh profile; return stdout, or
    '' if it did not finish in time (the caller then reports the page)."""
    profile = tempfile.mkdtemp(prefix='docs-browser-')
    try:
        env = dict(os.environ, DBUS_SESSION_BUS_ADDRESS='disabled:')
        r = subprocess.run(
            ['chromium', *CHROMIUM_FLAGS, f'--user-data-dir={profile}', *args],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
            timeout=timeout)
        return r.stdout.decode('utf-8', 'replace')
    except subprocess.TimeoutExpired:
        return ''
    finally:
        shutil.rmtree(profile, ignore_errors=True)


class Page(html.parser.HTMLParser):
    """What the checks need from one HTML document."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.title = None
        self.h1 = None
        self.ids = set()
        self.links = []        # (attribute, value)
        self.diagrams = []     # URLs of SVG diagrams
        self._in = None        # 'title' or 'h1' while inside one
        self._text = []
        self._skip = 0         # depth inside the h1's headerlink

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ('id', 'name'):
            if a.get(key):
                self.ids.add(a[key])
        for key in ('href', 'src'):
            if a.get(key) is not None:
                self.links.append((key, a[key]))
        if tag == 'object' and a.get('data'):
            self.links.append(('data', a['data']))
            if a.get('type') == 'image/svg+xml':
                self.diagrams.append(a['data'])
        if tag == 'img' and (a.get('src') or '').endswith('.svg'):
            self.diagrams.append(a['src'])
        if tag == 'title' and self.title is None and self._in is None:
            self._in, self._text = 'title', []
        elif tag == 'h1' and self.h1 is None and self._in is None:
            self._in, self._text = 'h1', []
        elif self._in == 'h1' and tag == 'a' and \
                'headerlink' in (a.get('class') or ''):
            self._skip += 1

    def handle_endtag(self, tag):
        if self._in == 'h1' and tag == 'a' and self._skip:
            self._skip -= 1
        elif tag == self._in:
            setattr(self, self._in, ' '.join(''.join(self._text).split()))
            self._in = None

    def handle_data(self, data):
        if self._in and not self._skip:
            self._text.append(data)


def parse(text):
    p = Page()
    p.feed(text)
    p.close()
    return p


def check_links(docs, files):
    """Every internal link and anchor of every built page resolves."""
    parsed = {}

    def page(path):
        if path not in parsed:
            with open(path, encoding='utf-8', errors='replace') as f:
                parsed[path] = parse(f.read())
        return parsed[path]

    count, broken = 0, []
    for path in files:
        for attr, value in page(path).links:
            url = urllib.parse.urlsplit(html.unescape(value))
            if url.scheme or url.netloc or value.startswith('//'):
                continue        # external: not this check's business
            target = path
            if url.path:
                target = os.path.normpath(os.path.join(
                    os.path.dirname(path), urllib.parse.unquote(url.path)))
                if os.path.isdir(target):
                    target = os.path.join(target, 'index.html')
            count += 1
            rel = os.path.relpath(path, docs)
            if not target.startswith(docs + os.sep) or \
                    not os.path.isfile(target):
                broken.append(f'{rel}: {attr}="{value}" (no such file)')
                continue
            frag = urllib.parse.unquote(url.fragment)
            if frag and target.endswith('.html') and \
                    frag not in page(target).ids:
                broken.append(f'{rel}: {attr}="{value}" (no id "{frag}" in '
                              f'{os.path.relpath(target, docs)})')
    name = f'docs links: {count} internal links and anchors in ' \
           f'{len(files)} pages resolve'
    if broken:
        not_ok(name, f'{len(broken)} broken, e.g. ' + '; '.join(broken[:5]))
    else:
        ok(name)


def shot_path(shots, rel, kind):
    return os.path.join(shots, rel.replace('/', '_').replace('.html', '')
                        + f'-{kind}.png')


def check_page(docs, base, rel, shots):
    """Load one page in Chromium: title, h1, diagrams in the DOM; and the
    wide screenshot."""
    name = f'docs page {rel}'
    with open(os.path.join(docs, rel), encoding='utf-8') as f:
        built = parse(f.read())
    out = shot_path(shots, rel, 'wide')
    if os.path.exists(out):
        os.unlink(out)
    dom = parse(chromium('--virtual-time-budget=2000',
                         f'--window-size={WIDTHS["wide"]},{SHOT_HEIGHT}',
                         f'--screenshot={out}', '--dump-dom', base + rel))
    if not dom.title:
        return not_ok(name, 'Chromium shows no <title> (page did not load?)')
    if not dom.h1:
        return not_ok(name, f'no <h1> in the page "{dom.title}"')
    if not dom.title.startswith(dom.h1):
        return not_ok(name, f'<title> "{dom.title}" does not start with '
                      f'the <h1> "{dom.h1}"')
    if sorted(dom.diagrams) != sorted(built.diagrams):
        return not_ok(name, f'{len(built.diagrams)} diagrams in the HTML, '
                      f'{len(dom.diagrams)} in the DOM')
    bad = []
    for d in dom.diagrams:
        svg = os.path.normpath(os.path.join(os.path.dirname(
            os.path.join(docs, rel)), d))
        try:
            with open(svg, encoding='utf-8', errors='replace') as f:
                text = f.read()
        except OSError:
            bad.append(f'{d} missing')
            continue
        if '<svg' not in text or '<text' not in text:
            bad.append(f'{d} ({len(text)} bytes) has no <svg or no <text')
    if bad:
        return not_ok(name, '; '.join(bad))
    ok(f'{name}: "{dom.h1}", {len(dom.diagrams)} diagrams')
    return [urllib.parse.urljoin(base + rel, d) for d in dom.diagrams]


def check_svg(url):
    """One diagram as served: image/svg+xml."""
    name = f'docs diagram {url.rsplit("/", 1)[-1]}'
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            ctype = r.headers.get('Content-Type', '')
    except OSError as e:
        return not_ok(name, f'cannot fetch {url}: {e}')
    if not ctype.startswith('image/svg+xml'):
        return not_ok(name, f'served as "{ctype}", not image/svg+xml: an '
                      '<object> would not render it')
    ok(f'{name} is served as image/svg+xml')


def screenshot(base, rel, shots, kind):
    """The phone screenshot (the wide one is taken by check_page); check
    that each PNG is there and not empty."""
    out = shot_path(shots, rel, kind)
    if kind != 'wide':
        if os.path.exists(out):
            os.unlink(out)
        chromium('--virtual-time-budget=2000', f'--window-size='
                 f'{WIDTHS[kind]},{SHOT_HEIGHT}', f'--screenshot={out}',
                 base + rel)
    try:
        with open(out, 'rb') as f:
            head = f.read(8)
        good = head == b'\x89PNG\r\n\x1a\n' and os.path.getsize(out) > 1000
    except OSError:
        good = False
    return out, good


def main():
    docs, base, shots = sys.argv[1:4]
    docs = os.path.abspath(docs)
    base = base.rstrip('/') + '/'
    os.makedirs(shots, exist_ok=True)

    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(docs)
                   for f in fs if f.endswith('.html'))
    check_links(docs, files)

    # The book's pages: the top page, the chapters and the labs (not the
    # generated genindex/search pages).
    pages = sorted(os.path.relpath(f, docs) for f in files
                   if os.path.relpath(f, docs) == 'index.html'
                   or os.path.relpath(f, docs).startswith(('docs/', 'labs/')))
    with concurrent.futures.ThreadPoolExecutor(PARALLEL) as pool:
        phone = [pool.submit(screenshot, base, r, shots, 'phone')
                 for r in pages if r in PHONE_PAGES]
        results = list(pool.map(lambda r: check_page(docs, base, r, shots),
                                pages))
        svgs = sorted({u for r in results if r for u in r})
        list(pool.map(check_svg, svgs))
        shots_done = [f.result() for f in phone] + \
            [screenshot(base, r, shots, 'wide') for r in pages]
    bad = [os.path.basename(p) for p, good in shots_done if not good]
    name = f'docs screenshots: {len(shots_done)} PNGs ({len(pages)} wide, ' \
           f'{len(phone)} phone) in {os.path.relpath(shots)}'
    if bad:
        not_ok(name, 'missing or empty: ' + ', '.join(bad))
    else:
        ok(name)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
