"""The collector settings of long engine runs: changed inside the block, restored after it."""

from __future__ import annotations

import gc

import pytest

from compiler.runtime.garbage_collection import YOUNG_THRESHOLD, few_collections


@pytest.fixture(autouse=True)
def _restore_collector():
    threshold, enabled = gc.get_threshold(), gc.isenabled()
    yield
    gc.set_threshold(*threshold)
    gc.unfreeze()
    (gc.enable if enabled else gc.disable)()


def test_inside_the_block_existing_objects_are_frozen_and_young_collections_rarer():
    gc.set_threshold(700, 10, 10)
    kept = [object() for _ in range(10)]
    with few_collections():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0
    assert kept


def test_nested_blocks_leave_the_outer_block_in_charge():
    gc.set_threshold(700, 10, 10)
    with few_collections():
        frozen = gc.get_freeze_count()
        with few_collections():
            pass
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD
        assert gc.get_freeze_count() == frozen
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0


def test_an_exception_restores_the_collector():
    gc.set_threshold(700, 10, 10)
    with pytest.raises(RuntimeError):
        with few_collections():
            raise RuntimeError("boom")
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0
    with few_collections():  # and the next block acts again
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD


def test_a_disabled_collector_stays_disabled_and_untouched():
    gc.set_threshold(700, 10, 10)
    gc.disable()
    with few_collections():
        assert not gc.isenabled()
        assert gc.get_threshold() == (700, 10, 10)
        assert gc.get_freeze_count() == 0
    assert not gc.isenabled()
