"""Execution traces of L0 programs, recorded by calls the tracer inserts into the program's syntax tree.

Why not `sys.settrace`: line events and the bytecode that tells which variable a line stores differ between
CPython versions (see docs/l0.md). Instrumenting the AST records the same events on every Python >= 3.10: after
each assignment the assigned variable, after each `.append`/`.pop` the list, and a bare event for each `if`
and `while` test (once evaluated) and `return`. A trace line is `L<line>,<var>:<value>` (value with spaces
removed) or `L<line>,`.
Programs are checked against the grammar's statements and expressions before they run (`augment` executes
programs read from a dataset folder), and run with `len` as the only builtin.
"""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

FUNCTION_NAME = "function"
LIST_METHODS = ("append", "pop")
# What L0-Bench's words can write in an expression besides + and -: `==`, `!=`, `<`, `>` (chains too) and `len(`.
COMPARISONS = (ast.Eq, ast.NotEq, ast.Lt, ast.Gt)
LENGTH = "len"
_EVENT = "_l0_event"  # _l0_event("L<line>,"): a trace line that shows no variable
_STATE = "_l0_state"  # _l0_state("L<line>,<name>:", value, ",<name>:", value, ...): one that shows variables
_TEST = "_l0_test"  # _l0_test("L<line>,", condition) -> condition: one event per evaluation of a `while` test
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


def _shown_names(tree: ast.Module) -> dict[int, tuple[str, ...]]:
    """Per statement line, the variables its trace line may show, as L0-Bench's tracer picks them (`pick_shown`
    keeps those it prints): an assignment's target; every variable an `.append`/`.pop` line reads, in the order
    of the function's local variables (parameters, then first use). Of two such statements on one line, the
    later one's (both trace lines show them, as in L0-Bench)."""
    func = tree.body[0]
    order = {name: rank for rank, name in enumerate(_local_order(func))}  # type: ignore[arg-type]
    shown: dict[int, tuple[str, ...]] = {}
    for node in _statements(func.body):  # type: ignore[attr-defined]
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            shown[node.lineno] = (node.targets[0].id,)
        elif _list_call(node) is not None:
            read = sorted({n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in order},
                          key=order.__getitem__)  # a name that is no local (`len`) is never in the state
            shown[node.lineno] = tuple(read)
    return shown


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of `body` and of the `if`/`while` blocks in it, in source order: every statement of a
    program the tracer accepts (it refuses any other compound statement, and `else`). Walking statements only
    is what makes `_shown_names` cheap; the statements sharing a line are in one block, so the last one of a
    line is the same as in a breadth-first walk of the whole tree."""
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.While)):
            yield from _statements(node.body)


def pick_shown(names: Sequence[str]) -> tuple[str, ...]:
    """The variables a trace line prints among those it may show and that are set: all of them when there is one,
    else those whose name holds `lst` (`lst_x.append(a)` prints lst_x, `lst_x.append(len(lst_y))` both lists)."""
    return tuple(names if len(names) <= 1 else [name for name in names if "lst" in name])


def _render_state(names: Sequence[str], values: Sequence[Any]) -> str:
    """The part of a trace line after `L<line>,`: `name:value` pairs joined by commas (none: empty)."""
    return ",".join(f"{name}:{render_value(value)}" for name, value in zip(names, values, strict=True))


def _local_order(func: ast.FunctionDef) -> tuple[str, ...]:
    """The function's local variables in CPython's order (its frame's `f_locals` order, which L0-Bench prints)."""
    code = compile(ast.Module(body=[func], type_ignores=[]), "<l0-program>", "exec")
    inner = next(const for const in code.co_consts if isinstance(const, type(code)))
    return inner.co_varnames


def render_value(value: object) -> str:
    """A value as trace lines show it: `str` with every space removed (`[1, 2]` -> `[1,2]`)."""
    return str(value).replace(" ", "")


def _state_call(line: int, names: tuple[str, ...]) -> str:
    """The source of the call that records the trace line of a statement at `line` showing `names`."""
    if not names:
        return f"{_EVENT}({f'L{line},'!r})"
    prefixes = [f"L{line},{names[0]}:", *(f",{name}:" for name in names[1:])]
    return f"{_STATE}({', '.join(f'{prefix!r}, {name}' for prefix, name in zip(prefixes, names, strict=True))})"


def _list_call(node: ast.stmt) -> str | None:
    """The list name of a `<name>.append(...)` / `<name>.pop(...)` statement, else None."""
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return None
    func = node.value.func
    if isinstance(func, ast.Attribute) and func.attr in LIST_METHODS and isinstance(func.value, ast.Name):
        return func.value.id
    return None


def _is_length_call(node: ast.expr) -> bool:
    """Whether `node` is `len(<one expression>)`, the one call L0-Bench's words can write inside an expression."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == LENGTH
            and len(node.args) == 1 and not node.keywords and not isinstance(node.args[0], ast.Starred))


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
        wrong = [op for op in node.ops if not isinstance(op, COMPARISONS)]
        problem = type(wrong[0]).__name__ if wrong else None
        children = [node.left, *node.comparators]
    elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        children = [node.slice]
    elif _is_length_call(node):
        children = [node.args[0]]  # type: ignore[attr-defined]
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


def _plan_block(body: list[ast.stmt], shown: Mapping[int, tuple[str, ...]], plan: dict[int, list[str]]) -> None:
    """Check `body` (in statement order: the first problem is the one reported) and add to `plan`, per line, the
    source of the calls `_insert_block` puts in, in the order it puts them in."""
    for node in body:
        line = node.lineno
        if isinstance(node, ast.Assign):
            if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
                raise ProgramError(f"line {line}: only `<name> = <expression>` assignments are supported")
            _check_expr(node.value, line)
            plan.setdefault(line, []).append(_state_call(line, pick_shown(shown[line])))
        elif _list_call(node) is not None:
            _check_list_call(node, line)
            plan.setdefault(line, []).append(_state_call(line, pick_shown(shown[line])))
        elif isinstance(node, (ast.If, ast.While)) and not node.orelse:
            _check_expr(node.test, line)
            # recorded once the test has been evaluated: for a `while`, once per evaluation
            plan.setdefault(line, []).append(f"{_TEST}({f'L{line},'!r}, 0)")
            _plan_block(node.body, shown, plan)
        elif isinstance(node, ast.Return):
            if node.value is not None:
                _check_expr(node.value, line)
            plan.setdefault(line, []).append(_state_call(line, ()))
        else:
            raise ProgramError(f"line {line}: unsupported statement `{type(node).__name__}`")


def _parse_plan(plan: Mapping[int, list[str]]) -> dict[int, Iterator[ast.stmt]]:
    """The planned calls as statements, per line. They are parsed together from a text that writes each on its
    statement's line, so the parser gives them that line number (as it does for the program's own nodes, which
    keep theirs): building the nodes one by one in Python took most of the time it takes to trace a program."""
    text = "\n".join("; ".join(plan.get(line, ())) for line in range(1, max(plan, default=0) + 1))
    calls: dict[int, list[ast.stmt]] = {}
    for stmt in ast.parse(text).body:
        calls.setdefault(stmt.lineno, []).append(stmt)
    return {line: iter(stmts) for line, stmts in calls.items()}


def _insert_block(body: list[ast.stmt], calls: Mapping[int, Iterator[ast.stmt]]) -> list[ast.stmt]:
    """`body` (checked by `_plan_block`) with its planned calls: after an assignment or `.append`/`.pop`, around
    an `if`/`while` test, before a `return`."""
    out: list[ast.stmt] = []
    for node in body:
        call = next(calls[node.lineno])
        if isinstance(node, (ast.If, ast.While)):
            test = call.value  # type: ignore[attr-defined]
            test.args[1] = node.test
            node.test = test
            node.body = _insert_block(node.body, calls)
            out.append(node)
        elif isinstance(node, ast.Return):
            out += [call, node]
        else:
            out += [node, call]
    return out


def parse_program(source: str) -> tuple[ast.Module, list[str], dict[int, tuple[str, ...]]]:
    """Parse and check an L0 program; returns the instrumented module, the parameter names in order and the
    variables each line's trace shows (`_shown_names`)."""
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
    try:
        shown = _shown_names(tree)
    except SyntaxError as exc:
        raise ProgramError(f"line {exc.lineno}: {exc.msg}") from None
    plan: dict[int, list[str]] = {}
    _plan_block(func.body, shown, plan)
    func.body = _insert_block(func.body, _parse_plan(plan))
    return tree, [a.arg for a in args.args], shown


class _Recorder:
    """Collects trace lines for one run and stops the run once `max_steps` lines are recorded."""

    def __init__(self, max_steps: int) -> None:
        self.lines: list[str] = []
        self.max_steps = max_steps

    def event(self, text: str) -> None:
        """A trace line that shows no variable."""
        if len(self.lines) >= self.max_steps:
            raise _StepLimit
        self.lines.append(text)

    def state(self, prefix: str, value: Any, *more: Any) -> None:
        """A trace line showing variables: `prefix` + the value, then each further (prefix, value) pair."""
        if len(self.lines) >= self.max_steps:
            raise _StepLimit
        text = prefix + render_value(value)
        for index in range(0, len(more), 2):
            text += more[index] + render_value(more[index + 1])
        self.lines.append(text)

    def test(self, text: str, condition: Any) -> Any:
        self.event(text)
        return condition


class TracedProgram:
    """An L0 program compiled once with its trace calls, run on any number of inputs."""

    def __init__(self, source: str) -> None:
        tree, self.params, self._shown = parse_program(source)
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
        namespace: dict[str, Any] = {"__builtins__": {LENGTH: len}, _EVENT: recorder.event, _STATE: recorder.state,
                                     _TEST: recorder.test}
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
        state = frame_tb.tb_frame.f_locals
        names = pick_shown([name for name in self._shown.get(line, ()) if name in state])
        return f"L{line}," + _render_state(names, [state[name] for name in names])


def trace_program(source: str, inputs: Mapping[str, Any], max_steps: int, step_rule: str = "exact") -> Trace | None:
    """One-shot convenience: compile `source` and trace it on `inputs`."""
    return TracedProgram(source).run(inputs, max_steps, step_rule)
