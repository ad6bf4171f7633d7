#!/usr/bin/env python3
"""Pod controllers through a real API server: kube-apiserver v1.37 sends
cudagate the Deployments, Jobs and CronJobs kubectl applies and, again, the
pods and Jobs that kube-controller-manager's ReplicaSet, Job and CronJob
controllers create from their templates; the real scheduler places what is
admitted. Enforce refuses an incompatible template at apply time; warn admits
it with kubectl's warnings and judges each controller-made pod; a partly
compatible template is pinned, and its pods land only where they can run; a
controller whose pods or Jobs cudagate refuses (the namespace moved to
enforce, a driver downgraded under a suspended Job, a CronJob's schedule)
records FailedCreate with cudagate's message. Each verdict is shown to differ
without cudagate (a namespace labelled cudagate.io/mode=off).

Every test has a pool of nodes of its own (label `pool`, which its templates
select), so the GPUs one test's pods hold never decide where another's go.

    python3 controllers_test.py --binary build/release/cudagate --source .
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))

import harness  # noqa: E402
import kube_cluster as kc  # noqa: E402

T4 = "Tesla-T4"
A100 = "NVIDIA-A100-SXM4-80GB"
T4_DRIVER = "535.129.03"    # CUDA 12.2
A100_DRIVER = "550.54.15"   # CUDA 12.4
RS_CONTROLLER = "system:serviceaccount:kube-system:replicaset-controller"
JOB_CONTROLLER = "system:serviceaccount:kube-system:job-controller"
# Every pool's nodes are named after it: POOL-t4, POOL-a100.
T4_DENIAL = f"driver {T4_DRIVER} supports up to CUDA 12.2"
A100_DENIAL = f"driver {A100_DRIVER} supports up to CUDA 12.4"
DENIED = 'admission webhook "{}" denied the request: cudagate: '

PATHS = {"Deployment": "/apis/apps/v1/namespaces/{}/deployments/{}",
         "ReplicaSet": "/apis/apps/v1/namespaces/{}/replicasets/{}",
         "Job": "/apis/batch/v1/namespaces/{}/jobs/{}",
         "CronJob": "/apis/batch/v1/namespaces/{}/cronjobs/{}"}


def pool(name, t4_gpus=4, a100_gpus=4):
    """A T4 on driver 535 and an A100 on driver 550, labelled pool=NAME."""
    nodes = []
    if t4_gpus:
        nodes.append(kc.gfd_node(f"{name}-t4", T4_DRIVER, "7.5", T4, "12.2", gpus=t4_gpus,
                                 labels={"pool": name}))
    if a100_gpus:
        nodes.append(kc.gfd_node(f"{name}-a100", A100_DRIVER, "8.0", A100, "12.4",
                                 gpus=a100_gpus, labels={"pool": name}))
    return nodes


def template(name, cuda, pool_name, restart=None):
    """The pod template of kc.gpu_pod's pod, on the nodes of one pool."""
    spec = kc.gpu_pod(name, cuda=cuda, node_selector={"pool": pool_name})["spec"]
    if restart:
        spec["restartPolicy"] = restart
    return {"metadata": {"labels": {"app": name}}, "spec": spec}


def deployment(name, namespace, cuda, pool_name, replicas=1):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": template(name, cuda, pool_name)}}


def job(name, namespace, cuda, pool_name, parallelism=1, suspend=False):
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"parallelism": parallelism, "completions": parallelism,
                     "suspend": suspend,
                     "template": template(name, cuda, pool_name, restart="Never")}}


def cronjob(name, namespace, cuda, pool_name, schedule="*/1 * * * *", suspend=False):
    return {"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"schedule": schedule, "suspend": suspend,
                     "concurrencyPolicy": "Forbid",
                     "jobTemplate": {"spec": {"template": template(name, cuda, pool_name,
                                                                   restart="Never")}}}}


WORKLOADS = {"Deployment": deployment, "Job": job,
             # Suspended: these are judged at apply, and never need to run.
             "CronJob": lambda *a: cronjob(*a, schedule="0 0 1 1 *", suspend=True)}


@kc.needs_cluster
class ControllersTest(kc.ClusterTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.cluster.add_nodes(pool("apply", 8, 8) + pool("warn", 4, 2) + pool("pin", 4, 2)
                              + pool("pin-off", 4, 2) + pool("moving", 4, 4)
                              + pool("rollout", 0, 4) + pool("cron", 4, 4))
        cls.cluster.namespace("enforced", {"cudagate.io/mode": "enforce"})
        cls.cluster.namespace("defaulted")
        cls.cluster.namespace("warned", {"cudagate.io/mode": "warn"})
        cls.cluster.namespace("unguarded", {"cudagate.io/mode": "off"})
        cls.gate = cls.cudagate()
        cls.gate.install()
        cls.gate.start()

    @classmethod
    def tearDownClass(cls):
        status = cls.gate.stop()
        try:
            if status != 0:
                raise AssertionError(f"cudagate exited with {status}:\n{cls.gate.log_tail()}")
        finally:
            super().tearDownClass()

    # --- reading and changing the cluster ------------------------------------

    def apply(self, obj):
        return self.cluster.kubectl("apply", "-f", "-", stdin=obj, check=False)

    def exists(self, kind, namespace, name):
        return self.cluster.exists(PATHS[kind].format(namespace, name))

    def get(self, kind, namespace, name):
        return self.cluster.get(PATHS[kind].format(namespace, name))

    def pods(self, namespace, app):
        return self.cluster.request("GET", f"/api/v1/namespaces/{namespace}/pods",
                                    query={"labelSelector": f"app={app}"})["items"]

    def bound_pods(self, namespace, app, count):
        """The pods of `app`, once `count` of them exist and all are bound."""
        def bound():
            pods = self.pods(namespace, app)
            if len(pods) == count and all(p["spec"].get("nodeName") for p in pods):
                return pods
            return None
        return kc.wait_until(bound, f"{count} pods of {namespace}/{app} to be bound")

    def relabel(self, namespace, mode):
        self.cluster.merge_patch(f"/api/v1/namespaces/{namespace}",
                                 {"metadata": {"labels": {"cudagate.io/mode": mode}}})

    def wait_refused(self, namespace, cuda, pool_name, webhook, text):
        """Waits until a server-side dry run of a pod of this template is
        refused by `webhook` with `text`: the API server's view of the
        namespace's labels (which selects the webhook) and cudagate's view of
        the nodes (which decides) have both caught up."""
        pod = kc.gpu_pod("probe", namespace, cuda=cuda, node_selector={"pool": pool_name})

        def refused():
            out = self.cluster.kubectl("create", "--dry-run=server", "-f", "-", stdin=pod,
                                       check=False)
            return out.returncode != 0 and DENIED.format(webhook) in out.stderr \
                and text in out.stderr
        kc.wait_until(refused, f"{webhook} to refuse a CUDA {cuda} pod in {namespace}")

    def events_on(self, namespace, reason, kind, name):
        return [e for e in self.cluster.events(namespace, reason)
                if e["involvedObject"].get("kind") == kind
                and e["involvedObject"].get("name") == name]

    def wait_event(self, namespace, reason, kind, name, timeout=kc.TIMEOUT):
        return kc.wait_until(lambda: (self.events_on(namespace, reason, kind, name) or [None])[0],
                             f"a {reason} event on {kind} {namespace}/{name}", timeout)

    def owned_replicaset(self, namespace, deployment_name):
        def one():
            items = self.cluster.get(f"/apis/apps/v1/namespaces/{namespace}/replicasets")["items"]
            owned = [rs for rs in items
                     if any(o.get("kind") == "Deployment" and o.get("name") == deployment_name
                            for o in rs["metadata"].get("ownerReferences", []))]
            return owned[0] if len(owned) == 1 else None
        return kc.wait_until(one, f"the ReplicaSet of {namespace}/{deployment_name}")

    def pod_creates(self, namespace, user):
        """The audit events of the pod creates `user` made in `namespace`
        (names are generated, so the audit record of such a create has
        none)."""
        return [e for e in self.cluster.audit_events()
                if e.get("verb") == "create" and e.get("stage") == "ResponseComplete"
                and e.get("user", {}).get("username") == user
                and e.get("objectRef", {}).get("resource") == "pods"
                and not e.get("objectRef", {}).get("subresource")
                and e.get("objectRef", {}).get("namespace") == namespace]

    # --- apply time -----------------------------------------------------------

    def test_enforce_refuses_incompatible_templates_at_apply(self):
        # CUDA 12.8 runs on neither node of the pool (12.2 and 12.4).
        for namespace, webhook in (("enforced", "enforce.mutate.cudagate.io"),
                                   ("defaulted", "default.mutate.cudagate.io")):
            for kind, make in WORKLOADS.items():
                with self.subTest(namespace=namespace, kind=kind):
                    name = f"{kind.lower()}-cuda128"
                    refused = self.apply(make(name, namespace, "12.8.0", "apply"))
                    self.assertNotEqual(refused.returncode, 0, refused.stdout)
                    # The mutating webhook is called before the validating
                    # one (the API server's mutating admission runs first:
                    # apiserver/pkg/admission/plugin/webhook/mutating), and
                    # refuses; its message is the one kubectl prints
                    # (webhook/errors/statuserror.go).
                    self.assertIn(DENIED.format(webhook), refused.stderr)
                    self.assertIn('container "train" needs CUDA 12.8', refused.stderr)
                    self.assertIn(f"{T4_DENIAL} (apply-t4)", refused.stderr)
                    self.assertIn(f"{A100_DENIAL} (apply-a100)", refused.stderr)
                    self.assertFalse(self.exists(kind, namespace, name))

                    # A CUDA 12.2 image runs on both: created, untouched.
                    ok = f"{kind.lower()}-cuda122"
                    created = self.apply(make(ok, namespace, "12.2.2", "apply"))
                    self.assertEqual(created.returncode, 0, created.stderr)
                    self.assertNotIn("Warning:", created.stderr)
                    self.assertTrue(self.exists(kind, namespace, ok))

    def test_without_cudagate_the_same_templates_are_created(self):
        for kind, make in WORKLOADS.items():
            with self.subTest(kind=kind):
                name = f"{kind.lower()}-cuda128"
                created = self.apply(make(name, "unguarded", "12.8.0", "apply"))
                self.assertEqual(created.returncode, 0, created.stderr)
                self.assertNotIn("cudagate", created.stderr)
                self.assertTrue(self.exists(kind, "unguarded", name))
        # ... and their pods are bound to nodes whose drivers cannot run them.
        for name in ("deployment-cuda128", "job-cuda128"):
            node = self.bound_pods("unguarded", name, 1)[0]["spec"]["nodeName"]
            self.assertIn(node, ("apply-t4", "apply-a100"))

    # --- warn: admitted, and every pod the controllers make is judged ---------

    def test_warn_admits_with_warnings_and_judges_the_controllers_pods(self):
        # Partly compatible (CUDA 12.4: the A100 only) and incompatible
        # (CUDA 12.8: neither).
        partial = self.apply(deployment("serve", "warned", "12.4.1", "warn", replicas=3))
        self.assertEqual(partial.returncode, 0, partial.stderr)
        self.assertIn("Warning: cudagate: only 1 of 2 candidate nodes can run this deployment's"
                      " pods; the scheduler may pick one that cannot", partial.stderr)
        self.assertIn(T4_DENIAL, partial.stderr)
        failing = self.apply(job("batch", "warned", "12.8.0", "warn", parallelism=2))
        self.assertEqual(failing.returncode, 0, failing.stderr)
        self.assertIn("Warning: cudagate: this job would be denied in enforce mode",
                      failing.stderr)
        self.assertIn(A100_DENIAL, failing.stderr)

        # The ReplicaSet and Job controllers create the pods; warn pins
        # nothing, in the template or in the pods.
        self.assertNotIn("affinity", self.get("Deployment", "warned", "serve")
                         ["spec"]["template"]["spec"])
        serve = self.bound_pods("warned", "serve", 3)
        batch = self.bound_pods("warned", "batch", 2)
        for pod in serve + batch:
            self.assertNotIn("affinity", pod["spec"], pod["metadata"]["name"])
            self.assertNotIn("cudagate.io/pinned", pod["metadata"].get("annotations", {}))
        # The A100 has 2 GPUs, so at least one of the three replicas is on the
        # T4, which cannot run CUDA 12.4: warn leaves the choice to the
        # scheduler (its NodeResourcesFit filter alone limits it here).
        self.assertIn("warn-t4", [p["spec"]["nodeName"] for p in serve])

        # Each pod create the controllers made was judged: kube-controller-
        # manager drops admission warnings (its command sets client-go's
        # NoWarnings handler, cmd/kube-controller-manager/app/
        # controllermanager.go), so the verdicts are in the audit log.
        def judged(user, count):
            creates = self.pod_creates("warned", user)
            done = [e for e in creates if "warn.validate.cudagate.io/verdict"
                    in e.get("annotations", {})]
            return done if len(done) >= count and len(done) == len(creates) else None
        for user, count, verdict, enforce_decision in (
                (RS_CONTROLLER, 3, "partial", "patch"), (JOB_CONTROLLER, 2, "fail", "deny")):
            events = kc.wait_until(lambda: judged(user, count),
                                   f"{user}'s creates in the audit log")
            for event in events:
                annotations = event["annotations"]
                for hook in ("warn.mutate.cudagate.io", "warn.validate.cudagate.io"):
                    self.assertEqual(annotations.get(f"{hook}/mode"), "warn", annotations)
                    self.assertEqual(annotations.get(f"{hook}/decision"), "warn", annotations)
                    self.assertEqual(annotations.get(f"{hook}/verdict"), verdict, annotations)
                self.assertEqual(annotations.get("warn.mutate.cudagate.io/enforce-decision"),
                                 enforce_decision, annotations)
                self.assertEqual(event["responseStatus"]["code"], 201, event)

    # --- enforce: a partly compatible template is pinned ---------------------

    def test_partly_compatible_template_pinned_and_its_pods_placed_where_they_run(self):
        created = self.apply(deployment("serve", "enforced", "12.4.1", "pin", replicas=3))
        self.assertEqual(created.returncode, 0, created.stderr)
        self.assertIn("Warning: cudagate: pinned to the 1 of 2 candidate nodes that can run it",
                      created.stderr)
        spec = self.get("Deployment", "enforced", "serve")["spec"]["template"]
        self.assertIn("cudagate.io/pinned", spec["metadata"]["annotations"])
        terms = spec["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]

        # The ReplicaSet controller copies the template into each pod
        # (controller_utils.go GetPodFromTemplate); the pods pass cudagate as
        # they are, and the scheduler's NodeAffinity filter keeps them off the
        # T4 (nodeaffinity/node_affinity.go, ErrReasonPod). The A100's 2 GPUs
        # take two; the third waits rather than go to the T4.
        def placed():
            pods = self.pods("enforced", "serve")
            bound = [p for p in pods if p["spec"].get("nodeName")]
            waiting = [p for p in pods if not p["spec"].get("nodeName") and any(
                c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
                for c in p.get("status", {}).get("conditions", []))]
            return (bound, waiting) if len(pods) == 3 and len(bound) == 2 \
                and len(waiting) == 1 else None
        bound, waiting = kc.wait_until(placed, "two replicas bound and one unschedulable")
        self.assertEqual({p["spec"]["nodeName"] for p in bound}, {"pin-a100"})
        for pod in bound + waiting:
            self.assertEqual(pod["spec"]["affinity"]["nodeAffinity"][
                "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"], terms)
        message = [c for c in waiting[0]["status"]["conditions"]
                   if c["type"] == "PodScheduled"][0]["message"]
        self.assertIn("didn't match Pod's node affinity/selector", message)

        # Without cudagate the same Deployment has a replica on the T4 (the
        # A100 of its pool has 2 GPUs too).
        unpinned = self.apply(deployment("serve", "unguarded", "12.4.1", "pin-off", replicas=3))
        self.assertEqual(unpinned.returncode, 0, unpinned.stderr)
        nodes = [p["spec"]["nodeName"] for p in self.bound_pods("unguarded", "serve", 3)]
        self.assertIn("pin-off-t4", nodes)

    # --- FailedCreate: the controllers' pods refused --------------------------

    def test_namespace_moved_to_enforce_gives_the_replicaset_failedcreate(self):
        self.cluster.namespace("moving", {"cudagate.io/mode": "warn"})
        for name, cuda in (("doomed", "12.8.0"), ("serve", "12.4.1")):
            created = self.apply(deployment(name, "moving", cuda, "moving"))
            self.assertEqual(created.returncode, 0, created.stderr)
            self.assertIn("Warning: cudagate:", created.stderr)
            self.bound_pods("moving", name, 1)

        self.relabel("moving", "enforce")
        self.wait_refused("moving", "12.8.0", "moving", "enforce.mutate.cudagate.io", T4_DENIAL)
        for name in ("doomed", "serve"):
            self.cluster.kubectl("-n", "moving", "scale", f"deployment/{name}", "--replicas=2")

        # The ReplicaSet controller's create of the second CUDA 12.8 pod is
        # refused: it records FailedCreate on the ReplicaSet
        # (controller_utils.go RealPodControl.createPods), sets the
        # ReplicaSet's ReplicaFailure condition (replicaset/replica_set_utils.go),
        # which the Deployment controller copies (deployment/progress.go), and
        # retries with backoff.
        rs = self.owned_replicaset("moving", "doomed")["metadata"]["name"]
        event = self.wait_event("moving", "FailedCreate", "ReplicaSet", rs)
        self.assertEqual(event["type"], "Warning")
        self.assertEqual(event["involvedObject"]["apiVersion"], "apps/v1")
        self.assertTrue(event["message"].startswith(
            "Error creating: " + DENIED.format("enforce.mutate.cudagate.io")), event["message"])
        self.assertIn('container "train" needs CUDA 12.8', event["message"])
        self.assertIn(T4_DENIAL, event["message"])

        def failure(kind, name):
            status = self.get(kind, "moving", name).get("status", {})
            for condition in status.get("conditions", []):
                if condition["type"] == "ReplicaFailure" and condition["status"] == "True":
                    return condition
            return None
        for kind, name in (("ReplicaSet", rs), ("Deployment", "doomed")):
            condition = kc.wait_until(lambda: failure(kind, name),
                                      f"{kind} {name}'s ReplicaFailure")
            self.assertEqual(condition["reason"], "FailedCreate")
            self.assertIn(DENIED.format("enforce.mutate.cudagate.io"), condition["message"])
        self.assertEqual(len(self.pods("moving", "doomed")), 1)

        # The partly compatible one scales: its new pod is pinned by the
        # mutating webhook itself (its template, admitted under warn, has no
        # pin) and lands on the A100; the first replica is where warn left it.
        self.assertNotIn("affinity", self.get("Deployment", "moving", "serve")
                         ["spec"]["template"]["spec"])
        pods = self.bound_pods("moving", "serve", 2)
        pinned = [p for p in pods if "cudagate.io/pinned" in p["metadata"].get("annotations", {})]
        self.assertEqual(len(pinned), 1, [p["metadata"] for p in pods])
        self.assertIn("nodeAffinity", pinned[0]["spec"]["affinity"])
        self.assertEqual(pinned[0]["spec"]["nodeName"], "moving-a100")
        serve_rs = self.owned_replicaset("moving", "serve")["metadata"]["name"]
        self.assertEqual(self.events_on("moving", "FailedCreate", "ReplicaSet", serve_rs), [])

        # With the namespace off, the same ReplicaSet creates its pods.
        self.relabel("moving", "off")
        probe = kc.gpu_pod("probe", "moving", cuda="12.8.0", node_selector={"pool": "moving"})
        kc.wait_until(lambda: self.cluster.kubectl("create", "--dry-run=server", "-f", "-",
                                                   stdin=probe, check=False).returncode == 0,
                      "the API server to stop calling cudagate for moving")
        self.cluster.kubectl("-n", "moving", "scale", "deployment/doomed", "--replicas=3")
        self.bound_pods("moving", "doomed", 3)

    def test_driver_downgrade_under_a_suspended_job_gives_the_job_failedcreate(self):
        self.cluster.namespace("rollout", {"cudagate.io/mode": "enforce"})
        # CUDA 12.4 on an A100 with driver 550: compatible, created as is.
        for namespace in ("rollout", "unguarded"):
            created = self.apply(job("finetune", namespace, "12.4.1", "rollout", suspend=True))
            self.assertEqual(created.returncode, 0, created.stderr)
            self.assertNotIn("Warning:", created.stderr)

        # The driver goes back to 535 (CUDA 12.2) while the Jobs wait.
        self.cluster.set_labels("rollout-a100", {
            "nvidia.com/cuda.driver-version.full": T4_DRIVER,
            "nvidia.com/cuda.driver-version.major": "535",
            "nvidia.com/cuda.driver-version.minor": "129",
            "nvidia.com/cuda.driver-version.revision": "03",
            "nvidia.com/cuda.runtime-version.full": "12.2",
            "nvidia.com/cuda.runtime-version.minor": "2"})
        self.wait_refused("rollout", "12.4.1", "rollout", "enforce.mutate.cudagate.io",
                          f"{T4_DENIAL} (rollout-a100)")

        # Resuming changes no template, so the Job's update is not judged
        # again; the Job controller's pod create is
        # (job/job_controller.go manageJob -> CreatePodsWithGenerateName).
        for namespace in ("rollout", "unguarded"):
            self.cluster.merge_patch(PATHS["Job"].format(namespace, "finetune"),
                                     {"spec": {"suspend": False}})
        event = self.wait_event("rollout", "FailedCreate", "Job", "finetune")
        self.assertEqual(event["type"], "Warning")
        self.assertEqual(event["involvedObject"]["apiVersion"], "batch/v1")
        self.assertTrue(event["message"].startswith(
            "Error creating: " + DENIED.format("enforce.mutate.cudagate.io")), event["message"])
        self.assertIn('container "train" needs CUDA 12.4', event["message"])
        self.assertIn(f"{T4_DENIAL} (rollout-a100)", event["message"])
        self.assertEqual(self.pods("rollout", "finetune"), [])
        # Without cudagate the pod is created and bound to the downgraded node.
        pod = self.bound_pods("unguarded", "finetune", 1)[0]
        self.assertEqual(pod["spec"]["nodeName"], "rollout-a100")

    # --- CronJobs: their Jobs are judged ---------------------------------------

    def test_job_from_a_cronjob_is_judged(self):
        self.cluster.namespace("cron", {"cudagate.io/mode": "enforce"})
        self.cluster.namespace("cron-moving", {"cudagate.io/mode": "warn"})
        # Partly compatible: the CronJob's template is pinned, and a Job made
        # from it (kubectl's create job --from copies the jobTemplate,
        # kubectl/pkg/cmd/create/create_job.go) carries the pin; cudagate
        # finds it compatible as it is and its pod lands on the A100.
        created = self.apply(cronjob("report", "cron", "12.4.1", "cron", suspend=True))
        self.assertEqual(created.returncode, 0, created.stderr)
        self.assertIn("Warning: cudagate: pinned to the 1 of 2", created.stderr)
        made = self.cluster.kubectl("-n", "cron", "create", "job", "report-manual",
                                    "--from=cronjob/report", check=False)
        self.assertEqual(made.returncode, 0, made.stderr)
        self.assertNotIn("Warning:", made.stderr)
        job_template = self.get("Job", "cron", "report-manual")["spec"]["template"]
        self.assertIn("cudagate.io/pinned", job_template["metadata"]["annotations"])
        self.assertIn("nodeAffinity", job_template["spec"]["affinity"])
        self.assertEqual(self.bound_pods("cron", "report", 1)[0]["spec"]["nodeName"], "cron-a100")

        # Incompatible, admitted under warn; once the namespace enforces, a
        # Job made from it is refused.
        created = self.apply(cronjob("nightly", "cron-moving", "12.8.0", "cron", suspend=True))
        self.assertEqual(created.returncode, 0, created.stderr)
        self.assertIn("would be denied in enforce mode", created.stderr)
        self.relabel("cron-moving", "enforce")
        self.wait_refused("cron-moving", "12.8.0", "cron", "enforce.mutate.cudagate.io",
                          T4_DENIAL)
        refused = self.cluster.kubectl("-n", "cron-moving", "create", "job", "nightly-manual",
                                       "--from=cronjob/nightly", check=False)
        self.assertNotEqual(refused.returncode, 0, refused.stdout)
        self.assertIn("error: failed to create job: "
                      + DENIED.format("enforce.mutate.cudagate.io"), refused.stderr)
        self.assertIn(f"{A100_DENIAL} (cron-a100)", refused.stderr)
        self.assertFalse(self.exists("Job", "cron-moving", "nightly-manual"))

        # On its schedule, the CronJob controller's create is refused too: it
        # records FailedCreate on the CronJob (cronjob/cronjob_controllerv2.go
        # syncCronJob). Without cudagate the same CronJob makes its Job. Both
        # fire at the next minute; the wait is on the event and the Job.
        created = self.apply(cronjob("nightly", "unguarded", "12.8.0", "cron", suspend=True))
        self.assertEqual(created.returncode, 0, created.stderr)
        started = time.monotonic()
        for namespace in ("cron-moving", "unguarded"):
            # An update that leaves the template alone is not judged again.
            self.cluster.merge_patch(PATHS["CronJob"].format(namespace, "nightly"),
                                     {"spec": {"suspend": False}})
        event = self.wait_event("cron-moving", "FailedCreate", "CronJob", "nightly", timeout=150)
        print(f"\nthe CronJob controller's first Job create came {time.monotonic() - started:.1f}"
              " s after the resume", file=sys.stderr)
        self.assertEqual(event["type"], "Warning")
        self.assertTrue(event["message"].startswith(
            "Error creating job: " + DENIED.format("enforce.mutate.cudagate.io")),
            event["message"])
        self.assertIn(T4_DENIAL, event["message"])
        self.assertEqual(self.cluster.get("/apis/batch/v1/namespaces/cron-moving/jobs")["items"],
                         [])

        def scheduled_job():
            jobs = self.cluster.get("/apis/batch/v1/namespaces/unguarded/jobs")["items"]
            return [j for j in jobs if any(o.get("kind") == "CronJob" and o.get("name") == "nightly"
                                           for o in j["metadata"].get("ownerReferences", []))]
        kc.wait_until(scheduled_job, "the unguarded CronJob's Job", timeout=150)


if __name__ == "__main__":
    sys.exit(harness.main(__name__))
