"""Kubernetes and Kueue objects rendered from the policy, and the cdk8s charts that carry them."""
