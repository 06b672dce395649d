"""explore, markdown_table and captured_tf_warnings."""

import re

import numpy as np
import pytest
import tensorflow as tf

import gradlib
from gradlib._explorer_format import page_data, points


def smooth_relu(beta):
    return lambda x: tf.nn.softplus(beta * x) / beta


GRID = np.linspace(-3, 3, 61)


def test_explorer_data_is_what_curves_computes_and_follows_the_control():
    explorer = gradlib.explore(smooth_relu, GRID, {"beta": [1, 4]})
    x, y, dydx = explorer.data()
    np.testing.assert_array_equal(x, GRID)
    np.testing.assert_allclose(dydx, 1 / (1 + np.exp(-GRID)), rtol=1e-5)  # sigmoid(x)
    explorer.update(beta=4)
    _, y4, dydx4 = explorer.data()
    np.testing.assert_allclose(dydx4, 1 / (1 + np.exp(-4 * GRID)), rtol=1e-5, atol=1e-7)
    assert not np.allclose(y, y4)


def test_figure_lines_are_redrawn_on_update():
    explorer = gradlib.explore(smooth_relu, GRID, {"beta": [1, 4]}, defaults={"beta": 1})
    # the curve is the line with one point per grid value (the others are axis lines)
    backward = next(line for line in explorer.figure.axes[1].lines if len(line.get_ydata()) == len(GRID))
    before = np.array(backward.get_ydata())
    explorer.update(beta=4)
    np.testing.assert_array_equal(backward.get_ydata(), explorer.data()[2])
    assert not np.allclose(before, backward.get_ydata())
    assert explorer._title_artist.get_text() == "beta = 4"


def test_live_widget_moves_the_curve():
    explorer = gradlib.explore(smooth_relu, GRID, {"beta": [1, 2, 4]})
    box = explorer.widget()
    slider = box.children[0]
    before = explorer.data()[2].copy()
    slider.value = 4
    assert explorer.values["beta"] == 4
    assert not np.allclose(before, explorer.data()[2])


def test_live_controls_show_labels_as_text():
    """Colab and VS Code show a widget's description as it is (no TeX): "β₁", not "$\\beta_1$"."""
    family = lambda f, beta: smooth_relu(beta) if f == "a" else tf.tanh  # noqa: E731
    explorer = gradlib.explore(family, GRID, {"f": ["a", "b"], "beta": [1, 2]},
                               labels={"f": r"$\phi$", "beta": r"$\beta_1$"})
    assert [c.description for c in explorer.widget().children[:2]] == ["\u03d5", "β₁"]


def test_a_lone_letter_on_an_axis_or_title_is_italic_like_a_variable():
    markup = gradlib.explore_panels(lambda a: (np.arange(3.0), np.arange(3.0)), np.arange(3), {"a": [1, 2]},
                                    titles=(r"$c$", r"$\log_{10} L$"), xlabel=r"$l$").static_html()
    assert 'class="gbx-axis"' in markup and 'font-style="italic">l</text>' in markup
    assert 'font-style="italic">c</text>' in markup and 'text-anchor="middle">log₁₀ L</text>' in markup
    upright = gradlib.explore_panels(lambda a: (np.arange(3.0), np.arange(3.0)), np.arange(3), {"a": [1, 2]},
                                     titles=("A", r"$\mathrm{d}$"), xlabel=r"$\mathrm{epoch}$").static_html()
    assert 'text-anchor="middle">epoch</text>' in upright and 'text-anchor="middle">A</text>' in upright
    assert 'text-anchor="middle">d</text>' in upright
    greek = gradlib.explore_panels(lambda a: (np.arange(3.0), np.arange(3.0)), np.arange(3), {"a": [1, 2]},
                                   titles=(r"$\theta$", r"$\Theta$"), xlabel="x").static_html()
    assert 'font-style="italic">θ</text>' in greek and 'text-anchor="middle">Θ</text>' in greek


def test_the_site_styles_no_explorer_title_italic():
    """The attribute decides (a CSS font-style would override it for every title)."""
    from tools.book import ROOT

    css = (ROOT / "assets" / "static" / "gradbook.css").read_text(encoding="utf-8")
    assert not re.search(r"\.gbx-(title|axis)[^{]*\{[^}]*font-style", css)


def test_static_display_while_building_the_book(monkeypatch):
    shown = []
    monkeypatch.setenv("GRADBOOK_BUILD", "1")
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    explorer = gradlib.explore(smooth_relu, GRID, {"beta": [1, 2]})
    explorer._ipython_display_()
    assert len(shown) == 1 and 'class="gradbook-explorer"' in shown[0].data  # HTML, never a widget


def test_static_frames_are_the_numbers_the_live_explorer_computes():
    explorer = gradlib.explore(smooth_relu, GRID, {"beta": [0.5, 1, 4]}, defaults={"beta": 1})
    data = page_data(explorer.static_html())
    assert data["names"] == ["beta"] and data["options"] == [["0.5", "1", "4"]]
    for index, beta in enumerate([0.5, 1, 4]):
        _, y, dydx = explorer.update(beta=beta).data()
        np.testing.assert_allclose(data["frames"][str(index)][0], y, rtol=1e-5, atol=1e-12)
        np.testing.assert_allclose(data["frames"][str(index)][1], dydx, rtol=1e-5, atol=1e-12)
    assert data["frames"]["0"] != data["frames"]["2"]


def test_static_svg_shows_the_default_frame_and_string_controls_are_selects():
    family = lambda f: {"sin": tf.sin, "tanh": tf.tanh}[f]  # noqa: E731
    explorer = gradlib.explore(family, GRID, {"f": ["sin", "tanh"]}, defaults={"f": "tanh"})
    markup = explorer.static_html()
    data = page_data(markup)
    assert 'data-frame="1"' in markup and '<option value="1" selected>tanh</option>' in markup
    expected = points(data["x"], data["frames"]["1"][0], data["panels"][0], data["xlim"], data["ylim"][0])
    assert f'class="gbx-curve gbx-curve-0" points="{expected}"' in markup


def test_non_finite_values_become_gaps_and_labels_become_plain_text():
    from gradlib import _static_explorer

    explorer = gradlib.explore(lambda k: lambda x: tf.sqrt(x) * k, np.linspace(-1, 1, 5), {"k": [1, 2]},
                               labels={"k": r"$\lambda$"})
    markup = explorer.static_html()
    assert page_data(markup)["frames"]["0"][0][:2] == [None, None]  # sqrt of negatives: NaN -> gap
    assert ">λ<" in markup
    assert _static_explorer.plain_label(r"$\beta_{1}$") == "β₁"
    # the labels of chapters 7 to 9: no TeX left in the visible text or the accessible name
    for tex, text in [(r"$\mathrm{epoch}$", "epoch"), (r"$\eta$", "η"), (r"$\log_{10} L$", "log₁₀ L"),
                      (r"$\log_{10}\,\mathrm{std}(h_l)$", "log₁₀ std(hₗ)"),
                      (r"$\log_{10}\,\|\partial \ell/\partial h_l\|$", "log₁₀ ‖∂ℓ/∂hₗ‖"),
                      (r"$\log_{10}|dz_k/da - dz^\star/da|$", "log₁₀|dzₖ/da - dz⋆/da|"),
                      (r"$\log_{10}|g(z_k) - dz^\star/da|$", "log₁₀|g(zₖ) - dz⋆/da|")]:
        assert _static_explorer.plain_label(tex) == text, tex


@pytest.mark.parametrize("tex, text", [
    # what a review found printed as command names or glued words
    (r"\Delta t", "Δt"), (r"\log x", "log x"), (r"a \geq b", "a ≥ b"), (r"\lVert w \rVert", "‖w‖"),
    (r"\left\| x \right\|", "‖x‖"), (r"\mathcal{L}", "L"), (r"\mathbb{1}\{x > 0\}", "1{x > 0}"),
    (r"\hat{y}", "ŷ"), (r"\frac{\partial y}{\partial x}", "∂y/∂x"), (r"x_{1,2}", "x_(1,2)"), (r"x_12", "x₁2"),
    # the rules behind them
    (r"x\log y", "x log y"), (r"\log\theta", "log θ"), (r"\ln 2", "ln 2"),
    (r"\min\ L_y - \lambda L_d", "min L_y - λL_d"),
    (r"\mathbb 1", "1"), (r"\mathbb{R}", "ℝ"), (r"\boldsymbol{\theta}", "θ"), (r"\left( x \right.", "(x"),
    (r"\bar{x}", "x̄"), (r"\tilde x", "x̃"), (r"\hat{\theta}_t", "θ̂ₜ"), (r"\frac{a+1}{b}", "(a+1)/b"),
    (r"\frac12", "1/2"), (r"n \bmod 8", "n mod 8"), (r"\displaystyle \sum_i x_i", "∑ᵢ xᵢ"), (r"\phi \varphi \epsilon \varepsilon", "\u03d5\u03c6\u03f5\u03b5"),  # as KaTeX draws them
    (r"\sqrt{x+1}", "√(x+1)"), (r"x^{-1}", "x⁻¹"), (r"x^2", "x²"), (r"x^T", "x^T"), (r"x^\star", "x⋆"), (r"x^*", "x*"),
    (r"w^{(t)}", "w^(t)"), (r"w^{(2)}", "w⁽²⁾"),
    (r"x_{t+1}", "xₜ₊₁"), (r"x_{\max}", "xₘₐₓ"), (r"t_{\nabla f}", "t_(∇f)"), (r"1, \ldots, n", "1, …, n"),
    (r"\mathrm{ste\_sign},\ c = 1", "ste_sign, c = 1"), (r"\mathrm{d}\mathbf{x}_{t}", "dxₜ"), (r"{{a}_{1}}", "a₁"),
])
def test_plain_label_writes_tex_as_readable_text(tex, text):
    from gradlib._plain_tex import plain_label

    assert plain_label(f"${tex}$") == text


@pytest.mark.parametrize("label, text", [
    ("", ""), ("$$", ""), ("learning_rate", "learning_rate"), ("plain text", "plain text"),  # no $: not math
    (r"$\lambda$ (callback)", "λ (callback)"), (r"$x_1$ and $y^2$", "x₁ and y²"), (r"cost \$5", "cost $5"),
])
def test_plain_label_converts_only_the_math(label, text):
    from gradlib._plain_tex import plain_label

    assert plain_label(label) == text


@pytest.mark.parametrize("label, command", [(r"$\foo$", r"\foo"), (r"$x \not= 1$", r"\not"),
                                            (r"$\mathrm{\unknown}$", r"\unknown"), (r"$x \@ y$", r"\@")])
def test_plain_label_refuses_unknown_commands(label, command):
    from gradlib._plain_tex import plain_label

    with pytest.raises(ValueError) as error:  # the build stops rather than print a command's name
        plain_label(label)
    assert f"command {command} in the label {label!r}" in str(error.value)


@pytest.mark.parametrize(
    "controls, kwargs, message",
    [
        ({}, {}, "controls"),
        ({"beta": []}, {}, "non-empty"),
        ({"beta": [1, 2]}, {"defaults": {"beta": 3}}, "not one of its options"),
        ({"beta": [1, 2]}, {"defaults": {"gamma": 1}}, "unknown controls"),
    ],
)
def test_bad_controls(controls, kwargs, message):
    with pytest.raises(ValueError, match=message):
        gradlib.explore(smooth_relu, GRID, controls, **kwargs)


def test_update_rejects_unknown_values():
    explorer = gradlib.explore(smooth_relu, GRID, {"beta": [1, 2]})
    with pytest.raises(ValueError, match="not an option"):
        explorer.update(beta=3)
    with pytest.raises(ValueError, match="unknown control"):
        explorer.update(gamma=1)


def test_markdown_table_escapes_and_checks_rows():
    table = gradlib.markdown_table(["a", "b"], [["x|y", None], [1.5, "z"]])
    assert table.data.splitlines() == ["| a | b |", "|---|---|", r"| x\|y | None |", "| 1.5 | z |"]
    with pytest.raises(ValueError, match="row 0 has 1 cells; expected 2"):
        gradlib.markdown_table(["a", "b"], [["only one"]])
    with pytest.raises(ValueError, match="headers"):
        gradlib.markdown_table([], [])


def test_captured_tf_warnings_collects_and_restores():
    logger = tf.get_logger()
    handlers = list(logger.handlers)
    with gradlib.captured_tf_warnings() as messages:
        with tf.GradientTape() as tape:
            tape.watch(tf.constant(1))
    assert any("must be floating" in m for m in messages)
    assert logger.handlers == handlers


def test_blitted_redraw_equals_a_full_render():
    import io

    from PIL import Image

    def pixels(png):
        return np.asarray(Image.open(io.BytesIO(png)))

    moved = gradlib.explore(smooth_relu, GRID, {"beta": [1, 4]}, defaults={"beta": 1})
    first = pixels(moved.png())
    after = pixels(moved.update(beta=4).png())  # background restored, curves redrawn
    fresh = pixels(gradlib.explore(smooth_relu, GRID, {"beta": [1, 4]}, defaults={"beta": 4}).png())
    assert not np.array_equal(first, after)
    np.testing.assert_array_equal(after, fresh)


def test_glue_displays_for_myst_nb_only_while_building(monkeypatch):
    from gradlib.book.tables import GLUE_PREFIX

    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, **kwargs: shown.append((obj, kwargs)))
    monkeypatch.delenv("GRADBOOK_BUILD", raising=False)
    value = gradlib.glue("gain", np.float32(0.25))
    assert value == 0.25 and type(value) is float and shown == []  # live: nothing shown
    monkeypatch.setenv("GRADBOOK_BUILD", "1")
    assert gradlib.glue("count", np.int64(7)) == 7
    (obj, kwargs), = shown
    assert obj == {GLUE_PREFIX + "text/plain": "7"} and kwargs["raw"] is True
    assert kwargs["metadata"] == {"scrapbook": {"name": "count", "mime_prefix": GLUE_PREFIX}}


# -- explore_panels: any two curves over one axis ---------------------------------------------------

def _panels(calls):
    def compute(rate, kind):
        calls.append((rate, kind))
        epochs = np.arange(1, 6, dtype=float)
        scale = 2.0 if kind == "b" else 1.0
        return scale * np.exp(-rate * epochs), np.where(epochs > 3, np.nan, rate * epochs)
    return compute


def test_explore_panels_computes_each_combination_once_and_plots_what_compute_returns():
    calls = []
    explorer = gradlib.explore_panels(_panels(calls), np.arange(1, 6), {"rate": [0.1, 0.5], "kind": ["a", "b"]},
                                      titles=(r"$L$", r"$\lambda$"), xlabel=r"$t$", defaults={"kind": "b"})
    x, left, right = explorer.data()
    np.testing.assert_allclose(left, 2.0 * np.exp(-0.1 * x))
    assert np.isnan(right[-1]) and right[0] == pytest.approx(0.1)
    frames = explorer.frames()
    assert len(frames) == 4 and sorted(calls) == sorted(set(calls))  # each once
    explorer.update(rate=0.5)
    np.testing.assert_allclose(explorer.data()[1], 2.0 * np.exp(-0.5 * x))
    assert len(calls) == 4 + 1  # update recomputes the shown frame, as Explorer.update does


def test_explore_panels_static_page_names_its_panels_and_axis():
    explorer = gradlib.explore_panels(_panels([]), np.arange(1, 6), {"rate": [0.1, 0.5], "kind": ["a", "b"]},
                                      titles=(r"$L$", r"$\lambda$"), xlabel=r"$t$")
    page = explorer.static_html()
    assert '>L</text>' in page and '>λ</text>' in page and '>t</text>' in page
    assert 'aria-label="L | λ"' in page
    assert '"0,1"' in page and '"1,1"' in page  # every frame is on the page
    curve_page = gradlib.explore(lambda a: lambda v: a * v, np.linspace(-1, 1, 5), {"a": [1, 2]}).static_html()
    assert ">∂y/∂x</text>" in curve_page and 'aria-label="y = f(x) | ∂y/∂x"' in curve_page


@pytest.mark.parametrize("compute, titles, error, match", [
    (lambda rate: np.ones(5), ("a", "b"), ValueError, "two curves"),
    (lambda rate: (np.ones(4), np.ones(5)), ("a", "b"), ValueError, "left curve of shape"),
    (lambda rate: (np.ones(5), np.ones((5, 1))), ("a", "b"), ValueError, "right curve of shape"),
    (lambda rate: (np.ones(5), np.ones(5)), ("a",), ValueError, "titles"),
    (lambda rate: (np.ones(5), np.ones(5)), "ab", ValueError, "titles"),
    (3, ("a", "b"), TypeError, "compute"),
])
def test_explore_panels_bad_input(compute, titles, error, match):
    with pytest.raises(error, match=match):
        gradlib.explore_panels(compute, np.arange(5), {"rate": [1, 2]}, titles=titles, xlabel="t")


def test_captured_tf_warnings_also_collects_absl_and_restores_it():
    import logging

    absl = logging.getLogger("absl")
    before = absl.propagate, list(absl.handlers)
    with gradlib.captured_tf_warnings() as messages:
        absl.warning("Importing a function (%s) with ops with unsaved custom gradients.", "f")
        absl.info("not a warning")
    assert messages == ["Importing a function (f) with ops with unsaved custom gradients."]
    assert (absl.propagate, list(absl.handlers)) == before
