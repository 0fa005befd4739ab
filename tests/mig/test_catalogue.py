"""The project's MIG catalogue agrees with the reference data set, profile by profile."""

from __future__ import annotations

import pytest
from ruamel.yaml import YAML

from compiler.mig.catalogue import ESTIMATE_RATIO, load_catalogue, mig_resource_name


@pytest.fixture(scope="module")
def reference(shared_dir):
    data = YAML(typ="safe").load((shared_dir / "data" / "mig-profiles.yaml").read_text())
    return {gpu["id"]: gpu for gpu in data["gpus"]}, data["placement_grids"]


def _observed_min(value):
    if value is None:
        return None
    return min(value) if isinstance(value, list) else float(value)


def test_same_models_as_reference(reference):
    gpus, _ = reference
    assert sorted(load_catalogue().models) == sorted(gpus)


def test_every_profile_matches_reference(reference):
    gpus, grids = reference
    catalogue = load_catalogue()
    checked = 0
    for model_id, ref in gpus.items():
        model = catalogue.model(model_id)
        grid = grids[ref["grid"]]
        assert model.compute_slices == grid["compute_slices"]
        assert model.memory_slices == grid["memory_slices"]
        assert sorted(model.profiles) == sorted(p["name"] for p in ref["profiles"]), model_id
        assert dict(model.balanced_layout) == ref["balanced_config"], model_id
        assert list(model.device_filter) == ref["mig_parted_device_filter"], model_id
        if "product_names" in ref:
            assert list(model.product_names) == ref["product_names"], model_id
        else:   # the reference gives no NVML name for A30 (we use "NVIDIA A30"), B300, GB300
            assert model_id in ("A30-24GB", "B300-288GB", "GB300-288GB")
        for ref_profile in ref["profiles"]:
            shape = grid["shapes"][ref_profile["shape"]]
            profile = model.profile(ref_profile["name"])
            assert profile.compute_slices == ref_profile.get("compute_slices", shape["compute_slices"])
            assert profile.memory_slices == ref_profile.get("memory_slices", shape["memory_slices"])
            assert list(profile.placement_starts) == ref_profile.get("placement_starts", shape["placement_starts"])
            assert profile.max_count == ref_profile["max_count"], (model_id, profile.name)
            assert profile.shape == ref_profile["shape"].replace("_double", "-double").replace("_me", "+me")
            assert profile.is_media_extension == (bool(ref_profile.get("media_extensions", False))
                                                  or ref_profile["shape"].endswith("_me"))
            observed = _observed_min(ref_profile.get("memory_gib_observed"))
            if observed is not None:
                assert profile.memory_observed and profile.memory_gib == pytest.approx(observed)
            else:
                assert not profile.memory_observed
                assert profile.memory_gib < profile.nominal_gb   # estimates never overstate
            checked += 1
    assert checked == 82


def test_same_name_means_different_shapes_on_different_models():
    catalogue = load_catalogue()
    assert catalogue.profile("A100-40GB", "1g.10gb").memory_slices == 2
    assert catalogue.profile("A100-40GB", "1g.10gb").max_count == 4
    assert catalogue.profile("H100-80GB", "1g.10gb").memory_slices == 1
    assert catalogue.profile("H100-80GB", "1g.10gb").max_count == 7
    assert catalogue.profile("H200-141GB", "1g.35gb").memory_slices == 2
    assert catalogue.profile("GB300-288GB", "1g.35gb").memory_slices == 1
    assert catalogue.profile("H100-80GB", "3g.20gb") is None


def test_smallest_profile_uses_real_memory_not_the_name():
    catalogue = load_catalogue()
    # 12 GiB does not fit "1g.10gb" (9.75 GiB): the 2-slice 1g.20gb is the smallest that does.
    assert catalogue.smallest_profile_for_memory("H100-80GB", 12).name == "1g.20gb"
    # 10 GiB does not fit 1g.10gb either (9.75 GiB usable).
    assert catalogue.smallest_profile_for_memory("H100-80GB", 10).name == "1g.20gb"
    assert catalogue.smallest_profile_for_memory("H100-80GB", 9.5).name == "1g.10gb"
    # H100 NVL's "1g.12gb" has 10.62 GiB: 11 GiB needs the 1g.24gb.
    assert catalogue.smallest_profile_for_memory("H100-94GB", 11).name == "1g.24gb"
    assert catalogue.smallest_profile_for_memory("H100-80GB", 40).name == "7g.80gb"
    assert catalogue.smallest_profile_for_memory("H100-80GB", 39.2).name == "3g.40gb"
    # 3g.40gb was seen at 39.25 GiB, 4g.40gb at 39.50: real memory decides, not the name.
    assert catalogue.smallest_profile_for_memory("H100-80GB", 39.4).name == "4g.40gb"
    assert catalogue.smallest_profile_for_memory("H100-80GB", 80) is None
    assert catalogue.smallest_profile_for_memory("X100", 1) is None
    # Never a +me profile (one per GPU).
    assert not catalogue.smallest_profile_for_memory("A30-24GB", 5).is_media_extension


def test_estimated_memory_follows_same_slice_profile_or_ratio():
    catalogue = load_catalogue()
    # A100-80GB 1g.20gb was not observed; 2g.20gb (same 2 memory slices) was: 19.50 GiB.
    assert catalogue.profile("A100-80GB", "1g.20gb").memory_gib == pytest.approx(19.50)
    assert catalogue.profile("H200-141GB", "3g.71gb").memory_gib == pytest.approx(71 * ESTIMATE_RATIO)


def test_model_fields_the_compiler_uses():
    h100 = load_catalogue().model("H100-80GB")
    assert h100.product_name == "NVIDIA H100 80GB HBM3"
    assert h100.memory_gib == pytest.approx(79.25)
    assert h100.shipped_layouts()["all-balanced"] == {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
    assert h100.shipped_layouts()["all-1g.10gb.me"] == {"1g.10gb+me": 1}
    assert mig_resource_name("1g.10gb+me") == "nvidia.com/mig-1g.10gb.me"
