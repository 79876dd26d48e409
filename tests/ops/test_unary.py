import numpy as np

from harness import OpCase, parametrize_cases, check_forward, check_gradient

def _pos(rng, shapes, dtype):
    return [rng.uniform(0.5, 2.0, s) for s in shapes]

CASES = [
    OpCase('exp', shapes=[(3, 5)], ref=np.exp),
    OpCase('log', shapes=[(2, 3, 4)], ref=np.log, inputs=_pos),
]

@parametrize_cases(CASES)
def test_forward(case):
    check_forward(case)

@parametrize_cases(CASES)
def test_gradient(case):
    check_gradient(case)
