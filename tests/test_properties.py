"""Property tests: gradlib's ops against independent references on random input.

hypothesis draws the inputs.  Every array mixes the points where an op is
special (0 and -0, the clip points ±clip, the DoReFa range ends 0 and 1, the
rounding ties ±0.5 and ±2.5, the quantization levels) with random floats, in
float32 and float64.  The references are NumPy formulas written from the
papers cited in gradlib's docstrings, never calls into gradlib.

Every test is derandomized and keeps no example database, so every run draws
the same examples (hypothesis only caches constants under .hypothesis/,
which git ignores).
"""

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gradlib
from gradutil import value_and_grad
from gradlib import GradientError


def examples(n: int):
    return settings(max_examples=n, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


DTYPES = st.sampled_from([np.float32, np.float64])
SHAPES = hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=6)
ZEROS = (0.0, -0.0)


def floats(dtype, low: float, high: float):
    """Random floats in [low, high] with |v| >= 1e-3 or v = ±0.

    TensorFlow's CPU kernels flush subnormal numbers to zero and NumPy does
    not; values this far from underflow keep every product here normal.
    """
    return st.floats(low, high, width=32 if dtype == np.float32 else 64).map(
        lambda v: v if abs(v) >= 1e-3 else np.copysign(0.0, v))


def points(dtype, specials, low: float = -3.0, high: float = 3.0):
    """Elements that are special points half of the time and random floats otherwise."""
    values = [float(dtype(s)) for s in specials] + list(ZEROS)
    unique = sorted({(v, bool(np.signbit(v))) for v in values})  # keeps both 0 and -0
    return st.one_of(st.sampled_from([v for v, _ in unique]), floats(dtype, low, high))


@st.composite
def point_arrays(draw, specials=(), low: float = -3.0, high: float = 3.0):
    """``(x, dy)``: a point array with special points, and a random upstream gradient of its shape."""
    dtype, shape = draw(DTYPES), draw(SHAPES)
    x = draw(hnp.arrays(dtype, shape, elements=points(dtype, specials, low, high)))
    dy = draw(hnp.arrays(dtype, shape, elements=floats(dtype, -2.0, 2.0)))
    return x, dy


def tolerance(dtype):
    """(rtol, atol) for a result computed in ``dtype`` against a float64 reference."""
    return (1e-5, 1e-6) if dtype == np.float32 else (1e-10, 1e-12)


# -- independent NumPy references --------------------------------------------

def np_sign(x):
    """sign with sign(0) = sign(-0) = +1 (BinaryNet: +1 if x >= 0, else -1)."""
    return np.where(x >= 0, 1, -1).astype(x.dtype)


def indicator(condition, dtype):
    return condition.astype(dtype)


def np_sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def approx_sign_derivative(x, **_):
    """Bi-Real Net (Liu et al. 2018): ApproxSign(x) = 2x + x² on [-1, 0), 2x - x² on [0, 1),
    ±1 outside; its derivative, piece by piece."""
    return np.select([(x >= -1) & (x < 0), (x >= 0) & (x < 1)], [2 + 2 * x, 2 - 2 * x], 0.0)


def swish_sign_derivative(x, beta, **_):
    """BNN+ (Darabi et al. 2018): d/dx [2σ(βx)(1 + βx(1 - σ(βx))) - 1] = 2β σ(1-σ) (2 + βx(1 - 2σ)),
    derived by hand from the smooth function (the docstring's tanh/cosh form is the same value)."""
    s = np_sigmoid(beta * x)
    return 2 * beta * s * (1 - s) * (2 + beta * x * (1 - 2 * s))


SURROGATE_REFERENCES = {
    "identity": lambda x, **_: np.ones_like(x),
    # the clip point is taken in the input's dtype, as the comparison is made there
    "clipped": lambda x, clip, dtype, **_: indicator(np.abs(x) <= dtype(clip), np.float64),
    "approx_sign": approx_sign_derivative,
    "swish_sign": swish_sign_derivative,
    "tanh": lambda x, **_: 1.0 / np.cosh(x) ** 2,  # sech²
}

POSITIVE = st.floats(0.05, 3.0)  # clip points
SIGN_SPECIALS = (0.5, -0.5, 1.0, -1.0)


# -- gradient reversal ----------------------------------------------------------

@st.composite
def reversal_cases(draw):
    x, dy = draw(point_arrays(specials=(1.0, -1.0), low=-100.0, high=100.0))
    kind = draw(st.sampled_from(["python float", "python int", "constant", "variable"]))
    if kind == "python int":
        lam = value = draw(st.integers(-10, 10))
    else:
        value = draw(st.sampled_from([0.0, 1.0, 0.1, -0.5]) | floats(np.float64, -10.0, 10.0))
        lam = value
        if kind != "python float":
            lam_dtype = draw(st.sampled_from([tf.float32, tf.float64]))
            lam = tf.constant(value, lam_dtype) if kind == "constant" else tf.Variable(value, dtype=lam_dtype)
            value = float(np.asarray(lam.numpy()))  # what the tensor holds (float32 rounds)
    return x, dy, kind, lam, value


@examples(40)
@given(reversal_cases())
def test_gradient_reversal_is_identity_forward_and_minus_lambda_backward(case):
    x, dy, kind, lam, value = case
    y, grad = value_and_grad(lambda v: gradlib.gradient_reversal(v, lam), x, dy)
    np.testing.assert_array_equal(y, x)
    np.testing.assert_array_equal(np.signbit(y), np.signbit(x))  # -0 stays -0: the very same values
    expected = -x.dtype.type(value) * dy  # lambda in x's dtype, exactly
    np.testing.assert_array_equal(grad, expected, err_msg=f"lam given as {kind}: {lam!r}")


# -- straight-through estimators -----------------------------------------------

@examples(30)
@given(point_arrays(specials=(0.5, -0.5, 1.5, 2.5, -2.5)))
def test_ste_round(case):
    x, dy = case
    y, grad = value_and_grad(gradlib.ste_round, x, dy)
    np.testing.assert_array_equal(y, np.round(x))  # ties to even, as tf.round
    np.testing.assert_array_equal(grad, dy)


@st.composite
def clipped_cases(draw):
    clip = draw(st.none() | POSITIVE)
    specials = SIGN_SPECIALS if clip is None else SIGN_SPECIALS + (clip, -clip)
    return (*draw(point_arrays(specials=specials)), clip)


@examples(40)
@given(clipped_cases())
def test_ste_sign(case):
    x, dy, clip = case
    y, grad = value_and_grad(lambda v: gradlib.ste_sign(v, clip=clip), x, dy)
    np.testing.assert_array_equal(y, np_sign(x))
    window = np.ones_like(x) if clip is None else indicator(np.abs(x) <= x.dtype.type(clip), x.dtype)
    np.testing.assert_array_equal(grad, dy * window)


@examples(30)
@given(point_arrays(specials=SIGN_SPECIALS))
def test_xnor_binarize(case):
    x, dy = case
    y, grad = value_and_grad(gradlib.xnor_binarize, x, dy)
    scale = np.mean(np.abs(x.astype(np.float64)))  # E = mean |x| over all elements (XNOR-Net)
    rtol, atol = tolerance(x.dtype)
    np.testing.assert_allclose(y, np_sign(x) * scale, rtol=rtol, atol=0)
    assert set(np.unique(np.sign(y))) <= {1.0, -1.0} or scale == 0
    np.testing.assert_array_equal(grad, dy)  # straight through; E is a constant


@st.composite
def dorefa_cases(draw):
    bits = draw(st.integers(1, 8))
    levels = 2 ** bits - 1
    level_points = tuple(k / levels for k in draw(st.lists(st.integers(0, levels), max_size=4)))
    specials = (1.0, 0.5, -1.0, 2.0) + level_points
    return (*draw(point_arrays(specials=specials, low=-0.5, high=1.5)), bits)


@examples(40)
@given(dorefa_cases())
def test_dorefa_quantize(case):
    x, dy, bits = case
    y, grad = value_and_grad(lambda v: gradlib.dorefa_quantize(v, bits), x, dy)
    n = x.dtype.type(2 ** bits - 1)  # DoReFa-Net: round((2^k - 1) x) / (2^k - 1), x clipped to [0, 1]
    np.testing.assert_array_equal(y, np.round(np.clip(x, 0, 1) * n) / n)
    assert np.all((y >= 0) & (y <= 1))
    np.testing.assert_array_equal(grad, dy * indicator((x >= 0) & (x <= 1), x.dtype))


def test_every_surrogate_has_a_reference():
    assert set(SURROGATE_REFERENCES) == set(gradlib.SIGN_SURROGATES)


@st.composite
def surrogate_cases(draw):
    clip, beta = draw(POSITIVE), draw(st.floats(0.1, 10.0))
    return (*draw(point_arrays(specials=SIGN_SPECIALS + (clip, -clip, 1 / beta, -1 / beta))), clip, beta)


@pytest.mark.parametrize("surrogate", sorted(SURROGATE_REFERENCES))
@examples(25)
@given(case=surrogate_cases())
def test_sign_with_surrogate(surrogate, case):
    x, dy, clip, beta = case
    y, grad = value_and_grad(lambda v: gradlib.sign_with_surrogate(v, surrogate, clip=clip, beta=beta), x, dy)
    np.testing.assert_array_equal(y, np_sign(x))
    derivative = SURROGATE_REFERENCES[surrogate](x.astype(np.float64), clip=clip, beta=beta, dtype=x.dtype.type)
    rtol, atol = tolerance(x.dtype)
    np.testing.assert_allclose(grad, dy * derivative, rtol=rtol, atol=atol * max(1.0, beta))


# -- straight_through(f, g) -----------------------------------------------------

FORWARDS = {  # f: only its value matters
    "round": tf.round,
    "floor": tf.floor,
    "sign": tf.sign,
    "relu": tf.nn.relu,
    "step": lambda v: tf.cast(v > 0, v.dtype),
    "sin": tf.sin,
}
BACKWARDS = {  # g and its derivative g', analytically in NumPy
    "identity (None)": (None, np.ones_like),
    "tanh": (tf.tanh, lambda x: 1 - np.tanh(x) ** 2),
    "sin": (tf.sin, np.cos),
    "sigmoid": (tf.sigmoid, lambda x: np_sigmoid(x) * (1 - np_sigmoid(x))),
    "cube / 3": (lambda v: v ** 3 / 3, lambda x: x ** 2),
    "softplus": (tf.nn.softplus, np_sigmoid),
    "softsign": (tf.nn.softsign, lambda x: 1 / (1 + np.abs(x)) ** 2),
}


@pytest.mark.parametrize("g_name", list(BACKWARDS))
@examples(15)
@given(f_name=st.sampled_from(sorted(FORWARDS)),
       case=point_arrays(specials=(0.5, -0.5, 1.0, -1.0, 2.5), low=-5.0, high=5.0))
def test_straight_through_has_the_value_of_f_and_the_gradient_of_g(g_name, f_name, case):
    x, dy = case
    f = FORWARDS[f_name]
    g, g_prime = BACKWARDS[g_name]
    y, grad = value_and_grad(gradlib.straight_through(f, g), x, dy)
    fx = f(tf.constant(x)).numpy()
    gx = x if g is None else g(tf.constant(x)).numpy()
    # y = g + (f - g) in floating point: within a few roundings of f (see the docstring)
    eps = np.finfo(x.dtype).eps
    assert np.all(np.abs(y - fx) <= eps * (2 * np.abs(fx) + np.abs(gx))), (y, fx)
    rtol, atol = tolerance(x.dtype)
    np.testing.assert_allclose(grad, dy * g_prime(x.astype(np.float64)), rtol=rtol, atol=atol)


# -- strict_custom_gradient -----------------------------------------------------
#
# The op is y = signal (* weight) (* scale): one or two inputs, elementwise,
# optionally times a variable `scale`; its correct gradients are the
# products of dy with the other factors.  A case corrupts one gradient, or
# the number of gradients, and strict_custom_gradient must name the input.

SLOT_FAULTS = ("python float", "python int", "numpy array of another shape",
               "tensor of another shape", "another dtype")
COUNT_FAULTS = ("one gradient too many", "one gradient too few", "bare tensor for two inputs",
                "missing variable gradient")
INPUT_NAMES = ("signal", "weight")


@st.composite
def gradient_cases(draw, fault):
    n_inputs = 2 if fault == "bare tensor for two inputs" else draw(st.integers(1, 2))
    with_variable = fault == "missing variable gradient" or draw(st.booleans())
    dtype = draw(DTYPES)
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4))
    values = [draw(hnp.arrays(dtype, shape, elements=floats(dtype, -2.0, 2.0))) for _ in range(n_inputs + 1)]
    dy = draw(hnp.arrays(dtype, shape, elements=floats(dtype, -2.0, 2.0)))
    target = draw(st.integers(0, n_inputs - (0 if with_variable else 1)))  # index n_inputs = the variable
    other_shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4).filter(lambda s: s != shape))
    other_dtype = draw(st.sampled_from([d for d in (np.float16, np.float32, np.float64, np.int32) if d != dtype]))
    return dict(n_inputs=n_inputs, with_variable=with_variable, fault=fault, dtype=dtype, values=values, dy=dy,
                target=target, other_shape=other_shape, other_dtype=other_dtype, bare=draw(st.booleans()))


def corrupt(grads, case):
    """Replace the target gradient with a malformed one."""
    grads = list(grads)
    fault, dtype = case["fault"], case["dtype"]
    grads[case["target"]] = {
        "python float": lambda g: 1.5,
        "python int": lambda g: 2,
        "numpy array of another shape": lambda g: np.ones(case["other_shape"], dtype),
        "tensor of another shape": lambda g: tf.ones(case["other_shape"], dtype),
        "another dtype": lambda g: tf.cast(g, case["other_dtype"]),
    }[fault](grads[case["target"]])
    return grads


def run_op(decorator, case):
    """The gradients of sum(dy * op(inputs)) for the inputs and the variable, with ``decorator``."""
    n = case["n_inputs"]
    inputs = [tf.constant(v) for v in case["values"][:n]]
    scale = tf.Variable(case["values"][n], name="scale") if case["with_variable"] else None
    fault = case["fault"]

    def gradients(dy, tensors):
        factors = list(tensors) + ([scale] if scale is not None else [])
        grads = []
        for i in range(len(factors)):
            g = dy
            for j, factor in enumerate(factors):
                if j != i:
                    g = g * factor
            grads.append(g)
        if fault in SLOT_FAULTS:
            grads = corrupt(grads, case)
        input_grads, variable_grads = grads[:n], grads[n:]
        if fault == "one gradient too many":
            input_grads = input_grads + [dy]
        elif fault == "one gradient too few":
            input_grads = input_grads[:-1]
        elif fault == "bare tensor for two inputs":
            input_grads = input_grads[0]
        elif fault == "missing variable gradient":
            variable_grads = []
        elif n == 1 and case["bare"]:
            input_grads = input_grads[0]  # the common way to return one gradient: not in a list
        return (input_grads, variable_grads) if scale is not None else input_grads

    def forward(tensors):
        y = tensors[0]
        for t in tensors[1:]:
            y = y * t
        return y * scale if scale is not None else y

    if scale is not None:
        def grad_fn_of(tensors):
            return lambda dy, variables=None: gradients(dy, tensors)
    else:
        def grad_fn_of(tensors):
            return lambda dy: gradients(dy, tensors)

    if n == 1:
        @decorator
        def op(signal):
            return forward([signal]), grad_fn_of([signal])
    else:
        @decorator
        def op(signal, weight):
            return forward([signal, weight]), grad_fn_of([signal, weight])

    with tf.GradientTape() as tape:
        for t in inputs:
            tape.watch(t)
        y = op(*inputs)
    sources = inputs + ([scale] if scale is not None else [])
    grads = tape.gradient(y, sources, output_gradients=tf.constant(case["dy"]))
    return [g.numpy() for g in grads], scale


@pytest.mark.parametrize("fault", SLOT_FAULTS + COUNT_FAULTS)
@examples(12)
@given(data=st.data())
def test_strict_custom_gradient_refuses_every_malformed_return(fault, data):
    case = data.draw(gradient_cases(fault), label="case")
    with pytest.raises(GradientError) as info:
        run_op(gradlib.strict_custom_gradient, case)
    message = str(info.value)
    names = INPUT_NAMES[:case["n_inputs"]]
    if case["fault"] in SLOT_FAULTS and case["target"] < case["n_inputs"]:
        i = case["target"]
        assert f"input `{names[i]}` (argument {i})" in message, message
    elif case["fault"] in SLOT_FAULTS or case["fault"] == "missing variable gradient":
        assert "variable" in message and "`scale:0`" in message, message
    else:
        assert ", ".join(names) in message and "input" in message, message


@examples(25)
@given(gradient_cases(None))
def test_strict_custom_gradient_passes_correct_returns_unchanged(case):
    strict, _ = run_op(gradlib.strict_custom_gradient, case)
    plain, _ = run_op(tf.custom_gradient, case)
    for a, b in zip(strict, plain):
        np.testing.assert_array_equal(a, b)
    # and they are the product rule's: d(signal * weight * scale)/d(factor) = dy * (other factors)
    factors = case["values"][:case["n_inputs"]] + (case["values"][-1:] if case["with_variable"] else [])
    for i, grad in enumerate(strict):
        expected = case["dy"] * np.prod([f for j, f in enumerate(factors) if j != i], axis=0) \
            if len(factors) > 1 else case["dy"]
        rtol, _ = tolerance(case["dtype"])
        np.testing.assert_allclose(grad, expected.astype(case["dtype"]), rtol=rtol)


# -- curves against check_gradient ----------------------------------------------

SMOOTH = {
    "sin": tf.sin,
    "tanh": tf.tanh,
    "sigmoid": tf.sigmoid,
    "softplus": tf.nn.softplus,
    "cubic": lambda v: v ** 3 - 2 * v,
    "exp(x/3)": lambda v: tf.exp(v / 3),
    "x sin x": lambda v: v * tf.sin(v),
}


@examples(30)
@given(name=st.sampled_from(sorted(SMOOTH)), dtype=st.sampled_from([tf.float32, tf.float64]),
       x=hnp.arrays(np.float64, st.integers(1, 8), elements=points(np.float64, (1.0, -1.0, 2.0))).map(np.sort))
def test_curves_agrees_with_check_gradient_on_smooth_functions(name, dtype, x):
    fn = SMOOTH[name]
    y, dydx = gradlib.curves(fn, x, dtype=dtype)
    check = gradlib.check_gradient(fn, x)
    assert check.ok, check
    numeric = check.numeric
    np.testing.assert_allclose(numeric - np.diag(np.diag(numeric)), 0, atol=1e-12)  # elementwise
    rtol, atol = (1e-4, 1e-5) if dtype == tf.float32 else (1e-7, 1e-8)
    np.testing.assert_allclose(dydx, np.diag(numeric), rtol=rtol, atol=atol)
    np.testing.assert_allclose(y, fn(tf.constant(x, dtype)).numpy(), rtol=0, atol=0)
