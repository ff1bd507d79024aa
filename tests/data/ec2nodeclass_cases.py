"""EC2NodeClass admission cases (karpenter-api.md §3); written by admission_cases.py."""


def cases():
    return []
