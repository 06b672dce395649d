r"""One explorer API: forward and backward curves that follow a control.

``explore(family, x, controls)`` plots :math:`y = f_\theta(x)` next to
:math:`\partial y/\partial x` (both from TensorFlow, through
:func:`gradlib.curves`) for the control values :math:`\theta`.

* In a live kernel (JupyterLab, Notebook, Colab) it shows ipywidgets
  controls; moving one recomputes the curves and redraws.
* While the book is being built (``GRADBOOK_BUILD=1``, set by the site's
  Sphinx extension) it computes the curves for every combination of control
  values and writes a self-contained HTML control (inline SVG, the frames as
  JSON, switched by the site's own ``gradbook-explorer.js``), so the rendered
  page has a control that works without a kernel and never a dead widget.
"""

from __future__ import annotations

import itertools
import math
import os
from numbers import Real
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple

import numpy as np

from ._explorer_format import SIGNIFICANT
from ._validate import callable_arg
from .autodiff import curves

__all__ = ["explore", "explore_panels", "Explorer", "PanelExplorer", "plot_curves"]


_STATIC_COUNT = 0  # numbers the explorers of one page (one kernel) in order
FIGSIZE = (8, 3)
DPI = 80


def building_book() -> bool:
    """True while the book is being built (``GRADBOOK_BUILD=1``, set by the site's extension)."""
    return os.environ.get("GRADBOOK_BUILD") == "1"


def _grid(x) -> np.ndarray:
    """``x`` as the explorer's horizontal axis: 1-D, finite, at least two different points."""
    points = np.asarray(x)
    if points.dtype.kind not in "iuf":
        raise TypeError(f"`x` must hold real numbers; got an array of dtype {points.dtype}")
    if points.ndim != 1 or not np.all(np.isfinite(points)):
        raise ValueError(f"`x` must be a 1-D sequence of finite numbers; got shape {list(points.shape)}")
    # Two points that the page's JSON (SIGNIFICANT digits) would write as one are one point.
    ends = {float(f"{v:.{SIGNIFICANT}g}") for v in (points.min(), points.max())} if points.size else set()
    if len(ends) < 2:
        raise ValueError(f"`x` must hold at least two different points, to span an axis; got {points.tolist()[:5]}")
    return points


def padded_limits(values) -> Tuple[float, float]:
    """(low, high) of the finite values, padded by 6 %; (-1, 1) when there are none."""
    finite = np.asarray(values, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    if finite.size == 0:
        return -1.0, 1.0
    low, high = float(finite.min()), float(finite.max())
    if high - low < 1e-9:
        low, high = low - 1.0, high + 1.0
    pad = 0.06 * (high - low)
    return low - pad, high + pad


def plot_curves(fn: Callable, x, *, axes=None, label: Optional[str] = None, **line_kwargs):
    """Plot the forward curve of ``fn`` and its TensorFlow derivative side by side.

    Returns the two matplotlib axes (created when ``axes`` is None).
    """
    import matplotlib.pyplot as plt

    y, dydx = curves(fn, x)
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=FIGSIZE, constrained_layout=True)
        _style_axes(axes)
    axes[0].plot(np.asarray(x), y, label=label, **line_kwargs)
    axes[1].plot(np.asarray(x), dydx, label=label, **line_kwargs)
    if label is not None:
        axes[1].legend(loc="best", fontsize="small")
    return axes


CURVE_TITLES = (r"$y = f(x)$", r"$\partial y / \partial x$")


def _style_axes(axes, titles: Sequence[str] = CURVE_TITLES, xlabel: str = r"$x$") -> None:
    # A fixed title position spares matplotlib re-placing titles on every draw.
    for ax, title in zip(axes, titles):
        ax.set_title(title, y=1.02)
    for ax in axes:
        ax.set_xlabel(xlabel)
        ax.axhline(0, color="0.8", lw=0.8, zorder=0)
        ax.axvline(0, color="0.8", lw=0.8, zorder=0)


class Explorer:
    """Forward/backward curves of ``family(**values)`` for one set of control values.

    ``update(**values)`` recomputes and redraws; ``data()`` returns the arrays
    currently plotted, so tests can check that a control changes the curve.
    """

    titles: Tuple[str, str] = CURVE_TITLES  # of the two panels, TeX (matplotlib) or plain text
    xlabel: str = r"$x$"

    def __init__(self, family: Callable[..., Callable], x, controls: Mapping[str, Sequence],
                 defaults: Optional[Mapping[str, Any]] = None,
                 labels: Optional[Mapping[str, str]] = None):
        callable_arg(family, "family")
        if not isinstance(controls, Mapping) or not controls:
            raise ValueError("`controls` must be a non-empty mapping from a parameter name to its options")
        self.controls: Dict[str, Tuple] = {}
        for name, options in controls.items():
            try:
                options = tuple(options) if not isinstance(options, (str, bytes)) else ()
            except TypeError:  # a single number instead of a sequence of them
                options = ()
            if not options:
                raise ValueError(f"control {name!r} needs a non-empty sequence of options")
            numeric = [o for o in options if isinstance(o, Real) and not isinstance(o, bool)]
            if any(not math.isfinite(o) for o in numeric):
                raise ValueError(f"control {name!r} has an option that is not a finite number: {options}")
            if any(options.index(o) != i for i, o in enumerate(options)):
                raise ValueError(f"control {name!r} repeats an option: {options}")
            self.controls[name] = options
        for name, mapping in (("defaults", defaults), ("labels", labels)):
            if mapping is not None and not isinstance(mapping, Mapping):
                raise TypeError(f"`{name}` must be a mapping from a control name to a value; "
                                f"got {type(mapping).__name__}")
        defaults = dict(defaults or {})
        unknown = set(defaults) - set(self.controls)
        if unknown:
            raise ValueError(f"`defaults` names unknown controls: {sorted(unknown)}")
        for name, value in defaults.items():
            if value not in self.controls[name]:
                raise ValueError(f"default {value!r} for control {name!r} is not one of its options {self.controls[name]}")
        self.values = {name: defaults.get(name, options[0]) for name, options in self.controls.items()}
        self.labels = {name: (labels or {}).get(name, name) for name in self.controls}
        self.family = family
        self.x = _grid(x)
        self._figure = None
        self._lines = None
        self._title_artist = None
        self._background = None
        self._limits = None
        self._frames: Dict[Tuple[int, ...], Tuple[np.ndarray, np.ndarray]] = {}
        self._y, self._dydx = self._frames[self._indices(self.values)] = self._compute(self.values)

    # -- data -------------------------------------------------------------
    def _compute(self, values):
        return curves(self.family(**values), self.x)

    def _indices(self, values) -> Tuple[int, ...]:
        return tuple(self.controls[name].index(values[name]) for name in self.controls)

    def frames(self) -> Dict[Tuple[int, ...], Tuple[np.ndarray, np.ndarray]]:
        """``(y, dydx)`` for every combination of control values, keyed by the option indices.

        Each combination is computed once (with TensorFlow, as :meth:`update`
        does) and kept: the fixed limits and the built book's frames both come
        from here.
        """
        names = list(self.controls)
        every = list(itertools.product(*(range(len(self.controls[n])) for n in names)))
        for indices in every:
            if indices not in self._frames:
                self._frames[indices] = self._compute({n: self.controls[n][i] for n, i in zip(names, indices)})
        return {indices: self._frames[indices] for indices in every}  # in the order of the options

    def data(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(x, y, dydx)`` for the current control values."""
        return self.x, self._y, self._dydx

    # -- drawing ----------------------------------------------------------
    def _title(self) -> str:
        return ",  ".join(f"{self.labels[n]} = {v}" for n, v in self.values.items())

    def limits(self):
        """Fixed y-limits of the two panels, over every combination of control values.

        Computed once (each combination is one cheap TensorFlow evaluation), so
        the axes never move: the curve moves against them, and a live redraw
        only has to repaint the curves (see :meth:`png`).
        """
        if self._limits is None:
            frames = list(self.frames().values())
            self._limits = [padded_limits(np.concatenate([f[panel].ravel() for f in frames]))
                            for panel in (0, 1)]
        return self._limits

    @property
    def figure(self):
        if self._figure is None:
            from matplotlib.backends.backend_agg import FigureCanvasAgg
            from matplotlib.figure import Figure

            fig = Figure(figsize=FIGSIZE, dpi=DPI)
            FigureCanvasAgg(fig)
            axes = fig.subplots(1, 2)
            fig.subplots_adjust(left=0.07, right=0.98, bottom=0.17, top=0.8, wspace=0.22)
            _style_axes(axes, self.titles, self.xlabel)
            for ax, ylim in zip(axes, self.limits()):
                ax.set_xlim(float(self.x.min()), float(self.x.max()))
                ax.set_ylim(*ylim)
            # The curves and the control line are "animated": drawn on top of a
            # cached background, so a live redraw repaints only them.
            forward, = axes[0].plot(self.x, self._y, color="C0", animated=True)
            backward, = axes[1].plot(self.x, self._dydx, color="C1", animated=True)
            self._title_artist = axes[0].text(1.11, 1.2, self._title(), transform=axes[0].transAxes,
                                              ha="center", fontsize="large", animated=True)
            self._figure, self._lines = fig, (forward, backward)
        return self._figure

    def png(self) -> bytes:
        """The figure as PNG bytes.

        The first call draws everything and caches the background (frame,
        ticks, labels); later calls restore it and draw only the curves and
        the control line on top, then encode the canvas.
        """
        import io

        from PIL import Image

        figure = self.figure
        canvas = figure.canvas
        if self._background is None:
            canvas.draw()
            self._background = canvas.copy_from_bbox(figure.bbox)
        else:
            canvas.restore_region(self._background)
        for artist in (*self._lines, self._title_artist):
            figure.draw_artist(artist)
        buffer = io.BytesIO()
        Image.fromarray(np.asarray(canvas.buffer_rgba())).save(buffer, format="png", compress_level=1)
        return buffer.getvalue()

    def update(self, **values) -> "Explorer":
        for name, value in values.items():
            if name not in self.controls:
                raise ValueError(f"unknown control {name!r}; controls are {list(self.controls)}")
            if value not in self.controls[name]:
                raise ValueError(f"{value!r} is not an option of control {name!r}: {self.controls[name]}")
        self.values.update(values)
        self._y, self._dydx = self._compute(self.values)
        if self._figure is not None:
            forward, backward = self._lines
            forward.set_ydata(self._y)
            backward.set_ydata(self._dydx)
            self._title_artist.set_text(self._title())
        return self

    # -- display ----------------------------------------------------------
    def static_html(self) -> str:
        """The kernel-free explorer of the built book: every frame precomputed, switched by JavaScript."""
        from . import _static_explorer

        global _STATIC_COUNT
        _STATIC_COUNT += 1
        return _static_explorer.render(self, f"gradbook-explorer-{_STATIC_COUNT}")

    def _ipython_display_(self):
        from IPython.display import HTML, display

        if building_book():
            display(HTML(self.static_html()))
            return
        display(self.widget())

    def widget(self):
        """The live version: ipywidgets controls above an image of the figure.

        Moving a control recomputes the curves with TensorFlow, redraws the
        lines and replaces the image's PNG in one message.
        """
        import ipywidgets as widgets

        from ._plain_tex import plain_label

        image = widgets.Image(value=self.png(), format="png")

        def control(name, options):
            if all(isinstance(o, (int, float)) and not isinstance(o, bool) for o in options):
                w = widgets.SelectionSlider(options=list(options), value=self.values[name],
                                            description=plain_label(self.labels[name]), continuous_update=True)
            else:
                w = widgets.ToggleButtons(options=list(options), value=self.values[name],
                                          description=plain_label(self.labels[name]))

            def on_change(change):
                self.update(**{name: change["new"]})
                image.value = self.png()

            w.observe(on_change, names="value")
            return w

        controls = [control(n, o) for n, o in self.controls.items()]
        return widgets.VBox([*controls, image])


def explore(family: Callable[..., Callable], x, controls: Mapping[str, Sequence], *,
            defaults: Optional[Mapping[str, Any]] = None,
            labels: Optional[Mapping[str, str]] = None) -> Explorer:
    r"""Show :math:`f_\theta(x)` and :math:`\partial f_\theta/\partial x` with controls for :math:`\theta`.

    Args:
        family: ``family(**values)`` returns the function to plot for those
            control values, e.g. ``lambda beta: lambda x: tf.nn.softplus(beta * x) / beta``.
        x: the points on the horizontal axis.
        controls: parameter name -> sequence of options (numbers give a
            slider, strings give buttons).
        defaults: starting values (the first option of each control otherwise).
        labels: display labels, e.g. ``{"beta": r"$\beta$"}`` (math keeps
            figures language-neutral).

    Returns:
        An :class:`Explorer`; as the last expression of a cell it displays
        itself (widgets live, a static figure while the book is built).

    Raises:
        TypeError: ``family`` is not callable, or ``defaults``/``labels`` is
            not a mapping.
        ValueError: ``controls`` is empty or not a mapping, a control has no
            options, repeats one or has a non-finite number among them, a
            default is not one of its control's options, or ``x`` is not 1-D,
            holds a non-finite value or fewer than two different points.
    """
    return Explorer(family, x, controls, defaults=defaults, labels=labels)


class PanelExplorer(Explorer):
    """Two panels of any curves over one shared axis: ``compute(**values)`` returns ``(left, right)``.

    The same controls, live widgets and kernel-free page as :class:`Explorer`;
    the curves come from ``compute`` instead of a function and its
    TensorFlow derivative (a training run's loss and another of its
    measurements per epoch, say).  ``titles`` and ``xlabel`` name the panels
    and the shared axis; keep them language-neutral (math), since one figure
    serves both editions.
    """

    def __init__(self, compute: Callable[..., Tuple[Any, Any]], x, controls: Mapping[str, Sequence], *,
                 titles: Sequence[str], xlabel: str, defaults: Optional[Mapping[str, Any]] = None,
                 labels: Optional[Mapping[str, str]] = None):
        callable_arg(compute, "compute")
        titles = tuple(titles) if not isinstance(titles, str) else ()
        if len(titles) != 2 or not all(isinstance(t, str) for t in titles):
            raise ValueError(f"`titles` must be two strings, one per panel; got {titles!r}")
        if not isinstance(xlabel, str):
            raise TypeError(f"`xlabel` must be a string; got {type(xlabel).__name__}")
        self.titles, self.xlabel = titles, xlabel
        self._panels = compute
        super().__init__(compute, x, controls, defaults=defaults, labels=labels)

    def _compute(self, values):
        result = self._panels(**values)
        try:
            left, right = result
        except (TypeError, ValueError):
            raise ValueError(f"`compute` must return two curves (left, right); got {type(result).__name__}") from None
        curves = []
        for name, curve in (("left", left), ("right", right)):
            curve = np.asarray(curve, dtype=np.float64)
            if curve.shape != self.x.shape:
                raise ValueError(f"`compute` returned a {name} curve of shape {list(curve.shape)}; "
                                 f"it must have one value per point of `x`, shape {list(self.x.shape)}")
            curves.append(curve)
        return tuple(curves)


def explore_panels(compute: Callable[..., Tuple[Any, Any]], x, controls: Mapping[str, Sequence], *,
                   titles: Sequence[str], xlabel: str, defaults: Optional[Mapping[str, Any]] = None,
                   labels: Optional[Mapping[str, str]] = None) -> PanelExplorer:
    r"""Two panels of curves computed for the control values, e.g. a training run's measurements per epoch.

    ``compute(**values)`` returns ``(left, right)``, each with one value per
    point of ``x`` (NaN leaves a gap).  Every combination of control values
    is computed once and kept, live and in the built book alike, so each may
    cost a short training run.

    Raises:
        TypeError: ``compute`` is not callable, or ``xlabel`` not a string.
        ValueError: as :func:`explore`; ``titles`` is not two strings; or
            ``compute`` returns something other than two curves shaped like ``x``.
    """
    return PanelExplorer(compute, x, controls, titles=titles, xlabel=xlabel, defaults=defaults, labels=labels)
