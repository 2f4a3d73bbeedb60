"""L0-Bench's own program sampler (profile `upstream`), rewritten to draw the same programs from the same seeds.

L0-Bench expands a BNF grammar recursively with Python's global `random` (and numpy's legacy generator for one
5% draw). Its rules are reproduced here, including the behaviours the default generator (`generator.py`)
deliberately does not have (docs/l0.md explains each):

- alternatives are tried in a shuffled order and a failed alternative falls through to the next; the shuffle
  permutes the rule's list in place, so the order carries over to the next expansion of that rule;
- `<while_block_nh>` (`while True:`) is removed from its rule the first time and put back with probability 5%;
- a variable is registered as defined as soon as its assignment is expanded, even inside an `if` body or an
  alternative that later fails, so later statements may read variables that are unset at run time;
- a loop pushes its condition onto a stack when its condition line is drawn and pops the stack whenever a
  `<while_block>` alternative succeeds; a nested loop that fails leaves its entry behind, and the enclosing loop's
  closing condition line then reads the stale entry (and is usually refused).

Standard library only: numpy's legacy generator is the same Mersenne Twister seeded by `init_genrand`, and its
`random()` forms doubles as Python's does, so it is rebuilt with `random.Random.setstate`.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

BASE_RULES = """\
<program> ::= <min_stmt_lst> <stmt_lst>
<stmt_lst> ::= <stmt> | <stmt> <stmt_lst>
<min_stmt_lst> ::= <stmt> <stmt> <stmt>
<stmt> ::= <assignment> | <if_block> | <while_block> | <list_op>
<assignment> ::= <num_assignment> | <bool_assignment>
<num_assignment> ::= <var> = <expr>
<bool_assignment> ::= <bool_var> = <bool_expr>
<if_block> ::= if <bool_var> : NL <stmt_lst>
<init_cnter> ::= cnter = 0 NL
<increment_cnter> ::= cnter = cnter + <cnter_increment_number> NL
<while_cond,1> ::= <while_cond_var,1> = cnter != <while_cond_number> NL
<while_block> ::= <while_block_nh> | <init_cnter> <while_cond,1> while <while_cond_var,2> : NL \
<stmt_lst> <increment_cnter> <while_cond,2>
<while_block_nh> ::= while True : NL <stmt_lst>
<list_op> ::= <list_var> .append( <operand> ) | <list_var> .pop()
<operand> ::= <number> | <var>
<list_index> ::= <list_index_number> | <var>
<expr> ::= <operand> | <arithm_expr> | <list_var> [ <list_index> ]
<arithm_expr> ::= <operand> + <number> | <number> + <operand> | <operand> - <number> | <number> - <operand>
<comp_op> ::= == | !=
<bool_expr> ::= <operand> <comp_op> <number> | <number> <comp_op> <operand>
"""  # L0-Bench grammar_v0 in this module's notation: NL is a line break, quotes dropped
GRAMMAR_VERSIONS = ("grammar_v0",)
# Tokens emitted as they are (L0-Bench's literal list; `cnter` becomes `cnter_<indent>`).
LITERALS = frozenset(["if", "while", "True", ".append(", ".pop()", "len(", ")", "cnter", ":", "=", "+", "-", ">",
                      "<", "0", "\n", "[", "]", "==", "!="])
STATEMENT_TABS = ("<num_assignment>", "<bool_assignment>", "<increment_cnter>", "<list_op>", "<if_block>")
BLOCKS = ("<if_block>", "<while_block>", "<while_block_nh>")
INDENTED_PARTS = ("<stmt_lst>", "<increment_cnter>", "<while_cond,2>")
WHILE_TRUE = ["<while_block_nh>"]
WHILE_TRUE_PROBABILITY = 0.05


class UpstreamRuleError(ValueError):
    """An `overwritten_grammar` / `overwritten_terminal` setting is not `<sym> ::= a | b` rules joined by `@@`."""


def default_terminals(max_num: int, max_while_loop: int, max_list_len: int) -> dict[str, list[str]]:
    """L0-Bench's terminal lists (names of inputs and locals, numbers), before any `overwritten_terminal`."""
    return {
        "<in_var>": ["x", "y", "z", "u", "v", "w"],
        "<in_bool_var>": ["cond_x", "cond_y", "cond_z"],
        "<var>": ["i", "j", "k", "a", "b", "c", "m", "n"],
        "<bool_var>": ["cond_a", "cond_b", "cond_c", "cond_d", "cond_e"],
        "<list_var>": ["lst_x", "lst_y", "lst_z", "lst_u", "lst_v", "lst_w"],
        "<number>": [str(x) for x in range(max_num)],
        "<while_cond_number>": [str(x) for x in range(4, max_while_loop, 2)],
        "<list_index_number>": [str(x) for x in range(max_list_len // 2)],
        "<cnter_increment_number>": ["2"],
        "<bool_value>": ["False", "True"],
    }


def _override_items(text: str, key: str) -> list[tuple[str, list[str]]]:
    rules = []
    for number, chunk in enumerate(text.split("@@"), start=1):
        if chunk.count("::=") != 1:
            raise UpstreamRuleError(f"{key}: rule {number} is not `<symbol> ::= alternatives`: {chunk.strip()!r}")
        symbol, alternatives = chunk.split("::=")
        if not symbol.strip() or not alternatives.strip():
            raise UpstreamRuleError(f"{key}: rule {number} has an empty side: {chunk.strip()!r}")
        rules.append((symbol.strip(), alternatives.split("|")))
    return rules


def parse_overrides(grammar: str, terminal: str) -> tuple[list[tuple[str, list[list[str]]]],
                                                            list[tuple[str, list[str]]]]:
    """The rule overrides (symbol, alternatives as symbol lists) and terminal overrides (symbol, names)."""
    rules = []
    for symbol, alternatives in (_override_items(grammar, "overwritten_grammar") if grammar.strip() else []):
        parsed = [[part.replace('"', "").replace("\\n", "\n") for part in alt.split()] for alt in alternatives]
        if any(not alt for alt in parsed):
            raise UpstreamRuleError(f"overwritten_grammar: {symbol} has an empty alternative")
        rules.append((symbol, parsed))
    terminals = []
    for symbol, alternatives in (_override_items(terminal, "overwritten_terminal") if terminal.strip() else []):
        names = [alt.split()[0] if alt.split() else "" for alt in alternatives]
        if not all(names):
            raise UpstreamRuleError(f"overwritten_terminal: {symbol} has an empty alternative")
        terminals.append((symbol, names))
    return rules, terminals


def build_rules(min_code_lines: int, grammar_override: str) -> dict[str, list[list[str]]]:
    """The production rules: grammar_v0, a minimum block of int(0.4 x min_code_lines) statements, overrides."""
    rules: dict[str, list[list[str]]] = {}
    for line in BASE_RULES.splitlines():
        symbol, alternatives = line.split("::=")
        rules[symbol.strip()] = [["\n" if p == "NL" else p for p in alt.split()] for alt in alternatives.split("|")]
    rules["<min_stmt_lst>"] = [["<stmt>"] * int(min_code_lines * 0.4)]
    for symbol, alternatives in parse_overrides(grammar_override, "")[0]:
        rules[symbol] = alternatives
    return rules


def build_terminals(max_num: int, max_while_loop: int, max_list_len: int,
                    terminal_override: str) -> dict[str, list[str]]:
    """The terminal lists with `overwritten_terminal` applied."""
    terminals = default_terminals(max_num, max_while_loop, max_list_len)
    for symbol, names in parse_overrides("", terminal_override)[1]:
        terminals[symbol] = names
    return terminals


def numpy_legacy_stream(seed: int) -> random.Random:
    """A generator whose `random()` equals numpy's `np.random.seed(seed); np.random.random()` sequence."""
    state = [seed & 0xFFFFFFFF]
    for index in range(1, 624):
        previous = state[-1]
        state.append((1812433253 * (previous ^ (previous >> 30)) + index) & 0xFFFFFFFF)
    stream = random.Random()
    stream.setstate((3, (*state, 624), None))
    return stream


@dataclass
class _State:
    """What L0-Bench's sampler remembers while drawing one program."""

    ints: list[str] = field(default_factory=list)
    bools: list[str] = field(default_factory=list)
    lists: list[str] = field(default_factory=list)
    loops: list[list[str]] = field(default_factory=list)  # per open loop: [condition variable, condition line]
    max_depth: int = 0
    max_indent: int = 0

    @staticmethod
    def register(names: list[str], name: str) -> None:
        if name not in names:
            names.append(name)


@dataclass(frozen=True)
class UpstreamProgram:
    """One drawn program with its input (only parameters the body uses, in signature order)."""

    source: str
    inputs: dict[str, object]
    num_inputs: int  # inputs drawn before unused ones were dropped (L0-Bench's `num_inputs`)
    max_expand_depth: int
    max_scope_depth: int


class UpstreamSampler:
    """L0-Bench's program sampler for one worker process (its own seed), drawing programs one by one."""

    def __init__(self, settings: Mapping[str, object], seed: int) -> None:
        self.max_expansion_depth = int(settings["max_expansion_depth"])  # type: ignore[arg-type]
        self.max_scope_depth = int(settings["max_scope_depth"])  # type: ignore[arg-type]
        self.min_list_len = int(settings["min_list_len"])  # type: ignore[arg-type]
        self.max_list_len = int(settings["max_list_len"])  # type: ignore[arg-type]
        self.rules = build_rules(int(settings["min_code_lines"]), str(settings["overwritten_grammar"]))  # type: ignore[arg-type]
        self.terminals = build_terminals(int(settings["max_num"]), int(settings["max_while_loop"]),  # type: ignore[arg-type]
                                         int(settings["max_list_len"]), str(settings["overwritten_terminal"]))  # type: ignore[arg-type]
        self.rng = random.Random(seed)
        self.np_rng = numpy_legacy_stream(seed)
        self.state = _State()

    def draw(self) -> UpstreamProgram:
        """The next program and its input, as L0-Bench's worker draws them (unused parameters dropped)."""
        rng, terms = self.rng, self.terminals
        self.state = _State()
        num_ints = rng.randint(1, len(terms["<in_var>"]))
        num_lists = rng.randint(2, len(terms["<list_var>"]))
        num_bools = rng.randint(1, len(terms["<in_bool_var>"]))
        ints = rng.sample(terms["<in_var>"], k=num_ints)
        bools = rng.sample(terms["<in_bool_var>"], k=num_bools)
        lists = rng.sample(terms["<list_var>"], k=num_lists)
        for names, drawn in ((self.state.ints, ints), (self.state.lists, lists), (self.state.bools, bools)):
            for name in drawn:
                _State.register(names, name)
        inputs: dict[str, object] = {}
        for name in ints:
            inputs[name] = int(rng.choice(terms["<number>"]))
        for name in lists:
            length = rng.randint(self.min_list_len, self.max_list_len)
            inputs[name] = [int(rng.choice(terms["<number>"])) for _ in range(length)]
        for name in bools:
            inputs[name] = rng.choice([True, False])
        body = None
        while not body:
            body = self._expand("<program>", None, 0, 0, 0)
        source = _drop_unused(_layout(list(inputs), body))
        used = source.split("\n", 1)[0][len("def function("):-len("):")]
        kept = [p.strip() for p in used.split(",") if p.strip()]
        return UpstreamProgram(source, {k: inputs[k] for k in inputs if k in kept}, num_ints + num_lists + num_bools,
                               self.state.max_depth, self.state.max_indent)

    def _loop_condition_variable(self, opening: bool) -> str | None:
        loops = self.state.loops
        if not opening:
            return loops[-1][0] if loops else None
        taken = {name for entry in loops for name in entry if "=" not in name}
        free = sorted(set(self.terminals["<in_bool_var>"] + self.terminals["<bool_var>"]) - taken)
        if not free:
            return None
        name = self.rng.choice(free)
        loops.append([name])
        return name

    def _closing_condition(self, indent: int) -> str | None:
        loops = self.state.loops
        if not loops:
            return None
        line = loops[-1][-1]
        counter_indent = int(line[line.index("cnter_") + 6 : line.index("!=")].strip())
        return "\t" * indent + line if counter_indent + 1 == indent else None

    def _terminal(self, symbol: str, parent: str | None, position: int, indent: int) -> tuple[bool, str | None]:
        """(True, text) when `symbol` is a terminal or a context-sensitive symbol; (False, None) otherwise."""
        rng, state, terms = self.rng, self.state, self.terminals
        if symbol == "<number>" and parent == "<increment_cnter>":
            return True, rng.choice(terms["<cnter_increment_number>"])
        if symbol == "<var>":
            if parent == "<num_assignment>" and position == 0:
                return True, rng.choice(terms["<in_var>"] + terms["<var>"])
            return True, rng.choice(state.ints)
        if symbol == "<bool_var>":
            if parent == "<bool_assignment>" and position == 0:
                return True, rng.choice(terms["<in_bool_var>"] + terms["<bool_var>"])
            return True, rng.choice(state.bools)
        if symbol == "<list_var>":
            return True, rng.choice(state.lists)
        if symbol.startswith("<while_cond_var"):
            if ",1>" in symbol:
                return True, self._loop_condition_variable(opening=True)
            return True, self._loop_condition_variable(opening=False) if ",2>" in symbol else None
        if symbol in terms:
            return True, rng.choice(terms[symbol])
        if symbol in LITERALS:
            if "cnter" in symbol:
                level = indent - 1 if parent == "<increment_cnter>" else indent
                symbol = symbol.replace("cnter", f"cnter_{level}")
            return True, symbol
        if symbol == "<while_cond,2>":
            return True, self._closing_condition(indent)
        return False, None

    def _expand(self, symbol: str, parent: str | None, position: int, depth: int, indent: int) -> str | None:
        if depth > self.max_expansion_depth:
            return None
        state = self.state
        state.max_depth = max(depth, state.max_depth)
        state.max_indent = max(indent, state.max_indent)
        handled, text = self._terminal(symbol, parent, position, indent)
        if handled:
            return text
        if symbol not in self.rules:
            raise UpstreamRuleError(f"symbol {symbol} has no production rule")
        alternatives = self.rules[symbol]
        self.rng.shuffle(alternatives)  # in place: the next expansion of this rule starts from this order
        if WHILE_TRUE in alternatives:
            alternatives.remove(WHILE_TRUE)
            if self.np_rng.random() < WHILE_TRUE_PROBABILITY:
                alternatives.append(WHILE_TRUE)
        for alternative in alternatives:
            parts = self._expand_parts(symbol, alternative, depth, indent)
            if None in parts or all(not p.strip() for p in parts):  # type: ignore[union-attr]
                continue
            if symbol == "<while_cond,1>":
                state.loops[-1].append(" ".join(parts))  # type: ignore[arg-type]
            if symbol == "<while_block>":
                state.loops.pop()
            kept = [p for p in parts if p]  # type: ignore[misc]
            if symbol in ("<num_assignment>", "<bool_assignment>"):
                target = next(p for p in kept if p.strip())
                _State.register(state.ints if symbol == "<num_assignment>" else state.bools, target)
            text = " ".join(kept)
            return text + "\n" if symbol == "<stmt>" else text
        return None

    def _expand_parts(self, symbol: str, alternative: Sequence[str], depth: int, indent: int) -> list[str | None]:
        parts: list[str | None] = []
        for position, part in enumerate(alternative):
            part_indent = indent + 1 if symbol in BLOCKS and part in INDENTED_PARTS else indent
            if part_indent > self.max_scope_depth:
                parts.append(None)
                break
            tabs = ((symbol in STATEMENT_TABS and position == 0) or (symbol == "<while_block>" and position < 3)
                    or (symbol == "<while_block_nh>" and position == 0))
            if tabs:
                parts.append("\t" * indent)
            parts.append(self._expand(part, symbol, position, depth + 1, part_indent))
        return parts


_SPACING = ((" .pop", ".pop"), (" .append", ".append"), (" :", ":"), ("\n ", "\n"), (" [ ", "["), (" ]", "]"),
            ("( ", "("), (" )", ")"), ("\n ", "\n"), ("\t ", "\t"), ("  cnter", "cnter"))


def _layout(params: Sequence[str], body: str) -> str:
    """The expanded token string as L0-Bench lays it out: one statement per line under `def function(...)`."""
    text = body.replace("\n", "\n\t")
    for old, new in _SPACING:
        text = text.replace(old, new)
    lines = "\n".join(line for line in text.split("\n") if line.strip())
    return f"def function({', '.join(params).strip()}):\n\t{lines}\n\treturn"


def _is_used(param: str, code: str) -> bool:
    """L0-Bench's test of whether the body reads a parameter (a substring test, not a parse)."""
    if "lst" in param:
        return param in code
    return f" {param}" in code or f"({param}" in code or f"[{param}" in code


def _drop_unused(source: str) -> str:
    header, _, code = source.partition("\n")
    params = [p.strip() for p in header[len("def function("):-len("):")].split(",")]
    return f"def function({', '.join(p for p in params if _is_used(p, code))}):\n{code}"
