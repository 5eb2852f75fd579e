#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Checks that the series' public kernel-crate API is shown in examples.

Usage: examples.py KSRC [--base pristine] [FILE...]

The files are those of kernel::dma_buf (every public item) and the lines the
series adds to other files of rust/kernel (the public items on them). Two
rules, as the Rust-for-Linux tree applies them:

  * a public item at module level (type, trait, function, exported macro)
    has a doc comment with an "# Examples" section;
  * a public method either has one too, or is called in a doctest of its
    own file (an example of its type shows it in use).

Doctests run as KUnit cases (CONFIG_RUST_KERNEL_DOCTESTS) in make check,
so what the examples show is also tested. Prints each item that breaks a
rule, with its file and line, and exits 1 if there is one.
"""
import argparse
import re
import subprocess
import sys

ITEM = re.compile(r'^(?P<indent>\s*)pub\s+(unsafe\s+)?(const\s+)?(extern\s+"C"\s+)?'
                  r'(?P<kind>fn|struct|enum|trait|type|const|static|union)\s+(?P<name>\w+)')
MACRO = re.compile(r'^macro_rules!\s+(?P<name>\w+)')


def doc_above(lines, i):
    """The doc comment lines of the item at line i (attributes skipped)."""
    doc = []
    j = i - 1
    while j >= 0:
        s = lines[j].strip()
        if s.startswith('///'):
            doc.append(s)
        elif not (s.startswith('#[') or s.startswith(')]') or s == ''):
            break
        elif s == '' and not doc:
            break
        j -= 1
    return doc


def has_example(doc):
    """Whether a doc comment (lines bottom-up) has an "# Examples" section
    with a code block in it."""
    text = [d[3:].strip() for d in reversed(doc)]
    for k, t in enumerate(text):
        if t == '# Examples':
            return any(u.startswith('```') for u in text[k + 1:])
    return False


def doctest_code(lines):
    """The code of the file's doctests (hidden lines included)."""
    code, inside = [], False
    for line in lines:
        s = line.strip()
        if not (s.startswith('///') or s.startswith('//!')):
            inside = False
            continue
        text = s[3:].strip()
        if text.startswith('```'):
            inside = not inside
            continue
        if inside:
            code.append(text.lstrip('#').strip())
    return '\n'.join(code)


def check(path, lines, wanted):
    """Yields (line, message) for each item of `wanted` lines that breaks a rule."""
    code = doctest_code(lines)
    for i, line in enumerate(lines):
        if wanted is not None and i + 1 not in wanted:
            continue
        m = ITEM.match(line)
        macro = MACRO.match(line)
        if macro and any('macro_export' in lines[k] for k in range(max(0, i - 3), i)):
            name, top = macro.group('name'), True
        elif m and m.group('kind') != 'static' or m and not m.group('indent'):
            name, top = m.group('name'), not m.group('indent')
            if m.group('kind') in ('const', 'type') and m.group('indent'):
                continue  # associated constants and types: part of a trait's example
        else:
            continue
        if has_example(doc_above(lines, i)):
            continue
        if not top and re.search(r'(\.|::)' + name + r'\b\s*(::<[^(]*>)?\(', code):
            continue
        what = 'item' if top else 'method'
        yield i + 1, f'public {what} `{name}` has no "# Examples"' + \
            ('' if top else ' and no doctest of its file calls it')


def added_lines(ksrc, base, path):
    """Line numbers the series adds to `path`."""
    diff = subprocess.run(['git', '-C', ksrc, 'diff', '-U0', f'{base}..HEAD', '--', path],
                          check=True, capture_output=True, text=True).stdout
    wanted = set()
    for m in re.finditer(r'^@@ -\S+ \+(\d+)(?:,(\d+))? @@', diff, re.M):
        start, count = int(m.group(1)), int(m.group(2) or 1)
        wanted.update(range(start, start + count))
    return wanted


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('ksrc')
    ap.add_argument('--base', default='pristine')
    ap.add_argument('files', nargs='*', help='check these files whole instead')
    args = ap.parse_args()
    if args.files:
        todo = [(f, None) for f in args.files]
    else:
        changed = subprocess.run(['git', '-C', args.ksrc, 'diff', '--name-only',
                                  f'{args.base}..HEAD', '--', 'rust/kernel/'],
                                 check=True, capture_output=True, text=True).stdout.split()
        todo = []
        for f in changed:
            if not f.endswith('.rs'):
                continue
            whole = f.startswith('rust/kernel/dma_buf/')
            todo.append((f'{args.ksrc}/{f}', None if whole else added_lines(args.ksrc, args.base, f)))
    bad = 0
    for path, wanted in todo:
        with open(path) as fh:
            lines = fh.read().split('\n')
        for line, msg in check(path, lines, wanted):
            print(f'{path}:{line}: {msg}')
            bad += 1
    print(f'{len(todo)} files, {bad} items without an example')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
