"""Stable diagnostic codes. `kueue-policy explain CODE` prints the long form.

Ranges (one per stage or area, so a code tells where to look):
    KP1xx  load: YAML syntax, encoding, duplicate keys, aliases
    KP2xx  validate: document shape, types, names, values
    KP3xx  resolve: references, uniqueness, cohort tree
    KP4xx  plan: capacity and quota placement
    KP5xx  verify: what the Kueue / Kubernetes API server and webhooks would refuse
    KP6xx  admissibility of declared workloads
    KP7xx  MIG and DRA
    KP8xx  delivery: git, forges, diff
    KP9xx  evaluate: reading cluster exports
A code, once released, keeps its meaning. Add new ones; never renumber.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CodeInfo:
    code: str
    summary: str
    explanation: str


_REGISTRY: dict[str, CodeInfo] = {}


def register(code: str, summary: str, explanation: str = "") -> str:
    if code in _REGISTRY and _REGISTRY[code].summary != summary:
        raise ValueError(f"diagnostic code {code} registered twice with different meanings")
    _REGISTRY[code] = CodeInfo(code, summary, explanation or summary)
    return code


def lookup(code: str) -> CodeInfo | None:
    return _REGISTRY.get(code.upper())


def all_codes() -> list[CodeInfo]:
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


# --- KP1xx load -------------------------------------------------------------------------------
YAML_SYNTAX = register("KP101", "YAML syntax error",
    "The file is not valid YAML. The position points at the first character the parser could "
    "not accept. Tabs are not allowed for indentation in YAML.")
NOT_UTF8 = register("KP102", "file is not UTF-8",
    "Policy files must be UTF-8 text. Re-save the file as UTF-8.")
DUPLICATE_KEY = register("KP103", "duplicate mapping key",
    "A key appears twice in the same mapping. YAML parsers silently keep one of them, which hides "
    "mistakes, so kueue-policy refuses the file.")
ALIAS_REJECTED = register("KP104", "YAML anchors and aliases are not allowed",
    "Policy files may not use anchors (&a) or aliases (*a). Aliases make 'billion laughs' "
    "expansion attacks possible and make policies harder to review; write the values out.")
EMPTY_POLICY = register("KP105", "no policy documents found",
    "The policy folder holds no *.yaml or *.yml document. Point kueue-policy at the folder that "
    "holds your Cluster and Team files.")
TABS = register("KP106", "tab character in indentation",
    "YAML forbids tabs for indentation. Replace them with spaces.")
UNREADABLE = register("KP107", "file or folder cannot be read",
    "The path does not exist or cannot be read.")

# --- KP2xx validate ---------------------------------------------------------------------------
DOC_NOT_MAPPING = register("KP201", "document is not a mapping",
    "Every policy document is a mapping with apiVersion, kind, metadata and spec.")
WRONG_API_VERSION = register("KP202", "unsupported apiVersion",
    "Policy documents must say `apiVersion: kueue-policy/v1alpha1`.")
UNKNOWN_KIND = register("KP203", "unknown kind",
    "The kinds of the policy language are Cluster and Team.")
UNKNOWN_FIELD = register("KP204", "unknown field",
    "The field is not part of the policy language. Check its spelling against docs/policy-reference.md (the diagnostic suggests the closest field name).")
WRONG_TYPE = register("KP205", "wrong type or value",
    "The value has the wrong type, or is outside the allowed range or set of values.")
MISSING_FIELD = register("KP206", "required field missing",
    "A field the policy language requires is not present.")
BAD_NAME = register("KP207", "name is not a DNS-1123 label",
    "Names become Kubernetes object names and file names: lower-case letters, digits and '-', "
    "starting and ending with a letter or digit, at most 63 characters.")
BAD_QUANTITY = register("KP208", "not a Kubernetes quantity",
    "Quantities are written as Kubernetes writes them: 16, 500m, 128Gi, 1.5.")

# --- KP3xx resolve ----------------------------------------------------------------------------
DUPLICATE_NAME = register("KP301", "duplicate name",
    "Two objects of the same kind have the same name (teams, clusters, pools, cohorts, "
    "priorities).")
NAMESPACE_CLAIMED_TWICE = register("KP302", "namespace claimed twice",
    "A namespace belongs to exactly one team, because its LocalQueue points at one ClusterQueue.")
UNKNOWN_CLUSTER = register("KP303", "unknown cluster", "The team names a cluster no Cluster document defines.")
UNKNOWN_COHORT = register("KP304", "unknown cohort", "The name is not one of the cluster's cohorts.")
UNKNOWN_PRIORITY = register("KP305", "unknown priority", "The name is not one of the cluster's priorities.")
UNKNOWN_MODEL = register("KP306", "unknown GPU model", "No pool of the cluster has this GPU model.")
UNKNOWN_MIG_PROFILE = register("KP307", "unknown MIG profile",
    "The MIG profile does not exist for the GPU model it would run on. Profile names are per "
    "model: 3g.40gb exists on H100-80GB but not on A100-40GB.")
COHORT_CYCLE = register("KP308", "cohort cycle",
    "Cohort parents form a cycle. Kueue disables every ClusterQueue in a cycle.")
LIMIT_WITHOUT_COHORT = register("KP309", "burst or lend without a cohort",
    "burst (borrowingLimit) and lend (lendingLimit) only mean something inside a cohort; Kueue "
    "refuses them on a ClusterQueue without cohortName.")
LEND_ABOVE_GUARANTEE = register("KP310", "lend above guaranteed",
    "lend (lendingLimit) may be at most guaranteed (nominalQuota).")
NO_CLUSTER = register("KP311", "no Cluster document", "Teams need a Cluster document to attach to.")
DEFAULT_PRIORITY_TWICE = register("KP312", "more than one default priority",
    "At most one priority may be marked default.")
UNKNOWN_TEAM = register("KP314", "unknown team", "The name is not one of the policy's teams.")
NO_ACCEPTABLE_POOL = register("KP313", "no pool the team accepts",
    "The team's capacity and models preferences exclude every pool of the cluster.")

# Topology (Kueue's Topology Aware Scheduling): what Kueue refuses, caught at the policy's line.
TOPOLOGY_LEVELS = register("KP320", "topology levels Kueue refuses",
    "A Kueue Topology has 1 to 16 levels, each node label once, and kubernetes.io/hostname only as "
    "the last (finest) level. Kueue's API server refuses any other Topology, and the pool's flavor "
    "would point at a Topology that does not exist.")
TOPOLOGY_SHAPE = register("KP321", "topology shape disagrees with the pool",
    "A regular topology (holds on every level) must describe exactly the pool's nodes: nodes must "
    "be a whole number of top-level domains. Fix holds or nodes, or give the real node list as "
    "nodesFrom.")
TOPOLOGY_NODE_LIST = register("KP322", "node list disagrees with the pool",
    "topology.nodesFrom names a `kubectl get nodes -o yaml` export in the policy folder. The nodes "
    "whose labels match the pool's nodeLabels must number the pool's nodes, carry every topology "
    "level's label, and have no more GPUs allocatable than gpusPerNode.")
TOPOLOGY_NAME = register("KP323", "topology name used twice",
    "Pools with the same levels share one Kueue Topology; two different level lists cannot have the "
    "same Topology name, and pools with the same levels cannot name two Topologies.")
WORKLOAD_TOPOLOGY_LEVEL = register("KP324", "workload topology level not in the pool's topology",
    "A declared workload's required, preferred or slice level must be a level of the topology of a "
    "pool the team accepts; Kueue only places a topology request on a flavor with that level, so "
    "the job would never be admitted. Slice layers go coarsest first, each at or below the "
    "required or preferred level.")
WORKLOAD_SLICE_SIZE = register("KP325", "slice size does not divide the pods",
    "Kueue places a sliced workload as replicas / size slices of size pods: the size must divide "
    "the workload's replicas, and a lower layer's size must divide the layer above. Otherwise "
    "Kueue refuses the job's annotation or never admits it.")
TOPOLOGY_DRA_CLAIMS = register("KP326", "topology with gpuAccess dra-claims",
    "Kueue v0.19's Topology Aware Scheduling counts the resources in the pods' requests against "
    "node allocatable; it does not count devices of DRA ResourceClaims. With gpuAccess dra-claims "
    "Kueue could place more GPU pods in a domain than it has GPUs, so kueue-policy refuses to "
    "promise topology there. Use gpuAccess device-plugin with topology. With dra-extended-resource "
    "the same code is a warning: TAS reads the GPUs a domain has from node allocatable, where a "
    "resource a DRA driver provides is not listed.")

NODE_TOO_SMALL = register("KP340", "pool's nodes smaller than the default share of a full-node pod",
    "A pool states its nodes' allocatable cpu and memory (allocatable, or a node export). The cpu and "
    "memory that come with each GPU (resourcesPerGpu) times the GPUs of one node is more than a node "
    "offers: a pod that asks for a whole node's GPUs with the default share of cpu or memory fits no "
    "node and never starts, though Kueue admits it. Lower resourcesPerGpu, or give such workloads an "
    "explicit cpu/memory.")

# --- KP4xx plan -------------------------------------------------------------------------------
OVER_CAPACITY = register("KP401", "guarantees exceed capacity",
    "The guarantees placed on the pools a team accepts add up to more GPUs than those pools have "
    "(nodes x gpusPerNode x overcommit). The message says which pool is short and by how much.")

UNREACHABLE_GPUS = register("KP402", "GPUs no team can reach",
    "A pool's GPUs that no team is guaranteed are used only by borrowing, and Kueue bounds each "
    "team's borrowing per flavor (its borrowingLimit there). The guarantees on the pool plus the "
    "borrowing limits of every team that accepts it add up to less than its GPUs: the rest stay idle "
    "whatever the demand. A team's burst is split over its pools, those holding its guarantee first "
    "(docs/concepts.md, Ceilings), so a pool holding few guarantees gets little of anyone's burst. "
    "Place part of some teams' guarantees on the pool, give them a burst larger than their first "
    "pools can lend (the rest spills to the next pools), or omit burst (no ceiling).")

# --- KP5xx verify -----------------------------------------------------------------------------
KUEUE_SCHEMA = register("KP501", "Kueue API would refuse the object",
    "The emitted object breaks Kueue's CRD schema (types, enums, limits, unknown fields).")
KUEUE_CEL_RULE = register("KP502", "Kueue CEL validation rule fails",
    "The emitted object breaks one of the x-kubernetes-validations rules of Kueue's CRDs.")
KUEUE_WEBHOOK = register("KP503", "Kueue webhook would refuse the object",
    "Kueue's validating webhook would refuse the object (duplicate resources or flavors, limits "
    "above nominal, limits without a cohort, ...).")
K8S_SCHEMA = register("KP504", "Kubernetes API would refuse the object",
    "A built-in object (DeviceClass, ResourceClaimTemplate, ConfigMap, ...) fails strict "
    "validation against the cluster's Kubernetes version.")
VERSION_GATE = register("KP505", "feature not available at this version",
    "The policy asks for something the cluster's Kubernetes or Kueue version does not support.")
KUEUE_UNKNOWN_FIELD = register("KP506", "unknown field in an emitted object",
    "The object carries a field its API does not define. The API server would drop it silently "
    "(pruning) or refuse it (strict field validation); either way it is a compiler bug.")
OBJECT_METADATA = register("KP507", "invalid object metadata",
    "The object's name, namespace, labels or annotations break Kubernetes' rules (DNS names, "
    "label keys and values), or a namespaced object has no namespace.")
UNKNOWN_OBJECT_KIND = register("KP508", "no schema for this apiVersion and kind",
    "The verifier knows no schema for the object's apiVersion and kind at the cluster's version, "
    "or the object has no apiVersion or kind.")
DEVICE_CLASS_MAPPINGS = register("KP509", "Kueue deviceClassMappings invalid",
    "Kueue's Configuration resources.deviceClassMappings breaks Kueue's configuration rules "
    "(at most 16 mappings, unique names, 1..8 DeviceClasses each, a DeviceClass mapped once, one "
    "source type per entry). Kueue refuses to start with such a configuration.")
DUPLICATE_OBJECT = register("KP510", "two emitted objects have the same identity",
    "Two emitted objects have the same kind, namespace and name; applying both would keep only "
    "the last one.")

# Kueue's manager Configuration (spec.kueueConfig): the merged file Kueue would refuse or that
# would make Kueue behave unlike the policy's verdicts.
KUEUE_CONFIG_BASE_MISSING = register("KP520", "spec.kueueConfig.base names no Kueue Configuration",
    "spec.kueueConfig.base is a path relative to the cluster file, inside the policy folder, to a "
    "YAML file holding Kueue's manager Configuration (apiVersion config.kueue.x-k8s.io/v1beta1 or "
    "v1beta2, kind Configuration), the controller_manager_config.yaml your Kueue installation runs.")
KUEUE_CONFIG_CONTRADICTS = register("KP521", "the Kueue Configuration base contradicts the policy",
    "A setting of spec.kueueConfig.base would make Kueue behave unlike the policy: fair sharing off "
    "while the policy enables it (or the reverse), other preemption strategies than the policy's, a "
    "deviceClassMappings entry counting a DeviceClass as another resource than the policy does, a "
    "resources.transformations or excludeResourcePrefixes entry touching a resource the policy's "
    "quotas count, or a Configuration API the cluster's Kueue version does not serve. Change the "
    "base or the policy so that they agree; the message names both places.")
KUEUE_CONFIG_NO_DEFAULT = register("KP522", "no default Kueue Configuration for this Kueue version",
    "kueue-policy ships Kueue's default manager Configuration for the Kueue versions it knows. For "
    "another version, give your installation's Configuration as spec.kueueConfig.base so that "
    "nothing Kueue runs with is guessed.")

LIVE_APPLY_REFUSED = register("KP530", "a live API server refused the compiled tree",
    "`sandbox up --out` applied the tree with server-side apply and the API server (or one of "
    "Kueue's webhooks) refused an object; the message gives the server's own words. The verify "
    "stage should have caught it: please report it.")
LIVE_QUEUE_INACTIVE = register("KP531", "a ClusterQueue did not become Active on a live Kueue",
    "After the tree was applied, Kueue's manager left a ClusterQueue inactive; the message gives "
    "the ClusterQueue's Active condition (a missing ResourceFlavor, an unknown AdmissionCheck, "
    "...).")

LIVE_UNREADABLE = register("KP540", "the live cluster cannot be read",
    "`drift` reads the cluster with kubectl (the kubeconfig and context given, or kubectl's own). "
    "kubectl is missing, the API server did not answer, or it refused the credentials; the message "
    "gives kubectl's own words. Give the objects as exports with --live to compare offline.")

# --- KP6xx admissibility ----------------------------------------------------------------------
NEVER_ADMISSIBLE = register("KP601", "declared workload can never be admitted",
    "Kueue would never admit this workload with this policy, even on an idle cluster. Compile "
    "fails unless --allow-inadmissible is given.")

# --- KP7xx MIG and DRA ------------------------------------------------------------------------
MIG_UNKNOWN_MODEL = register("KP701", "GPU model not in the MIG catalogue",
    "MIG planning needs the model's geometry. Known models: A30-24GB, A100-40GB, A100-80GB, "
    "H100-80GB, H100-94GB, H100-96GB, H200-141GB, GH200-144GB, B200-180GB, GB200-186GB, "
    "B300-288GB, GB300-288GB.")
MIG_UNKNOWN_PROFILE = register("KP702", "MIG profile unknown for this GPU model",
    "Profile names are per model: 3g.40gb exists on H100-80GB and A100-80GB but not on "
    "A100-40GB (whose 3g is 3g.20gb). The message lists the model's profiles.")
MIG_BAD_DEMAND = register("KP703", "bad MIG demand",
    "MIG demand is written PROFILE=N with N a whole number >= 0.")
MIG_UNPLACEABLE = register("KP704", "MIG layout cannot be placed on one GPU",
    "A fixed per-GPU layout must be physically creatable: instances sit on the memory-slice axis "
    "at their allowed start slices without overlapping, counts stay within each profile's "
    "maximum, and at most one +me (media extension) instance exists per GPU.")
MIG_DEMAND_TOO_BIG = register("KP705", "MIG demand does not fit the available GPUs",
    "The exact planner needs more GPUs than the MIG pools (or --gpus) provide. The message gives "
    "the optimum and the lower bound.")
DRA_VERSION = register("KP706", "DRA needs a newer Kubernetes",
    "resource.k8s.io/v1 DeviceClasses and claims need Kubernetes >= 1.34; extendedResourceName "
    "(gpuAccess dra-extended-resource) needs 1.36, or the DRAExtendedResource feature gate "
    "declared on 1.34/1.35.")
CEL_COMPILE = register("KP707", "CEL expression does not compile",
    "The expression has a syntax error or calls a function the Kubernetes DRA CEL environment "
    "does not have. The position is the line and column inside the expression (or the file).")
CEL_EVALUATION = register("KP708", "CEL expression fails at evaluation",
    "Evaluating the expression raised an error (a missing attribute, a wrong type). Guard "
    "optional attributes with has() or `'name' in map`.")
NOT_RESOURCE_SLICES = register("KP709", "inventory is not ResourceSlices",
    "devices check reads `kubectl get resourceslices -o yaml` output: ResourceSlice objects "
    "(resource.k8s.io/v1, v1beta2 or v1beta1) or a List of them.")
NO_MATCHING_DEVICE = register("KP710", "no device matches the selector",
    "No device in the inventory matches this DeviceClass (or claim). On the cluster, pods using it "
    "would stay pending. Check the class's CEL selector against the devices' attributes.")
FEWER_DEVICES_THAN_REQUESTED = register("KP711", "fewer matching devices than a claim requests",
    "The claim template asks for more devices than the inventory has that match its class and "
    "selectors.")
BAD_MANIFEST = register("KP712", "manifest cannot be read as DeviceClasses or claim templates",
    "devices check reads DeviceClass and ResourceClaimTemplate objects from --out DIR or manifest "
    "files; the file is not YAML or the object is malformed.")
CEL_UNSUPPORTED = register("KP713", "CEL construct not evaluated",
    "The expression uses a construct the project's CEL engine does not evaluate (cel.bind, "
    "optional syntax .?x). It is reported instead of being silently passed or failed.")
DRA_MAPPING_LIMIT = register("KP714", "deviceClassMappings break Kueue's limits",
    "Kueue's Configuration accepts at most 16 deviceClassMappings, 1 to 8 DeviceClasses each, and "
    "a DeviceClass in one mapping only.")

POOL_DEVICES_SHORT = register("KP715", "the inventory holds fewer devices than the pools declare",
    "`devices check --out` compares the ResourceSlices with what the compiled pools declare: the "
    "GPUs (and nodes) of every whole-GPU pool of a model, and the MIG instances of every MIG pool, "
    "against the devices the model's DeviceClass matches. Fewer means Kueue hands out quota for "
    "GPUs that do not exist: admitted jobs whose pods pend. Fix the pool's nodes (or the nodes).")

# --- KP8xx delivery: git, forges, diff ---------------------------------------------------------
NOT_A_GIT_REPO = register("KP801", "not inside a git repository",
    "diff and pr read the policy from git. Run them inside a clone of your policy repository.")
UNKNOWN_REVISION = register("KP802", "unknown git revision",
    "The revision given to diff does not exist in this repository (check `git log`, or fetch it).")
BRANCH_TOUCHED_BY_PERSON = register("KP803", "the bot branch has commits a person pushed",
    "The pull request branch carries commits kueue-policy did not make. kueue-policy never "
    "rewrites such a branch: merge or close the pull request, or delete the branch, then rerun.")
FORGE_AUTH = register("KP804", "the forge refused the token",
    "GitHub or GitLab answered 401/403: the token is missing, expired, or lacks the scope to "
    "read the repository and open pull requests (GitHub: contents+pull-requests write; "
    "GitLab: api).")
FORGE_NOT_FOUND = register("KP805", "the forge does not know the repository",
    "GitHub or GitLab answered 404: check GITHUB_REPOSITORY / CI_PROJECT_ID and the API URL.")
FORGE_REJECTED = register("KP806", "the forge rejected the request",
    "GitHub or GitLab answered 422 (or another 4xx): the request was understood but refused, "
    "for example because the base branch does not exist.")
FORGE_UNREACHABLE = register("KP807", "the forge cannot be reached",
    "The network call to the forge API failed (DNS, connection refused, timeout, 5xx).")
FORGE_NOT_CONFIGURED = register("KP808", "no forge configured",
    "pr needs GITHUB_TOKEN + GITHUB_REPOSITORY (GitHub) or GITLAB_TOKEN + CI_PROJECT_ID + "
    "CI_API_V4_URL (GitLab) in the environment.")
GIT_FAILED = register("KP809", "a git operation failed",
    "git fetch or push to the remote failed; the message gives git's own words.")
OUT_STALE = register("KP820", "out/ differs from what the policies compile to",
    "`compile --check` compiled the policies in memory and found files under out/ that are missing, "
    "different or no longer produced. Run `kueue-policy compile` and commit out/ with the policy change.")
WORSE_CHANGE = register("KP821", "the change makes a declared workload worse or lowers a team's quota",
    "`diff --exit-code` fails when a declared workload's verdict gets worse (guaranteed to borrowing or "
    "never, borrowing to never) or a team's guaranteed or burst quota goes down. Review it on purpose.")

# --- KP9xx evaluate ---------------------------------------------------------------------------
EVAL_UNREADABLE = register("KP901", "manifest cannot be read",
    "The file does not exist, is not UTF-8, or is not valid YAML. `evaluate` stops (exit 1) "
    "because it cannot know what the cluster holds.")
EVAL_MALFORMED = register("KP902", "document is not a Kubernetes object",
    "The document is not a mapping, or has no kind, apiVersion or metadata.name. It is skipped.")
EVAL_UNKNOWN_KIND = register("KP903", "kind not used by the admission engine",
    "The object is neither a Kueue object, a Namespace, a priority class, a DRA object nor a job "
    "kind Kueue manages (batch Job, JobSet, PyTorchJob, Pod). It is skipped.")
EVAL_BAD_OBJECT = register("KP904", "object has an invalid value",
    "A field holds something Kueue would refuse (a bad quantity such as `12Gx`, a negative "
    "request, an impossible minCount). Queues and flavors with such values are skipped; "
    "workloads are reported as inadmissible with the reason.")
EVAL_DUPLICATE = register("KP905", "object defined twice",
    "The same kind, namespace and name appear twice in the input. The first definition is kept.")
EVAL_ZERO_COUNT = register("KP906", "pod set with count 0",
    "A pod set with count 0 requests nothing; Kueue accepts it, but it is usually a mistake.")
EVAL_INACTIVE_QUEUE = register("KP907", "ClusterQueue Kueue keeps inactive",
    "Cohorts whose parents go round in a cycle, or a ResourceFlavor a ClusterQueue names that "
    "does not exist: Kueue keeps the ClusterQueues concerned inactive, and their workloads wait "
    "with the reason `ClusterQueue ... is inactive`. The warning says which object causes it.")

# --- KP91x simulation traces -------------------------------------------------------------------
TRACE_BAD = register("KP910", "trace cannot be read",
    "A trace row or job has a value that is not what its column means: a time that is neither "
    "seconds nor RFC 3339, a negative duration, a missing team or name. `simulate` stops (exit 1) "
    "and names the file and line.")
TRACE_UNKNOWN_TEAM = register("KP911", "trace job of a team the policy does not have",
    "A job in a Kueue export runs in a namespace that no team of the policy owns. It is reported "
    "and left out of the simulation, never silently dropped.")
TRACE_NO_RUN_TIME = register("KP912", "trace job without a run time",
    "A Workload in a Kueue export was never admitted (or has no admission time), so how long it "
    "runs is unknown. It is reported and left out of the simulation.")

# --- KP92x capacity planning -------------------------------------------------------------------
CAPACITY_TARGET_BAD = register("KP920", "capacity target or bound cannot be read",
    "A `--target`, `--nodes`, `--fixed` or `--mig` value, or an entry of a `--targets` file, is not "
    "of its form: a target is `[TEAM:]pXX-wait<=DURATION`, `[TEAM:]within-DURATION>=PERCENT` or "
    "`[TEAM:]preemptions<=N`; a bound is `POOL=MIN..MAX`. The message names the flag or the file and "
    "line.")
CAPACITY_UNKNOWN_NAME = register("KP921", "capacity target or bound names nothing of the policy",
    "A target names a team, or a bound a pool, that the policy does not have.")
CAPACITY_INFEASIBLE = register("KP922", "no candidate within the bounds meets the targets",
    "Even the largest candidate the bounds allow (every pool at its maximum) misses a target on the "
    "trace. `capacity` prints the misses and exits 1; raise the maximums or relax the targets.")

# --- KP94x import ------------------------------------------------------------------------------
IMPORT_BAD_INPUT = register("KP940", "cluster export cannot be imported",
    "A document of the export is not a Kubernetes object, is of a kind `import` does not read, is "
    "defined twice, or names something the export does not hold (a ClusterQueue naming a missing "
    "ResourceFlavor, a LocalQueue naming a missing ClusterQueue). `import` writes nothing (exit 1): "
    "a policy written from part of the cluster would compile to a different one.")
IMPORT_CARRIED = register("KP941", "field carried through the policy's escape hatch",
    "The field has no equivalent in the team or pool fields of the policy language, so `import` "
    "wrote it in Kueue's own form (Team spec.kueue, Pool flavorSpec, Cohort resourceGroups). It "
    "compiles to the same Kueue field; see docs/how-to/import.md.")
IMPORT_NOT_CARRIED = register("KP942", "field the imported policy does not reproduce",
    "Compiling the imported policy gives an object that differs from the export at this path "
    "(found by the round-trip check `import` runs before writing). The difference is listed so "
    "nothing is dropped silently; `--strict` makes it an error.")
IMPORT_GUESSED = register("KP943", "pool size or GPU model guessed",
    "The export holds no Nodes for the pool's flavor, so its node count and GPUs per node were "
    "guessed from the quotas. They do not change the Kueue objects the policy compiles to; set "
    "them right, or pass a `kubectl get nodes -o yaml` export to import.")
