"""The book's runtime: what the chapters' pages need besides the gradient tools.

Loaded on use, not by ``import gradlib``.
"""
