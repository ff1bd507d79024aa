"""The 4 x 550m/128Mi Deployment shared by the provisioning tests."""
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
