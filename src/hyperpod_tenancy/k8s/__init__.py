"""Kubernetes and Kueue objects rendered from the policy, and the charts (checked, ordered sets) that carry them."""
