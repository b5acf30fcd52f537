"""Strict field validation of the FAKE Kubernetes API server (tests only): which fields each kind
has, and what the real API server does with the ones it does not have.

The real behaviour (Kubernetes API, KEP-2885 server-side field validation, GA in 1.27; apiserver
endpoints/handlers create.go and rest.go fieldValidation(); apimachinery
runtime.strictDecodingError; sigs.k8s.io/json strict errors), for POST (create) with
?fieldValidation=:
  Strict  HTTP 400, Status reason BadRequest, message `<Kind> in version "v1" cannot be handled as a
          <Kind>: strict decoding error: unknown field "spec.x", duplicate field "metadata.name"`
          (every problem once, in document order, joined by ", "). kubectl sends Strict
          (--validate=strict, its default).
  Warn    the default when the parameter is absent: created, one response header per problem,
          `Warning: 299 - "unknown field \"spec.x\""`; the unknown fields are not stored.
  Ignore  created; unknown fields dropped silently.
  other   HTTP 422 Invalid (CreateOptions validation).
  A duplicated key keeps its last value (Warn, Ignore). A server older than 1.25 ignores the
  parameter (the ServerSideFieldValidation gate was alpha and off in 1.23-1.24, absent before):
  unknown fields are dropped silently whatever is asked (the fake: --version-string below v1.25).
Paths are dotted keys with list entries as [i] (spec.template.spec.containers[0].securityContex).
Matching is case-sensitive, as the API server decodes: `RestartPolicy` is an unknown field.

The table (SCHEMA): Kubernetes API v1.32, the version the fake claims by default (the json field
names of the k8s.io/api v0.32 types Job, Pod, NetworkPolicy and the ones they hold, and of
apimachinery's ObjectMeta and LabelSelector). Each type listed has ALL its fields of that version:
the fake is never stricter than a 1.32 server. A field `name` holds a value not looked into (a
scalar, a list of scalars, or a type not listed: Affinity, Probe, Lifecycle, the volume sources
but emptyDir, EnvVarSource, status...): unknown fields inside those are accepted (there the fake
is more lenient than a real server); duplicate keys are found everywhere. Types of values are not
checked (a real server answers a wrong type with its own 400).
"""
import json

# type -> its fields in the API's order: `name`, `name:Type`, `name:[]Type` (a list of Type) or
# `name:map` (free keys, such as labels).
_TABLE = {
    "Job": "apiVersion kind metadata:ObjectMeta spec:JobSpec status",
    "JobSpec": (
        "parallelism completions activeDeadlineSeconds podFailurePolicy successPolicy "
        "backoffLimit backoffLimitPerIndex maxFailedIndexes selector:LabelSelector "
        "manualSelector template:PodTemplateSpec ttlSecondsAfterFinished completionMode "
        "suspend podReplacementPolicy managedBy"),
    "PodTemplateSpec": "metadata:ObjectMeta spec:PodSpec",
    "ObjectMeta": (
        "name generateName namespace selfLink uid resourceVersion generation "
        "creationTimestamp deletionTimestamp deletionGracePeriodSeconds labels:map "
        "annotations:map ownerReferences:[]OwnerReference finalizers managedFields"),
    "OwnerReference": "apiVersion kind name uid controller blockOwnerDeletion",
    "LabelSelector": "matchLabels:map matchExpressions:[]LabelSelectorRequirement",
    "LabelSelectorRequirement": "key operator values",
    "Pod": "apiVersion kind metadata:ObjectMeta spec:PodSpec status",
    "PodSpec": (
        "volumes:[]Volume initContainers:[]Container containers:[]Container "
        "ephemeralContainers restartPolicy terminationGracePeriodSeconds "
        "activeDeadlineSeconds dnsPolicy nodeSelector:map serviceAccountName "
        "serviceAccount automountServiceAccountToken nodeName hostNetwork hostPID hostIPC "
        "shareProcessNamespace securityContext:PodSecurityContext "
        "imagePullSecrets:[]LocalObjectReference hostname subdomain affinity "
        "schedulerName tolerations:[]Toleration hostAliases:[]HostAlias priorityClassName "
        "priority dnsConfig readinessGates:[]PodReadinessGate runtimeClassName "
        "enableServiceLinks preemptionPolicy overhead:map topologySpreadConstraints "
        "setHostnameAsFQDN os:PodOS hostUsers schedulingGates:[]PodSchedulingGate "
        "resourceClaims resources:ResourceRequirements"),
    "Container": (
        "name image command args workingDir ports:[]ContainerPort envFrom env:[]EnvVar "
        "resources:ResourceRequirements resizePolicy restartPolicy "
        "volumeMounts:[]VolumeMount volumeDevices livenessProbe readinessProbe "
        "startupProbe lifecycle terminationMessagePath terminationMessagePolicy "
        "imagePullPolicy securityContext:SecurityContext stdin stdinOnce tty"),
    "SecurityContext": (
        "capabilities:Capabilities privileged seLinuxOptions:SELinuxOptions "
        "windowsOptions runAsUser runAsGroup runAsNonRoot readOnlyRootFilesystem "
        "allowPrivilegeEscalation procMount seccompProfile:SeccompProfile "
        "appArmorProfile:AppArmorProfile"),
    "PodSecurityContext": (
        "seLinuxOptions:SELinuxOptions windowsOptions runAsUser runAsGroup runAsNonRoot "
        "supplementalGroups supplementalGroupsPolicy fsGroup sysctls:[]Sysctl "
        "fsGroupChangePolicy seccompProfile:SeccompProfile "
        "appArmorProfile:AppArmorProfile seLinuxChangePolicy"),
    "Capabilities": "add drop",
    "SeccompProfile": "type localhostProfile",
    "AppArmorProfile": "type localhostProfile",
    "SELinuxOptions": "user role type level",
    "Sysctl": "name value",
    "ResourceRequirements": "limits:map requests:map claims",
    "VolumeMount": "name readOnly recursiveReadOnly mountPath subPath mountPropagation subPathExpr",
    "Volume": (
        "name hostPath emptyDir:EmptyDirVolumeSource gcePersistentDisk "
        "awsElasticBlockStore gitRepo secret nfs iscsi glusterfs persistentVolumeClaim "
        "rbd flexVolume cinder cephfs flocker downwardAPI fc azureFile configMap "
        "vsphereVolume quobyte azureDisk photonPersistentDisk projected portworxVolume "
        "scaleIO storageos csi ephemeral image"),
    "EmptyDirVolumeSource": "medium sizeLimit",
    "ContainerPort": "name hostPort containerPort protocol hostIP",
    "EnvVar": "name value valueFrom",
    "Toleration": "key operator value effect tolerationSeconds",
    "LocalObjectReference": "name",
    "HostAlias": "ip hostnames",
    "PodOS": "name",
    "PodSchedulingGate": "name",
    "PodReadinessGate": "conditionType",
    "NetworkPolicy": "apiVersion kind metadata:ObjectMeta spec:NetworkPolicySpec",
    "NetworkPolicySpec": (
        "podSelector:LabelSelector ingress:[]NetworkPolicyIngressRule "
        "egress:[]NetworkPolicyEgressRule policyTypes"),
    "NetworkPolicyIngressRule": "ports:[]NetworkPolicyPort from:[]NetworkPolicyPeer",
    "NetworkPolicyEgressRule": "ports:[]NetworkPolicyPort to:[]NetworkPolicyPeer",
    "NetworkPolicyPeer": (
        "podSelector:LabelSelector namespaceSelector:LabelSelector ipBlock:IPBlock"),
    "IPBlock": "cidr except",
    "NetworkPolicyPort": "protocol port endPort",
}

SCHEMA = {t: dict((w.split(":", 1) + [""])[:2] for w in text.split()) for t, text in _TABLE.items()}

# resource -> the type of its objects
ROOTS = {"jobs": "Job", "pods": "Pod", "networkpolicies": "NetworkPolicy"}
MODES = ("Ignore", "Warn", "Strict")


class Pairs(list):
    """A JSON object as its (key, value) pairs in document order, duplicates kept."""


def loads_pairs(data):
    """JSON text -> values with every object a Pairs (json.loads' object_pairs_hook)."""
    return json.loads(data, object_pairs_hook=Pairs)


def decode(value, type_name):
    """A Pairs tree read as `type_name` -> (plain JSON value without the unknown fields, problems).

    problems: ["unknown field \"spec.x\"", "duplicate field \"metadata.name\"", ...] in document
    order, each once (sigs.k8s.io/json dedups its strict errors)."""
    problems = []
    plain = _walk(value, type_name, "", problems)
    return plain, list(dict.fromkeys(problems))


def _walk(value, type_name, path, problems):
    if isinstance(value, list) and not isinstance(value, Pairs):
        item = type_name[2:] if type_name.startswith("[]") else ""
        return [_walk(v, item, f"{path}[{i}]", problems) for i, v in enumerate(value)]
    if not isinstance(value, Pairs):
        return value
    fields = SCHEMA.get(type_name)  # None: free keys (a map) or a type not looked into
    out, seen = {}, set()
    for key, v in value:
        field = f"{path}.{key}" if path else key
        if fields is not None and key not in fields:
            problems.append(f'unknown field "{field}"')
            continue
        if key in seen:
            problems.append(f'duplicate field "{field}"')
        seen.add(key)
        out[key] = _walk(v, fields.get(key, "") if fields is not None else "", field, problems)
    return out


def plain(value):
    """A Pairs tree -> plain JSON values (a duplicated key keeps its last value)."""
    return _walk(value, "", "", [])


def status_message(kind, problems):
    """The BadRequest message of a Strict create (apiserver transformDecodeError)."""
    return (f'{kind} in version "v1" cannot be handled as a {kind}: strict decoding error: '
            + ", ".join(problems))


def warning_header(text):
    """A `Warning` header value: code 299, agent "-", the text quoted with \\ and \" escaped
    (apimachinery util/net NewWarningHeader)."""
    return '299 - "' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
