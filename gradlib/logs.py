"""Capture TensorFlow's Python warnings so a chapter can show them as data."""

from __future__ import annotations

import contextlib
import logging
from typing import Iterator, List

import tensorflow as tf

__all__ = ["captured_tf_warnings"]


class _ListHandler(logging.Handler):
    def __init__(self, sink: List[str]):
        super().__init__(level=logging.WARNING)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        self.sink.append(record.getMessage())


@contextlib.contextmanager
def captured_tf_warnings() -> Iterator[List[str]]:
    """Collect the messages TensorFlow logs (``WARNING:tensorflow:...``, and ``WARNING:absl:...``
    from the parts of TensorFlow that log through absl) in a list.

    Inside the block nothing reaches stderr; the list holds each message, so
    a notebook can print the warning a reader would otherwise see in red.

    Only what TensorFlow actually logs is captured, and some of its warnings
    are rate-limited with ``logging.log_first_n``: ``GradientTape.watch``
    logs "The dtype of the watched tensor must be floating" only the first
    five times in a process (``tensorflow/python/eager/backprop.py``,
    TensorFlow 2.21).  A warning TensorFlow has already logged that often is
    never captured: the list stays empty, so re-running a cell can give
    ``[]`` where its first run gave the message.
    """
    messages: List[str] = []
    handler = _ListHandler(messages)
    # TensorFlow's own logger, and absl's, which parts of TensorFlow log through
    # (tf.saved_model.load: "Importing a function ... with ops with unsaved custom gradients").
    loggers = [tf.get_logger(), logging.getLogger("absl")]
    saved = [(logger.propagate, list(logger.handlers)) for logger in loggers]
    for logger in loggers:
        logger.handlers = [handler]
        logger.propagate = False
    try:
        yield messages
    finally:
        for logger, (propagate, handlers) in zip(loggers, saved):
            logger.propagate, logger.handlers = propagate, handlers
