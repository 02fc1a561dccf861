"""No claim beyond the evidence: the significance test behind every per-shape speed verdict,
the family of a trial's shapes held at one error rate, and a busy machine said.

The noise test draws, seeded, many trials whose compiled and eager samples come from one and
the same distribution (skewed, and bimodal as timings under load are) and requires that no
verdict ever states a split, and that any per-shape claim at all stays as rare as the test's
error rate allows."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from compilescope.analysis.build import trial_report
from compilescope.analysis.noise import ALPHA, busy, holm, mann_whitney_p, min_p, sign_test_p
from compilescope.analysis.verdict import verdict_text
from compilescope.model import CallRecord, CompileId, CompileRecord, RunResult, SteadyState, TrialEnv, TrialResult, TrialSpec


def brute_force_p(a, b):
    """The exact two-sided p-value by enumerating every assignment of the pooled ranks."""
    n, m = len(a), len(b)
    pooled = sorted([*a, *b])
    rank = {v: i for i, v in enumerate(pooled)}
    u_obs = sum(1 for x in a for y in b if x > y)
    u_obs = min(u_obs, n * m - u_obs)
    hits = total = 0
    for chosen in itertools.combinations(range(n + m), n):
        rest = [i for i in range(n + m) if i not in chosen]
        u = sum(1 for i in chosen for j in rest if i > j)
        total += 1
        hits += min(u, n * m - u) <= u_obs
    assert total == math.comb(n + m, n) and all(v in rank for v in a)
    return min(1.0, hits / total)


@pytest.mark.parametrize("seed", range(12))
def test_the_exact_test_matches_enumeration(seed):
    rng = random.Random(seed)
    n, m = rng.randint(1, 6), rng.randint(1, 6)
    a = [rng.random() for _ in range(n)]
    b = [rng.random() + rng.choice((0.0, 0.3)) for _ in range(m)]
    assert mann_whitney_p(a, b) == pytest.approx(brute_force_p(a, b), rel=1e-12)


def test_the_normal_approximation_with_ties_is_close_to_the_exact_test():
    rng = random.Random(3)
    a = [rng.gauss(0, 1) for _ in range(40)]
    b = [rng.gauss(0.4, 1) for _ in range(45)]
    exact = mann_whitney_p(a, b)  # 1,800 pairs: exact
    tied = mann_whitney_p([round(x, 1) for x in a], [round(x, 1) for x in b])  # ties: the normal approximation
    assert exact is not None and tied is not None and abs(exact - tied) < 0.02


def test_few_samples_can_never_show_a_difference_at_one_percent():
    assert min_p(5, 5) == pytest.approx(2 / 252) and min_p(5, 5) < ALPHA
    assert min_p(3, 3) == pytest.approx(0.1)
    assert mann_whitney_p([1, 2, 3], [10, 11, 12]) == pytest.approx(0.1)  # perfectly apart, still not evidence


def test_holm_holds_the_family_and_stops_at_the_first_failure():
    assert holm([0.001, 0.004, 0.03, None], alpha=0.05) == [True, True, True, False]
    assert holm([0.001, 0.03, 0.04], alpha=0.05) == [True, False, False]  # 0.03 ≥ 0.05/2 stops it
    assert holm([0.009] * 2, alpha=0.01) == [False, False]  # one claim at 1% each is not 1% for both


def test_the_sign_test():
    assert sign_test_p(3, 0) == pytest.approx(0.25)
    assert sign_test_p(10, 0) == pytest.approx(2 / 1024)
    assert sign_test_p(5, 5) == 1.0


# --------------------------------------------------------------------------------------------
# Verdicts on samples from one distribution never claim a split
# --------------------------------------------------------------------------------------------


def _draw(rng: random.Random, k: int) -> list[float]:
    """Timings of one call as a loaded machine gives them: log-normal around 1 ms, and now and
    then a slow mode (another process took the CPU)."""
    return [rng.lognormvariate(math.log(1e-3), 0.15) * (rng.choice((2.5, 4.0)) if rng.random() < 0.2 else 1.0)
            for _ in range(k)]


def _trial(rng: random.Random, shapes: int, samples: int, factor: float = 1.0) -> TrialResult:
    sizes = list(range(8, 8 + shapes))
    spec = TrialSpec("w", "static", "cold", tuple({"n": n} for n in sizes))
    calls = tuple(CallRecord(i, {"n": n}, 0.5, (f"0/{i}",), graphs_run=(f"0/{i}",), ran_eagerly=False)
                  for i, n in enumerate(sizes))
    compiles = tuple(CompileRecord(compile_id=CompileId.parse(f"0/{i}"), function="f", filename="f.py", line=1, outcome="compiled",
                                   compile_time_s=0.4, call_index=i, phase="stream") for i in range(shapes))
    steady = tuple(SteadyState({"n": n}, 3, tuple(x * factor for x in _draw(rng, samples)), tuple(_draw(rng, samples)),
                               ran_eagerly=False) for n in sizes)
    return TrialResult(spec, "ok", calls=calls, compiles=compiles, steady=steady)


def test_samples_from_one_distribution_never_claim_a_split():
    rng = random.Random(20240611)
    trials = claimed = 0
    for _ in range(400):
        trial = _trial(rng, rng.choice((3, 8, 13)), rng.choice((5, 8, 12, 20, 30)))
        t = trial_report(trial, None, None)
        text = verdict_text(t.verdict)
        trials += 1
        assert not (t.steady.faster.count and t.steady.slower.count), text
        assert "the shapes disagree" not in text
        claimed += bool(t.steady.faster.count or t.steady.slower.count)
        if not (t.steady.faster.count or t.steady.slower.count):
            assert not t.saving_significant or t.steady.shapes > 1, text
    assert claimed <= 0.02 * trials, claimed  # the family-wise rate is 1%: twice that is never reached


def test_a_real_difference_with_enough_samples_is_claimed_and_few_samples_are_said_to_be_few():
    rng = random.Random(7)
    t = trial_report(_trial(rng, 8, 30, factor=0.5), None, None)  # compiled twice as fast on every shape
    assert t.steady.faster.count >= 6 and t.saving_significant, verdict_text(t.verdict)
    few = trial_report(_trial(rng, 4, 3, factor=0.5), None, None)
    text = verdict_text(few.verdict)
    assert few.steady.faster.count == 0 and few.steady.too_few == few.steady.indistinct.count
    assert "could not be told apart from eager" in text and "too few samples to test" in text


# --------------------------------------------------------------------------------------------
# A busy machine is recorded and said
# --------------------------------------------------------------------------------------------


def test_a_load_above_the_cpus_is_a_busy_machine():
    assert busy(TrialEnv(load=(1.2, 3.5), cpus=2)) == 3.5
    assert busy(TrialEnv(load=(0.4, 1.9), cpus=2)) is None
    assert busy(TrialEnv()) is None  # not recorded: nothing is claimed


def test_a_run_on_a_busy_machine_carries_a_warning_naming_the_load():
    from compilescope.analysis.build import build_run_report

    rng = random.Random(1)
    quiet = _trial(rng, 2, 10)
    loaded = TrialResult(TrialSpec("w", "dynamic", "cold", quiet.spec.stream), "ok", calls=quiet.calls,
                         compiles=quiet.compiles, steady=quiet.steady, env=TrialEnv(load=(0.5, 7.25), cpus=2))
    report = build_run_report(RunResult(workload="w", stream=quiet.spec.stream, trials=(quiet, loaded)))
    (note,) = [n for n in report.notes if "busy" in n.text]
    assert note.level == "warning"
    assert "busy during 1 of 2 trial(s) (dynamic (cold))" in note.text and "load average up to 7.2 on 2 CPU(s)" in note.text


@pytest.mark.processes  # the environment reads platform.processor(), which runs `uname -p`
def test_a_trial_records_the_machines_load_and_cpus():
    from compilescope.execute.trial import finished_env, trial_env
    from compilescope.model import MeasureOptions

    env = finished_env(trial_env(MeasureOptions(), None, "in-process"))
    assert env.cpus is not None and env.cpus >= 1
    assert len(env.load) == 2 and all(x >= 0 for x in env.load)  # start and end (Linux has os.getloadavg)


def test_samples_that_grow_as_they_are_taken_are_told_from_noise():
    from compilescope.analysis.noise import drift

    rng = random.Random(0)
    flat = [1e-4 * (1 + 0.2 * rng.random()) for _ in range(30)]
    assert drift(flat)[0] > 0.01
    grows = [1e-4 * (1 + i / 10) * (1 + 0.05 * rng.random()) for i in range(30)]
    p, before, after = drift(grows)
    assert p < 0.001 and after / before > 2
    assert drift(grows[:12]) is None  # thirds of 4 samples: no test can tell them apart at 0.01
