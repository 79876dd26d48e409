"""The OpCase harness itself: a row without a reference says why, and a reference that
gives fewer outputs than the operator fails instead of leaving the rest unchecked."""
import numpy as np
import pytest

from harness import ALL_CASES, OpCase, check_forward


def _case(**kw):
    """An OpCase kept out of ALL_CASES (the registry's coverage counts the real rows)."""
    case = OpCase(**kw)
    ALL_CASES.remove(case)
    return case


def test_a_row_without_a_reference_says_why():
    with pytest.raises(ValueError, match=r"OpCase relu .*no reference value \(ref=None\); "
                                         "give it, or say why there is none in no_ref="):
        OpCase('relu', shapes=[(2, 3)])
    with pytest.raises(ValueError, match='no reference value'):
        OpCase('relu', shapes=[(2, 3)], no_ref='  ')
    with pytest.raises(ValueError, match='ref and no_ref both given'):
        OpCase('relu', shapes=[(2, 3)], ref=lambda x: np.maximum(x, 0), no_ref='why')
    assert _case(op='relu', shapes=[(2, 3)], no_ref='a reason').ref is None


def test_a_reference_with_fewer_outputs_than_the_operator_fails():
    both = _case(op='split', attrs=dict(num_outputs=2, axis=1), shapes=[(2, 4)],
                 ref=lambda x: [x[:, :2], x[:, 2:]])
    check_forward(both)
    first_only = _case(op='split', attrs=dict(num_outputs=2, axis=1), shapes=[(2, 4)],
                       ref=lambda x: [x[:, :2]])
    with pytest.raises(AssertionError, match=r'the reference gives 1 output\(s\), the '
                                             'operator 2'):
        check_forward(first_only)
    wrong_second = _case(op='split', attrs=dict(num_outputs=2, axis=1), shapes=[(2, 4)],
                         ref=lambda x: [x[:, :2], x[:, :2]])
    with pytest.raises(AssertionError):
        check_forward(wrong_second)
