"""The two-moons DANN experiment: schedules, the DANN advantage, bad options."""

import numpy as np
import pytest

from gradlib import dann

SEEDS = (0, 1, 2)


def test_lambda_schedule_matches_the_paper():
    p = np.array([0.0, 0.1, 0.5, 1.0])
    np.testing.assert_allclose(dann.lambda_schedule(p), 2 / (1 + np.exp(-10 * p)) - 1)
    assert dann.lambda_schedule(0.0) == 0.0 and dann.lambda_schedule(1.0) > 0.9999


def test_learning_rate_schedule_matches_the_paper():
    p = np.array([0.0, 0.5, 1.0])
    np.testing.assert_allclose(dann.learning_rate_schedule(p), 0.01 / (1 + 10 * p) ** 0.75)


@pytest.fixture(scope="module")
def runs():
    return {(m, s): dann.moons_experiment(m, seed=s) for m in ("source_only", "dann") for s in SEEDS}


@pytest.mark.parametrize("seed", SEEDS)
def test_dann_beats_source_only_on_the_target(runs, seed):
    source_only, adapted = runs["source_only", seed], runs["dann", seed]
    assert source_only["source_accuracy"] > 0.95 and adapted["source_accuracy"] > 0.95
    assert adapted["target_accuracy"] > source_only["target_accuracy"] + 0.03, (seed, source_only["target_accuracy"],
                                                                                 adapted["target_accuracy"])


def test_results_are_reproducible(runs):
    again = dann.moons_experiment("dann", seed=SEEDS[0])
    assert again["target_accuracy"] == runs["dann", SEEDS[0]]["target_accuracy"]


def test_result_structure(runs):
    result = runs["dann", 0]
    assert result["domain_accuracy"] is not None and 0 <= result["domain_accuracy"] <= 1
    assert runs["source_only", 0]["domain_accuracy"] is None
    xs, ys = result["source"]
    xt, yt = result["target"]
    assert xs.shape == xt.shape == (300, 2) and ys.shape == yt.shape == (300,)
    lams = [h["lam"] for h in result["history"]]
    assert lams[0] == 0.0 and lams == sorted(lams) and lams[-1] == pytest.approx(2.0, rel=1e-3)


def test_grid_probabilities():
    result = dann.moons_experiment("source_only", seed=0, steps=50, grid=12)
    xx, yy, prob = result["grid"]
    assert xx.shape == yy.shape == prob.shape == (12, 12)
    assert ((prob >= 0) & (prob <= 1)).all()


@pytest.mark.parametrize(
    "method, options, message",
    [
        ("adversarial", {}, "method"),
        ("dann", {"epochs": 3}, "unknown options"),
        ("dann", {"steps": 0}, "steps"),
        ("dann", {"hidden": 2.5}, "hidden"),
        ("dann", {"learning_rate": -1.0}, "learning_rate"),
        ("dann", {"optimizer": "rmsprop"}, "optimizer"),
    ],
)
def test_bad_options(method, options, message):
    with pytest.raises(ValueError, match=message):
        dann.moons_experiment(method, **options)
