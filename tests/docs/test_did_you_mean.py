"""A misspelt field gets the closest allowed name in its diagnostic, at the misspelt key."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from kp_testing import REPO_ROOT, run_cli


def _policy_copy(tmp_path: Path) -> Path:
    target = tmp_path / "policies"
    shutil.copytree(REPO_ROOT / "policies", target)
    return target


def _replace(path: Path, old: str, new: str) -> int:
    """Replace the first `old`; return the 1-based line it was on."""
    text = path.read_text()
    index = text.index(old)
    path.write_text(text[:index] + new + text[index + len(old):])
    return text[:index].count("\n") + 1


def test_misspelt_fields_get_a_suggestion_at_their_line_and_column(tmp_path: Path) -> None:
    policies = _policy_copy(tmp_path)
    cluster, alpha = policies / "cluster.yaml", policies / "teams" / "alpha.yaml"
    pool_line = _replace(cluster, "      gpusPerNode: 8", "      gpusPerNod: 8")
    fair_line = _replace(cluster, "fairSharing: {enabled: true}", "fairSharing: {enabeld: true}")
    team_line = _replace(alpha, "  priority: standard", "  prority: standard")
    wl_line = _replace(alpha, "gang: true", "ganng: true")
    result = run_cli("validate", str(policies))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()

    def diagnostic(field: str) -> str:
        found = [line for line in lines if f"unknown field '{field}'" in line]
        assert len(found) == 1, result.stderr
        return found[0]

    assert re.search(rf"cluster\.yaml:{pool_line}:7: error\[KP\d+\]: unknown field 'gpusPerNod' in spec\.pools\[0\]; "
                     r"did you mean 'gpusPerNode'\?$", diagnostic("gpusPerNod"))
    assert re.search(rf"cluster\.yaml:{fair_line}:\d+: .*in spec\.fairSharing; did you mean 'enabled'\?$",
                     diagnostic("enabeld"))
    assert re.search(rf"alpha\.yaml:{team_line}:3: .*in spec; did you mean 'priority'\?$", diagnostic("prority"))
    assert re.search(rf"alpha\.yaml:{wl_line}:\d+: .*in spec\.workloads\[1\]; did you mean 'gang'\?$",
                     diagnostic("ganng"))


def test_a_field_inside_a_union_member_and_one_with_no_close_name(tmp_path: Path) -> None:
    policies = _policy_copy(tmp_path)
    cluster = policies / "cluster.yaml"
    mig_line = _replace(cluster, "      mig: planned", "      mig: {layuot: {3g.40gb: 2}}")
    _replace(cluster, "  overcommit: 1.0", "  overcommit: 1.0\n  zzzqqq: 1")
    result = run_cli("validate", str(policies))
    assert result.returncode == 1
    # Pointed at the misspelt key inside the mapping (column 13), not at `mig:`.
    assert (f"cluster.yaml:{mig_line + 1}:13: error[KP204]: unknown field 'layuot' in spec.pools[3].mig; "
            "did you mean 'layout'?") in result.stderr
    nothing_close = next(line for line in result.stderr.splitlines() if "'zzzqqq'" in line)
    assert nothing_close.endswith("unknown field 'zzzqqq' in spec"), nothing_close


def test_a_misspelt_team_field_is_named_with_its_suggestion(tmp_path: Path) -> None:
    policies = _policy_copy(tmp_path)
    _replace(policies / "teams" / "beta.yaml", "  capacity: spot-first", "  capacityy: spot-first")
    result = run_cli("validate", str(policies))
    assert "did you mean 'capacity'?" in result.stderr
    assert result.returncode == 1
