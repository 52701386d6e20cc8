import numpy as np
import pytest

import magicube


@pytest.fixture(scope="session")
def gpu():
    ok, why = magicube.gpu_available()
    if not ok:
        pytest.skip(why)  # one line: "no GPU: <reason>"
    return True


def vector_sparse(rng, m, k, v, density, lo=-128, hi=127, dtype=np.int8):
    """An m x k integer matrix whose nonzeros are V x 1 vectors (values in [lo, hi])."""
    a = np.zeros((m, k), dtype=np.int64)
    for b in range(0, m, v):
        cols = rng.random(k) < density
        a[b:b + v, cols] = rng.integers(lo, hi + 1, size=(min(v, m - b), int(cols.sum())))
    return a.astype(dtype)
