"""gradlib: small, tested tools for customising gradients in TensorFlow.

The companion library of the gradbook Jupyter Book.  Every public name is
available as ``gradlib.NAME``.  ``import gradlib`` loads the gradient tools
only (ops, checks, graph mode, curves, the explorer, log capture); the book's
runtime (:mod:`gradlib.book`: progress, tables, benchmarks), the classroom
(:mod:`gradlib.classroom`: exercises, grader) and the chapter experiments
(``dann``, ``data``, ``experiments``) and the Keras layers and callbacks
(:mod:`gradlib.layers`) load on first use (PEP 562).
"""

import importlib
import os as _os
import sys as _sys
from importlib import metadata as _metadata


def _run_as_grader() -> bool:
    """Whether this process is ``python -m gradlib.grade`` (the notebook grader itself)."""
    if _sys.argv[:1] != ["-m"]:  # runpy's argv[0] while it imports the package of the -m module
        return False
    for position, arg in enumerate(getattr(_sys, "orig_argv", [])[1:], start=1):
        if arg == "-m":
            return _sys.orig_argv[position + 1:position + 2] == ["gradlib.grade"]
        if arg.startswith("-m"):
            return arg == "-mgradlib.grade"
    return False


def _quiet_the_grader() -> None:
    """In the grader's own process, TensorFlow's start-up notices off, as in its kernels: the quiet
    variables of ``book/kernel.json`` (their one home), where the user has not set them.  Any other
    program that imports gradlib keeps its environment as it is."""
    if _run_as_grader():
        import json
        import pathlib

        spec = json.loads((pathlib.Path(__file__).parent / "book" / "kernel.json").read_text(encoding="utf-8"))
        for key, value in spec["quiet"].items():
            _os.environ.setdefault(key, value)


_quiet_the_grader()  # before TensorFlow is imported

from . import _compat  # noqa: E402,F401  (checks the TensorFlow version first)
from ._compat import UntestedTensorFlowWarning
from .autodiff import curves, value_and_grad
from .checks import GradientCheck, GradientError, check_gradient, strict_custom_gradient
from .debugging import Diagnosis, Finding, diagnose
from .explorer import Explorer, PanelExplorer, explore, explore_panels, plot_curves
from .graph import register_gradient, run_graph
from .higher import FixedPointError, fixed_point, hvp
from .logs import captured_tf_warnings
from .reversal import GradientReversal, gradient_reversal
from .ste import SIGN_SURROGATES, dorefa_quantize, dorefa_weights, sign_with_surrogate, ste_round, ste_sign, xnor_binarize
from .tricks import straight_through

try:
    __version__ = _metadata.version(__name__)  # written once, in pyproject.toml
except _metadata.PackageNotFoundError:  # pragma: no cover - a source tree that was never installed
    __version__ = "0+unknown"

# name -> (module, attribute or None for the module itself), loaded on first use.
_LAZY = {
    "benchmarks": ("gradlib.book.benchmarks", None),
    "glue": ("gradlib.book.tables", "glue"),
    "markdown_table": ("gradlib.book.tables", "markdown_table"),
    "progress": ("gradlib.book.progress", "progress"),
    "exercises": ("gradlib.classroom.exercises", None),
    "dann": ("gradlib.dann", None),
    "data": ("gradlib.data", None),
    "experiments": ("gradlib.experiments", None),
    "layers": ("gradlib.layers", None),
    "QUANTIZERS": ("gradlib.layers", "QUANTIZERS"),
    "Quantizer": ("gradlib.layers", "Quantizer"),
    "QuantizedDense": ("gradlib.layers", "QuantizedDense"),
    "ReversalSchedule": ("gradlib.layers", "ReversalSchedule"),
}

__all__ = [
    "Diagnosis",
    "Explorer",
    "Finding",
    "FixedPointError",
    "GradientReversal",
    "PanelExplorer",
    "QUANTIZERS",
    "Quantizer",
    "QuantizedDense",
    "ReversalSchedule",
    "SIGN_SURROGATES",
    "UntestedTensorFlowWarning",
    "benchmarks",
    "GradientCheck",
    "GradientError",
    "captured_tf_warnings",
    "check_gradient",
    "curves",
    "dann",
    "data",
    "diagnose",
    "dorefa_quantize",
    "dorefa_weights",
    "exercises",
    "experiments",
    "explore",
    "explore_panels",
    "fixed_point",
    "glue",
    "gradient_reversal",
    "hvp",
    "layers",
    "markdown_table",
    "plot_curves",
    "progress",
    "register_gradient",
    "run_graph",
    "sign_with_surrogate",
    "ste_round",
    "ste_sign",
    "straight_through",
    "strict_custom_gradient",
    "value_and_grad",
    "xnor_binarize",
]


def __getattr__(name):
    """Load the book runtime, the classroom and the experiments on first use."""
    try:
        module_name, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'gradlib' has no attribute {name!r}") from None
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
