"""The FAKE cluster behind the fake API server (tests only): job controller, scheduler, "kubelet".

Modelled (close to Kubernetes 1.31):
  - Job controller: one Pod per Job (generateName `<job>-`, job-name / controller-uid labels,
    ownerReferences), SuccessfulCreate / FailedCreate / Completed / BackoffLimitExceeded /
    DeadlineExceeded events, status.active/succeeded/failed/startTime/completionTime and the
    conditions SuccessCriteriaMet+Complete or FailureTarget+Failed (reasons BackoffLimitExceeded,
    DeadlineExceeded). activeDeadlineSeconds kills and DELETES the pod (its logs go with it,
    docs/traps.md, trap 5). ttlSecondsAfterFinished deletes the Job and its pods.
  - Scheduler: spec.nodeName, else the first schedulable node (no spec.unschedulable, taints
    NoSchedule/NoExecute tolerated) matching nodeSelector and required node affinity.
  - Kubelet: --kubelet process: kube_procs.py (processes, OOM by RSS, network namespace for
    denied egress; the NOT-modelled list below is about this kubelet); --kubelet docker:
    kube_docker.py (real containers; _kubelet schedules, then DockerKubelet.run_pod runs it).
  - Services (ClusterIP allocation, validation), RuntimeClass and CNI DaemonSet objects.
  - NetworkPolicy: a pod is egress-isolated iff a policy of its namespace selects it with Egress in
    policyTypes (policyTypes defaulted as the API server does); policies add up.
NOT modelled (documented simplifications; process kubelet unless said otherwise):
  - backoffLimit > 0, completions/parallelism > 1, podFailurePolicy: one pod, its end ends the Job;
  - NetworkPolicy egress RULES: an empty rule list denies all, ANY rule allows all (no peers/ports)
    (the docker kubelet enforces peers and ports: kube_netpol.py);
  - only the first container runs; images are ignored (the host's binaries run);
    readOnlyRootFilesystem, capabilities, seccomp, emptyDir sizeLimit, cpu limits are not enforced;
  - a Job pod deleted from under a running Job fails the Job (no replacement pod).
"""
import copy
import os
import random
import re
import shutil
import tempfile
import threading
import time
import uuid

import kube_rbac
from kube_procs import PodProcess, proc_table, read_marker, reap_orphans, rss_bytes
from kube_store import ApiError, Store, not_found, now_rfc3339

NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # k8s utilrand alphabet for generateName suffixes
SWEEP_S = 0.05


def dns1123_label_ok(name, max_len=63):
    return bool(name) and len(name) <= max_len and re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?",
                                                                name) is not None


def dns1123_subdomain_ok(name):
    return bool(name) and len(name) <= 253 and re.fullmatch(
        r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", name) is not None


def new_object(ns, body):
    """A create request's object as stored: a copy of body in namespace ns, named generateName and
    5 random characters when it has no name. Returns (object, its metadata, its name or "")."""
    obj = copy.deepcopy(body)
    meta = obj.setdefault("metadata", {})
    meta["namespace"] = ns
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = meta["generateName"] + "".join(random.choices(NAME_CHARS, k=5))
    return obj, meta, meta.get("name", "")


def parse_quantity(text):
    """Kubernetes resource.Quantity (memory) -> bytes: '64Mi', '1G', '512k', '1e9', '100m'."""
    text = str(text).strip()
    suffixes = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
                "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
                "m": 10**-3}
    for suf in sorted(suffixes, key=len, reverse=True):
        if text.endswith(suf):
            return int(float(text[:-len(suf)]) * suffixes[suf])
    return int(float(text))


def invalid(kind, name, causes):
    """422 Invalid with field causes, as the API server's validation answers."""
    msg = "; ".join(f"{c['field']}: {c['message']}" for c in causes)
    return ApiError(422, "Invalid", f'{kind} "{name}" is invalid: {msg}',
                    {"name": name, "group": "batch" if kind.startswith("Job") else "",
                     "kind": kind.split(".")[0].lower() + "s",
                     "causes": [{"reason": "FieldValueInvalid", "message": c["message"],
                                 "field": c["field"]} for c in causes]})


def validate_pod_spec(spec, prefix, restart_policies):
    causes = []
    containers = spec.get("containers") or []
    if not containers:
        causes.append({"field": f"{prefix}.containers", "message": "Required value"})
    for i, c in enumerate(containers):
        if not dns1123_label_ok(c.get("name", "")):
            causes.append({"field": f"{prefix}.containers[{i}].name",
                           "message": "Required value" if not c.get("name") else
                           "Invalid value: a lowercase RFC 1123 label must consist of lower case "
                           "alphanumeric characters or '-'"})
        if not c.get("image"):
            causes.append({"field": f"{prefix}.containers[{i}].image", "message": "Required value"})
        mem = ((c.get("resources") or {}).get("limits") or {}).get("memory")
        if mem is not None:
            try:
                parse_quantity(mem)
            except ValueError:
                causes.append({"field": f"{prefix}.containers[{i}].resources.limits[memory]",
                               "message": f'Invalid value: "{mem}": quantities must match the '
                                          "regular expression"})
    rp = spec.get("restartPolicy", "Always")
    if rp not in restart_policies:
        causes.append({"field": f"{prefix}.restartPolicy",
                       "message": f'Unsupported value: "{rp}": supported values: '
                                  + ", ".join(f'"{p}"' for p in restart_policies)})
    return causes


def selector_matches(selector, labels):
    """metav1.LabelSelector (matchLabels + matchExpressions) against labels; {} = everything."""
    labels = labels or {}
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def cni_daemonsets(cni):
    """The kube-system DaemonSets a cluster with that CNI shows (k3s embeds flannel and its
    network-policy controller in the k3s binary: none)."""
    names = {"flannel": [("kube-flannel-ds", "app", "flannel", "docker.io/flannel/flannel:v0.26.1")],
             "calico": [("calico-node", "k8s-app", "calico-node",
                         "docker.io/calico/node:v3.29.1")],
             "cilium": [("cilium", "k8s-app", "cilium", "quay.io/cilium/cilium:v1.16.5")]}
    out = []
    for name, key, value, image in names.get(cni, []):
        out.append({"metadata": {"name": name, "namespace": "kube-system",
                                 "labels": {key: value}},
                    "spec": {"selector": {"matchLabels": {key: value}}, "template": {
                        "metadata": {"labels": {key: value}},
                        "spec": {"hostNetwork": True, "containers": [
                            {"name": name, "image": image}]}}},
                    "status": {"currentNumberScheduled": 1, "desiredNumberScheduled": 1,
                               "numberAvailable": 1, "numberReady": 1, "numberMisscheduled": 0,
                               "updatedNumberScheduled": 1, "observedGeneration": 1}})
    return out


def pod_env(pod, node, pod_ip, host_ip, env):
    """`env` updated with the first container's env as the kubelet resolves it: plain values,
    fieldRef to the pod's downward-API fields, an entry with neither as ""; returns env."""
    c = pod["spec"]["containers"][0]
    fields = {"metadata.name": pod["metadata"]["name"],
              "metadata.namespace": pod["metadata"]["namespace"],
              "metadata.uid": pod["metadata"]["uid"], "spec.nodeName": node,
              "spec.serviceAccountName": pod["spec"].get("serviceAccountName", "default"),
              "status.podIP": pod_ip, "status.hostIP": host_ip}
    for item in c.get("env") or []:
        if "value" in item:
            env[item["name"]] = str(item["value"])
        elif (item.get("valueFrom") or {}).get("fieldRef"):
            path = item["valueFrom"]["fieldRef"].get("fieldPath")
            if path in fields:
                env[item["name"]] = fields[path]
        elif "valueFrom" not in item:
            env[item["name"]] = ""
    return env


def policy_types(policy):
    """spec.policyTypes as the API server defaults it: Ingress, + Egress if egress rules exist."""
    spec = policy.get("spec") or {}
    if spec.get("policyTypes"):
        return spec["policyTypes"]
    return ["Ingress"] + (["Egress"] if spec.get("egress") else [])


class Cluster:
    """Everything stateful behind the API: store, settings, pod processes, controller threads.

    `settings` (dict) is changed at runtime by POST /fake/script; read it under store.cond.
    """

    def __init__(self, settings, nodes, namespaces, runtime_classes, as_root, netns_prefix,
                 instance, state_dir, runtime_handlers=None, cni="none"):
        self.store = Store()
        self.state_dir = state_dir
        self.settings = settings
        self.runtime_classes = set(runtime_classes)
        self.docker = None  # kube_docker.DockerKubelet in --kubelet docker mode
        self.sa_tokens = {}  # bearer token -> (namespace, service account); sa_token_for()
        self.service_ips = set()
        self.as_root = as_root
        self.netns_prefix = netns_prefix
        self.instance = instance
        self.service_port = 0
        self.procs = {}  # pod uid -> PodProcess
        self.workdirs = {}  # pod uid -> (cwd, log path)
        self.pod_network = {}  # "ns/name" -> decision dict (exposed at /fake/state)
        self.policy_born = {}  # policy uid -> time.time() when stored
        self.deleting = set()  # pod uids being deleted
        self.stopping = threading.Event()
        with self.store.cond:
            for ns in namespaces:
                self.store.create_locked("namespaces", {
                    "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}},
                    "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
            for node in nodes:
                self.store.create_locked("nodes", node)
            for rc in sorted(self.runtime_classes):
                self.store.create_locked("runtimeclasses", {
                    "metadata": {"name": rc}, "handler": (runtime_handlers or {}).get(rc, rc)})
            if "default" in namespaces:
                self._store_service_locked("default", {
                    "metadata": {"name": "kubernetes", "labels": {
                        "component": "apiserver", "provider": "kubernetes"}},
                    "spec": {"clusterIP": "10.96.0.1", "ports": [
                        {"name": "https", "protocol": "TCP", "port": 443, "targetPort": 6443}]}})
            if "kube-system" in namespaces:
                self._store_service_locked("kube-system", {
                    "metadata": {"name": "kube-dns", "labels": {
                        "k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"}},
                    "spec": {"clusterIP": "10.96.0.10", "selector": {"k8s-app": "kube-dns"},
                             "ports": [{"name": "dns", "protocol": "UDP", "port": 53,
                                        "targetPort": 53},
                                       {"name": "dns-tcp", "protocol": "TCP", "port": 53,
                                        "targetPort": 53}]}})
                for ds in cni_daemonsets(cni):
                    self.store.create_locked("daemonsets", ds)
            for resource, obj in kube_rbac.bootstrap_objects():
                self.store.create_locked(resource, obj)
        threading.Thread(target=self._sweeper, daemon=True, name="sweeper").start()

    # ------------------------------------------------------------------ service accounts
    def sa_token_for(self, ns, name):
        """The bearer token of service account ns/name (minted once, a canary: kube_rbac.py)."""
        with self.store.cond:
            for token, account in self.sa_tokens.items():
                if account == (ns, name):
                    return token
            token = kube_rbac.make_sa_token(self.instance, ns, name)
            self.sa_tokens[token] = (ns, name)
            return token

    # ------------------------------------------------------------------ helpers
    def _event_locked(self, obj, etype, reason, message, component="job-controller"):
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
        metas = [obj.get("metadata") or {}]
        spec = obj.get("spec") or {}
        template = spec.get("template") or {}
        metas.append(template.get("metadata") or {})
        pod_spec = template.get("spec") or spec
        values = set()
        for meta in metas:
            values |= set((meta.get("labels") or {}).values())
            values |= set((meta.get("annotations") or {}).values())
        text = " ".join(" ".join(map(str, (c.get("command") or []) + (c.get("args") or [])))
                        for c in pod_spec.get("containers") or [])
        return any(p in values or p in text for p in probe_ids)

    # ------------------------------------------------------------------ jobs
    def prepare_job(self, ns, body):
        """Validates and defaults a Job like the API server (422 Invalid on bad fields)."""
        job, meta, name = new_object(ns, body)
        causes = []
        if not name:
            causes.append({"field": "metadata.name", "message": "Required value: name or "
                                                                "generateName is required"})
        elif not dns1123_label_ok(name):
            causes.append({"field": "metadata.name", "message": f'Invalid value: "{name}": a '
                           "lowercase RFC 1123 label must consist of lower case alphanumeric "
                           "characters or '-', and must start and end with an alphanumeric "
                           "character (e.g. 'my-name',  or '123-abc'), at most 63 characters"})
        spec = job.setdefault("spec", {})
        template = spec.setdefault("template", {})
        pod_spec = template.setdefault("spec", {})
        causes += validate_pod_spec(pod_spec, "spec.template.spec", ["OnFailure", "Never"])
        for key in ("backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished"):
            if key in spec and (not isinstance(spec[key], int) or spec[key] < 0 or
                                (key == "activeDeadlineSeconds" and spec[key] == 0)):
                causes.append({"field": f"spec.{key}",
                               "message": f"Invalid value: {spec[key]}: must be greater than "
                                          "or equal to 0"})
        if causes:
            raise invalid("Job.batch", name, causes)
        uid = str(uuid.uuid4())
        meta["uid"] = uid
        spec.setdefault("parallelism", 1)
        spec.setdefault("completions", 1)
        spec.setdefault("backoffLimit", 6)
        spec.setdefault("completionMode", "NonIndexed")
        spec.setdefault("suspend", False)
        spec.setdefault("manualSelector", False)
        spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
        spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
        tmeta = template.setdefault("metadata", {})
        tlabels = tmeta.setdefault("labels", {})
        tlabels.update({"batch.kubernetes.io/controller-uid": uid,
                        "batch.kubernetes.io/job-name": name, "controller-uid": uid,
                        "job-name": name})
        pod_spec.setdefault("terminationGracePeriodSeconds", 30)
        pod_spec.setdefault("dnsPolicy", "ClusterFirst")
        pod_spec.setdefault("schedulerName", "default-scheduler")
        pod_spec.setdefault("securityContext", {})
        for c in pod_spec["containers"]:
            c.setdefault("terminationMessagePath", "/dev/termination-log")
            c.setdefault("terminationMessagePolicy", "File")
            c.setdefault("imagePullPolicy", "Always" if c["image"].endswith(":latest") or
                         (":" not in c["image"].split("/")[-1] and "@" not in c["image"])
                         else "IfNotPresent")
            c.setdefault("resources", {})
        job["status"] = {}
        return job

    def check_quota_locked(self, ns, resource, name, limit_key):
        limit = self.settings["faults"].get(limit_key)
        if limit is None:
            return
        used = len(self.store.list_locked(resource, ns))
        if used >= limit:
            count = "count/jobs.batch" if resource == "jobs" else "pods"
            qual = "jobs.batch" if resource == "jobs" else "pods"
            raise ApiError(403, "Forbidden",
                           f'{qual} "{name}" is forbidden: exceeded quota: sandprobe-rate, '
                           f"requested: {count}=1, used: {count}={used}, limited: {count}={limit}",
                           {"name": name, "group": "batch" if resource == "jobs" else "",
                            "kind": resource})

    def create_job(self, ns, body, dry_run):
        job = self.prepare_job(ns, body)
        with self.store.cond:
            self.require_namespace_locked(ns)
            self.check_quota_locked(ns, "jobs", job["metadata"]["name"], "quota-jobs")
            if dry_run:
                if self.store.get_locked("jobs", ns, job["metadata"]["name"]) is not None:
                    raise ApiError(409, "AlreadyExists",
                                   f'jobs.batch "{job["metadata"]["name"]}" already exists')
                job.update(kind="Job", apiVersion="batch/v1")
                job["metadata"]["creationTimestamp"] = now_rfc3339()
                return job
            stored = self.store.create_locked("jobs", job)
        threading.Thread(target=self._job_controller, daemon=True,
                         args=(ns, stored["metadata"]["name"], stored["metadata"]["uid"])).start()
        return stored

    def _job_locked(self, ns, name, uid):
        job = self.store.get_locked("jobs", ns, name)
        return job if job is not None and job["metadata"]["uid"] == uid else None

    def _job_controller(self, ns, name, uid):
        """One thread per Job: create its pod, follow it, enforce the deadline and the TTL."""
        faults = self.settings["faults"]
        with self.store.cond:
            job = self._job_locked(ns, name, uid)
            if job is None:
                return
            start = time.time()
            job["status"].update(startTime=now_rfc3339(), active=0, ready=0, terminating=0,
                                 uncountedTerminatedPods={})
            self.store.update_locked("jobs", job)
            spec = job["spec"]
            deadline = start + spec["activeDeadlineSeconds"] if spec.get(
                "activeDeadlineSeconds") else None
            ttl = spec.get("ttlSecondsAfterFinished")
            pod_name = f"{name}-" + "".join(random.choices(NAME_CHARS, k=5))
            rc_name = spec["template"]["spec"].get("runtimeClassName")
            fail_msg = None
            if self.probe_matches(job, faults.get("pod-fails-create")):
                fail_msg = (f'Error creating: admission webhook "deny.fake-kube.test" denied the '
                            f"request: scripted by --fault pod-fails-create")
            elif rc_name is not None and rc_name not in self.runtime_classes:
                fail_msg = (f'Error creating: pods "{pod_name}" is forbidden: pod rejected: '
                            f'RuntimeClass "{rc_name}" not found')
            if fail_msg:
                self._event_locked(job, "Warning", "FailedCreate", fail_msg)
                pod_uid = None
            else:
                pod = self._pod_from_template_locked(job, pod_name)
                pod = self.store.create_locked("pods", pod)
                pod_uid = pod["metadata"]["uid"]
                job["status"]["active"] = 1
                self.store.update_locked("jobs", job)
                self._event_locked(job, "Normal", "SuccessfulCreate", f"Created pod: {pod_name}")
                threading.Thread(target=self._kubelet, args=(ns, pod_name, pod_uid),
                                 daemon=True).start()
        finished_at = None
        while not self.stopping.is_set():
            time.sleep(SWEEP_S)
            with self.store.cond:
                job = self._job_locked(ns, name, uid)
                if job is None:
                    return
                if finished_at is None:
                    finished_at = self._job_step_locked(job, pod_name, pod_uid, deadline)
                if finished_at is not None and ttl is not None and time.time() >= finished_at + ttl:
                    break
        if not self.stopping.is_set():
            self.delete_job(ns, name, "Background")

    def _job_step_locked(self, job, pod_name, pod_uid, deadline):
        """Advances a Job; returns the finish time once it ended, else None."""
        ns = job["metadata"]["namespace"]
        pod = self.store.get_locked("pods", ns, pod_name) if pod_uid else None
        if pod is not None and pod["metadata"]["uid"] != pod_uid:
            pod = None
        phase = (pod or {}).get("status", {}).get("phase")
        st = job["status"]
        if phase == "Running" and not st.get("ready"):
            st["ready"] = 1
            self.store.update_locked("jobs", job)
        if deadline is not None and time.time() >= deadline:
            self._fail_job_locked(job, "DeadlineExceeded",
                                  "Job was active longer than specified deadline")
            if pod is not None:
                self._delete_pod_locked(pod)
            self._finish_failed_locked(job, "DeadlineExceeded",
                                       "Job was active longer than specified deadline")
            return time.time()
        if phase == "Succeeded":
            st.update(active=0, ready=0, succeeded=1, completionTime=now_rfc3339())
            ts = now_rfc3339()
            st["conditions"] = [
                {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached",
                 "message": "Reached expected number of succeeded pods",
                 "lastProbeTime": ts, "lastTransitionTime": ts},
                {"type": "Complete", "status": "True", "reason": "CompletionsReached",
                 "message": "Reached expected number of succeeded pods",
                 "lastProbeTime": ts, "lastTransitionTime": ts}]
            self.store.update_locked("jobs", job)
            self._event_locked(job, "Normal", "Completed", "Job completed")
            return time.time()
        if phase == "Failed" or (pod_uid is not None and pod is None):
            self._fail_job_locked(job, "BackoffLimitExceeded",
                                  "Job has reached the specified backoff limit")
            self._finish_failed_locked(job, "BackoffLimitExceeded",
                                       "Job has reached the specified backoff limit")
            return time.time()
        return None

    def _fail_job_locked(self, job, reason, message):
        ts = now_rfc3339()
        job["status"].setdefault("conditions", []).append(
            {"type": "FailureTarget", "status": "True", "reason": reason, "message": message,
             "lastProbeTime": ts, "lastTransitionTime": ts})
        self.store.update_locked("jobs", job)

    def _finish_failed_locked(self, job, reason, message):
        ts = now_rfc3339()
        st = job["status"]
        st.update(active=0, ready=0, failed=1, terminating=0)
        st["conditions"].append({"type": "Failed", "status": "True", "reason": reason,
                                 "message": message, "lastProbeTime": ts,
                                 "lastTransitionTime": ts})
        self.store.update_locked("jobs", job)
        self._event_locked(job, "Warning", reason, message)

    def _pod_from_template_locked(self, job, pod_name):
        template = copy.deepcopy(job["spec"]["template"])
        meta = template.get("metadata") or {}
        pod = {"metadata": {
            "name": pod_name, "generateName": job["metadata"]["name"] + "-",
            "namespace": job["metadata"]["namespace"], "labels": meta.get("labels", {}),
            "annotations": meta.get("annotations", {}),
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job",
                                 "name": job["metadata"]["name"], "uid": job["metadata"]["uid"],
                                 "controller": True, "blockOwnerDeletion": True}],
            "finalizers": ["batch.kubernetes.io/job-tracking"]},
            "spec": template["spec"]}
        return self._init_pod(pod)

    def _init_pod(self, pod):
        spec = pod["spec"]
        spec.setdefault("serviceAccountName", "default")
        spec.setdefault("priority", 0)
        spec.setdefault("enableServiceLinks", True)
        pod["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
        return pod

    # ------------------------------------------------------------------ deletion
    def delete_job(self, ns, name, propagation):
        """Deletes a Job; Background/Foreground also delete its pods, Orphan leaves them."""
        with self.store.cond:
            job = self.store.get_locked("jobs", ns, name)
            if job is None:
                raise not_found("jobs", name, "batch")
            uid = job["metadata"]["uid"]
            pods = [p for p in self.store.list_locked("pods", ns)
                    if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences", []))]
            if propagation == "Orphan":
                for p in pods:
                    live = self.store.get_locked("pods", ns, p["metadata"]["name"])
                    live["metadata"]["ownerReferences"] = []
                    self.store.update_locked("pods", live)
                pods = []
            if propagation == "Foreground":
                for p in pods:
                    live = self.store.get_locked("pods", ns, p["metadata"]["name"])
                    if live is not None:
                        self._delete_pod_locked(live)
            job["metadata"]["deletionTimestamp"] = now_rfc3339()
            deleted = self.store.delete_locked("jobs", ns, name)
            if propagation == "Background":
                delay = self.settings["faults"].get("gc-delay") or 0
                if delay > 0:
                    names = [p["metadata"]["name"] for p in pods]
                    timer = threading.Timer(delay, self._collect_pods, (ns, names))
                    timer.daemon = True
                    timer.start()
                    pods = []
                for p in pods:
                    live = self.store.get_locked("pods", ns, p["metadata"]["name"])
                    if live is not None:
                        self._delete_pod_locked(live)
            return deleted

    def _collect_pods(self, ns, names):
        """The garbage collector's late pass (fault gc-delay): deletes a deleted Job's pods."""
        with self.store.cond:
            for name in names:
                live = self.store.get_locked("pods", ns, name)
                if live is not None:
                    self._delete_pod_locked(live)

    def delete_pod(self, ns, name):
        with self.store.cond:
            pod = self.store.get_locked("pods", ns, name)
            if pod is None:
                raise not_found("pods", name)
            return self._delete_pod_locked(pod)

    def _delete_pod_locked(self, pod):
        """Marks the pod terminating (MODIFIED), kills its process tree, removes it (DELETED).

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
        proc = self.procs.pop(uid, None)
        if proc is not None:
            self.store.cond.release()
            try:
                proc.kill_tree()
            finally:
                self.store.cond.acquire()
        self.store.delete_locked("pods", meta["namespace"], meta["name"])
        self.pod_network.pop(f"{meta['namespace']}/{meta['name']}", None)
        self.deleting.discard(uid)
        self._drop_workdir(uid)
        return snapshot

    def _drop_workdir(self, uid):
        cwd_log = self.workdirs.pop(uid, None)
        if cwd_log:
            shutil.rmtree(cwd_log[0], ignore_errors=True)
            try:
                os.unlink(cwd_log[1])
            except OSError:
                pass

    # ------------------------------------------------------------------ bare pods
    def create_pod(self, ns, body, dry_run):
        """A bare Pod: validated, admitted per settings['admission'], run if not a dry run."""
        pod, meta, name = new_object(ns, body)
        causes = []
        if not dns1123_subdomain_ok(name):
            causes.append({"field": "metadata.name", "message": f'Invalid value: "{name}": a '
                           "lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                           "characters, '-' or '.'"})
        spec = pod.setdefault("spec", {})
        causes += validate_pod_spec(spec, "spec", ["Always", "OnFailure", "Never"])
        if causes:
            raise invalid("Pod", name, causes)
        with self.store.cond:
            self.require_namespace_locked(ns)
            self.check_quota_locked(ns, "pods", name, "quota-pods")
            warning = self._admit_locked(pod)
            if self.store.get_locked("pods", ns, name) is not None:
                raise ApiError(409, "AlreadyExists", f'pods "{name}" already exists',
                               {"name": name, "group": "", "kind": "pods"})
            self._init_pod(pod)
            if dry_run:
                pod.update(kind="Pod", apiVersion="v1")
                meta.update(uid=str(uuid.uuid4()), creationTimestamp=now_rfc3339())
                return pod, warning
            stored = self.store.create_locked("pods", pod)
        threading.Thread(target=self._kubelet, daemon=True,
                         args=(ns, name, stored["metadata"]["uid"])).start()
        return stored, warning

    def _admit_locked(self, pod):
        """Admission chain for bare pods. Returns a warning text or None; raises 403/422.

        The scripted admission policies all mean "pods must set a known runtimeClassName":
        a pod that sets one the fake knows is admitted in every mode.
        """
        name = pod["metadata"]["name"]
        rc_name = pod["spec"].get("runtimeClassName")
        if rc_name is not None and rc_name not in self.runtime_classes:
            raise ApiError(403, "Forbidden", f'pods "{name}" is forbidden: pod rejected: '
                           f'RuntimeClass "{rc_name}" not found',
                           {"name": name, "kind": "pods"})
        mode = self.settings["admission"]
        if rc_name is not None or mode == "admit":
            return None
        if mode == "warn":
            return ("Validation failed for ValidatingAdmissionPolicy 'require-runtime-class' with "
                    "binding 'require-runtime-class-binding': pods must set spec.runtimeClassName")
        if mode == "webhook-403":
            raise ApiError(403, "Forbidden", 'admission webhook "runtimeclass.policy.example.com" '
                           "denied the request: spec.runtimeClassName is required (gvisor)",
                           {"name": name, "kind": "pods"})
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
                           "\"Localhost\")", {"name": name, "kind": "pods"})
        if mode == "vap-422":
            raise ApiError(422, "Invalid",
                           f'pods "{name}" is forbidden: ValidatingAdmissionPolicy '
                           "'require-runtime-class' with binding 'require-runtime-class-binding' "
                           "denied request: pods must set spec.runtimeClassName",
                           {"name": name, "kind": "pods",
                            "causes": [{"message": "ValidatingAdmissionPolicy "
                                        "'require-runtime-class' with binding "
                                        "'require-runtime-class-binding' denied request: pods "
                                        "must set spec.runtimeClassName",
                                        "field": ""}]})
        raise RuntimeError(f"unknown admission mode {mode}")

    # ------------------------------------------------------------------ scheduling
    def _schedule_locked(self, pod):
        spec = pod["spec"]
        if spec.get("nodeName"):  # bound: no scheduler; a missing node's kubelet never runs it
            if self.store.get_locked("nodes", None, spec["nodeName"]) is None:
                return False
            return spec["nodeName"]
        tolerations = spec.get("tolerations") or []

        def tolerated(taint):
            for t in tolerations:
                if t.get("effect") and t["effect"] != taint.get("effect"):
                    continue
                if t.get("operator") == "Exists" and (not t.get("key") or
                                                      t["key"] == taint.get("key")):
                    return True
                if t.get("key") == taint.get("key") and t.get("value", "") == taint.get("value",
                                                                                       ""):
                    return True
            return False

        terms = (((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms")
        for node in self.store.list_locked("nodes"):
            labels = node["metadata"].get("labels", {})
            if node["spec"].get("unschedulable"):
                continue
            if any(t.get("effect") in ("NoSchedule", "NoExecute") and not tolerated(t)
                   for t in node["spec"].get("taints") or []):
                continue
            if not all(labels.get(k) == v for k, v in (spec.get("nodeSelector") or {}).items()):
                continue
            if terms and not any(selector_matches({"matchExpressions": t.get("matchExpressions")},
                                                  labels) for t in terms):
                continue
            return node["metadata"]["name"]
        return None

    # ------------------------------------------------------------------ network policy
    def egress_decision_locked(self, pod, node, t_start):
        """Whether the pod's egress is denied now: {'isolated', 'denied', 'policies', 'why'}."""
        mode = self.settings["network-policy"]
        ns = pod["metadata"]["namespace"]
        labels = pod["metadata"].get("labels") or {}
        selecting = [p for p in self.store.list_locked("networkpolicies", ns)
                     if "Egress" in policy_types(p)
                     and selector_matches((p.get("spec") or {}).get("podSelector") or {}, labels)]
        names = [p["metadata"]["name"] for p in selecting]
        out = {"node": node, "policies": names, "isolated": False, "denied": False}
        if mode == "ignore":
            out["why"] = "network-policy ignore: policies stored, not enforced"
            return out
        only = self.settings.get("enforce-on")
        if only is not None and node not in only:
            out["why"] = f"node {node} does not enforce NetworkPolicy"
            return out
        delay = self.settings["policy-delay"]
        aged = [p for p in selecting
                if t_start - self.policy_born.get(p["metadata"]["uid"], 0) >= delay]
        if not aged:
            out["why"] = "no selecting Egress policy old enough" if selecting else \
                "no selecting Egress policy"
            return out
        out["isolated"] = True
        if any((p.get("spec") or {}).get("egress") for p in aged):
            out["why"] = "a selecting policy has egress rules (treated as allow all)"
            return out
        out["denied"] = True
        out["why"] = "deny all egress: " + ", ".join(p["metadata"]["name"] for p in aged)
        return out

    def create_policy(self, ns, body):
        pol, meta, name = new_object(ns, body)
        causes = []
        if not dns1123_subdomain_ok(name):
            causes.append({"field": "metadata.name", "message": f'Invalid value: "{name}"'})
        spec = pol.setdefault("spec", {})
        for t in spec.get("policyTypes") or []:
            if t not in ("Ingress", "Egress"):
                causes.append({"field": "spec.policyTypes", "message": f'Unsupported value: '
                               f'"{t}": supported values: "Egress", "Ingress"'})
        if causes:
            raise ApiError(422, "Invalid", f'NetworkPolicy.networking.k8s.io "{name}" is invalid: '
                           + "; ".join(f"{c['field']}: {c['message']}" for c in causes),
                           {"name": name, "group": "networking.k8s.io", "kind": "NetworkPolicy",
                            "causes": causes})
        spec.setdefault("podSelector", {})
        spec["policyTypes"] = policy_types(pol)
        with self.store.cond:
            self.require_namespace_locked(ns)
            stored = self.store.create_locked("networkpolicies", pol)
            self.policy_born[stored["metadata"]["uid"]] = time.time()
            return stored

    # ------------------------------------------------------------------ services
    def _store_service_locked(self, ns, svc):
        svc["metadata"]["namespace"] = ns
        spec = svc.setdefault("spec", {})
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        spec["clusterIPs"] = [spec["clusterIP"]]
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        svc["status"] = {"loadBalancer": {}}
        stored = self.store.create_locked("services", svc)
        self.service_ips.add(spec["clusterIP"])
        return stored

    def create_service(self, ns, body, dry_run=False):
        """POST .../services: type ClusterIP only; clusterIP allocated from 10.96.0.0/12."""
        svc, meta, name = new_object(ns, body)
        spec = svc.setdefault("spec", {})
        causes = []
        if not dns1123_label_ok(name):
            causes.append({"field": "metadata.name", "message": f'Invalid value: "{name}": a '
                           "DNS-1035 label must consist of lower case alphanumeric characters "
                           "or '-'"})
        stype = spec.get("type", "ClusterIP")
        if stype != "ClusterIP":
            causes.append({"field": "spec.type", "message": f'Unsupported value: "{stype}": '
                           'fake-kube supports "ClusterIP"'})
        ports = spec.get("ports")
        if not ports:
            causes.append({"field": "spec.ports", "message": "Required value"})
        seen = set()
        for i, p in enumerate(ports or []):
            if not isinstance(p, dict) or not isinstance(p.get("port"), int) or \
                    not 1 <= p["port"] <= 65535:
                causes.append({"field": f"spec.ports[{i}].port", "message":
                               f"Invalid value: {p.get('port') if isinstance(p, dict) else p}: "
                               "must be between 1 and 65535, inclusive"})
                continue
            proto = p.setdefault("protocol", "TCP")
            if proto not in ("TCP", "UDP", "SCTP"):
                causes.append({"field": f"spec.ports[{i}].protocol", "message":
                               f'Unsupported value: "{proto}": supported values: "SCTP", "TCP", '
                               '"UDP"'})
            tp = p.setdefault("targetPort", p["port"])
            if isinstance(tp, int) and not 1 <= tp <= 65535:
                causes.append({"field": f"spec.ports[{i}].targetPort", "message":
                               f"Invalid value: {tp}: must be between 1 and 65535, inclusive"})
            if len(ports) > 1 and not p.get("name"):
                causes.append({"field": f"spec.ports[{i}].name", "message": "Required value"})
            if (p["port"], proto) in seen:
                causes.append({"field": f"spec.ports[{i}]", "message": "Duplicate value"})
            seen.add((p["port"], proto))
        if causes:
            raise invalid("Service", name, causes)
        with self.store.cond:
            self.require_namespace_locked(ns)
            if self.store.get_locked("services", ns, name) is not None:
                raise ApiError(409, "AlreadyExists", f'services "{name}" already exists',
                               {"name": name, "group": "", "kind": "services"})
            want = spec.get("clusterIP")
            if want in (None, ""):
                want = None
                for n in range(2, 1 << 20):
                    ip = f"10.{96 + (n >> 16)}.{(n >> 8) & 255}.{n & 255}"
                    if (n & 255) in (0, 255) or ip in ("10.96.0.1", "10.96.0.10") or \
                            ip in self.service_ips:
                        continue
                    want = ip
                    break
            elif want != "None" and want in self.service_ips:
                raise invalid("Service", name, [{"field": "spec.clusterIPs", "message":
                                                 f"Invalid value: []string{{\"{want}\"}}: "
                                                 "failed to allocate IP: provided IP is already "
                                                 "allocated"}])
            spec["clusterIP"] = want
            if dry_run:
                return svc
            return self._store_service_locked(ns, svc)

    def delete_service(self, ns, name):
        with self.store.cond:
            obj = self.store.delete_locked("services", ns, name)
            if obj is None:
                raise not_found("services", name)
            self.service_ips.discard(obj["spec"].get("clusterIP"))
            return obj

    # ------------------------------------------------------------------ kubelet
    def _container_env(self, pod, node):
        env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "HOSTNAME": pod["metadata"]["name"],
               "KUBERNETES_SERVICE_HOST": "127.0.0.1",
               "KUBERNETES_SERVICE_PORT": str(self.service_port),
               "KUBERNETES_SERVICE_PORT_HTTPS": str(self.service_port)}
        return pod_env(pod, node, "127.0.0.1", "127.0.0.1", env)

    def _argv(self, pod, denied):
        spec = pod["spec"]
        c = spec["containers"][0]
        argv = list(c.get("command") or []) + list(c.get("args") or [])
        psc = spec.get("securityContext") or {}
        csc = c.get("securityContext") or {}
        uid = csc.get("runAsUser", psc.get("runAsUser"))
        gid = csc.get("runAsGroup", psc.get("runAsGroup", 0 if uid is not None else None))
        prefix = list(self.netns_prefix) if denied else []
        if self.as_root and uid is not None:
            prefix += ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups"]
            if csc.get("allowPrivilegeEscalation") is False:
                prefix.append("--no-new-privs")
            prefix.append("--")
        return prefix + argv, uid, gid

    def _set_status_locked(self, ns, name, uid, mutate):
        pod = self.store.get_locked("pods", ns, name)
        if pod is None or pod["metadata"]["uid"] != uid or uid in self.deleting:
            return None
        mutate(pod["status"], pod)
        return self.store.update_locked("pods", pod)

    def _kubelet(self, ns, name, uid):
        """One thread per pod: schedule, start the process, watch it, write its final status."""
        time.sleep(0.02)
        faults = self.settings["faults"]
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
                self._event_locked(pod, "Warning", "FailedScheduling",
                                   "0/1 nodes are available", "default-scheduler")
                return
            pod["spec"]["nodeName"] = node
            cname = pod["spec"]["containers"][0]["name"]
            image = pod["spec"]["containers"][0]["image"]
            pod["status"].update(
                hostIP="127.0.0.1", hostIPs=[{"ip": "127.0.0.1"}], startTime=ts,
                conditions=[{"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                             "lastTransitionTime": ts}],
                containerStatuses=[{"name": cname, "image": image, "imageID": "", "ready": False,
                                    "restartCount": 0, "started": False,
                                    "state": {"waiting": {"reason": "ContainerCreating"}},
                                    "lastState": {}}])
            self.store.update_locked("pods", pod)
            self._event_locked(pod, "Normal", "Scheduled",
                               f"Successfully assigned {ns}/{name} to {node}", "default-scheduler")
            decision = self.egress_decision_locked(pod, node, time.time())
            self.pod_network[f"{ns}/{name}"] = decision
            pod = copy.deepcopy(pod)
        if self.docker is not None:
            return self.docker.run_pod(ns, name, uid, pod, node)
        argv, run_uid, run_gid = self._argv(pod, decision["denied"])
        env = self._container_env(pod, node)
        cwd = tempfile.mkdtemp(prefix="fake-kube-pod-")
        log_fd, log_path = tempfile.mkstemp(prefix=f"{name}-", suffix=".log",
                                            dir=os.path.join(self.state_dir, "logs"))
        os.close(log_fd)
        if self.as_root and run_uid is not None:
            os.chown(cwd, run_uid, run_gid or 0)
        with self.store.cond:
            self.workdirs[uid] = (cwd, log_path)
        mem = ((pod["spec"]["containers"][0].get("resources") or {}).get("limits") or {}).get(
            "memory")
        limit = parse_quantity(mem) if mem is not None else None
        try:
            proc = PodProcess(f"{self.instance}/{uid}", argv, env, cwd, log_path)
        except OSError as e:
            msg = f'failed to create containerd task: exec: "{argv[0]}": {e.strerror}'
            with self.store.cond:
                self._set_status_locked(ns, name, uid, lambda st, p: self._terminated(
                    st, p, 128, None, "StartError", msg, None))
            return
        started = now_rfc3339()
        t0 = time.monotonic()
        with self.store.cond:
            if self.stopping.is_set() or self._set_status_locked(
                    ns, name, uid, lambda st, p: self._running(st, started)) is None:
                self.store.cond.release()
                try:
                    proc.kill_tree()
                finally:
                    self.store.cond.acquire()
                self._drop_workdir(uid)  # deleted while starting
                return
            self.procs[uid] = proc
        oom = evicted = False
        fault_oom = self.probe_matches(pod, faults.get("oom"))
        fault_evict = self.probe_matches(pod, faults.get("evict"))
        while True:
            if proc.popen.poll() is not None:
                # A scripted oom/evict pod ends that way even if its process was faster.
                oom, evicted = oom or fault_oom, fault_evict
                break
            if self.stopping.is_set():
                return
            with self.store.cond:
                if self.procs.get(uid) is not proc:
                    return  # being deleted: the deleter kills the tree
            if limit is not None:
                if rss_bytes(proc.tree()) > limit:
                    oom = True
            if (fault_oom or fault_evict) and time.monotonic() - t0 > 0.3:
                oom, evicted = fault_oom, fault_evict
            if oom or evicted:
                proc.kill_tree()
                break
            time.sleep(SWEEP_S)
        proc.kill_tree()  # what the main process left behind dies with the container
        rc = proc.popen.returncode
        sig = -rc if rc is not None and rc < 0 else None
        code = 128 + sig if sig else rc
        finished = now_rfc3339()
        with self.store.cond:
            if self.procs.get(uid) is proc:
                del self.procs[uid]
            if oom:
                fn = lambda st, p: self._terminated(st, p, 137, 9, "OOMKilled", None, started,
                                                    finished)
            elif evicted:
                # The real kubelet removes an evicted pod's containers with their logs (pods/log
                # answered 200 with no probe record on ci/cluster): so does this one.
                entry = self.workdirs.get(uid)
                if entry is not None:
                    open(entry[1], "wb").close()

                def fn(st, p):
                    self._terminated(st, p, 137, 9, "Error", None, started, finished)
                    st.update(reason="Evicted", message="The node was low on resource: memory. "
                              "Threshold quantity: 100Mi, available: 51200Ki. Container "
                              f"{p['spec']['containers'][0]['name']} was using 2Gi, request is 0, "
                              "has larger consumption of memory.")
            else:
                fn = lambda st, p: self._terminated(st, p, code, sig,
                                                    "Completed" if code == 0 else "Error", None,
                                                    started, finished)
            updated = self._set_status_locked(ns, name, uid, fn)
            if updated is not None and evicted:
                self._event_locked(updated, "Warning", "Evicted",
                                   updated["status"]["message"], "kubelet")

    @staticmethod
    def _running(st, started):
        ts = now_rfc3339()
        st["phase"] = "Running"
        st["podIP"] = "127.0.0.1"
        st["podIPs"] = [{"ip": "127.0.0.1"}]
        st["conditions"] = [
            {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": ts}
            for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                      "PodScheduled")]
        cs = st["containerStatuses"][0]
        cs.update(ready=True, started=True, state={"running": {"startedAt": started}})

    @staticmethod
    def _terminated(st, pod, code, sig, reason, message, started, finished=None):
        ts = finished or now_rfc3339()
        st["phase"] = "Succeeded" if code == 0 else "Failed"
        term = {"exitCode": code, "reason": reason, "startedAt": started or ts, "finishedAt": ts,
                "containerID": f"fake://{pod['metadata']['uid']}"}
        if sig:
            term["signal"] = sig
        if message:
            term["message"] = message
        cs = st["containerStatuses"][0]
        cs.update(ready=False, started=False, state={"terminated": term})
        for cond in st.get("conditions", []):
            if cond["type"] in ("Ready", "ContainersReady"):
                cond.update(status="False", reason="PodCompleted", lastTransitionTime=ts)

    def log_path_locked(self, pod):
        """The container log file, or None while the container has not started."""
        entry = self.workdirs.get(pod["metadata"]["uid"])
        statuses = pod.get("status", {}).get("containerStatuses") or []
        if entry is None or not statuses or "waiting" in statuses[0].get("state", {}):
            return None
        return entry[1]

    # ------------------------------------------------------------------ processes
    def running_processes(self):
        """{"ns/pod": [pids]} of live pod processes (descendants + FAKE_KUBE_POD marker)."""
        table = proc_table()
        with self.store.cond:
            procs = dict(self.procs)
            names = {}
            for pod in self.store.list_locked("pods"):
                names[pod["metadata"]["uid"]] = (f"{pod['metadata']['namespace']}/"
                                                 f"{pod['metadata']['name']}")
        out = {}
        for uid, proc in procs.items():
            pids = proc.tree(table)
            if pids:
                out[names.get(uid, uid)] = sorted(pids)
        prefix = self.instance + "/"
        for pid, (_, state, _) in table.items():  # strays: marker but no live pod process
            if state == "Z" or any(pid in v for v in out.values()):
                continue
            marker = read_marker(pid)
            if marker and marker.startswith(prefix):
                uid = marker[len(prefix):]
                out.setdefault(names.get(uid, uid), []).append(pid)
        return out

    def _sweeper(self):
        while not self.stopping.is_set():
            time.sleep(0.2)
            with self.store.cond:
                popen_pids = {p.pid for p in self.procs.values()}
            reap_orphans(popen_pids)

    def shutdown(self):
        """Kills every pod process tree (and any stray with this instance's marker); in docker
        mode removes every container and the network of this instance."""
        self.stopping.set()
        if self.docker is not None:
            with self.store.cond:
                pods = list(self.procs.values())
                self.procs.clear()
            for dp in pods:
                dp.killed = True
            self.docker.shutdown()
            for dp in pods:
                if dp.attach is not None and dp.attach.poll() is None:
                    dp.attach.kill()
        with self.store.cond:
            procs = list(self.procs.values())
            self.procs.clear()
        for proc in procs:
            proc.kill_tree()
        prefix = self.instance + "/"
        for _ in range(20):
            strays = [pid for pid, st in proc_table().items() if st[1] != "Z"
                      and (read_marker(pid) or "").startswith(prefix)]
            if not strays:
                break
            for pid in strays:
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass
            time.sleep(0.05)
        reap_orphans(set())
        with self.store.cond:
            for uid in list(self.workdirs):
                self._drop_workdir(uid)
