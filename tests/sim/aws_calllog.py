"""AWS simulator, the call log as a file, for the AWS setup kit's policy check
(tests/awskit/test_coverage.py).

With NW_SIM_AWS_CALLS=<path> in the environment, every call the simulator logs (the
entries of GET /aws/calls) is also appended to <path> as one JSON line, with what an IAM
policy decision needs and the request itself does not say: the account, region, cluster
and queue of the simulated account, and "resources", the tags of the instances, launch
templates and instance profiles the request names as they were when it arrived (so a
deletion still shows what it deleted), a launch template's data and tag specifications
(the image, instance profile, capacity reservation, placement group and the
network-interface tags a launch from it uses) and an instance profile's roles. UserData
is left out. Several simulators (an end-to-end story's subprocess, the in-process
fixture of the t_aws_* stories) may append to the same file: each line is one write(2)
on a descriptor opened with O_APPEND.

A mixin of aws.AwsSim: it uses the simulator's state and lock (self.lock).  Python 3
standard library only; shares no code with nodewarden.
"""

from aws_util import *  # noqa: F401,F403
import os

ENV = 'NW_SIM_AWS_CALLS'

_INSTANCE_KEY = re.compile(r'(InstanceId|ResourceId)\.\d+')
_LT_KEY = re.compile(r'(?:.*\.)?LaunchTemplate(Id|Name)')
_PROFILE_KEY = re.compile(r'InstanceProfileName|(?:.*\.)?IamInstanceProfile\.(Name|Arn)')


class CallLogMixin:
    def _calllog_init(self):
        path = os.environ.get(ENV)
        self._calllog_fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644) if path else None
        self._calllog_tl = threading.local()

    def _calllog_begin(self, params):
        """At a request's arrival (params: the Query parameters, {} for the JSON
        protocols): note what it names, for _calllog_write."""
        if self._calllog_fd is None:
            return
        self._calllog_tl.resources = self._calllog_resources(params) if params else None

    def _calllog_resources(self, params):
        out = {'instances': {}, 'launchTemplates': {}, 'instanceProfiles': {}}
        profiles = set()
        with self.lock:
            for k, v in params.items():
                if _INSTANCE_KEY.fullmatch(k) and v in self.instances_by_id:
                    out['instances'][v] = dict(self.instances_by_id[v]['tags'])
                m = _LT_KEY.fullmatch(k)
                if m:
                    for lt in self.launch_templates.values():
                        if lt['id' if m.group(1) == 'Id' else 'name'] == v:
                            data = {dk: dv for dk, dv in lt['data'].items() if dk != 'UserData'}
                            out['launchTemplates'][lt['id']] = {
                                'name': lt['name'], 'tags': dict(lt['tags']),
                                'tagspecs': {rt: dict(t) for rt, t in lt['tagspecs'].items()},
                                'data': data}
                            prof = data.get('IamInstanceProfile') or {}
                            if prof.get('Name') or prof.get('Arn'):
                                profiles.add(prof.get('Name') or prof['Arn'].rsplit('/', 1)[-1])
                if _PROFILE_KEY.fullmatch(k) and v:
                    profiles.add(v.rsplit('/', 1)[-1])
            for name in profiles:
                p = self.instance_profiles.get(name)
                if p:
                    out['instanceProfiles'][name] = {
                        'arn': p['arn'], 'path': p['path'], 'tags': dict(p['tags']),
                        'roles': [self.iam_roles[r]['arn'] for r in p['roles'] if r in self.iam_roles]}
        return out

    def _calllog_close(self):
        if self._calllog_fd is not None:
            os.close(self._calllog_fd)
            self._calllog_fd = None

    def _calllog_write(self, entry):
        if self._calllog_fd is None:
            return
        e = dict(entry, account=self.account, region=self.region, cluster=self.cluster,
                 queue=self.queue_name, resources=getattr(self._calllog_tl, 'resources', None))
        e['params'] = {k: v for k, v in e['params'].items() if not k.endswith('UserData')}
        os.write(self._calllog_fd, (json.dumps(e, sort_keys=True) + '\n').encode('utf-8'))
