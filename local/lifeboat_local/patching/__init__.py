"""``lifeboat patching``: each node's AMI against the recommended EKS-optimized AMI."""
