"""``import gradlib.exercises`` (and ``gradlib.exercises.chNN``): the
exercises' checks, which live in :mod:`gradlib.classroom.exercises`."""

import sys

from .classroom import exercises as _exercises

# The package and every module it loaded are reachable under the old names too,
# as the same module objects (a second copy would register its checks twice).
for _name, _module in list(sys.modules.items()):
    if _name.startswith(_exercises.__name__ + "."):
        sys.modules[__name__ + _name[len(_exercises.__name__):]] = _module
sys.modules[__name__] = _exercises
