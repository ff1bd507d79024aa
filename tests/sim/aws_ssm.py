"""AWS simulator, SSM Parameter Store (AWS JSON 1.1): GetParameter.

The public parameters of the EKS-optimized and Bottlerocket AMIs, as AWS publishes them,
for Kubernetes versions K8S_VERSIONS: per version an image per family, architecture and
variant (owner 602401143452 for EKS, 092701018921 for Bottlerocket; public, not the
'amazon' alias), each named by a "recommended"/"latest" parameter and by its pinned
release (IMAGE_RELEASE, BOTTLEROCKET_RELEASE):

  /aws/service/eks/optimized-ami/<v>/amazon-linux-2023/<x86_64|arm64>/<standard|nvidia|
      neuron (x86_64)>/{recommended,amazon-eks-node-al2023-<arch>-<variant>-<v>-<rel>}/image_id
  /aws/service/eks/optimized-ami/<v>/amazon-linux-2[-arm64|-gpu]/{recommended,
      amazon-eks[-arm64|-gpu]-node-<v>-<rel>}/image_id
  /aws/service/bottlerocket/aws-k8s-<v>[-nvidia]/<x86_64|arm64>/{latest,<rel>}/image_id

Custom parameters can be set through the control API (POST /aws/ssm {name: value},
value null deletes). Requests must be SigV4-signed for service "ssm" in the simulator's
region; an unknown name is ParameterNotFound (400). Faults (throttle, errors, deny,
latency) apply with the action name GetParameter.

A mixin of aws.AwsSim.  Python 3 standard library only; shares no code with nodewarden.
"""

from aws_util import *  # noqa: F401,F403

K8S_VERSIONS = ('1.29', '1.30', '1.31', '1.32', '1.33', '1.34', '1.35')
IMAGE_RELEASE = 'v20260105'
BOTTLEROCKET_RELEASE = '1.30.0'
EKS_OWNER = '602401143452'
BOTTLEROCKET_OWNER = '092701018921'


class SsmMixin:
    def _seed_ssm(self):
        """EKS/Bottlerocket images and their parameters (called by _seed)."""
        self.ssm_params = {}
        base = 1767225600 + 4 * 86400  # 2026-01-05
        n = 0

        def image(owner, name, arch, desc):
            nonlocal n
            n += 1
            iid = 'ami-0eks%013x' % n
            self.images[iid] = {'id': iid, 'name': name, 'arch': arch, 'created': base,
                                'owner': owner, 'public': True, 'desc': desc, 'tags': {}}
            return iid
        for v in K8S_VERSIONS:
            p = '/aws/service/eks/optimized-ami/%s' % v
            for arch, variants in (('x86_64', ('standard', 'nvidia', 'neuron')), ('arm64', ('standard', 'nvidia'))):
                for var in variants:
                    rel = 'amazon-eks-node-al2023-%s-%s-%s-%s' % (arch, var, v, IMAGE_RELEASE)
                    iid = image(EKS_OWNER, rel, arch, 'EKS-optimized AL2023 %s %s for %s' % (var, arch, v))
                    for name in ('recommended', rel):
                        self.ssm_params['%s/amazon-linux-2023/%s/%s/%s/image_id' % (p, arch, var, name)] = iid
            for suffix, arch in (('', 'x86_64'), ('-arm64', 'arm64'), ('-gpu', 'x86_64')):
                rel = 'amazon-eks%s-node-%s-%s' % (suffix, v, IMAGE_RELEASE)
                iid = image(EKS_OWNER, rel, arch, 'EKS-optimized AL2%s for %s' % (suffix, v))
                for name in ('recommended', rel):
                    self.ssm_params['%s/amazon-linux-2%s/%s/image_id' % (p, suffix, name)] = iid
            for suffix in ('', '-nvidia'):
                for arch in ('x86_64', 'arm64'):
                    name = 'bottlerocket-aws-k8s-%s%s-%s-v%s' % (v, suffix, arch, BOTTLEROCKET_RELEASE)
                    iid = image(BOTTLEROCKET_OWNER, name, arch, 'Bottlerocket aws-k8s-%s%s' % (v, suffix))
                    for rel in ('latest', BOTTLEROCKET_RELEASE):
                        self.ssm_params['/aws/service/bottlerocket/aws-k8s-%s%s/%s/%s/image_id'
                                        % (v, suffix, arch, rel)] = iid

    def _ssm(self, method, raw_path, raw_query, headers, body, target):
        def handler(action, params):
            if action != 'GetParameter':
                raise JsonApiError('InvalidAction', 'The simulator implements GetParameter only, not %s'
                                   % action)
            extra = set(params) - {'Name', 'WithDecryption'}
            if extra:
                raise JsonApiError('ValidationException', 'unknown parameter(s) %s' % sorted(extra))
            name = params.get('Name')
            if not isinstance(name, str) or not name or len(name) > 2048:
                raise JsonApiError('ValidationException', "1 validation error detected: Value at 'name' "
                                   'failed to satisfy constraint: Member must not be null')
            with self.lock:
                value = self.ssm_params.get(name)
            if value is None:
                raise JsonApiError('ParameterNotFound', '')
            return {'Parameter': {
                'Name': name, 'Type': 'String', 'Value': value, 'Version': 1,
                'LastModifiedDate': 1767225600.0, 'DataType': 'aws:ec2:image' if value.startswith('ami-') else 'text',
                'ARN': 'arn:aws:ssm:%s::parameter%s' % (self.region, name if name.startswith('/') else '/' + name)}}
        return json11_call(self, 'ssm', self.region, method, raw_path, raw_query, headers, body, target,
                           handler, 'ssm')

    def ssm_set(self, params):
        """Control API: {name: value} (value None deletes)."""
        with self.lock:
            for k, v in params.items():
                if v is None:
                    self.ssm_params.pop(k, None)
                else:
                    self.ssm_params[k] = str(v)
