"""The statistics against textbook values and brute force."""

import itertools
import math

import pytest

from tasks_lib.report.stats import mean_interval, mean_pass_at_k, pass_at_k, sign_test, t_interval, t_quantile, wilson


@pytest.mark.parametrize("df,expected", [(1, 12.706), (2, 4.303), (5, 2.571), (9, 2.262), (30, 2.042), (120, 1.980)])
def test_t_quantiles_match_tables(df, expected):
    assert round(t_quantile(0.975, df), 3) == expected


def test_wilson_edges_stay_in_unit_interval():
    low, high = wilson(1.0, 10)
    assert high == 1.0 and 0.69 < low < 0.73  # 10/10 is not "certainly 1.0"
    low, high = wilson(0.0, 10)
    assert low == 0.0 and 0.27 < high < 0.31


def test_mean_interval_methods():
    assert mean_interval([]) is None
    est = mean_interval([0.2, 0.4, 0.6, 0.8])
    assert est.method == "Student t" and math.isclose(est.mean, 0.5)
    lo, hi = t_interval([0.2, 0.4, 0.6, 0.8])
    assert math.isclose(est.low, lo) and math.isclose(est.high, hi)
    one = mean_interval([0.5])
    assert one.low is None and "needs 2+ tasks" in one.method
    # three identical passing attempts of each of two tasks: effective n is the number of tasks
    clustered = mean_interval([1, 1, 1, 1, 1, 1], ["a", "a", "a", "b", "b", "b"])
    assert "effective n 2.0" in clustered.method
    assert math.isclose(clustered.low, wilson(1.0, 2)[0])


def test_pass_at_k_matches_brute_force():
    for n in range(1, 7):
        for c in range(n + 1):
            outcomes = [1] * c + [0] * (n - c)
            for k in range(1, n + 1):
                subsets = list(itertools.combinations(outcomes, k))
                brute = sum(any(s) for s in subsets) / len(subsets)
                assert math.isclose(pass_at_k(n, c, k), brute)
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_mean_pass_at_k_leaves_out_short_tasks():
    value, used, short = mean_pass_at_k([(3, 3), (3, 0), (1, 1)], 3)
    assert (value, used, short) == (0.5, 2, 1)
    assert mean_pass_at_k([(1, 1)], 2) == (None, 0, 1)


def test_sign_test():
    assert sign_test(0, 0) is None
    assert math.isclose(sign_test(8, 2), 0.109375)
    assert sign_test(5, 5) == 1.0
