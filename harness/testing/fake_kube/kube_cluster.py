"""The FAKE cluster behind the fake API server (tests only): job controller, scheduler, admission.

Modelled (close to Kubernetes 1.31, what the C++ driver reads):
  - Job controller: one Pod per Job (name `<job>-<5 chars>`, job-name / controller-uid labels, a
    controller ownerReference), SuccessfulCreate / FailedCreate / Completed / BackoffLimitExceeded
    / DeadlineExceeded events, status counts and times, the conditions SuccessCriteriaMet+Complete
    or FailureTarget+Failed. activeDeadlineSeconds kills and DELETES the pod (its logs go with it,
    docs/traps.md, trap 5). Deleting a Job: Background and Foreground (alike here) delete its pods
    (the `gc-delay` fault keeps them S seconds more, as the real garbage collector is late), Orphan
    (the batch/v1 REST default) leaves them.
  - Scheduler: spec.nodeName (a node that does not exist: the pod stays Pending, never started),
    else the first node that is not unschedulable, has no NoSchedule/NoExecute taint and matches
    spec.nodeSelector; none: PodScheduled False Unschedulable and a FailedScheduling event.
  - Admission of bare pods (POST .../pods, dry run or not) per settings["admission"], the scripted
    policy being "pods must set spec.runtimeClassName": admit, warn (admitted, a Warning header),
    webhook-403, psa-403, vap-422, each in the words of the real component. Job pods are admitted
    unless the `pod-fails-create` fault names their probe (FailedCreate event, no pod);
    `pod-create-conflict`: a FailedCreate with the quota's 409 conflict first (QUOTA_CONFLICT).
  - Quota as faults: `quota-jobs=N` / `quota-pods=N` answer 403 "exceeded quota" once N exist.
  - NetworkPolicy: validated (policyTypes), defaulted (podSelector, policyTypes) and stored; never
    enforced (kube_kubelet.py isolates nothing).
NOT modelled: backoffLimit > 0, completions/parallelism > 1, podFailurePolicy (one pod, its end
ends the Job); ttlSecondsAfterFinished; defaulting beyond the Job's selector and pod labels;
tolerations, affinity, RuntimeClass (runtimeClassName is stored, not checked); Service creation;
a Job pod deleted under a running Job fails the Job (no replacement pod).
"""
import copy
import random
import re
import threading
import time
import uuid

from kube_kubelet import SWEEP_S, Kubelet
from kube_store import ApiError, Store, not_found, now_rfc3339

NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # k8s utilrand alphabet for generateName suffixes
LABEL_RE = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
# The Job controller's event when the quota admission lost its optimistic-concurrency race to
# another pod create (seen on the real cluster with 15 Jobs at once).
QUOTA_CONFLICT = ('Error creating: Operation cannot be fulfilled on resourcequotas "sandprobe-rate": '
                  "the object has been modified; please apply your changes to the latest version "
                  "and try again")
ADMISSION_MODES = ("admit", "warn", "webhook-403", "psa-403", "vap-422")
VAP = ("ValidatingAdmissionPolicy 'require-runtime-class' with binding "
       "'require-runtime-class-binding'")


def new_object(ns, body):
    """A create request's object as stored: a copy of body in namespace ns, named generateName and
    5 random characters when it has no name. Returns (object, its metadata, its name or "")."""
    obj = copy.deepcopy(body)
    meta = obj.setdefault("metadata", {})
    meta["namespace"] = ns
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = meta["generateName"] + "".join(random.choices(NAME_CHARS, k=5))
    return obj, meta, meta.get("name", "")


def invalid(kind, name, causes, group=""):
    """422 Invalid with field causes, as the API server's validation answers."""
    msg = "; ".join(f"{c['field']}: {c['message']}" for c in causes)
    return ApiError(422, "Invalid", f'{kind} "{name}" is invalid: {msg}',
                    {"name": name, "group": group, "kind": kind.split(".")[0],
                     "causes": [dict(c, reason="FieldValueInvalid") for c in causes]})


def name_causes(name, subdomain):
    """metadata.name problems: DNS-1123 label (Jobs) or subdomain (Pods, NetworkPolicies)."""
    if not name:
        return [{"field": "metadata.name",
                 "message": "Required value: name or generateName is required"}]
    pattern = rf"{LABEL_RE}(\.{LABEL_RE})*" if subdomain else LABEL_RE
    if len(name) <= (253 if subdomain else 63) and re.fullmatch(pattern, name):
        return []
    what = ("subdomain must consist of lower case alphanumeric characters, '-' or '.'"
            if subdomain else "label must consist of lower case alphanumeric characters or '-'")
    return [{"field": "metadata.name", "message": f'Invalid value: "{name}": a lowercase RFC 1123 '
             f"{what}, and must start and end with an alphanumeric character"}]


def pod_spec_causes(spec, prefix, restart_policies):
    causes = []
    containers = spec.get("containers") or []
    if not containers:
        causes.append({"field": f"{prefix}.containers", "message": "Required value"})
    for i, c in enumerate(containers):
        for key in ("name", "image"):
            if not c.get(key):
                causes.append({"field": f"{prefix}.containers[{i}].{key}",
                               "message": "Required value"})
    rp = spec.get("restartPolicy", "Always")
    if rp not in restart_policies:
        causes.append({"field": f"{prefix}.restartPolicy",
                       "message": f'Unsupported value: "{rp}": supported values: '
                                  + ", ".join(f'"{p}"' for p in restart_policies)})
    return causes


def policy_types(policy):
    """spec.policyTypes as the API server defaults it: Ingress, + Egress if egress rules exist."""
    spec = policy.get("spec") or {}
    if spec.get("policyTypes"):
        return spec["policyTypes"]
    return ["Ingress"] + (["Egress"] if spec.get("egress") else [])


class Cluster:
    """Everything stateful behind the API: store, settings, controller threads, the kubelet.

    `settings` (dict: "admission", "faults") is changed at runtime by POST /fake/script; read it
    under store.cond.
    """

    def __init__(self, settings, nodes, namespaces, state_dir, as_root):
        self.store = Store()
        self.settings = settings
        self.stopping = threading.Event()
        self.deleting = set()  # pod uids being deleted
        self.kubelet = Kubelet(self, state_dir, as_root)
        with self.store.cond:
            for ns in namespaces:
                self.store.create_locked("namespaces", {
                    "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}},
                    "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
            for node in nodes:
                self.store.create_locked("nodes", node)

    # ------------------------------------------------------------------ helpers
    def event_locked(self, obj, etype, reason, message, component="job-controller"):
        meta = obj["metadata"]
        ts = now_rfc3339()
        self.store.create_locked("events", {
            "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:16]}",
                         "namespace": meta.get("namespace", "default")},
            "involvedObject": {"kind": obj["kind"], "namespace": meta.get("namespace"),
                               "name": meta["name"], "uid": meta["uid"],
                               "apiVersion": obj["apiVersion"],
                               "resourceVersion": meta["resourceVersion"]},
            "reason": reason, "message": message, "type": etype,
            "source": {"component": component}, "firstTimestamp": ts, "lastTimestamp": ts,
            "count": 1, "reportingComponent": component, "reportingInstance": ""})

    def require_namespace_locked(self, ns):
        if self.store.get_locked("namespaces", None, ns) is None:
            raise not_found("namespaces", ns)

    def probe_matches(self, obj, probe_ids):
        """A fault names a probe id: it matches a label/annotation value of the object or of its
        pod template, or a substring of the container command/args (the deployed script)."""
        if not probe_ids:
            return False
        spec = obj.get("spec") or {}
        template = spec.get("template") or {}
        values = set()
        for meta in (obj.get("metadata") or {}, template.get("metadata") or {}):
            values |= set((meta.get("labels") or {}).values())
            values |= set((meta.get("annotations") or {}).values())
        text = " ".join(" ".join(map(str, (c.get("command") or []) + (c.get("args") or [])))
                        for c in (template.get("spec") or spec).get("containers") or [])
        return any(p in values or p in text for p in probe_ids)

    def set_status_locked(self, ns, name, uid, mutate):
        """mutate(status, pod) on the stored pod of that uid unless gone or being deleted ->
        the updated copy, or None."""
        pod = self.store.get_locked("pods", ns, name)
        if pod is None or pod["metadata"]["uid"] != uid or uid in self.deleting:
            return None
        mutate(pod["status"], pod)
        return self.store.update_locked("pods", pod)

    def check_quota_locked(self, ns, resource, name):
        limit = self.settings["faults"].get(f"quota-{resource}")
        used = len(self.store.list_locked(resource, ns))
        if limit is not None and used >= limit:
            count, qual = ("count/jobs.batch", "jobs.batch") if resource == "jobs" else \
                ("pods", "pods")
            raise ApiError(403, "Forbidden",
                           f'{qual} "{name}" is forbidden: exceeded quota: sandprobe-rate, '
                           f"requested: {count}=1, used: {count}={used}, limited: {count}={limit}",
                           {"name": name, "group": "batch" if resource == "jobs" else "",
                            "kind": resource})

    # ------------------------------------------------------------------ jobs
    def prepare_job(self, ns, body):
        """Validates a Job like the API server (422 Invalid on bad fields); sets its selector and
        its pod template's labels."""
        job, meta, name = new_object(ns, body)
        spec = job.setdefault("spec", {})
        template = spec.setdefault("template", {})
        pod_spec = template.setdefault("spec", {})
        causes = name_causes(name, False)
        causes += pod_spec_causes(pod_spec, "spec.template.spec", ["OnFailure", "Never"])
        for key in ("backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished"):
            if key in spec and (not isinstance(spec[key], int) or spec[key] < 0 or
                                (key == "activeDeadlineSeconds" and spec[key] == 0)):
                causes.append({"field": f"spec.{key}", "message": f"Invalid value: {spec[key]}: "
                               "must be greater than or equal to 0"})
        if causes:
            raise invalid("Job.batch", name, causes, "batch")
        uid = meta["uid"] = str(uuid.uuid4())
        spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
        template.setdefault("metadata", {}).setdefault("labels", {}).update({
            "batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name,
            "controller-uid": uid, "job-name": name})
        job["status"] = {}
        return job

    def create_job(self, ns, body, dry_run):
        job = self.prepare_job(ns, body)
        name = job["metadata"]["name"]
        with self.store.cond:
            self.require_namespace_locked(ns)
            self.check_quota_locked(ns, "jobs", name)
            if dry_run:
                if self.store.get_locked("jobs", ns, name) is not None:
                    raise ApiError(409, "AlreadyExists", f'jobs.batch "{name}" already exists',
                                   {"name": name, "group": "batch", "kind": "jobs"})
                job.update(kind="Job", apiVersion="batch/v1")
                job["metadata"]["creationTimestamp"] = now_rfc3339()
                return job
            stored = self.store.create_locked("jobs", job)
        threading.Thread(target=self._job_controller, daemon=True,
                         args=(ns, name, stored["metadata"]["uid"])).start()
        return stored

    def _job_locked(self, ns, name, uid):
        job = self.store.get_locked("jobs", ns, name)
        return job if job is not None and job["metadata"]["uid"] == uid else None

    def _job_controller(self, ns, name, uid):
        """One thread per Job: create its pod, follow it to its end, enforce the deadline."""
        with self.store.cond:
            job = self._job_locked(ns, name, uid)
            if job is None:
                return
            job["status"].update(startTime=now_rfc3339(), active=0, ready=0, terminating=0,
                                 uncountedTerminatedPods={})
            self.store.update_locked("jobs", job)
            spec = job["spec"]
            deadline = time.time() + spec["activeDeadlineSeconds"] if spec.get(
                "activeDeadlineSeconds") else None
            pod_name = f"{name}-" + "".join(random.choices(NAME_CHARS, k=5))
            pod_uid = None
            if self.probe_matches(job, self.settings["faults"]["pod-fails-create"]):
                self.event_locked(job, "Warning", "FailedCreate", 'Error creating: admission '
                                  'webhook "deny.fake-kube.test" denied the request: scripted by '
                                  "--fault pod-fails-create")
            else:
                if self.probe_matches(job, self.settings["faults"]["pod-create-conflict"]):
                    self.event_locked(job, "Warning", "FailedCreate", QUOTA_CONFLICT)
                    self.store.cond.wait(1.0)  # the Job controller's retry, after its backoff
                pod = self.store.create_locked("pods", self._pod_from_template(job, pod_name))
                pod_uid = pod["metadata"]["uid"]
                job["status"]["active"] = 1
                self.store.update_locked("jobs", job)
                self.event_locked(job, "Normal", "SuccessfulCreate", f"Created pod: {pod_name}")
                threading.Thread(target=self.run_pod, args=(ns, pod_name, pod_uid),
                                 daemon=True).start()
        while not self.stopping.is_set():
            time.sleep(SWEEP_S)
            with self.store.cond:
                job = self._job_locked(ns, name, uid)
                if job is None or self._job_step_locked(job, pod_name, pod_uid, deadline):
                    return

    def _job_step_locked(self, job, pod_name, pod_uid, deadline):
        """Advances a Job; True once it ended."""
        pod = self.store.get_locked("pods", job["metadata"]["namespace"], pod_name)
        if pod is not None and pod["metadata"]["uid"] != pod_uid:
            pod = None
        phase = (pod or {}).get("status", {}).get("phase")
        st = job["status"]
        if phase == "Running" and not st.get("ready"):
            st["ready"] = 1
            self.store.update_locked("jobs", job)
        if deadline is not None and time.time() >= deadline:
            self._fail_job_locked(job, "DeadlineExceeded",
                                  "Job was active longer than specified deadline", pod)
            return True
        if phase == "Succeeded":
            ts = now_rfc3339()
            message = "Reached expected number of succeeded pods"
            st.update(active=0, ready=0, succeeded=1, completionTime=ts)
            st["conditions"] = [{"type": t, "status": "True", "reason": "CompletionsReached",
                                 "message": message, "lastProbeTime": ts,
                                 "lastTransitionTime": ts}
                                for t in ("SuccessCriteriaMet", "Complete")]
            self.store.update_locked("jobs", job)
            self.event_locked(job, "Normal", "Completed", "Job completed")
            return True
        if phase == "Failed" or (pod_uid is not None and pod is None):
            self._fail_job_locked(job, "BackoffLimitExceeded",
                                  "Job has reached the specified backoff limit")
            return True
        return False

    def _fail_job_locked(self, job, reason, message, pod=None):
        """FailureTarget, the pod deleted (a deadline), then Failed and a Warning event."""
        def condition(kind):
            ts = now_rfc3339()
            return {"type": kind, "status": "True", "reason": reason, "message": message,
                    "lastProbeTime": ts, "lastTransitionTime": ts}
        job["status"].setdefault("conditions", []).append(condition("FailureTarget"))
        self.store.update_locked("jobs", job)
        if pod is not None:
            self.delete_pod_locked(pod)
        job["status"].update(active=0, ready=0, failed=1, terminating=0)
        job["status"]["conditions"].append(condition("Failed"))
        self.store.update_locked("jobs", job)
        self.event_locked(job, "Warning", reason, message)

    def _pod_from_template(self, job, pod_name):
        template = copy.deepcopy(job["spec"]["template"])
        meta = template.get("metadata") or {}
        jmeta = job["metadata"]
        return {"metadata": {
            "name": pod_name, "generateName": jmeta["name"] + "-", "namespace": jmeta["namespace"],
            "labels": meta.get("labels", {}), "annotations": meta.get("annotations", {}),
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": jmeta["name"],
                                 "uid": jmeta["uid"], "controller": True,
                                 "blockOwnerDeletion": True}],
            "finalizers": ["batch.kubernetes.io/job-tracking"]}, "spec": template["spec"],
            "status": {"phase": "Pending", "qosClass": "BestEffort"}}

    # ------------------------------------------------------------------ deletion
    def delete_job(self, ns, name, propagation):
        """Deletes a Job; Background and Foreground also delete its pods, Orphan leaves them."""
        with self.store.cond:
            job = self.store.get_locked("jobs", ns, name)
            if job is None:
                raise not_found("jobs", name, "batch")
            uid = job["metadata"]["uid"]
            pods = [p["metadata"]["name"] for p in self.store.list_locked("pods", ns)
                    if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences", []))]
            if propagation == "Orphan":
                for p in pods:
                    live = self.store.get_locked("pods", ns, p)
                    live["metadata"]["ownerReferences"] = []
                    self.store.update_locked("pods", live)
                pods = []
            job["metadata"]["deletionTimestamp"] = now_rfc3339()
            deleted = self.store.delete_locked("jobs", ns, name)
            delay = self.settings["faults"].get("gc-delay") or 0
            if pods and delay > 0:
                timer = threading.Timer(delay, self._collect_pods, (ns, pods))
                timer.daemon = True
                timer.start()
            else:
                self._collect_pods_locked(ns, pods)
            return deleted

    def _collect_pods(self, ns, names):
        """The garbage collector's late pass (fault gc-delay): deletes a deleted Job's pods."""
        with self.store.cond:
            self._collect_pods_locked(ns, names)

    def _collect_pods_locked(self, ns, names):
        for name in names:
            live = self.store.get_locked("pods", ns, name)
            if live is not None:
                self.delete_pod_locked(live)

    def delete_pod(self, ns, name):
        with self.store.cond:
            pod = self.store.get_locked("pods", ns, name)
            if pod is None:
                raise not_found("pods", name)
            return self.delete_pod_locked(pod)

    def delete_pod_locked(self, pod):
        """Marks the pod terminating (MODIFIED), kills its processes, removes it (DELETED).

        The kill happens with the store lock released, so watchers see the MODIFIED event first.
        """
        meta = pod["metadata"]
        uid = meta["uid"]
        if uid in self.deleting:
            return copy.deepcopy(pod)
        self.deleting.add(uid)
        meta["deletionTimestamp"] = now_rfc3339()
        meta["deletionGracePeriodSeconds"] = 0
        snapshot = self.store.update_locked("pods", pod)
        self.kubelet.stop_pod_locked(uid)
        self.store.delete_locked("pods", meta["namespace"], meta["name"])
        self.deleting.discard(uid)
        self.kubelet.drop_workdir(uid)
        return snapshot

    # ------------------------------------------------------------------ bare pods
    def create_pod(self, ns, body, dry_run):
        """A bare Pod: validated, admitted per settings['admission'], run if not a dry run.
        Returns (the pod, an admission warning or None)."""
        pod, meta, name = new_object(ns, body)
        spec = pod.setdefault("spec", {})
        causes = name_causes(name, True) + pod_spec_causes(spec, "spec",
                                                           ["Always", "OnFailure", "Never"])
        if causes:
            raise invalid("Pod", name, causes)
        with self.store.cond:
            self.require_namespace_locked(ns)
            self.check_quota_locked(ns, "pods", name)
            warning = self._admit_locked(pod)
            if self.store.get_locked("pods", ns, name) is not None:
                raise ApiError(409, "AlreadyExists", f'pods "{name}" already exists',
                               {"name": name, "group": "", "kind": "pods"})
            pod["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
            if dry_run:
                pod.update(kind="Pod", apiVersion="v1")
                meta.update(uid=str(uuid.uuid4()), creationTimestamp=now_rfc3339())
                return pod, warning
            stored = self.store.create_locked("pods", pod)
        threading.Thread(target=self.run_pod, daemon=True,
                         args=(ns, name, stored["metadata"]["uid"])).start()
        return stored, warning

    def _admit_locked(self, pod):
        """The scripted admission policy for bare pods: "pods must set spec.runtimeClassName".
        Returns a warning text or None; raises the 403/422 of the mode's real component."""
        name = pod["metadata"]["name"]
        mode = self.settings["admission"]
        if pod["spec"].get("runtimeClassName") is not None or mode == "admit":
            return None
        if mode == "warn":
            return f"Validation failed for {VAP}: pods must set spec.runtimeClassName"
        details = {"name": name, "kind": "pods"}
        if mode == "webhook-403":
            raise ApiError(403, "Forbidden", 'admission webhook "runtimeclass.policy.example.com" '
                           "denied the request: spec.runtimeClassName is required (gvisor)",
                           details)
        if mode == "psa-403":
            raise ApiError(403, "Forbidden",
                           f'pods "{name}" is forbidden: violates PodSecurity "restricted:latest": '
                           "allowPrivilegeEscalation != false (container \"probe\" must set "
                           "securityContext.allowPrivilegeEscalation=false), unrestricted "
                           "capabilities (container \"probe\" must set "
                           "securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true "
                           "(pod or container \"probe\" must set securityContext.runAsNonRoot="
                           "true), seccompProfile (pod or container \"probe\" must set "
                           "securityContext.seccompProfile.type to \"RuntimeDefault\" or "
                           "\"Localhost\")", details)
        denied = f"{VAP} denied request: pods must set spec.runtimeClassName"
        raise ApiError(422, "Invalid", f'pods "{name}" is forbidden: {denied}',
                       dict(details, causes=[{"message": denied, "field": ""}]))

    # ------------------------------------------------------------------ scheduling, kubelet
    def _schedule_locked(self, pod):
        """A node name, None (unschedulable) or False (bound to a node that does not exist)."""
        spec = pod["spec"]
        if spec.get("nodeName"):
            if self.store.get_locked("nodes", None, spec["nodeName"]) is None:
                return False
            return spec["nodeName"]
        for node in self.store.list_locked("nodes"):
            labels = node["metadata"].get("labels", {})
            if node["spec"].get("unschedulable") or any(
                    t.get("effect") in ("NoSchedule", "NoExecute")
                    for t in node["spec"].get("taints") or []):
                continue
            if all(labels.get(k) == v for k, v in (spec.get("nodeSelector") or {}).items()):
                return node["metadata"]["name"]
        return None

    def run_pod(self, ns, name, uid):
        """One thread per pod: schedule it, then the kubelet runs it."""
        time.sleep(0.02)
        with self.store.cond:
            pod = self.store.get_locked("pods", ns, name)
            if pod is None or pod["metadata"]["uid"] != uid:
                return
            node = self._schedule_locked(pod)
            ts = now_rfc3339()
            if node is False:
                return
            if node is None:
                pod["status"]["conditions"] = [{
                    "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                    "message": "0/1 nodes are available: no node matches the pod.",
                    "lastProbeTime": None, "lastTransitionTime": ts}]
                self.store.update_locked("pods", pod)
                self.event_locked(pod, "Warning", "FailedScheduling", "0/1 nodes are available",
                                  "default-scheduler")
                return
            c = pod["spec"]["containers"][0]
            pod["spec"]["nodeName"] = node
            pod["status"].update(
                hostIP="127.0.0.1", hostIPs=[{"ip": "127.0.0.1"}], startTime=ts,
                conditions=[{"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                             "lastTransitionTime": ts}],
                containerStatuses=[{"name": c["name"], "image": c["image"], "imageID": "",
                                    "ready": False, "restartCount": 0, "started": False,
                                    "state": {"waiting": {"reason": "ContainerCreating"}},
                                    "lastState": {}}])
            self.store.update_locked("pods", pod)
            self.event_locked(pod, "Normal", "Scheduled",
                              f"Successfully assigned {ns}/{name} to {node}", "default-scheduler")
            pod = copy.deepcopy(pod)
        self.kubelet.run(ns, name, uid, pod)

    # ------------------------------------------------------------------ network policies
    def create_policy(self, ns, body):
        """POST .../networkpolicies: validated, defaulted and stored (never enforced here)."""
        pol, _, name = new_object(ns, body)
        spec = pol.setdefault("spec", {})
        causes = name_causes(name, True)
        causes += [{"field": "spec.policyTypes", "message": f'Unsupported value: "{t}": '
                    'supported values: "Egress", "Ingress"'}
                   for t in spec.get("policyTypes") or [] if t not in ("Ingress", "Egress")]
        if causes:
            raise invalid("NetworkPolicy.networking.k8s.io", name, causes, "networking.k8s.io")
        spec.setdefault("podSelector", {})
        spec["policyTypes"] = policy_types(pol)
        with self.store.cond:
            self.require_namespace_locked(ns)
            return self.store.create_locked("networkpolicies", pol)

    def shutdown(self):
        self.stopping.set()
        self.kubelet.shutdown()
