"""Reading Kubernetes and EC2 objects, and the workload manifests the stories share."""
import calendar
import time


def cond(obj, typ):
    """status of the condition typ of obj, or None."""
    for c in obj.get("status", {}).get("conditions", []) or []:
        if c.get("type") == typ:
            return c.get("status")
    return None


def tag(inst, key):
    """Value of an EC2 instance's tag, or None."""
    for t in inst.get("Tags", []):
        if t["Key"] == key:
            return t["Value"]
    return None


def pod_ready(p):
    if p["metadata"].get("deletionTimestamp") or p.get("status", {}).get("phase") != "Running":
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in p.get("status", {}).get("conditions", []))


def events_for(c, reason, kind=None, name=None):
    """Events of cluster c with this reason (and involved object kind and name)."""
    return [e for e in c.events() if e.get("reason") == reason and
            (kind is None or e["involvedObject"].get("kind") == kind) and
            (name is None or e["involvedObject"].get("name") == name)]


def instance_id(provider_id):
    return provider_id.rsplit("/", 1)[-1]


def ts(s):
    """An RFC 3339 UTC timestamp (seconds) as epoch seconds."""
    return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ"))


# The 4 x 550m/128Mi Deployment shared by the provisioning tests.
DEPLOY = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 4
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: nginx
          resources: {requests: {cpu: 550m, memory: 128Mi}}
"""
