"""gradlib: small, tested tools for customising gradients in TensorFlow.

The companion library of the gradbook Jupyter Book.  Every public name is
re-exported here; the topic modules hold the code.
"""

from . import _compat  # noqa: F401  (checks the TensorFlow version first)
from .checks import GradientCheck, GradientError, check_gradient, strict_custom_gradient
from . import dann, data, experiments
from .book import benchmarks
from .classroom import exercises
from .curves import curves
from .explore import Explorer, explore, plot_curves
from .graph import register_gradient, run_graph
from .logs import captured_tf_warnings
from .book.progress import progress
from .reversal import GradientReversal, gradient_reversal
from .ste import SIGN_SURROGATES, dorefa_quantize, sign_with_surrogate, ste_round, ste_sign, xnor_binarize
from .book.tables import glue, markdown_table
from .tricks import straight_through

__version__ = "0.1.0"

__all__ = [
    "Explorer",
    "GradientReversal",
    "SIGN_SURROGATES",
    "benchmarks",
    "GradientCheck",
    "GradientError",
    "captured_tf_warnings",
    "check_gradient",
    "curves",
    "dann",
    "data",
    "dorefa_quantize",
    "exercises",
    "experiments",
    "explore",
    "glue",
    "gradient_reversal",
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
    "xnor_binarize",
]
