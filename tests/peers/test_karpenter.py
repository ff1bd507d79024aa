"""The race against Karpenter's own scheduler (bench/peers/karpenter), small enough for
`make test` (job peers/karpenter): Karpenter's scheduling benchmark at 100 pods, written to
a case file by its own generators, is placed whole by Karpenter's scheduler and by
nodewarden's; the case holds Karpenter's 400 fake types with five offerings each at
PriceFromResources prices; a scale-out shape over the real catalog at 10 replicas is placed
whole by both; and nodewarden's case reader refuses each malformed case naming the field.

Needs Karpenter's side built (bench/peers/karpenter/build, which `make test` runs before the
jobs) and nwrace (NW_RACE_BIN, the ASan build under make test; default build/bench/nwrace).
"""
import copy
import importlib.machinery
import importlib.util
import json
import os
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = os.path.join(ROOT, "bench", "peers", "karpenter", "run")


def load_run():
    loader = importlib.machinery.SourceFileLoader("peers_karpenter_run", RUN)
    spec = importlib.util.spec_from_loader("peers_karpenter_run", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


race = load_run()


def count(q):
    """A count as Go's resource.Quantity writes it ("40", "1k", "1200")."""
    return int(q[:-1]) * 1000 if q.endswith("k") else int(q)


def price_from_resources(cpu, mem_bytes):
    """Karpenter's fake.PriceFromResources for CPU and memory."""
    return 0.1 * cpu + 0.1 * mem_bytes / 1e9


class RaceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="nw-peers-")
        cls.case_path = os.path.join(cls.dir, "diverse-100.json")
        cls.k, cls.n = race.bench_case("diverse", 100, cls.case_path)
        with open(cls.case_path) as f:
            cls.case = json.load(f)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, True)

    def test_both_place_every_pod(self):
        for res in (self.k, self.n):
            self.assertEqual(res["pods"], 100, res)
            self.assertEqual(res["scheduled"], 100, res)
            self.assertEqual(res["unschedulable"], 0, res)
            self.assertGreater(res["nodes"], 0, res)
            self.assertGreater(res["pricePerHour"], 0, res)
            self.assertEqual(sum(res["types"].values()), res["nodes"], res)

    def test_case_is_karpenters_benchmark(self):
        c = self.case
        self.assertEqual(len(c["pods"]), 100)
        self.assertEqual(len(c["nodePools"]), 1)
        self.assertEqual(len(c["instanceTypes"]), 400)
        # makeDiversePods: a fifth each of plain, zonal and hostname spread, zonal
        # self-affinity, hostname anti-affinity among all app=nginx pods
        anti = [p for p in c["pods"] if "podAntiAffinity" in (p["spec"].get("affinity") or {})]
        self.assertEqual(len(anti), 20)
        self.assertTrue(all(p["metadata"]["labels"].get("app") == "nginx" for p in anti))
        for i, t in enumerate(c["instanceTypes"]):
            self.assertEqual(t["name"], "fake-it-%d" % i)
            self.assertEqual(len(t["offerings"]), 5)
            price = price_from_resources(i + 1, (i + 1) * 2 * 2**30)
            for o in t["offerings"]:
                self.assertAlmostEqual(o["price"], price, places=9)
            self.assertEqual(count(t["capacity"]["pods"]), (i + 1) * 10)
        zones = sorted((o["zone"], o["capacityType"]) for o in c["instanceTypes"][0]["offerings"])
        self.assertEqual(zones, [("test-zone-1", "on-demand"), ("test-zone-1", "spot"),
                                 ("test-zone-2", "on-demand"), ("test-zone-2", "spot"),
                                 ("test-zone-3", "on-demand")])

    def test_scaleout_shape_over_the_catalog(self):
        types = race.catalog_types()
        self.assertGreater(len(types), 100)
        [(run, case)] = race.shape_cases(["basic"], 10, types)
        self.assertEqual(len(case["pods"]), 20)
        k, n = race.solve_case(case, os.path.join(self.dir, "basic.json"))
        for res in (k, n):
            self.assertEqual((res["scheduled"], res["unschedulable"]), (20, 0), res)
            self.assertGreater(res["pricePerHour"], 0, res)

    def refused(self, case):
        path = os.path.join(self.dir, "bad.json")
        with open(path, "w") as f:
            json.dump(case, f)
        r = subprocess.run([race.nwrace_bin(), "solve", path], capture_output=True, text=True,
                           timeout=120)
        return r.returncode, r.stderr

    def test_reader_refuses_malformed_cases_naming_the_field(self):
        def drop(*keys):
            def f(c):
                o = c
                for k in keys[:-1]:
                    o = o[k]
                del o[keys[-1]]
            return f

        def put(value, *keys):
            def f(c):
                o = c
                for k in keys[:-1]:
                    o = o[k]
                o[keys[-1]] = value
            return f

        t = "instanceTypes"
        cases = [
            (drop(t, 3, "offerings", 1, "price"), "instanceTypes[3].offerings[1].price"),
            (put(-1, t, 0, "offerings", 0, "price"), "instanceTypes[0].offerings[0].price"),
            (put("x", t, 0, "offerings", 4, "available"), "instanceTypes[0].offerings[4].available"),
            (put("reserved-ish", t, 2, "offerings", 0, "capacityType"),
             "instanceTypes[2].offerings[0].capacityType"),
            (drop(t, 5, "offerings", 0, "zone"), "instanceTypes[5].offerings[0].zone"),
            (put([], t, 1, "offerings"), "instanceTypes[1].offerings"),
            (put("lots", t, 7, "capacity", "cpu"), "instanceTypes[7].capacity[cpu]"),
            (drop(t, 7, "allocatable", "memory"), "instanceTypes[7].allocatable[memory]"),
            (put(4, t, 9, "labels", "kubernetes.io/arch"), "instanceTypes[9].labels[kubernetes.io/arch]"),
            (drop(t, 11, "name"), "instanceTypes[11].name"),
            (put([], "nodePools"), "nodePools"),
            (put("yes", "ignorePreferences"), "ignorePreferences"),
            (put("2 cores", "pods", 4, "spec", "containers", 0, "resources", "requests", "cpu"),
             "pods[4].spec.containers[0].resources.requests[cpu]"),
            (drop("pods"), "pods"),
        ]
        self.assertGreaterEqual(len(cases), 14)
        for mutate, field in cases:
            with self.subTest(field=field):
                c = copy.deepcopy(self.case)
                mutate(c)
                rc, err = self.refused(c)
                self.assertEqual(rc, 2, err)
                self.assertIn("nwrace: %s:" % field, err)
        # the unchanged case is accepted by the same path
        rc, err = self.refused(self.case)
        self.assertEqual(rc, 0, err)


if __name__ == "__main__":
    unittest.main()
