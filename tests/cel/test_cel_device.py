"""The `device` variable of DRA selectors, built from ResourceSlice devices."""

from __future__ import annotations

import pytest

from compiler.cel import compile_expression, device_variable, device_variable_for, evaluate
from compiler.cel.device import DeviceDataError

MIG_DEVICE = {
    "name": "gpu-0-mig-3g40gb-9-4",
    "attributes": {
        "type": {"string": "mig"}, "profile": {"string": "3g.40gb"},
        "productName": {"string": "NVIDIA H100 80GB HBM3"},
        "driverVersion": {"version": "570.158.1"}, "cudaComputeCapability": {"version": "9.0.0"},
        "resource.kubernetes.io/pciBusID": {"string": "0000:10:00.0"},
        "numa": {"int": 1}, "healthy": {"bool": True},
    },
    "capacity": {"memory": {"value": "40320Mi"}, "multiprocessors": {"value": "60"},
                 "memorySlice4": {"value": "1"}},
}


def _eval(expression, device=MIG_DEVICE, driver="gpu.nvidia.com"):
    program = compile_expression(expression)
    return evaluate(program, {"device": device_variable_for(device_variable(device, driver), program)})


@pytest.mark.parametrize("expression, expected", [
    ("device.driver == 'gpu.nvidia.com'", True),
    ("device.attributes['gpu.nvidia.com'].profile == '3g.40gb'", True),
    ("device.attributes['resource.kubernetes.io'].pciBusID == '0000:10:00.0'", True),
    ("device.attributes['gpu.nvidia.com'].numa == 1 && device.attributes['gpu.nvidia.com'].healthy", True),
    ("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('39Gi')) >= 0", True),
    ("device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('40Gi'))", False),
    ("device.capacity['gpu.nvidia.com'].multiprocessors.asInteger() == 60", True),
    ("device.attributes['gpu.nvidia.com'].driverVersion.compareTo(semver('570.0.0')) >= 0", True),
    ("device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('580.0.0'))", False),
    ("device.attributes['gpu.nvidia.com'].cudaComputeCapability.major() == 9", True),
    # Unknown domain: an empty map, so has() and size() work and `in` is false.
    ("size(device.attributes['example.com']) == 0", True),
    ("!('x' in device.attributes['example.com'])", True),
    ("has(device.attributes['gpu.nvidia.com'].uuid)", False),
    ("'memorySlice4' in device.capacity['gpu.nvidia.com']", True),
    ("device.allowMultipleAllocations", False),
])
def test_selectors_on_a_mig_device(expression, expected):
    assert _eval(expression) is expected


def test_v1beta1_basic_form():
    basic = {"name": "gpu-0", "basic": {"attributes": {"type": {"string": "gpu"}},
                                         "capacity": {"memory": {"value": "80Gi"}}}}
    assert _eval("device.attributes['gpu.nvidia.com'].type == 'gpu' && "
                 "device.capacity['gpu.nvidia.com'].memory == quantity('80Gi')", basic) is True


def test_bad_device_data():
    with pytest.raises(DeviceDataError, match="not a semantic version"):
        device_variable({"name": "d", "attributes": {"v": {"version": "1.2"}}}, "x.io")
    with pytest.raises(DeviceDataError, match="exactly one"):
        device_variable({"name": "d", "attributes": {"v": {"string": "a", "int": 1}}}, "x.io")
    with pytest.raises(DeviceDataError, match="not a Kubernetes quantity"):
        device_variable({"name": "d", "capacity": {"memory": {"value": "lots"}}}, "x.io")
