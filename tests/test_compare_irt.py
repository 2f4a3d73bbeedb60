"""IRT record reading (rds/CSV), b = -d/a1, EAP reproduction of the fixture scores, and bad IRT inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from shared_paths import irt_fixture_dir

from levante_tasks.compare.eap import eap, theta_grid
from levante_tasks.compare.irt import read_irt
from levante_tasks.compare.scoring import rescore_calibration
from levante_tasks.errors import LevanteError
from levante_tasks.schema.crosswalk import strip_instance


@pytest.mark.parametrize("name", ["trog_rasch_f1_scalar.rds", "mrot_2pl_f1.rds"])
def test_fixture_scores_reproduced(name: str) -> None:
    model = read_irt(irt_fixture_dir() / name)[0]
    rescored = rescore_calibration(model)
    assert len(rescored) == len(model.scores) > 100
    np.testing.assert_allclose(rescored["ability"], model.scores["ability"], atol=1e-6, rtol=0)
    np.testing.assert_allclose(rescored["se"], model.scores["se"], atol=1e-6, rtol=0)


def test_b_is_minus_d_over_a1_and_matches_truth() -> None:
    folder = irt_fixture_dir()
    truth = pd.read_csv(folder / "true_item_params.csv").set_index("item_uid")
    for name in ["trog_rasch_f1_scalar.rds", "mrot_2pl_f1.rds"]:
        items = read_irt(folder / name)[0].first_instances()
        np.testing.assert_allclose(items["b"], -items["d"] / items["a1"])
        np.testing.assert_allclose(items["b"], truth.loc[items.index, "b"], atol=1e-9)
        assert (items["g"] > 0).all()  # g fixed at chance, read from model_vals


def test_groups_reference_first_and_priors_read() -> None:
    model = read_irt(irt_fixture_dir() / "trog_rasch_f1_scalar.rds")[0]
    assert [g.name for g in model.groups] == ["ca_pilot", "co_pilot"]
    assert model.reference.name == "ca_pilot"
    assert model.group("co_pilot").mean == pytest.approx(0.4)
    assert model.group("ca_pilot").var == pytest.approx(1.6)  # Rasch: latent variance estimated, not 1
    with pytest.raises(LevanteError, match="not in model"):
        model.group("de_pilot")


def test_wide_csv_splits_tasks_and_flags_assumed_prior() -> None:
    models = read_irt(irt_fixture_dir() / "true_item_params.csv")
    assert sorted(m.task for m in models) == ["mental-rotation", "trog"]
    assert all(m.prior_assumed and m.reference.var == 1.0 for m in models)


def test_strip_instance() -> None:
    assert strip_instance("trog_noun_shoe-1") == ("trog_noun_shoe", 1)
    assert strip_instance("mrot_3d_shape_320_bp15-320-2") == ("mrot_3d_shape_320_bp15-320", 2)
    assert strip_instance("counting-afc-2-1") == ("counting-afc-2", 1)
    with pytest.raises(ValueError, match="no '-<instance>' suffix"):
        strip_instance("no_suffix")


def test_eap_shrinks_and_skips_missing() -> None:
    a1, d, g, u = np.ones(3), np.zeros(3), np.zeros(3), np.ones(3)
    theta, se = eap(np.array([[1, 1, np.nan], [1, 1, 0]]), a1, d, g, u, mean=0.0, var=1.0)
    assert theta[0] > theta[1] > 0  # a missing item is not a wrong answer
    all_right, _ = eap(np.ones((1, 3)), a1, d, g, u, mean=0.0, var=1.0)
    assert 0 < all_right[0] < theta_grid()[-1]  # finite, shrunk toward the prior mean
    assert np.all(se > 0)


def test_bad_irt_inputs(tmp_path: Path) -> None:
    rdata = pytest.importorskip("rdata")
    no_vals = tmp_path / "record.rds"
    rdata.write_rds(no_vals, {"scores": pd.DataFrame({"ability": [0.0], "se": [1.0]})})
    with pytest.raises(LevanteError, match="no model_vals"):
        read_irt(no_vals)
    garbage = tmp_path / "garbage.rds"
    garbage.write_bytes(b"not an rds")
    with pytest.raises(LevanteError, match="not a readable"):
        read_irt(garbage)
    long = pd.DataFrame(
        {"group": ["g1"] * 2, "item": ["x-1", "x-1"], "name": ["a1", "d"], "value": [1.0, 0.0]}
    )
    long.to_csv(tmp_path / "nogroup.csv", index=False)
    with pytest.raises(LevanteError, match="no GROUP MEAN_1/COV_11"):
        read_irt(tmp_path / "nogroup.csv")
    pd.DataFrame({"item_uid": ["x"], "a1": [1.0], "d": [0.0]}).to_csv(tmp_path / "nog.csv", index=False)
    with pytest.raises(LevanteError, match=r"lacks columns \['g'\]"):
        read_irt(tmp_path / "nog.csv")
    with pytest.raises(LevanteError, match="not found"):
        read_irt(tmp_path / "missing.rds")


def test_wide_csv_item_uids_are_not_split(tmp_path) -> None:
    """A plain item_uid column keeps uids that end in -digits whole, and Redivis spellings map to the manifest's."""
    table = pd.DataFrame({"task": ["mrot", "math", "vocab"],
                          "item_uid": ["Rn-000_Rn-000", "counting-afc-2", "vocab_word_acorn"],
                          "a1": [1.2, 1.0, 1.0], "d": [0.4, -0.5, 1.0], "g": [0.5, 0.5, 0.25]})
    table.to_csv(tmp_path / "params.csv", index=False)
    uids = sorted(uid for model in read_irt(tmp_path / "params.csv") for uid in model.items["item_uid"])
    assert uids == ["Rn-000_Rn-000", "counting-afc-2", "vocab__acorn"]
