"""A small, faithful Kubernetes API server emulator for tests and `lifeboat replay`.

The unmodified official `kubernetes` client talks to it over real HTTP/1.1 on 127.0.0.1.

Served: core/v1 nodes, pods (plus pods/eviction), events, namespaces, configmaps; policy/v1
poddisruptionbudgets; karpenter.sh/v1 nodepools and nodeclaims (custom resources: no
strategic merge, 415 as upstream); coordination.k8s.io/v1 leases; events.k8s.io/v1 events;
the status subresource of every type that has a status; `/version` (a 1.31 server).

Held to the API's documented behaviour: a global resourceVersion bumped on every write, 409
on stale versions and failed preconditions, generateName, finalizers (deletionTimestamp
first, removal when the last finalizer goes), label and field selectors (unsupported field →
400), `limit`/`continue` pagination, JSON/merge/strategic-merge patches, eviction against
PodDisruptionBudgets (429, 500 for two PDBs), status dropped or reset on create the way each
type's strategy does it (pods start Pending, custom resources and PDBs without status, nodes
keep theirs), and status ignored by writes to the main resource.

Simplifications, on purpose:
- No garbage collector (ownerReferences and propagationPolicy are stored, not acted on),
  no watch (405), no admission, no namespace lifecycle (objects may name any namespace),
  no server-side apply (415), no deletecollection (405), no field validation of objects.
- A pod is deleted at once when asked (there is no kubelet to honour the grace period).
- The disruption controller is emulated on read: a PDB's status is recomputed from the
  pods it selects whenever it is read or used by an eviction (a changed status is stored,
  bumping the resourceVersion as the controller's write would). Expected pods = the number
  of selected pods, since there are no workload controllers to ask for their scale.
  Healthy = phase Running, not being deleted, and Ready=True; a pod with no conditions at
  all counts as ready, because cluster files often omit them.
- Eviction follows the default `unhealthyPodEvictionPolicy` (IfHealthyBudget) unless the
  PDB says AlwaysAllow; Pending, Succeeded, Failed and deleting pods skip the PDB check.
- Continue tokens resume after the last returned key against the current state, not a
  snapshot; they never expire (no 410).
- The two Event APIs (core/v1 and events.k8s.io/v1) are stored separately, not converted.
- The status subresource replaces `status` only; metadata changes sent to it are ignored.
"""

from .clusterfile import dump_cluster_file, load_cluster_file
from .emulator import Emulator
from .errors import ApiError

__all__ = ["ApiError", "Emulator", "dump_cluster_file", "load_cluster_file"]
