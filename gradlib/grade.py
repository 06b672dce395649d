"""``python -m gradlib.grade`` and ``import gradlib.grade``: the notebook
grader, which lives in :mod:`gradlib.classroom.grade`."""

import sys

from .classroom import grade as _grade

if __name__ == "__main__":
    sys.exit(_grade.main())
sys.modules[__name__] = _grade
