"""The policy's escape hatch: Kueue fields written in Kueue's own words (docs/how-to/import.md).

The policy language describes GPU budgets; a cluster set up by hand states exact quotas, several
resource groups, admission checks, flavor fungibility, a stop policy, LocalQueues of any name.
`kueue-policy import` carries each of those through the fields below, which compile to the same
Kueue field unchanged. They are checked where Kueue checks them: the emitted object goes through
Kueue's CRD schema and webhook rules in verify, so a typo is reported there, at the team's line.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LocalQueueName(_Strict):
    """One LocalQueue of the team: its namespace and name (the language's default is `default`)."""
    namespace: Annotated[str, Field(pattern=DNS_LABEL, max_length=63)] = Field(
        description="Namespace of the LocalQueue.")
    name: Annotated[str, Field(pattern=DNS_SUBDOMAIN, max_length=253)] = Field(
        description="Name of the LocalQueue (jobs name it in the kueue.x-k8s.io/queue-name label).")
    stopPolicy: Literal["None", "Hold", "HoldAndDrain"] | None = Field(
        None, description="LocalQueue spec.stopPolicy, copied as written.")


class ClusterQueueFields(_Strict):
    """Fields of the team's ClusterQueue written verbatim in Kueue's form; each replaces what the
    compiler would derive (resourceGroups replaces the quota computed from gpus/mig)."""
    resourceGroups: list[dict[str, Any]] | None = Field(
        None, max_length=16,
        description="ClusterQueue spec.resourceGroups exactly as Kueue takes them (coveredResources, flavors, "
                    "per-resource nominalQuota/borrowingLimit/lendingLimit); replaces the quota compiled from "
                    "gpus and mig.")
    namespaceSelector: dict[str, Any] | None = Field(
        None, description="ClusterQueue spec.namespaceSelector (a label selector); replaces the selector of the "
                          "team's namespaces. {} admits every namespace.")
    flavorFungibility: dict[str, Any] | None = Field(
        None, description="ClusterQueue spec.flavorFungibility (whenCanBorrow, whenCanPreempt).")
    admissionChecks: list[str] | None = Field(
        None, max_length=64, description="ClusterQueue spec.admissionChecks (names of AdmissionChecks).")
    admissionChecksStrategy: dict[str, Any] | None = Field(
        None, description="ClusterQueue spec.admissionChecksStrategy (admission checks per flavor).")
    stopPolicy: Literal["None", "Hold", "HoldAndDrain"] | None = Field(
        None, description="ClusterQueue spec.stopPolicy.")
    localQueues: list[LocalQueueName] | None = Field(
        None, max_length=10_000,
        description="The team's LocalQueues by namespace and name; replaces one LocalQueue named default per "
                    "namespace.")

    def spec_fields(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in CLUSTER_QUEUE_SPEC_FIELDS if getattr(self, name) is not None}


# Copied as written into ClusterQueue.spec, in this order.
CLUSTER_QUEUE_SPEC_FIELDS = ("namespaceSelector", "flavorFungibility", "admissionChecks", "admissionChecksStrategy",
                             "stopPolicy")


class KueueTopology(_Strict):
    """A Kueue Topology in Kueue's words: its name and levels (node labels, coarsest first)."""
    name: Annotated[str, Field(pattern=DNS_LABEL, max_length=63)] = Field(description="The Topology's name "
                                                                              "(flavors name it in topologyName).")
    levels: list[Annotated[str, Field(min_length=1, max_length=316)]] = Field(
        min_length=1, max_length=16, description="Topology spec.levels' nodeLabel values, coarsest first.")
