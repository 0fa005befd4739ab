"""Per-GPU placeability: the enumeration matches the reference counts and a brute-force oracle."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from compiler.mig.catalogue import load_catalogue
from compiler.mig.placement import (all_placements, check_layout, feasible_layouts, find_placement,
                                    maximal_layouts)
from kp_testing.mig_oracle import brute_force_placeable

CATALOGUE = load_catalogue()
H100 = CATALOGUE.model("H100-80GB")
NO_ME = [n for n in H100.profiles if "+me" not in n]


def test_layout_counts_match_reference(shared_dir):
    from ruamel.yaml import YAML
    derived = YAML(typ="safe").load((shared_dir / "data" / "mig-profiles.yaml").read_text())["derived_layout_counts"]
    plain = derived["seven_slice_without_me"]
    layouts = feasible_layouts(H100, NO_ME)
    assert len(layouts) == plain["feasible_profile_multisets_nonempty"] == 77
    assert len(maximal_layouts(layouts)) == plain["maximal_profile_multisets"] == 28
    assert all_placements(H100, NO_ME) == plain["placement_configurations_nonempty"] == 722
    with_me = derived["seven_slice_with_one_me_profile"]
    assert len(feasible_layouts(H100)) == with_me["feasible_profile_multisets_nonempty"]
    assert len(maximal_layouts(feasible_layouts(H100))) == with_me["maximal_profile_multisets"]
    assert all_placements(H100, H100.profiles) == with_me["placement_configurations_nonempty"]
    a30 = CATALOGUE.model("A30-24GB")
    a30_names = [n for n in a30.profiles if "+me" not in n]
    assert len(feasible_layouts(a30, a30_names)) == derived["four_slice_a30_without_me"]["feasible_profile_multisets_nonempty"]
    assert len(maximal_layouts(feasible_layouts(a30, a30_names))) == derived["four_slice_a30_without_me"]["maximal_profile_multisets"]
    a100 = CATALOGUE.model("A100-40GB")
    legacy = [n for n in a100.profiles if "+me" not in n and n != "1g.10gb"]
    assert len(maximal_layouts(feasible_layouts(a100, legacy))) == \
        derived["seven_slice_legacy_a100_40gb_without_1g10gb_and_me"]["maximal_profile_multisets"]


def test_known_layouts():
    assert check_layout("H100-80GB", {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}) == []
    assert check_layout("H100-80GB", {"4g.40gb": 1, "3g.40gb": 1}) == []
    assert check_layout("H100-80GB", {"1g.10gb": 7}) == []
    assert check_layout("H100-80GB", {"1g.20gb": 4}) == []
    # "3g + 3g + 1g fits" is a myth: two 3g use all 8 memory slices.
    assert check_layout("H100-80GB", {"3g.40gb": 2, "1g.10gb": 1})
    # 4g@0 leaves room for one 2g only (a 2g cannot start at slice 6).
    problems = check_layout("H100-80GB", {"4g.40gb": 1, "2g.20gb": 1, "1g.20gb": 1})
    assert problems == []
    assert check_layout("H100-80GB", {"4g.40gb": 1, "2g.20gb": 2})


def test_placement_positions_are_valid():
    placement = find_placement(H100, {"1g.10gb": 4, "3g.40gb": 1})
    assert sorted(placement) == [("1g.10gb", 0), ("1g.10gb", 1), ("1g.10gb", 2), ("1g.10gb", 3), ("3g.40gb", 4)]


def test_bad_layouts_explain_themselves():
    [unknown_model] = check_layout("X100-1GB", {"1g.10gb": 1})
    assert "unknown GPU model 'X100-1GB'" in unknown_model
    [other_model] = check_layout("H100-80GB", {"3g.20gb": 1})
    assert "does not exist on H100-80GB" in other_model and "A100-40GB" in other_model
    me_twice = check_layout("H100-80GB", {"1g.10gb+me": 2})
    assert any("at most one +me" in p for p in me_twice)
    a30_two_me = check_layout("A30-24GB", {"1g.6gb+me": 1, "2g.12gb+me": 1})
    assert any("at most one +me" in p for p in a30_two_me)
    assert any("exceeds" in p for p in check_layout("H100-80GB", {"3g.40gb": 3}))
    assert check_layout("H100-80GB", {}) == ["the layout is empty: give at least one profile with a count above 0"]
    assert any("whole number" in p for p in check_layout("H100-80GB", {"1g.10gb": -1}))
    unplaceable = check_layout("H100-80GB", {"4g.40gb": 1, "2g.20gb": 1, "1g.20gb": 2})
    assert unplaceable == ["needs 8 compute slices, a H100-80GB has 7",
                           "needs 10 memory slices, a H100-80GB has 8"]


MODELS = ["H100-80GB", "A100-40GB", "A30-24GB", "H200-141GB"]


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(MODELS), st.data())
def test_check_layout_agrees_with_brute_force(model_name, data):
    gpu = CATALOGUE.model(model_name)
    names = sorted(gpu.profiles)
    counts = data.draw(st.lists(st.integers(0, 3), min_size=len(names), max_size=len(names)))
    layout = {n: c for n, c in zip(names, counts) if c}
    if not layout or sum(counts) > 8:
        return
    assert (check_layout(gpu, layout) == []) == brute_force_placeable(gpu, layout), layout
