"""gradlib.layers: QuantizedDense, Quantizer, ReversalSchedule; dorefa_weights; saving with custom gradients."""

import numpy as np
import pytest
import tensorflow as tf

import gradlib

keras = pytest.importorskip("keras")

RNG = np.random.default_rng(7)
X = RNG.normal(size=(6, 4)).astype(np.float32)
DY = RNG.normal(size=(6, 3)).astype(np.float32)
# A latent kernel with an exact zero and values on both sides of the clip at 1.
KERNEL = np.array([[0.0, -0.3, 1.0], [-1.0, 2.5, 0.4], [0.7, -1.5, -0.0], [1.2, 0.05, -0.8]], np.float32)


def np_sign(w):
    return np.where(w >= 0, 1.0, -1.0).astype(np.float32)


def dense(quantizer="ste_sign", activation_quantizer=None, **kwargs):
    layer = gradlib.QuantizedDense(3, kernel_quantizer=quantizer, activation_quantizer=activation_quantizer, **kwargs)
    layer.build((None, 4))
    layer.kernel.assign(KERNEL)
    if layer.bias is not None:
        layer.bias.assign([0.5, -0.25, 0.0])
    return layer


def kernel_grad(layer, x=X, dy=DY):
    with tf.GradientTape() as tape:
        y = layer(x)
    return y.numpy(), tape.gradient(y, layer.kernel, output_gradients=tf.constant(dy)).numpy()


def test_forward_multiplies_by_the_sign_of_the_latent_kernel():
    y, _ = kernel_grad(dense())
    np.testing.assert_allclose(y, X @ np_sign(KERNEL) + [0.5, -0.25, 0.0], rtol=1e-6, atol=1e-6)
    # sign(0) = +1 and sign(-0.0) = +1: two columns would differ with tf.sign
    assert np_sign(KERNEL)[0, 0] == 1 and np_sign(KERNEL)[2, 2] == 1


def test_kernel_gradient_is_straight_through():
    _, g = kernel_grad(dense())
    np.testing.assert_allclose(g, X.T @ DY, rtol=1e-5, atol=1e-6)


def test_clipped_kernel_gradient_blocks_beyond_the_clip_and_passes_at_it():
    _, g = kernel_grad(dense(gradlib.Quantizer("ste_sign", clip=1.0)))
    mask = (np.abs(KERNEL) <= 1.0).astype(np.float32)  # |w| = 1 passes (BinaryNet's <=)
    np.testing.assert_allclose(g, (X.T @ DY) * mask, rtol=1e-5, atol=1e-6)
    assert mask[0, 2] == 1 and mask[1, 0] == 1 and mask[1, 1] == 0


def test_float_layer_when_no_quantizer_and_no_bias():
    layer = dense(None, use_bias=False)
    y, g = kernel_grad(layer)
    np.testing.assert_allclose(y, X @ KERNEL, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g, X.T @ DY, rtol=1e-5, atol=1e-6)


def test_activation_quantizer_quantizes_the_inputs_and_passes_their_gradient():
    layer = dense(None, "ste_sign", use_bias=False)
    x = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = layer(x)
    gx = tape.gradient(y, x, output_gradients=tf.constant(DY)).numpy()
    np.testing.assert_allclose(y, np_sign(X) @ KERNEL, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gx, DY @ KERNEL.T, rtol=1e-5, atol=1e-6)


def test_rank3_inputs_act_on_the_last_axis():
    x = RNG.normal(size=(2, 5, 4)).astype(np.float32)
    y = dense(use_bias=False)(x).numpy()
    np.testing.assert_allclose(y, x @ np_sign(KERNEL), rtol=1e-5, atol=1e-6)


def test_dense_keywords_reach_keras_dense():
    layer = gradlib.QuantizedDense(2, activation="relu", kernel_initializer="zeros", name="q")
    y = layer(tf.constant([[1.0, -2.0]]))
    # zeros kernel -> sign = +1 everywhere -> relu(1 - 2) = 0
    np.testing.assert_array_equal(y, [[0.0, 0.0]])
    assert layer.name == "q"


@pytest.mark.parametrize("bad, error", [("sign", ValueError), (3, TypeError), ("ste_sign ", ValueError)])
def test_bad_quantizer_is_named(bad, error):
    with pytest.raises(error, match="quantizer"):
        gradlib.QuantizedDense(2, kernel_quantizer=bad)


@pytest.mark.parametrize("units", [0, -1, 2.5, True, "3"])
def test_bad_units(units):
    with pytest.raises(ValueError, match="units"):
        gradlib.QuantizedDense(units)


def test_integer_inputs_are_cast_like_dense():
    layer = dense(use_bias=False)
    np.testing.assert_allclose(layer(tf.constant([[1, 0, -2, 3]])), np.array([[1, 0, -2, 3]]) @ np_sign(KERNEL))


def test_xnor_axes_of_a_convolution_kernel_are_accepted_and_saved(tmp_path):
    quantizer = gradlib.Quantizer("xnor_binarize", axis=(0, 1, 2))
    kernel = tf.reshape(tf.range(-12.0, 12.0), [2, 3, 2, 2])
    np.testing.assert_array_equal(quantizer(kernel), gradlib.xnor_binarize(kernel, axis=(0, 1, 2)))
    assert gradlib.Quantizer("xnor_binarize", axis=-2)(tf.ones([3, 2])).shape == (3, 2)
    assert gradlib.Quantizer("xnor_binarize", axis=(0, 1, 2, 3))(tf.ones([2, 2, 2, 2, 3])).shape == (2, 2, 2, 2, 3)
    with pytest.raises(ValueError, match="out of range .* rank 5"):
        gradlib.Quantizer("xnor_binarize", axis=5)
    model = keras.Sequential([keras.Input((4,)), gradlib.QuantizedDense(3, kernel_quantizer=gradlib.Quantizer(
        "xnor_binarize", axis=0))])
    model.save(str(tmp_path / "x.keras"))
    loaded = keras.models.load_model(str(tmp_path / "x.keras"))
    assert loaded.layers[0].kernel_quantizer == gradlib.Quantizer("xnor_binarize", axis=0)


def test_bad_quantizer_parameter_fails_at_construction():
    with pytest.raises(ValueError, match="clip"):
        gradlib.Quantizer("ste_sign", clip=-1.0)
    with pytest.raises(ValueError, match="bits"):
        gradlib.Quantizer("dorefa_weights", bits=0)
    with pytest.raises(TypeError):
        gradlib.Quantizer("ste_sign", clipp=1.0)


def test_quantizer_config_round_trip_and_equality():
    q = gradlib.Quantizer("sign_with_surrogate", surrogate="swish_sign", beta=3.0)
    again = gradlib.Quantizer.from_config(q.get_config())
    assert again == q and again != gradlib.Quantizer("sign_with_surrogate", surrogate="swish_sign")
    x = tf.constant([-1.0, 0.0, 0.2])
    np.testing.assert_array_equal(q(x), gradlib.sign_with_surrogate(x, "swish_sign", beta=3.0))


# -- dorefa_weights -------------------------------------------------------------------------------

def np_dorefa_weights(x, dy, bits):
    """Forward and the gradient with a straight-through q_k, by hand (product and chain rules)."""
    n = 2 ** bits - 1
    t = np.tanh(x.astype(np.float64))
    m = np.abs(t).max()
    u = t / (2 * m) + 0.5
    y = 2 * np.round(u * n) / n - 1
    du = 2 * dy  # dy/du = 2, straight through q_k
    i = np.abs(t).argmax()
    g = du * (1 - t ** 2) / (2 * m)
    dm = -np.sum(du * t) / (2 * m ** 2)  # through the maximum
    g.flat[i] += dm * np.sign(t.flat[i]) * (1 - t.flat[i] ** 2)
    return y, g


@pytest.mark.parametrize("bits", [2, 3, 8])
def test_dorefa_weights_against_numpy(bits):
    x = np.array([-2.0, -0.6, 0.0, 0.3, 1.0, 0.9], np.float32)
    dy = np.array([1.0, -0.5, 2.0, 0.25, -1.0, 3.0], np.float32)
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = gradlib.dorefa_weights(xt, bits)
    g = tape.gradient(y, xt, output_gradients=tf.constant(dy)).numpy()
    y_ref, g_ref = np_dorefa_weights(x, dy, bits)
    np.testing.assert_allclose(y, y_ref, atol=1e-6)
    np.testing.assert_allclose(g, g_ref, rtol=1e-4, atol=1e-5)
    levels = 2 * np.arange(2 ** bits) / (2 ** bits - 1) - 1
    assert np.abs(y.numpy()[:, None] - levels[None, :]).min(axis=1).max() < 1e-6  # every value is a level
    assert y.numpy()[np.abs(x).argmax()] == np.sign(x[np.abs(x).argmax()])  # the largest |x| reaches +-1 exactly


def test_dorefa_weights_all_zero_is_finite():
    x = tf.zeros([4])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = gradlib.dorefa_weights(x)
    g = tape.gradient(y, x)
    assert np.isfinite(y.numpy()).all() and np.isfinite(g.numpy()).all()


# -- training, saving -----------------------------------------------------------------------------

def _blobs(seed=0, n=256):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n)
    centres = np.array([[3.0, 0, 0, 0], [0, 3.0, 0, 0], [0, 0, 3.0, 0]], np.float32)
    return (centres[labels] + rng.normal(size=(n, 4))).astype(np.float32), labels


def _model(kernel_quantizer="ste_sign", activation_quantizer=None, seed=0):
    keras.utils.set_random_seed(seed)
    return keras.Sequential([
        keras.Input((4,)),
        gradlib.QuantizedDense(16, kernel_quantizer=kernel_quantizer, activation="relu"),
        gradlib.QuantizedDense(3, kernel_quantizer=kernel_quantizer, activation_quantizer=activation_quantizer),
    ])


def test_fit_learns_with_binary_weights():
    x, y = _blobs()
    model = _model()
    model.compile(keras.optimizers.Adam(0.02), keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    before = model.evaluate(x, y, verbose=0)[1]
    model.fit(x, y, epochs=15, batch_size=32, verbose=0)
    after = model.evaluate(x, y, verbose=0)[1]
    assert after > 0.9 and after > before + 0.2, (before, after)
    for layer in model.layers:  # the latent weights are floats, the forward pass uses their signs
        assert len(np.unique(layer.kernel.numpy())) > 2
        assert set(np.unique(layer.quantized_kernel().numpy())) <= {-1.0, 1.0}


def _grads(model, x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(x) ** 2)
    return [g.numpy() for g in tape.gradient(loss, model.trainable_variables)]


@pytest.mark.parametrize("quantizer", ["ste_sign", gradlib.Quantizer("dorefa_weights", bits=2),
                                       gradlib.Quantizer("ste_sign", clip=1.0)], ids=str)
def test_keras_file_round_trip_keeps_outputs_and_gradients(tmp_path, quantizer):
    x, _ = _blobs(1, 32)
    model = _model(quantizer, "ste_sign")
    path = str(tmp_path / "m.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_array_equal(loaded(x), model(x))
    for a, b in zip(_grads(loaded, x), _grads(model, x)):
        np.testing.assert_array_equal(a, b)
    assert loaded.layers[0].kernel_quantizer == model.layers[0].kernel_quantizer


def test_an_unregistered_callable_is_refused_at_save_with_a_reason(tmp_path):
    layer = gradlib.QuantizedDense(2, kernel_quantizer=lambda w: gradlib.ste_sign(w))
    layer.build((None, 3))
    with pytest.raises(TypeError, match="register_keras_serializable"):
        layer.get_config()


def test_a_registered_callable_saves(tmp_path):
    @keras.saving.register_keras_serializable(package="gradlib_tests")
    def half_sign(w):
        return 0.5 * gradlib.ste_sign(w)

    model = keras.Sequential([keras.Input((4,)), gradlib.QuantizedDense(2, kernel_quantizer=half_sign)])
    path = str(tmp_path / "m.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    x, _ = _blobs(2, 8)
    np.testing.assert_array_equal(loaded(x), model(x))


def test_gradient_reversal_round_trips_with_its_current_lambda(tmp_path):
    layer = gradlib.GradientReversal(0.25)
    model = keras.Sequential([keras.Input((3,)), layer, keras.layers.Dense(1)])
    layer.lam.assign(0.8)
    path = str(tmp_path / "r.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    assert loaded.layers[0].lam.numpy() == pytest.approx(0.8)
    assert loaded.layers[0].get_config()["lam"] == 0.25


OPS = {
    "ste_sign": gradlib.ste_sign,
    "ste_sign_clip": lambda x: gradlib.ste_sign(x, clip=1.0),
    "ste_round": gradlib.ste_round,
    "xnor_binarize": gradlib.xnor_binarize,
    "dorefa_quantize": lambda x: gradlib.dorefa_quantize(x, 2),
    "dorefa_weights": gradlib.dorefa_weights,
    "swish_sign": lambda x: gradlib.sign_with_surrogate(x, "swish_sign"),
    "gradient_reversal": lambda x: gradlib.gradient_reversal(x, 0.5),
}
SAVE_X = np.array([-1.5, -1.0, -0.3, 0.0, 0.4, 1.0, 2.0], np.float32)
WEIGHTS = np.array([1.0, -2.0, 0.5, 3.0, -1.0, 0.25, 4.0], np.float32)


def _module(op):
    class Module(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([7], tf.float32)])
        def __call__(self, x):
            return op(x)
    return Module()


def _outer_gradient(fn):
    x = tf.constant(SAVE_X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(fn(x) * WEIGHTS)
    return tape.gradient(loss, x).numpy()


# Loaded in a fresh interpreter: in the saving process TensorFlow's gradient registry still holds
# the Python gradient functions, and a reload there can take them from it instead of from the file.
RELOAD = """
import json, sys
import numpy as np, tensorflow as tf
x0, weights = np.array(json.loads(sys.argv[1]), np.float32), np.array(json.loads(sys.argv[2]), np.float32)
out = {}
for path in sys.argv[3:]:
    loaded = tf.saved_model.load(path)
    x = tf.constant(x0)
    try:
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(loaded(x) * weights)
        out[path] = tape.gradient(loss, x).numpy().tolist()
    except Exception as err:
        out[path] = type(err).__name__ + ": " + str(err)[:200]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def reloaded(tmp_path_factory):
    """Each op saved with and without its custom gradient, and the gradients a fresh process gets."""
    import json
    import os
    import subprocess
    import sys

    root = tmp_path_factory.mktemp("saved")
    before, paths = {}, {}
    for name, op in OPS.items():
        for keep in (True, False):
            module = _module(op)
            before[name] = _outer_gradient(module)
            paths[name, keep] = str(root / f"{name}-{keep}")
            options = tf.saved_model.SaveOptions(experimental_custom_gradients=keep)
            tf.saved_model.save(module, paths[name, keep], options=options)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    run = subprocess.run([sys.executable, "-c", RELOAD, json.dumps(SAVE_X.tolist()), json.dumps(WEIGHTS.tolist()),
                          *paths.values()], capture_output=True, text=True, env=env, timeout=300, check=True)
    after = json.loads(run.stdout.strip().splitlines()[-1])
    return before, {key: after[path] for key, path in paths.items()}


@pytest.mark.parametrize("name", OPS)
def test_custom_gradients_survive_saved_model_in_a_fresh_process(reloaded, name):
    before, after = reloaded
    np.testing.assert_array_equal(np.array(after[name, True], np.float32), before[name])
    assert np.abs(before[name]).sum() > 0  # the custom gradient, not sign's or round's zero


@pytest.mark.parametrize("name", OPS)
def test_without_saved_custom_gradients_a_fresh_process_cannot_differentiate(reloaded, name):
    _, after = reloaded
    assert isinstance(after[name, False], str) and after[name, False].startswith("LookupError"), after[name, False]
    assert "IdentityN" in after[name, False]


# -- mixed precision ------------------------------------------------------------------------------

@pytest.fixture
def mixed_float16():
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_mixed_float16_quantizer_sees_float16_and_gradients_are_finite(mixed_float16):
    seen = []

    def recording(w):
        seen.append(w.dtype)
        return gradlib.ste_sign(w)

    x, y = _blobs(3, 64)
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), gradlib.QuantizedDense(8, kernel_quantizer=recording, activation="relu"),
                              gradlib.QuantizedDense(3, kernel_quantizer=recording)])
    with tf.GradientTape() as tape:
        out = model(x)
        loss = tf.reduce_mean(tf.cast(out, tf.float32) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    assert out.dtype == tf.float16 and set(seen) == {tf.float16}
    assert all(v.dtype == tf.float32 for v in model.trainable_variables)
    assert all(g.dtype == tf.float32 and np.isfinite(g.numpy()).all() for g in grads)
    model.compile(keras.optimizers.Adam(0.01), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(x, y, epochs=3, batch_size=16, verbose=0)
    assert np.isfinite(history.history["loss"]).all()


# -- ReversalSchedule -----------------------------------------------------------------------------

class _Count(keras.layers.Layer):
    """Counts how often Keras traces the model's call (a Python side effect runs only when tracing)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.traces = 0

    def call(self, x):
        self.traces += 1
        return x


def _reversal_model():
    keras.utils.set_random_seed(0)
    reversal, counter = gradlib.GradientReversal(0.0), _Count()
    model = keras.Sequential([keras.Input((4,)), counter, reversal, keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(0.01), "mse")
    return model, reversal, counter


def test_schedule_sets_lambda_at_every_batch_over_epochs_without_retracing():
    x, _ = _blobs(4, 64)
    model, reversal, counter = _reversal_model()
    schedule = gradlib.ReversalSchedule(reversal, total_steps=8)
    model.fit(x, np.zeros(64), epochs=1, batch_size=16, verbose=0, callbacks=[schedule])
    traces = counter.traces
    model.fit(x, np.zeros(64), epochs=2, batch_size=16, verbose=0, callbacks=[schedule])
    steps = [s for s, _ in schedule.history]
    assert steps == list(range(12)) and schedule.step == 12
    expected = gradlib.dann.lambda_schedule(np.minimum(np.arange(12) / 8, 1.0))
    np.testing.assert_allclose([lam for _, lam in schedule.history], expected)
    assert counter.traces == traces  # eight new lambdas, no new trace
    assert reversal.lam.numpy() == pytest.approx(expected[-1])


def test_schedule_with_steps_per_execution():
    x, _ = _blobs(5, 64)
    model, reversal, _ = _reversal_model()
    model.compile(keras.optimizers.SGD(0.01), "mse", steps_per_execution=2)
    schedule = gradlib.ReversalSchedule(reversal, total_steps=4, schedule=lambda p: 2 * p)
    model.fit(x, np.zeros(64), epochs=2, batch_size=16, verbose=0, callbacks=[schedule])
    assert [s for s, _ in schedule.history] == [0, 2, 4, 6] and schedule.step == 8
    np.testing.assert_allclose([lam for _, lam in schedule.history], [0.0, 1.0, 2.0, 2.0])


def test_schedule_with_steps_per_execution_and_a_partial_last_group():
    x, _ = _blobs(5, 80)  # 5 batches of 16 per epoch: groups of 2, 2 and 1
    model, reversal, _ = _reversal_model()
    model.compile(keras.optimizers.SGD(0.01), "mse", steps_per_execution=2)
    schedule = gradlib.ReversalSchedule(reversal, total_steps=10, schedule=lambda p: p)
    model.fit(x, np.zeros(80), epochs=2, batch_size=16, verbose=0, callbacks=[schedule])
    assert [s for s, _ in schedule.history] == [0, 2, 4, 5, 7, 9] and schedule.step == 10


def test_the_reversed_gradient_follows_lambda_inside_fit():
    """The gradient reaching the layer below the reversal is -lambda times the one above, as lambda moves."""
    x, _ = _blobs(6, 16)
    keras.utils.set_random_seed(0)
    below = keras.layers.Dense(2, name="below")
    reversal = gradlib.GradientReversal(0.0)
    model = keras.Sequential([keras.Input((4,)), below, reversal, keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(1.0), "mse")
    schedule = gradlib.ReversalSchedule(reversal, total_steps=3, schedule=lambda p: [0.0, 1.0, -2.0, 0.5][int(3 * p)])
    kernels = []
    for _ in range(3):
        before = below.kernel.numpy().copy()
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x)[:, 0] - 1.0) ** 2)
        reference = tape.gradient(loss, below.kernel).numpy()  # at the lambda of the previous step
        model.fit(x, np.ones(16), epochs=1, batch_size=16, verbose=0, callbacks=[schedule])
        kernels.append((before, below.kernel.numpy(), reference, schedule.history[-1][1]))
    for before, after, _, lam in kernels:
        if lam == 0.0:
            np.testing.assert_array_equal(after, before)  # lambda 0: nothing reaches the layer below
    lams = [k[3] for k in kernels]
    assert lams == [0.0, 1.0, -2.0]


@pytest.mark.parametrize("kwargs, error, match", [
    ({"layer": keras.layers.Dense(1), "total_steps": 10}, TypeError, "GradientReversal"),
    ({"total_steps": 0}, ValueError, "total_steps"),
    ({"total_steps": 2.5}, ValueError, "total_steps"),
    ({"total_steps": 10, "schedule": 1.0}, TypeError, "schedule"),
])
def test_schedule_bad_arguments(kwargs, error, match):
    kwargs = {"layer": gradlib.GradientReversal(), **kwargs}
    with pytest.raises(error, match=match):
        gradlib.ReversalSchedule(**kwargs)


@pytest.mark.parametrize("value", [float("nan"), [0.1, 0.2], "x"])
def test_schedule_returning_a_non_number_fails_loudly(value):
    schedule = gradlib.ReversalSchedule(gradlib.GradientReversal(), 10, schedule=lambda p: value)
    with pytest.raises(ValueError, match="schedule"):
        schedule.on_train_batch_begin(0)


EXPORT_RELOAD = """
import json, sys
import numpy as np, tensorflow as tf
loaded = tf.saved_model.load(sys.argv[1])
x = np.array(json.loads(sys.argv[2]), np.float32)
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(loaded.serve(x) ** 2)
print(json.dumps([g.numpy().tolist() for g in tape.gradient(loss, loaded.trainable_variables)]))
"""


@pytest.mark.slow
def test_an_exported_quantized_model_has_the_same_weight_gradients_in_a_fresh_process(tmp_path):
    import json
    import os
    import subprocess
    import sys

    x, _ = _blobs(7, 16)
    model = _model(gradlib.Quantizer("dorefa_weights", bits=2), "ste_sign")
    with gradlib.captured_tf_warnings():
        model.export(str(tmp_path / "exported"), verbose=False)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    run = subprocess.run([sys.executable, "-c", EXPORT_RELOAD, str(tmp_path / "exported"), json.dumps(x.tolist())],
                         capture_output=True, text=True, env=env, timeout=300, check=True)
    fresh = json.loads(run.stdout.strip().splitlines()[-1])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(x) ** 2)
    before = tape.gradient(loss, model.trainable_variables)
    assert len(fresh) == len(before) == 4
    for f, b in zip(fresh, before):
        np.testing.assert_array_equal(np.array(f, np.float32), b.numpy())
    assert np.abs(before[0].numpy()).sum() > 0
