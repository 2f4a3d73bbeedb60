"""Random L0 programs from the grammar in `grammar.py`, and random inputs for them (seeded, deterministic).

Every draw goes through one `random.Random`, using only `random()`, `choice()` and `randrange()`, whose streams
are identical on CPython 3.10-3.13; nothing iterates over a set or dict of strings, so hash randomisation
cannot change the output.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from levante_tasks.l0.config import OPERATIONS, GenConfig
from levante_tasks.l0.grammar import BOOL_INPUTS, BOOL_LOCALS, INT_INPUTS, INT_LOCALS, LIST_INPUTS

INDENT = "\t"
_Draw = Callable[[int, "_Scope", list[str]], None]  # a statement's draw method: (depth, scope, enclosing loops)


class _TooLong(Exception):
    """The program passed max_code_lines while being drawn: it would be rejected, so stop drawing."""


@dataclass
class _Scope:
    """Variables defined on every path to the current point, in definition order."""

    ints: list[str] = field(default_factory=list)
    bools: list[str] = field(default_factory=list)
    lists: list[str] = field(default_factory=list)

    def copy(self) -> _Scope:
        return _Scope(list(self.ints), list(self.bools), list(self.lists))

    @staticmethod
    def define(names: list[str], name: str) -> None:
        if name not in names:
            names.append(name)


@dataclass(frozen=True)
class DrawnProgram:
    """A program's source and its parameters (only those the body reads), in signature order."""

    source: str
    params: tuple[str, ...]
    num_lines: int
    max_depth_used: int  # deepest block nesting (0: no if/while)


def kind_of(param: str) -> str:
    """`list`, `bool` or `int`, from the parameter's name."""
    return "list" if param.startswith("lst_") else "bool" if param.startswith("cond_") else "int"


def draw_inputs(params: Sequence[str], config: GenConfig, rng: random.Random) -> dict[str, object]:
    """Random values for `params`: ints 0..max_num-1, lists of min..max_list_len such ints, bools."""
    values: dict[str, object] = {}
    for name in params:
        kind = kind_of(name)
        if kind == "list":
            length = rng.randrange(config.min_list_len, config.max_list_len + 1)
            values[name] = [rng.randrange(config.max_num) for _ in range(length)]
        elif kind == "bool":
            values[name] = rng.random() < 0.5
        else:
            values[name] = rng.randrange(config.max_num)
    return values


class ProgramGenerator:
    """Draws one program per `draw()` call from a shared random stream."""

    def __init__(self, config: GenConfig, rng: random.Random) -> None:
        self.config = config
        self.rng = rng
        self.lines: list[tuple[int, str]] = []
        self.max_depth = 0
        self.reads: set[str] = set()  # names the body reads: the parameters worth keeping
        self._weights: dict[tuple[bool, bool, bool], tuple[list[tuple[_Draw, float]], float]] = {}

    def draw(self) -> DrawnProgram | None:
        """A program, or None when it grew past max_code_lines while being drawn."""
        cfg = self.config
        ints = self._sample(INT_INPUTS, cfg.int_inputs)
        lists = self._sample(LIST_INPUTS, cfg.list_inputs)
        bools = self._sample(BOOL_INPUTS, cfg.bool_inputs)
        self.lines, self.max_depth, self.reads = [], 0, set()
        try:
            self._block(0, _Scope(list(ints), list(bools), list(lists)), [], int(cfg.min_code_lines * 0.4) + 1)
        except _TooLong:
            return None
        body = "".join(f"{INDENT * (depth + 1)}{text}\n" for depth, text in self.lines)
        params = tuple(p for p in (*ints, *lists, *bools) if p in self.reads)
        source = f"def function({', '.join(params)}):\n{body}{INDENT}return"
        return DrawnProgram(source, params, len(self.lines) + 2, self.max_depth)

    def _sample(self, names: Sequence[str], count_range: tuple[int, int]) -> list[str]:
        pool = list(names)
        count = self.rng.randrange(count_range[0], count_range[1] + 1)
        return [pool.pop(self.rng.randrange(len(pool))) for _ in range(count)]

    def _emit(self, depth: int, text: str) -> None:
        self.lines.append((depth, text))
        self.max_depth = max(self.max_depth, depth)
        if len(self.lines) + 2 >= self.config.max_code_lines:
            raise _TooLong

    def _block(self, depth: int, scope: _Scope, loops: list[str], minimum: int) -> None:
        count = 0
        while count < minimum or self.rng.random() < self.config.continue_probability:
            self._statement(depth, scope, loops)
            count += 1

    def _statement(self, depth: int, scope: _Scope, loops: list[str]) -> None:
        cfg = self.config
        feasible = (depth < cfg.max_scope_depth and bool(scope.bools),
                    depth < cfg.max_scope_depth and len(loops) < len(BOOL_INPUTS + BOOL_LOCALS), bool(scope.lists))
        if feasible not in self._weights:
            self._weights[feasible] = self._weighted(*feasible)
        weights, total = self._weights[feasible]
        point = self.rng.random() * total
        chosen = weights[-1][0]
        for draw, weight in weights:
            if point < weight:
                chosen = draw
                break
            point -= weight
        chosen(depth, scope, loops)

    def _weighted(self, if_block: bool, while_block: bool, lists: bool) -> tuple[list[tuple[_Draw, float]], float]:
        """The statements `_statement` may draw when an `if` / a `while` / a list statement is feasible, with their
        weights, and the weights' sum (kept per case: `_statement` runs for every line drawn)."""
        feasible = {"num_assignment": True, "bool_assignment": True, "if_block": if_block, "while_block": while_block,
                    "append": lists, "pop": lists}
        weights = [(getattr(self, f"_{op}"), self.config.operations[op]) for op in OPERATIONS
                   if feasible[op] and self.config.operations[op] > 0]
        return weights, sum(w for _, w in weights)

    # --- statements -------------------------------------------------------------------------------------------
    def _num_assignment(self, depth: int, scope: _Scope, loops: list[str]) -> None:
        target = self.rng.choice(INT_INPUTS + INT_LOCALS)
        self._emit(depth, f"{target} = {self._expr(scope)}")
        scope.define(scope.ints, target)

    def _bool_assignment(self, depth: int, scope: _Scope, loops: list[str]) -> None:
        target = self.rng.choice(BOOL_INPUTS + BOOL_LOCALS)
        op = self.rng.choice(("==", "!="))
        operand, number = self._operand(scope), self._number()
        expr = f"{operand} {op} {number}" if self.rng.random() < 0.5 else f"{number} {op} {operand}"
        self._emit(depth, f"{target} = {expr}")
        scope.define(scope.bools, target)

    def _if_block(self, depth: int, scope: _Scope, loops: list[str]) -> None:
        self._emit(depth, f"if {self._read(scope.bools)}:")
        self._block(depth + 1, scope.copy(), loops, 1)  # definitions inside may not happen: not kept

    def _while_block(self, depth: int, scope: _Scope, loops: list[str]) -> None:
        if self.rng.random() < self.config.while_true_probability:
            self._emit(depth, "while True:")
            self._block(depth + 1, scope.copy(), loops, 1)
            return
        cond = self.rng.choice([c for c in BOOL_INPUTS + BOOL_LOCALS if c not in loops])
        bound = self.rng.choice(range(4, self.config.max_while_loop, 2))
        counter = f"cnter_{depth}"
        self._emit(depth, f"{counter} = 0")
        self._emit(depth, f"{cond} = {counter} != {bound}")
        self._emit(depth, f"while {cond}:")
        scope.define(scope.bools, cond)
        self.reads.add(cond)
        self._block(depth + 1, scope, [*loops, cond], 1)  # the body runs at least once: its definitions hold
        self._emit(depth + 1, f"{counter} = {counter} + 2")
        self._emit(depth + 1, f"{cond} = {counter} != {bound}")

    def _append(self, depth: int, scope: _Scope, loops: list[str]) -> None:
        self._emit(depth, f"{self._read(scope.lists)}.append({self._operand(scope)})")

    def _pop(self, depth: int, scope: _Scope, loops: list[str]) -> None:
        self._emit(depth, f"{self._read(scope.lists)}.pop()")

    # --- expressions ------------------------------------------------------------------------------------------
    def _read(self, names: list[str]) -> str:
        name = self.rng.choice(names)
        self.reads.add(name)
        return name

    def _number(self) -> str:
        return str(self.rng.randrange(self.config.max_num))

    def _operand(self, scope: _Scope) -> str:
        if scope.ints and self.rng.random() < 0.5:
            return self._read(scope.ints)
        return self._number()

    def _expr(self, scope: _Scope) -> str:
        form = self.rng.randrange(3 if scope.lists else 2)
        if form == 0:
            return self._operand(scope)
        if form == 1:
            operand, number = self._operand(scope), self._number()
            return self.rng.choice(
                (f"{operand} + {number}", f"{number} + {operand}", f"{operand} - {number}", f"{number} - {operand}")
            )
        index_count = max(1, self.config.max_list_len // 2)
        index = self._read(scope.ints) if scope.ints and self.rng.random() < 0.5 else str(
            self.rng.randrange(index_count))
        return f"{self._read(scope.lists)}[{index}]"
