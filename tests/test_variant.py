"""The variant name (`levante_tasks.schema.variant`): `parse` reads back exactly what `format` writes, for every
variant and group of every catalogue task, matches task names whole (never as a prefix), and refuses any other
name with one message naming it and what is accepted; the generated YAML tree is named by it."""

from __future__ import annotations

import posixpath

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from levante_tasks.core.options import DEFAULT_SEEDS, MAX_ORDERS
from levante_tasks.lmms import generate as generator
from levante_tasks.schema.locales import LOCALES, Locale, locale
from levante_tasks.schema.tasks import TASKS, TaskInfo
from levante_tasks.schema.variant import (
    AllTasksGroup,
    Control,
    OutputType,
    SeedGroup,
    Variant,
    VariantNameError,
    parse_name,
)

task_names = st.sampled_from([info.name for info in TASKS])
output_types = st.sampled_from(list(OutputType))
controls = st.sampled_from(list(Control))
locales = st.sampled_from(LOCALES)


def _has_replicates(output_type: OutputType, control: Control, loc: Locale) -> bool:
    """Whether a variant of these axes has the order replicates (seeds past DEFAULT_SEEDS)."""
    return output_type is OutputType.GENERATE_UNTIL and control is Control.ORIGINAL and loc.is_source


def _seeds(output_type: OutputType, control: Control, loc: Locale) -> range:
    """The option-order seeds a variant of these axes can have."""
    return range(MAX_ORDERS if _has_replicates(output_type, control, loc) else len(DEFAULT_SEEDS))


@st.composite
def axes(draw: st.DrawFn) -> tuple[OutputType, int, Control, Locale]:
    """(output type, seed, control, locale) of a variant the schema admits."""
    output_type, control, loc = draw(output_types), draw(controls), draw(locales)
    return output_type, draw(st.sampled_from(_seeds(output_type, control, loc))), control, loc


variants = st.builds(lambda task, found: Variant(task, *found), task_names, axes())


@settings(max_examples=300, deadline=None)
@given(variant=variants)
def test_parse_reads_back_every_variant_format_writes(variant: Variant) -> None:
    name = variant.format()
    assert Variant.parse(name) == variant
    assert parse_name(name) == variant


@settings(max_examples=200, deadline=None)
@given(group=st.one_of(st.builds(lambda found: AllTasksGroup(*found), axes()),
                      st.builds(SeedGroup, task_names, output_types, locales)))
def test_parse_name_reads_back_every_group_format_writes(group: AllTasksGroup | SeedGroup) -> None:
    assert parse_name(group.format()) == group
    with pytest.raises(VariantNameError, match="is not a LEVANTE lmms-eval task variant name"):
        Variant.parse(group.format())  # a group is no variant


def test_the_names_are_the_documented_spellings() -> None:
    assert Variant("trog").format() == "levante_trog"
    assert Variant("egma-math", OutputType.MULTIPLE_CHOICE, 1).format() == "levante_egma_math_mc_seed1"
    assert Variant("vocab", control=Control.BLANK).format() == "levante_vocab_blank"
    shuffled = Variant("vocab", OutputType.MULTIPLE_CHOICE, 2, Control.SHUFFLED)
    assert shuffled.format() == "levante_vocab_mc_seed2_shuffled"
    assert AllTasksGroup().format() == "levante"
    assert AllTasksGroup(OutputType.MULTIPLE_CHOICE, 2).format() == "levante_mc_seed2"
    assert SeedGroup("theory-of-mind", OutputType.MULTIPLE_CHOICE).format() == "levante_theory_of_mind_mc_seeds"
    german, colombian = locale("de"), locale("es-CO")
    assert Variant("trog", locale=german).format() == "levante_trog_de"
    assert Variant("vocab", OutputType.MULTIPLE_CHOICE, 1, locale=colombian).format() == "levante_vocab_es_co_mc_seed1"
    assert AllTasksGroup(OutputType.MULTIPLE_CHOICE, locale=german).format() == "levante_de_mc"
    assert SeedGroup("trog", locale=colombian).format() == "levante_trog_es_co_seeds"
    assert Variant("trog", locale=locale("en")) == Variant("trog")  # English, the source, writes no suffix


def test_no_two_variants_or_groups_of_the_catalogue_share_a_name() -> None:
    """An ambiguous catalogue (a task named like another's variant or like a group) would break the round trip."""
    every_axes = [(output, seed, control, loc) for output in OutputType for control in Control for loc in LOCALES
                  for seed in _seeds(output, control, loc)]
    names = [Variant(info.name, *found).format() for info in TASKS for found in every_axes]
    names += [SeedGroup(info.name, output, loc).format() for info in TASKS for output in OutputType for loc in LOCALES]
    names += [AllTasksGroup(*found).format() for found in every_axes]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("name", [
    "levante_trog_seed0",  # seed 0 writes no suffix
    "levante_trog_seed01",
    "levante_trog_seed-1",
    "levante_trog_blank_mc",  # suffixes in another order
    "levante_trog_seed1_mc",
    "levante_trog_mc_mc",
    "levante_trog_original",
    "levante_trog_mc_de",  # the locale goes first
    "levante_trog_en",  # English writes no suffix
    "levante_trog_DE",
    "levante_trog_es-co",
    "levante_trog_es",  # a language is no locale
    "levante_trog_de_de",
    "levante_trog_",
    "levante_trogg",
    "levante_vocab_extended",  # no such catalogue row: not vocab with a suffix
    "trog",
    "Levante_trog",
    "levante_mc_seeds",
    "l0_trace",
    "",
])
def test_any_other_name_is_refused_naming_it_and_what_is_accepted(name: str) -> None:
    for parse in (Variant.parse, parse_name):
        with pytest.raises(VariantNameError) as caught:
            parse(name)
        message = str(caught.value)
        assert message.startswith(f"{name!r} is not a LEVANTE lmms-eval task")
        assert ("accepted: <lmms_name>[_<locale>: de|es_co|fr_ca|nl|de_ch][_mc][_seed<k>, k = 1..31][_blank|_shuffled]"
                in message)
        assert "levante_vocab, levante_trog," in message and "\n" not in message


@pytest.mark.parametrize(("name", "seed"), [("levante_trog_mc_seed3", 3), ("levante_trog_seed3_blank", 3),
                                          ("levante_trog_de_seed3", 3), ("levante_vocab_es_co_mc_seed31", 31),
                                          ("levante_mc_seed3", 3), ("levante_seed30_shuffled", 30)])
def test_an_order_replicate_past_seed_two_is_generate_until_english_original_only(name: str, seed: int) -> None:
    with pytest.raises(VariantNameError) as caught:
        parse_name(name)
    assert str(caught.value) == (
        f"{name!r} is not a LEVANTE lmms-eval task or group name: option-order seed {seed}: seeds 3..31 (order "
        "replicates) are generate_until only, in English with original images; multiple_choice, the image controls "
        "and the locales have seeds 0, 1, 2")
    assert Variant.parse(f"levante_trog_seed{seed}") == Variant("trog", seed=seed)  # generate_until English original


def test_seeds_past_the_replicates_are_refused() -> None:
    assert parse_name("levante_trog_seed31") == Variant("trog", seed=31)
    assert parse_name("levante_seed31") == AllTasksGroup(seed=31)
    for name in ("levante_trog_seed32", "levante_seed32", "levante_trog_seed100"):
        with pytest.raises(VariantNameError, match=rf"^'{name}' is not .*: option-order seed \d+ is not an int in "
                                                   r"0\.\.31$"):
            parse_name(name)


def test_a_task_named_like_another_task_plus_a_word_is_its_own_task(vocab_extended: TaskInfo) -> None:
    """A made-up `levante_vocab_extended` row: its names parse to it, vocab's to vocab (no prefix matching)."""
    assert Variant.parse("levante_vocab_extended") == Variant("vocab-extended")
    assert Variant.parse("levante_vocab_extended_mc_seed1") == Variant("vocab-extended", OutputType.MULTIPLE_CHOICE, 1)
    assert Variant.parse("levante_vocab_mc_seed1") == Variant("vocab", OutputType.MULTIPLE_CHOICE, 1)
    assert parse_name("levante_vocab_extended_seeds") == SeedGroup("vocab-extended")
    assert AllTasksGroup().members()[-1] == Variant("vocab-extended")


def test_the_values_are_typed() -> None:
    with pytest.raises(TypeError, match="not an OutputType"):
        Variant("trog", "multiple_choice")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a Control"):
        Variant("trog", control="blank")  # type: ignore[arg-type]
    for seed in (-1, True, 1.0, MAX_ORDERS):
        with pytest.raises(ValueError, match="option-order seed"):
            Variant("trog", seed=seed)  # type: ignore[arg-type]
    with pytest.raises(KeyError, match="unknown LEVANTE task 'levante_trog'"):
        Variant("levante_trog")  # the internal name, not the lmms-eval name
    with pytest.raises(KeyError, match="unknown LEVANTE task"):
        SeedGroup("nope")


def _output_type(rel: str, leaf: dict, tree: dict[str, str]) -> OutputType:
    """A generated leaf's output type, from the shared template it includes (through a task's own template)."""
    include = posixpath.normpath(posixpath.join(posixpath.dirname(rel), leaf["include"]))
    while include not in generator.TEMPLATES.values():
        own = yaml.safe_load(tree[include].replace("!function ", ""))
        include = posixpath.normpath(posixpath.join(posixpath.dirname(include), own["include"]))
    kind = next(kind for kind, template in generator.TEMPLATES.items() if include == template)
    return OutputType(generator.OUTPUT_TYPES[kind])


def test_every_generated_name_parses_to_what_its_yaml_says() -> None:
    """Each leaf of the generated tree parses to its metadata block (task, seed, variant) and its template's output
    type; each group parses to a group whose members are the tasks it lists."""
    leaves = groups = 0
    tree = generator.render_tree()
    for rel, text in tree.items():
        if not rel.endswith(".yaml"):
            continue
        doc = yaml.safe_load(text.replace("!function ", ""))
        if "group" in doc:
            group = parse_name(doc["group"])
            members = group.members() if isinstance(group, AllTasksGroup) else group.members(DEFAULT_SEEDS)
            assert doc["task"] == [variant.format() for variant in members], rel
            groups += 1
            continue
        spec = doc["metadata"]["levante"]
        assert Variant.parse(doc["task"]) == Variant(spec["task"], _output_type(rel, doc, tree), spec["seed"],
                                                     Control(spec["variant"]), locale(spec.get("locale"))), rel
        assert rel.endswith(f"/{doc['task']}.yaml")
        leaves += 1
    n_locales = len(LOCALES) - 1  # each translated locale: a gen and an mc leaf per task, and two levante groups
    replicates = MAX_ORDERS - len(DEFAULT_SEEDS)  # generate_until seeds 3..31: a leaf per task and a levante group
    assert leaves == (10 + 2 * n_locales + replicates) * len(TASKS)
    assert groups == 10 + 2 * n_locales + replicates + 2 * len(TASKS)
