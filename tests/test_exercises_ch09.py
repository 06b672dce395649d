"""Chapter 9's exercise checks: ch09-ex1 (train_step, a broken gradient-descent step repaired),
ch09-ex2 (bce_with_logits, a cross-entropy that stays finite) and ch09-ex3 (safe_norm, a norm whose
gradient is 0, not NaN, at 0).

Each check must accept the chapter's reference solution and other correct answers, reject the typical
wrong answers with the message that explains them, and turn hostile answers into feedback instead of
exceptions.  The references in ``ch09`` are NumPy formulas; the tests below check them against
TensorFlow itself (autodiff of the regression loss, ``tf.nn.sigmoid_cross_entropy_with_logits``,
``tf.norm``) and check the facts of TensorFlow the messages state (σ(17) rounds to 1 in float32; the
gradient of ``tf.maximum`` and ``tf.abs`` at 0; a single ``tf.where`` around ``tf.sqrt`` is 0 eagerly
and NaN under XLA; squares of 1e-30 and 1e30 underflow and overflow in float32), so that a TensorFlow
that changes them fails here first.

Feedback is asserted by its catalogue key; the message text only where it shows a filled-in number that
the key cannot.  The typical wrong answers are declared with each check (``@exercise(...,
wrong_answers=...)``) and run in both languages by test_classroom_wrong_answers.py; the tests here pin
that table down and take those they look at more closely from there (:func:`wrong_answer`).

The chapter's own solutions (``chapters/en/09_*.md``, read by chapter_solutions.py) are tested when the
chapter has them; until then those tests are skipped, and the answers below stand in.  ``not attempted``:
the student edition's stub (``...``) fails its check with ``common.none``, and the grader, which compares
the stub's fingerprint, reports it as not attempted.
"""

import ast
import pathlib
import re
import time

import keras
import nbformat
import numpy as np
import pytest
import tensorflow as tf

import gradlib
from chapter_solutions import CHECK_LINE
from gradlib import exercises
from gradlib.classroom import grade
from gradlib.classroom.catalogue import catalogue
from gradlib.classroom.exercises import ch09
from gradlib.classroom.exercises._core import WRONG_ANSWERS
from gradlib.classroom.grade import _Run, _untouched, stub_fingerprint
from test_classroom_wrong_answers import expect_key, references, wrong_answer
from tools import book

LANGS = ("en", "zh")
IDS = ("ch09-ex1", "ch09-ex2", "ch09-ex3")
PASSED = {"ch09-ex1": "ch09.train_passed", "ch09-ex2": "ch09.bce_passed", "ch09-ex3": "ch09.norm_passed"}
ANSWER_NAMES = {"ch09-ex1": "train_step", "ch09-ex2": "bce_with_logits", "ch09-ex3": "safe_norm"}


def chapter_reference(exercise_id):
    """The chapter's own solution (English edition); the test is skipped while the chapter has none."""
    found = references().get(exercise_id)
    if found is None:
        pytest.skip(f"chapter 9 has no solution cell for {exercise_id} yet")
    return found


def feedback(exercise_id, answer, lang="en", **kwargs):
    result = exercises.check(exercise_id, answer, lang=lang, **kwargs)
    assert result.key != "common.check_failed", result.message
    return result


# -- the reference solutions, as the chapter gives them (they stand in while the chapter has none) ----------

def train_step(w, b, x, y, lr):
    with tf.GradientTape() as tape:
        pred = x @ w + b
        loss = tf.reduce_mean((pred - y) ** 2)
    dw, db = tape.gradient(loss, [w, b])
    w.assign_sub(lr * dw)
    b.assign_sub(lr * db)
    return loss


def bce_with_logits(y, z):
    return tf.nn.softplus(z) - y * z


def safe_norm(x):
    scale = tf.stop_gradient(tf.reduce_max(tf.abs(x), axis=-1, keepdims=True))
    nonzero = scale[..., 0] > 0
    unit = x / tf.where(scale > 0, scale, tf.ones_like(scale))  # entries in [-1, 1]
    squared = tf.reduce_sum(unit * unit, axis=-1)  # in [1, k] where the row is not zero
    root = tf.sqrt(tf.where(nonzero, squared, tf.ones_like(squared)))  # never sqrt(0)
    return tf.where(nonzero, scale[..., 0] * root, tf.zeros_like(root))


STAND_INS = {"ch09-ex1": train_step, "ch09-ex2": bce_with_logits, "ch09-ex3": safe_norm}


# -- other correct answers, written independently of the check ---------------------------------------------

def train_step_assign(w, b, x, y, lr):
    """w.assign(w - lr * dw), the gradient of each variable from its own tape call (persistent tape)."""
    with tf.GradientTape(persistent=True) as tape:
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
    dw, db = tape.gradient(loss, w), tape.gradient(loss, b)
    w.assign(w - lr * dw)
    b.assign(b - lr * db)
    return loss


@tf.function
def train_step_function(w, b, x, y, lr):
    """Already a tf.function: the check wraps it again."""
    return train_step(w, b, x, y, lr)


def bce_from_log_sigmoid(y, z):
    """−(y log σ(z) + (1 − y) log σ(−z)) = y·softplus(−z) + (1 − y)·softplus(z): no cancellation at all."""
    return y * tf.nn.softplus(-z) + (1 - y) * tf.nn.softplus(z)


def bce_library(y, z):
    return tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=z)


def bce_one_condition(y, z):
    """TensorFlow's own formula, both halves chosen by one condition: right at z = 0."""
    positive = z >= 0
    relu = tf.where(positive, z, tf.zeros_like(z))
    neg_abs = tf.where(positive, -z, z)
    return relu - z * y + tf.math.log1p(tf.exp(neg_abs))


def safe_norm_float64(x):
    """The double where on float64 copies: in float32 the squares of 1e-30 and 1e30 fit in float64."""
    x64 = tf.cast(x, tf.float64)
    s = tf.reduce_sum(x64 * x64, axis=-1)
    positive = s > 0
    norm = tf.where(positive, tf.sqrt(tf.where(positive, s, tf.ones_like(s))), tf.zeros_like(s))
    return tf.cast(norm, x.dtype)


@tf.custom_gradient
def safe_norm_custom(x):
    """A custom gradient x / ‖x‖ with divide_no_nan (0 where the row is 0), the value scaled as the chapter's."""
    norm = safe_norm(x)

    def grad_fn(dy):
        return dy[..., None] * tf.math.divide_no_nan(x, norm[..., None])
    return norm, grad_fn


def safe_norm_euclidean(x):
    """tf.math.reduce_euclidean_norm on the scaled, safe rows: right, and XLA cannot compile it (no kernel for
    EuclideanNorm), so its XLA pass is skipped."""
    scale = tf.stop_gradient(tf.reduce_max(tf.abs(x), axis=-1, keepdims=True))
    nonzero = scale[..., 0] > 0
    unit = x / tf.where(scale > 0, scale, tf.ones_like(scale))
    inner = tf.math.reduce_euclidean_norm(tf.where(nonzero[..., None], unit, tf.ones_like(unit)), axis=-1)
    return tf.where(nonzero, scale[..., 0] * inner, tf.zeros_like(inner))


CORRECT = {
    "ch09-ex1": [train_step, train_step_assign, train_step_function],
    "ch09-ex2": [bce_with_logits, bce_from_log_sigmoid, bce_library, bce_one_condition, tf.function(bce_library)],
    "ch09-ex3": [safe_norm, safe_norm_float64, safe_norm_custom, safe_norm_euclidean, tf.function(safe_norm)],
}


# -- the reference solutions pass -------------------------------------------------------------------------

@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("exercise_id", IDS)
def test_the_chapters_solutions_pass(exercise_id, lang):
    result = feedback(exercise_id, chapter_reference(exercise_id), lang)
    assert result.passed and result.key == PASSED[exercise_id], result.message


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("exercise_id, answer", [(e, a) for e, answers in CORRECT.items() for a in answers],
                         ids=lambda value: getattr(value, "__name__", str(value)))
def test_correct_answers_pass(exercise_id, answer, lang):
    result = feedback(exercise_id, answer, lang)
    assert result.passed and result.key == PASSED[exercise_id], result.message
    assert result.message.startswith("correct" if lang == "en" else "正确")


def test_the_answer_names():
    assert {i: exercises.answer_name(i) for i in IDS} == ANSWER_NAMES


def test_each_check_is_quick():
    for exercise_id, answer in STAND_INS.items():
        feedback(exercise_id, answer)  # the first run pays for tracing and imports
        started = time.monotonic()
        assert feedback(exercise_id, answer).passed
        assert time.monotonic() - started < 5.0  # about a second or less each on a 2-core machine


def test_the_checks_write_nothing_to_stderr(capfd):
    capfd.readouterr()
    for exercise_id, answer in STAND_INS.items():
        assert feedback(exercise_id, answer).passed
        for wrong in WRONG_ANSWERS[exercise_id]:
            assert not feedback(exercise_id, wrong.answer).passed
    assert capfd.readouterr().err == ""


# -- not attempted: the student edition's stub ---------------------------------------------------------------

STUBS = {exercise_id: f"def {name}({args}):\n    ...  # your code here\n\n"
                      f'gradlib.exercises.check("{exercise_id}", {name}, lang="en")\n'
         for (exercise_id, name), args in zip(ANSWER_NAMES.items(), ("w, b, x, y, lr", "y, z", "x"))}


def stub_answer(source, name):
    """The function a stub cell defines, the cell run without its check call."""
    namespace = {"tf": tf, "np": np, "gradlib": gradlib}
    exec(compile(CHECK_LINE.sub("None", source), "<stub>", "exec"), namespace)
    return namespace[name]


def definition(source, name):
    return next(node for node in ast.parse(source).body if getattr(node, "name", None) == name)


@pytest.mark.parametrize("exercise_id", IDS)
def test_a_stub_is_not_attempted(exercise_id):
    name = ANSWER_NAMES[exercise_id]
    source = STUBS[exercise_id]
    for lang in LANGS:   # the check: a failing Feedback saying None came back, never a crash
        result = feedback(exercise_id, stub_answer(source, name), lang)
        assert (result.passed, result.key) == (False, "common.none"), result.message
    # the grader: the notebook still binds the name to the stub, whose fingerprint the check cell carries
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import gradlib"), nbformat.v4.new_code_cell(source)]
    stub = stub_fingerprint(definition(source, name))
    nb.cells[1].metadata["gradbook"] = {"exercise": exercise_id, "answer": name, "lang": "en", "stub": stub}
    assert grade.inspect_notebook(nb).stubs == {exercise_id: stub}
    assert _untouched(nb, name, stub)
    attempt = nbformat.v4.new_code_cell(f"def {name}(*args):\n    return None\n")
    assert not _untouched(nbformat.v4.new_notebook(cells=[*nb.cells, attempt]), name, stub)
    for lang in LANGS:
        row = grade._outcome({"exercise": exercise_id, "status": "not-attempted", "answer": name}, _Run(), name,
                             lang, 600, 60)
        assert (row["status"], row.get("passed", 0), row["feedback"].key) == ("not-attempted", 0,
                                                                             "grade.not_attempted")


def test_the_chapters_stubs_are_not_attempted():
    """The stubs of the chapter's student edition (both languages), when the chapter exists."""
    from tools.student_edition import source_notebook, student_notebook
    sources = [md for lang in LANGS for md in book.chapters(lang) if md.name.startswith("09_")]
    if not sources:
        pytest.skip("chapter 9 is not in the book yet")
    found = set()
    for md in sources:
        for cell in student_notebook(source_notebook(md)).cells:
            meta = cell.metadata.get("gradbook", {})
            if "stub" not in meta:
                continue
            answer = stub_answer(cell.source, meta["answer"])
            result = feedback(meta["exercise"], answer, meta["lang"])
            assert not result.passed and result.key == "common.none", result.message
            nb = nbformat.v4.new_notebook(cells=[cell])
            assert _untouched(nb, meta["answer"], meta["stub"])
            found.add(meta["exercise"])
    assert found == set(IDS)


# -- the typical mistakes: the table, and a closer look at some ----------------------------------------------

MISTAKES = {
    "ch09-ex1": {
        "the chapter's broken step, unchanged": "ch09.zero_gradient",
        "the NumPy detour kept with ZERO, assign_sub": "ch09.zero_gradient",
        "the NumPy detour kept, ZERO removed": "ch09.none_gradient",
        "the prediction before the tape": "ch09.none_gradient",
        "a None gradient skipped": "ch09.none_unchanged",
        "w = w - lr * dw": "ch09.rebound",
        "w = w - lr * dw and b = b - lr * db": "ch09.not_updated",
        "a new tf.Variable for w": "ch09.new_variable",
        "assign_add: up the gradient": "ch09.wrong_sign",
        "the loss after the update": "ch09.loss_after",
        "tf.reduce_sum instead of tf.reduce_mean": "ch09.sum",
        "the loss returned as loss.numpy()": "ch09.tf_function",
    },
    "ch09-ex2": {
        "the naive formula": "ch09.naive",
        "σ clipped into [eps, 1 − eps]": "ch09.clipped",
        "tf.where around the logs": "ch09.where_nan",
        "log(σ(z) + eps)": "ch09.log_eps",
        "the mean instead of the elementwise loss": "ch09.bce_reduced",
        "y and z swapped": "ch09.swapped",
        "tf.maximum(z, 0) - y z + log1p(exp(-|z|))": "ch09.kink_zero",
        "tf.nn.relu(z) - y z + log1p(exp(-|z|))": "ch09.kink_zero",
        "log(1 + exp(-|z|)) without log1p": "ch09.value_tiny",
        "log1p(exp(z)) - y z: exp overflows": "ch09.exp_overflow",
    },
    "ch09-ex3": {
        "tf.norm": "ch09.sqrt_nan",
        "tf.sqrt of the sum of squares": "ch09.sqrt_nan",
        "sqrt(sum + eps)": "ch09.norm_eps",
        "a single tf.where around tf.sqrt": "ch09.single_where_xla",
        "a single tf.where around s ** 0.5": "ch09.single_where",
        "the norm over axis 0": "ch09.norm_axis",
        "keepdims=True": "ch09.norm_axis",
        "axis=1 instead of -1": "ch09.norm_axis_raised",
        "the squared norm": "ch09.squared",
    },
}


@pytest.mark.parametrize("exercise_id", IDS)
def test_every_typical_mistake_is_declared_with_its_key(exercise_id):
    # test_classroom_wrong_answers.py runs each of them in both languages
    assert {w.name: w.key for w in WRONG_ANSWERS[exercise_id]} == MISTAKES[exercise_id]


@pytest.mark.parametrize("exercise_id, name", [(e, n) for e, table in MISTAKES.items() for n in table])
def test_each_typical_mistake_gets_its_message_in_both_languages(exercise_id, name):
    expect_key(exercise_id, wrong_answer(exercise_id, name), MISTAKES[exercise_id][name])


# -- ch09-ex1 ------------------------------------------------------------------------------------------------

def test_ex1_reference_step_is_tensorflows_gradient():
    for case in ch09.REGRESSION_CASES:
        w, b = tf.Variable(case.w0), tf.Variable(case.b0)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((case.x @ w + b - case.y) ** 2)
        dw, db = tape.gradient(loss, [w, b])
        step = ch09.regression_step(case.w0, case.b0, case.x, case.y, case.lr)
        np.testing.assert_allclose(step.loss, loss.numpy(), rtol=1e-14)
        np.testing.assert_allclose(step.dw, dw.numpy(), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(step.db, db.numpy(), rtol=1e-12, atol=1e-15)
        assert step.w.shape == case.w0.shape and step.b.shape == (1,)


def test_ex1_cases_cover_the_brief_and_tell_the_mistakes_apart():
    dims = [case.x.shape[1] for case in ch09.REGRESSION_CASES]
    assert 1 in dims and 3 in dims
    true_w = [-1.2, -0.7, -2.0]   # the third case's true weights, all negative
    x, y = ch09.REGRESSION_CASES[2].x, ch09.REGRESSION_CASES[2].y
    fit = np.linalg.lstsq(np.hstack([x, np.ones((len(x), 1))]), y, rcond=None)[0].ravel()
    assert np.all(np.sign(fit[:3]) == np.sign(true_w))
    for case in ch09.REGRESSION_CASES:
        for dtype in ch09.TRAIN_DTYPES:
            tolerances = ch09.TRAIN_TOLERANCES[dtype]
            step = ch09.regression_step(case.w0, case.b0, case.x, case.y, case.lr)
            n = len(case.x)
            for wrong in (case.w0 + case.lr * step.dw, case.w0 - n * case.lr * step.dw, case.w0):
                assert not np.allclose(wrong, step.w, **tolerances)   # sign, sum and "unchanged" show at step 1
            after = ch09.regression_loss(step.w, step.b, case.x, case.y)
            assert not np.isclose(after, step.loss, **tolerances)     # the loss after the update shows too


@pytest.mark.parametrize("lang", LANGS)
def test_ex1_the_broken_step_and_its_half_repairs_name_the_remaining_bug(lang):
    result = feedback("ch09-ex1", wrong_answer("ch09-ex1", "the chapter's broken step, unchanged"), lang)
    assert result.key == "ch09.zero_gradient" and "unconnected_gradients=tf.UnconnectedGradients.ZERO" in result.message
    result = feedback("ch09-ex1", wrong_answer("ch09-ex1", "the NumPy detour kept, ZERO removed"), lang)
    assert result.key == "ch09.none_gradient" and "TypeError" in result.message and "NoneType" in result.message
    result = feedback("ch09-ex1", wrong_answer("ch09-ex1", "w = w - lr * dw"), lang)
    assert result.key == "ch09.rebound" and "w.assign_sub(lr * dw)" in result.message


def test_ex1_b_rebound_is_named_as_b():
    def rebinds_b(w, b, x, y, lr):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((x @ w + b - y) ** 2)
        dw, db = tape.gradient(loss, [w, b])
        w.assign_sub(lr * dw)
        b = b - lr * db  # noqa: F841
        return loss

    result = feedback("ch09-ex1", rebinds_b)
    assert result.key == "ch09.rebound" and "b.assign_sub(lr * db)" in result.message
    assert "(and w did change)" in result.message


def test_ex1_the_sum_names_the_batch_size_and_the_sign_the_losses():
    result = feedback("ch09-ex1", wrong_answer("ch09-ex1", "tf.reduce_sum instead of tf.reduce_mean"))
    assert "with d = 1, n = 8 (float32), at step 1 of 5" in result.message
    assert "8 times too large, and n = 8" in result.message
    result = feedback("ch09-ex1", wrong_answer("ch09-ex1", "assign_add: up the gradient"))
    case = ch09.REGRESSION_CASES[0]
    x, y = (v.astype(np.float32).astype(np.float64) for v in (case.x, case.y))
    step = ch09.regression_step(case.w0, case.b0, x, y, case.lr)
    climbed = ch09.regression_loss(case.w0 + case.lr * step.dw, case.b0 + case.lr * step.db, x, y)
    assert climbed > step.loss
    assert f"the loss grows from {step.loss:.6g} to {climbed:.6g}" in result.message


def test_ex1_an_answer_that_fails_only_in_a_tf_function_is_told_so():
    def numpy_array(w, b, x, y, lr):
        loss = train_step(w, b, x, y, lr)
        return np.asarray(loss)  # a number is fine eagerly; inside a tf.function the loss is symbolic

    for lang in LANGS:
        result = feedback("ch09-ex1", numpy_array, lang)
        assert result.key == "ch09.tf_function"
        assert result.message.startswith("inside tf.function" if lang == "en" else "在 tf.function 内部")


def test_ex1_an_optimizer_made_inside_the_step_fails_in_a_tf_function():
    def keras_inside(w, b, x, y, lr):   # eagerly right; a tf.function may create variables only when first traced
        optimizer = keras.optimizers.SGD(learning_rate=lr)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((x @ w + b - y) ** 2)
        optimizer.apply_gradients(zip(tape.gradient(loss, [w, b]), [w, b]))
        return loss

    for case in ch09.REGRESSION_CASES:   # eagerly it is gradient descent, its learning rate rounded to float32
        ch09._train_pass(keras_inside, case, np.float64, "en", traced=False)
    for lang in LANGS:
        result = feedback("ch09-ex1", keras_inside, lang)
        assert result.key == "ch09.tf_function" and "singleton tf.Variables" in result.message


def test_ex1_the_watchers_are_removed_whatever_happens():
    original = tf.GradientTape.gradient

    def hangs(w, b, x, y, lr):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w)
        tape.gradient(loss, w)
        while True:
            pass

    assert feedback("ch09-ex1", hangs, timeout=0.5).key == "common.timeout"
    assert feedback("ch09-ex1", lambda *args: 1 / 0).key == "common.raised"
    assert tf.GradientTape.gradient is original
    made = []
    tf.Variable(1.0)   # no creator scope left behind: a variable made now is not counted by a check
    with tf.variable_creator_scope(lambda next_creator, **kwargs: made.append(1) or next_creator(**kwargs)):
        tf.Variable(2.0)
    assert made == [1]


# -- ch09-ex2 ------------------------------------------------------------------------------------------------

def test_ex2_reference_is_tensorflows_and_the_briefs_formula():
    y, z = ch09.BCE_Y_GRID, ch09.BCE_Z_GRID
    value, dz, dy = ch09.bce_reference(y, z)
    scale_value, scale_dz, _ = ch09.bce_scales(y, z)
    eps = np.finfo(np.float64).eps
    # log(1 + e^z) − y z, as the brief writes it: the same number, up to its cancellation
    assert np.all(np.abs(value - (np.logaddexp(0, z) - y * z)) <= 4 * eps * scale_value)
    yt, zt = tf.constant(y), tf.constant(z)
    with tf.GradientTape() as tape:
        tape.watch([yt, zt])
        loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=yt, logits=zt)
    grad_z, grad_y = tape.gradient(loss, [zt, yt])
    assert np.all(np.abs(loss.numpy() - value) <= 4 * eps * scale_value)
    assert np.all(np.abs(grad_z.numpy() - dz) <= 4 * eps * scale_dz)
    np.testing.assert_array_equal(grad_y.numpy(), dy)
    # without the cancellation: y = 1, z = 40 is e^(−40), which log(1 + e^z) − y z rounds to 0
    i = ch09.BCE_SPECIAL_Z.index(40.0)
    assert value[1, i] == pytest.approx(4.248354255291589e-18, rel=1e-14)
    assert (np.logaddexp(0, 40.0) - 40.0) == 0


def test_ex2_float32_facts_the_messages_state():
    z = tf.constant([17.0, -17.0, 0.0])
    assert tf.sigmoid(z).numpy()[0] == 1.0                      # σ(17) rounds to 1: log(1 − σ) = −inf
    naive = wrong_answer("ch09-ex2", "the naive formula")
    assert np.isinf(naive(tf.constant([0.0]), z[:1]).numpy()[0])
    x = tf.constant([0.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        at_max, at_relu, at_abs = tf.maximum(x, 0.0), tf.nn.relu(x), tf.abs(x)
    assert [tape.gradient(v, x).numpy()[0] for v in (at_max, at_relu, at_abs)] == [1.0, 0.0, 0.0]
    # the chapter's softplus(z) − y z cancels at y = 1, z = 40, and the tolerance allows for it
    got = bce_with_logits(tf.constant([1.0]), tf.constant([40.0])).numpy().astype(np.float64)
    exact, _, _ = ch09.bce_reference(np.array([1.0]), np.array([40.0]))
    scale, _, _ = ch09.bce_scales(np.array([1.0]), np.array([40.0]))
    assert got[0] == 0 and ch09._bce_close(got, exact, scale, np.float32).all()


@pytest.mark.parametrize("lang", LANGS)
def test_ex2_the_naive_formula_is_named_where_it_breaks(lang):
    result = feedback("ch09-ex2", wrong_answer("ch09-ex2", "the naive formula"), lang)
    assert result.key == "ch09.naive"
    assert (result.message.startswith("at y = 0, z = 17 (float32), your loss is inf") if lang == "en"
            else result.message.startswith("在 y = 0、z = 17（float32）处，你的损失为 inf"))


@pytest.mark.parametrize("lang", LANGS)
def test_ex2_clip_and_eps_name_their_eps_and_the_zero_gradient(lang):
    clipped = feedback("ch09-ex2", wrong_answer("ch09-ex2", "σ clipped into [eps, 1 − eps]"), lang)
    assert clipped.key == "ch09.clipped" and "z = 100" in clipped.message and "1e-07" in clipped.message
    assert ("where a confident wrong prediction needs it most" in clipped.message if lang == "en"
            else "最需要梯度的地方" in clipped.message)
    eps = feedback("ch09-ex2", wrong_answer("ch09-ex2", "log(σ(z) + eps)"), lang)
    assert eps.key == "ch09.log_eps" and "1e-07" in eps.message and "−log(0.5 + eps)" in eps.message


def test_ex2_the_mistake_models_tell_clip_from_eps():
    for name, key in (("σ clipped into [eps, 1 − eps]", "ch09.clipped"), ("log(σ(z) + eps)", "ch09.log_eps")):
        found, eps = ch09._bce_mistake(wrong_answer("ch09-ex2", name))
        assert found == key and eps == pytest.approx(1e-7, rel=1e-6)
    assert ch09._bce_mistake(wrong_answer("ch09-ex2", "y and z swapped"))[0] == "ch09.swapped"
    for right in CORRECT["ch09-ex2"]:
        assert ch09._bce_mistake(right) is None

    def clip_1e_3(y, z):   # another eps: named as it is
        p = tf.clip_by_value(tf.sigmoid(z), 1e-3, 1 - 1e-3)
        return -(y * tf.math.log(p) + (1 - y) * tf.math.log(1 - p))
    result = feedback("ch09-ex2", clip_1e_3)
    assert result.key == "ch09.clipped" and "eps = 0.001" in result.message


def test_ex2_the_logistic_data_keep_a_confident_wrong_point_beyond_40():
    for dtype in ch09.BCE_DTYPES:
        w, b = ch09.LOGISTIC_W0, float(ch09.LOGISTIC_B0)
        for w_next, b_next in [(w, np.array(b))] + ch09.logistic_reference(dtype)[:-1]:   # before each step
            z = ch09.LOGISTIC_X @ w_next + float(b_next)
            assert np.any((ch09.LOGISTIC_Y == 0) & (z > 40)) and np.any((ch09.LOGISTIC_Y == 0) & (z < -40))
    clipped = wrong_answer("ch09-ex2", "σ clipped into [eps, 1 − eps]")
    z = tf.constant(ch09.LOGISTIC_X @ ch09.LOGISTIC_W0 + float(ch09.LOGISTIC_B0))
    with tf.GradientTape() as tape:
        tape.watch(z)
        loss = clipped(tf.constant(ch09.LOGISTIC_Y), z)
    assert tape.gradient(loss, z).numpy()[2] == 0   # the clip gives the confident wrong point nothing


def test_ex2_a_grad_fn_that_ignores_dy_shows_in_the_training():
    @tf.custom_gradient
    def ignores_dy(y, z):
        value = y * tf.nn.softplus(-z) + (1 - y) * tf.nn.softplus(z)
        return value, lambda dy: (-z, tf.sigmoid(z) - y)   # right with upstream 1, wrong under the mean

    for lang in LANGS:
        result = feedback("ch09-ex2", ignores_dy, lang)
        assert result.key == "ch09.train_weights"
        assert result.message.startswith("in a logistic regression" if lang == "en" else "用你的损失训练逻辑回归")


def test_ex2_other_mistakes_get_their_message():
    def float64_result(y, z):
        return tf.cast(bce_from_log_sigmoid(y, z), tf.float64)

    def labels_stopped(y, z):
        return bce_from_log_sigmoid(tf.stop_gradient(y), z)

    assert feedback("ch09-ex2", float64_result).key == "common.same_dtype"
    result = feedback("ch09-ex2", labels_stopped)
    assert result.key == "ch09.bce_grad_none" and "respect to y" in result.message


# -- ch09-ex3 ------------------------------------------------------------------------------------------------

def test_ex3_reference_is_tf_norm_and_its_gradient():
    for x in (*ch09.NORM_CASES, ch09.NORM_EXTREME):
        value, gradient = ch09.norm_reference(x)
        xt = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(xt)
            norm = tf.norm(xt, axis=-1)
        nonzero = value > 0
        np.testing.assert_allclose(value, norm.numpy(), rtol=1e-15)
        np.testing.assert_allclose(gradient[nonzero], tape.gradient(norm, xt).numpy()[nonzero], rtol=1e-14,
                                   atol=1e-300)
        assert not gradient[~nonzero].any()


def test_ex3_cases_cover_the_brief():
    rows = ch09.NORM_MATRIX
    assert np.any(np.all(rows == 0, axis=1))                                    # an all-zero row
    assert np.any((np.sum(rows != 0, axis=1) == 1))                             # one non-zero entry
    assert np.any(rows < 0) and np.any((rows == 0) & np.any(rows != 0, axis=1, keepdims=True))
    magnitudes = np.abs(rows[rows != 0])
    assert magnitudes.min() <= 1e-3 * 1.0001 and magnitudes.max() >= 1e3 * 0.9999
    assert {x.ndim for x in ch09.NORM_CASES} == {1, 2, 3} and not ch09.NORM_CASES[1].any()
    assert np.abs(ch09.NORM_EXTREME[ch09.NORM_EXTREME != 0]).min() == 1e-30
    assert np.abs(ch09.NORM_EXTREME).max() == 1e30


def test_ex3_tensorflow_facts_the_messages_state():
    x = tf.constant([[3.0, 4.0], [0.0, 0.0]])
    single = wrong_answer("ch09-ex3", "a single tf.where around tf.sqrt")
    power = wrong_answer("ch09-ex3", "a single tf.where around s ** 0.5")

    def value_and_gradient(fn, x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        return y, tape.gradient(y, x)

    _, eager = value_and_gradient(single, x)
    assert eager.numpy()[1].tolist() == [0.0, 0.0]          # TensorFlow's SqrtGrad kernel: 0 where dy is 0
    _, compiled = tf.function(lambda x: value_and_gradient(single, x), jit_compile=True)(x)
    assert np.isnan(compiled.numpy()[1]).all()               # XLA: 0 · inf = NaN
    assert np.isnan(value_and_gradient(power, x)[1].numpy()[1]).all()
    assert np.isnan(value_and_gradient(lambda x: tf.norm(x, axis=-1), x)[1].numpy()[1]).all()
    with np.errstate(under="ignore", over="ignore"):
        squares = np.float32(1e-30) ** 2, np.float32(1e30) ** 2
    assert squares[0] == 0 and np.isinf(squares[1])
    assert tf.norm(tf.constant([1e-30, 0.0]), axis=-1).numpy() == 0   # the chapter's examples
    assert np.isinf(tf.norm(tf.constant([1e30, 0.0]), axis=-1).numpy())


def test_ex3_an_answer_xla_cannot_compile_skips_only_the_xla_pass():
    x = ch09.NORM_MATRIX.astype(np.float32)
    assert ch09._norm_xla(safe_norm_euclidean, x, np.float32, "en", "") is None
    assert ch09._norm_xla(safe_norm, x, np.float32, "en", "") is not None


def test_ex3_the_double_where_without_scaling_is_told_about_the_range():
    double_where = ch09._norm_double_where()
    for lang in LANGS:
        result = feedback("ch09-ex3", double_where, lang)
        assert result.key == "ch09.norm_underflow" and "[1e-30, 0, 0]" in result.message

    # a norm of inf where the squares overflow (what the double where gives there): named as an overflow
    x = ch09.NORM_EXTREME.astype(np.float32)
    values, gradient = (v.astype(np.float32).astype(np.float64) for v in ch09.norm_reference(x))
    values[2] = np.inf
    with pytest.raises(ch09.Mismatch) as problem:
        ch09._norm_compare(double_where, x, values, gradient, np.float32, "en", "", xla=False)
    assert problem.value.key == "ch09.norm_overflow" and "[1e+30, -1e+30, 5e+29]" in str(problem.value)


def test_ex3_messages_name_the_row_and_the_eps():
    result = feedback("ch09-ex3", wrong_answer("ch09-ex3", "sqrt(sum + eps)"))
    assert result.message.startswith("for the row [0, 0, 0] (float32), your norm is 1e-06") and "1e-12" in result.message
    result = feedback("ch09-ex3", wrong_answer("ch09-ex3", "a single tf.where around tf.sqrt"), "zh")
    assert result.message.startswith("在 XLA 下（tf.function(jit_compile=True)），对行 [0, 0, 0]（float32）")
    result = feedback("ch09-ex3", wrong_answer("ch09-ex3", "axis=1 instead of -1"))
    assert "shape [3]" in result.message and "Invalid reduction dimension" in result.message
    assert "{{function_node" not in result.message


def test_ex3_the_centre_starts_exactly_on_one_embedding():
    for dtype in (np.float32, np.float64):
        embeddings = tf.constant(ch09.CENTRE_X.astype(dtype)) @ tf.constant(ch09.CENTRE_W0.astype(dtype))
        difference = embeddings.numpy() - ch09.CENTRE_C.astype(dtype)
        assert not difference[ch09.CENTRE_AT].any() and np.all(np.abs(difference).sum(axis=1)[
            np.arange(len(difference)) != ch09.CENTRE_AT] > 0)
    first = ch09.centre_reference(np.float64)[0]
    assert np.any(ch09.CENTRE_X[ch09.CENTRE_AT] @ first != ch09.CENTRE_C[ch09.CENTRE_AT])   # it moves off


def test_ex3_a_grad_fn_that_ignores_dy_shows_in_the_training():
    @tf.custom_gradient
    def ignores_dy(x):
        norm = safe_norm(x)
        return norm, lambda dy: tf.math.divide_no_nan(x, norm[..., None])

    result = feedback("ch09-ex3", ignores_dy)
    assert result.key == "ch09.train_weights" and "centre loss" in result.message


def test_ex3_a_value_the_training_does_not_need_is_still_checked():
    calls = {"n": 0}

    def wrong_late(x):   # right until the training, then the value shifted (its gradient unchanged)
        calls["n"] += 1
        return safe_norm(x) + (0.5 if calls["n"] > 12 else 0.0)

    result = feedback("ch09-ex3", wrong_late)
    assert result.key == "ch09.train_value"


# -- the generic messages, when no typical mistake fits --------------------------------------------------------

def _half_step(w, b, x, y, lr):
    return train_step(w, b, x, y, lr / 2)


def _loss_doubled(w, b, x, y, lr):
    return 2 * train_step(w, b, x, y, lr)


def _with_gradient(value_fn, gradient_fn):
    @tf.custom_gradient
    def answer(*args):
        return value_fn(*args), lambda dy: gradient_fn(dy, *args)
    return answer


def _norm_wrong_on_vectors(x):
    return safe_norm(x) * (1.5 if len(x.shape) == 1 else 1.0)


GENERIC = [
    ("ch09-ex1", _half_step, "ch09.step_value", "with d = 1, n = 8 (float32), at step 1 of 5, your w is ["),
    ("ch09-ex1", _loss_doubled, "ch09.loss_value", "expected mean((x @ w + b - y)**2) before the update"),
    ("ch09-ex2", lambda y, z: bce_from_log_sigmoid(y, z) + 0.5, "ch09.bce_value", "at y = 0, z = "),
    ("ch09-ex2", _with_gradient(bce_from_log_sigmoid, lambda dy, y, z: (dy * np.nan, dy * np.nan)), "ch09.grad_nan",
     "but its gradient with respect to z is nan"),
    ("ch09-ex2", _with_gradient(bce_from_log_sigmoid, lambda dy, y, z: (-dy * z, 2 * dy * (tf.sigmoid(z) - y))),
     "ch09.bce_grad", "your gradient with respect to z is"),
    ("ch09-ex3", lambda x: 1.5 * safe_norm(x), "ch09.norm_value", "for the row [3, 4, 0] (float32), your norm is 7.5"),
    ("ch09-ex3", _with_gradient(safe_norm, lambda dy, x: 2 * dy[..., None] * tf.math.divide_no_nan(
        x, safe_norm(x)[..., None])), "ch09.norm_grad", "for the row [3, 4, 0] (float32), your gradient is [1.2, 1.6, 0]"),
    ("ch09-ex3", _norm_wrong_on_vectors, "ch09.norm_value", "for x = [1.5, -2, 0.5] (float32), your norm is"),
]


@pytest.mark.parametrize("exercise_id, answer, key, text", GENERIC, ids=[row[2] for row in GENERIC])
def test_a_wrong_answer_without_a_typical_mistake_gets_the_generic_message(exercise_id, answer, key, text):
    expect_key(exercise_id, answer, key)
    assert text in feedback(exercise_id, answer).message


def test_every_ch09_message_is_tested():
    tested = set(re.findall(r'"(ch09\.[a-z0-9_]+)"', pathlib.Path(__file__).read_text(encoding="utf-8")))
    fragments = {"ch09.loss_word", "ch09.step_where", "ch09.function_step_where", "ch09.at_dtype", "ch09.at_yz",
                 "ch09.bce_train_where", "ch09.at_row", "ch09.at_vector", "ch09.xla_where", "ch09.norm_train_where"}
    keys = {key for key in catalogue("en") if key.startswith("ch09.")}
    assert keys - fragments <= tested, sorted(keys - fragments - tested)
