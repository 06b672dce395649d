"""The classroom: the exercises' automatic checks and the notebook grader.

Loaded on use, not by ``import gradlib``.
"""
