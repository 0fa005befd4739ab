"""`kueue-policy trace synth`: a seeded synthetic trace from the policy's declared workloads.

For a team with no history: jobs arrive as a Poisson process (exponential gaps at the given
rate, over all teams), each job is one of the declared workloads (chosen uniformly), and runs for
a duration drawn from the chosen distribution. The same policy, options and seed give the same
bytes.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from compiler.core import codes
from compiler.core.errors import Diagnostic, InputError
from compiler.stages.resolved_model import ResolvedCluster
from compiler.simulate.trace import MAX_AT, MAX_DURATION

DISTRIBUTIONS = ("exponential", "lognormal", "fixed")
SHAPE_FIELDS = ("replicas", "gpus", "mig", "gpuMemory", "cpu", "memory", "priority")


@dataclass(frozen=True)
class SynthOptions:
    jobs: int = 1000
    seed: int = 0
    rate_per_hour: float = 60.0        # arrivals per hour, whole cluster
    mean_duration: float = 3600.0      # seconds
    distribution: str = "exponential"
    sigma: float = 1.0                 # lognormal only: spread of log(duration)


def declared_shapes(cluster: ResolvedCluster) -> list[tuple[str, dict]]:
    """(team, declared workload fields) for every declared workload, in policy order."""
    shapes = []
    for team in cluster.teams:
        for workload in team.workloads:
            spec = workload.spec
            fields = {name: getattr(spec, name) for name in SHAPE_FIELDS if getattr(spec, name) is not None}
            fields["base"] = spec.name
            shapes.append((team.name, fields))
    return shapes


def _duration(rng: random.Random, options: SynthOptions) -> int:
    if options.distribution == "fixed":
        value = options.mean_duration
    elif options.distribution == "lognormal":
        # Parameterised by its mean: mu chosen so that E[duration] = mean_duration.
        mu = math.log(options.mean_duration) - options.sigma ** 2 / 2
        value = rng.lognormvariate(mu, options.sigma)
    else:
        value = rng.expovariate(1.0 / options.mean_duration)
    # (a trace's runs last at most MAX_DURATION: a long-tailed draw is cut there)
    return min(MAX_DURATION, max(1, int(round(value))))


def synthesize(cluster: ResolvedCluster, options: SynthOptions) -> list[dict]:
    """The trace's `jobs` list (plain dicts, ready to dump as YAML or CSV)."""
    shapes = declared_shapes(cluster)
    rng = random.Random(options.seed)
    at = 0.0
    jobs = []
    for index in range(options.jobs):
        team, fields = shapes[rng.randrange(len(shapes))]
        job = {"team": team, "name": f"{fields['base']}-{index}", "at": int(at),
               "duration": _duration(rng, options)}
        job.update({k: v for k, v in fields.items() if k != "base"})
        jobs.append(job)
        at += rng.expovariate(options.rate_per_hour / 3600.0)
        if at > MAX_AT and index + 1 < options.jobs:
            raise InputError([Diagnostic(codes.TRACE_BAD, f"{options.jobs} jobs at {options.rate_per_hour:g} an "
                                         f"hour would arrive over more than {MAX_AT} s, the longest trace "
                                         "`simulate` reads: raise --rate or lower --jobs", None)])
    return jobs


def to_csv(jobs: list[dict]) -> str:
    columns = ["team", "name", "at", "duration"] + [c for c in SHAPE_FIELDS if any(c in j for j in jobs)]
    lines = [",".join(columns)]
    for job in jobs:
        lines.append(",".join(str(job.get(c, "")) for c in columns))
    return "\n".join(lines) + "\n"


def to_yaml(jobs: list[dict]) -> str:
    order = ["name", "team", "at", "duration", *SHAPE_FIELDS]
    lines = ["jobs:"]
    for job in jobs:
        cells = ", ".join(f"{k}: {_yaml_scalar(job[k])}" for k in order if k in job)
        lines.append(f"  - {{{cells}}}")
    return "\n".join(lines) + "\n"


def _yaml_scalar(value: object) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value).lower() if isinstance(value, bool) else str(value)
