"""The exact planner: worked examples, bounds, and optimality against a brute-force oracle."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from compiler.core.errors import PolicyError
from compiler.mig.catalogue import load_catalogue
from compiler.mig.placement import check_layout
from compiler.mig.planner import first_fit_decreasing, lower_bounds, plan_mig
from kp_testing.mig_oracle import fewest_distinct_layouts, minimum_gpus

CATALOGUE = load_catalogue()


def _covers(result, demand):
    held = {}
    for layout in result.layouts:
        for name, count in layout.profiles.items():
            held[name] = held.get(name, 0) + count * layout.count
    return all(held.get(name, 0) >= count for name, count in demand.items())


def _assert_valid(result, model, demand):
    assert sum(layout.count for layout in result.layouts) == result.gpus
    assert _covers(result, demand)
    for layout in result.layouts:
        assert check_layout(model, layout.profiles) == []
    assert result.lower_bound <= result.gpus


@pytest.mark.parametrize("demand, optimum, lower_bound", [
    # Worked examples of the planning notes (H100-80GB).
    ({"1g.10gb": 9, "2g.20gb": 4, "3g.40gb": 3}, 4, 4),
    ({"1g.20gb": 5, "3g.40gb": 3, "1g.10gb": 4}, 4, 4),          # memory-bound
    ({"2g.20gb": 3, "4g.40gb": 2}, 3, 3),                         # closed-form bounds say 2
    ({"4g.40gb": 3, "3g.40gb": 1, "2g.20gb": 5, "1g.10gb": 6, "1g.20gb": 2}, 5, 5),
    ({"7g.80gb": 2, "1g.10gb+me": 3}, 5, 5),                      # one +me per GPU
    ({"1g.10gb": 7}, 1, 1),
])
def test_worked_examples(demand, optimum, lower_bound):
    result = plan_mig("H100-80GB", demand)
    assert result.gpus == optimum
    assert result.lower_bound == lower_bound
    assert result.feasible
    _assert_valid(result, "H100-80GB", demand)


def test_example_c_closed_form_bounds_are_loose():
    bounds = lower_bounds(CATALOGUE.model("H100-80GB"), {"2g.20gb": 3, "4g.40gb": 2})
    assert max(v for k, v in bounds.items()) == 2
    assert plan_mig("H100-80GB", {"2g.20gb": 3, "4g.40gb": 2}).bounds["linearRelaxation"] == 3


def test_shipped_config_preferred_on_ties():
    result = plan_mig("H100-80GB", {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1})
    assert [(l.count, l.profiles) for l in result.layouts] == [(1, {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1})]
    result = plan_mig("H100-80GB", {"1g.10gb": 5})
    assert [(l.count, l.profiles) for l in result.layouts] == [(1, {"1g.10gb": 7})]   # all-1g.10gb


def test_fewest_distinct_layouts():
    # 6 x 3g.40gb and 3 x 4g.40gb: 3 GPUs 4g+3g and 2 GPUs 2x3g... or fewer layouts?
    result = plan_mig("H100-80GB", {"3g.40gb": 6})
    assert result.gpus == 3 and len(result.layouts) == 1
    result = plan_mig("H100-80GB", {"3g.40gb": 4, "4g.40gb": 4})
    assert result.gpus == 4 and len(result.layouts) == 1     # 4 x (4g + 3g)


def test_does_not_fit_available_gpus():
    result = plan_mig("H100-80GB", {"3g.40gb": 5}, gpus_available=2)
    assert not result.feasible
    assert result.gpus == 3
    assert "needs 3 H100-80GB GPUs" in result.message and "only 2 available" in result.message


def test_same_profile_name_on_another_model():
    # 1g.10gb on A100-40GB is the 2-slice profile, max 4 per GPU: 8 instances need 2 GPUs.
    assert plan_mig("A100-40GB", {"1g.10gb": 8}).gpus == 2
    assert plan_mig("H100-80GB", {"1g.10gb": 8}).gpus == 2
    assert plan_mig("H100-80GB", {"1g.10gb": 7}).gpus == 1
    assert plan_mig("A100-40GB", {"1g.10gb": 5}).gpus == 2


def test_bad_demand_is_a_policy_error():
    with pytest.raises(PolicyError) as error:
        plan_mig("H100-80GB", {"3g.20gb": 1, "bogus": 2})
    codes = sorted(d.code for d in error.value.diagnostics)
    assert codes == ["KP702", "KP702"]
    assert "A100-40GB" in error.value.diagnostics[0].message + error.value.diagnostics[1].message
    with pytest.raises(PolicyError) as error:
        plan_mig("Z100", {"1g.10gb": 1})
    assert error.value.diagnostics[0].code == "KP701"
    with pytest.raises(PolicyError):
        plan_mig("H100-80GB", {"1g.10gb": -1})


def test_empty_demand():
    result = plan_mig("H100-80GB", {"1g.10gb": 0})
    assert result.gpus == 0 and result.layouts == []


def test_deterministic():
    demand = {"1g.10gb": 37, "1g.20gb": 11, "2g.20gb": 23, "3g.40gb": 9, "4g.40gb": 4, "7g.80gb": 3}
    first = plan_mig("H100-80GB", demand).to_dict()
    assert all(plan_mig("H100-80GB", demand).to_dict() == first for _ in range(3))


SMALL = st.fixed_dictionaries({
    "1g.10gb": st.integers(0, 6), "1g.20gb": st.integers(0, 3), "2g.20gb": st.integers(0, 4),
    "3g.40gb": st.integers(0, 3), "4g.40gb": st.integers(0, 2), "7g.80gb": st.integers(0, 1),
})


@settings(max_examples=40, deadline=None)
@given(SMALL)
def test_optimal_against_brute_force(demand):
    gpu = CATALOGUE.model("H100-80GB")
    result = plan_mig("H100-80GB", demand)
    _assert_valid(result, "H100-80GB", demand)
    assert result.gpus == minimum_gpus(gpu, demand)
    assert result.gpus <= len(first_fit_decreasing("H100-80GB", demand))


@settings(max_examples=30, deadline=None)
@given(st.fixed_dictionaries({"1g.6gb": st.integers(0, 6), "2g.12gb": st.integers(0, 4),
                              "4g.24gb": st.integers(0, 2), "1g.6gb+me": st.integers(0, 2)}))
def test_optimal_on_a30(demand):
    gpu = CATALOGUE.model("A30-24GB")
    result = plan_mig("A30-24GB", demand)
    _assert_valid(result, "A30-24GB", demand)
    assert result.gpus == minimum_gpus(gpu, demand)


def test_aliases_and_resource_style_profile_names():
    result = plan_mig("h100-sxm5-80gb", {"nvidia.com/mig-3g.40gb": 2, "mig-1g.10gb.me": 1, "1g.10gb": 3})
    assert result.model == "H100-80GB"
    assert result.demand == {"1g.10gb": 3, "1g.10gb+me": 1, "3g.40gb": 2}
    assert result.gpus == 2
    assert check_layout("H100-SXM5-80GB", {"1g.10gb.me": 1, "3g.40gb": 1}) == []
    assert CATALOGUE.model("h200") is CATALOGUE.model("H200-141GB")
    with pytest.raises(PolicyError):
        plan_mig("H100", {"1g.10gb": 1})      # ambiguous (80/94/96 GB): not an alias


@settings(max_examples=25, deadline=None)
@given(st.fixed_dictionaries({"1g.10gb": st.integers(0, 9), "2g.20gb": st.integers(0, 5),
                              "3g.40gb": st.integers(0, 4)}))
def test_fewest_distinct_layouts_against_exhaustive_search(demand):
    if not any(demand.values()):
        return
    gpu = CATALOGUE.model("H100-80GB")
    result = plan_mig("H100-80GB", demand)
    assert result.secondary_proven
    assert len(result.layouts) == fewest_distinct_layouts(gpu, demand, result.gpus)
