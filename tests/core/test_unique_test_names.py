"""Every test file's name is unique across tests/: the suite's folders are not packages, so
pytest imports each test file by its base name, and two files of one name collide in a
whole-suite run (``from test_conv import CASES`` in tests/ops would get another folder's
file) while each folder alone passes."""
import collections
import os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')


def test_test_file_names_are_unique():
    seen = collections.defaultdict(list)
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if d not in ('__pycache__', 'thirdparty')]
        for f in filenames:
            if f.startswith('test_') and f.endswith('.py'):
                seen[f].append(os.path.relpath(os.path.join(dirpath, f), ROOT))
    twice = {k: v for k, v in seen.items() if len(v) > 1}
    assert not twice, 'test files sharing a name: %s' % twice
