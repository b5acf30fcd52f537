#include "drivers/kubernetes/template_fields.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

#include "config/yaml_util.h"

namespace sandprobe::drivers::kube {
namespace {

// Type name -> its fields in the API's order, space-separated. A field is `name` (a value this
// check does not look into), `name:Type`, `name:[]Type` (a list of Type) or `name:map` (free keys,
// such as labels). Source: see template_fields.h.
constexpr std::pair<std::string_view, std::string_view> kTypes[] = {
    {"Job", "apiVersion kind metadata:ObjectMeta spec:JobSpec status"},
    {"JobSpec",
     "parallelism completions activeDeadlineSeconds podFailurePolicy successPolicy "
     "backoffLimit backoffLimitPerIndex maxFailedIndexes selector:LabelSelector "
     "manualSelector template:PodTemplateSpec ttlSecondsAfterFinished completionMode "
     "suspend podReplacementPolicy managedBy"},
    {"PodTemplateSpec", "metadata:ObjectMeta spec:PodSpec"},
    {"ObjectMeta",
     "name generateName namespace selfLink uid resourceVersion generation "
     "creationTimestamp deletionTimestamp deletionGracePeriodSeconds labels:map "
     "annotations:map ownerReferences:[]OwnerReference finalizers managedFields"},
    {"OwnerReference", "apiVersion kind name uid controller blockOwnerDeletion"},
    {"LabelSelector", "matchLabels:map matchExpressions:[]LabelSelectorRequirement"},
    {"LabelSelectorRequirement", "key operator values"},
    {"Pod", "apiVersion kind metadata:ObjectMeta spec:PodSpec status"},
    {"PodSpec",
     "volumes:[]Volume initContainers:[]Container containers:[]Container "
     "ephemeralContainers restartPolicy terminationGracePeriodSeconds "
     "activeDeadlineSeconds dnsPolicy nodeSelector:map serviceAccountName "
     "serviceAccount automountServiceAccountToken nodeName hostNetwork hostPID "
     "hostIPC shareProcessNamespace securityContext:PodSecurityContext "
     "imagePullSecrets:[]LocalObjectReference hostname subdomain affinity "
     "schedulerName tolerations:[]Toleration hostAliases:[]HostAlias "
     "priorityClassName priority dnsConfig readinessGates:[]PodReadinessGate "
     "runtimeClassName enableServiceLinks preemptionPolicy overhead:map "
     "topologySpreadConstraints setHostnameAsFQDN os:PodOS hostUsers "
     "schedulingGates:[]PodSchedulingGate resourceClaims "
     "resources:ResourceRequirements"},
    {"Container",
     "name image command args workingDir ports:[]ContainerPort envFrom env:[]EnvVar "
     "resources:ResourceRequirements resizePolicy restartPolicy "
     "volumeMounts:[]VolumeMount volumeDevices livenessProbe readinessProbe "
     "startupProbe lifecycle terminationMessagePath terminationMessagePolicy "
     "imagePullPolicy securityContext:SecurityContext stdin stdinOnce tty"},
    {"SecurityContext",
     "capabilities:Capabilities privileged seLinuxOptions:SELinuxOptions "
     "windowsOptions runAsUser runAsGroup runAsNonRoot readOnlyRootFilesystem "
     "allowPrivilegeEscalation procMount seccompProfile:SeccompProfile "
     "appArmorProfile:AppArmorProfile"},
    {"PodSecurityContext",
     "seLinuxOptions:SELinuxOptions windowsOptions runAsUser runAsGroup runAsNonRoot "
     "supplementalGroups supplementalGroupsPolicy fsGroup sysctls:[]Sysctl "
     "fsGroupChangePolicy seccompProfile:SeccompProfile "
     "appArmorProfile:AppArmorProfile seLinuxChangePolicy"},
    {"Capabilities", "add drop"},
    {"SeccompProfile", "type localhostProfile"},
    {"AppArmorProfile", "type localhostProfile"},
    {"SELinuxOptions", "user role type level"},
    {"Sysctl", "name value"},
    {"ResourceRequirements", "limits:map requests:map claims"},
    {"VolumeMount",
     "name readOnly recursiveReadOnly mountPath subPath mountPropagation subPathExpr"},
    {"Volume",
     "name hostPath emptyDir:EmptyDirVolumeSource gcePersistentDisk "
     "awsElasticBlockStore gitRepo secret nfs iscsi glusterfs persistentVolumeClaim "
     "rbd flexVolume cinder cephfs flocker downwardAPI fc azureFile configMap "
     "vsphereVolume quobyte azureDisk photonPersistentDisk projected portworxVolume "
     "scaleIO storageos csi ephemeral image"},
    {"EmptyDirVolumeSource", "medium sizeLimit"},
    {"ContainerPort", "name hostPort containerPort protocol hostIP"},
    {"EnvVar", "name value valueFrom"},
    {"Toleration", "key operator value effect tolerationSeconds"},
    {"LocalObjectReference", "name"},
    {"HostAlias", "ip hostnames"},
    {"PodOS", "name"},
    {"PodSchedulingGate", "name"},
    {"PodReadinessGate", "conditionType"},
};

struct Field {
  std::string name;
  std::string type;  // "" | "Type" | "[]Type" | "map"
};

const std::vector<Field>* FieldsOf(std::string_view type) {
  static const auto* table = [] {
    auto* t = new std::map<std::string, std::vector<Field>, std::less<>>();
    for (const auto& [name, text] : kTypes) {
      std::vector<Field>& fields = (*t)[std::string(name)];
      for (size_t i = 0; i < text.size();) {
        const size_t end = std::min(text.find(' ', i), text.size());
        const std::string_view word = text.substr(i, end - i);
        const size_t colon = word.find(':');
        fields.push_back(
            {std::string(word.substr(0, colon)),
             colon == std::string_view::npos ? "" : std::string(word.substr(colon + 1))});
        i = end + 1;
      }
    }
    return t;
  }();
  const auto it = table->find(type);
  return it == table->end() ? nullptr : &it->second;
}

void Walk(const YAML::Node& node, std::string_view type, const std::string& path,
          std::vector<TemplateFinding>& out) {
  if (!node.IsDefined() || type.empty()) return;
  if (node.IsNull() && !path.empty()) {
    // The template is merged over the driver's hardened defaults as a JSON merge patch, where
    // null deletes: an empty `securityContext:` would silently drop allowPrivilegeEscalation
    // false and the dropped capabilities.
    out.push_back({node, path,
                   "empty: in the merge over the driver's defaults null deletes them; give a "
                   "value or remove the line",
                   true});
    return;
  }
  if (node.IsNull()) return;
  auto join = [&](const std::string& key) { return path.empty() ? key : path + "." + key; };
  if (type == "map") {
    if (!node.IsMap()) out.push_back({node, path, "expected a mapping", true});
    return;
  }
  if (type.starts_with("[]")) {
    if (!node.IsSequence()) {
      out.push_back({node, path, fmt::format("expected a list of {}", type.substr(2)), true});
      return;
    }
    for (size_t i = 0; i < node.size(); ++i)
      Walk(node[i], type.substr(2), fmt::format("{}[{}]", path, i), out);
    return;
  }
  const std::vector<Field>* fields = FieldsOf(type);
  if (fields == nullptr) return;
  if (!node.IsMap()) {
    out.push_back({node, path, fmt::format("expected a mapping of {} fields", type), true});
    return;
  }
  std::vector<std::string> names;
  for (const Field& f : *fields) names.push_back(f.name);
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    const auto known = std::ranges::find(*fields, key, &Field::name);
    if (known != fields->end()) {
      Walk(kv.second, known->type, join(key), out);
      continue;
    }
    // Within two edits (a case-only difference counts as none) of a known name: a typo in every
    // version. Farther: perhaps a field a newer Kubernetes added (1.34's Container
    // restartPolicyRules is five edits from restartPolicy), so only a note.
    const std::string near = config::internal::DidYouMean(key, names);
    if (!near.empty() && config::internal::EditDistance(key, near) <= 2) {
      out.push_back(
          {kv.first, join(key), fmt::format("unknown field; did you mean {}?", near), true});
    } else {
      out.push_back({kv.first, join(key),
                     fmt::format("not a {} field in {}{}", type, kFieldTableVersion,
                                 near.empty() ? "" : fmt::format(" (nearest: {})", near)),
                     false});
    }
  }
}

}  // namespace

std::vector<TemplateFinding> CheckTemplateFields(const YAML::Node& object, std::string_view type) {
  std::vector<TemplateFinding> out;
  Walk(object, type, "", out);
  return out;
}

}  // namespace sandprobe::drivers::kube
