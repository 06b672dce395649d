"""gradlib.experiments: the quantizers, the digits split, and the STE / no-STE training runs."""

import numpy as np
import pytest

from gradlib import experiments
from gradutil import upstream_like, value_and_grad

EPOCHS = 8  # 80 Adam steps: enough to separate learning from not learning, fast enough for a test


# -- quantizers ------------------------------------------------------------------

W = np.array([[-1.5, -1.0, -0.3, 0.0], [0.2, 0.7, 1.0, 2.0]], np.float32)


def value_and_gradient(fn, x=W, upstream=None):
    upstream = upstream_like(x) if upstream is None else upstream
    return (*value_and_grad(fn, x, upstream), upstream)


def test_binary_weights_are_plus_minus_one_with_a_clipped_gradient():
    y, g, dy = value_and_gradient(lambda w: experiments.quantize_weights(w, "binary"))
    np.testing.assert_array_equal(y, np.where(W >= 0, 1.0, -1.0))  # sign(0) = +1
    np.testing.assert_array_equal(g, dy * (np.abs(W) <= 1))


def test_the_binary_weight_mask_never_blocks_inside_the_latent_clip():
    # as the docstring of quantize_weights says: the mask 1{|w| <= 1} passes at |w| = 1, so on latent
    # weights clipped to [-1, 1] it never blocks; a strict |w| < 1 would block the weights at +-1
    inside = np.array([-1.0, -0.999, -0.3, 0.0, 0.5, 1.0], np.float32)
    _, g, dy = value_and_gradient(lambda w: experiments.quantize_weights(w, "binary"), inside)
    np.testing.assert_array_equal(g, dy)
    assert "never blocks" in experiments.quantize_weights.__doc__


@pytest.mark.parametrize("bits", [1, 2, 3])
def test_kbit_weights_are_dorefa_levels(bits):
    y, g, dy = value_and_gradient(lambda w: experiments.quantize_weights(w, "kbit", bits))
    n = 2 ** bits - 1
    t = np.tanh(W)
    expected = 2 * np.round((t / (2 * np.abs(t).max()) + 0.5) * n) / n - 1
    np.testing.assert_allclose(y, expected, atol=1e-6)
    levels = 2 * np.arange(n + 1) / n - 1
    assert np.abs(y.ravel()[:, None] - levels[None, :]).min(axis=1).max() < 1e-6  # every value is a level
    assert np.all(np.isfinite(g)) and np.any(g != 0)


def test_float_weights_and_relu_activations_are_plain():
    y, g, dy = value_and_gradient(lambda w: experiments.quantize_weights(w, "float"))
    np.testing.assert_array_equal(y, W)
    np.testing.assert_array_equal(g, dy)
    y, g, dy = value_and_gradient(lambda h: experiments.quantize_activations(h, "float"))
    np.testing.assert_array_equal(y, np.maximum(W, 0))


def test_activation_quantizers():
    y, g, dy = value_and_gradient(lambda h: experiments.quantize_activations(h, "binary"))
    np.testing.assert_array_equal(y, np.where(W >= 0, 1.0, -1.0))
    np.testing.assert_array_equal(g, dy * (np.abs(W) <= 1))
    y, g, dy = value_and_gradient(lambda h: experiments.quantize_activations(h, "kbit", 2))
    np.testing.assert_allclose(y, np.round(np.clip(W, 0, 1) * 3) / 3, atol=1e-7)
    np.testing.assert_array_equal(g, dy * ((W >= 0) & (W <= 1)))


@pytest.mark.parametrize("quantizer", [experiments.quantize_weights, experiments.quantize_activations])
@pytest.mark.parametrize("kind", ["binary", "kbit"])
def test_without_ste_the_value_is_the_same_and_the_gradient_is_none(quantizer, kind):
    with_ste, _, _ = value_and_gradient(lambda v: quantizer(v, kind, 2, True))
    without, grad, _ = value_and_gradient(lambda v: quantizer(v, kind, 2, False))
    np.testing.assert_array_equal(with_ste, without)
    assert grad is None


@pytest.mark.parametrize("bad", ["ternary", "Float", None])
def test_unknown_kinds_are_refused(bad):
    with pytest.raises(ValueError, match="must be one of"):
        experiments.quantize_weights(W, bad)
    with pytest.raises(ValueError, match="must be one of"):
        experiments.quantize_activations(W, bad)


# -- data --------------------------------------------------------------------------

def test_digits_split_is_fixed_disjoint_and_scaled():
    x_train, y_train, x_test, y_test = experiments.load_digits_split()
    assert x_train.shape == (1200, 64) and x_test.shape == (597, 64)
    assert x_train.dtype == np.float32 and y_train.dtype == np.int32
    assert 0.0 <= x_train.min() and x_train.max() <= 1.0
    assert set(np.unique(y_test)) == set(range(10))
    again = experiments.load_digits_split()
    np.testing.assert_array_equal(again[0], x_train)
    train_rows = {row.tobytes() + bytes([label]) for row, label in zip(x_train, y_train)}
    overlap = sum(row.tobytes() + bytes([label]) in train_rows for row, label in zip(x_test, y_test))
    assert overlap < 10  # the digits data has a few duplicate images, no more


# -- training runs -------------------------------------------------------------------

@pytest.fixture(scope="module")
def runs():
    configs = {
        "float": dict(weights="float", activations="float"),
        "binary": dict(weights="binary", activations="float"),
        "binary_sg": dict(weights="binary", activations="float", ste=False),
        "bnn": dict(weights="binary", activations="binary"),
        "bnn_sg": dict(weights="binary", activations="binary", ste=False),
        "kbit": dict(weights="kbit", activations="kbit", bits=2),
        "kbit_sg": dict(weights="kbit", activations="kbit", bits=2, ste=False),
        "act_sg": dict(weights="float", activations="binary", ste=False),
    }
    return {name: experiments.digits_experiment(**config, epochs=EPOCHS, progress=False)
            for name, config in configs.items()}


@pytest.mark.parametrize("name", ["float", "binary", "bnn", "kbit"])
def test_with_ste_every_network_learns(runs, name):
    run = runs[name]
    assert run["gradient_is_none"] == {"W1": False, "W2": False}
    assert run["test_accuracy"] > 0.6 > run["initial_test_accuracy"] + 0.3, run["curves"]["test_accuracy"]
    assert run["curves"]["train_loss"][-1] < run["curves"]["train_loss"][0]


@pytest.mark.parametrize("name", ["binary_sg", "bnn_sg", "kbit_sg"])
def test_without_ste_nothing_changes(runs, name):
    run = runs[name]
    assert run["gradient_is_none"] == {"W1": True, "W2": True}
    assert len(set(run["curves"]["test_accuracy"])) == 1  # the initial accuracy, every epoch
    assert len(set(run["curves"]["train_loss"])) == 1
    rng = np.random.default_rng(0)  # the initial weights of seed 0, drawn as the experiment draws them
    w1 = rng.uniform(-1, 1, (64, 64)).astype(np.float32)
    w2 = rng.uniform(-1, 1, (64, 10)).astype(np.float32)
    np.testing.assert_array_equal(run["latent_weights"][0], w1)
    np.testing.assert_array_equal(run["latent_weights"][1], w2)


def test_a_stopped_activation_only_freezes_the_first_layer(runs):
    run = runs["act_sg"]
    assert run["gradient_is_none"] == {"W1": True, "W2": False}
    assert run["test_accuracy"] > run["initial_test_accuracy"] + 0.2
    rng = np.random.default_rng(0)
    np.testing.assert_array_equal(run["latent_weights"][0], rng.uniform(-1, 1, (64, 64)).astype(np.float32))


def test_binary_latent_weights_stay_in_the_clip_range(runs):
    for name in ("binary", "bnn"):
        w1, w2 = runs[name]["latent_weights"]
        assert np.abs(w1).max() <= 1.0 and np.abs(w2).max() <= 1.0
    assert np.abs(runs["float"]["latent_weights"][0]).max() > 1.0  # float weights are not clipped


def test_same_seed_same_run_other_seed_other_run(runs):
    again = experiments.digits_experiment(weights="binary", epochs=EPOCHS, progress=False)
    assert again["curves"] == runs["binary"]["curves"]
    other = experiments.digits_experiment(weights="binary", epochs=EPOCHS, seed=1, progress=False)
    assert other["curves"]["test_accuracy"] != runs["binary"]["curves"]["test_accuracy"]


def test_result_structure(runs):
    run = runs["kbit"]
    curves = run["curves"]
    assert curves["step"] == [10 * e for e in range(EPOCHS + 1)]
    assert len(curves["test_accuracy"]) == len(curves["train_loss"]) == EPOCHS + 1
    assert run["test_accuracy"] == curves["test_accuracy"][-1]
    assert run["initial_test_accuracy"] == curves["test_accuracy"][0]
    assert run["label"] == "weights=kbit, activations=kbit, ste=True, bits=2"
    assert run["settings"]["bits"] == 2 and run["settings"]["epochs"] == EPOCHS


def test_progress_bar_in_build_mode(monkeypatch, capsys):
    monkeypatch.setenv("GRADBOOK_BUILD", "1")
    experiments.digits_experiment(epochs=2, steps_per_epoch=1)
    out, err = capsys.readouterr()
    assert out.startswith("weights=float, activations=float, ste=True: |") and "| 2/2 [" in out
    assert err == ""
    experiments.digits_experiment(epochs=2, steps_per_epoch=1, progress=False)
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("options, match", [
    (dict(weights="ternary"), "weights"),
    (dict(activations="sigmoid"), "activations"),
    (dict(bits=0), "bits"),
    (dict(bits=2.5), "bits"),
    (dict(epochs=0), "epochs"),
    (dict(hidden=True), "hidden"),
    (dict(steps_per_epoch=-1), "steps_per_epoch"),
    (dict(learning_rate=0.0), "learning_rate"),
])
def test_bad_options_are_refused(options, match):
    with pytest.raises(ValueError, match=match):
        experiments.digits_experiment(progress=False, **options)


def test_weight_quantizer_replaces_the_weight_quantizer_only():
    seen = []

    def spy(w):
        seen.append(tuple(w.shape))
        return experiments.quantize_weights(w, "binary", ste=True)

    a = experiments.digits_experiment("binary", "float", epochs=2, progress=False)
    b = experiments.digits_experiment("binary", "float", epochs=2, progress=False, weight_quantizer=spy)
    assert a["test_accuracy"] == b["test_accuracy"] and a["curves"] == b["curves"]  # the same estimator, same run
    assert {(64, 64), (64, 10)} <= set(seen)
    with pytest.raises(TypeError, match="weight_quantizer"):
        experiments.digits_experiment("binary", "float", epochs=1, progress=False, weight_quantizer="strict")
