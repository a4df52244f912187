"""The Kubernetes API and its objects.

I/O: the client (client: KubeApi, retries, the retry window), its REST transport (rest),
EKS authentication (eks_auth: STS-presigned tokens) and the per-NodePool Lease
(pool_lock). Pure views and edits of objects as read: objects, selectors, labels, nodes
(taints, ownership, readiness), pdbs, node_patches (the RFC 6902 patches Lifeboat sends).

The pure modules import only each other, lifeboat.model.instants, lifeboat.errors and
lifeboat.events.notice: decide/ and karpenter/ may use them. Only client, rest, eks_auth
and pool_lock may import kubernetes, urllib3 or boto3 (tests/unit/test_layer_rooms.py).
"""
