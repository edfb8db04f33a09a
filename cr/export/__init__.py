"""Exports of solutions and campaigns to where users already run things (docs/containers.md):
an OCI image of a solution (oci.py: the layout; image.py: what goes in it) and Kubernetes
manifests of a campaign (k8s.py). Standard library only on the way to the bytes."""
