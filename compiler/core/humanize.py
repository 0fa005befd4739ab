"""Words and units for people: GPUs, cores and GiB/TiB instead of `246888m` and `2022284Mi`, and
one plain sentence naming the limit that makes a workload `never`.

Used wherever a person reads a verdict (check and compile summaries, REPORT.md, `diff` markdown
and text, the pull request); report.json and `--format json` keep Kueue's exact quantities.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from compiler.core.errors import Diagnostic
from compiler.core.quantity import QuantityError, parse_quantity
from compiler.core.resources import CPU, GPU_RESOURCE, MIG_PREFIX, is_gpu

GIB = 1024 ** 3
TIB = 1024 ** 4

# One clause of Kueue's "couldn't assign flavors" message (scheduler/flavorassigner).
_CLAUSE = re.compile(
    r"insufficient quota for (?P<resource>\S+) in flavor (?P<flavor>[^,\s]+), previously considered podsets "
    r"requests \((?P<previous>[^)]*)\) \+ current podset request \((?P<request>[^)]*)\) > maximum capacity "
    r"\((?P<capacity>[^)]*)\)")


def _number(value: Fraction) -> str:
    if value.denominator == 1:
        return str(int(value))
    text = f"{float(value):.1f}"
    return text[:-2] if text.endswith(".0") else text


def human_quantity(resource: str, value: str | int | Fraction) -> str:
    """`246888m` cpu -> `246.9 cores`, `2022284Mi` -> `1.9 TiB`, 64 GPUs -> `64 GPUs`."""
    try:
        amount = value if isinstance(value, Fraction) else parse_quantity(value)
    except QuantityError:
        return str(value)
    if resource == GPU_RESOURCE:
        return f"{_number(amount)} GPU" + ("" if amount == 1 else "s")
    if resource.startswith(MIG_PREFIX):
        return f"{_number(amount)} x MIG {resource[len(MIG_PREFIX):]}"
    if resource == "cpu":
        return f"{_number(amount)} core" + ("" if amount == 1 else "s")
    if resource == "memory" or resource.endswith("memory"):
        if amount >= TIB:
            return f"{_number(Fraction(round(amount / TIB * 10), 10))} TiB"
        return f"{_number(Fraction(round(amount / GIB * 10), 10))} GiB"
    return _number(amount)


@dataclass(frozen=True)
class Shortfall:
    """One flavor/resource Kueue found too small: the request against the most the team can reach."""

    resource: str
    flavor: str
    request: Fraction
    capacity: Fraction


def shortfalls(reason: str) -> list[Shortfall]:
    found = []
    for match in _CLAUSE.finditer(reason or ""):
        try:
            request = parse_quantity(match["previous"]) + parse_quantity(match["request"])
            capacity = parse_quantity(match["capacity"])
        except QuantityError:
            continue
        found.append(Shortfall(match["resource"], match["flavor"], request, capacity))
    return found


def humanize_reason(reason: str) -> str:
    """Kueue's message with every quantity of its quota clauses in people's units."""
    def clause(match: re.Match) -> str:
        resource = match["resource"]
        return (f"insufficient quota for {resource} in flavor {match['flavor']}, previously considered podsets "
                f"requests ({human_quantity(resource, match['previous'])}) + current podset request "
                f"({human_quantity(resource, match['request'])}) > maximum capacity "
                f"({human_quantity(resource, match['capacity'])})")
    return _CLAUSE.sub(clause, reason or "")


def _binding(found: list[Shortfall]) -> Shortfall:
    # GPUs are what people plan in; among the flavors, the one that comes closest is the limit.
    def rank(s: Shortfall) -> tuple:
        kind = 0 if is_gpu(s.resource) else 1 if s.resource == CPU else 2
        return (kind, -s.capacity, s.flavor)
    return min(found, key=rank)


def headline(workload: dict, teams: dict[str, dict]) -> str | None:
    """One sentence naming the binding limit of a `never` verdict, or None when Kueue's message
    has no quota clause to read (other reasons are already one plain sentence)."""
    found = shortfalls(workload.get("reason", ""))
    if workload.get("verdict") != "never" or not found:
        return None
    limit = _binding(found)
    team_name = workload.get("team", "the team")
    quota = next((f for f in (teams.get(team_name) or {}).get("flavors", [])
                  if f["flavor"] == limit.flavor and f["resource"] == limit.resource), None)
    reach = human_quantity(limit.resource, limit.capacity)
    if quota is not None and quota.get("burst") is not None and quota["guaranteed"] + quota["burst"] == limit.capacity:
        reach = f"{_number(limit.capacity)} = {quota['guaranteed']} guaranteed + {quota['burst']} burst"
    elif quota is not None:
        reach += f" ({quota['guaranteed']} guaranteed, the rest what its cohort lends)"
    text = (f"needs {human_quantity(limit.resource, limit.request)} at once; {team_name} can reach "
            f"{reach} on {limit.flavor}")
    return text


def plain_reason(workload: dict, teams: dict[str, dict]) -> str:
    """The headline when there is one, else the reason in people's units."""
    return headline(workload, teams) or humanize_reason(workload.get("reason", ""))


def teams_by_name(report: dict) -> dict[str, dict]:
    return {team["name"]: team for team in report.get("teams", [])}


def _cell(text: str) -> str:
    """Text safe in a markdown table cell that may hold HTML (<details>)."""
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")
            .replace("\n", " "))


def reason_markdown(workload: dict, teams: dict[str, dict]) -> str:
    """A table cell: the plain sentence, Kueue's whole message folded under it."""
    lead = headline(workload, teams)
    full = humanize_reason(workload.get("reason") or "")
    if lead is None:
        return _cell(full)
    return f"{_cell(lead)}<details><summary>Kueue's message</summary>{_cell(full)}</details>"


def reason_text(workload: dict, teams: dict[str, dict]) -> str:
    """Plain text: the sentence, then Kueue's message in people's units."""
    lead = headline(workload, teams)
    full = humanize_reason(workload.get("reason") or "")
    return f"{lead} (Kueue: {full})" if lead else full


_WORSE = re.compile(r"^Workload (?P<team>[^/\s]+)/(?P<name>\S+) gets worse: (?P<before>\S+) -> (?P<after>\S+) "
                    r"\((?P<reason>.*)\)$", re.S)


def short_warning(text: str, teams: dict[str, dict]) -> str:
    """A diff warning for people: a verdict that gets worse says its binding limit in one sentence
    (the workload's row keeps Kueue's whole message); every quantity in people's units."""
    match = _WORSE.match(text)
    if match is not None:
        lead = headline({"team": match["team"], "verdict": match["after"], "reason": match["reason"]}, teams)
        if lead is not None:
            return f"Workload {match['team']}/{match['name']} gets worse: {match['before']} -> {match['after']}: {lead}"
    return humanize_reason(text)


def never_in_plain_words(result) -> list[Diagnostic]:
    """KP601 for every `never` of a CompileResult, led by the plain sentence with Kueue's message (in people's units) after it."""
    # never_diagnostics() follows the clusters' verdict order: the same walk pairs each with its verdict.
    judged = [(v.to_dict(), teams_by_name(artifacts.report)) for artifacts in result.clusters.values()
              for v in artifacts.verdicts if v.verdict == "never"]
    found = []
    for diagnostic, (workload, teams) in zip(result.never_diagnostics(), judged):
        lead = headline(workload, teams)
        message = (f"workload '{workload['name']}' of team '{workload['team']}' would never be admitted: "
                   + (f"{lead}. Kueue: " if lead else "") + humanize_reason(workload["reason"]))
        found.append(Diagnostic(diagnostic.code, message, diagnostic.position, diagnostic.severity, diagnostic.related))
    return found
