"""The Kubernetes API and its objects.

I/O: the client (client: KubeApi, retries, the retry window), its REST transport (rest),
EKS authentication (eks_auth: STS-presigned tokens) and the per-NodePool Lease
(pool_lock). Pure views of objects as read: objects, selectors, labels, nodes (taints,
ownership, readiness and the well-known names Kubernetes and Karpenter use), pdbs.
Lifeboat's own marks and patches are in marks/; Karpenter's disruption rules in karpenter/.

May import model/ and errors: decide/, marks/ and karpenter/ use the pure modules. Only
client, rest, eks_auth and pool_lock may import kubernetes, urllib3 or boto3
(tests/unit/project/test_layer_rooms.py).
"""
