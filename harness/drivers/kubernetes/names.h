// Kubernetes name and label-selector syntax, checked before anything is sent (the manifest's
// kubernetes.namespace and .node, `sandprobe run --nodes`). The rules are apimachinery's
// (k8s.io/apimachinery/pkg/util/validation: IsDNS1123Label, IsDNS1123Subdomain, IsQualifiedName,
// IsValidLabelValue; pkg/labels/selector.go: the selector grammar). Pure.
#pragma once

#include <expected>
#include <string>
#include <string_view>

namespace sandprobe::drivers::kube {

// 1..63 characters of a-z, 0-9 and '-', starting and ending with a letter or digit (a namespace).
bool IsDnsLabel(std::string_view s);
// At most 253 characters: DNS labels joined by '.' (a node name).
bool IsDnsSubdomain(std::string_view s);
// A label key: [prefix/]name, prefix a DNS subdomain, name 1..63 characters of A-Z a-z 0-9 - _ .
// starting and ending with a letter or digit.
bool IsLabelKey(std::string_view s);
// A label value: empty, or a label key's name part.
bool IsLabelValue(std::string_view s);

// A label selector: requirements joined by ',': `key`, `!key`, `key=value`, `key==value`,
// `key!=value`, `key in (v1,v2)`, `key notin (v1,v2)`, `key>N`, `key<N`. Errors say which
// requirement is wrong and why.
std::expected<void, std::string> CheckLabelSelector(std::string_view selector);

}  // namespace sandprobe::drivers::kube
