"""Simulator self-tests: list/watch semantics (resume, 410, bookmarks, timeouts,
selectors, pagination, dropped watches, state reset)."""
import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from simtest import Cluster, wait_for  # noqa: E402

CM = '/api/v1/namespaces/default/configmaps'


def cm(name, labels=None, data=None):
    return {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': name, 'labels': labels or {}},
            'data': data or {}}


class WatchTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Cluster(history=30, bookmark_interval=0.3)
        cls.k = cls.c.client

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def test_resume_from_resource_version(self):
        st, _, a = self.k.post(CM, cm('resume-a'))
        self.assertEqual(st, 201)
        rv = a['metadata']['resourceVersion']
        self.k.post(CM, cm('resume-b'))
        self.k.patch(CM + '/resume-a', {'data': {'k': 'v'}})
        self.k.delete(CM + '/resume-b')
        r, ev = self.k.watch(CM + '?watch=true&resourceVersion=%s&timeoutSeconds=10&fieldSelector=metadata.name!%%3Dx' % rv)
        self.assertEqual(r.status, 200)
        self.assertEqual(r.getheader('Transfer-Encoding'), 'chunked')
        got = []
        for e in ev:
            if e['object']['metadata']['name'].startswith('resume-'):
                got.append((e['type'], e['object']['metadata']['name']))
            if len(got) == 3:
                break
        self.assertEqual(got, [('ADDED', 'resume-b'), ('MODIFIED', 'resume-a'), ('DELETED', 'resume-b')])

    def test_watch_without_rv_sends_current_state_then_changes(self):
        self.k.post(CM, cm('initial-x', {'w': 'init'}))
        r, ev = self.k.watch(CM + '?watch=1&labelSelector=w%3Dinit&timeoutSeconds=2')
        first = next(ev)
        self.assertEqual((first['type'], first['object']['metadata']['name']), ('ADDED', 'initial-x'))
        self.k.post(CM, cm('initial-y', {'w': 'init'}))
        second = next(ev)
        self.assertEqual((second['type'], second['object']['metadata']['name']), ('ADDED', 'initial-y'))

    def test_too_old_resource_version_is_410_error_event(self):
        st, _, a = self.k.post(CM, cm('old-rv'))
        rv = a['metadata']['resourceVersion']
        for i in range(40):                   # push rv out of the 30-event window
            self.k.patch(CM + '/old-rv', {'data': {'i': str(i)}})
        r, ev = self.k.watch(CM + '?watch=true&resourceVersion=%s' % rv)
        self.assertEqual(r.status, 200)
        events = list(ev)
        self.assertEqual(len(events), 1)
        self.assertEqual(events[0]['type'], 'ERROR')
        status = events[0]['object']
        self.assertEqual((status['kind'], status['code'], status['reason']), ('Status', 410, 'Expired'))
        self.assertIn('too old resource version: %s' % rv, status['message'])
        # a list's rv is always watchable
        st, _, lst = self.k.get(CM)
        r, ev = self.k.watch(CM + '?watch=true&resourceVersion=%s&timeoutSeconds=1' % lst['metadata']['resourceVersion'])
        self.assertFalse([e for e in ev if e['type'] == 'ERROR'])

    def test_bookmarks(self):
        st, _, lst = self.k.get(CM)
        r, ev = self.k.watch(CM + '?watch=true&allowWatchBookmarks=true&timeoutSeconds=1&labelSelector=none%3Dnone'
                             '&resourceVersion=' + lst['metadata']['resourceVersion'])
        self.k.post(CM, cm('bm-other'))        # not selected, but moves the rv
        events = list(ev)
        bms = [e for e in events if e['type'] == 'BOOKMARK']
        self.assertTrue(bms)
        self.assertEqual(set(e['type'] for e in events), {'BOOKMARK'})
        self.assertEqual(bms[0]['object']['kind'], 'ConfigMap')
        self.assertEqual(set(bms[-1]['object']['metadata']), {'resourceVersion'})
        self.assertGreater(int(bms[-1]['object']['metadata']['resourceVersion']), int(lst['metadata']['resourceVersion']))
        # a watch resumed from the last bookmark is valid and sees nothing old
        r, ev = self.k.watch(CM + '?watch=true&timeoutSeconds=1&resourceVersion=' + bms[-1]['object']['metadata']['resourceVersion'])
        self.assertEqual([e for e in ev if e['object']['metadata'].get('name') == 'bm-other'], [])

    def test_timeout_ends_stream_cleanly_without_bookmarks_unless_asked(self):
        t0 = time.time()
        r, ev = self.k.watch(CM + '?watch=true&timeoutSeconds=1&labelSelector=none%3Dnone')
        self.assertEqual(list(ev), [])
        self.assertLess(time.time() - t0, 10)

    def test_selector_transitions(self):
        self.k.post(CM, cm('sel-a', {'team': 'x'}))
        st, _, lst = self.k.get(CM + '?labelSelector=team%3Dx')
        r, ev = self.k.watch(CM + '?watch=true&timeoutSeconds=10&labelSelector=team%3Dx&resourceVersion='
                             + lst['metadata']['resourceVersion'])
        self.k.patch(CM + '/sel-a', {'metadata': {'labels': {'team': 'y'}}})
        self.k.patch(CM + '/sel-a', {'metadata': {'labels': {'team': 'x'}}})
        got = [next(ev)['type'], next(ev)['type']]
        self.assertEqual(got, ['DELETED', 'ADDED'])

    def test_drop_watches(self):
        r, ev = self.k.watch(CM + '?watch=true&timeoutSeconds=30&labelSelector=none%3Dnone')
        done = []
        t = threading.Thread(target=lambda: done.append(list(ev)))
        t.start()
        wait_for(lambda: self.c.store.watchers, what='watch registered')
        out = self.c.control_call('POST', '/kube/drop-watches', {})
        self.assertGreaterEqual(out['dropped'], 1)
        t.join(10)
        self.assertFalse(t.is_alive())
        self.assertEqual(done, [[]])

    def test_list_pagination_and_expired_continue(self):
        for i in range(5):
            self.k.post(CM, cm('page-%d' % i, {'page': 'yes'}))
        st, _, p1 = self.k.get(CM + '?labelSelector=page%3Dyes&limit=2')
        self.assertEqual([o['metadata']['name'] for o in p1['items']], ['page-0', 'page-1'])
        tok = p1['metadata']['continue']
        self.k.post(CM, cm('page-00', {'page': 'yes'}))   # after the snapshot: not in later pages
        self.k.delete(CM + '/page-3')                      # deleted after the snapshot: still listed
        st, _, p2 = self.k.get(CM + '?labelSelector=page%3Dyes&limit=2&continue=' + tok)
        self.assertEqual([o['metadata']['name'] for o in p2['items']], ['page-2', 'page-3'])
        self.assertEqual(p2['metadata']['resourceVersion'], p1['metadata']['resourceVersion'])
        st, _, p3 = self.k.get(CM + '?labelSelector=page%3Dyes&limit=2&continue=' + p2['metadata']['continue'])
        self.assertEqual([o['metadata']['name'] for o in p3['items']], ['page-4'])
        self.assertNotIn('continue', p3['metadata'])
        for i in range(40):
            self.k.patch(CM + '/page-0', {'data': {'i': str(i)}})
        st, _, err = self.k.get(CM + '?labelSelector=page%3Dyes&limit=2&continue=' + tok)
        self.assertEqual((st, err['reason']), (410, 'Expired'))
        st, _, err = self.k.get(CM + '?limit=2&continue=garbage')
        self.assertEqual(st, 400)

    def test_field_selectors(self):
        st, _, _ = self.k.post(CM, cm('field-one'))
        st, _, lst = self.k.get(CM + '?fieldSelector=metadata.name%3Dfield-one')
        self.assertEqual([o['metadata']['name'] for o in lst['items']], ['field-one'])
        st, _, lst = self.k.get(CM + '?fieldSelector=metadata.name!%3Dfield-one')
        self.assertNotIn('field-one', [o['metadata']['name'] for o in lst['items']])
        st, _, err = self.k.get(CM + '?fieldSelector=data.foo%3Dbar')
        self.assertEqual((st, err['reason']), (400, 'BadRequest'))
        self.assertIn('field label not supported', err['message'])


class ResetTest(unittest.TestCase):
    def test_reset_wipe_and_restore(self):
        c = Cluster(history=1000)
        try:
            k = c.client
            st, _, a = k.post(CM, cm('keep-me'))
            uid, rv = a['metadata']['uid'], a['metadata']['resourceVersion']
            out = c.control_call('POST', '/kube/reset', {'mode': 'restore'})
            self.assertEqual(out['mode'], 'restore')
            st, _, b = k.get(CM + '/keep-me')
            self.assertEqual(b['metadata']['uid'], uid)
            self.assertNotEqual(b['metadata']['resourceVersion'], rv)
            r, ev = k.watch(CM + '?watch=true&resourceVersion=%s' % rv)
            self.assertEqual([e['object']['code'] for e in ev], [410])
            c.control_call('POST', '/kube/reset', {'mode': 'wipe'})
            st, _, _ = k.get(CM + '/keep-me')
            self.assertEqual(st, 404)
            st, _, ns = k.get('/api/v1/namespaces/default')   # bootstrap objects come back
            self.assertEqual(st, 200)
            st, _, crd = k.get('/apis/apiextensions.k8s.io/v1/customresourcedefinitions/nodepools.karpenter.sh')
            self.assertEqual(st, 200)
        finally:
            c.close()


if __name__ == '__main__':
    unittest.main()
