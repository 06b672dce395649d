r"""Where a gradient dies: :func:`diagnose` walks the backward pass op by op.

``tape.gradient`` answers with one tensor per input: ``None``, zeros, NaN or
a number. When the answer is wrong, it does not say *where* the gradient was
lost. :func:`diagnose` traces the function into a graph and runs the backward
pass one operation at a time, with each op's own registered gradient, so it
can name the first op on each path, from the output back to an input, where
a healthy gradient turns into ``None``, all zeros, NaN or inf.
"""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict
from typing import Any, Callable, Optional, Sequence

import numpy as np
import tensorflow as tf

from ._validate import callable_arg

__all__ = ["Diagnosis", "Finding", "diagnose"]

PROBLEMS = ("nan", "inf", "none", "zero")  # also the order of the report: the worst first
# What one op sends back to one input over several of its own inputs, as a sum: NaN or inf poisons it,
# zeros and None together add up to zeros (a tf.custom_gradient's forward half gets None, x gets zeros).
_SUM_ORDER = ("nan", "inf", "zero", "none")

# The state of one gradient tensor, as the backward pass leaves it.
_OK, _NONE, _ZERO, _NAN, _INF = "ok", "none", "zero", "nan", "inf"

# Ops whose output depends only on the shape of their input, not on its
# values: a path through them carries no derivative to lose.
_STRUCTURAL = frozenset({"Shape", "ShapeN", "Size", "Rank", "ZerosLike", "OnesLike", "BroadcastGradientArgs",
                         "TensorListLength", "VariableShape"})
# Ops whose derivative is zero over whole regions of their input (kinks, clips, saturation, selection): a
# zero there is reported even when another path still carries a gradient to the same input. A zero from
# any other op (a product with a constant that happens to be 0, labels y = 0 in y * z) is reported only
# when the input's whole gradient is zero.
_FLAT_SOMEWHERE = frozenset({"Relu", "Relu6", "Elu", "Selu", "LeakyRelu", "Minimum", "Maximum", "ClipByValue",
                             "Select", "SelectV2", "Sigmoid", "Tanh", "Softplus", "Softsign", "Sign", "Abs",
                             "Erf", "Erfc", "Floor", "Ceil", "Rint", "Round", "FakeQuantWithMinMaxArgs",
                             "FakeQuantWithMinMaxVars", "MaxPool", "MaxPoolV2", "MaxPool3D", "Max", "Min",
                             "EagerPyFunc", "StatelessIf", "If", "StatelessWhile", "While", "IdentityN"})
_DIFFERENTIABLE = (tf.float16, tf.bfloat16, tf.float32, tf.float64, tf.complex64, tf.complex128,
                   tf.resource, tf.variant)
_NO_GRADIENT = re.compile(r"No gradient defined for operation\s*'([^']+)'")

_TEXT = {
    "en": {
        "headers": ["input", "op", "op name", "problem", "what happened"],
        "ok": "No gradient dies on the way back: every path from the output to every input carries a "
              "finite gradient that is not all zeros.",
        "found": "{count} place(s) where a gradient dies:",
        "inputs_headers": ["input", "dtype", "shape", "gradient"],
        "output": "The output's value itself {state}.",
        "state": {_OK: "finite, not all zero", _NONE: "None", _ZERO: "all zeros", _NAN: "contains NaN",
                  _INF: "contains inf"},
        "problem": {"none": "None", "zero": "zero", "nan": "NaN", "inf": "inf"},
        "reason": {
            "none": "{op} sends no gradient (None) to the path back to this input",
            "no_gradient": "{op} has no usable gradient: tape.gradient raises LookupError here",
            "integer": "{op} turns a float into {dtype}; no gradient flows through integer or boolean tensors",
            "stop": "{op} stops the gradient, and no other path reaches this input",
            "zero": "{op} turns a gradient that is not zero into all zeros",
            "nan": "{op} turns a finite gradient into NaN",
            "inf": "{op} turns a finite gradient into inf",
            "zero_nan": "{op} turns an all-zero gradient into NaN (0 × inf)",
            "zero_inf": "{op} turns an all-zero gradient into inf",
            "dead_end": "the input reaches {op}, whose result never reaches the output",
            "unused": "the output does not use this input at all",
            "untraced": "the gradient is None and fn cannot be traced: it leaves TensorFlow "
                        "(NumPy, .numpy(), Python numbers), so no op records what happened",
            "sum": "the {terms} gradients that reach the output of {op} are each finite and not all zero, "
                   "and add up to {what}",
            "sum_input": "the gradients of {terms} paths to this input are each finite and not all zero, "
                         "and add up to {what}",
            "forward": "{op} produces {what} on the way forward, and the gradient of every op that reads "
                       "it inherits it",
            "data": "{op} feeds in values that already contain {what} (the data, or a weight), and the "
                    "gradient inherits it",
            "input_value": "input {n} already contains {what}, and the gradient inherits it",
            "total": "the gradient that reaches this input is {what}, and no single op on its paths makes it so",
            "custom": "the gradient function of the tf.custom_gradient at {op} returns {what} for an "
                      "argument on the path back to this input",
        },
        "what": {"none": "None", "zero": "all zeros", "nan": "NaN", "inf": "inf"},
    },
    "zh": {
        "headers": ["输入", "算子", "算子名", "问题", "发生了什么"],
        "ok": "反向传播途中没有梯度失效：从输出到每个输入的每条路径都带着有限且不全为零的梯度。",
        "found": "梯度在 {count} 处失效：",
        "inputs_headers": ["输入", "数据类型", "形状", "梯度"],
        "output": "输出的值本身{state}。",
        "state": {_OK: "有限，且不全为零", _NONE: "None", _ZERO: "全为零", _NAN: "含 NaN", _INF: "含 inf"},
        "problem": {"none": "None", "zero": "零", "nan": "NaN", "inf": "inf"},
        "reason": {
            "none": "{op} 不向通往该输入的路径传回梯度（None）",
            "no_gradient": "{op} 没有可用的梯度：tape.gradient 在此抛出 LookupError",
            "integer": "{op} 把浮点数变成 {dtype}；梯度不经过整数或布尔张量",
            "stop": "{op} 停止了梯度，且没有别的路径通到该输入",
            "zero": "{op} 把不为零的梯度变成了全零",
            "nan": "{op} 把有限的梯度变成了 NaN",
            "inf": "{op} 把有限的梯度变成了 inf",
            "zero_nan": "{op} 把全零的梯度变成了 NaN（0 × inf）",
            "zero_inf": "{op} 把全零的梯度变成了 inf",
            "dead_end": "该输入流到 {op}，但其结果到不了输出",
            "unused": "输出根本没有用到该输入",
            "untraced": "梯度为 None，且 fn 无法被追踪成计算图：它离开了 TensorFlow"
                        "（NumPy、.numpy()、Python 数值），没有任何算子记录发生了什么",
            "sum": "到达 {op} 输出的 {terms} 个梯度各自有限且不全为零，相加后却成了{what}",
            "sum_input": "通往该输入的 {terms} 条路径的梯度各自有限且不全为零，相加后却成了{what}",
            "forward": "{op} 在前向计算中产生了 {what}，读取它的每个算子的梯度都随之带上 {what}",
            "data": "{op} 送入的值本身已含 {what}（数据或权重），梯度随之带上 {what}",
            "input_value": "输入 {n} 本身已含 {what}，梯度随之带上 {what}",
            "total": "到达该输入的梯度是{what}，但路径上没有哪个单独的算子造成这一点",
            "custom": "{op} 处的 tf.custom_gradient 的梯度函数对通往该输入的某个参数返回了{what}",
        },
        "what": {"none": " None", "zero": "全零", "nan": "NaN", "inf": "inf"},
    },
}


def _language(lang: Any) -> str:
    if lang not in _TEXT:
        raise ValueError(f"`lang` must be one of {sorted(_TEXT)}; got {lang!r}")
    return lang


@dataclasses.dataclass(frozen=True)
class Finding:
    """One place where the gradient of one input dies.

    Attributes:
        input: the index of the input (in ``diagnose(fn, *inputs)``) whose
            gradient this op cuts, zeroes or poisons.
        op_type: the op's type, e.g. ``"Round"``, ``"Log"``, ``"Cast"``;
            ``None`` when no op is to blame (the output never uses the input,
            or ``fn`` could not be traced).
        op_name: the op's name in the traced graph, or ``None`` as above.
        problem: ``"none"``, ``"zero"``, ``"nan"`` or ``"inf"``: what the
            gradient becomes here.
        reason: a key of the explanation (``"none"``, ``"no_gradient"``,
            ``"integer"``, ``"stop"``, ``"zero"``, ``"nan"``, ``"inf"``,
            ``"zero_nan"``, ``"zero_inf"``, ``"dead_end"``, ``"unused"``,
            ``"untraced"``, ``"sum"``, ``"sum_input"``, ``"forward"``,
            ``"data"``, ``"custom"``, ``"total"``); :meth:`explain` turns
            it into a sentence.
        dtype: for ``"integer"``, the integer (or ``"bool"``) dtype the op
            produces.
        terms: for ``"sum"`` and ``"sum_input"``, how many gradients were
            added up.
    """

    input: int
    op_type: Optional[str]
    op_name: Optional[str]
    problem: str
    reason: str
    dtype: Optional[str] = None
    terms: Optional[int] = None

    def explain(self, lang: str = "en") -> str:
        """One sentence, in English (``"en"``) or Chinese (``"zh"``), saying what happened."""
        text = _TEXT[_language(lang)]
        argument = re.fullmatch(r"args_(\d+)", self.op_name or "")
        if self.reason == "data" and self.op_type == "Placeholder" and argument:  # one of the inputs
            return text["reason"]["input_value"].format(n=argument.group(1), what=text["what"][self.problem])
        return text["reason"][self.reason].format(op=self.op_type or "", dtype=self.dtype, terms=self.terms,
                                                  what=text["what"][self.problem])


@dataclasses.dataclass(frozen=True)
class InputGradient:
    """What ``tape.gradient`` gives one input: its ``state`` is ``"ok"``, ``"none"``, ``"zero"``, ``"nan"`` or ``"inf"``."""

    index: int
    dtype: str
    shape: tuple
    state: str


@dataclasses.dataclass(frozen=True, repr=False)
class Diagnosis:
    """The report of :func:`diagnose`.

    ``findings`` lists, for each input, the ops where its gradient dies, the
    worst problems first (NaN, inf, None, zero), then from the output back.
    ``inputs`` says what the whole backward pass delivers to each input, and
    ``output`` whether fn's value itself holds NaN or inf (``"ok"``
    otherwise): a NaN loss can have healthy gradients.
    ``ok`` is True when ``findings`` is empty.  In a notebook the report shows
    as a table in ``lang``; :meth:`table` gives it in the other language.
    """

    findings: tuple
    inputs: tuple
    lang: str = "en"
    output: str = "ok"  # the state of fn's (summed) output value: "ok", "nan" or "inf" (a NaN loss shows here)

    @property
    def ok(self) -> bool:
        return not self.findings

    def __bool__(self) -> bool:
        return self.ok

    def _rows(self, lang: str) -> list:
        text = _TEXT[lang]
        return [[str(f.input), f.op_type or "—", f.op_name or "—", text["problem"][f.problem], f.explain(lang)]
                for f in self.findings]

    def _input_rows(self, lang: str) -> list:
        state = _TEXT[lang]["state"]
        return [[str(i.index), i.dtype, str(list(i.shape)), state[i.state]] for i in self.inputs]

    def table(self, lang: Optional[str] = None):
        """The report as an ``IPython.display.Markdown`` table, in ``lang`` (default: the report's)."""
        from IPython.display import Markdown

        return Markdown(self._markdown(_language(lang or self.lang)))

    def _markdown(self, lang: str) -> str:
        text = _TEXT[lang]
        lines = []
        if self.ok:
            lines.append(text["ok"])
        else:
            lines.append(text["found"].format(count=len(self.findings)))
            lines.append("")
            lines += _markdown_lines(text["headers"], self._rows(lang))
        lines.append("")
        lines += _markdown_lines(text["inputs_headers"], self._input_rows(lang))
        if self.output in (_NAN, _INF):
            lines += ["", text["output"].format(state=text["state"][self.output])]
        return "\n".join(lines)

    def _repr_markdown_(self) -> str:
        return self._markdown(self.lang)

    def __repr__(self) -> str:
        text = _TEXT[self.lang]
        note = (" " + text["output"].format(state=text["state"][self.output])) if self.output != _OK else ""
        if self.ok:
            return f"<Diagnosis: {text['ok']}{note}>"
        word, problem = text["headers"][0], text["problem"]  # in the report's language, like the table
        lines = [f"<Diagnosis: {text['found'].format(count=len(self.findings))}"]
        lines += [f"  {word} {f.input}: {f.op_type or '—'} ({f.op_name or '—'}) -> {problem[f.problem]}: "
                  f"{f.explain(self.lang)}" for f in self.findings]
        return "\n".join(lines) + (f"\n  {note.strip()}" if note else "") + ">"


def _markdown_lines(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list:
    def cell(value):
        return str(value).replace("|", r"\|").replace("\n", " ")

    return (["| " + " | ".join(map(cell, headers)) + " |", "|" + "---|" * len(headers)]
            + ["| " + " | ".join(map(cell, row)) + " |" for row in rows])


# ---------------------------------------------------------------------------
# Tracing and the op-by-op backward pass


def _as_input(value: Any, index: int):
    """An input as a float tensor or a float ``tf.Variable`` (Keras variables through their tf.Variable)."""
    if isinstance(value, (list, tuple)) and any(
            isinstance(v, (tf.Variable, tf.Tensor)) or isinstance(getattr(v, "value", None), tf.Variable)
            for v in value):
        raise TypeError(f"input {index} is a {type(value).__name__} of {len(value)} tensors or variables; pass "
                        "them as separate inputs, e.g. diagnose(fn, *model.trainable_variables)")
    inner = getattr(value, "value", None)
    if not isinstance(value, tf.Variable) and isinstance(inner, tf.Variable):  # a Keras 3 variable
        value = inner
    if isinstance(value, tf.Variable):
        dtype = value.dtype
    else:
        if callable(value) and not isinstance(value, (tf.Tensor, np.ndarray)):
            raise TypeError(f"input {index} is a {type(value).__name__}, not a tensor: diagnose(fn, *inputs) takes "
                            "the function first and then the values to differentiate at")
        try:
            value = tf.convert_to_tensor(value)
        except (TypeError, ValueError) as err:
            raise TypeError(f"input {index} must be a floating tensor; got {type(value).__name__}: {err}") from None
        dtype = value.dtype
    if not dtype.is_floating:
        raise TypeError(
            f"input {index} has dtype {dtype.name}: diagnose takes real floating inputs only "
            f"(float16, bfloat16, float32, float64), and TensorFlow sends no gradient to integer or boolean tensors. "
            f"Pass a float, e.g. tf.cast(x, tf.float32) or 3.0 instead of 3.")
    return value


def _state_flags(grad) -> tf.Tensor:
    """[has NaN, has inf, all zero] of a gradient tensor (or IndexedSlices), in the graph.

    A gradient that is not a number (the variant of a TensorList, inside tf.map_fn or a Keras RNN) cannot be
    looked into: it counts as healthy, and a problem it carries shows where numbers come out of it.
    """
    if isinstance(grad, tf.IndexedSlices):  # dense: repeated indices add up, and can overflow or cancel
        grad = tf.convert_to_tensor(grad)
    if not (grad.dtype.is_floating or grad.dtype.is_complex):
        return tf.zeros([3], tf.bool)
    if grad.dtype.is_complex:
        grad = tf.abs(grad)
    grad = tf.cast(grad, tf.float32) if grad.dtype in (tf.float16, tf.bfloat16) else grad
    grad = tf.reshape(grad, [-1])  # a gradient of unknown rank (tf.py_function's) reduces too
    return tf.stack([tf.reduce_any(tf.math.is_nan(grad)), tf.reduce_any(tf.math.is_inf(grad)),
                     tf.reduce_all(tf.equal(grad, 0))])


def _state(flags) -> str:
    nan, inf, zero = (bool(v) for v in flags)
    return _NAN if nan else _INF if inf else _ZERO if zero else _OK


def _add(grads: list):
    grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
    return grads[0] if len(grads) == 1 else tf.add_n(grads)


class _BackwardError(Exception):
    """A gradient function failed while diagnose built the backward pass (not a tracing problem of fn)."""


class _Trace:
    """The graph of ``fn`` and an op-by-op backward pass through it, built inside one ``tf.function``."""

    def __init__(self, fn: Callable, inputs: Sequence, ignore: frozenset):
        self.fn, self.inputs, self.ignore = fn, list(inputs), ignore
        self._reset()

    def _reset(self):
        """Forget an earlier trace: tf.function traces twice when fn creates variables (a Keras layer's first call)."""
        self.flags: list = []  # in-graph [nan, inf, zero] vectors, evaluated in one call
        self.upstream: dict = {}  # op name -> index into flags (gradient arriving at its outputs)
        self.local: dict = {}  # (op name, input tensor name) -> index into flags, or None
        self.no_gradient: set = set()  # op names whose gradient raised LookupError
        self.total: list = []  # per input: index into flags, or None
        self.ops: dict = {}
        self.sources: list = []  # per input: the tensor the graph reads it from
        self.forward: dict = {}  # tensor name -> index into flags of its forward value
        self.sums: dict = {}  # tensor name -> (index of the summed gradient, indices of its terms)
        self.out_slots: dict = {}  # op name -> indices of its outputs that a gradient reaches
        self.output_flag = None  # index into flags of fn's output value

    def _flag(self, grad) -> int:
        self.flags.append(_state_flags(grad))
        return len(self.flags) - 1

    def body(self, *args):
        self._reset()
        output = self.fn(*args)
        if isinstance(output, (list, tuple, dict)):
            raise TypeError(f"fn must return one tensor (a scalar, or a tensor whose sum is taken); got a "
                            f"{type(output).__name__}. Return the loss, e.g. tf.add_n(losses)")
        try:
            output = tf.convert_to_tensor(output)
        except (TypeError, ValueError) as err:
            raise TypeError(f"fn must return a tensor; got {type(output).__name__}: {err}") from None
        if not (output.dtype.is_floating or output.dtype.is_complex):
            raise TypeError(f"fn returned a {output.dtype.name} tensor; a gradient needs a floating output "
                            "(an integer or boolean result has no derivative)")
        loss = tf.reduce_sum(output)
        graph = loss.graph
        captured = {id(external): internal for external, internal in graph.captures}
        # a variable argument is read through the placeholder that captures its handle (None: never read)
        self.sources = [captured.get(id(a.handle)) if isinstance(a, tf.Variable) else a for a in args]
        forward = {op.name: op for op in graph.get_operations()}
        self.ops = forward
        needed = self._backward_reach(loss, forward)
        self.reach = [set() if s is None else self._forward_reach(s, forward) & needed for s in self.sources]
        self.live = [set() if s is None else self._forward_reach(s, forward, skip=self.ignore) & needed
                     for s in self.sources]  # the same, not through a deliberate stop
        self.sinks = [[] if s is None else self._dead_ends(s, forward, needed) for s in self.sources]
        for name in needed:  # forward values, to tell a NaN made on the way forward from one made on the way back
            for t in forward[name].outputs:
                if t.dtype.is_floating or t.dtype.is_complex:
                    self.forward[t.name] = self._flag(t)
        for source in self.sources:
            if source is not None and (source.dtype.is_floating or source.dtype.is_complex):
                self.forward[source.name] = self._flag(source)
        self.output_flag = self._flag(output)
        try:
            self._backward(loss, needed, forward)
        except (TypeError, ValueError) as err:  # fn traced fine; TensorFlow's own gradient code refused
            raise _BackwardError(err) from err
        return tf.stack(self.flags) if self.flags else tf.zeros([0, 3], tf.bool)

    @staticmethod
    def _backward_reach(loss, forward) -> set:
        seen, stack = set(), [loss.op]
        while stack:
            op = stack.pop()
            if op.name in seen or op.name not in forward:
                continue
            seen.add(op.name)
            stack.extend(t.op for t in op.inputs)
        return seen

    @staticmethod
    def _carries(tensor) -> bool:
        """Whether a path through ``tensor`` can carry a derivative (booleans and shape-only results cannot)."""
        return tensor.dtype != tf.bool and tensor.op.type not in _STRUCTURAL

    def _forward_reach(self, source, forward, skip=frozenset()) -> set:
        seen, stack = set(), [source]
        while stack:
            tensor = stack.pop()
            for consumer in tensor.consumers():
                if consumer.name not in forward or consumer.name in seen or consumer.type in skip:
                    continue
                seen.add(consumer.name)
                stack.extend(t for t in consumer.outputs if self._carries(t))
        return seen

    def _dead_ends(self, source, forward, needed) -> list:
        """The ops where the data flow from ``source`` ends without reaching the output."""
        reach = self._forward_reach(source, forward)
        if reach & needed:
            return []
        ends = []
        for name in sorted(reach):
            op = forward[name]
            if not any(c.name in reach for t in op.outputs for c in t.consumers()):
                ends.append(op)
        return ends

    def _backward(self, loss, needed, forward):
        order = [op for op in loss.graph.get_operations() if op.name in needed]  # creation order is topological
        grads = defaultdict(list)  # tensor ref -> [(gradient term, index of its flags)]
        grads[loss.ref()].append((tf.ones_like(loss), None))
        for op in reversed(order):
            slots = [i for i, t in enumerate(op.outputs) if grads.get(t.ref())]
            if not slots:
                continue
            outs = [op.outputs[i] for i in slots]
            self.out_slots[op.name] = slots
            dys = [self._summed(t, grads[t.ref()]) for t in outs]
            self.upstream[op.name] = [flag for _, flag in dys]
            dys = [dy for dy, _ in dys]
            xs, seen = [], set()
            for t in op.inputs:
                if t.dtype in _DIFFERENTIABLE and t.ref() not in seen:
                    seen.add(t.ref())
                    xs.append(t)
            if not xs:
                continue
            try:
                local = tf.gradients(outs, xs, grad_ys=dys, stop_gradients=xs)
            except LookupError as err:
                match = _NO_GRADIENT.search(str(err))
                if match and match.group(1) != op.name:  # pragma: no cover - the op is the only one between
                    raise
                self.no_gradient.add(op.name)
                local = [None] * len(xs)
            for x, g in zip(xs, local):
                flag = None if g is None else self._flag(g)
                self.local[(op.name, x.name)] = flag
                if g is not None:
                    grads[x.ref()].append((g, flag))
        self.total = [self._summed(s, grads[s.ref()])[1] if s is not None and grads.get(s.ref()) else None
                      for s in self.sources]

    def _summed(self, tensor, terms):
        """The gradient of ``tensor``: the sum of its terms, flagged; a sum of several is remembered."""
        total = _add([g for g, _ in terms])
        if len(terms) == 1 and terms[0][1] is not None:
            return total, terms[0][1]
        flag = self._flag(total)
        if len(terms) > 1:
            self.sums[tensor.name] = (flag, [f for _, f in terms])
        return total, flag


def _is_custom(op) -> bool:
    """Whether ``op`` is the ``IdentityN`` that ``tf.custom_gradient`` wraps a function in."""
    return op.type == "IdentityN" and "_gradient_op_type" in op.node_def.attr


def _forward_origin(tensor, problem, trace, states):
    """The op that first produced ``problem`` (NaN or inf) on the way forward to ``tensor``."""
    seen = set()
    while tensor.name not in seen:
        seen.add(tensor.name)
        bad = [t for t in tensor.op.inputs
               if t.name in trace.forward and states[trace.forward[t.name]] == problem]
        if not bad:
            return tensor.op
        tensor = bad[0]
    return tensor.op  # pragma: no cover - a graph has no cycles outside loops, which are one op here


def _inherited(op, problem, trace, states):
    """If ``op``'s gradient is NaN/inf because a value on the way forward already was, the op that made it.

    A NaN read by ``op`` is traced back to where it was made; a NaN that ``op`` itself makes from an inf it
    reads (a softmax of a row of -inf) is ``op``'s own, so that a deliberate -inf (a mask) does not take the
    blame; otherwise an inf read by ``op`` is traced back to where it was made.
    """
    def bad(tensor, wanted):
        return tensor.name in trace.forward and states[trace.forward[tensor.name]] == wanted

    for t in op.inputs:
        if bad(t, _NAN):
            return _forward_origin(t, _NAN, trace, states), _NAN
    if any(bad(t, _NAN) for t in op.outputs) and any(bad(t, _INF) for t in op.inputs):
        return op, _NAN  # op made the NaN from an inf it read (a softmax of a row of -inf, inf - inf)
    for t in op.inputs:
        if bad(t, _INF):
            origin = _forward_origin(t, _INF, trace, states)
            if origin.type == "Const":  # a deliberate inf written in fn (a -inf mask): op is to blame
                return None, None
            return origin, _INF
    return None, None


def _findings(trace: _Trace, values: np.ndarray) -> list:
    states = [_state(row) for row in values]
    findings: list = []
    ops = trace.ops
    for index, reach in enumerate(trace.reach):
        source = trace.sources[index]
        total = states[trace.total[index]] if trace.total[index] is not None else _NONE
        if not reach:
            ends = trace.sinks[index]
            if ends:
                findings += [(Finding(index, op.type, op.name, "none", "dead_end"), 0) for op in ends]
            else:
                findings.append((Finding(index, None, None, "none", "unused"), 0))
            continue
        order = [name for name in ops if name in reach]
        for depth, name in enumerate(reversed(order)):
            op = ops[name]
            flags = trace.upstream.get(name)
            if not flags:
                continue
            for t in op.outputs:  # several gradients meet here: a sum that overflows or cancels
                found = _bad_sum(trace, states, t.name, total)
                if found:
                    findings.append((Finding(index, op.type, name, found[0], "sum", terms=found[1]), depth))
            upstream = [states[i] for i in flags]
            arriving = (_NAN if _NAN in upstream else _INF if _INF in upstream
                        else _OK if _OK in upstream else _ZERO)
            if arriving in (_NAN, _INF):
                continue
            on_path, refs = [], set()
            for t in op.inputs:
                if (t.op.name in reach or t.ref() == source.ref()) and trace._carries(t) and t.ref() not in refs:
                    refs.add(t.ref())
                    on_path.append(t)
            if not on_path:
                continue
            if name in trace.no_gradient:
                findings.append((Finding(index, op.type, name, "none", "no_gradient"), depth))
                continue
            custom = _is_custom(op)
            if custom:  # the forward half of a tf.custom_gradient gets None by design; its arguments must not,
                # unless the argument reaches this input only through a deliberate stop (a fake-quant scale)
                results = {op.inputs[i].ref() for i in trace.out_slots.get(name, [])}
                live = trace.live[index]
                on_path = [t for t in on_path if t.ref() not in results
                           and (t.op.name in live or t.ref() == source.ref())]
            local = {}
            for t in on_path:
                if t.dtype in _DIFFERENTIABLE:
                    flag = trace.local.get((name, t.name))
                    local[t.ref()] = _NONE if flag is None else states[flag]
            carried = not custom and any(s == _OK for s in local.values())
            candidates = []
            for t in on_path:
                if t.dtype not in _DIFFERENTIABLE:
                    if arriving == _OK and not carried:  # an integer path: blame where the floats ended
                        for source_op in _integer_sources(t, reach, trace):
                            dtype = next(o.dtype.name for o in source_op.outputs if not o.dtype.is_floating)
                            findings.append((Finding(index, source_op.type, source_op.name, "none", "integer",
                                                     dtype), depth))
                    continue
                got = local[t.ref()]
                if arriving == _OK and got != _OK:
                    if got in (_NONE, _ZERO) and carried:
                        continue  # routed to another path to the same input, e.g. a tf.where's other branch
                    if got == _NONE and op.type in trace.ignore:
                        if total == _NONE:
                            candidates.append(Finding(index, op.type, name, "none", "stop"))
                        continue
                    if got == _ZERO and op.type not in _FLAT_SOMEWHERE and total != _ZERO:
                        continue  # e.g. y * z with labels y = 0: a constant factor, not a death
                    candidates.append(Finding(index, op.type, name, got, "custom" if custom else got))
                elif arriving == _ZERO and got in (_NAN, _INF):
                    candidates.append(Finding(index, op.type, name, got, "zero_" + got))
            if candidates:
                finding = min(candidates, key=lambda f: _SUM_ORDER.index(f.problem))
                if finding.problem in (_NAN, _INF):
                    origin, what = _inherited(op, finding.problem, trace, states)
                    if origin is not None:  # the values were bad before the gradient came: blame their maker
                        reason = "data" if not origin.inputs or origin.type in ("ReadVariableOp", "Placeholder") \
                            else "forward"
                        finding = Finding(index, origin.type, origin.name, what, reason)
                findings.append((finding, depth))
        found = _bad_sum(trace, states, source.name, total)
        if found:
            findings.append((Finding(index, None, None, found[0], "sum_input", terms=found[1]), len(order)))
        if total == _NONE and not any(f.input == index for f, _ in findings):
            # Nothing above explains the None: the only paths left run through booleans, e.g.
            # tf.cast(x > 0, tf.float32) or tf.where(x > 0, 1., 0.). Blame the ops that made them.
            findings += [(Finding(index, ops[name].type, name, "none", "integer", tf.bool.name), depth)
                         for depth, name in enumerate(reversed([n for n in ops if n in reach]))
                         if any(o.dtype == tf.bool for o in ops[name].outputs)]
        if total != _OK and not any(f.input == index for f, _ in findings):
            findings.append((Finding(index, None, None, total, "total"), len(order)))
    unique, seen = [], set()
    for finding, _depth in sorted(findings, key=lambda fd: (fd[0].input, PROBLEMS.index(fd[0].problem), fd[1])):
        key = (finding.input, finding.op_name, finding.problem)
        if key not in seen:
            seen.add(key)
            unique.append(finding)
    return unique


def _bad_sum(trace, states, name, total):
    """(problem, number of terms) when the gradients summed at tensor ``name`` are healthy but their sum is not.

    A sum that cancels to zero counts only when the input's whole gradient is zero too: the shift inside
    ``reduce_logsumexp`` or a softmax has a gradient that cancels exactly, by design.
    """
    if name not in trace.sums:
        return None
    flag, terms = trace.sums[name]
    summed = states[flag]
    if summed == _OK or any(f is None or states[f] != _OK for f in terms) or (summed == _ZERO and total != _ZERO):
        return None
    return summed, len(terms)


def _integer_sources(tensor, reach, trace) -> list:
    """The ops on the path that turn floats into the integer ``tensor`` (walking back through integers)."""
    found, stack, seen = [], [tensor], set()
    while stack:
        t = stack.pop()
        op = t.op
        if op.name in seen or op.name not in reach:
            continue
        seen.add(op.name)
        float_inputs = [i for i in op.inputs if i.dtype in _DIFFERENTIABLE and
                        (i.op.name in reach or any(i.ref() == s.ref() for s in trace.sources))]
        if float_inputs:
            found.append(op)
        stack.extend(i for i in op.inputs if i.dtype not in _DIFFERENTIABLE and trace._carries(i))
    return found


def diagnose(fn: Callable, *inputs, ignore: Sequence[str] = ("StopGradient",), lang: str = "en") -> Diagnosis:
    r"""Find the ops where the gradient of ``fn`` with respect to each input dies.

    ``fn(*inputs)`` is traced once into a graph (``tf.function`` without
    autograph), and its output summed to a scalar :math:`L`. The backward
    pass is then run one op at a time, each with the gradient TensorFlow
    registers for it, at the given input values. For an op :math:`y = f(x)`
    on a path from input :math:`i` to the output, with :math:`\bar y =
    \partial L/\partial y` arriving from the output side, the op is reported
    when its own vector-Jacobian product :math:`\bar x = \bar y\,\partial
    f/\partial x`:

    - is ``None`` (the op is not differentiable, or has no gradient at all:
      then ``tape.gradient`` raises ``LookupError``) while :math:`\bar y` is
      finite and not all zero;
    - is all zeros while :math:`\bar y` is not (a dead ReLU, a saturated
      sigmoid, a clipped value);
    - has NaN or inf while :math:`\bar y` is finite (``log`` or ``sqrt`` at
      0, an overflow), all-zero :math:`\bar y` included: that is the
      ``tf.where`` trap, :math:`0\cdot\infty`.

    On each path the first op where a healthy gradient turns bad is reported
    (and, below a zero, an op that turns the zero into NaN or inf, as the
    ``tf.where`` trap does), even when another path still carries a gradient
    to the same input (``x + tf.round(x)``). A ``None`` or zero that an op
    sends to one of its inputs while it sends a healthy gradient to another
    input on a path to the same :math:`x` is routing, not death, and is not
    reported (the branch a ``tf.where`` did not take, the forward half of a
    ``tf.custom_gradient``); a ``None`` or zero that a custom gradient
    function returns for one of its arguments is reported (``"custom"``).

    Where several paths meet, their gradients are added: when each is finite
    and not all zero but the sum overflows, it is reported at the op whose
    output received them (``"sum"``; ``"sum_input"`` at the input itself),
    and so is a sum that cancels to all zeros when the input's whole
    gradient is zero. When a NaN or inf in a gradient comes from a NaN or
    inf that was already in the values on the way forward, the op that
    first produced that value is reported instead of the op whose gradient
    multiplied by it: ``"forward"`` (a ``Softmax`` of a row of ``-inf``, an
    ``Exp`` that overflows), or ``"data"`` when it comes in from outside
    (a constant, a variable, or an input that holds NaN). If an input's
    gradient is still not healthy and nothing above explains it, the report
    says so (``"total"``): ``.ok`` is True exactly when every input gets a
    finite gradient that is not all zero and no path dies.
    Paths through booleans (comparisons) and shapes carry no derivative and
    are not followed; a path through integers is reported at the op that
    turned floats into integers (a ``Cast``, an ``ArgMax``), and a path
    through booleans at the comparison only when nothing else explains a
    ``None`` gradient (``tf.cast(x > 0, tf.float32)``). Ops named in
    ``ignore`` (``tf.stop_gradient`` by default) are deliberate stops,
    reported only when nothing else reaches the input. A zero is a fact, not
    always a bug: at the minimum of :math:`x^2`, or where ``tf.where`` picks
    a constant, the true gradient is zero.

    Limits: ops inside ``tf.cond``, ``tf.while_loop`` or a nested
    ``tf.function`` are reported as the one ``If``/``While``/call op that
    holds them, and a ``None`` inside them arrives as zeros (as it does for
    ``tape.gradient`` inside a ``tf.function``; eagerly it stays ``None``);
    a gradient carried in a TensorList (``tf.map_fn``, ``tf.TensorArray``,
    Keras RNN layers) cannot be looked into, so a problem inside shows at
    the op where it leaves the list (``TensorListFromTensor``); variables
    that ``fn`` reads but that are not among ``inputs`` are not diagnosed
    (pass them as inputs); ``fn`` must be traceable without autograph
    (Python ``if`` on a tensor is not: use ``tf.where`` or ``tf.cond``).
    When ``fn`` cannot be traced because it leaves TensorFlow (NumPy,
    ``.numpy()``) and its eager gradient is None, the report says so with an
    ``"untraced"`` finding. ``fn`` is called once, so a layer that updates
    state when called (batch normalisation in training) does so. It builds
    one small gradient computation per op, each slower as the graph grows,
    so the time grows about with the square of the number of ops: a fraction
    of a second for a small model, minutes for a ResNet-50. For a vector output
    the function diagnosed is its sum, as for ``tape.gradient``:
    ``sum(softmax(z))`` is constant, and its zero gradient is reported.

    Args:
        fn: the function; it returns a scalar or a tensor whose sum is taken.
        *inputs: the values to differentiate at: float tensors, NumPy arrays,
            Python floats, or float ``tf.Variable``/Keras variables (then
            ``fn`` receives the variable, a Keras variable as its
            ``tf.Variable``, and its reads and assignments are traced). A
            model's weights go in one by one:
            ``diagnose(fn, *model.trainable_variables)``.
        ignore: op types that stop gradients on purpose.
        lang: the language of the report's table, ``"en"`` or ``"zh"``.

    Returns:
        A :class:`Diagnosis`: ``.ok``, ``.findings`` (:class:`Finding`:
        ``input``, ``op_type``, ``op_name``, ``problem``) and ``.inputs``.

    Raises:
        TypeError: ``fn`` is not callable, an input is not floating (or is a
            list of tensors), ``ignore`` is not a sequence of op type names,
            or ``fn`` returns something other than one floating tensor.
        ValueError: no inputs, an unknown ``lang``, or ``fn`` cannot be
            traced though its eager gradient exists (the message says why).
    """
    callable_arg(fn, "fn")
    lang = _language(lang)
    if not inputs:
        raise ValueError("diagnose(fn, *inputs) needs at least one input: the values to differentiate at, "
                         "e.g. diagnose(loss, w, x)")
    if isinstance(ignore, str) or not isinstance(ignore, (list, tuple, set, frozenset)) \
            or not all(isinstance(name, str) for name in ignore):
        raise TypeError(f"`ignore` must be a sequence of op types, e.g. ('StopGradient',) or (); got {ignore!r}")
    ignore = frozenset(ignore)
    values = [_as_input(v, i) for i, v in enumerate(inputs)]
    summaries = lambda states: tuple(  # noqa: E731
        InputGradient(i, v.dtype.name, tuple(v.shape.as_list()), s) for i, (v, s) in enumerate(zip(values, states)))
    trace = _Trace(fn, values, ignore)
    traced = tf.function(trace.body, autograph=False)
    try:
        concrete = traced.get_concrete_function(*values)
    except _BackwardError as err:
        cause = err.__cause__
        raise ValueError(f"TensorFlow could not build the gradient of fn ({type(cause).__name__}: {cause}); "
                         "tape.gradient inside tf.function fails the same way") from cause
    except (TypeError, ValueError) as err:
        if "fn must return" in str(err) or "fn returned" in str(err):
            raise
        return _untraced(fn, values, err, summaries, lang)
    except (AttributeError, NotImplementedError, tf.errors.OperatorNotAllowedInGraphError) as err:
        return _untraced(fn, values, err, summaries, lang)
    flags = concrete(*values).numpy()
    findings = _findings(trace, flags)
    states = [_state(flags[i]) if i is not None else _NONE for i in trace.total]
    output = _state(flags[trace.output_flag])
    return Diagnosis(tuple(findings), summaries(states), lang, output if output in (_NAN, _INF) else _OK)


def _untraced(fn, values, err, summaries, lang) -> Diagnosis:
    """``fn`` could not be traced: say what its eager gradient is, or why diagnose cannot help."""
    try:
        with tf.GradientTape() as tape:
            for v in values:
                if not isinstance(v, tf.Variable):
                    tape.watch(v)
            output = fn(*values)
        grads = tape.gradient(output, values)
    except Exception:  # the eager call fails too: the original error is the one to show
        raise err from None
    lost = [i for i, g in enumerate(grads) if g is None]
    if not lost:
        raise ValueError(
            f"diagnose cannot trace fn into a graph ({type(err).__name__}: {str(err).splitlines()[0]}), although "
            "its eager gradient exists. diagnose traces without autograph: use tf.where or tf.cond instead of a "
            "Python `if` on a tensor, and keep the computation in TensorFlow ops") from err
    findings = tuple(Finding(i, None, None, "none", "untraced") for i in lost)
    states = [_NONE if g is None else _state(_state_flags(g).numpy()) for g in grads]
    return Diagnosis(findings, summaries(states), lang)
