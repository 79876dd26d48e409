"""The docs hold: README stays short, every link between the pages resolves, every test a
page names exists, and every difference from MXNet names its test or says it has none."""
import glob
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = sorted(glob.glob(os.path.join(ROOT, 'docs', '*.md'))) + [os.path.join(ROOT, 'README.md')]


def _read(path):
    with open(path, encoding='utf-8') as f:
        return f.read()


def _rel(path):
    return os.path.relpath(path, ROOT)


def test_readme_is_read_in_ten_minutes():
    lines = _read(os.path.join(ROOT, 'README.md')).splitlines()
    assert len(lines) <= 200, 'README.md has %d lines: move detail into docs/' % len(lines)
    for page in ('architecture', 'operators', 'differences', 'performance', 'distributed',
                 'config'):
        assert 'docs/%s.md' % page in '\n'.join(lines), page


@pytest.mark.parametrize('page', PAGES, ids=_rel)
def test_links_between_pages_resolve(page):
    for target in re.findall(r'\]\(([^)#\s]+\.md)(?:#[^)]*)?\)', _read(page)):
        if '://' in target:
            continue
        path = os.path.normpath(os.path.join(os.path.dirname(page), target))
        assert os.path.exists(path), '%s links to %s, which is not there' % (_rel(page), target)


def _named_tests(text):
    """(file, name) of every ``tests/...py::name`` a page names."""
    return re.findall(r'(tests/[\w/]+\.py)::(\w+)', text)


@pytest.mark.parametrize('page', PAGES, ids=_rel)
def test_every_test_a_page_names_exists(page):
    missing = []
    for path, name in _named_tests(_read(page)):
        full = os.path.join(ROOT, path)
        if not os.path.exists(full):
            missing.append('%s (no such file)' % path)
        elif not re.search(r'^\s*(async )?def %s\(|^class %s\b' % (name, name), _read(full),
                           re.M):
            missing.append('%s::%s' % (path, name))
    assert not missing, '%s names tests that do not exist: %s' % (_rel(page), missing)


def test_the_check_sees_test_names():
    assert _named_tests('Test: `tests/core/test_x.py::test_y`, `tests/a/b.py::c`.') == \
        [('tests/core/test_x.py', 'test_y'), ('tests/a/b.py', 'c')]


def test_every_difference_names_its_test_or_says_untested():
    text = _read(os.path.join(ROOT, 'docs', 'differences.md'))
    items = re.split(r'\n(?=- )', text.split('\n## ', 1)[1])
    bare = [item.splitlines()[0] for item in items if item.startswith('- ')
            and not re.search(r'\bTests?:|untested|Untested', item)]
    assert not bare, 'differences without a test or "untested": %s' % bare
    assert len(items) > 40
