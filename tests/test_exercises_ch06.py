"""Chapter 6's exercise checks: ch06-ex1 (custom_gradient GRL), ch06-ex2 (λ schedule), ch06-ex3 (a DANN loss, fixed).

Each check must accept the reference solution and reasonable variants, reject
the typical wrong answers with a specific message in both languages, and turn
hostile answers into feedback, never an exception.
"""

import math

import numpy as np
import pytest
import tensorflow as tf

import gradlib
from gradlib import exercises
from test_classroom_wrong_answers import reference, wrong_answer
from gradlib.classroom.exercises import ch06

# Feedback is asserted by its catalogue key; the message text is asserted only where it shows a
# formatted number or a filled-in placeholder (a point, λ, a coefficient) that the key cannot.
# The typical wrong answers are declared with each check (``WRONG_ANSWERS``), and
# test_classroom_wrong_answers.py asserts each one's key in both languages; the tests below take
# them from there (``declared``) where they assert more than the key.


# -- reference solutions (as in the chapter) and variants -------------------------

@tf.custom_gradient
def reverse_gradient(x, lam):
    def grad_fn(dy):
        return -lam * dy, None
    return tf.identity(x), grad_fn


def reverse_gradient_closure(x, lam):  # lam closed over, x the only input
    @tf.custom_gradient
    def op(v):
        return tf.identity(v), lambda dy: -lam * dy
    return op(x)


def _reversal_by(x, value):  # a reader's own reversal with a fixed factor (not gradlib's)
    @tf.custom_gradient
    def op(v):
        return tf.identity(v), lambda dy: -value * dy
    return op(x)


dann_lambda = reference("ch06-ex2")  # the chapter's own solution


# -- wrong answers for ex1 (besides the declared ones) ---------------------------------

grl_trick = wrong_answer("ch06-ex1", "the exact stop_gradient trick")  # right values and gradients, no custom gradient
grl_trick_textbook = wrong_answer("ch06-ex1", "the stop_gradient trick")  # rounds twice
ignores_lambda = wrong_answer("ch06-ex1", "minus one whatever lam")


def frozen_at_trace(x, lam):  # reads a variable once, when the tf.function is traced
    with tf.init_scope():
        value = float(lam.numpy()) if hasattr(lam, "numpy") else float(lam)
    return _reversal_by(x, value)


@tf.custom_gradient
def gradient_for_lam(x, lam):  # grad_fn returns a gradient for lam, which gets none
    return tf.identity(x), lambda dy: (-lam * dy, -tf.reduce_sum(x * dy))


# -- ch06-ex1 ---------------------------------------------------------------------

@pytest.mark.parametrize("answer", [reverse_gradient, reverse_gradient_closure])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_ex1_correct_answers_pass(answer, lang):
    feedback = exercises.check("ch06-ex1", answer, lang=lang)
    assert feedback.passed, feedback.message
    assert "{0.5, 1, 0, 2}" in feedback.message


@tf.function
def _reverse_in_a_tf_function(x, lam):  # a helper traced on its own: a nested function graph
    return reverse_gradient(x, lam)


@pytest.mark.parametrize("answer", [
    tf.function(reverse_gradient),                           # the layer itself decorated with @tf.function
    lambda x, lam: _reverse_in_a_tf_function(x, lam),        # calls a @tf.function helper
], ids=["decorated", "helper"])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_ex1_custom_gradient_inside_a_tf_function_passes(answer, lang):
    feedback = exercises.check("ch06-ex1", answer, lang=lang)
    assert feedback.passed, feedback.message


def test_ex1_the_exact_trick_in_a_tf_function_is_still_refused():
    feedback = exercises.check("ch06-ex1", tf.function(grl_trick))
    assert not feedback.passed
    assert feedback.key == "ch06.no_custom"


def test_ex1_trick_is_rejected_because_it_is_not_bit_exact():
    feedback = exercises.check("ch06-ex1", grl_trick_textbook)
    assert not feedback.passed
    assert feedback.message.startswith("with λ = 0.5, at x = ")
    assert feedback.key == "ch06.not_exact" and "of 202 values do" in feedback.message
    zh = exercises.check("ch06-ex1", grl_trick_textbook, lang="zh")
    assert zh.message.startswith("当 λ = 0.5 时，在 x = ") and zh.key == "ch06.not_exact"


@pytest.mark.parametrize("answer", [
    gradlib.gradient_reversal,                                  # the function itself
    wrong_answer("ch06-ex1", "gradlib.gradient_reversal"),          # called inside the answer
    lambda x, lam: gradlib.reversal.gradient_reversal(x, lam),  # imported another way
    gradlib.GradientReversal(),                                 # the Keras layer
    lambda x, lam: ignores_lambda(x, lam) + 0 * gradlib.gradient_reversal(x, lam),  # wrong, and uses it
], ids=["function", "called", "module", "layer", "wrong-and-called"])
def test_ex1_refuses_gradlibs_own_reversal(answer):
    feedback = exercises.check("ch06-ex1", answer)
    assert not feedback.passed and feedback.key == "ch06.library"
    zh = exercises.check("ch06-ex1", answer, lang="zh")
    assert not zh.passed and zh.key == "ch06.library"


def test_ex1_refusing_the_library_leaves_it_working():
    exercises.check("ch06-ex1", gradlib.gradient_reversal)
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = gradlib.gradient_reversal(x, 0.5)
    assert gradlib.reversal._reverse.__name__ != "watched"
    np.testing.assert_array_equal(tape.gradient(y, x), [-0.5, -0.5])


@pytest.mark.parametrize("answer, got", [
    (gradient_for_lam, ch06.fmt(-np.sum(ch06.POINTS, dtype=np.float32))),  # -sum(x * dy), dy = 1
    (wrong_answer("ch06-ex1", "a zero gradient for lam"), "0"),
], ids=["sum", "zero"])
def test_ex1_a_gradient_for_lam_is_refused(answer, got):
    feedback = exercises.check("ch06-ex1", answer)
    assert not feedback.passed
    assert feedback.message == (f"with λ = 0.3 (a tensor), lam itself gets a gradient ({got} for an upstream "
                                "gradient of 1): λ is a setting, not a parameter, so grad_fn must return None for it.")
    assert exercises.check("ch06-ex1", answer, lang="zh").key == "ch06.lam_gradient"


def test_ex1_exactness_message_shows_all_digits():
    message = exercises.check("ch06-ex1", grl_trick_textbook).message
    x_text = message.split("at x = ")[1].split(":")[0]
    got_text = message.split("your value is ")[1].split(",")[0]
    assert x_text != got_text and len(x_text.replace("-", "").replace(".", "")) >= 8


def test_ex1_missing_lambda_gradient_is_explained():
    one_gradient = wrong_answer("ch06-ex1", "no gradient for lam")
    feedback = exercises.check("ch06-ex1", one_gradient)
    assert not feedback.passed
    assert feedback.key == "ch06.gradient_count"
    assert "expected to return 2 gradients" in feedback.message  # TensorFlow's detail, filled in
    assert exercises.check("ch06-ex1", one_gradient, lang="zh").key == "ch06.gradient_count"


def test_ex1_wrong_sign_is_named():
    wrong_sign = wrong_answer("ch06-ex1", "lam without the minus")
    feedback = exercises.check("ch06-ex1", wrong_sign)
    assert not feedback.passed
    assert feedback.message.startswith("with λ = 0.5, at x = 0: your gradient is 0.5; expected -0.5. ")
    assert feedback.key == "ch06.grad_sign"
    zh = exercises.check("ch06-ex1", wrong_sign, lang="zh")
    assert zh.message.startswith("当 λ = 0.5 时，在 x = 0 处，你的梯度为 0.5，应为 -0.5。") and zh.key == "ch06.grad_sign"


def test_ex1_ignoring_lambda_gets_the_issue_example():
    feedback = exercises.check("ch06-ex1", ignores_lambda)
    assert not feedback.passed
    assert feedback.message.startswith("with λ = 0.5, at x = 0: your gradient is -1; expected -0.5. ")
    assert feedback.key == "ch06.grad_ignores_lam"


def test_ex1_identity_is_not_reversed():
    # λ = 0.5 comes first: at λ = 1, +dy would be both "λ dy" (a sign mistake) and "dy unchanged".
    feedback = exercises.check("ch06-ex1", wrong_answer("ch06-ex1", "identity"))
    assert not feedback.passed
    assert feedback.message.startswith("with λ = 0.5, at x = 0: your gradient is 1; expected -0.5.")
    assert feedback.key == "ch06.grad_not_reversed"


def test_ex1_lambda_frozen_at_trace_time_is_explained():
    feedback = exercises.check("ch06-ex1", frozen_at_trace)
    assert not feedback.passed
    assert feedback.message.startswith("with λ = 1.5 (a tf.Variable set by assign, inside a tf.function), at x = ")
    assert feedback.key == "ch06.function_stale"  # not a hint about float(lam): AutoGraph makes it harmless
    assert exercises.check("ch06-ex1", frozen_at_trace, lang="zh").key == "ch06.function_stale"


def test_ex1_forward_that_scales_is_rejected():
    feedback = exercises.check("ch06-ex1", lambda x, lam: -lam * x)
    assert not feedback.passed
    assert feedback.message.startswith("with λ = 0.5, at x = 1.5: your value is -0.75; expected 1.5. ")
    assert feedback.key == "ch06.forward_identity"


def test_ex1_answer_that_only_handles_vectors_is_rejected():
    def vector_only(x, lam):
        return reverse_gradient(tf.reshape(x, [-1]), lam)

    feedback = exercises.check("ch06-ex1", vector_only)
    assert not feedback.passed and feedback.key == "common.shape" and "shape [12]; expected [3, 4]" in feedback.message
    assert feedback.message.startswith("for a 3×4 input, with λ = 0.5, ")


# -- ch06-ex3 ---------------------------------------------------------------------

def bce(labels, logits):
    return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels, logits))


def dann_loss_variant(*, reverse=True, sign=1.0, scale=False, reverse_label=False, reverse_after=False,
                      reversal_lam=None, shift=0.0):
    """The colleague's loss with each of its pieces switched on or off (defaults: the fixed loss)."""
    def loss(model, x_source, y_source, x_target, lam):
        f_source, f_target = model.features(x_source), model.features(x_target)
        label_features = gradlib.gradient_reversal(f_source, lam) if reverse_label else f_source
        label_loss = bce(y_source, model.label(label_features))
        domains = tf.concat([tf.zeros_like(f_source[:, :1]), tf.ones_like(f_target[:, :1])], axis=0)
        both = tf.concat([f_source, f_target], axis=0)
        if reverse:
            both = gradlib.gradient_reversal(both, lam if reversal_lam is None else reversal_lam)
        logits = model.domain(both)
        if reverse_after:
            logits = gradlib.gradient_reversal(logits, lam)
        domain_loss = bce(domains, logits)
        return label_loss + sign * (lam if scale else 1.0) * domain_loss + shift
    return loss


dann_loss = reference("ch06-ex3")  # the chapter's own solution


def dann_loss_by_hand(model, x_source, y_source, x_target, lam):
    """No reversal layer: the features' and the domain classifier's shares written with stop_gradient."""
    f_source, f_target = model.features(x_source), model.features(x_target)
    label_loss = bce(y_source, model.label(f_source))
    domains = tf.concat([tf.zeros_like(f_source[:, :1]), tf.ones_like(f_target[:, :1])], axis=0)
    both = tf.concat([f_source, f_target], axis=0)
    head_part = bce(domains, model.domain(tf.stop_gradient(both)))   # moves G_d only
    features_part = bce(domains, model.domain(both))                 # moves G_f (and G_d, taken back below)
    head_only = bce(domains, tf.stop_gradient(model.domain(both)))   # the same value, no gradient
    return label_loss + head_part - lam * (features_part - head_part) + 0 * head_only


COLLEAGUE = wrong_answer("ch06-ex3", "the colleague's loss, unchanged")  # the exercise's buggy code


def domain_stopped(model, x_source, y_source, x_target, lam):  # the domain loss counted, never trained
    f_source, f_target = model.features(x_source), model.features(x_target)
    domains = tf.concat([tf.zeros_like(f_source[:, :1]), tf.ones_like(f_target[:, :1])], axis=0)
    domain_loss = bce(domains, model.domain(tf.concat([f_source, f_target], axis=0)))
    return bce(y_source, model.label(f_source)) + tf.stop_gradient(domain_loss)


@pytest.mark.parametrize("answer", [dann_loss, dann_loss_variant(), dann_loss_by_hand])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_ex3_correct_answers_pass(answer, lang):
    feedback = exercises.check("ch06-ex3", answer, lang=lang)
    assert feedback.passed, feedback.message
    assert "{0.5, 2}" in feedback.message


PREFIX = "with λ = 0.5: one step of gradient descent on your loss gives the features "


@pytest.mark.parametrize("answer, coefficients, key", [
    # the colleague's code, unchanged
    (COLLEAGUE, "1 × ∇L_y and 0.25 × ∇L_d (DANN: 1 and -0.5), the label predictor 1 × ∇L_y (DANN: 1) and the "
                "domain classifier -0.5 × ∇L_d", "ch06.hint_colleague"),
    # the three likeliest wrong fixes: the paper's E without the reversal ...
    (wrong_answer("ch06-ex3", "reversal dropped, minus kept"), "1 × ∇L_y and -0.5 × ∇L_d (DANN: 1 and -0.5), the label "
     "predictor 1 × ∇L_y (DANN: 1) and the domain classifier -0.5 × ∇L_d", "ch06.hint_minus"),
    # ... the reversal kept and λ L_d added ...
    (wrong_answer("ch06-ex3", "reversal kept, plus lam L_d"), "1 × ∇L_y and -0.25 × ∇L_d (DANN: 1 and -0.5), the label "
     "predictor 1 × ∇L_y (DANN: 1) and the domain classifier 0.5 × ∇L_d", "ch06.hint_twice"),
    # ... and both flips removed
    (wrong_answer("ch06-ex3", "reversal and minus both dropped"), "1 × ∇L_y and 1 × ∇L_d (DANN: 1 and -0.5), the label "
     "predictor 1 × ∇L_y (DANN: 1) and the domain classifier 1 × ∇L_d", "ch06.hint_cooperative"),
    (dann_loss_variant(reverse=False, scale=True), "1 × ∇L_y and 0.5 × ∇L_d", "ch06.hint_cooperative"),
    # other mistakes with their own hint
    (dann_loss_variant(reverse_label=True), "-0.5 × ∇L_y and -0.5 × ∇L_d", "ch06.hint_label_reversed"),
    (dann_loss_variant(reverse=False, reverse_after=True), "1 × ∇L_y and -0.5 × ∇L_d (DANN: 1 and -0.5), the label "
     "predictor 1 × ∇L_y (DANN: 1) and the domain classifier -0.5 × ∇L_d", "ch06.hint_minus"),
    (wrong_answer("ch06-ex3", "lam not passed to the reversal"), "1 × ∇L_y and -1 × ∇L_d", "ch06.hint_no_lambda"),
    (domain_stopped,
     "1 × ∇L_y and 0 × ∇L_d (DANN: 1 and -0.5), the label predictor 1 × ∇L_y (DANN: 1) and the domain classifier "
     "0 × ∇L_d", "ch06.hint_domain_frozen"),
], ids=["colleague", "paper-E-no-reversal", "lambda-twice", "cooperative", "cooperative-scaled", "label-reversed",
        "reversal-after-head", "lambda-missing", "domain-stopped"])
def test_ex3_wrong_fixes_are_named(answer, coefficients, key):
    feedback = exercises.check("ch06-ex3", answer)
    assert not feedback.passed
    assert feedback.message.startswith(PREFIX + coefficients), feedback.message
    assert feedback.key == key, feedback.message
    zh = exercises.check("ch06-ex3", answer, lang="zh")
    assert not zh.passed and zh.message.startswith("当 λ = 0.5 时，对你的损失做一步梯度下降") and zh.key == key


def dann_loss_halved(model, x_source, y_source, x_target, lam):  # (L_y + L_d) / 2
    return dann_loss(model, x_source, y_source, x_target, lam) / 2


@pytest.mark.parametrize("answer, coefficients, key", [
    (wrong_answer("ch06-ex3", "sums instead of means"), "10 × ∇L_y and -11 × ∇L_d (DANN: 1 and -0.5), the label predictor 10 × ∇L_y (DANN: 1) and "
     "the domain classifier 22 × ∇L_d", "ch06.hint_sum"),
    (dann_loss_halved, "0.5 × ∇L_y and -0.25 × ∇L_d (DANN: 1 and -0.5), the label predictor 0.5 × ∇L_y (DANN: 1) "
     "and the domain classifier 0.5 × ∇L_d", "ch06.hint_scaled"),
    (dann_loss_variant(reversal_lam=1.0, scale=True), "1 × ∇L_y and -0.5 × ∇L_d (DANN: 1 and -0.5), the label "
     "predictor 1 × ∇L_y (DANN: 1) and the domain classifier 0.5 × ∇L_d", "ch06.hint_paper"),
], ids=["summed", "halved", "paper-algorithm-1"])
def test_ex3_scaled_losses_are_named(answer, coefficients, key):
    feedback = exercises.check("ch06-ex3", answer)
    assert not feedback.passed
    assert feedback.message.startswith(PREFIX + coefficients), feedback.message
    assert feedback.key == key, feedback.message
    zh = exercises.check("ch06-ex3", answer, lang="zh")
    assert not zh.passed and zh.key == key, zh.message


def test_ex3_a_per_domain_average_is_named():
    def per_domain(model, x_source, y_source, x_target, lam):  # L_d as the mean of the two domains' means
        f_source, f_target = model.features(x_source), model.features(x_target)
        label_loss = bce(y_source, model.label(f_source))
        r_source = gradlib.gradient_reversal(f_source, lam)
        r_target = gradlib.gradient_reversal(f_target, lam)
        domain_loss = (bce(tf.zeros_like(f_source[:, :1]), model.domain(r_source))
                       + bce(tf.ones_like(f_target[:, :1]), model.domain(r_target))) / 2
        return label_loss + domain_loss

    feedback = exercises.check("ch06-ex3", per_domain)
    assert not feedback.passed and feedback.key == "ch06.not_combination", feedback.message
    assert exercises.check("ch06-ex3", per_domain, lang="zh").key == "ch06.not_combination"


def test_ex3_a_loss_shifted_by_a_constant_has_the_right_gradients_but_is_refused():
    feedback = exercises.check("ch06-ex3", dann_loss_variant(shift=0.5))
    assert not feedback.passed
    label_loss, domain_loss = ch06.loss_references()[:2]
    assert feedback.message.startswith(f"with λ = 0.5: the gradients are right, but your loss is "
                                       f"{ch06.fmt(label_loss + domain_loss + 0.5)}, not L_y + L_d = "
                                       f"{ch06.fmt(label_loss + domain_loss)}. ")
    assert feedback.key == "ch06.loss_value"
    assert exercises.check("ch06-ex3", dann_loss_variant(shift=0.5), lang="zh").key == "ch06.loss_value"


def test_ex3_a_term_outside_the_two_losses_is_reported():
    def extra_term(model, x_source, y_source, x_target, lam):
        return dann_loss(model, x_source, y_source, x_target, lam) + 0.1 * tf.reduce_sum(model.features.kernel ** 2)

    feedback = exercises.check("ch06-ex3", extra_term)
    assert not feedback.passed
    assert feedback.message.startswith("with λ = 0.5: ") and feedback.key == "ch06.not_combination"
    assert exercises.check("ch06-ex3", extra_term, lang="zh").key == "ch06.not_combination"


def test_ex3_a_wrong_answer_at_the_second_lambda_only_is_caught():
    def right_at_half(model, x_source, y_source, x_target, lam):
        return (dann_loss if lam == 0.5 else COLLEAGUE)(model, x_source, y_source, x_target, lam)

    feedback = exercises.check("ch06-ex3", right_at_half)
    assert not feedback.passed
    assert feedback.message.startswith("with λ = 2: one step of gradient descent on your loss gives the features "
                                       "1 × ∇L_y and 4 × ∇L_d (DANN: 1 and -2)")


def test_ex3_per_example_losses_have_the_wrong_shape():
    def per_example(model, x_source, y_source, x_target, lam):
        return tf.nn.sigmoid_cross_entropy_with_logits(y_source, model.label(model.features(x_source)))

    feedback = exercises.check("ch06-ex3", per_example)
    assert not feedback.passed and feedback.key == "common.shape"
    assert feedback.message == "with λ = 0.5: your loss has shape [10, 1]; expected []."


def test_ex3_references_match_tensorflow():
    # the check's NumPy float64 gradients against TensorFlow's autodiff of the same network
    model = ch06.DannModel()
    parts = model.parts()
    xs, ys, xt = (tf.constant(a) for a in (ch06.EX3_X_SOURCE, ch06.EX3_Y_SOURCE, ch06.EX3_X_TARGET))
    with tf.GradientTape(persistent=True) as tape:
        f_source, f_target = model.features(xs), model.features(xt)
        label_loss = bce(ys, model.label(f_source))
        domains = tf.concat([tf.zeros_like(f_source[:, :1]), tf.ones_like(f_target[:, :1])], axis=0)
        domain_loss = bce(domains, model.domain(tf.concat([f_source, f_target], axis=0)))
    ly, ld, grad_y, grad_d = ch06.loss_references()
    assert ly == pytest.approx(float(label_loss), rel=1e-5) and ld == pytest.approx(float(domain_loss), rel=1e-5)
    for name, variables in parts.items():
        for loss, expected_grad in ((label_loss, grad_y[name]), (domain_loss, grad_d[name])):
            grads = tape.gradient(loss, variables)
            got = np.concatenate([np.zeros(v.shape.num_elements()) if g is None else np.ravel(g)
                                  for v, g in zip(variables, grads)])
            np.testing.assert_allclose(got, expected_grad, rtol=1e-4, atol=1e-6)
    assert np.linalg.norm(grad_d["features"]) > 1e-3 and np.linalg.norm(grad_y["features"]) > 1e-3


def test_ex3_answers_cannot_change_the_checks_weights():
    def assigns(model, x_source, y_source, x_target, lam):
        model.domain.kernel.assign(tf.zeros_like(model.domain.kernel))
        return COLLEAGUE(model, x_source, y_source, x_target, lam)

    before = {k: [w.copy() for w in v] for k, v in ch06.EX3_WEIGHTS.items()}
    assert not exercises.check("ch06-ex3", assigns).passed
    for k, v in before.items():
        for w, w0 in zip(ch06.EX3_WEIGHTS[k], v):
            np.testing.assert_array_equal(w, w0)
    assert exercises.check("ch06-ex3", dann_loss).passed


# -- ch06-ex2 ---------------------------------------------------------------------

@pytest.mark.parametrize("answer", [dann_lambda, lambda p: math.tanh(5 * p), lambda p: 2 / (1 + tf.exp(-10.0 * p)) - 1,
                                    lambda p: float(gradlib.dann.lambda_schedule(p))])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_ex2_correct_answers_pass(answer, lang):
    feedback = exercises.check("ch06-ex2", answer, lang=lang)
    assert feedback.passed, feedback.message
    assert "0.99991" in feedback.message


@pytest.mark.parametrize(
    "name, start, key",
    [
        ("schedule plus one", "at p = 0: your λ_p is 1; expected 0.", "ch06.schedule_plus_one"),
        ("exponent +10p", "at p = 0.05: your λ_p is -0.244919; expected 0.244919.", "ch06.schedule_sign"),
        ("sigmoid", "at p = 0: your λ_p is 0.5; expected 0.", "ch06.schedule_sigmoid"),
        ("exponent -p", "at p = 0.05: your λ_p is 0.0249948; expected 0.244919.", "ch06.schedule_gamma"),
    ],
)
def test_ex2_typical_mistakes_are_named(name, start, key):
    answer = wrong_answer("ch06-ex2", name)
    feedback = exercises.check("ch06-ex2", answer)
    assert not feedback.passed
    assert feedback.message.startswith(start) and feedback.key == key
    zh = exercises.check("ch06-ex2", answer, lang="zh")
    assert zh.message.startswith("在 p = ") and not zh.passed and zh.key == key


def test_ex2_none_asks_for_a_number_not_a_tensor():
    feedback = exercises.check("ch06-ex2", lambda p: None)
    assert feedback.key == "ch06.number_none" and feedback.message.startswith("p = 0: ")
    zh = exercises.check("ch06-ex2", lambda p: None, lang="zh")
    assert zh.key == "ch06.number_none" and zh.message.startswith("在 p = 0 处")


def test_ex2_other_wrong_values_get_the_plain_message():
    feedback = exercises.check("ch06-ex2", lambda p: p)
    assert not feedback.passed
    assert feedback.key == "ch06.schedule_value"
    assert feedback.message == "at p = 0.05: your λ_p is 0.05; expected 0.244919."  # no hint appended


def test_ex2_integer_zero_at_the_start_is_accepted():
    answer = lambda p: 0 if p == 0 else dann_lambda(p)  # noqa: E731
    assert exercises.check("ch06-ex2", answer).passed


def test_ex2_array_result_has_the_wrong_shape():
    feedback = exercises.check("ch06-ex2", lambda p: np.array([dann_lambda(p)]))
    assert not feedback.passed and feedback.key == "common.shape" and "shape [1]; expected []" in feedback.message


def test_lambda_reference_matches_gradlib_and_tanh():
    p = np.array(ch06.PROGRESS)
    np.testing.assert_allclose([ch06.lambda_reference(v) for v in p], gradlib.dann.lambda_schedule(p))
    np.testing.assert_allclose([ch06.lambda_reference(v) for v in p], np.tanh(5 * p), atol=1e-12)


def test_integer_output_is_rejected():
    feedback = exercises.check("ch06-ex1", lambda x, lam: tf.ones(tf.shape(x), tf.int32))
    assert not feedback.passed and feedback.key == "common.dtype" and "dtype int32" in feedback.message


def test_answer_raising_in_the_backward_pass_gets_feedback():
    @tf.custom_gradient
    def broken(x, lam):
        def grad_fn(dy):
            raise RuntimeError("backward exploded")
        return tf.identity(x), grad_fn

    feedback = exercises.check("ch06-ex1", broken)
    assert not feedback.passed and feedback.key == "common.raised"
    assert "RuntimeError" in feedback.message and "backward exploded" in feedback.message


def test_repeated_checks_write_nothing_to_stderr(capfd):
    # Each check traces a tf.function; TensorFlow would warn about retracing on stderr.
    for _ in range(7):
        assert exercises.check("ch06-ex1", reverse_gradient).passed
    assert "retracing" not in capfd.readouterr().err
