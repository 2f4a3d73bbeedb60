"""Profile `upstream`: a sampler that draws the programs L0-Bench draws from the same seeds (our own design).

It is written from L0-Bench's documented grammar and from the programs its generator wrote (shared/l0-upstream,
compared byte for byte by tests/test_l0_upstream.py); docs/l0.md lists where it differs from our default
generator. Equal programs need equal random draws in equal order, so the behaviours that decide the draws are
reproduced, each as data walked by one expander:

- a rule's alternatives are shuffled in place before each expansion (the order carries over to the rule's next
  expansion) and tried in turn until one expands; every child of an alternative is expanded, even after one
  has failed, because each expansion draws from the stream;
- whenever its rule expands with the bare `while True:` alternative still in it, that alternative is taken out
  and put back, last, with probability 5% (a second stream, numpy's legacy generator, decides), so it soon
  leaves the rule for the rest of the worker's programs;
- an assignment's target becomes readable as soon as the assignment expands, even inside an `if` body or inside
  an alternative that fails later, so a program may read a variable that is unset on the path it runs;
- each counter loop keeps a frame (its condition variable, then its condition line) on a stack; any expanded
  `<while_block>` removes the top frame, a counter loop that fails halfway leaves its frame, and the loop
  around it then tries to close with the stale frame's condition line, which is refused (its counter belongs
  to the deeper loop), so the enclosing loop is not drawn; stale frames also keep their variables busy.

Standard library only: numpy's legacy generator is the same Mersenne Twister seeded by `init_genrand`, and its
`random()` forms doubles as Python's does, so it is rebuilt with `random.Random.setstate`.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

# L0-Bench's grammar_v0 (src/generators/grammar.py at a722bac; Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES,
# Apache-2.0: levante_tasks/l0/configs/upstream/LICENSE and NOTICE.md), transcribed into this module's notation.
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

# Words that stand for themselves, grouped by role; an override may use any of them, not only the grammar's.
KEYWORDS = ("if", "while", "True")
CALL_PARTS = (".append(", ".pop()", "len(", ")")
OPERATORS = ("=", "+", "-", ">", "<", "==", "!=")
DELIMITERS = (":", "[", "]", "\n", "0")
COUNTER = "cnter"  # the loop counter word; written `cnter_<level>` with the level of the loop it counts
WORDS = frozenset((*KEYWORDS, *CALL_PARTS, *OPERATORS, *DELIMITERS, COUNTER))

# Name pools, by the grammar symbol that draws from them (overrides address them by these symbols).
PARAMETER_NAMES = {"<in_var>": "x y z u v w", "<in_bool_var>": "cond_x cond_y cond_z",
                   "<list_var>": "lst_x lst_y lst_z lst_u lst_v lst_w"}
LOCAL_NAMES = {"<var>": "i j k a b c m n", "<bool_var>": "cond_a cond_b cond_c cond_d cond_e"}

# Layout of the grammar's rules: how many leading children of a rule start a line at the rule's level, and which
# children of a block sit one level deeper (its body and the counter loop's two closing lines).
LINE_STARTS = {"<num_assignment>": 1, "<bool_assignment>": 1, "<increment_cnter>": 1, "<list_op>": 1,
               "<if_block>": 1, "<while_block_nh>": 1, "<while_block>": 3}  # counter loop: init, condition, while
BLOCK_BODY = frozenset({"<stmt_lst>", "<increment_cnter>", "<while_cond,2>"})
BLOCKS = frozenset({"<if_block>", "<while_block>", "<while_block_nh>"})
STATEMENT = "<stmt>"  # its expansion ends a line
# Assignment rules: the symbol their first child is and the pools that child (the target) is drawn from; every
# other occurrence of that symbol reads a name already readable.
ASSIGNMENT_TARGETS = {"<num_assignment>": ("<var>", ("<in_var>", "<var>")),
                      "<bool_assignment>": ("<bool_var>", ("<in_bool_var>", "<bool_var>"))}
READ_SYMBOLS = ("<var>", "<bool_var>", "<list_var>")
COUNTER_STEP = ("<increment_cnter>", "<number>", "<cnter_increment_number>")  # (rule, child, pool it draws from)
TARGET_OR_STEP_SYMBOLS = frozenset({COUNTER_STEP[1], *(target for target, _ in ASSIGNMENT_TARGETS.values())})
# Alternatives taken out of their rule at each expansion that finds them there and put back (last) with this
# probability; once left out they are gone for the sampler's later programs.
RARE_ALTERNATIVES = {("<while_block_nh>",): 0.05}
OPEN_LOOP, READ_LOOP, CLOSE_LOOP = "<while_cond_var,1>", "<while_cond_var,2>", "<while_cond,2>"
LOOP_VARIABLE_PREFIX = "<while_cond_var"  # other symbols with this prefix never expand
RECORD_CONDITION, LOOP_RULE = "<while_cond,1>", "<while_block>"


class UpstreamRuleError(ValueError):
    """An `overwritten_grammar` / `overwritten_terminal` setting is not `<sym> ::= a | b` rules joined by `@@`."""


def default_pools(max_num: int, max_while_loop: int, max_list_len: int) -> dict[str, list[str]]:
    """Every terminal symbol's words before any `overwritten_terminal`: names, then numbers as text."""
    pools = {symbol: names.split() for symbol, names in {**PARAMETER_NAMES, **LOCAL_NAMES}.items()}
    numbers = {"<number>": range(max_num), "<while_cond_number>": range(4, max_while_loop, 2),
               "<list_index_number>": range(max_list_len // 2), "<cnter_increment_number>": range(2, 3)}
    pools.update({symbol: [str(n) for n in values] for symbol, values in numbers.items()})
    pools["<bool_value>"] = ["False", "True"]
    return pools


def _split_rules(text: str, key: str) -> Iterator[tuple[str, list[str]]]:
    """(symbol, alternative texts) for each `@@`-separated `<symbol> ::= a | b` rule of a setting."""
    for number, chunk in enumerate(text.split("@@"), start=1):
        sides = chunk.split("::=")
        if len(sides) != 2:
            raise UpstreamRuleError(f"{key}: rule {number} is not `<symbol> ::= alternatives`: {chunk.strip()!r}")
        if not sides[0].strip() or not sides[1].strip():
            raise UpstreamRuleError(f"{key}: rule {number} has an empty side: {chunk.strip()!r}")
        yield sides[0].strip(), sides[1].split("|")


def _override_word(word: str) -> str:
    """A grammar word as an override writes it: quotes are dropped and a written `\\n` is a line break."""
    return word.replace('"', "").replace("\\n", "\n")


def parse_overrides(grammar: str, terminal: str) -> tuple[list[tuple[str, list[list[str]]]],
                                                            list[tuple[str, list[str]]]]:
    """The rule overrides (symbol, alternatives as word lists) and terminal overrides (symbol, first words)."""
    rules = []
    for symbol, texts in (_split_rules(grammar, "overwritten_grammar") if grammar.strip() else ()):
        alternatives = [[_override_word(word) for word in text.split()] for text in texts]
        if not all(alternatives):
            raise UpstreamRuleError(f"overwritten_grammar: {symbol} has an empty alternative")
        rules.append((symbol, alternatives))
    pools = []
    for symbol, texts in (_split_rules(terminal, "overwritten_terminal") if terminal.strip() else ()):
        firsts = [(text.split() or [""])[0] for text in texts]
        if "" in firsts:
            raise UpstreamRuleError(f"overwritten_terminal: {symbol} has an empty alternative")
        pools.append((symbol, firsts))
    return rules, pools


def build_rules(min_code_lines: int, grammar_override: str) -> dict[str, list[tuple[str, ...]]]:
    """The production rules: grammar_v0, a minimum block of int(0.4 x min_code_lines) statements, overrides."""
    rules: dict[str, list[tuple[str, ...]]] = {}
    for line in BASE_RULES.splitlines():
        symbol, alternatives = line.split("::=")
        rules[symbol.strip()] = [tuple("\n" if word == "NL" else word for word in alternative.split())
                                 for alternative in alternatives.split("|")]
    rules["<min_stmt_lst>"] = [(STATEMENT,) * int(min_code_lines * 0.4)]
    rules.update({symbol: [tuple(alt) for alt in alts] for symbol, alts in parse_overrides(grammar_override, "")[0]})
    return rules


def build_terminals(max_num: int, max_while_loop: int, max_list_len: int,
                    terminal_override: str) -> dict[str, list[str]]:
    """The terminal pools with `overwritten_terminal` applied (an override may add a symbol of its own)."""
    pools = default_pools(max_num, max_while_loop, max_list_len)
    pools.update(parse_overrides("", terminal_override)[1])
    return pools


def check_overrides(grammar: str, terminal: str) -> None:
    """Refuse overrides L0-Bench's generator would crash on: a rule reachable from `<program>` with a word that is
    neither a symbol it can expand nor one of its own words (WORDS: `<`, `>` and `len(` are among them), or a
    `<number>` that is not an integer (input values are drawn from it)."""
    rules = build_rules(1, grammar)
    pools = {*default_pools(0, 0, 0), *(symbol for symbol, _ in parse_overrides("", terminal)[1])}
    known = {*pools, *READ_SYMBOLS, *WORDS, CLOSE_LOOP}
    seen, todo = {"<program>"}, ["<program>"]
    while todo:
        symbol = todo.pop()
        for alternative in rules[symbol]:
            for word in alternative:
                if word in rules and word not in seen:
                    seen.add(word)
                    todo.append(word)
                elif word not in rules and word not in known and not word.startswith(LOOP_VARIABLE_PREFIX):
                    text = " ".join(alternative).replace("\n", "\\n")
                    raise UpstreamRuleError(f"overwritten_grammar: {symbol} ::= {text}: `{word}` is neither a symbol "
                                            "with a rule or terminals nor a word L0-Bench's generator knows")
    for symbol, words in parse_overrides("", terminal)[1]:
        for word in words if symbol == "<number>" else ():
            try:
                int(word)
            except ValueError:
                raise UpstreamRuleError(f"overwritten_terminal: <number> ::= {word}: input values are drawn from "
                                        "<number>, so it holds integers only") from None


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
class LoopFrame:
    """One counter loop being drawn: its condition variable, then its `cond = cnter_<level> != N` line."""

    variable: str
    condition: str | None = None


_COUNTER_LEVEL = re.compile(r"cnter_(\d+)\s*!=")


@dataclass
class _Program:
    """What one program's expansion has made readable and how deep it went."""

    readable: dict[str, list[str]]  # by the symbol that reads the names: <var>, <bool_var>, <list_var>
    loops: list[LoopFrame] = field(default_factory=list)
    deepest_expansion: int = 0
    deepest_level: int = 0

    def make_readable(self, symbol: str, name: str) -> None:
        if name not in self.readable[symbol]:
            self.readable[symbol].append(name)


class _Site(NamedTuple):
    """Where a symbol is expanded: the rule it is a child of, its child number, expansion depth and block level."""

    parent: str | None
    slot: int
    depth: int
    level: int


@dataclass(frozen=True)
class UpstreamProgram:
    """One drawn program with its input (only parameters the body uses, in signature order)."""

    source: str
    inputs: dict[str, object]
    num_inputs: int  # inputs drawn before unused ones were dropped (L0-Bench's `num_inputs`)
    max_expand_depth: int
    max_scope_depth: int


# Parameter kinds: (pool symbol, fewest drawn, symbol that reads them). Counts are drawn in COUNT_ORDER, names in
# NAME_ORDER and values in VALUE_ORDER, which is also the signature's order.
PARAMETER_KINDS = {"int": ("<in_var>", 1, "<var>"), "list": ("<list_var>", 2, "<list_var>"),
                   "bool": ("<in_bool_var>", 1, "<bool_var>")}
COUNT_ORDER, NAME_ORDER, VALUE_ORDER = ("int", "list", "bool"), ("int", "bool", "list"), ("int", "list", "bool")


def kind_of_parameter(name: str) -> str:
    """A parameter's kind from its name, as L0-Bench's demonstration inputs decide it (lists first)."""
    return "list" if "lst" in name else "bool" if "cond" in name else "int"


def draw_value(kind: str, numbers: Sequence[str], min_len: int, max_len: int, rng: random.Random) -> object:
    """One input value: a number from the pool, a list of such numbers (length drawn first), or a bool."""
    if kind == "bool":
        return rng.choice([True, False])
    if kind == "list":
        return [int(rng.choice(numbers)) for _ in range(rng.randint(min_len, max_len))]
    return int(rng.choice(numbers))


class UpstreamSampler:
    """L0-Bench's program sampler for one worker process (its own seed), drawing programs one by one."""

    def __init__(self, settings: Mapping[str, object], seed: int) -> None:
        number = {key: int(settings[key]) for key in ("max_expansion_depth", "max_scope_depth",  # type: ignore[call-overload]
                                                      "min_list_len", "max_list_len", "min_code_lines",
                                                      "max_num", "max_while_loop")}
        self.depth_limit, self.level_limit = number["max_expansion_depth"], number["max_scope_depth"]
        self.list_lengths = (number["min_list_len"], number["max_list_len"])
        self.rules = build_rules(number["min_code_lines"], str(settings["overwritten_grammar"]))
        self.pools = build_terminals(number["max_num"], number["max_while_loop"], number["max_list_len"],
                                     str(settings["overwritten_terminal"]))
        self.rng = random.Random(seed)
        self.rare_rng = numpy_legacy_stream(seed)
        self.program = _Program({symbol: [] for symbol in READ_SYMBOLS})
        self._routes: dict[str, tuple[Callable[[str, _Site], object], ...]] = {}

    def _route(self, symbol: str) -> tuple[Callable[[str, _Site], object], ...]:
        """The leaf resolvers that may answer for `symbol`, in priority order (none: it expands by its rule)."""
        if symbol not in self._routes:
            owners = ((self._targets_and_steps, symbol in TARGET_OR_STEP_SYMBOLS),
                      (self._readable_name, symbol in READ_SYMBOLS),
                      (self._loop_variable, symbol.startswith(LOOP_VARIABLE_PREFIX)),
                      (self._pool_word, symbol in self.pools), (self._plain_word, symbol in WORDS),
                      (self._loop_closing, symbol == CLOSE_LOOP))
            self._routes[symbol] = tuple(resolve for resolve, owns in owners if owns)
        return self._routes[symbol]

    def draw(self) -> UpstreamProgram:
        """The next program and its input, as L0-Bench's worker draws them (unused parameters dropped)."""
        pools = self.pools
        counts = {kind: self.rng.randint(PARAMETER_KINDS[kind][1], len(pools[PARAMETER_KINDS[kind][0]]))
                  for kind in COUNT_ORDER}
        names = {kind: self.rng.sample(pools[PARAMETER_KINDS[kind][0]], k=counts[kind]) for kind in NAME_ORDER}
        self.program = _Program({PARAMETER_KINDS[kind][2]: list(names[kind]) for kind in PARAMETER_KINDS})
        drawn = {name: draw_value(kind, pools["<number>"], *self.list_lengths, self.rng)
                 for kind in VALUE_ORDER for name in names[kind]}
        body = None
        while not body:
            body = self.expand("<program>", _Site(None, 0, 0, 0))
        lines = render_body(body)
        kept = [name for name in drawn if reads_parameter(lines, name)]
        source = "\n".join([f"def function({', '.join(kept)}):", *lines])
        return UpstreamProgram(source, {name: drawn[name] for name in kept}, sum(counts.values()),
                               self.program.deepest_expansion, self.program.deepest_level)

    def expand(self, symbol: str, site: _Site) -> str | None:
        """The text `symbol` expands to at `site`, or None when it cannot expand there."""
        if site.depth > self.depth_limit:
            return None
        program = self.program
        if site.depth > program.deepest_expansion:
            program.deepest_expansion = site.depth
        if site.level > program.deepest_level:
            program.deepest_level = site.level
        routes = self._routes.get(symbol)
        for resolve in self._route(symbol) if routes is None else routes:
            leaf = resolve(symbol, site)
            if leaf is not _NOT_A_LEAF:
                return leaf  # type: ignore[return-value]
        if symbol not in self.rules:
            raise UpstreamRuleError(f"symbol {symbol} has no production rule")
        return self._expand_rule(symbol, site)

    # --- leaves: each resolver answers for the symbols it owns (text or None) and passes on the others ---

    def _targets_and_steps(self, symbol: str, site: _Site) -> object:
        """An assignment's target (first child) from the assignable pools; a counter loop's step."""
        target = ASSIGNMENT_TARGETS.get(site.parent or "")
        if target is not None and target[0] == symbol and site.slot == 0:
            return self.rng.choice([name for pool in target[1] for name in self.pools[pool]])
        if (site.parent, symbol) == COUNTER_STEP[:2]:
            return self.rng.choice(self.pools[COUNTER_STEP[2]])
        return _NOT_A_LEAF

    def _readable_name(self, symbol: str, site: _Site) -> object:
        """A name read by a statement: one the program has made readable so far."""
        if symbol in self.program.readable:
            return self.rng.choice(self.program.readable[symbol])
        return _NOT_A_LEAF

    def _loop_variable(self, symbol: str, site: _Site) -> object:
        """A counter loop's condition variable: a fresh one when the loop opens, the open loop's when it tests."""
        if not symbol.startswith(LOOP_VARIABLE_PREFIX):
            return _NOT_A_LEAF
        loops = self.program.loops
        if symbol == OPEN_LOOP:
            busy = {frame.variable for frame in loops}
            free = sorted({*self.pools["<in_bool_var>"], *self.pools["<bool_var>"]} - busy)
            if not free:
                return None
            loops.append(LoopFrame(self.rng.choice(free)))
            return loops[-1].variable
        return loops[-1].variable if symbol == READ_LOOP and loops else None

    def _pool_word(self, symbol: str, site: _Site) -> object:
        return self.rng.choice(self.pools[symbol]) if symbol in self.pools else _NOT_A_LEAF

    def _plain_word(self, symbol: str, site: _Site) -> object:
        """A word that stands for itself; the counter is numbered by its loop's level (its step line is deeper)."""
        if symbol not in WORDS:
            return _NOT_A_LEAF
        if COUNTER not in symbol:
            return symbol
        level = site.level - 1 if site.parent == "<increment_cnter>" else site.level
        return symbol.replace(COUNTER, f"{COUNTER}_{level}")

    def _loop_closing(self, symbol: str, site: _Site) -> object:
        """The top loop frame's condition line repeated in the body, if its counter's level is one above here."""
        if symbol != CLOSE_LOOP:
            return _NOT_A_LEAF
        frame = self.program.loops[-1] if self.program.loops else None
        found = _COUNTER_LEVEL.search(frame.condition) if frame and frame.condition else None
        if found is None or int(found.group(1)) + 1 != site.level:
            return None
        return "\t" * site.level + str(frame.condition)  # type: ignore[union-attr]

    # --- rules ---

    def _expand_rule(self, symbol: str, site: _Site) -> str | None:
        alternatives = self.rules[symbol]
        self.rng.shuffle(alternatives)  # in place: the rule's next expansion starts from this order
        for rare, probability in RARE_ALTERNATIVES.items():
            if rare in alternatives:
                alternatives.remove(rare)
                if self.rare_rng.random() < probability:
                    alternatives.append(rare)
        for alternative in alternatives:
            pieces = list(self._pieces(symbol, alternative, site))
            if None in pieces or not "".join(pieces).strip():  # type: ignore[arg-type]
                continue
            words: list[str] = [piece for piece in pieces if piece]  # type: ignore[misc]
            self._after_expansion(symbol, words)
            text = " ".join(words)
            return text + "\n" if symbol == STATEMENT else text
        return None

    def _pieces(self, symbol: str, alternative: Sequence[str], site: _Site) -> Iterator[str | None]:
        """Each child's text (None: failed), with the rule's line start before its first LINE_STARTS children;
        stops at a child whose block level would pass max_scope_depth."""
        line_starts, is_block, depth = LINE_STARTS.get(symbol, 0), symbol in BLOCKS, site.depth + 1
        for slot, child in enumerate(alternative):
            level = site.level + 1 if is_block and child in BLOCK_BODY else site.level
            if level > self.level_limit:
                yield None
                return
            if slot < line_starts:
                yield "\t" * site.level
            yield self.expand(child, _Site(symbol, slot, depth, level))

    def _after_expansion(self, symbol: str, words: list[str]) -> None:
        """Bookkeeping once a rule has expanded: loop frames, and an assignment's first word becomes readable."""
        if symbol == RECORD_CONDITION:
            self.program.loops[-1].condition = " ".join(words)
        if symbol == LOOP_RULE:
            self.program.loops.pop()
        if symbol in ASSIGNMENT_TARGETS:
            target = next(word for word in words if word.strip())
            self.program.make_readable(ASSIGNMENT_TARGETS[symbol][0], target)


_NOT_A_LEAF = object()

# Spacing of the expanded text, whose words are joined by single spaces (tab runs and line breaks are words too):
# no space before `.pop()`, `.append(`, `:`, `]`, `)`; none after `(`; a spaced `[` joins both neighbours; and
# the space that follows a tab run goes. Spaces before a line break stay (block headers and counter lines end in
# one, as L0-Bench's programs do).
_SPACING = re.compile(r" \[ | (?=\.pop|\.append|[:\])])|(?<=[(\t]) ")


def _respace(match: re.Match[str]) -> str:
    return "[" if "[" in match.group() else ""


def render_body(expansion: str) -> list[str]:
    """The function body's lines: one line per line break of the expansion, blank ones dropped, each indented one
    tab more (the function's own level), then `return`."""
    lines = (_SPACING.sub(_respace, "\t" + line) for line in expansion.split("\n"))
    return [line for line in lines if line.strip()] + ["\treturn"]


def reads_parameter(body: Sequence[str], name: str) -> bool:
    """Whether L0-Bench counts a parameter as read: a list's name anywhere in the body; another name right after a
    space, `(` or `[` (so `x` inside `lst_x` or `cond_x` does not count, but a longer name it begins does)."""
    pattern = re.escape(name) if "lst" in name else r"[ (\[]" + re.escape(name)
    return re.search(pattern, "\n".join(body)) is not None
