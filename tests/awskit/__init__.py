"""Checks of the AWS setup kit (manifests/aws/, docs/aws-setup.md)."""
