"""Execution traces of L0 programs, recorded by calls the tracer inserts into the program's syntax tree.

Why not `sys.settrace`: line events and the bytecode that tells which variable a line stores differ between
CPython versions (see docs/l0.md). Instrumenting the AST records the same events on every Python >= 3.10: after
each assignment the assigned variable, after each `.append`/`.pop` the list, and a bare event for each `if`
and `while` test (once evaluated) and `return`. A trace line is `L<line>,<var>:<value>` (value with spaces
removed) or `L<line>,`.
Programs are checked against the grammar's statements and expressions before they run (`augment` executes
programs read from a dataset folder), and run without builtins.
"""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

FUNCTION_NAME = "function"
LIST_METHODS = ("append", "pop")
_EVENT = "_l0_event"  # _l0_event(line) or _l0_event(line, name, value)
_TEST = "_l0_test"  # _l0_test(line, condition) -> condition: one event per evaluation of a `while` test
_RESERVED_PREFIX = "_l0"
_RESERVED = re.compile(rf"\b{_RESERVED_PREFIX}\w*")


class ProgramError(ValueError):
    """The source is not an L0 program: one `def function(...)` made of the supported statements only."""


class _StepLimit(BaseException):
    """Raised inside the traced program when the trace is full (a BaseException: program code cannot catch it)."""


@dataclass(frozen=True)
class Trace:
    """The target lines of one run; `truncated` when the run was stopped by the step limit."""

    lines: tuple[str, ...]
    truncated: bool


def upstream_cut(lines: tuple[str, ...], finished: bool, max_steps: int, failed_line: str = "") -> Trace | None:
    """The target L0-Bench's tracer gives for a run whose first target lines are `lines`.

    Its counter also counts the call and return events and stops the run at the line event that brings it past
    `max_steps`, before that line runs; the last recorded event is then dropped like a return event. So a run
    with at most max_steps - 1 lines is whole, a longer one keeps max_steps - 2 lines, and a run that raises
    at or after line event max_steps is kept (cut) instead of rejected. `finished`: the run returned (else it
    raised after `lines`). A run that raises at line event max_steps - 1 is kept too: the return event of the
    unwinding frame is the one past the limit, and the failed statement's line stays in the target with the
    state after the failure (`failed_line`).
    """
    if finished and len(lines) <= max_steps - 1:
        return Trace(lines, truncated=False)
    if len(lines) + 1 >= max_steps:
        return Trace(lines[: max(max_steps - 2, 0)], truncated=True)
    if not finished and failed_line and len(lines) + 2 == max_steps:
        return Trace((*lines, failed_line), truncated=True)
    return None


def _shown_names(tree: ast.Module) -> dict[int, str]:
    """Per statement line, the variable its trace line shows (assignment target, list of .append/.pop)."""
    shown: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            shown[node.lineno] = node.targets[0].id
        elif isinstance(node, ast.stmt) and _list_call(node) is not None:
            shown[node.lineno] = _list_call(node)  # type: ignore[assignment]
    return shown


def render_value(value: object) -> str:
    """A value as trace lines show it: `str` with every space removed (`[1, 2]` -> `[1,2]`)."""
    return str(value).replace(" ", "")


def _at(line: int) -> dict[str, int]:
    """Source position keywords for a node the tracer adds (it belongs to `line`)."""
    return {"lineno": line, "end_lineno": line, "col_offset": 0, "end_col_offset": 0}


def _call(name: str, line: int, *args: ast.expr) -> ast.Call:
    func = ast.Name(id=name, ctx=ast.Load(), **_at(line))
    return ast.Call(func=func, args=[ast.Constant(line, **_at(line)), *args], keywords=[], **_at(line))


def _event(line: int, *named: ast.expr) -> ast.stmt:
    return ast.Expr(value=_call(_EVENT, line, *named), **_at(line))


def _named_event(line: int, name: str) -> ast.stmt:
    return _event(line, ast.Constant(name, **_at(line)), ast.Name(id=name, ctx=ast.Load(), **_at(line)))


def _list_call(node: ast.stmt) -> str | None:
    """The list name of a `<name>.append(...)` / `<name>.pop(...)` statement, else None."""
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return None
    func = node.value.func
    if isinstance(func, ast.Attribute) and func.attr in LIST_METHODS and isinstance(func.value, ast.Name):
        return func.value.id
    return None


def _check_expr(node: ast.expr, line: int) -> None:
    """Refuse any expression the grammar cannot produce (datasets are executed: nothing else may run)."""
    children: list[ast.expr] = []
    problem = None
    if isinstance(node, ast.Name):
        pass
    elif isinstance(node, ast.Constant):
        problem = None if isinstance(node.value, int) else f"Constant {node.value!r}"
    elif isinstance(node, ast.BinOp):
        problem = None if isinstance(node.op, (ast.Add, ast.Sub)) else type(node.op).__name__
        children = [node.left, node.right]
    elif isinstance(node, ast.UnaryOp):
        problem = None if isinstance(node.op, ast.USub) else type(node.op).__name__
        children = [node.operand]
    elif isinstance(node, ast.Compare):
        if len(node.ops) != 1:
            problem = "chained comparison"
        elif not isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
            problem = type(node.ops[0]).__name__
        children = [node.left, *node.comparators]
    elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        children = [node.slice]
    else:
        problem = type(node).__name__
    if problem is not None:
        raise ProgramError(f"line {line}: unsupported expression `{problem}`")
    for child in children:
        _check_expr(child, line)


def _check_list_call(node: ast.Expr, line: int) -> None:
    call = node.value
    assert isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
    wanted = 1 if call.func.attr == "append" else 0
    if len(call.args) != wanted or call.keywords:
        raise ProgramError(f"line {line}: unsupported expression `arguments to {call.func.attr}`")
    for arg in call.args:
        _check_expr(arg, line)


def _instrument_block(body: list[ast.stmt]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for node in body:
        line = node.lineno
        if isinstance(node, ast.Assign):
            if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
                raise ProgramError(f"line {line}: only `<name> = <expression>` assignments are supported")
            _check_expr(node.value, line)
            out += [node, _named_event(line, node.targets[0].id)]
        elif _list_call(node) is not None:
            _check_list_call(node, line)
            out += [node, _named_event(line, _list_call(node))]
        elif isinstance(node, ast.If) and not node.orelse:
            _check_expr(node.test, line)
            test = _call(_TEST, line, node.test)  # recorded once the test has been evaluated, as for `while`
            out.append(ast.copy_location(ast.If(test=test, body=_instrument_block(node.body), orelse=[]), node))
        elif isinstance(node, ast.While) and not node.orelse:
            _check_expr(node.test, line)
            test = _call(_TEST, line, node.test)
            out.append(ast.copy_location(ast.While(test=test, body=_instrument_block(node.body), orelse=[]), node))
        elif isinstance(node, ast.Return):
            if node.value is not None:
                _check_expr(node.value, line)
            out += [_event(line), node]
        else:
            raise ProgramError(f"line {line}: unsupported statement `{type(node).__name__}`")
    return out


def parse_program(source: str) -> tuple[ast.Module, list[str]]:
    """Parse and check an L0 program; returns the instrumented module and the parameter names in order."""
    reserved = _RESERVED.search(source)
    if reserved:
        raise ProgramError(f"`{reserved.group()}`: names starting with {_RESERVED_PREFIX} are reserved for the tracer")
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ProgramError(f"line {exc.lineno}: {exc.msg}") from None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef) or tree.body[0].name != FUNCTION_NAME:
        raise ProgramError(f"expected exactly one `def {FUNCTION_NAME}(...)`")
    func = tree.body[0]
    args = func.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or args.defaults or func.decorator_list:
        raise ProgramError(f"line {func.lineno}: parameters must be plain names")
    func.body = _instrument_block(func.body)
    return tree, [a.arg for a in args.args]


class _Recorder:
    """Collects trace lines for one run and stops the run once `max_steps` lines are recorded."""

    def __init__(self, max_steps: int) -> None:
        self.lines: list[str] = []
        self.max_steps = max_steps

    def event(self, line: int, *named: Any) -> None:
        if len(self.lines) >= self.max_steps:
            raise _StepLimit
        self.lines.append(f"L{line}," + (f"{named[0]}:{render_value(named[1])}" if named else ""))

    def test(self, line: int, condition: Any) -> Any:
        self.event(line)
        return condition


class TracedProgram:
    """An L0 program compiled once with its trace calls, run on any number of inputs."""

    def __init__(self, source: str) -> None:
        tree, self.params = parse_program(source)
        self._shown = _shown_names(ast.parse(source))
        self.source = source
        self._code = compile(tree, "<l0-program>", "exec")

    def run(self, inputs: Mapping[str, Any], max_steps: int, step_rule: str = "exact") -> Trace | None:
        """The trace on `inputs` (copied: the caller's lists are not changed), or None if the program raises.

        step_rule `exact`: at most `max_steps` lines, cut there; `upstream`: L0-Bench's counter (`upstream_cut`).
        """
        if sorted(inputs) != sorted(self.params):
            raise ProgramError(f"inputs {list(inputs)} do not match the parameters {self.params}")
        if step_rule == "upstream":
            whole, finished = self._run(inputs, max_steps + 1)
            return upstream_cut(whole.lines, finished, max_steps, self._failed_line)
        trace, finished = self._run(inputs, max_steps)
        return trace if finished else None

    def _run(self, inputs: Mapping[str, Any], max_steps: int) -> tuple[Trace, bool]:
        """(the lines recorded, stopped at `max_steps`; whether the run returned or hit the limit)."""
        self._failed_line = ""
        recorder = _Recorder(max_steps)
        namespace: dict[str, Any] = {"__builtins__": {}, _EVENT: recorder.event, _TEST: recorder.test}
        exec(self._code, namespace)
        function: Callable[..., Any] = namespace[FUNCTION_NAME]
        try:
            function(**copy.deepcopy(dict(inputs)))
        except _StepLimit:
            return Trace(tuple(recorder.lines), truncated=True), True
        except Exception as exc:
            self._failed_line = self._render_failure(exc)
            return Trace(tuple(recorder.lines), truncated=False), False
        return Trace(tuple(recorder.lines), truncated=False), True


    def _render_failure(self, exc: Exception) -> str:
        """The trace line of the statement that raised, with the state it left (L0-Bench shows it at the limit)."""
        tb = exc.__traceback__
        frame_tb = None
        while tb is not None:
            if tb.tb_frame.f_code.co_name == FUNCTION_NAME:
                frame_tb = tb
            tb = tb.tb_next
        if frame_tb is None:
            return ""
        line = frame_tb.tb_lineno
        name = self._shown.get(line)
        state = frame_tb.tb_frame.f_locals
        return f"L{line}," + (f"{name}:{render_value(state[name])}" if name is not None and name in state else "")


def trace_program(source: str, inputs: Mapping[str, Any], max_steps: int, step_rule: str = "exact") -> Trace | None:
    """One-shot convenience: compile `source` and trace it on `inputs`."""
    return TracedProgram(source).run(inputs, max_steps, step_rule)
