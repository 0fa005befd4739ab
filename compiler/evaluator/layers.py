"""The engine's optional layers, each with its own switch: its own speed-ups, which Kueue does
not have, laid over the plain engine (docs/engine.md). Each keeps answers while what they depend
on has not changed, and decides exactly what the plain engine decides; tests/evaluator/
test_layers.py checks each one alone against the plain engine, so a mismatch names the layer."""

from __future__ import annotations

# Each layer, what it is, and the layers it works over (without them it has nothing to keep).
LAYERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "nomination_cache": ("a head's nomination reused while its readings decide the same "
                         "(nomination_cache.CachedNominator)", ()),
    "class_nominations": ("a nomination reused by the other workloads of its equivalence class in the same "
                          "queue and scan position (nomination_cache)", ("nomination_cache",)),
    "preemption_cache": ("a preemption search's answer kept while what it read holds "
                         "(preemption.Preemptor._kept)", ()),
    "fair_search_shortcuts": ("a fair-sharing search cut short where its end is already known "
                              "(fair_preemption: _below_all, the second chance skipped), and the queues "
                              "that borrow a contested pair kept across commits of other pairs "
                              "(_reclaimable)", ()),
    "fair_tournament": ("the fair-sharing tournament kept from pick to pick, each ranking brought up to "
                        "date (fair_tournament.FairTournament) instead of run again", ()),
    "answer_bounds": ("a head's nomination reused while its queue's own workloads stay put and its ancestors' "
                      "usage stays within bounds its readings set (answer_bounds)", ("nomination_cache",)),
    "quiet_queues": ("a moment's queues that would repeat their last moment left unwalked "
                     "(quiet_queues.QuietQueues; simulate)", ("nomination_cache",)),
    "circles": ("a run that comes back to a state it was in answered from the circle's period "
                "(circles.CircleFinder; evaluate)", ()),
}


class EngineLayers:
    """Which optional layers an engine runs with (all by default; none: the plain engine, every
    answer worked out afresh as Kueue works it out)."""

    __slots__ = tuple(LAYERS)

    def __init__(self, **switches: bool) -> None:
        unknown = sorted(set(switches) - set(LAYERS))
        if unknown:
            raise ValueError(f"no engine layer {unknown[0]!r} (the layers: {', '.join(LAYERS)})")
        for name in LAYERS:
            setattr(self, name, bool(switches.get(name, True)))
        for name, (_, needs) in LAYERS.items():
            missing = [need for need in needs if not getattr(self, need)]
            if getattr(self, name) and missing:
                raise ValueError(f"engine layer {name} works over {missing[0]}, which is off")

    @classmethod
    def chosen(cls, layers: "EngineLayers | None", reuse: bool = True) -> "EngineLayers":
        """`layers` if given; else all of them, or with `reuse=False` (the older switch) every
        cache off: nominations and preemption searches recomputed, each search made whole, the
        tournament run again, every queue walked. Circle detection stays on then: it has its
        own switch too, `Engine.run(circles=False)`."""
        if layers is not None:
            return layers
        return cls() if reuse else cls.only("circles")

    @classmethod
    def none(cls) -> "EngineLayers":
        """The plain engine."""
        return cls(**{name: False for name in LAYERS})

    @classmethod
    def only(cls, *names: str) -> "EngineLayers":
        """These layers and those they work over, no other."""
        wanted = set(names)
        for name in names:
            wanted.update(LAYERS[name][1] if name in LAYERS else ())
        return cls(**{name: name in wanted for name in LAYERS})

    def preemption_layers(self) -> tuple[bool, bool]:
        """The preemptor's switches: (its answers kept, fair-sharing searches cut short)."""
        return self.preemption_cache, self.fair_search_shortcuts

    def on(self) -> list[str]:
        return [name for name in LAYERS if getattr(self, name)]

    def __repr__(self) -> str:
        return f"EngineLayers({', '.join(self.on()) or 'none'})"
