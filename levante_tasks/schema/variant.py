"""The lmms-eval name of a LEVANTE task variant and of its groups: one typed value, one `format`, one `parse`.

A variant is (task, output type, option-order seed, image control, locale). Its name is the task's catalogue
`lmms_name` followed by its suffix, each part written only when it is not the default:

    <lmms_name>[_<locale>][_mc][_seed<k>][_blank|_shuffled]

`_<locale>`: a translated locale's suffix (`schema.locales`: `_de`, `_es_co`; English, the source, writes none);
`_mc`: multiple_choice (generate_until writes none); `_seed<k>`: option-order seed k >= 1 (seed 0 writes none; k is at
most 2, except generate_until in English with original images, whose order replicates go up to 31: `schema.seeds`);
`_blank`/`_shuffled`: the image controls (original images write none). E.g. `levante_trog`, `levante_trog_mc_seed1`,
`levante_vocab_blank`, `levante_trog_de`, `levante_vocab_es_co_mc`. Groups: `AllTasksGroup` is `levante<suffix>`, every
task's variant of one suffix (`levante`, `levante_mc_seed1`, `levante_de`); `SeedGroup` is
`<lmms_name>[_<locale>][_mc]_seeds`, one task's option-order seeds of one output type and locale.

`parse_name` (and `Variant.parse` for variants alone) accepts exactly the names `format` writes: the task part must
be a whole catalogue `lmms_name` (never a prefix of the name, so a `levante_vocab_extended` row is its own task) and
each suffix is spelled the one way `format` spells it (`_seed0`, `_seed01` and `_blank_mc` are refused), and a seed
is one the variant can have (`_mc_seed3`, `_seed32` are refused); anything else raises VariantNameError naming the
name and what is accepted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from functools import cache

from levante_tasks.errors import LevanteError
from levante_tasks.schema import tasks as catalogue
from levante_tasks.schema.locales import ENGLISH, TRANSLATED, Locale, locale
from levante_tasks.schema.seeds import DEFAULT_SEEDS, MAX_ORDERS

ALL_TASKS = "levante"  # the stem of the all-task groups: `levante<suffix>`
MC_SUFFIX = "_mc"
SEED_SUFFIX = "_seed"
SEEDS_GROUP_SUFFIX = "_seeds"


class OutputType(str, Enum):
    """lmms-eval's output type of a variant (the records' `output_type`)."""

    GENERATE_UNTIL = "generate_until"
    MULTIPLE_CHOICE = "multiple_choice"


class Control(str, Enum):
    """The images a variant shows (the records' `variant`): as released, all black, or another item's."""

    ORIGINAL = "original"
    BLANK = "blank"
    SHUFFLED = "shuffled"


CONTROLS = tuple(c for c in Control if c is not Control.ORIGINAL)  # the image controls, in file order

_LOCALE_SUFFIX = f"(?:_(?P<locale>{'|'.join(loc.suffix for loc in TRANSLATED)}))?"
_SUFFIX = (f"{_LOCALE_SUFFIX}(?P<mc>{MC_SUFFIX})?(?:{SEED_SUFFIX}(?P<seed>[1-9][0-9]*))?"
           f"(?:_(?P<control>{'|'.join(c.value for c in CONTROLS)}))?")
_SUFFIX_SPELLING = (f"[_<locale>: {'|'.join(loc.suffix for loc in TRANSLATED)}][{MC_SUFFIX}]"
                    f"[{SEED_SUFFIX}<k>, k = 1..{MAX_ORDERS - 1}][{'|'.join(f'_{c.value}' for c in CONTROLS)}]")
_REPLICATES = (f"seeds {len(DEFAULT_SEEDS)}..{MAX_ORDERS - 1} (order replicates) are generate_until "
               f"only, in English with original images; multiple_choice, the image controls and the locales have seeds "
               f"{', '.join(map(str, DEFAULT_SEEDS))}")


class VariantNameError(LevanteError, ValueError):
    """A name that is no LEVANTE variant (or group) name; the message names it and what is accepted."""


def _suffix(output_type: OutputType, seed: int, control: Control, locale: Locale = ENGLISH) -> str:
    """The suffix of a variant or all-task group (module docstring)."""
    return ((f"_{locale.suffix}" if locale.suffix else "")
            + (MC_SUFFIX if output_type is OutputType.MULTIPLE_CHOICE else "")
            + (f"{SEED_SUFFIX}{seed}" if seed else "")
            + ("" if control is Control.ORIGINAL else f"_{control.value}"))


def _check(output_type: object, seed: object, control: object, locale: object = ENGLISH) -> None:
    """TypeError/ValueError unless the axes are typed values and the seed is one the variant can have (an int in
    0..MAX_ORDERS-1; past DEFAULT_SEEDS only for generate_until in English with original images)."""
    if not isinstance(locale, Locale):
        raise TypeError(f"locale {locale!r} is not a Locale (schema.locales.locale(code) makes one)")
    if not isinstance(output_type, OutputType):
        raise TypeError(f"output_type {output_type!r} is not an OutputType")
    if not isinstance(control, Control):
        raise TypeError(f"control {control!r} is not a Control")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < MAX_ORDERS:
        raise ValueError(f"option-order seed {seed!r} is not an int in 0..{MAX_ORDERS - 1}")
    if seed not in DEFAULT_SEEDS and (output_type is not OutputType.GENERATE_UNTIL or control is not Control.ORIGINAL
                                      or not locale.is_source):
        raise ValueError(f"option-order seed {seed}: {_REPLICATES}")


def _lmms_name(task: str) -> str:
    """The catalogue `lmms_name` of an internal task name (KeyError names an unknown task)."""
    return catalogue.task_info(task).lmms_name


@dataclass(frozen=True)
class Variant:
    """One LEVANTE lmms-eval task: a catalogue task (internal name) in one output type, option-order seed and
    image control and locale; `format()` is its lmms-eval name, `Variant.parse` reads one back."""

    task: str
    output_type: OutputType = OutputType.GENERATE_UNTIL
    seed: int = 0
    control: Control = Control.ORIGINAL
    locale: Locale = ENGLISH

    def __post_init__(self) -> None:
        _check(self.output_type, self.seed, self.control, self.locale)
        _lmms_name(self.task)

    @property
    def suffix(self) -> str:
        """What follows the task's lmms_name: the locale, `_mc`, `_seed<k>`, the control (module docstring)."""
        return _suffix(self.output_type, self.seed, self.control, self.locale)

    def format(self) -> str:
        """The lmms-eval task name, e.g. `levante_trog_mc_seed1`."""
        return _lmms_name(self.task) + self.suffix

    @classmethod
    def parse(cls, name: str) -> Variant:
        """The variant an lmms-eval task name stands for; VariantNameError for any other name (a group too)."""
        found = parse_name(name, groups=False)
        assert isinstance(found, Variant)
        return found


@dataclass(frozen=True)
class AllTasksGroup:
    """The lmms-eval group `levante<suffix>`: every catalogue task's variant of one output type, seed, control and
    locale."""

    output_type: OutputType = OutputType.GENERATE_UNTIL
    seed: int = 0
    control: Control = Control.ORIGINAL
    locale: Locale = ENGLISH

    def __post_init__(self) -> None:
        _check(self.output_type, self.seed, self.control, self.locale)

    def format(self) -> str:
        """The group's name, e.g. `levante`, `levante_mc_seed1`, `levante_de`."""
        return ALL_TASKS + _suffix(self.output_type, self.seed, self.control, self.locale)

    def member(self, task: str) -> Variant:
        """The variant of `task` (internal name) in this group."""
        return Variant(task, self.output_type, self.seed, self.control, self.locale)

    def members(self) -> list[Variant]:
        """Its variants, in catalogue order."""
        return [self.member(info.name) for info in catalogue.TASKS]


@dataclass(frozen=True)
class SeedGroup:
    """The lmms-eval group `<lmms_name>[_<locale>][_mc]_seeds`: one task's option-order seeds of one output type and
    locale."""

    task: str
    output_type: OutputType = OutputType.GENERATE_UNTIL
    locale: Locale = ENGLISH

    def __post_init__(self) -> None:
        _check(self.output_type, 0, Control.ORIGINAL, self.locale)
        _lmms_name(self.task)

    def format(self) -> str:
        """The group's name, e.g. `levante_trog_mc_seeds`, `levante_trog_de_seeds`."""
        return Variant(self.task, self.output_type, locale=self.locale).format() + SEEDS_GROUP_SUFFIX

    def members(self, seeds: Iterable[int]) -> list[Variant]:
        """Its variants: the task in this output type and locale with original images, one per option-order seed."""
        return [Variant(self.task, self.output_type, seed, locale=self.locale) for seed in seeds]


@cache
def _patterns(lmms_names: tuple[str, ...]) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """(variant, seed group, all-task group) patterns over these catalogue names, each matched whole."""
    task = f"(?P<task>{'|'.join(map(re.escape, lmms_names))})"
    return (re.compile(task + _SUFFIX), re.compile(f"{task}{_LOCALE_SUFFIX}(?P<mc>{MC_SUFFIX})?{SEEDS_GROUP_SUFFIX}"),
            re.compile(ALL_TASKS + _SUFFIX))


def _accepted(groups: bool = True) -> str:
    """What `parse_name` accepts, for messages."""
    names = ", ".join(info.lmms_name for info in catalogue.TASKS)
    text = f"<lmms_name>{_SUFFIX_SPELLING} with <lmms_name> one of {names}"
    if groups:
        text += f"; groups {ALL_TASKS}{_SUFFIX_SPELLING} and <lmms_name>[_<locale>][{MC_SUFFIX}]{SEEDS_GROUP_SUFFIX}"
    return text


def parse_name(name: str, groups: bool = True) -> Variant | SeedGroup | AllTasksGroup:
    """The variant or group (only variants unless `groups`) an lmms-eval name stands for: exactly the names their
    `format` writes; VariantNameError naming `name` and what is accepted otherwise."""
    by_lmms_name = {info.lmms_name: info.name for info in catalogue.TASKS}
    leaf, seeds, everything = _patterns(tuple(by_lmms_name))
    what = "task or group" if groups else "task variant"
    try:
        if (match := leaf.fullmatch(name)) is not None:
            return Variant(by_lmms_name[match["task"]], _output_type(match), int(match["seed"] or 0), _control(match),
                           _locale(match))
        if groups and (match := seeds.fullmatch(name)) is not None:
            return SeedGroup(by_lmms_name[match["task"]], _output_type(match), _locale(match))
        if groups and (match := everything.fullmatch(name)) is not None:
            return AllTasksGroup(_output_type(match), int(match["seed"] or 0), _control(match), _locale(match))
    except ValueError as exc:  # a seed the variant cannot have (`_check`)
        raise VariantNameError(f"{name!r} is not a LEVANTE lmms-eval {what} name: {exc}") from None
    raise VariantNameError(f"{name!r} is not a LEVANTE lmms-eval {what} name; accepted: {_accepted(groups)}")


def _output_type(match: re.Match[str]) -> OutputType:
    return OutputType.MULTIPLE_CHOICE if match["mc"] else OutputType.GENERATE_UNTIL


def _control(match: re.Match[str]) -> Control:
    return Control(match["control"]) if match["control"] else Control.ORIGINAL


def _locale(match: re.Match[str]) -> Locale:
    return locale(match["locale"])
