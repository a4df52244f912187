"""Local stand-ins for AWS and Kubernetes used by tests and `lifeboat replay`."""
